"""Servers for tests: a free local port, a real studio server in a subprocess (and how to stop it), and a studio
home whose database already holds a tiny-model parent and a preference snapshot."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from db.session import Database

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
        [sys.executable, "-m", "studio.cli", "serve", "--port", str(port)],
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


def server_with_personas(tmp_path: Path, personas: str) -> tuple[subprocess.Popen, str, Database]:
    """A fresh home whose contestants are ``personas`` (YAML, added with ``vibestudio models add``), served."""
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "personas.yaml").write_text(personas)
    env = {"VIBESTUDIO_HOME": str(home), "GRADIO_ANALYTICS_ENABLED": "False"}
    add = subprocess.run(
        [sys.executable, "-m", "studio.cli", "models", "add", "--yaml", str(tmp_path / "personas.yaml")],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=START_S,
    )
    assert add.returncode == 0, add.stderr
    proc, url = start_server(home)
    return proc, url, Database(f"sqlite:///{home / 'studio.sqlite'}")


def seed_tiny_parent(db: Database, model_dir: Path) -> str:
    """Migrate ``db``, register ``tiny-parent`` (the tiny model, 8-token answers) and freeze 8 preference pairs;
    return the snapshot's hash."""
    from annotation.snapshots import write_snapshot
    from arena.registry import ContestantSpec, register
    from tests.helpers.training import pair_rows

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
