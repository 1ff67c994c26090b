"""Argilla connector: queue -> dataset settings and records, responses -> labels, offline; live round trip only
when ARGILLA_API_URL points at a server (and the ``argilla`` extra is installed)."""

from __future__ import annotations

import os
import uuid

import pytest
from sqlalchemy import select

from vibestudio.annotation.argilla import labels_from_records, pull_responses, push_queue, queue_to_argilla
from vibestudio.annotation.formats import ExportSpec, export_rows
from vibestudio.annotation.queues import NewItem, add_item, create_queue
from vibestudio.annotation.rubrics import get_rubric
from vibestudio.db.models import Label, RubricScore


def _queue(db, n=3):
    with db.session() as s:
        create_queue(s, "aq", rubric=get_rubric(), overlap=2)
        for i in range(n):
            add_item(
                s,
                "aq",
                NewItem(
                    [{"role": "user", "content": f"Q{i}"}],
                    [f"one {i}", f"two {i}"],
                    [{"model": "zebra-7"}] * 2,
                ),
            )


def _responses(records, choice="left", user="u-1", score=None):
    out = []
    for rec in records:
        ok = {"user_id": user, "status": "submitted"}
        responses = {
            "preference": [{"value": choice, **ok}],
            "reason": [{"value": "clear", **ok}],
        }
        if score is not None:
            responses["helpfulness_left"] = [{"value": score, **ok}]
            responses["formatting_right"] = [{"value": "over-formatted", **ok}]
        out.append({**rec, "responses": responses, "status": "completed"})
    return out


def test_settings_mirror_the_rubric_and_records_are_anonymous(db):
    _queue(db)
    with db.session() as s:
        data = queue_to_argilla(s, "aq")
    settings, records = data["settings"], data["records"]
    assert [f["name"] for f in settings["fields"]] == ["prompt", "answer_left", "answer_right"]
    qs = {q["name"]: q for q in settings["questions"]}
    assert qs["preference"]["type"] == "label_selection" and set(qs["preference"]["labels"]) == {
        "left",
        "right",
        "tie",
        "both_good",
        "both_bad",
    }
    assert qs["helpfulness_left"]["values"] == [1, 2, 3, 4, 5] and qs["no_sycophancy_right"]["values"] == [
        0,
        1,
    ]
    assert qs["formatting_left"]["type"] == "label_selection"
    assert settings["distribution"] == {"strategy": "overlap", "min_submitted": 2}
    assert all(not m["visible_for_annotators"] for m in settings["metadata"])
    assert len(records) == 3 and "zebra" not in repr(records)
    assert {r["metadata"]["left_is_first"] for r in records} <= {"true", "false"}


def test_responses_become_labels_in_item_terms_and_pull_is_idempotent(db):
    _queue(db)
    with db.session() as s:
        records = queue_to_argilla(s, "aq")["records"]
        res = labels_from_records(s, "aq", _responses(records, "left", score=4), users={"u-1": "alice"})
    assert (res.n_labels, res.n_scores, res.skipped) == (3, 6, [])
    with db.session() as s:
        labels = s.scalars(select(Label).order_by(Label.item_id)).all()
        scores = s.scalars(select(RubricScore)).all()
        again = labels_from_records(s, "aq", _responses(records, "left"), users={"u-1": "alice"})
        rows, _ = export_rows(s, ExportSpec("trl", queues=["aq"]))
    assert again.n_labels == 0 and again.already == 3
    for lab, rec in zip(labels, records, strict=True):
        first = rec["metadata"]["left_is_first"] == "true"
        assert lab.outcome == ("1" if first else "2") and lab.kind == "argilla" and lab.annotator == "alice"
        assert lab.reason == "clear"
    # the answer shown on the left was chosen every time
    assert [r["chosen"] for r in rows] == [rec["fields"]["answer_left"] for rec in records]
    assert {(sc.criterion, sc.value) for sc in scores} == {("helpfulness", 4.0), ("formatting", 1.0)}


def test_bad_records_are_listed_not_stored(db):
    _queue(db, n=1)
    with db.session() as s:
        (rec,) = queue_to_argilla(s, "aq")["records"]
        res = labels_from_records(
            s,
            "aq",
            [
                {"id": "x", "metadata": {}, "responses": {}},
                {
                    **rec,
                    "responses": {"preference": [{"value": "maybe", "user_id": "u", "status": "submitted"}]},
                },
                {**rec, "responses": {"preference": [{"value": "tie", "user_id": "u", "status": "draft"}]}},
            ],
        )
    assert res.n_labels == 0 and res.drafts == 1 and len(res.skipped) == 2
    assert "metadata item_id" in res.skipped[0] and "unknown preference 'maybe'" in res.skipped[1]


@pytest.mark.skipif(
    not os.environ.get("ARGILLA_API_URL"), reason="ARGILLA_API_URL not set (no Argilla server)"
)
def test_live_round_trip(db):
    pytest.importorskip("argilla")
    _queue(db, n=2)
    name = f"vibestudio-test-{uuid.uuid4().hex[:8]}"
    url, key = os.environ["ARGILLA_API_URL"], os.environ.get("ARGILLA_API_KEY", "argilla.apikey")
    with db.session() as s:
        assert push_queue(s, "aq", url, key, dataset=name) == 2
    import argilla as rg

    client = rg.Argilla(api_url=url, api_key=key)
    ds = client.datasets(name=name)
    me = client.me
    for record in ds.records:
        record.responses.add(rg.Response("preference", "left", user_id=me.id, status="submitted"))
        ds.records.log([record])
    with db.session() as s:
        res = pull_responses(s, "aq", url, key, dataset=name)
    assert res.n_labels == 2
    ds.delete()


def test_cli_import_reads_statuses_in_both_layouts(tmp_path):
    """``vibestudio argilla import`` on a JSONL file (a reason holding U+2028): only submitted answers are labels."""
    import json

    from typer.testing import CliRunner

    from vibestudio.db.session import Database
    from vibestudio.studio.cli import app

    db = Database()
    db.migrate()
    _queue(db, n=2)
    with db.session() as s:
        recs = queue_to_argilla(s, "aq")["records"]
    rows = [
        {
            **recs[0],
            "responses": {
                "preference": [
                    {"value": "left", "user_id": "u-1", "status": "submitted"},
                    {"value": "right", "user_id": "u-2", "status": "draft"},
                ],
                "reason": [{"value": "first line\u2028second line", "user_id": "u-1", "status": "submitted"}],
            },
        },
        {
            **recs[1],
            "responses": [
                {"user_id": "u-3", "status": "submitted", "values": {"preference": {"value": "tie"}}},
                {"user_id": "u-4", "status": "discarded", "values": {}},
            ],
        },
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = CliRunner().invoke(app, ["argilla", "import", "aq", "--records", str(path)])
    assert out.exit_code == 0, out.output
    res = json.loads(out.output)
    assert (res["n_labels"], res["drafts"]) == (2, 1) and any("u-4 discarded" in x for x in res["skipped"])
    with db.session() as s:
        labels = {lab.annotator: lab for lab in s.scalars(select(Label))}
    assert set(labels) == {"u-1", "u-3"} and labels["u-1"].reason == "first line\u2028second line"


def test_cli_push_and_pull_call_the_server_the_options_name(monkeypatch):
    """``vibestudio argilla push/pull``: the options (else the settings) reach the connector, its result is
    printed, and a queue error or a missing server is an error exit, not a traceback."""
    import json
    import types

    from typer.testing import CliRunner

    import vibestudio.annotation.argilla as argilla
    from vibestudio.studio.cli import app

    monkeypatch.delenv("ARGILLA_API_URL", raising=False)
    monkeypatch.delenv("ARGILLA_API_KEY", raising=False)
    runner = CliRunner()
    out = runner.invoke(app, ["argilla", "push", "aq", "--api-url", "http://argilla.test"])
    assert out.exit_code == 1 and "ARGILLA_API_KEY" in out.output

    calls = []
    real_push = argilla.push_queue
    monkeypatch.setattr(argilla, "push_queue", lambda s, *a: calls.append(("push", *a)) or 3)
    monkeypatch.setattr(
        argilla,
        "pull_responses",
        lambda s, *a: calls.append(("pull", *a)) or types.SimpleNamespace(n_labels=2),
    )
    opts = ["--api-url", "http://argilla.test", "--api-key", "k", "--dataset", "ds"]
    out = runner.invoke(app, ["argilla", "push", "aq", *opts, "--workspace", "ws"])
    assert (out.exit_code, out.output.strip()) == (0, "3 record(s) pushed"), out.output
    out = runner.invoke(app, ["argilla", "pull", "aq", *opts])
    assert out.exit_code == 0 and json.loads(out.output) == {"n_labels": 2}, out.output
    assert calls == [
        ("push", "aq", "http://argilla.test", "k", "ds", "ws"),
        ("pull", "aq", "http://argilla.test", "k", "ds", None),
    ]

    monkeypatch.setattr(argilla, "push_queue", real_push)  # the queue is checked before any connection
    out = runner.invoke(
        app, ["argilla", "push", "no-such-queue", "--api-url", "http://127.0.0.1:9", "--api-key", "k"]
    )
    assert out.exit_code == 1 and "no queue named 'no-such-queue'" in out.output, out.output
