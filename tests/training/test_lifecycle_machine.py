"""Every lifecycle state has a way out, and every read shows a change when it happens: a Hypothesis state
machine over contestant lifecycles and job statuses (queued, running, reporting, cancelled mid-report, failed,
resumed, report crashed), on real SQLite through the real services (publish, verdict record, cancel, resume,
the lifecycle's person actions). The report itself is scripted (a verdict recorded the way ``run_report`` records
it): a real one takes minutes. After every step:

- no child is pending without a live (queued or running) job to record its verdict;
- every contestant has a person's way out of its state (``lifecycle.WAYS_OUT``), and each one listed is allowed
  (tried in a transaction that is rolled back);
- what ``vibestudio jobs list`` would do (``reconcile``) finds nothing left to fix, and the service reads agree
  with the pages' data: the job list's contestant state, the verdict badges, the model page's state and the
  Train tab's jobs table.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from sqlalchemy import select

from vibestudio.arena import lifecycle
from vibestudio.arena.registry import ContestantSpec, get_contestant, register
from vibestudio.db.models import Contestant, Job, utcnow
from vibestudio.db.session import Database
from vibestudio.studio.pages.train import _jobs_table
from vibestudio.training.jobs import pending, runner
from vibestudio.training.publishing.publish import Target, _publish
from vibestudio.training.report import verdict

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class _Rollback(Exception):
    pass


class Studio(RuleBasedStateMachine):
    """One studio: a parent, training jobs, children published from them, report jobs."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(TMP.pop())
        shutil.copy(TEMPLATE[0], self.tmp / "studio.sqlite")  # migrated once: a copy per run is fast
        self.db = Database(f"sqlite:///{self.tmp / 'studio.sqlite'}")
        self.n = 0
        self.steps = 0
        self.tried: dict[int, str] = {}

    def teardown(self) -> None:
        self.db.dispose()
        CHECKED.append(self.steps)

    @initialize()
    def parent(self) -> None:
        """A parent, a job a worker runs and its child, published at the end of the job, its report running
        ('reporting'): short runs start where the lifecycle's questions are."""
        with self.db.session() as s:
            self.parent_id = register(s, ContestantSpec("base-parent"))
        self.launch()
        jid = self._jobs("queued")[0]
        self._claim(jid)
        _publish(self.db, self._target(jid, 3, False), contestant=True, queue_report=False)

    # ---- jobs ------------------------------------------------------------------------------------------------
    def _jobs(self, *statuses: str, kind: str | None = None) -> list[int]:
        with self.db.session() as s:
            q = select(Job.id).where(Job.status.in_(statuses)).order_by(Job.id)
            if kind:
                q = q.where(Job.kind == kind)
            return list(s.scalars(q))

    @rule()
    def launch(self) -> None:
        with self.db.session() as s:
            s.add(Job(kind="dpo", config={"kind": "dpo", "save_steps": 0}, status="queued"))

    @precondition(lambda self: self._jobs("queued"))
    @rule(data=st.data())
    def worker_claims(self, data: st.DataObject) -> None:
        self._claim(data.draw(st.sampled_from(self._jobs("queued"))))

    def _claim(self, jid: int) -> None:
        with (
            self.db.session() as s
        ):  # claimed by a worker on another host: alive while its heartbeat is fresh
            job = s.get_one(Job, jid)
            job.status, job.host, job.started_at, job.heartbeat_at = "running", "gpu-box", utcnow(), utcnow()

    def _target(self, jid: int, step: int, mid_run: bool) -> Target:
        self.n += 1
        with self.db.session() as s:
            parent = get_contestant(s, self.parent_id)
        folder = self.tmp / f"out-{self.n}"
        folder.mkdir()
        return Target(jid, "dpo", folder, step, f"child-{self.n}", "a child", parent, "base", True, None, True,
                      {"drift_prompts": 20} if mid_run else {})  # fmt: skip

    @precondition(lambda self: self._jobs("running", kind="dpo"))
    @rule(data=st.data(), mid_run=st.booleans())
    def publish(self, data: st.DataObject, mid_run: bool) -> None:
        """End of job (its worker then runs the report: 'reporting') or a checkpoint saved on the way (a queued
        report job)."""
        jid = data.draw(st.sampled_from(self._jobs("running", kind="dpo")))
        _publish(self.db, self._target(jid, 3, mid_run), contestant=True, queue_report=mid_run)

    def _reporting(self) -> list[tuple[int, int]]:
        """(child, job) for each pending child whose report job runs now."""
        out = []
        with self.db.session() as s:
            for cid in s.scalars(select(Contestant.id).where(Contestant.state == "pending")):
                jid, status, _ = pending.report_job_status(s, cid)
                if status == "running" and jid is not None:
                    out.append((cid, jid))
        return out

    @precondition(lambda self: self._reporting())
    @rule(data=st.data(), outcome=st.sampled_from(["pass", "regress", "crash"]))
    def report_ends(self, data: st.DataObject, outcome: str) -> None:
        """The report records its verdict (or, crashing, 'unknown' with the reason) and its job ends."""
        cid, jid = data.draw(st.sampled_from(self._reporting()))
        if outcome == "crash":
            v = verdict.no_report("the checkpoint report failed: RuntimeError: scripted", False)
        else:
            delta = -0.4 if outcome == "regress" else 0.0
            v = verdict.decide({"evals/accuracy": {"delta": delta, "q": 0.001 if delta else 1.0},
                                "drift/flattery": {"delta": 0.0, "q": 1.0}}, {})  # fmt: skip
        verdict.record(self.db, cid, v, None)
        runner.finish(self.db, jid, "succeeded", None, only_if="running")

    @precondition(lambda self: self._jobs("queued", "running"))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        """Cancel a queued or running job, mid-report or not."""
        runner.cancel(self.db, data.draw(st.sampled_from(self._jobs("queued", "running"))))

    @precondition(lambda self: self._jobs("running"))
    @rule(data=st.data())
    def worker_dies(self, data: st.DataObject) -> None:
        """The worker is lost (killed, out of memory): reconcile fails its job, as on a stale heartbeat."""
        jid = data.draw(st.sampled_from(self._jobs("running")))
        runner.finish(self.db, jid, "failed", "the job process died", only_if="running")

    @precondition(lambda self: self._jobs("failed", "cancelled", kind="dpo"))
    @rule(data=st.data())
    def resume(self, data: st.DataObject) -> None:
        runner.resume(self.db, data.draw(st.sampled_from(self._jobs("failed", "cancelled", kind="dpo"))))

    # ---- a person's actions ------------------------------------------------------------------------------------
    def _children(self) -> list[int]:
        with self.db.session() as s:
            return list(s.scalars(select(Contestant.id).where(Contestant.id != self.parent_id)))

    @precondition(lambda self: self._children())
    @rule(data=st.data())
    def person_acts(self, data: st.DataObject) -> None:
        cid = data.draw(st.sampled_from(self._children()))
        with self.db.session() as s:
            state = lifecycle.state_of(s, cid)
        action = data.draw(st.sampled_from(lifecycle.WAYS_OUT[state]))
        with self.db.session() as s:
            _act(s, cid, action)

    # ---- invariants (one pass over the state after each step: the reads are what the test spends time on) -------
    @invariant()
    def every_invariant(self) -> None:
        self.steps += 1
        with self.db.session() as s:
            states = dict(s.execute(select(Contestant.id, Contestant.state)).tuples().all())
            for cid, state in states.items():
                if state == "pending":  # no child pending without a live report job
                    jid, status, _ = pending.report_job_status(s, cid)
                    assert status in pending.ACTIVE_JOB, (
                        f"child {cid} pending, its report job {jid} is {status}"
                    )
        self._ways_out(states)
        self._reads_agree(states)

    def _ways_out(self, states: dict[int, str]) -> None:
        """Every state has a person's way out, and each one listed is allowed (tried, then rolled back); each
        contestant is tried again whenever its state changed."""
        for cid, state in states.items():
            if self.tried.get(cid) == state:
                continue
            ways = lifecycle.WAYS_OUT[state]
            assert ways, f"{state} has no way out"
            for action in ways:
                try:
                    with self.db.session() as s:
                        _act(s, cid, action)
                        raise _Rollback
                except _Rollback:
                    pass
            self.tried[cid] = state

    def _reads_agree(self, states: dict[int, str]) -> None:
        assert runner.reconcile(self.db, start=False) == []  # what `jobs list` runs first
        with self.db.session() as s:
            after = dict(s.execute(select(Contestant.id, Contestant.state)).tuples().all())
            for cid, state in after.items():  # the Models page's state line
                assert lifecycle.describe(s, cid).startswith(lifecycle.badge(state))
        assert after == states, "a state changed only when `jobs list` looked"
        table = _jobs_table(
            SimpleNamespace(db=self.db)
        )  # the Train tab's jobs table, as a load or tick reads it
        listed = {j.id: j for j in runner.list_jobs(self.db)}
        for row in table.to_dict("records"):
            j = listed[row["id"]]
            assert row["status"] == j.status
            if j.contestant_id:
                assert j.contestant_state == after[j.contestant_id]  # `jobs list` says the same state
                if after[j.contestant_id] != "released":
                    assert lifecycle.badge(after[j.contestant_id]) in row["verdict"]


def _act(s, cid: int, action: str) -> None:
    if action == "release":
        lifecycle.release(s, cid, "looked at it")
    elif action == "hold":
        lifecycle.hold(s, cid, "keep it out for now")
    elif action == "hide":
        lifecycle.hide(s, cid, "retired")
    else:
        lifecycle.restore(s, cid)


TMP: list[str] = []
TEMPLATE: list[Path] = []
CHECKED: list[int] = []


@pytest.fixture
def tmp_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("VIBESTUDIO_JOBS", "workers")  # queued jobs wait for a worker: none is spawned here
    template = tmp_path / "template.sqlite"
    db = Database(f"sqlite:///{template}")
    db.migrate()
    db.dispose()
    TEMPLATE[:] = [template]
    for i in range(200):
        TMP.append(str(tmp_path / f"studio-{i}"))
        (tmp_path / f"studio-{i}").mkdir()
    yield
    TMP.clear()


@pytest.mark.parametrize(
    "runs,steps",
    [(4, 8), pytest.param(12, 12, marks=pytest.mark.slow, id="slow")],
)
def test_every_state_has_a_way_out_and_every_read_agrees(tmp_dirs, runs, steps):
    Studio.TestCase.settings = settings(
        max_examples=runs,
        stateful_step_count=steps,
        deadline=None,
        derandomize=True,  # the same runs on every machine: a failure here is one to replay, not luck
        suppress_health_check=list(HealthCheck),
    )
    CHECKED.clear()
    Studio.TestCase().runTest()
    print(f"lifecycle invariants held on {sum(CHECKED)} generated states ({len(CHECKED)} runs)")
    assert sum(CHECKED) >= runs * 2  # states checked (each step's state, across the generated runs)
