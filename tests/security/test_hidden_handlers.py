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
P = "studio.pages."
MARKER = "RESEARCHER-ONLY-7f3a"

LEAST_ROLE: dict[str, str] = {}  # filled below from the table (module.qualname -> least role)
_TABLE = """
"""


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

    from db.models import Job, User

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
    text = (r.error or "") + r.text
    return (
        f"needs {need}" in text
        or "needs researcher or higher" in text
        or (need == ADMIN and "needs admin" in text)
    )


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
        by_id = {c["id"]: c for c in studio_app.demo.config["components"]}
        for k, comp_id in enumerate(deps["inputs"]):
            if by_id[comp_id].get("props", {}).get("elem_id") == "train-job":
                data[k] = jid
        before = studio_app.counts()
        r = studio_app.call(http, i, data)
        if MARKER in json.dumps(r.output, default=str) + (r.error or ""):
            leaks.append(key)
        if need != ANY:
            if r.ok and not _refused(r, need):
                unguarded.append(key)
            assert studio_app.counts() == before, f"{key} wrote something for an annotator"
    assert not leaks, f"an annotator read researcher data through: {leaks}"
    assert not unguarded, f"these guarded handlers ran for an annotator: {unguarded}"
    assert PW not in json.dumps(leaks)
