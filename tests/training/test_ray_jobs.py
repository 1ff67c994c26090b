"""Jobs on a Ray cluster: what a job asks for, refusals before launch, and (slow) a real local cluster.

The slow tests start a real Ray cluster on this machine: a head and one worker node that alone has the custom
resource ``trainer``, so a job that asks for it must run there. A tiny DPO job runs through Ray's Jobs API
to the end; a cancel reaches Ray; a worker node killed mid-job fails the job with Ray's reason, and resume
continues it from its checkpoint on a new node. A lost node under a job across nodes names that node in the
row's reason, whichever side records first: Ray, or rank 0 on its broken link.
"""

from __future__ import annotations

import shlex
import socket
import time
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import func, select

from tests.helpers.postgres import ONE_KIND
from tests.helpers.training import FAST
from vibestudio.common.processes import process_alive
from vibestudio.db.models import Contestant, Job, JobMetric, utcnow
from vibestudio.training.jobs import ray_jobs, ray_spread, runner
from vibestudio.training.jobs.config import make_config
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.service import launch_dpo


def _count_jobs(db) -> int:
    with db.session() as s:
        return s.scalar(select(func.count(Job.id)))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---- what a job asks for ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("use_cpu", "processes", "cluster_gpus", "want"),
    [
        (True, 1, True, (1, 0)),
        (False, 1, False, (1, 1)),  # asked for a GPU: asked even where none is (and then refused)
        (None, 1, False, (1, 0)),  # unset: the CPU on a cluster without GPUs
        (None, 2, True, (2, 2)),  # unset: one GPU per process where the cluster has GPUs
        (True, 2, True, (2, 0)),
    ],
)
def test_a_job_asks_for_a_cpu_and_a_gpu_per_process_unless_it_runs_on_the_cpu(
    monkeypatch, use_cpu, processes, cluster_gpus, want
):
    monkeypatch.setenv("VIBESTUDIO_RAY_RESOURCES", "trainer=1")
    launcher = "accelerate" if processes > 1 else "python"
    cfg = make_config("dpo", use_cpu=use_cpu, num_processes=processes, launcher=launcher)
    needs = ray_jobs.needs_of(cfg, cluster_gpus)
    assert (needs.cpus, needs.gpus) == want and needs.resources == {"trainer": 1.0}
    assert ray_jobs.needs_of(None, cluster_gpus) == ray_jobs.Needs(1.0, 0.0, {"trainer": 1.0})  # a report


_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True).filter(lambda n: n not in ("CPU", "GPU"))


@given(st.dictionaries(_NAMES, st.integers(1, 1000).map(lambda n: n / 8), max_size=4))
def test_operator_resources_read_back_as_written(resources):
    text = ",".join(f"{name}={amount:g}" for name, amount in resources.items())
    assert ray_jobs.parse_resources(text) == resources


@pytest.mark.parametrize("text", ["trainer", "trainer=0", "trainer=x", "=1", "GPU=1", "a=1,b=-2"])
def test_a_bad_resource_entry_is_refused_naming_the_variable_and_the_entry(text):
    with pytest.raises(JobError, match=r"VIBESTUDIO_RAY_RESOURCES: '.*' is not name=amount"):
        ray_jobs.parse_resources(text)


def test_a_node_fits_only_with_every_resource_and_alive():
    needs = ray_jobs.Needs(1, 1, {"trainer": 1})
    node = ray_jobs.Node("n" * 56, True, {"CPU": 4, "GPU": 1, "trainer": 1, "memory": 1e9})
    assert node.fits(needs)
    assert not ray_jobs.Node("n", True, {"CPU": 4, "GPU": 1}).fits(needs)
    assert not ray_jobs.Node("n", True, {"CPU": 4, "trainer": 1}).fits(needs)
    assert not ray_jobs.Node("n", False, node.total).fits(needs)
    assert node.describe() == "nnnnnnnnnnnn (CPU 4, GPU 1, trainer 1)"  # Ray's own bookkeeping left out


_PATH = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30)


@given(_PATH, _PATH)
def test_the_entrypoint_line_runs_exactly_the_job_argv_whatever_the_paths_hold(folder, log):
    config = f"/data/{folder}/config.yaml"
    argv = ["/opt/py/bin/python", "-m", "vibestudio.training.jobs.job_process", config, "--job", "7"]
    words = shlex.split(ray_jobs.entrypoint(argv, f"/data/{log}/train.log"))
    assert words[:3] == [
        "cd",
        str(Path(config).parent),
        "&&",
    ]  # every part a single word: nothing runs besides
    assert words[3:] == ["exec", *argv, ">>", f"/data/{log}/train.log", "2>&1"]


def test_submission_ids_read_back_from_the_row_host():
    assert ray_jobs.submission_of("ray:vibestudio-job-3-ab") == "vibestudio-job-3-ab"
    assert ray_jobs.submission_of("ray:vibestudio-job-3-ab on node 87b6") == "vibestudio-job-3-ab"
    assert ray_jobs.submission_of("ray-submitting:vibestudio-job-3-ab") == "vibestudio-job-3-ab"
    assert ray_jobs.submission_of("gpu-1#abc") is None and ray_jobs.submission_of(None) is None


def test_rays_node_death_message_reads_as_one_line_with_the_node():
    raw = (
        "Job supervisor actor died: The actor died unexpectedly before finishing this task.\n\tclass_name: "
        "JobSupervisor\n\tactor_id: a76d\n\tpid: 6475\nThe actor died because its node has died. Node Id: b55a\n"
        "\tthe actor's node was terminated unexpectedly: health check failed due to missing too many heartbeats"
    )
    assert ray_jobs.ray_message(
        "Job entrypoint command failed with exit code 1, last available logs (truncated "
        "to 20,000 chars): Running entrypoint for job x: cd /a && exec b"
    ) == ("Job entrypoint command failed with exit code 1")
    assert ray_jobs.ray_message(raw) == (
        "Job supervisor actor died: The actor died unexpectedly before finishing this task. The actor died "
        "because its node has died. Node Id: b55a the actor's node was terminated unexpectedly: health check "
        "failed due to missing too many heartbeats"
    )


def test_the_drivers_verdict_names_a_lost_node_by_node_and_the_other_ranks_by_their_error():
    errors = {
        0: "its job process exited with code 1",
        1: "Task failed because the node it was running on is dead",
    }
    nodes = {0: "n0", 1: "n1", 2: "n2"}
    text, lost = ray_spread.verdict(errors, nodes, {"n0": True, "n1": False, "n2": True}, [2])
    assert lost == [[1, "n1"]]
    assert text == (
        "the node n1 under rank 1 was lost; rank 0 failed: its job process exited with code 1; rank 2 was stopped"
    )
    text, lost = ray_spread.verdict({1: "boom"}, nodes, dict.fromkeys(nodes.values(), True), [])
    assert (text, lost) == ("rank 1 failed: boom", [])


# ---- refused before launch, nothing written ----------------------------------------------------------------------
def test_ray_without_an_address_is_refused_naming_the_setting(db, tiny_parent, make_snapshot, monkeypatch):
    monkeypatch.setenv("VIBESTUDIO_JOBS", "ray")
    with pytest.raises(JobError, match=r"VIBESTUDIO_JOBS=ray needs VIBESTUDIO_RAY_ADDRESS"):
        launch_dpo(db, "tiny-parent", make_snapshot(8), **FAST)
    assert _count_jobs(db) == 0


def test_an_unreachable_ray_address_is_refused_before_anything_is_written(
    db, tiny_parent, make_snapshot, monkeypatch, tmp_path
):
    address = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("VIBESTUDIO_JOBS", "ray")
    monkeypatch.setenv("VIBESTUDIO_RAY_ADDRESS", address)
    import ray.job_submission  # noqa: F401  (imported before the clock starts: seconds cold on a busy machine)

    snapshot = make_snapshot(8)
    started = time.monotonic()
    with pytest.raises(
        JobError, match=rf"the Ray cluster at {address} \(VIBESTUDIO_RAY_ADDRESS\) did not answer"
    ):
        launch_dpo(db, "tiny-parent", snapshot, **FAST)
    assert time.monotonic() - started < 15  # refused at once, not after TCP's two-minute timeout
    assert _count_jobs(db) == 0 and not (tmp_path / "home" / "jobs").exists()


def test_queued_jobs_the_cluster_cannot_take_fail_with_the_reason_and_none_is_left_running(
    db, tiny_parent, make_snapshot, monkeypatch
):
    """A job queued before the switch to Ray (or resumed) meets an unreachable cluster at placement."""
    monkeypatch.setenv("VIBESTUDIO_JOBS", "workers")  # queued, nothing starts it here
    job_id = launch_dpo(db, "tiny-parent", make_snapshot(8), **FAST)
    monkeypatch.setenv("VIBESTUDIO_JOBS", "ray")
    monkeypatch.setenv("VIBESTUDIO_RAY_ADDRESS", f"http://127.0.0.1:{_closed_port()}")
    assert runner.start_next(db) is None
    view = runner.job_view(db, job_id)
    assert view.status == "failed" and "did not answer" in (view.error or "")
    assert ray_jobs.ended(db) == []  # an unreachable cluster ends nothing else by itself


# ---- a real local Ray cluster (slow) ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ray_cluster():
    """A head (1 CPU, no ``trainer``) and a worker node (1 CPU, ``trainer: 1``); the dashboard serves the Jobs
    API. Shut down at the end of the module."""
    pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "include_dashboard": True,
            "dashboard_host": "127.0.0.1",
            "dashboard_port": 0,
        },
    )
    cluster.add_node(num_cpus=1, resources={"trainer": 1})
    cluster.wait_for_nodes()
    try:
        yield cluster
    finally:
        cluster.shutdown()
        ray_jobs._CLIENTS.clear()


@pytest.fixture
def on_ray(ray_cluster, monkeypatch):
    url = "http://" + ray_cluster.head_node.address_info["webui_url"]
    monkeypatch.setenv("VIBESTUDIO_JOBS", "ray")
    monkeypatch.setenv("VIBESTUDIO_RAY_ADDRESS", url)
    monkeypatch.setenv("VIBESTUDIO_RAY_RESOURCES", "trainer=1")
    monkeypatch.setenv("VIBESTUDIO_HEARTBEAT_S", "1")
    return ray_cluster


def _worker(cluster):
    return next(iter(cluster.worker_nodes))


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def _training(db, job_id: int, min_step: int = 1) -> bool:
    """The job process runs on the node and has written a progress metric at ``min_step`` or later."""
    runner.fail_lost(db)  # the app's watch does this every heartbeat
    with db.session() as s:
        status = s.scalar(select(Job.status).where(Job.id == job_id))
        step = s.scalar(
            select(func.max(JobMetric.step)).where(JobMetric.job_id == job_id, JobMetric.name == "progress")
        )
    assert status in ("queued", "running"), runner.job_view(db, job_id).error
    return status == "running" and step is not None and step >= min_step


def _ray_info(job_id: int, db):
    with db.session() as s:
        host = s.scalar(select(Job.host).where(Job.id == job_id))
    return ray_jobs.client().get_job_info(ray_jobs.submission_of(host))


def _ray_done(job_id: int, db) -> bool:
    return str(_ray_info(job_id, db).status.value) in ("SUCCEEDED", "FAILED", "STOPPED")


def _alive(pid: int | None) -> bool:
    return process_alive(pid, command="vibestudio.training.jobs.job_process")


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)  # one database per run: the cluster is slow to drive
def test_a_job_without_the_gpus_it_asks_for_is_refused_with_the_clusters_nodes(
    on_ray, db, tiny_parent, make_snapshot
):
    with pytest.raises(JobError) as caught:
        launch_dpo(db, "tiny-parent", make_snapshot(8), **FAST, use_cpu=False)
    message = str(caught.value)
    assert "has no node with 1 CPU, 1 GPU, trainer 1 for this job" in message
    assert f"{_worker(on_ray).node_id[:12]} (CPU 1, trainer 1)" in message  # what each node has
    assert _count_jobs(db) == 0


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)  # one database per run: the cluster is slow to drive
def test_a_dpo_job_runs_on_the_ray_worker_node_to_the_end(on_ray, db, tiny_parent, make_snapshot):
    job_id = launch_dpo(db, "tiny-parent", make_snapshot(8), **FAST)
    assert runner.job_view(db, job_id).status == "queued"  # Ray holds it until the node's process starts
    view = runner.wait(db, job_id, timeout=400)
    assert view.status == "succeeded", view.error
    info = _wait_for(
        lambda: _ray_info(job_id, db) if _ray_done(job_id, db) else None, 60, "the Ray job's end"
    )
    worker = _worker(on_ray).node_id
    assert (
        str(info.status.value) == "SUCCEEDED" and info.driver_node_id == worker
    )  # it ran on the worker node
    assert view.host == f"ray:{info.submission_id} on node {worker}"  # what the Train tab and CLI show
    assert [step for step, _ in view.metrics["progress"]][-1] == FAST["max_steps"]
    assert "loss" in view.metrics and view.contestant_id is not None
    assert "[job process] trained 4 steps" in view.log_tail  # the log is the job's own, as on any host
    print(f"job {job_id} ran on Ray node {worker}")


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)  # one database per run: the cluster is slow to drive
def test_cancel_reaches_the_ray_job_and_its_process(on_ray, db, tiny_parent, make_snapshot):
    job_id = launch_dpo(db, "tiny-parent", make_snapshot(8), **{**FAST, "max_steps": 2000})
    _wait_for(lambda: _training(db, job_id), 300, "training on the node")
    pid = runner.job_view(db, job_id).pid
    assert _alive(pid)
    started = time.monotonic()
    view = runner.cancel(db, job_id)
    assert view.status == "cancelled" and view.error == "cancelled by the local operator"
    _wait_for(lambda: str(_ray_info(job_id, db).status.value) == "STOPPED", 60, "Ray to stop the job")
    stopped = time.monotonic() - started
    _wait_for(lambda: not _alive(pid), 30, "the job process to end")
    gone = time.monotonic() - started
    print(f"cancel: Ray job STOPPED after {stopped:.2f} s, job process gone after {gone:.2f} s")
    assert runner.reconcile(db) == [] and runner.job_view(db, job_id).status == "cancelled"  # stays cancelled


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)  # one database per run: the cluster is slow to drive
def test_a_killed_worker_node_fails_the_job_with_rays_reason_and_resume_continues_it(
    on_ray, db, tiny_parent, make_snapshot
):
    job_id = launch_dpo(db, "tiny-parent", make_snapshot(8), **{**FAST, "max_steps": 2000, "save_steps": 2})
    _wait_for(lambda: _training(db, job_id, min_step=3), 300, "a saved checkpoint")
    pid = runner.job_view(db, job_id).pid
    worker = _worker(on_ray)
    killed = time.monotonic()
    on_ray.remove_node(worker, allow_graceful=False)  # the node's raylet and its processes are killed
    view = runner.wait(db, job_id, timeout=180)
    noticed = time.monotonic() - killed
    print(
        f"node {worker.node_id} killed; the studio showed after {noticed:.1f} s: {view.status}: {view.error}"
    )
    assert view.status == "failed"
    assert f"failed on node {worker.node_id}" in view.error and "its node has died" in view.error
    assert "resume the job" in view.error
    _wait_for(lambda: not _alive(pid), 30, "the job process to end with its node")
    assert runner.job_view(db, job_id).status == "failed"  # nothing left running
    saved = max(step for step, _ in runner.saved_checkpoints(job_id))

    on_ray.add_node(num_cpus=1, resources={"trainer": 1})  # a new node; resume works as on any host
    on_ray.wait_for_nodes()
    assert runner.resume(db, job_id).status == "queued"
    log_path = runner.job_view(db, job_id).log_path

    def resumed() -> str | None:
        _training(db, job_id, min_step=0)  # reconcile, and the row is still queued or running
        log = runner.log_tail(log_path, lines=400, max_chars=100_000).rsplit("resuming from ", 1)
        return log[1] if len(log) == 2 and f"[train] step {saved + 1}/" in log[1] else None

    after = _wait_for(resumed, 300, "training past the checkpoint")
    checkpoint = runner.job_dir(job_id) / "checkpoints" / f"checkpoint-{saved}"
    assert after.startswith(
        f"{checkpoint} (step {saved})"
    )  # continued from the last checkpoint before the kill
    assert _ray_info(job_id, db).driver_node_id == _worker(on_ray).node_id != worker.node_id
    runner.cancel(db, job_id)


def test_the_cli_refuses_a_launch_to_an_unreachable_cluster_with_the_reason(tiny_model_dir, monkeypatch):
    from typer.testing import CliRunner

    from tests.helpers.servers import seed_tiny_parent
    from vibestudio.db.session import Database
    from vibestudio.studio.cli import app

    db = Database()
    try:
        snap = seed_tiny_parent(db, tiny_model_dir)
        address = f"http://127.0.0.1:{_closed_port()}"
        monkeypatch.setenv("VIBESTUDIO_JOBS", "ray")
        monkeypatch.setenv("VIBESTUDIO_RAY_ADDRESS", address)
        args = ["train", "dpo", "--parent", "tiny-parent", "--snapshot", snap, "--set", "max_steps=2"]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 1
        assert f"the Ray cluster at {address} (VIBESTUDIO_RAY_ADDRESS) did not answer" in result.output
        assert runner.list_jobs(db) == []
    finally:
        db.dispose()


def _row_for(db, sid: str) -> int:
    with db.session() as s:
        job = Job(kind="dpo", config={"kind": "dpo"}, status="running", host=ray_jobs.PREFIX + sid)
        s.add(job)
        s.flush()
        return job.id


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)  # one database per run: the cluster is slow to drive
def test_ray_jobs_that_end_behind_the_studios_back_end_their_rows_with_why(on_ray, db):
    """Stopped through Ray (``ray job stop``): cancelled. Exited without recording a result: failed. A job the
    cluster does not know (it was restarted): failed. Each says so; a job Ray still runs is left alone."""
    client = ray_jobs.client()
    stopped = client.submit_job(entrypoint="exec sleep 120", submission_id=f"t-stop-{time.time_ns()}")
    quiet = client.submit_job(entrypoint="true", submission_id=f"t-quiet-{time.time_ns()}")
    busy = client.submit_job(entrypoint="exec sleep 120", submission_id=f"t-busy-{time.time_ns()}")
    rows = {sid: _row_for(db, sid) for sid in (stopped, quiet, busy, "t-unknown")}
    _wait_for(lambda: str(client.get_job_status(stopped).value) == "RUNNING", 60, "the job to run")
    client.stop_job(stopped)
    _wait_for(lambda: all(_ray_done_sid(client, s) for s in (stopped, quiet)), 60, "the jobs to end")
    assert sorted(runner.fail_lost(db)) == sorted([rows[stopped], rows[quiet], rows["t-unknown"]])
    views = {sid: runner.job_view(db, job_id) for sid, job_id in rows.items()}
    assert views[stopped].status == "cancelled" and f"the Ray job {stopped} was stopped through Ray" in (
        views[stopped].error or ""
    )
    assert views[quiet].status == "failed" and "(exit code 0) without recording a result" in (
        views[quiet].error or ""
    )
    assert views["t-unknown"].status == "failed" and "has no job t-unknown" in (
        views["t-unknown"].error or ""
    )
    assert views[busy].status == "running"
    # a row whose submitter had not yet recorded its submission: promoted once Ray knows it, else left alone
    with db.session() as s:
        known = Job(kind="dpo", config={"kind": "dpo"}, status="queued", host=ray_jobs.SUBMITTING + busy)
        unknown = Job(
            kind="dpo", config={"kind": "dpo"}, status="queued", host=ray_jobs.SUBMITTING + "t-flight"
        )
        s.add_all([known, unknown])
        s.flush()
        ids = known.id, unknown.id
    assert runner.fail_lost(db) == []
    assert runner.job_view(db, ids[0]).host == f"ray:{busy}"  # from now on judged as any submitted job
    assert runner.job_view(db, ids[1]).status == "queued"
    runner.cancel(db, ids[1])
    runner.cancel(db, rows[busy])
    _wait_for(lambda: str(client.get_job_status(busy).value) == "STOPPED", 60, "cancel to reach Ray")


def _ray_row(db, sid: str, status: str, log_path: str, error: str | None = None, ago_s: float = 5.0) -> int:
    with db.session() as s:
        job = Job(
            kind="dpo",
            config={"kind": "dpo"},
            status=status,
            host=f"{ray_jobs.PREFIX}{sid} on node d0",
            log_path=log_path,
            error=error,
            ended_at=utcnow() - timedelta(seconds=ago_s) if status == "failed" else None,
        )
        s.add(job)
        s.flush()
        return job.id


def test_rays_reason_goes_before_the_error_rank_0_recorded_first_once(db, monkeypatch, tmp_path):
    """A lost node under a job across nodes: rank 0 may fail the row on its broken link before Ray calls the job
    failed. Then Ray's reason, with the driver's verdict (the lost node), goes before rank 0's error, once
    however many replicas look. A row Ray says nothing more about (the job's own exit, no node lost), or one
    that failed long ago, stays as it was; a row still running fails with the verdict in its reason."""
    monkeypatch.setenv("VIBESTUDIO_JOBS", "ray")
    monkeypatch.setenv("VIBESTUDIO_RAY_ADDRESS", "http://ray-head:8265")
    log = str(tmp_path / "train.log")
    plain = f"{ray_jobs.PLAIN_EXIT} 1"
    died = "Job supervisor actor died: The actor died because its node has died. Node Id: d0"
    gloo = "RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:17332\n--- log tail ---\n..."
    lost_text, lost = ray_spread.verdict(
        {0: "its job process exited with code 1"}, {0: "n0", 1: "n1"}, {"n0": True, "n1": False}, []
    )
    own_text, own = ray_spread.verdict(
        {0: "ValueError: bad", 1: "its job process exited with code 1"},
        {0: "n0", 1: "n1"},
        {"n0": True, "n1": True},
        [],
    )
    cases = {  # name: (row status, seconds since it failed, Ray status, Ray message, the driver's verdict)
        "lost": ("failed", 5, "FAILED", plain, (lost_text, lost)),
        "own": ("failed", 5, "FAILED", plain, (own_text, own)),
        "died": ("failed", 5, "FAILED", died, None),
        "old": ("failed", ray_jobs.LATE_S + 60, "FAILED", plain, (lost_text, lost)),
        "driving": ("failed", 5, "RUNNING", "", None),  # the driver still waits for the other ranks
        "running": ("running", 0, "FAILED", plain, (lost_text, lost)),
    }
    ids, infos = {}, []
    for name, (status, ago, ray_status, message, verdict) in cases.items():
        sid = f"vibestudio-job-{name}"
        ids[name] = _ray_row(db, sid, status, log, gloo if status == "failed" else None, ago)
        infos.append(
            SimpleNamespace(
                submission_id=sid, status=ray_status, message=message, driver_node_id="d0", driver_exit_code=1
            )
        )
        if verdict:
            ray_spread.write_verdict(ray_jobs.verdict_path(log, sid), *verdict)
    monkeypatch.setattr(ray_jobs, "client", lambda: SimpleNamespace(list_jobs=lambda: infos))
    real = ray_jobs.ended
    found = real(db)
    amends = sorted(r.job_id for r in found if isinstance(r, ray_jobs.Amend))
    assert amends == sorted([ids["lost"], ids["died"]])
    [by_ray] = [r for r in found if r.job_id == ids["died"]]  # Ray's own message says the node died
    assert by_ray.error == (
        f"the Ray job vibestudio-job-died failed on node d0: {died}; resume the job to run it again"
        f"{ray_jobs.FIRST}{gloo}"
    )
    [running] = [r for r in found if isinstance(r, ray_jobs.Ended)]
    assert running.job_id == ids["running"] and running.reason == (
        f"the Ray job vibestudio-job-running failed on node d0: {plain} (the node n1 under rank 1 was lost; "
        "rank 0 failed: its job process exited with code 1); resume the job to run it again"
    )
    monkeypatch.setattr(ray_jobs, "ended", lambda _db: [r for r in found if isinstance(r, ray_jobs.Amend)])
    with db.session() as s:  # resumed (a new submission) and failed again since the look: not overwritten
        again = s.get(Job, ids["died"])
        again.host, again.error = f"{ray_jobs.PREFIX}vibestudio-job-died-again", "ValueError: a later attempt"
    assert runner.fail_lost(db) == [] and runner.fail_lost(db) == []  # two replicas, the same look
    views = {name: runner.job_view(db, job_id) for name, job_id in ids.items()}
    assert views["lost"].status == "failed" and views["lost"].error == (
        f"the Ray job vibestudio-job-lost failed on node d0: {plain} (the node n1 under rank 1 was lost; rank 0 "
        f"failed: its job process exited with code 1); resume the job to run it again{ray_jobs.FIRST}{gloo}"
    )
    assert views["died"].error == "ValueError: a later attempt"
    assert all(views[name].error == gloo for name in ("own", "old", "driving"))
    assert [r for r in real(db) if isinstance(r, ray_jobs.Amend)] == []  # named now: nothing more to add


def _ray_done_sid(client, sid: str) -> bool:
    return str(client.get_job_status(sid).value) in ("SUCCEEDED", "FAILED", "STOPPED")


def test_a_job_of_two_processes_is_placed_across_nodes_only_when_no_node_holds_both():
    cfg = make_config("dpo", use_cpu=True, num_processes=2, launcher="accelerate")
    needs = ray_jobs.Needs(2.0, 0.0, {"trainer": 1.0})
    one_each = [ray_jobs.Node(f"n{i}", True, {"CPU": 1.0, "trainer": 1.0}) for i in range(2)]
    assert ray_jobs.placement(one_each, needs, cfg) == "spread"
    assert ray_jobs.placement(
        [*one_each, ray_jobs.Node("big", True, {"CPU": 4.0, "trainer": 1.0})], needs, cfg
    ) == ("node")
    assert ray_jobs.placement(one_each[:1], needs, cfg) is None  # room for one process only
    dead = [one_each[0], ray_jobs.Node("n9", False, {"CPU": 1.0, "trainer": 1.0})]
    assert ray_jobs.placement(dead, needs, cfg) is None
    one_process = make_config("dpo", use_cpu=True)
    assert (
        ray_jobs.placement(one_each, ray_jobs.Needs(2.0, 0.0, {}), one_process) is None
    )  # not a launcher job


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)  # one database per run: the cluster is slow to drive
def test_one_job_across_two_nodes_trains_on_both_ranks_and_rank_0_alone_publishes(
    on_ray, db, tiny_parent, make_snapshot
):
    """Two worker nodes with one CPU each: a two-process job fits on neither alone, so it runs one rank on each
    (``training.jobs.ray_spread``), meeting over gloo; the global batch is twice the per-device one."""
    import re

    on_ray.add_node(num_cpus=1, resources={"trainer": 1})
    on_ray.wait_for_nodes()
    two = {"launcher": "accelerate", "num_processes": 2, "use_cpu": True, "per_device_train_batch_size": 2}
    job_id = launch_dpo(db, "tiny-parent", make_snapshot(8), **{**FAST, **two})
    view = runner.wait(db, job_id, timeout=900)
    log = runner.log_tail(view.log_path, lines=2000, max_chars=10**7)
    assert view.status == "succeeded", view.error or log[-3000:]
    batches = re.findall(r"\[rank (\d) of 2\] per-device batch (\d+), global batch (\d+)", log)
    trained = re.findall(r"\[rank (\d) of 2\] trained (\d+) steps", log)
    assert sorted(batches) == [("0", "2", "4"), ("1", "2", "4")], log[-3000:]
    assert sorted(trained) == [("0", str(FAST["max_steps"])), ("1", str(FAST["max_steps"]))], log[-3000:]
    assert "[ray spread] 2 processes over the cluster" in log
    placed = dict(re.findall(r"\[ray spread\] rank (\d) on node (\w+)", log))
    workers = {n.node_id for n in on_ray.worker_nodes}
    assert set(placed) == {"0", "1"} and placed["0"] != placed["1"] and set(placed.values()) <= workers, (
        placed
    )
    assert view.contestant_id is not None and log.count("published") <= 2  # one publish, by rank 0
    with db.session() as s:
        contestants = s.scalar(
            select(func.count()).select_from(Contestant).where(Contestant.job_id == job_id)
        )
    assert contestants == 1
    print(f"job {job_id} across two nodes: ranks on {placed}, batches {batches}, trained {trained}")


def _job_processes(config_path: str) -> list[int]:
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        line = proc.info.get("cmdline") or []
        spread = "vibestudio.training.jobs.ray_spread" in line  # the driver names the job process too
        if "vibestudio.training.jobs.job_process" in line and config_path in line and not spread:
            found.append(proc.info["pid"])
    return found


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)  # one database per run: the cluster is slow to drive
def test_a_lost_node_under_a_job_across_nodes_fails_it_and_stops_every_rank(
    on_ray, db, tiny_parent, make_snapshot
):
    """As documented: one rank's node lost fails the whole job (the driver stops the other rank), with why;
    no rank is left training; resume continues it like any job."""
    import re

    while len(on_ray.worker_nodes) < 2:
        on_ray.add_node(num_cpus=1, resources={"trainer": 1})
    on_ray.wait_for_nodes()
    two = {"launcher": "accelerate", "num_processes": 2, "use_cpu": True, "per_device_train_batch_size": 2}
    job_id = launch_dpo(
        db, "tiny-parent", make_snapshot(8), **{**FAST, **two, "max_steps": 2000, "save_steps": 2}
    )
    _wait_for(lambda: _training(db, job_id, min_step=3), 400, "both ranks training")
    view = runner.job_view(db, job_id)
    log = runner.log_tail(view.log_path, lines=400, max_chars=10**6)
    placed = dict(re.findall(r"\[ray spread\] rank (\d) on node (\w+)", log))
    config_path = str(runner.job_dir(job_id) / "config.yaml")
    assert len(_job_processes(config_path)) == 2
    rank_1 = next(n for n in on_ray.worker_nodes if n.node_id == placed["1"])
    killed = time.monotonic()
    on_ray.remove_node(rank_1, allow_graceful=False)
    view = runner.wait(db, job_id, timeout=240)
    noticed = time.monotonic() - killed
    first = view.error.splitlines()[0][:300]
    sid = ray_jobs.submission_of(view.host)

    def named():  # rank 0 may record its broken link first; the app's watch then adds Ray's reason
        runner.fail_lost(db)
        seen = runner.job_view(db, job_id)
        return seen if f"the Ray job {sid} failed" in seen.error else None

    view = _wait_for(named, ray_spread.GRACE_S + 60, "Ray's reason in the row")
    named_after = time.monotonic() - killed
    print(
        f"rank 1's node killed; the studio showed after {noticed:.1f} s: {view.status}: {first}; Ray's reason "
        f"after {named_after:.1f} s ({'after' if ray_jobs.FIRST in view.error else 'before'} rank 0's own): "
        f"{view.error[:600]}"
    )
    assert view.status == "failed" and f"the Ray job {sid} failed" in view.error
    assert f"the node {placed['1']} under rank 1 was lost" in view.error.split(ray_jobs.FIRST)[0]
    whole = runner.log_tail(view.log_path, lines=10**5, max_chars=10**8)
    assert "[ray spread] a rank failed, stopping the others" in whole
    _wait_for(lambda: not _job_processes(config_path), 60, "every rank to end")


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)  # one database per run: the cluster is slow to drive
def test_cancel_of_a_job_across_nodes_stops_every_rank(on_ray, db, tiny_parent, make_snapshot):
    while len(on_ray.worker_nodes) < 2:
        on_ray.add_node(num_cpus=1, resources={"trainer": 1})
    on_ray.wait_for_nodes()
    two = {"launcher": "accelerate", "num_processes": 2, "use_cpu": True, "per_device_train_batch_size": 2}
    job_id = launch_dpo(db, "tiny-parent", make_snapshot(8), **{**FAST, **two, "max_steps": 2000})
    _wait_for(lambda: _training(db, job_id, min_step=2), 400, "both ranks training")
    config_path = str(runner.job_dir(job_id) / "config.yaml")
    assert len(_job_processes(config_path)) == 2
    started = time.monotonic()
    assert runner.cancel(db, job_id).status == "cancelled"
    _wait_for(lambda: not _job_processes(config_path), 60, "every rank to end")
    gone = time.monotonic() - started
    _wait_for(lambda: _ray_done(job_id, db), 60, "the Ray job to end")
    print(f"cancel across nodes: every rank gone after {gone:.2f} s")
    assert runner.job_view(db, job_id).status == "cancelled"
