"""Real Chromium on the Train tab with ``VIBESTUDIO_JOBS=ray``: an unreachable cluster is refused in place; on a
real local cluster a job launched from the tab runs on the Ray worker node, and its cancel reaches Ray."""

from __future__ import annotations

import socket
import time

import pytest

from tests.helpers.browser import STEP_MS
from tests.helpers.servers import seed_tiny_parent, start_server, stop_server
from vibestudio.db.session import Database

pytestmark = pytest.mark.e2e


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_text(page, elem_id: str, text: str, timeout: int = STEP_MS) -> None:
    page.wait_for_function(
        f"(document.querySelector('#{elem_id}')?.innerText || '').includes({text!r})", timeout=timeout
    )


def _launch(page, url: str, snap: str, steps: int) -> None:
    page.goto(url)
    page.get_by_role("tab", name="Train").click()
    page.wait_for_selector("#train-yaml .cm-content")
    page.locator("#train-yaml .cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(
        f"kind: dpo\nparent_contestant: tiny-parent\nsnapshot_hash: {snap}\nmax_steps: {steps}\n"
        "kl_prompts: 0\ndrift_prompts: 0\nlearning_rate: 0.005\n"
    )
    page.locator("#train-launch").click()


def _home(tmp_path, tiny_model_dir):
    home = tmp_path / "home"  # the test's own data home (tests/conftest.py), shared with the server
    home.mkdir(exist_ok=True)
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    return home, db, seed_tiny_parent(db, tiny_model_dir)


def test_an_unreachable_ray_cluster_is_refused_in_place_and_nothing_is_queued(
    tmp_path, browser, tiny_model_dir
):
    from vibestudio.training.jobs.runner import list_jobs

    home, db, snap = _home(tmp_path, tiny_model_dir)
    address = f"http://127.0.0.1:{_closed_port()}"
    proc, url = start_server(home, {"VIBESTUDIO_JOBS": "ray", "VIBESTUDIO_RAY_ADDRESS": address})
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        _launch(page, url, snap, 4)
        _wait_text(page, "train-launched", f"the Ray cluster at {address}")
        shown = page.locator("#train-launched").inner_text()
        assert "did not answer" in shown and "VIBESTUDIO_RAY_ADDRESS" in shown, shown
        assert page.locator(".toast-body").count() == 0, "a refusal answers in place, not as a toast"
        assert list_jobs(db) == []
    finally:
        stop_server(proc)
        db.dispose()


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_job_from_the_train_tab_runs_on_the_ray_worker_node_and_cancel_reaches_ray(
    tmp_path, browser, tiny_model_dir
):
    pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    from vibestudio.training.jobs import ray_jobs
    from vibestudio.training.jobs.runner import job_view

    home, db, snap = _home(tmp_path, tiny_model_dir)
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "include_dashboard": True,
            "dashboard_host": "127.0.0.1",
            "dashboard_port": 0,
        },
    )
    proc = None
    try:
        worker = cluster.add_node(num_cpus=1, resources={"trainer": 1})
        cluster.wait_for_nodes()
        address = "http://" + cluster.head_node.address_info["webui_url"]
        env = {
            "VIBESTUDIO_JOBS": "ray",
            "VIBESTUDIO_RAY_ADDRESS": address,
            "VIBESTUDIO_RAY_RESOURCES": "trainer=1",
            "VIBESTUDIO_HEARTBEAT_S": "1",
        }
        proc, url = start_server(home, env)
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        _launch(page, url, snap, 2000)
        _wait_text(page, "train-launched", "submitted")
        deadline = time.monotonic() + 600
        running_there = "dpo · running · on ray:vibestudio-job-1-"  # then the node, once Ray names it
        while not (
            running_there in (shown := page.locator("#train-detail").inner_text())
            and f"on node {worker.node_id}" in shown
        ):
            v = job_view(db, 1)
            assert v.status in ("queued", "running") and time.monotonic() < deadline, (v.status, v.error)
            time.sleep(1)
        detail = page.locator("#train-detail").inner_text()
        assert running_there in detail, detail
        page.locator("#train-cancel").click()
        _wait_text(page, "train-launched", "Job 1 is cancelled")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("VIBESTUDIO_RAY_ADDRESS", address)
            client = ray_jobs.client()
            sid = ray_jobs.submission_of(job_view(db, 1).host)
            deadline = time.monotonic() + 60
            while str(client.get_job_status(sid).value) != "STOPPED":
                assert time.monotonic() < deadline, client.get_job_status(sid)
                time.sleep(0.5)
            assert client.get_job_info(sid).driver_node_id == worker.node_id
    finally:
        if proc is not None:
            stop_server(proc)
        cluster.shutdown()
        ray_jobs._CLIENTS.clear()
        db.dispose()
