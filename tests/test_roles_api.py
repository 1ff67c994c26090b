"""Roles through the HTTP API: a real server with login on, one ``gradio_client`` per role, every endpoint.

``LEAST_ROLE`` classifies every named API endpoint; a new endpoint fails ``test_every_endpoint_is_classified``
until someone decides who may call it. For each guarded endpoint the roles below its level are refused with
the service's permission error and nothing is written; the roles at its level get past the check (the call
may still fail on purpose, e.g. a snapshot that does not exist, so no training starts here).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sqlalchemy import func, select

from tests.helpers.servers import start_server
from vibestudio.accounts import RANK, add_user, set_disabled
from vibestudio.db.models import (
    Battle,
    Contestant,
    DatasetSnapshot,
    Job,
    PromptSet,
    QueueItem,
    TaskSet,
    User,
    Vote,
)
from vibestudio.db.session import Database

PW = "a long test password"
ROLE_USERS = {"annotator": "ann", "researcher": "rita", "admin": "root"}
ANY = "annotator"

# least role per endpoint; "unreachable" = its inputs are dropdowns filled on page load, so an API client
# cannot pass valid values (the service check is tested in-process in test_services_refuse_low_roles)
LEAST_ROLE = {
    "/arena_send": ANY,
    "/arena_regenerate": ANY,
    "/arena_random_prompt": ANY,
    "/arena_vote_left": ANY,
    "/arena_vote_right": ANY,
    "/arena_vote_tie": ANY,
    "/arena_vote_both_good": ANY,
    "/arena_vote_both_bad": ANY,
    "/arena_reveal": ANY,
    "/arena_new": ANY,
    "/leaderboard": ANY,
    "/label_next": ANY,
    "/label_left": ANY,
    "/label_right": ANY,
    "/label_tie": ANY,
    "/label_both_good": ANY,
    "/label_both_bad": ANY,
    "/label_skip": ANY,
    "/agreement": ANY,
    "/judge_bias": ANY,
    "/judge_vibes": ANY,
    "/leaderboard_predict": ANY,
    "/families": ANY,
    "/identifiability": ANY,
    "/votes_to_flip": ANY,
    "/lc_win_rates": ANY,
    "/decision_card": ANY,
    "/arena_for_prompt": ANY,
    "/judge_board": ANY,
    "/probes_show": ANY,
    "/probes_run": "researcher",
    "/evals_run": "researcher",
    "/models_show": ANY,
    "/models_release": "researcher",
    "/models_hold": "researcher",
    "/models_export": "researcher",  # a model's weights for deployment, offered to its exporter only
    "/arena_add_persona": "researcher",
    "/arena_import_personas": "researcher",
    "/data_freeze": "researcher",
    "/data_import_prompts": "researcher",
    "/data_import_tasks": "researcher",
    "/queue_create": "researcher",
    "/queue_import": "researcher",
    "/judge_run": "researcher",
    "/queue_checklists": "researcher",
    "/labels_export": "researcher",
    "/labels_freeze": "researcher",
    "/train_check": "researcher",
    "/train_launch": "researcher",
    "/train_cancel": "researcher",
    "/train_resume": "researcher",
    "/train_clone": "researcher",
    "/train_publish": "researcher",
    "/objectives_launch": "researcher",
    "/objectives_show": "researcher",
    "/admin_users": "admin",
    "/admin_add_user": "admin",
    "/admin_set_role": "admin",
    "/admin_disable_user": "admin",
    "/admin_enable_user": "admin",
    "/admin_set_password": "admin",
    "/admin_annotator_checks": "admin",
}
NO_RUBRIC = (None,) * 6  # the six optional quick-rubric scores of a vote
UNREACHABLE = {"/queue_create", "/judge_run", "/queue_checklists"}


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def _counts(db: Database) -> dict[str, int]:
    with db.session() as s:
        return {
            t.__name__: s.scalar(select(func.count()).select_from(t)) or 0
            for t in (Contestant, PromptSet, DatasetSnapshot, Job, QueueItem, User, Vote, TaskSet)
        }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("roles") / "home"
    home.mkdir()
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    db.migrate()
    for role, name in ROLE_USERS.items():
        add_user(db, name, PW, role)
    add_user(db, "gone", PW, "admin")
    set_disabled(db, "gone", True)
    proc, url = start_server(home, {"VIBESTUDIO_MAX_NEW_TOKENS": "4"})
    yield url, db, home
    stop_server(proc)
    db.dispose()


def _client(url: str, name: str):
    from gradio_client import Client

    return Client(url, auth=(name, PW), verbose=False, download_files=False)


def _files(tmp: Path) -> dict[str, Path]:
    persona = tmp / "persona.yaml"
    persona.write_text("name: role-test-persona\nsystem_prompt: Be brief.\n")
    prompts = tmp / "prompts.jsonl"
    prompts.write_text('{"turns": ["Say hi."], "category": "writing"}\n')
    prefs = tmp / "prefs.jsonl"
    prefs.write_text('{"prompt": "Say hi.", "chosen": "Hi!", "rejected": "No."}\n')
    tasks = tmp / "tasks.jsonl"
    tasks.write_text("".join(f'{{"prompt": "What is {i} + {i}?", "answer": "{2 * i}"}}\n' for i in range(30)))
    return {"persona": persona, "prompts": prompts, "prefs": prefs, "tasks": tasks}


def _calls(tmp: Path, tag: str) -> dict[str, tuple[tuple, dict]]:
    """Arguments for each guarded endpoint; ``tag`` keeps names unique across roles."""
    from gradio_client import handle_file

    f = _files(tmp)
    return {
        "/arena_add_persona": (
            (
                f"p-{tag}",
                "llama_cpp",
                "builtin:smollm2-135m-instruct-q4_1",
                "Be brief.",
                "",
                0.7,
                8,
                "",
                "",
                "",
            ),
            {},
        ),
        "/arena_import_personas": ((handle_file(str(f["persona"])),), {}),
        "/data_freeze": ((), {}),
        "/data_import_prompts": ((f"set-{tag}", handle_file(str(f["prompts"]))), {}),
        "/data_import_tasks": ((f"tasks-{tag}", handle_file(str(f["tasks"]))), {}),
        "/queue_import": ((handle_file(str(f["prefs"])), "trl", f"q-{tag}", False), {}),
        "/labels_export": (([], "trl", "JSONL", ["human"], False, "each"), {}),
        "/labels_freeze": (([], ["human"], "each"), {}),
        "/train_check": (("kind: dpo\nsnapshot_hash: feedbeef\n",), {}),
        "/train_launch": (("kind: dpo\nsnapshot_hash: feedbeef\n",), {}),
        "/train_cancel": ((987654, ""), {}),
        "/train_resume": ((987654, ""), {}),
        "/train_clone": ((987654,), {}),
        "/train_publish": ((987654, None, ""), {}),
        "/objectives_launch": ((["dpo", "kto"], "smollm2-plain", "", 2, 2, "", "higher"), {}),
        "/objectives_show": ((None,), {}),
        "/admin_users": ((), {}),
        "/admin_add_user": ((f"new-{tag}", "another long password", "annotator"), {}),
        "/admin_set_role": (("ann", "annotator"), {}),
        "/admin_disable_user": (("nobody-here",), {}),
        "/admin_enable_user": (("ann",), {}),
        "/admin_set_password": (("nobody-here", "another long password"), {}),
        "/admin_annotator_checks": ((), {}),
        "/probes_run": (("smollm2-plain", "(none)", ["pushback"], 1), {}),
        "/evals_run": (("smollm2-plain", "1"), {}),
        "/models_release": (("smollm2-plain", "role test"), {}),
        "/models_export": (("smollm2-plain", "gguf"), {}),
    }


def _call(client, endpoint: str, args: tuple, kwargs: dict) -> str | None:
    """None when the call succeeded, else the error message the server sent."""
    try:
        client.predict(*args, api_name=endpoint, **kwargs)
        return None
    except Exception as exc:  # gradio_client raises AppError (or a ValueError subclass) with the message
        return str(exc)


def test_every_endpoint_is_classified(server):
    url, _, _ = server
    api = _client(url, "ann").view_api(return_format="dict", print_info=False)
    named = set(api["named_endpoints"])
    assert named - set(LEAST_ROLE) == set(), "classify the new endpoints in LEAST_ROLE (who may call them?)"
    assert set(LEAST_ROLE) - named == set(), "these endpoints are gone: remove them from LEAST_ROLE"


def test_without_login_nothing_is_served(server):
    import httpx
    from gradio_client import Client

    url, _, _ = server
    with pytest.raises(Exception):  # noqa: B017 - gradio_client raises several kinds on a 401
        Client(url, verbose=False)
    assert httpx.get(f"{url}/config").status_code == 401
    with pytest.raises(Exception):  # noqa: B017
        Client(url, auth=("ann", "wrong password"), verbose=False)
    with pytest.raises(Exception):  # noqa: B017 - a disabled account cannot log in
        Client(url, auth=("gone", PW), verbose=False)


def test_guarded_endpoints_refuse_lower_roles(server, tmp_path):
    url, db, _ = server
    clients = {role: _client(url, name) for role, name in ROLE_USERS.items()}
    for role, client in clients.items():
        calls = _calls(tmp_path, role)
        for endpoint, (args, kwargs) in calls.items():
            need = LEAST_ROLE[endpoint]
            before = _counts(db)
            err = _call(client, endpoint, args, kwargs)
            if RANK[role] < RANK[need]:
                assert err is not None and f"this needs {need} or higher" in err, (role, endpoint, err)
                assert _counts(db) == before, f"{endpoint} wrote something for {role}"
            else:
                assert err is None or "needs" not in err, (role, endpoint, err)


def test_annotator_battles_and_votes_as_themself(server):
    url, db, _ = server
    client = _client(url, "ann")
    client.predict("Say hi.", "Anonymous", None, None, api_name="/arena_send")
    status = client.predict(*NO_RUBRIC, api_name="/arena_vote_left")[0]
    assert "saved" in status
    board = client.predict(api_name="/leaderboard")
    assert board is not None
    with db.session() as s:
        ann = s.scalar(select(User).where(User.name == "ann"))
        votes = list(s.scalars(select(Vote).where(Vote.user_id == ann.id)))
        battles = list(s.scalars(select(Battle).where(Battle.user_id == ann.id)))
    assert len(votes) == 1 and len(battles) == 1 and votes[0].battle_id == battles[0].id


def test_disabling_a_signed_in_user_stops_their_next_request(server):
    url, db, _ = server
    add_user(db, "temp", PW, "researcher")
    client = _client(url, "temp")
    assert client.predict(api_name="/arena_random_prompt")  # signed in, allowed
    set_disabled(db, "temp", True)
    # the session ends with the account (401 from the session guard); the services would refuse it too
    err = _call(client, "/arena_send", ("Say hi.", "Anonymous", None, None), {})
    assert err is not None and ("401" in err or "disabled" in err)
    err = _call(client, "/data_freeze", (), {})
    assert err is not None and ("401" in err or "disabled" in err)


def test_services_refuse_low_roles(db, tmp_path):
    """The checks live in the services: called directly with an annotator's id, every guarded one refuses."""
    from vibestudio.accounts import PermissionDenied, list_users
    from vibestudio.annotation.formats.exporters import ExportSpec, export_file, snapshot_from_labels
    from vibestudio.annotation.formats.store import import_file
    from vibestudio.annotation.judges import JudgeSpec, generate_checklists, run_judge
    from vibestudio.annotation.onpolicy import OnPolicySpec, generate_queue
    from vibestudio.annotation.snapshots import snapshot_from_votes
    from vibestudio.arena.personas import add_personas, spec_from_mapping
    from vibestudio.arena.prompts import import_prompt_set
    from vibestudio.training.jobs.runner import cancel, resume
    from vibestudio.training.jobs.service import launch_dpo
    from vibestudio.training.tasks import generate_task_set, import_task_file

    ann = add_user(db, "ann", PW, "annotator").id
    f = _files(tmp_path)
    before = _counts(db)
    with db.session() as s:
        calls = [
            lambda: add_personas(s, [spec_from_mapping({"name": "x"})], user_id=ann),
            lambda: import_prompt_set(s, "s", "p.jsonl", f["prompts"].read_bytes(), user_id=ann),
            lambda: snapshot_from_votes(s, user_id=ann),
            lambda: export_file(s, ExportSpec(), tmp_path / "out.jsonl", user_id=ann),
            lambda: snapshot_from_labels(s, user_id=ann),
            lambda: import_file(s, f["prefs"], "trl", user_id=ann),
        ]
        for call in calls:
            with pytest.raises(PermissionDenied, match="needs researcher"):
                call()
    for call in (
        lambda: generate_queue(db, OnPolicySpec(queue="q", prompt_set="mt-bench", policy="p"), user_id=ann),
        lambda: run_judge(db, JudgeSpec("judge", "q"), user_id=ann),
        lambda: generate_checklists(db, "q", "judge", user_id=ann),
        lambda: launch_dpo(db, "smollm2-plain", created_by=ann),
        lambda: cancel(db, 1, user_id=ann),
        lambda: resume(db, 1, user_id=ann),
        lambda: import_task_file(db, f["tasks"], "t", user_id=ann),
        lambda: generate_task_set(db, "arithmetic", 20, "g", user_id=ann),
    ):
        with pytest.raises(PermissionDenied, match="needs researcher"):
            call()
    with pytest.raises(PermissionDenied, match="needs admin"):
        list_users(db, by=ann)
    assert _counts(db) == before
