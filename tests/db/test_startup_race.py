"""Two processes starting on one fresh database at once: both come up, the schema and defaults exist once.

Each process is a real interpreter that migrates and writes the first-start defaults the way `vibestudio serve`
does (db.migrate(), then ensure_defaults + ensure_mt_bench under Database.startup_lock), released together.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.postgres import KINDS, PG_URL, pg_schema

ROOT = Path(__file__).resolve().parents[2]
_START = """
import sys, time
from vibestudio.db.session import Database
from vibestudio.arena.prompts import ensure_mt_bench
from vibestudio.arena.registry import ensure_defaults
url, go = sys.argv[1], float(sys.argv[2])
while time.time() < go:
    time.sleep(0.005)
db = Database(url)
db.migrate()
with db.startup_lock(), db.session() as s:
    ensure_defaults(s)
    ensure_mt_bench(s)
print("up")
"""


def _race(url: str, n: int = 2) -> list[subprocess.CompletedProcess[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    go = time.time() + 4.0  # every interpreter is imported and waiting before the start signal
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _START, url, str(go)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=240)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def _counts(url: str) -> tuple[int, int, list[str]]:
    from sqlalchemy import func, select, text

    from vibestudio.db.models import Contestant, PromptSet
    from vibestudio.db.session import Database

    db = Database(url)
    try:
        with db.session() as s:
            contestants = s.scalar(select(func.count(Contestant.id))) or 0
            sets = s.scalar(select(func.count(PromptSet.id))) or 0
            heads = [r[0] for r in s.execute(text("SELECT version_num FROM alembic_version"))]
        return contestants, sets, heads
    finally:
        db.dispose()


@pytest.mark.parametrize("kind", KINDS)
def test_two_processes_start_on_a_fresh_database(kind: str, tmp_path: Path) -> None:
    def check(url: str) -> None:
        results = _race(url)
        for r in results:
            assert r.returncode == 0 and "up" in r.stdout, r.stderr[-3000:]
        contestants, sets, heads = _counts(url)
        assert contestants == 5  # the five default personas, once
        assert sets == 1  # MT-Bench, once
        assert len(heads) == 1

    if kind == "sqlite":
        check(f"sqlite:///{tmp_path / 'race.sqlite'}")
        return
    if not PG_URL:
        pytest.skip("VIBESTUDIO_TEST_PG_URL not set")
    with pg_schema(PG_URL) as url:
        check(url)
