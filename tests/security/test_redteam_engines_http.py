"""Red team over HTTP: the running studio (login on) attacked through its API with ``gradio_client`` and raw
requests, as a researcher, an annotator and nobody. Each attack must be refused with a message that repeats no
secret, variable name or server path, and leave nothing behind: no contestant, no queue, no file outside the
data home, no upload in Gradio's cache, and no request at the listeners it aimed at (``Trap`` records every
request and its Authorization header). The suite's one app server (``studio_app``) serves the module; the
operator's settings for it (one listener allowed, no key variables, a secret in the environment, a 1 MB import
limit) are set per test, as the server reads them at each request."""

from __future__ import annotations

import gzip
import html
import json
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from tests.security._engine_helpers import Trap
from vibestudio.db.models import AnnotationQueue, Contestant
from vibestudio.db.session import Database

PW = "a long test password"
SECRET = "server-secret-value-41c9"


@pytest.fixture(scope="module")
def traps():
    allowed, forbidden = Trap(), Trap()
    yield allowed, forbidden
    allowed.close()
    forbidden.close()


@pytest.fixture
def studio(studio_app, traps, monkeypatch):
    from vibestudio.db.session import data_home
    from vibestudio.studio.uploads import upload_folder

    allowed, forbidden = traps
    monkeypatch.setenv(
        "VIBESTUDIO_ENGINE_ALLOWED_HOSTS", f"127.0.0.1:{allowed.port}"
    )  # one listener, by port
    monkeypatch.setenv("VIBESTUDIO_ENGINE_KEY_ENVS", "")
    monkeypatch.setenv("STUDIO_SECRET", SECRET)
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_MB", "1")
    allowed.seen.clear()
    forbidden.seen.clear()
    return {
        "url": studio_app.url,
        "db": studio_app.db,
        "home": data_home(),
        "uploads": upload_folder(),
        "allowed": allowed,
        "forbidden": forbidden,
        "client": studio_app.client,
    }


def _refusal(client, endpoint: str, *args) -> str:
    """The refusal's text: an error (a role denial, or an unwired refusal) or the message a handler wired with
    ``studio.errors.wire`` answers in place (a "⚠️" line in its status output)."""
    try:
        out = client.predict(*args, api_name=endpoint)
    except Exception as exc:  # gradio_client raises AppError with the server's message
        return str(exc)
    said = [str(v) for v in (out if isinstance(out, (list, tuple)) else [out]) if "⚠️" in str(v)]
    if said:
        return html.unescape(" ".join(said))
    raise AssertionError(f"{endpoint} accepted the attack")


def _contestants(db: Database, prefix: str) -> int:
    with db.session() as s:
        return (
            s.scalar(select(func.count(Contestant.id)).where(Contestant.public_name.like(prefix + "%"))) or 0
        )


def _queues(db: Database) -> int:
    with db.session() as s:
        return s.scalar(select(func.count(AnnotationQueue.id))) or 0


def _uploads_left(folder: Path, suffix: str) -> list[Path]:
    return [p for p in folder.rglob(f"*{suffix}") if p.is_file()]


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
    assert _uploads_left(studio["uploads"], "vllm-persona.yaml") == []  # the upload was removed after use
    assert not list((studio["home"] / "logs").glob("vllm-*")) if (studio["home"] / "logs").exists() else True


def test_an_annotator_upload_is_refused_before_it_is_parsed(studio, tmp_path):
    from gradio_client import handle_file

    broken = tmp_path / "broken-persona.yaml"
    broken.write_text("personas: [name: : : {\n")
    msg = _refusal(studio["client"]("ann"), "/arena_import_personas", handle_file(str(broken)))
    assert "researcher" in msg.lower() and "yaml" not in msg.lower()
    assert _uploads_left(studio["uploads"], "broken-persona.yaml") == []


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
    assert _uploads_left(studio["uploads"], "prefs-bomb.jsonl.gz") == []


@pytest.mark.parametrize("name", ["../../../escaped", "/tmp/abs-queue", ".hidden"])
def test_a_queue_name_cannot_become_a_path(studio, tmp_path, name):
    from gradio_client import handle_file

    prefs = tmp_path / "prefs.jsonl"
    prefs.write_text('{"prompt": "Say hi.", "chosen": "Hi!", "rejected": "No."}\n')
    before = _queues(studio["db"])
    msg = _refusal(studio["client"]("rita"), "/queue_import", handle_file(str(prefs)), "trl", name, False)
    assert "queue name" in msg
    assert _queues(studio["db"]) == before
