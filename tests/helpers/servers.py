"""Servers for tests: a free local port, a real studio server in a subprocess (and how to stop it), a studio home
whose database already holds a tiny-model parent and a preference snapshot, and a studio served over simulated
votes (``standings.ratings._simulate``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from vibestudio.db.session import Database

START_S = 300  # the longest a server may take to start (imports alone took over 120 s on a loaded machine)

#: Three quiet personas of the embedded model: short, plain answers, with aliases an answer must not say.
QUIET = """
personas:
  - name: quokka-alpha
    description: marker-desc-alpha
    system_prompt: Reply briefly and plainly.
    sampling: {temperature: 0.2, max_tokens: 16, seed: 1}
    aliases: [Quokkabot]
  - name: quokka-beta
    description: marker-desc-beta
    system_prompt: Reply in one short sentence.
    sampling: {temperature: 0.2, max_tokens: 16, seed: 2}
    aliases: [Quokkatron]
  - name: quokka-gamma
    description: marker-desc-gamma
    prefill: "Sure. "
    sampling: {temperature: 0.2, max_tokens: 16, seed: 3}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(
    home: Path, env_extra: dict[str, str] | None = None, ready: tuple[int, ...] = (200,)
) -> tuple[subprocess.Popen, str]:
    """``vibestudio serve`` on a free port with ``home`` as its data home; returns once the page answers with one
    of the ``ready`` statuses (a server that signs users in elsewhere answers a bare request with 401)."""
    port = free_port()
    env = {
        **os.environ,
        "VIBESTUDIO_HOME": str(home),
        "GRADIO_ANALYTICS_ENABLED": "False",
        "VIBESTUDIO_MAX_NEW_TOKENS": "24",
        **(env_extra or {}),
    }
    env.pop("VIBESTUDIO_DATABASE_URL", None)
    log = open(home / "server.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "vibestudio.studio.cli", "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {(home / 'server.log').read_text()[-2000:]}")
        try:
            if httpx.get(url, timeout=2).status_code in ready:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"server did not start in {START_S} s")


def stop_server(proc: subprocess.Popen) -> None:
    """Terminate, and kill if it has not exited within 10 s."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def server_with_personas(
    tmp_path: Path, personas: str, env_extra: dict[str, str] | None = None
) -> tuple[subprocess.Popen, str, Database]:
    """A fresh home whose contestants are ``personas`` (YAML, added with ``vibestudio models add``), served
    (with ``env_extra`` set for the server)."""
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "personas.yaml").write_text(personas)
    env = {"VIBESTUDIO_HOME": str(home), "GRADIO_ANALYTICS_ENABLED": "False"}
    add = subprocess.run(
        [
            sys.executable,
            "-m",
            "vibestudio.studio.cli",
            "models",
            "add",
            "--yaml",
            str(tmp_path / "personas.yaml"),
        ],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=START_S,
    )
    assert add.returncode == 0, add.stderr
    proc, url = start_server(home, env_extra)
    return proc, url, Database(f"sqlite:///{home / 'studio.sqlite'}")


def seed_tiny_parent(db: Database, model_dir: Path) -> str:
    """Migrate ``db``, register ``tiny-parent`` (the tiny model, 8-token answers) and freeze 8 preference pairs;
    return the snapshot's hash."""
    from tests.helpers.training import pair_rows
    from vibestudio.annotation.snapshots import write_snapshot
    from vibestudio.arena.registry import ContestantSpec, register

    db.migrate()
    with db.session() as s:
        register(
            s,
            ContestantSpec(
                "tiny-parent",
                engine="transformers",
                model_ref=str(model_dir),
                sampling={"max_tokens": 8},
            ),
        )
        return write_snapshot(s, pair_rows(8), {"source": "test"}).hash


#: A simulated vote's winner (FastChat's words) as the database's outcome.
SIMULATED_OUTCOME = {
    "model_a": "a",
    "model_b": "b",
    "tie": "tie",
    "tie (bothbad)": "both_bad",
    "tie (bothgood)": "both_good",
}


def store_simulated(db: Database, frame: Any, start: datetime) -> None:
    """Write simulated battles (``simulate_arena``'s frame) as voted anonymous battles, one vote each, 30 s apart
    from ``start``, by passwordless users named for the frame's judges; contestants are registered as needed."""
    from vibestudio.arena.registry import ContestantSpec, register
    from vibestudio.db.models import Battle, Contestant, Turn, User, Vote

    with db.session() as s:
        ids = {c: i for c, i in s.query(User.name, User.id)}
        for judge in sorted(set(frame["judge"]) - set(ids)):
            user = User(name=judge, role="annotator")
            s.add(user)
            s.flush()
            ids[judge] = user.id
        contestants = {n: i for n, i in s.query(Contestant.public_name, Contestant.id)}
        for name in sorted(set(frame["model_a"]) | set(frame["model_b"])):
            if name not in contestants:
                contestants[name] = register(s, ContestantSpec(name))
        for k, row in enumerate(frame.itertuples(index=False)):
            when = start + timedelta(seconds=30 * k)
            battle = Battle(
                a_id=contestants[row.model_a],
                b_id=contestants[row.model_b],
                left_is_a=True,
                mode="anonymous",
                status="voted",
                created_at=when,
            )
            battle.turns.append(Turn(idx=0, user_msg=row.question_id, answer_a="answer", answer_b="answer"))
            battle.votes.append(
                Vote(
                    turn_idx=0,
                    outcome=SIMULATED_OUTCOME[row.winner],
                    user_id=ids[row.judge],
                    created_at=when,
                )
            )
            s.add(battle)


def rated_server(
    home: Path, frame: Any, start: datetime = datetime(2026, 1, 5)
) -> tuple[subprocess.Popen, str, Database]:
    """A fresh studio at ``home`` whose database holds ``frame``'s simulated votes (``store_simulated``), served;
    returns the process, its URL and the database (stop it with ``stop_server``)."""
    home.mkdir(parents=True, exist_ok=True)
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    db.migrate()
    store_simulated(db, frame, start)
    proc, url = start_server(home)
    return proc, url, db
