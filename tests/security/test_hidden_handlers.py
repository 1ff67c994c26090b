"""Hidden is not denied: every event of the running app, named or ``api_visibility="private"``, called by its index.

``LEAST_ROLE`` classifies every server function of the app by its qualified name; a new handler fails
``test_every_handler_is_classified`` until someone decides who may call it. Then each event is called through the
queue, with the values a fresh page would send:

- by nobody (no session): every event is refused, before any handler runs;
- by an annotator: events classified researcher or admin are refused (an error or a refusal in their output,
  naming the role they need) and write nothing; and no event's output, whatever its class, holds the marker text
  seeded into a job's config and log (researcher data).
"""

from __future__ import annotations

import json

import pytest

from tests.security.conftest import PW

ANY, RESEARCHER, ADMIN = "annotator", "researcher", "admin"
P = "vibestudio.studio.pages."
MARKER = "RESEARCHER-ONLY-7f3a"

# "-read": a read that answers a lower role with nothing instead of an error (the marker check still applies)
RESEARCHER_READ, ADMIN_READ = "researcher-read", "admin-read"
LEAST_ROLE: dict[str, str] = {
    P + "arena._self_play_controls.<locals>.on_model": ANY,
    P + "arena._for_prompt_box.<locals>.on_rank": ANY,  # reads the prompt-conditioned board, writes nothing
    P + "arena._persona_form.<locals>.on_add": RESEARCHER,
    P + "arena._persona_form.<locals>.on_yaml": RESEARCHER,
    P + "arena._locked": ANY,
    P + "arena._turn_handlers.<locals>.on_send": ANY,
    P + "arena._turn_handlers.<locals>.on_regenerate": ANY,
    P + "arena._turn_handlers.<locals>.on_settle": ANY,
    P + "arena._mode_handler.<locals>.on_mode": ANY,
    P + "arena._open_handler.<locals>.on_open": ANY,  # the prompt sets and the mode's names, as on_mode
    P + "arena.intro_for": ANY,  # the intro for the mode; reads nothing
    P + "arena._draw_handler.<locals>.on_draw": ANY,
    P + "arena._vote_handler.<locals>.on_vote": ANY,
    P + "arena._end_handlers.<locals>.on_reveal": ANY,
    P + "arena._end_handlers.<locals>.on_new": ANY,
    P + "leaderboard._board_handlers.<locals>.on_refresh": ANY,
    P + "leaderboard._view_handlers.<locals>.on_predict": ANY,
    P + "leaderboard._board_handlers.<locals>.on_tick": ANY,
    P + "leaderboard._board_handlers.<locals>.on_open": ANY,
    P + "leaderboard._view_handlers.<locals>.contestant_choices": ANY,
    P + "leaderboard._view_handlers.<locals>.on_matrices": ANY,
    P + "leaderboard._view_handlers.<locals>.on_over_time": ANY,
    P + "leaderboard._view_handlers.<locals>.on_vibes": ANY,
    P + "leaderboard._view_handlers.<locals>.on_goldilocks": ANY,
    P + "leaderboard._view_handlers.<locals>.on_vibes_open": ANY,
    P + "evals._run_handler.<locals>.on_run_evals": RESEARCHER,
    P + "evals._names_handler.<locals>.contestant_names": ANY,
    P + "families.build_section.<locals>.on_show": ANY,
    P + "data.build.<locals>.on_freeze": RESEARCHER,
    P + "data.build.<locals>.on_import": RESEARCHER,
    P + "data._task_section.<locals>.on_import": RESEARCHER,
    P + "identifiability.build_section.<locals>.on_measure": ANY,
    P + "leaderboard.wire_decision.<locals>.names": ANY,
    P + "leaderboard.wire_decision.<locals>.on_card": ANY,
    P
    + "leaderboard.wire_fragility.<locals>.on_flip": ANY,  # voters' names only for admins (flip_votes_table)
    P + "leaderboard.wire_fragility.<locals>.on_pair": ANY,
    P + "leaderboard.wire_lc.<locals>.names": ANY,
    P + "leaderboard.wire_lc.<locals>.on_lc": ANY,
    P
    + "leaderboard.wire_judges.<locals>.on_judges": ANY,  # the human / judge / pooled board, like the others
    P + "data.build.<locals>.on_load": ANY,  # the counts, snapshots and task sets, as the page load read them
    P + "data.build.<locals>.on_tick": ANY,  # the same, while the tab stays open
    P + "queues._refresh_handler.<locals>.on_refresh": ANY,
    P + "queues._create_handler.<locals>.on_create": RESEARCHER,
    P + "queues._import_handler.<locals>.on_import": RESEARCHER,
    P + "queues._judge_handlers.<locals>.on_judge": RESEARCHER,
    P + "queues._judge_handlers.<locals>.on_checklists": RESEARCHER,
    P + "queues._export_handlers.<locals>.on_export": RESEARCHER,
    P + "queues._export_handlers.<locals>.on_freeze": RESEARCHER,
    P + "label._checklist_handler.<locals>.on_save_checklist": RESEARCHER,
    P + "label.fill_user": ANY,
    P + "label._label_handlers.<locals>.on_start": ANY,
    P + "label._label_handlers.<locals>.make_submit.<locals>.on_submit": ANY,
    P + "label._label_handlers.<locals>.on_skip": ANY,
    P + "label._queues_handler.<locals>.refresh_queues": ANY,
    P + "agreement._compute_handler.<locals>.on_compute": ANY,
    P + "agreement._judge_handlers.<locals>.on_bias": ANY,
    P + "agreement._judge_handlers.<locals>.on_vibes": ANY,
    P + "agreement._queues_handler.<locals>.refresh": ANY,
    P + "probes.build.<locals>.default_against": ANY,
    P + "probes.build.<locals>.on_run": RESEARCHER,
    P + "probes.build.<locals>.on_show": ANY,
    P + "probes.build.<locals>.refresh": ANY,
    P + "train.on_kind": ANY,  # shows or hides two form groups; reads nothing
    P + "train._config_handlers.<locals>.on_form_event": RESEARCHER,
    P + "train._config_handlers.<locals>.on_check": RESEARCHER,
    P + "train._config_handlers.<locals>.on_launch": RESEARCHER,
    P + "train._job_handlers.<locals>.on_tick": RESEARCHER,
    P + "train._job_handlers.<locals>.on_pick": RESEARCHER,
    P + "train._job_handlers.<locals>.on_cancel": RESEARCHER,
    P + "train._job_handlers.<locals>.on_resume": RESEARCHER,
    P + "train._job_handlers.<locals>.on_clone": RESEARCHER,
    P + "train._job_handlers.<locals>.on_publish": RESEARCHER,
    P + "objectives._wire.<locals>.on_launch": RESEARCHER,
    P + "objectives._wire.<locals>.on_show": RESEARCHER,
    P + "objectives._open_handler.<locals>.on_open": RESEARCHER_READ,
    P + "train._jobs_refresh.<locals>.on_jobs": RESEARCHER_READ,
    # the page load: a lower role's page hides the Train tab, and its load answers it with no change
    # (``studio.roles.quiet_hidden_loads``); called by index, nothing comes back
    P + "train._load_handler.<locals>.on_load": RESEARCHER_READ,
    P + "models.build.<locals>.show": ANY,
    P
    + "models.build.<locals>.on_open": ANY,  # the page load and the tab's opening: the list and the pick again
    P + "models._forget_export": ANY,  # clears the export note and link; reads nothing
    P
    + "models.build.<locals>.on_refresh": ANY,  # re-reads the page; the sweep it runs only holds dead-report children
    P + "models.export_section.<locals>.on_export": RESEARCHER,
    P + "models.build.<locals>.on_release": RESEARCHER,
    P + "models.build.<locals>.on_hold": RESEARCHER,
    P + "admin.build.<locals>.on_add": ADMIN,
    P + "admin.build.<locals>.on_role": ADMIN,
    P + "admin.build.<locals>.on_disable": ADMIN,
    P + "admin.build.<locals>.on_enable": ADMIN,
    P + "admin.build.<locals>.on_reset": ADMIN,
    P + "admin.build.<locals>.on_list": ADMIN,
    P + "admin.build.<locals>.on_load": ADMIN_READ,
    P + "admin.build_checks.<locals>.on_check": ADMIN,
    "vibestudio.studio.roles.shape.<locals>.on_load": ANY,  # which tabs and sections the viewer's role shows
}


def _key(fn) -> str:
    f = getattr(fn, "fn", fn)
    return f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', repr(f))}"


def _server_fns(app) -> list[tuple[int, str]]:
    """(fn_index, key) of every dependency that runs on the server (JavaScript-only events have no fn)."""
    out = []
    for i, block_fn in enumerate(app.demo.fns.values() if isinstance(app.demo.fns, dict) else app.demo.fns):
        if getattr(block_fn, "fn", None) is not None:
            out.append((i, _key(block_fn)))
    return out


def _seed_job(app) -> int:
    """A job of rita's whose config and log hold the marker (what an annotator must never read)."""
    from sqlalchemy import select

    from vibestudio.db.models import Job, User

    log = app.home / "marker-job.log"
    log.write_text(f"step 1 loss 0.5 {MARKER}\n")
    with app.db.session() as s:
        rita = s.scalar(select(User.id).where(User.name == "rita"))
        job = Job(
            kind="dpo",
            config={"kind": "dpo", "note": MARKER},
            status="failed",
            log_path=str(log),
            error=f"failed: {MARKER}",
            created_by=rita,
        )
        s.add(job)
        s.flush()
        return job.id


def test_every_handler_is_classified(studio_app):
    keys = {k for _, k in _server_fns(studio_app)}
    missing = sorted(keys - set(LEAST_ROLE))
    assert not missing, f"classify these handlers in LEAST_ROLE (who may call them?): {missing}"
    gone = sorted(set(LEAST_ROLE) - keys)
    assert not gone, f"these handlers are gone: remove them from LEAST_ROLE: {gone}"


def test_nobody_reaches_any_event(studio_app):
    anon = studio_app.http(None)
    before = studio_app.counts()
    for i, key in _server_fns(studio_app):
        r = studio_app.call(anon, i)
        assert not r.ok and r.status in (401, 403), (key, r)
    assert studio_app.counts() == before


def _refused(r, need: str) -> bool:
    """An error, or an answer that says the role it needs (a poll or a page load answers instead of raising)."""
    return f"needs {need} or higher" in (r.error or "") + r.text


@pytest.mark.parametrize("role_user", ["ann"])
def test_annotator_is_refused_every_guarded_event_and_reads_no_job(studio_app, role_user):
    jid = _seed_job(studio_app)
    http = studio_app.http(role_user)
    leaks, unguarded = [], []
    for i, key in _server_fns(studio_app):
        need = LEAST_ROLE.get(key, ANY)
        data = studio_app.inputs_for(i)
        # the job picker and job id inputs get the seeded job, so a poll or clone would read it
        deps = studio_app.dependencies()[i]
        by_id = {c["id"]: c for c in studio_app.config["components"]}
        for k, comp_id in enumerate(deps["inputs"]):
            if by_id[comp_id].get("props", {}).get("elem_id") == "train-job":
                data[k] = jid
        before = studio_app.counts()
        r = studio_app.call(http, i, data)
        if MARKER in json.dumps(r.output, default=str) + (r.error or ""):
            leaks.append(key)
        if need in (RESEARCHER, ADMIN) and not _refused(r, need):
            unguarded.append((key, (r.error or r.text)[:120]))
        if need != ANY:
            assert studio_app.counts() == before, f"{key} wrote something for an annotator"
    assert not leaks, f"an annotator read researcher data through: {leaks}"
    assert not unguarded, f"these guarded handlers ran for an annotator: {unguarded}"
    assert PW not in json.dumps(leaks)
