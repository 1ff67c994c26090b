"""The Argilla pull path on the real SDK's objects: ``Record``, ``Response`` and ``Suggestion`` from the ``argilla``
package, built the way the SDK builds them from a server's answer (``Record.from_model`` on the server's record
model, as ``dataset.records(with_responses=True)`` does), in the states a server returns. Only the server is
replaced: a stand-in client hands those records to the real ``pull_responses``.

States: submitted, draft, discarded (with and without values), several annotators on one record, a record with
no response, an answer to a question the queue does not ask, a suggestion (a model's pre-fill, never a label)."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest
from sqlalchemy import select

from vibestudio.annotation.argilla import (
    dataset_settings,
    labels_from_records,
    pull_responses,
    queue_to_argilla,
)
from vibestudio.annotation.queues import NewItem, add_item, create_queue
from vibestudio.annotation.rubrics import get_rubric
from vibestudio.db.models import Label, RubricScore

rg = pytest.importorskip("argilla")
from argilla._models import RecordModel, UserResponseModel  # noqa: E402  (the server's wire models)

ALICE, BOB, CARL, DORA = (uuid.UUID(int=i) for i in (1, 2, 3, 4))
NAMES = {str(ALICE): "alice", str(BOB): "bob", str(CARL): "carl", str(DORA): "dora"}


def _queue(db, n: int) -> list[dict]:
    with db.session() as s:
        create_queue(s, "aq", rubric=get_rubric(), overlap=2)
        for i in range(n):
            add_item(
                s,
                "aq",
                NewItem(
                    [{"role": "user", "content": f"Q{i}"}], [f"one {i}", f"two {i}"], [{"model": "m"}] * 2
                ),
            )
        return queue_to_argilla(s, "aq")["records"]


@pytest.fixture(autouse=True)
def _no_login(monkeypatch):
    """``rg.Argilla(...)`` asks the server who is logged in; there is no server, so that one call is skipped."""
    from argilla._api._client import APIClient

    monkeypatch.setattr(APIClient, "_validate_connection", lambda self: None)


def _dataset() -> object:
    """A real ``rg.Dataset`` with the queue's settings, on a real client that is never asked anything."""
    client = rg.Argilla(api_url="http://127.0.0.1:9", api_key="offline")
    s = dataset_settings(get_rubric(), overlap=2)
    from vibestudio.annotation.argilla import _settings_object

    settings = _settings_object(rg, s)
    settings.questions.add(
        rg.TextQuestion(name="sentiment", title="not the studio's question", required=False)
    )
    return rg.Dataset(name="aq", settings=settings, client=client)


def _user(uid: uuid.UUID, status: str, **values: object) -> UserResponseModel:
    return UserResponseModel(user_id=uid, status=status, values={k: {"value": v} for k, v in values.items()})


def _server_record(ds, rec: dict, *responses: UserResponseModel) -> object:
    """What ``dataset.records(with_responses=True)`` yields for one record the server holds."""
    model = RecordModel(
        id=uuid.uuid4(),
        external_id=rec["id"],
        fields=rec["fields"],
        metadata=[{"name": k, "value": v} for k, v in rec["metadata"].items()],
        responses=list(responses),
        status="completed" if responses else "pending",
    )
    record = rg.Record.from_model(model, dataset=ds)
    # a model's pre-filled answer (the server keys it by question id, which only a server assigns): never a label
    record.suggestions.add(rg.Suggestion("preference", "right", score=0.9, agent="judge-x"))
    return record


class _StandIn:
    """Stands in for the server (the only thing that cannot run here): hands out the given SDK records."""

    def __init__(self, records: list) -> None:
        self.records = records
        self.users = [SimpleNamespace(id=uuid.UUID(k), username=v) for k, v in NAMES.items()]

    def __call__(self, api_url: str, api_key: str) -> _StandIn:
        return self

    def datasets(self, name: str, workspace: str | None = None) -> object:
        return SimpleNamespace(records=lambda with_responses=False: iter(self.records))


def test_a_draft_response_object_is_not_a_label(db, monkeypatch):
    (rec,) = _queue(db, 1)
    ds = _dataset()
    record = _server_record(ds, rec, _user(ALICE, "draft", preference="left", reason="half done"))
    assert {r.status for r in record.responses} == {"draft"}
    assert "status" not in record.to_dict()["responses"]["preference"][0]  # why to_dict() cannot be used
    monkeypatch.setattr(rg, "Argilla", _StandIn([record]))
    with db.session() as s:
        res = pull_responses(s, "aq", "http://argilla.invalid", "key")
    with db.session() as s:
        stored = [(lab.annotator, lab.outcome) for lab in s.scalars(select(Label))]
    assert stored == [] and res.n_labels == 0  # before the fix: [('alice', '1' or '2')], a draft as a label
    assert (res.drafts, res.skipped) == (1, [])


def test_server_states_through_the_real_pull(db, monkeypatch):
    recs = _queue(db, 4)
    ds = _dataset()
    records = [
        # several annotators: alice submitted with rubric scores, bob submitted, carl's is a draft
        _server_record(
            ds,
            recs[0],
            _user(
                ALICE,
                "submitted",
                preference="left",
                reason="clearer",
                helpfulness_left=4,
                formatting_right="under-formatted",
            ),
            _user(BOB, "submitted", preference="tie"),
            _user(CARL, "draft", preference="right", helpfulness_left=1),
        ),
        # discarded with values (the annotator answered, then discarded) and discarded with no values
        _server_record(ds, recs[1], _user(ALICE, "discarded", preference="right"), _user(BOB, "discarded")),
        # no response at all
        _server_record(ds, recs[2]),
        # a submitted answer plus an answer to a question the queue does not ask
        _server_record(ds, recs[3], _user(DORA, "submitted", preference="both_bad", sentiment="meh")),
    ]
    monkeypatch.setattr(rg, "Argilla", _StandIn(records))
    with db.session() as s:
        res = pull_responses(s, "aq", "http://argilla.invalid", "key")
    assert (res.n_labels, res.drafts, res.unanswered) == (3, 1, 1)
    assert res.n_scores == 2  # alice's two rubric answers; carl's draft score is not stored
    discarded = [x for x in res.skipped if "discarded" in x]
    assert (
        len(discarded) == 2
        and any(str(BOB) in x for x in discarded)
        and any(str(ALICE) in x for x in discarded)
    )
    assert [x for x in res.skipped if "unknown question 'sentiment'" in x] == [
        f"record {recs[3]['id']!r}: unknown question 'sentiment' (answered by {DORA})"
    ]
    with db.session() as s:
        labels = {(lab.item_id, lab.annotator): lab for lab in s.scalars(select(Label))}
        scores = s.scalars(select(RubricScore)).all()
        again = pull_responses(s, "aq", "http://argilla.invalid", "key")
    item0, item3 = recs[0]["metadata"]["item_id"], recs[3]["metadata"]["item_id"]
    assert set(labels) == {(item0, "alice"), (item0, "bob"), (item3, "dora")}
    first = recs[0]["metadata"]["left_is_first"] == "true"
    assert labels[(item0, "alice")].outcome == ("1" if first else "2")
    assert labels[(item0, "alice")].reason == "clearer"
    assert labels[(item0, "bob")].outcome == "tie" and labels[(item3, "dora")].outcome == "both_bad"
    assert {(sc.criterion, sc.value) for sc in scores} == {("helpfulness", 4.0), ("formatting", 2.0)}
    assert (again.n_labels, again.already) == (0, 3)


def test_locally_built_records_and_the_server_layout_as_files(db):
    """``rg.Record`` with ``rg.Response`` objects (as the issue built them) and dicts in the server's layout."""
    recs = _queue(db, 2)
    local = [
        rg.Record(
            id=recs[0]["id"],
            fields=recs[0]["fields"],
            metadata=recs[0]["metadata"],
            responses=[
                rg.Response("preference", "left", user_id=ALICE, status="draft"),
                rg.Response("preference", "right", user_id=BOB, status="submitted"),
            ],
            suggestions=[rg.Suggestion("preference", "left", score=0.7, agent="judge-x")],
        )
    ]
    as_file = [
        {
            **recs[1],
            "responses": [
                {"user_id": str(CARL), "status": "submitted", "values": {"preference": {"value": "right"}}},
                {"user_id": str(DORA), "status": "discarded", "values": {}},
            ],
        },
        # the to_dict() layout without a status: not taken for a label
        {**recs[1], "responses": {"preference": [{"value": "left", "user_id": str(ALICE)}]}},
    ]
    with db.session() as s:
        res = labels_from_records(s, "aq", [*local, *as_file], users=NAMES)
        annotators = sorted(lab.annotator for lab in s.scalars(select(Label)))
    assert annotators == ["bob", "carl"] and res.drafts == 1
    assert any("discarded" in x and str(DORA) in x for x in res.skipped)
    assert any("no known status" in x and str(ALICE) in x for x in res.skipped)
