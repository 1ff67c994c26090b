"""Red team over HTTP: the running studio (login on) attacked through its API with ``gradio_client`` and raw
requests, as a researcher, an annotator and nobody. Each attack must be refused with a message that repeats no
secret, variable name or server path, and leave nothing behind: no contestant, no queue, no file outside the
data home, no upload in Gradio's cache, and no request at the listeners it aimed at (``Trap`` records every
request and its Authorization header). One server serves the module (its start is the cost: seconds)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from accounts import add_user
from db.models import AnnotationQueue, Contestant
from db.session import Database
from tests.helpers.servers import start_server, stop_server
from tests.security._engine_helpers import Trap

PW = "a long test password"
SECRET = "server-secret-value-41c9"


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("redteam")
    home = root / "home"
    home.mkdir()
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    db.migrate()
    add_user(db, "rita", PW, "researcher")
    add_user(db, "ann", PW, "annotator")
    allowed, forbidden = Trap(), Trap()
    env = {
        "VIBESTUDIO_ENGINE_ALLOWED_HOSTS": f"127.0.0.1:{allowed.port}",  # one listener allowed, by port
        "VIBESTUDIO_ENGINE_KEY_ENVS": "",
        "STUDIO_SECRET": SECRET,
        "VIBESTUDIO_MAX_IMPORT_MB": "1",
        "GRADIO_TEMP_DIR": str(root / "uploads"),
    }
    proc, url = start_server(home, env)
    clients: dict[str, object] = {}

    def client(name: str):
        if name not in clients:  # one signed-in client per role for the module (each costs a round trip)
            clients[name] = _client(url, name)
        return clients[name]

    yield {
        "url": url,
        "db": db,
        "home": home,
        "root": root,
        "allowed": allowed,
        "forbidden": forbidden,
        "client": client,
    }
    stop_server(proc)
    allowed.close()
    forbidden.close()
    db.dispose()


def _client(url: str, name: str):
    from gradio_client import Client

    return Client(url, auth=(name, PW), verbose=False, download_files=False)


def _refusal(client, endpoint: str, *args) -> str:
    try:
        client.predict(*args, api_name=endpoint)
    except Exception as exc:  # gradio_client raises AppError with the server's message
        return str(exc)
    raise AssertionError(f"{endpoint} accepted the attack")


def _contestants(db: Database, prefix: str) -> int:
    with db.session() as s:
        return (
            s.scalar(select(func.count(Contestant.id)).where(Contestant.public_name.like(prefix + "%"))) or 0
        )


def _queues(db: Database) -> int:
    with db.session() as s:
        return s.scalar(select(func.count(AnnotationQueue.id))) or 0


def _uploads_left(root: Path, suffix: str) -> list[Path]:
    return [p for p in (root / "uploads").rglob(f"*{suffix}") if p.is_file()]


def _form(name: str, engine: str, base_url: str, key_env: str) -> tuple:
    return (name, engine, "m", "", "", 0.7, 8, "", base_url, key_env)


def test_a_researcher_cannot_have_a_server_secret_sent(studio):
    rita = studio["client"]("rita")
    for key_env in ("STUDIO_SECRET", "VIBESTUDIO_DATABASE_URL", "HOME"):
        msg = _refusal(
            rita, "/arena_add_persona", *_form("evil-key", "openai", studio["allowed"].url, key_env)
        )
        assert "api_key_env" in msg and key_env not in msg and SECRET not in msg
    assert _contestants(studio["db"], "evil-key") == 0
    assert studio["allowed"].seen == []


@pytest.mark.parametrize(
    "target",
    ["forbidden", "http://169.254.169.254/latest/meta-data", "http://[::1]:7860/v1", "http://10.1.2.3/v1"],
)
def test_a_researcher_cannot_point_an_engine_at_a_private_address(studio, target):
    url = studio["forbidden"].url if target == "forbidden" else target
    rita = studio["client"]("rita")
    msg = _refusal(rita, "/arena_add_persona", *_form("evil-url", "openai", url, ""))
    assert "base_url" in msg and "VIBESTUDIO_ENGINE_ALLOWED_HOSTS" in msg
    assert _contestants(studio["db"], "evil-url") == 0
    assert studio["forbidden"].seen == []


@pytest.mark.parametrize(
    "serve",
    [
        {"python": "/bin/sh"},
        {"host": "0.0.0.0"},
        {"args": ["--trust-remote-code"]},
        {"args": ["--host", "0.0.0.0"]},
        {"args": ["--chat-template", "/etc/passwd"]},
        {"model": "--trust-remote-code"},
    ],
)
def test_a_persona_file_cannot_make_the_server_run_code(studio, tmp_path, serve):
    from gradio_client import handle_file

    persona = tmp_path / "vllm-persona.yaml"
    persona.write_text(
        json.dumps({"name": "evil-vllm", "engine": "vllm", "model": "/m", "engine_config": {"serve": serve}})
    )
    rita = studio["client"]("rita")
    msg = _refusal(rita, "/arena_import_personas", handle_file(str(persona)))
    assert "serve" in msg and "vllm-persona.yaml" in msg and str(tmp_path) not in msg
    assert _contestants(studio["db"], "evil-vllm") == 0
    assert _uploads_left(studio["root"], "vllm-persona.yaml") == []  # the upload was removed after use
    assert not list((studio["home"] / "logs").glob("vllm-*")) if (studio["home"] / "logs").exists() else True


def test_an_annotator_upload_is_refused_before_it_is_parsed(studio, tmp_path):
    from gradio_client import handle_file

    broken = tmp_path / "broken-persona.yaml"
    broken.write_text("personas: [name: : : {\n")
    msg = _refusal(studio["client"]("ann"), "/arena_import_personas", handle_file(str(broken)))
    assert "researcher" in msg.lower() and "yaml" not in msg.lower()
    assert _uploads_left(studio["root"], "broken-persona.yaml") == []


def test_nobody_signed_in_reaches_nothing(studio):
    body = {"data": list(_form("evil-anon", "openai", studio["allowed"].url, "STUDIO_SECRET"))}
    resp = httpx.post(f"{studio['url']}/gradio_api/call/arena_add_persona", json=body, timeout=30)
    if resp.status_code < 400:  # the queue answers with an event id; the result must be an error
        event = resp.json()["event_id"]
        stream = httpx.get(f"{studio['url']}/gradio_api/call/arena_add_persona/{event}", timeout=30).text
        assert "error" in stream
    assert _contestants(studio["db"], "evil-anon") == 0
    assert studio["allowed"].seen == []


def test_a_small_gz_that_expands_past_the_limit_is_refused(studio, tmp_path):
    from gradio_client import handle_file

    bomb = tmp_path / "prefs-bomb.jsonl.gz"
    line = (json.dumps({"prompt": "p", "chosen": "a" * 1000, "rejected": "b"}) + "\n").encode()
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        for _ in range(3 * 2**20 // len(line)):
            fh.write(line)
    assert bomb.stat().st_size < 100_000
    before = _queues(studio["db"])
    rita = studio["client"]("rita")
    result, _ = rita.predict(handle_file(str(bomb)), "trl", "bombq", False, api_name="/queue_import")
    assert "❌" in result and "decompression" in result  # the import's report, nothing imported
    assert _queues(studio["db"]) == before
    assert _uploads_left(studio["root"], "prefs-bomb.jsonl.gz") == []


@pytest.mark.parametrize("name", ["../../../escaped", "/tmp/abs-queue", ".hidden"])
def test_a_queue_name_cannot_become_a_path(studio, tmp_path, name):
    from gradio_client import handle_file

    prefs = tmp_path / "prefs.jsonl"
    prefs.write_text('{"prompt": "Say hi.", "chosen": "Hi!", "rejected": "No."}\n')
    before = _queues(studio["db"])
    msg = _refusal(studio["client"]("rita"), "/queue_import", handle_file(str(prefs)), "trl", name, False)
    assert "queue name" in msg
    assert _queues(studio["db"]) == before


def test_restore_refuses_while_this_server_serves_the_database(studio):
    from db.backup import backup

    copy = studio["root"] / "copy.sqlite"
    backup(studio["db"].url, copy)
    env = {**os.environ, "VIBESTUDIO_HOME": str(studio["home"])}
    out = subprocess.run(
        [sys.executable, "-m", "studio.cli", "db", "restore", str(copy)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0 and "being served" in out.stdout + out.stderr
