"""Hostile prompts and imports (huge, binary, wrong encoding, NUL, broken Unicode, YAML alias bombs): each gets a
clear error naming the problem, and the database is exactly as it was (SQLite, and PostgreSQL with -m postgres,
which refuses NUL characters that SQLite would store).

The last tests go through the HTTP API of a real server with small limits (prompt size, turns, tokens, upload
size): what a browser or a script can send is refused the same way.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sqlalchemy import func, select

from vibestudio.annotation.formats.store import ImportValidationError, import_file
from vibestudio.arena.battles import ArenaLimits, ArenaService, BattleError
from vibestudio.arena.personas import PersonaError, add_personas, load_persona_file
from vibestudio.arena.prompts import PromptImportError, import_prompt_set
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import Base, Battle, Turn
from vibestudio.db.session import Database

TRL_ROW = '{"prompt": "Say hi.", "chosen": "Hi!", "rejected": "No."}\n'
BINARY = bytes(range(256)) * 64 + b"\x89PNG\r\n\x1a\n\x00\x00"


def snapshot(db: Database) -> dict[str, int]:
    """Row count of every table: equal snapshots mean nothing was written (or half-written)."""
    with db.session() as s:
        return {
            t.name: s.scalar(select(func.count()).select_from(t)) or 0 for t in Base.metadata.sorted_tables
        }


PROMPT_FILES = {
    "binary": BINARY,
    "utf16": '{"turns": ["héllo"]}\n'.encode("utf-16"),
    "latin1": '{"turns": ["café"], "category": "writing"}\n'.encode("latin-1"),
    "nul_escape": b'{"turns": ["a\\u0000b"]}\n',
    "nul_category": b'{"turns": ["hi"], "category": "w\\u0000"}\n',
    "lone_surrogate": b'{"turns": ["a\\ud800b"]}\n',
    "huge_turn": b'{"turns": ["' + b"x" * (8 * 2**20) + b'"]}\n',
    "not_objects": b"[1, 2, 3]\n",
    "empty": b"",
}
CSV_FILES = {
    "csv_nul": b"turn1,category\nhel\x00lo,writing\n",
    "csv_huge_field": b'turn1,category\n"' + b"y" * (2**20) + b'",writing\n',
    "csv_latin1": "turn1,category\ncafé,writing\n".encode("latin-1"),
}


@pytest.mark.parametrize("case", sorted(PROMPT_FILES))
def test_hostile_prompt_files_are_refused_and_write_nothing(db, case):
    before = snapshot(db)
    with pytest.raises(PromptImportError) as exc, db.session() as s:
        import_prompt_set(s, f"set-{case}", f"{case}.jsonl", PROMPT_FILES[case])
    msg = str(exc.value)
    assert msg.startswith(f"{case}.jsonl") and len(msg) < 300  # names the file, short enough to show
    assert snapshot(db) == before


@pytest.mark.parametrize("case", sorted(CSV_FILES))
def test_hostile_prompt_csv_is_refused_and_writes_nothing(db, case):
    before = snapshot(db)
    with pytest.raises(PromptImportError, match=f"^{case}.csv"), db.session() as s:
        import_prompt_set(s, case, f"{case}.csv", CSV_FILES[case])
    assert snapshot(db) == before


def _bomb(levels: int = 9) -> str:
    """A YAML 'billion laughs': 9 nested levels of 9 aliases each expand to 9**9 strings."""
    lines = ["name: bomb", "sampling:", "  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


PERSONA_FILES = {
    "binary": BINARY,
    "utf16": "name: x\n".encode("utf-16"),
    "latin1": "name: café\n".encode("latin-1"),
    "bomb": _bomb().encode(),
    "bomb_in_aliases": _bomb().replace("sampling:", "aliases:").encode(),
    "huge": b"name: big\nsystem_prompt: " + b"z" * (8 * 2**20) + b"\n",
    "not_yaml": b"name: [unclosed\n",
    "a_list_of_numbers": b"- 1\n- 2\n",
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", sorted(PERSONA_FILES))
def test_hostile_persona_files_are_refused_and_write_nothing(db, tmp_path, case):
    path = tmp_path / f"{case}.yaml"
    path.write_bytes(PERSONA_FILES[case])
    before = snapshot(db)
    with pytest.raises(PersonaError) as exc:
        specs = load_persona_file(path)
        with db.session() as s:
            add_personas(s, specs, "upload")
    assert str(path) in str(exc.value) or f"{case}.yaml" in str(exc.value)
    assert snapshot(db) == before


ANNOTATION_FILES = {
    "binary": BINARY,
    "latin1": TRL_ROW.replace("Hi!", "Olá!").encode("latin-1"),
    "utf16_without_bom": TRL_ROW.encode("utf-16-le"),
    "nul": TRL_ROW.replace("Hi!", "Hi\\u0000!").encode(),
    "lone_surrogate": TRL_ROW.replace("Hi!", "Hi\\udc00!").encode(),
    "huge_line": TRL_ROW.replace("Hi!", "H" * (20 * 2**20)).encode(),
    "empty": b"",
}


@pytest.mark.parametrize("case", sorted(ANNOTATION_FILES))
def test_hostile_preference_imports_are_refused_and_write_nothing(db, tmp_path, case):
    path = tmp_path / f"{case}.jsonl"
    good_first = b"" if case == "empty" else TRL_ROW.encode()  # a good row first: all or nothing
    path.write_bytes(good_first + ANNOTATION_FILES[case])
    before = snapshot(db)
    with pytest.raises(ImportValidationError) as exc, db.session() as s:
        import_file(s, path, "trl", queue=f"q-{case}")
    report = exc.value.report
    assert "nothing was imported" in report.summary() and report.lines(5)
    assert snapshot(db) == before


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        ("x" * 100_000, "the limit is"),
        ("", "empty"),
        ("   \n\t", "empty"),
        ("hello\x00world", "NUL"),
        ("broken \ud800 text", "not valid Unicode"),
    ],
)
def test_hostile_prompts_are_refused_before_anything_is_written(db, prompt, message):
    svc = ArenaService(db, ArenaLimits(max_prompt_chars=4000))
    with db.session() as s:
        a = register(s, ContestantSpec("h-a", sampling={"max_tokens": 2}))
        b = register(s, ContestantSpec("h-b", sampling={"max_tokens": 2}))
    view = svc.start_battle(pair=(a, b))
    before = snapshot(db)
    with pytest.raises(BattleError, match=message):
        svc.check_prompt_text(prompt)
    with pytest.raises(BattleError, match=message):
        list(svc.generate_turn(view.battle_id, prompt))
    assert snapshot(db) == before


# -- through the HTTP API ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory):
    from tests.helpers.servers import start_server

    home = tmp_path_factory.mktemp("hostile") / "home"
    home.mkdir()
    env = {
        "VIBESTUDIO_MAX_NEW_TOKENS": "3",
        "VIBESTUDIO_MAX_TURNS": "1",
        "VIBESTUDIO_MAX_PROMPT_CHARS": "200",
        "VIBESTUDIO_MAX_UPLOAD_MB": "1",
    }
    proc, url = start_server(home, env)
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    yield url, db
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
    db.dispose()


def _client(url: str):
    from gradio_client import Client

    return Client(url, verbose=False, download_files=False)


def _error(fn) -> str:  # type: ignore[no-untyped-def]
    try:
        fn()
    except Exception as exc:  # gradio_client's AppError carries the server's message
        return str(exc)
    raise AssertionError("the call was accepted")


def _refused_send(client, prompt: str) -> str:  # type: ignore[no-untyped-def]
    """The reason an arena Send was refused: a person-fixable refusal comes back as the status line (a warning, no
    red error), anything else as the server's error; an accepted Send fails the test."""
    try:
        out = client.predict(prompt, "Anonymous", None, None, api_name="/arena_send")
    except Exception as exc:  # gradio_client's AppError carries the server's message
        return str(exc)
    warnings = [o for o in out if isinstance(o, str) and "⚠️" in o]  # the status line (States are not outputs)
    if not warnings:
        raise AssertionError(f"the call was accepted: {str(out)[:300]}")
    return warnings[0]


def test_api_refuses_hostile_prompts_and_enforces_turn_and_token_limits(small_server):
    url, db = small_server
    client = _client(url)
    before = snapshot(db)
    for prompt, message in (("x" * 5000, "the limit is 200"), ("a\x00b", "NUL"), ("", "empty")):
        err = _refused_send(client, prompt)
        assert message.lower() in err.lower(), err
    assert snapshot(db) == before  # no battle was even started

    client.predict("Say hi.", "Anonymous", None, None, api_name="/arena_send")
    err = _refused_send(client, "And again?")
    assert "limit of 1 turns" in err
    with db.session() as s:
        turns = list(s.scalars(select(Turn)))
        assert s.scalar(select(func.count(Battle.id))) == 1
    assert len(turns) == 1 and turns[0].tokens_a <= 3 and turns[0].tokens_b <= 3


def test_api_refuses_hostile_uploads(small_server, tmp_path: Path):
    from gradio_client import handle_file

    url, db = small_server
    client = _client(url)
    binary = tmp_path / "prompts.jsonl"
    binary.write_bytes(BINARY)
    latin = tmp_path / "prefs.jsonl"
    latin.write_bytes(ANNOTATION_FILES["latin1"])
    persona = tmp_path / "bomb.yaml"
    persona.write_text(_bomb())
    big = tmp_path / "big.jsonl"
    big.write_bytes(b'{"turns": ["hi"]}\n' * 120_000)  # ~2 MB, over the 1 MB upload limit
    before = snapshot(db)

    # a file that does not parse is a refusal: its reason comes back in the import's result line (no error)
    out = client.predict("bin", handle_file(str(binary)), api_name="/data_import_prompts")
    assert "⚠️" in out and "not valid utf-8" in out
    out = client.predict(handle_file(str(persona)), api_name="/arena_import_personas")
    assert "⚠️" in out and "bomb.yaml" in out  # refused in place, under the persona form
    out = client.predict(handle_file(str(latin)), "trl", "q-latin", False, api_name="/queue_import")[0]
    assert "nothing was imported" in out and "UTF-8" in out
    err = _error(lambda: client.predict("big", handle_file(str(big)), api_name="/data_import_prompts"))
    assert "1 MB" in err or "too large" in err.lower() or "exceeds" in err.lower(), err
    assert snapshot(db) == before
