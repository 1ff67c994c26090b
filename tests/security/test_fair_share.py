"""One user's fair share of the arena's generation slots, against the running app over HTTP: an annotator with
eight signed-in sessions (a flood in a process of its own, each session sending a turn whenever its last one
ended) has one turn answered at a time, the others refused with a message that says why, and another user's turn
meanwhile never waits for an engine slot; with the cap off, the same flood holds every slot and that turn waits
behind it, taking several times as long. Guard: ``arena.battles`` (turns in flight per user, ``VIBESTUDIO_TURNS_IN_FLIGHT``),
asked before a battle is opened by ``studio.pages.arena``."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fake_openai import FakeOpenAI, register_http
from tests.helpers.waiting import until

PW = "a long test password"
SESSIONS = 8  # the flooding annotator's signed-in sessions (tabs, scripts)
ANSWER_S = 0.6  # each scripted answer waits this long, then says three words


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str, FakeOpenAI]]:
    """The app with login on, served in this process: two contestants on one scripted server (four answers at
    once per engine), two annotators (``flood``, ``vic``), the per-minute turn limit off (the in-flight cap
    alone is measured). Yields ``(ctx, url, the scripted server)``."""
    from tests.helpers.servers import free_port
    from vibestudio.accounts import add_user
    from vibestudio.common.settings import Settings
    from vibestudio.db.session import Database
    from vibestudio.studio.app import serve
    from vibestudio.studio.context import build_context

    home = tmp_path_factory.mktemp("fair") / "home"
    home.mkdir()
    fake = FakeOpenAI()
    fake.hang_s = ANSWER_S
    url_db = f"sqlite:///{home / 'studio.sqlite'}"
    with pytest.MonkeyPatch.context() as mp:  # the scripted server is on loopback, as an operator would allow
        mp.setenv("VIBESTUDIO_ENGINE_ALLOWED_HOSTS", "127.0.0.1")
        mp.setenv("GRADIO_ANALYTICS_ENABLED", "False")
        db = Database(url_db)
        db.migrate()
        for name in ("flood", "vic"):
            add_user(db, name, PW, "annotator")
        for i in range(2):  # registered before the app is built: the default contestants are not added
            register_http(db, fake, f"fair-{i}", "hang", system_prompt=f"persona {i}", concurrency=4)
        db.dispose()
        settings = Settings(home=home, auth="on", database_url=url_db, prompts_per_minute=0)
        ctx = build_context(settings)
        demo, url = serve(host="127.0.0.1", port=free_port(), block=False, ctx=ctx)
        try:
            yield ctx, url.rstrip("/"), fake
        finally:
            demo.close()
            ctx.db.dispose()
            fake.close()


def _client(url: str, who: str) -> Any:
    from gradio_client import Client

    return Client(url, auth=(who, PW), verbose=False, download_files=False)


def _send(client: Any) -> str:
    """One arena Send; its status line."""
    out = client.predict("Say hi.", "Anonymous", None, None, api_name="/arena_send")
    return " ".join(o for o in out if isinstance(o, str) and ("Turn" in o or "⚠️" in o))


def _turn(client: Any) -> float:
    """One arena Send that must be answered; its time."""
    t0 = time.perf_counter()
    status = _send(client)
    assert "answered" in status, status
    return time.perf_counter() - t0


def _battles(ctx: Any, name: str) -> int:
    from sqlalchemy import func, select

    from vibestudio.accounts import get_user
    from vibestudio.db.models import Battle

    uid = get_user(ctx.db, name).id
    with ctx.db.session() as s:
        return s.scalar(select(func.count(Battle.id)).where(Battle.user_id == uid)) or 0


def test_one_user_has_one_turn_answered_at_a_time(arena):
    ctx, url, fake = arena
    first, second, other = _client(url, "flood"), _client(url, "flood"), _client(url, "vic")
    fake.hang_s = 3.0
    try:
        job = first.submit("Say hi.", "Anonymous", None, None, api_name="/arena_send")
        until(ctx.arena.answering_ids, 30, "the first session's turn to be answered", every=0.05)
        before = _battles(ctx, "flood")
        t0 = time.perf_counter()
        said = _send(second)  # the same user's second session, while the first is being answered
        took = time.perf_counter() - t0
        assert "already have a turn being answered" in said and "VIBESTUDIO_TURNS_IN_FLIGHT" in said, said
        assert took < 2.0 and _battles(ctx, "flood") == before  # refused at once; no empty battle left behind
        assert "answered" in _send(other)  # another user is not held back
        assert "answered" in " ".join(o for o in job.result() if isinstance(o, str))
    finally:
        fake.hang_s = ANSWER_S
    assert "answered" in _send(second)  # once the first turn is in, the next one goes


#: The flood: ``SESSIONS`` signed-in sessions of ``flood``, each sending a turn whenever its last one ended (after
#: a refusal, a second later, as a person pressing Send again would) until the stop file exists; prints what its
#: sends were told, as a JSON list.
FLOOD = r"""
import json, os, sys, threading, time
from gradio_client import Client
url, password, sessions, stop = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
said = []
def run():
    client = Client(url, auth=("flood", password), verbose=False, download_files=False)
    while not os.path.exists(stop):
        out = client.predict("Say hi.", "Anonymous", None, None, api_name="/arena_send")
        status = " ".join(o for o in out if isinstance(o, str) and ("Turn" in o or "\u26a0" in o))
        said.append(status)
        if "\u26a0" in status:
            time.sleep(1.0)
threads = [threading.Thread(target=run) for _ in range(sessions)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(said))
"""


class _Waiters:
    """The most requests seen waiting for an engine slot (every engine gate in this process), sampled every 20 ms
    while a phase of the test runs: whether a turn waited behind others, read from the gates, not from a clock."""

    def __init__(self) -> None:
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.most = max(self.most, _waiting())
            time.sleep(0.02)

    def __enter__(self) -> _Waiters:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)


def _waiting() -> int:
    """Requests waiting for a slot now, over every engine gate in this process."""
    from vibestudio.arena.engines import gate

    return sum(g.waiting for g in list(gate._GATES.values()))


@pytest.mark.slow  # a load test: about 30 s
def test_a_flood_from_one_account_does_not_make_another_users_turn_wait_for_a_slot(arena, tmp_path: Path):
    """Without the cap the flood's turns fill every engine slot and the other user's turn waits behind them;
    with it, nobody waits for a slot while that user's turns run. The gates' queues decide, not the clock: on a
    busy machine a turn's time grows with the CPU the flood's own process takes (alone 1.10 s, with the cap
    2.35 s once, beside a training run), whether or not it queued. The times are printed and bounded loosely."""
    ctx, url, _ = arena
    capped, open_ = ctx.arena.limits, replace(ctx.arena.limits, turns_in_flight_per_user=0)
    assert capped.turns_in_flight_per_user == 1  # the shipped default
    vic = _client(url, "vic")
    _turn(vic)  # warm: engines made, a battle open
    alone = statistics.median(_turn(vic) for _ in range(3))

    stop = tmp_path / "stop"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    flood = subprocess.Popen(
        [sys.executable, "-c", FLOOD, url, PW, str(SESSIONS), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        # without the cap, the flood's eight turns hold every slot: the other user waits behind them
        ctx.arena.limits = open_
        time.sleep(4)  # its sessions sign in and fill the queues
        vic = _client(url, "vic")  # a new session, a new battle (one battle takes at most eight turns)
        with _Waiters() as flooded_queue:
            flooded = statistics.median(_turn(vic) for _ in range(2))
        # with it, the flood has one turn answered at a time, and the other user's turn goes on beside it
        ctx.arena.limits = capped
        time.sleep(3 * ANSWER_S + 1)  # the turns it started without the cap end
        until(lambda: _waiting() == 0, 60, "the uncapped turns' waiters to be served")
        vic = _client(url, "vic")
        with _Waiters() as fair_queue:
            fair = statistics.median(_turn(vic) for _ in range(3))
    finally:
        ctx.arena.limits = capped
        stop.touch()
        out, _ = flood.communicate(timeout=120)
    figures = (
        f"alone {alone:.2f} s, flood without the cap {flooded:.2f} s (up to {flooded_queue.most} requests waiting "
        f"for a slot), with it {fair:.2f} s (up to {fair_queue.most} waiting)"
    )
    print(f"\n[fair share] {figures}")
    assert flooded_queue.most > 0 and flooded > 2 * alone, figures  # the flood is a real one
    assert fair_queue.most == 0, figures  # with the cap, no request waited for a slot while the turns ran
    assert fair < flooded, figures
    said = json.loads(out or "[]")
    refused = [s for s in said if "VIBESTUDIO_TURNS_IN_FLIGHT" in s]
    assert refused and all("already have a turn being answered" in s for s in refused), said[:5]
