"""Stored markup, labels exactly once, jobs owned by who launched them.

- A checklist saved on the Label tab is shown through the display path (``studio.render``), needs researcher in
  the service (``annotation.queues.edit_checklist``) and records the signed-in author, not a typed name.
- Two submits of one assignment racing store one label; the second is told "already labelled"
  (``annotation.labelling.submit_label``: a conditional update, and the unique ``labels.assignment_id``).
- Cancel, resume or publish another researcher's job needs admin or a recorded reason
  (``training.jobs.runner.require_job_owner``).
"""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select

from vibestudio.accounts import PermissionDenied, add_user
from vibestudio.annotation.labelling import LabelError, next_task, submit_label
from vibestudio.annotation.queues import NewItem, add_item, create_queue
from vibestudio.annotation.rubrics import get_rubric
from vibestudio.db.models import Job, Label, QueueItem, User

HOSTILE = '<img src=x onerror="window.__xss=1"> <script>window.__xss=2</script> [x](javascript:alert(1))'


def _queue(db, name: str, n: int = 1) -> list[int]:
    with db.session() as s:
        create_queue(s, name, "on_policy", get_rubric(), 2)
        return [
            add_item(
                s,
                name,
                NewItem(
                    [{"role": "user", "content": f"Q{i}?"}],
                    [f"a{i}", f"b{i}"],
                    [{"model": "m"}, {"model": "n"}],
                ),
            ).id
            for i in range(n)
        ]


def test_a_saved_checklist_is_shown_through_the_display_path_and_needs_researcher(studio_app):
    [item] = _queue(studio_app.db, "sec-checklist")
    start = studio_app.fn_index("label_next")
    save = studio_app.fn_index("vibestudio.studio.pages.label._checklist_handler.<locals>.on_save_checklist")

    ann = studio_app.http("ann")
    assert studio_app.call(ann, start, ["sec-checklist", "typed-name"], session="s-ann").ok
    r = studio_app.call(ann, save, [None, HOSTILE], session="s-ann")
    assert not r.ok and "needs researcher" in (r.error or ""), r
    with studio_app.db.session() as s:
        assert not s.get(QueueItem, item).checklist

    rita = studio_app.http("rita")
    assert studio_app.call(rita, start, ["sec-checklist", "root"], session="s-rita").ok
    r = studio_app.call(rita, save, [None, HOSTILE], session="s-rita")
    assert r.ok, r
    html = r.text
    assert (
        "<img" not in html
        and "<script" not in html
        and "javascript:" not in html.replace("javascript:alert", "")
    )
    assert "&lt;img" in html  # shown as text, not dropped
    with studio_app.db.session() as s:
        it = s.get(QueueItem, item)
        assert it.meta["checklist_by"] == "rita"  # the session's user, not the name typed in the form


def test_typing_a_name_on_the_label_tab_creates_no_account(studio_app):
    _queue(studio_app.db, "sec-names")
    with studio_app.db.session() as s:
        users = s.scalar(select(func.count()).select_from(User))
    ann = studio_app.http("ann")
    r = studio_app.call(ann, studio_app.fn_index("label_next"), ["sec-names", "mallory-new-account"])
    assert r.ok, r
    with studio_app.db.session() as s:
        assert s.scalar(select(func.count()).select_from(User)) == users
        assert s.scalar(select(User).where(User.name == "mallory-new-account")) is None


def test_open_mode_labelling_creates_no_account(db):
    _queue(db, "q")
    with db.session() as s:
        task = next_task(s, "q", "somebody typed this")
        submit_label(s, task.assignment_id, "somebody typed this", "left")
        assert s.scalar(select(func.count()).select_from(User)) == 0


def test_two_concurrent_submits_store_one_label(db):
    _queue(db, "race")
    with db.session() as s:
        task = next_task(s, "race", "ann")
    go = threading.Barrier(2)
    outcomes: list[str] = []

    def submit(choice: str) -> None:
        go.wait()
        try:
            with db.session() as s:
                submit_label(s, task.assignment_id, "ann", choice)
            outcomes.append("stored")
        except LabelError as exc:
            outcomes.append(str(exc))
        except Exception as exc:  # a database-level refusal that escaped the service
            outcomes.append(f"raw: {exc!r}")

    threads = [threading.Thread(target=submit, args=(c,)) for c in ("left", "right")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(o if o == "stored" else "refused" for o in outcomes) == ["refused", "stored"], outcomes
    assert any("already labelled" in o for o in outcomes), outcomes
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Label)) == 1


def test_the_unique_rule_holds_without_the_service(db):
    """The wall behind the service: a second label row for one assignment is refused by the database."""
    from sqlalchemy.exc import IntegrityError

    _queue(db, "wall")
    with db.session() as s:
        task = next_task(s, "wall", "ann")
        submit_label(s, task.assignment_id, "ann", "left")
        item = s.scalar(select(Label)).item_id
    with pytest.raises(IntegrityError), db.session() as s:
        s.add(
            Label(item_id=item, queue="wall", annotator="ann", assignment_id=task.assignment_id, outcome="1")
        )
        s.flush()


def _job(db, owner: str) -> int:
    with db.session() as s:
        uid = s.scalar(select(User.id).where(User.name == owner))
        job = Job(kind="dpo", config={"kind": "dpo"}, status="running", created_by=uid)  # no process
        s.add(job)
        s.flush()
        return job.id


def test_another_researchers_job_needs_admin_or_a_reason(db):
    from vibestudio.training.jobs.runner import cancel

    ids = {
        n: add_user(db, n, "a long test password", r).id
        for n, r in (("rita", "researcher"), ("rex", "researcher"), ("root", "admin"))
    }
    jid = _job(db, "rita")
    with pytest.raises(PermissionDenied, match="launched by another user"):
        cancel(db, jid, user_id=ids["rex"])
    with db.session() as s:
        assert s.get(Job, jid).status == "running"
    v = cancel(db, jid, user_id=ids["rex"], reason="it holds the only GPU overnight")
    assert v.status == "cancelled" and "rex (it holds the only GPU overnight)" in (v.error or "")
    jid2 = _job(db, "rita")
    assert cancel(db, jid2, user_id=ids["root"]).status == "cancelled"  # admin
    jid3 = _job(db, "rita")
    assert cancel(db, jid3, user_id=ids["rita"]).status == "cancelled"  # the owner


def test_cancel_over_http_refuses_another_researcher(studio_app):
    jid = _job(studio_app.db, "rita")
    rex = studio_app.client("rex")
    with pytest.raises(Exception, match="launched by another user"):
        rex.predict(jid, "", api_name="/train_cancel")
    with studio_app.db.session() as s:
        assert s.get(Job, jid).status == "running"
    with pytest.raises(Exception, match="launched by another user"):
        rex.predict(jid, None, "", api_name="/train_publish")
