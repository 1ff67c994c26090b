"""Real Chromium on the Train tab with ``VIBESTUDIO_JOBS=workers``: the jobs table shows which worker host runs a
job, and a job of a kind no live worker serves says what it waits for; the job's own line says it too."""

from __future__ import annotations

import pytest

from tests.helpers.browser import STEP_MS
from tests.helpers.servers import seed_tiny_parent, start_server, stop_server
from vibestudio.db.session import Database

pytestmark = pytest.mark.e2e


def test_the_jobs_table_shows_the_worker_host_and_a_kind_nobody_serves(
    tmp_path, browser, tiny_model_dir, monkeypatch
):
    from vibestudio.training.jobs.heartbeat import register_worker
    from vibestudio.training.jobs.service import launch
    from vibestudio.training.jobs.workers import claim, parse_kinds

    monkeypatch.setenv("VIBESTUDIO_JOBS", "workers")
    home = tmp_path / "home"  # the test's own data home (tests/conftest.py), shared with the server
    home.mkdir(exist_ok=True)
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    snap = seed_tiny_parent(db, tiny_model_dir)
    dpo = launch(db, "dpo", "tiny-parent", snap, max_steps=4)
    grpo = launch(db, "grpo", "tiny-parent", snap, rewards=[{"type": "length", "max": 5}], max_steps=2)
    register_worker(db, "gpu-e2e", parse_kinds("dpo"), "0", 1, "/srv/vs")
    assert claim(db, "gpu-e2e", parse_kinds("dpo")) == dpo  # a worker took it (and beats for it, as far as
    # the app can tell for the default 60 s grace period); nobody serves grpo
    proc, url = start_server(home, {"VIBESTUDIO_JOBS": "workers"})
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.goto(url)
        page.get_by_role("tab", name="Train").click()
        for text in ("gpu-e2e", "waiting for a worker that serves grpo"):
            page.wait_for_function(
                f"(document.querySelector('#train-jobs')?.innerText || '').includes({text!r})",
                timeout=STEP_MS,
            )
        shown = page.locator("#train-jobs").inner_text(timeout=STEP_MS)
        assert shown.count("waiting for a worker that serves") == 1, (
            shown
        )  # the served dpo job waits for nothing
        assert "running" in shown and "queued" in shown, shown
        assert grpo != dpo
    finally:
        stop_server(proc)
        db.dispose()
