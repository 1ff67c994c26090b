"""Secrets: an API key for a remote engine comes only from the environment variable named in the engine config.

It is sent to the server (the fake below checks the Authorization header), and it never lands in the
database, the logs, the API's answers or error messages, even when a careless server echoes it back in an
error body. A config that carries the key itself is refused. One test runs in-process with every logger at
DEBUG; one runs the real server with the key only in its environment and scans everything it produced.
"""

from __future__ import annotations

import json
import logging
import secrets
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sqlalchemy import text

from vibestudio.arena.battles import ArenaService
from vibestudio.arena.personas import PersonaError, add_personas, spec_from_mapping
from vibestudio.db.models import Base
from vibestudio.db.session import Database

KEY_ENV = "VIBESTUDIO_TEST_REMOTE_KEY"


class KeyServer:
    """A chat-completions server that demands a bearer key; ``mode = "echo401"`` makes it refuse the key and
    echo the whole Authorization header in the error body, like a careless proxy."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.seen: list[str | None] = []
        srv = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                auth = self.headers.get("Authorization")
                srv.seen.append(auth)
                if srv.mode == "echo401":
                    body = json.dumps({"error": f"invalid credentials: {auth}"}).encode()
                    self.send_response(401)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for word in ("Hello ", "there."):
                    chunk = {"choices": [{"index": 0, "delta": {"content": word}}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def key_server():
    s = KeyServer()
    yield s
    s.close()


def _persona(name: str, url: str) -> dict:
    return {
        "name": name,
        "engine": "openai",
        "model": "remote-model",
        "engine_config": {"base_url": url, "api_key_env": KEY_ENV},
        "sampling": {"max_tokens": 4},
    }


def dump_database(db: Database) -> str:
    """Every row of every table as text."""
    out = []
    with db.engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            for row in conn.execute(text(f"SELECT * FROM {table.name}")):
                out.append(repr(tuple(row)))
    return "\n".join(out)


def test_a_key_in_the_config_itself_is_refused(db):
    with pytest.raises(PersonaError, match="api_key"):
        spec_from_mapping({**_persona("x", "http://127.0.0.1:1/v1"), "api_key": "sk-inline"})
    with pytest.raises(PersonaError, match="api_key"):
        bad = _persona("y", "http://127.0.0.1:1/v1")
        bad["engine_config"]["api_key"] = "sk-inline"
        with db.session() as s:
            add_personas(s, [spec_from_mapping(bad)])
    assert "sk-inline" not in dump_database(db)


def test_key_is_used_but_never_stored_or_logged(db, key_server, monkeypatch, caplog):
    key = "sk-test-" + secrets.token_hex(16)
    monkeypatch.setenv(KEY_ENV, key)
    caplog.set_level(logging.DEBUG)
    with db.session() as s:
        add_personas(s, [spec_from_mapping(_persona(n, key_server.url)) for n in ("remote-a", "remote-b")])
    svc = ArenaService(db)
    view = svc.start_battle()
    updates = list(svc.generate_turn(view.battle_id, "Say hello."))
    assert updates[-1].done and not updates[-1].error
    svc.record_vote(view.battle_id, "left")
    assert key_server.seen and all(h == f"Bearer {key}" for h in key_server.seen)  # the key was used

    key_server.mode = "echo401"  # the server now refuses and echoes the header back
    view2 = svc.start_battle()
    updates = list(svc.generate_turn(view2.battle_id, "Say hello."))
    assert updates[-1].done and updates[-1].error
    assert key not in json.dumps([u.__dict__ for u in updates], default=str)  # what the browser would get
    stored = dump_database(db)
    assert "invalid credentials" in stored  # the server's error is kept for the operator...
    assert key not in stored and key[8:] not in stored  # ...without the key
    assert KEY_ENV in stored  # the variable's *name* is configuration, and stored
    assert key not in caplog.text


def test_real_server_never_shows_stores_or_logs_the_key(tmp_path: Path, key_server):
    from gradio_client import Client

    from tests.helpers.servers import start_server

    key = "sk-live-" + secrets.token_hex(16)
    home = tmp_path / "home"
    home.mkdir()
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    db.migrate()
    with db.session() as s:  # only remote contestants: every battle uses the key
        add_personas(s, [spec_from_mapping(_persona(n, key_server.url)) for n in ("remote-a", "remote-b")])
    proc, url = start_server(home, {KEY_ENV: key})
    outputs = []
    try:
        client = Client(url, verbose=False, download_files=False)
        outputs.append(client.predict("Say hello.", "Anonymous", None, None, api_name="/arena_send"))
        outputs.append(client.predict(*(None,) * 6, api_name="/arena_vote_left"))
        outputs.append(client.predict(api_name="/arena_reveal"))
        key_server.mode = "echo401"
        client.predict(api_name="/arena_new")
        outputs.append(client.predict("Say hello.", "Anonymous", None, None, api_name="/arena_send"))
        outputs.append(client.predict(api_name="/leaderboard"))
        outputs.append(client.view_api(return_format="dict", print_info=False))
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert key_server.seen and all(h == f"Bearer {key}" for h in key_server.seen)
    shown = json.dumps(outputs, default=str)
    assert "The battle stopped" in shown  # the refused second battle was reported to the user...
    assert key not in shown  # ...without the key
    assert key not in dump_database(db)
    for path in home.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), f"the key is in {path}"
    db.dispose()
