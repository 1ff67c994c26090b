"""No dead ends (#35): a crawler clicks every enabled button of every tab and sub-tab of a fresh studio and of a
populated one, and fails on any red Error badge, error toast, console error, HTTP response >= 400 or server-log
traceback, naming the button that caused each (``tests.helpers.crawler``).

One server per studio. The populated studio's database is filled through the services before the server starts:
anonymous votes of every outcome between three contestants, a preference snapshot, an imported annotation queue
with labels, and a failed training job (a tiny-model parent, so nothing real is trained).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from tests.helpers.crawler import ELSEWHERE, LONG_WORK, crawl
from tests.helpers.servers import seed_tiny_parent, start_server, stop_server
from vibestudio.db.session import Database

pytestmark = pytest.mark.e2e

T0 = datetime(2026, 3, 2, 9, 30)


def _votes(db: Database) -> None:
    """Ended anonymous battles between three contestants, one vote each, every outcome at least once."""
    from vibestudio.arena.registry import ContestantSpec, register
    from vibestudio.db.models import Battle, Turn, Vote

    with db.session() as s:
        ids = {
            n: register(s, ContestantSpec(n, description=f"crawl {n}"))
            for n in ("crawl-a", "crawl-b", "crawl-c")
        }
        games = [("crawl-a", "crawl-b", "a"), ("crawl-b", "crawl-c", "b"), ("crawl-a", "crawl-c", "tie")]
        games += [
            ("crawl-c", "crawl-a", "both_bad"),
            ("crawl-b", "crawl-a", "both_good"),
            ("crawl-a", "crawl-b", "a"),
        ]
        for k, (a, b, outcome) in enumerate(games):
            when = T0 + timedelta(minutes=5 * k)
            battle = Battle(a_id=ids[a], b_id=ids[b], left_is_a=k % 2 == 0, mode="anonymous", status="voted",
                            created_at=when)  # fmt: skip
            battle.turns.append(
                Turn(idx=0, user_msg=f"crawl q{k}", answer_a=f"answer {k}", answer_b=f"reply {k}")
            )
            battle.votes.append(Vote(turn_idx=0, outcome=outcome, created_at=when + timedelta(minutes=1)))
            s.add(battle)


def _queue(db: Database, tmp) -> None:  # type: ignore[no-untyped-def]
    """An annotation queue imported from a TRL preference file (its rows come with labels)."""
    from tests.helpers.training import pair_rows
    from vibestudio.annotation.formats.store import import_file

    path = tmp / "crawl-prefs.jsonl"
    path.write_text(
        "".join(json.dumps({k: r[k] for k in ("prompt", "chosen", "rejected")}) + "\n" for r in pair_rows(6))
    )
    with db.session() as s:
        import_file(s, path, "trl", "crawl-queue")


def _failed_job(db: Database, snapshot: str) -> None:
    from vibestudio.training.jobs import runner
    from vibestudio.training.jobs.service import check_config

    cfg = {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snapshot}
    job_id = runner.submit(db, "dpo", check_config(db, cfg).config, start=False)
    runner.finish(db, job_id, "failed", "stopped by the crawler's set-up")


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    home = tmp_path_factory.mktemp("crawl-fresh") / "home"
    home.mkdir()
    proc, url = start_server(home)
    try:
        yield url, home
    finally:
        stop_server(proc)


@pytest.fixture(scope="module")
def populated(tmp_path_factory, tiny_model_dir):
    root = tmp_path_factory.mktemp("crawl-populated")
    home = root / "home"
    home.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VIBESTUDIO_HOME", str(home))  # job folders go under the studio's data home
        db = Database(f"sqlite:///{home / 'studio.sqlite'}")
        snapshot = seed_tiny_parent(db, tiny_model_dir)
        _votes(db)
        _queue(db, root)
        _failed_job(db, snapshot)
        db.dispose()
    proc, url = start_server(home)
    try:
        yield url, home
    finally:
        stop_server(proc)


def _crawl(browser, url: str, home) -> None:  # type: ignore[no-untyped-def]
    # 900 px wide: the top row and the Leaderboard's sub-tabs do not fit, so some tabs open through "More tabs"
    page = browser.new_page(viewport={"width": 900, "height": 900})
    page.goto(url)
    page.wait_for_selector("#arena-prompt textarea")
    out = crawl(page, home / "server.log", LONG_WORK)
    page.close()
    print(f"[crawl] {url}: {out.summary()}\n[crawl] slowest: {out.slowest()}")
    pending = {w: p for w, p in out.problems.items() if w.rsplit(" / ", 1)[-1] in ELSEWHERE}
    if pending:
        print(
            "[crawl] still dead-ending on pages fixed elsewhere:\n"
            + "\n".join(f"- {w}: {p}" for w, p in pending.items())
        )
    dead = {w: p for w, p in out.problems.items() if w not in pending}
    assert out.clicked and out.views and out.overflow
    assert not dead, f"{out.summary()}; buttons that dead-end:\n" + "\n".join(
        f"- {w}: {'; '.join(p)}" for w, p in dead.items()
    )


# ~4 minutes on two loaded cores; the default 900 s cap is too close under heavy load
@pytest.mark.timeout(1500)
def test_fresh_studio_has_no_dead_ends(browser, fresh):
    _crawl(browser, *fresh)


# its set-up (server, tiny model) plus the crawl took 856 s at load 10-12
@pytest.mark.timeout(1500)
def test_populated_studio_has_no_dead_ends(browser, populated):
    _crawl(browser, *populated)
