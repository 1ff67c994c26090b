"""One check per launch (#47): a click on the Train tab's Launch, the CLI, the API and a comparison each run the
pre-launch check once and reuse what it found down to the queued job. Measured here: checks, snapshot loads,
estimates and database transactions per launch, counted with a profiler and SQLAlchemy's ``begin`` event."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event

from vibestudio.arena.battles import ArenaService
from vibestudio.common.settings import get_settings
from vibestudio.studio.context import StudioContext
from vibestudio.studio.pages import train
from vibestudio.training.jobs import runner

#: The functions counted per launch: the check, what it reads again each time it runs, and the estimate.
CHECK = "vibestudio.training.jobs.preflight:check_job"
SNAPSHOT_LOAD = "vibestudio.annotation.snapshots:load_snapshot"
ESTIMATE = "vibestudio.training.jobs.estimate:estimate"


class Tally:
    """Calls of the studio's functions (module:qualname) and database transactions begun."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.transactions = 0

    @property
    def rooms(self) -> set[str]:
        return {name.split(":")[0].rsplit(".", 1)[0] for name in self.calls}

    def line(self) -> str:
        return (
            f"checks {self.calls[CHECK]}, snapshot loads {self.calls[SNAPSHOT_LOAD]}, estimates "
            f"{self.calls[ESTIMATE]}, transactions {self.transactions}; walk: {len(self.calls)} functions in "
            f"{len({n.split(':')[0] for n in self.calls})} modules, {len(self.rooms)} rooms"
        )


@contextmanager
def tally(db: Any) -> Iterator[Tally]:
    out = Tally()

    def prof(frame, event_name, _arg):  # type: ignore[no-untyped-def]
        if event_name == "call":
            mod = frame.f_globals.get("__name__", "")
            if mod.startswith("vibestudio."):
                out.calls[f"{mod}:{frame.f_code.co_qualname}"] += 1

    def began(_conn: Any) -> None:
        out.transactions += 1

    event.listen(db.engine, "begin", began)
    sys.setprofile(prof)
    try:
        yield out
    finally:
        sys.setprofile(None)
        event.remove(db.engine, "begin", began)


@pytest.fixture
def quiet(monkeypatch):
    monkeypatch.setattr(runner, "start_next", lambda db: None)  # a queued row is the end of a launch here


def _measure(db: Any, launch: Callable[[], Any]) -> Tally:
    with tally(db) as t:
        launch()
    print(f"\n{launch.__name__}: {t.line()}")
    return t


def _votes(db: Any, parent: int) -> None:
    """Ten ended battles of ``parent`` against another contestant: 6 pairs for DPO, 10 KTO rows."""
    from tests.helpers.training import add_votes
    from vibestudio.arena.registry import ContestantSpec, register

    with db.session() as s:
        other = register(s, ContestantSpec("other-model"))
    add_votes(db, parent, other, ["a", "b", "both_good", "a", "both_bad", "b", "a", "tie", "b", "both_good"])


def _job_ids(db: Any) -> list[int]:
    from sqlalchemy import select

    from vibestudio.db.models import Job

    with db.session() as s:
        return list(s.scalars(select(Job.id).order_by(Job.id)))


def test_a_launch_from_the_train_tab_checks_once(db, tiny_parent, make_snapshot, quiet):
    ctx = StudioContext(settings=get_settings(), db=db, arena=ArenaService(db))
    snap = make_snapshot(8)
    text = f"kind: dpo\nparent_contestant: tiny-parent\nsnapshot_hash: {snap}\nmax_steps: 2\n"
    on_launch = train._config_handlers(ctx).on_launch

    def train_tab() -> None:
        said, check, *_ = on_launch(text, None)
        assert "submitted" in said, said
        assert "Estimate" in check or "estimate" in check

    t = _measure(db, train_tab)
    assert len(_job_ids(db)) == 1
    assert t.calls[CHECK] == 1, t.line()
    assert t.calls[SNAPSHOT_LOAD] == 1, t.line()
    assert t.calls[ESTIMATE] == 1, t.line()
    # 10 before (#47): 3 for the launch (check, re-parse, submit's check), 7 re-reading the page; now 2 and 6
    assert t.transactions <= 8, t.line()


def test_a_launch_on_fresh_votes_with_a_pairs_filter_checks_once(db, tiny_parent, quiet):
    """The longest path: no snapshot (the votes are frozen at launch) and a pairs filter (a second freeze)."""
    from vibestudio.training.jobs.service import launch_config

    _votes(db, tiny_parent)

    def api() -> None:
        launch_config(
            db, {"kind": "dpo", "parent_contestant": "tiny-parent", "max_steps": 2, "pairs": "on_and_half"}
        )

    t = _measure(db, api)
    assert t.calls[CHECK] == 1, t.line()


def test_a_launch_from_the_cli_checks_once(db, tiny_parent, make_snapshot, quiet, monkeypatch):
    from vibestudio.studio.cli import train as cli_train

    monkeypatch.setattr(cli_train, "open_db", lambda: db)
    snap = make_snapshot(8)

    def cli() -> None:
        cli_train.launch_from_cli(
            "dpo",
            None,
            {"parent_contestant": "tiny-parent", "snapshot_hash": snap},
            [],
            False,
            False,
            1,
            True,
        )

    t = _measure(db, cli)
    assert t.calls[CHECK] == 1, t.line()


def test_a_comparison_checks_each_child_once(db, tiny_parent, make_snapshot, quiet):
    from vibestudio.training.compare import launch_comparison

    _votes(db, tiny_parent)

    def comparison() -> None:
        launch_comparison(db, "tiny-parent", "dpo,simpo", None, max_steps=2)

    t = _measure(db, comparison)
    assert len(_job_ids(db)) == 2
    assert t.calls[CHECK] == 2, t.line()
