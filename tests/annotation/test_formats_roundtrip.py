"""Every importer and exporter round-trips on small files in the real layouts (made by the tests)."""

from __future__ import annotations

import json

import datasets
import pyarrow.parquet as pq
import pytest
from sqlalchemy import func, select

from tests.helpers.files import write_json
from vibestudio.annotation.formats import (
    ExportSpec,
    export_file,
    export_rows,
    import_file,
    read_records,
    snapshot_from_labels,
)
from vibestudio.annotation.snapshots import load_snapshot
from vibestudio.db.models import Label, QueueItem, RubricScore


def _canon_fastchat(r: dict) -> tuple:
    by_model = {r["model_a"]: r["conversation_a"], r["model_b"]: r["conversation_b"]}
    win = {"model_a": r["model_a"], "model_b": r["model_b"]}.get(r["winner"], r["winner"])
    return (r["judge"], r["turn"], json.dumps(by_model, sort_keys=True), win)


def test_fastchat_import_groups_pairs_and_round_trips(db, tmp_path, fastchat_rows):
    src = write_json(tmp_path / "battles.json", fastchat_rows)
    with db.session() as s:
        rep = import_file(s, src, "fastchat", queue="mtb")
    assert (rep.n_records, rep.n_labels, rep.n_items_new) == (4, 4, 3)
    with db.session() as s:
        # judge2 saw the pair swapped: same item, outcome flipped into item terms
        labels = s.scalars(select(Label).order_by(Label.id)).all()
        assert [lab.outcome for lab in labels] == ["1", "1", "both_bad", "2"]
        assert labels[0].item_id == labels[1].item_id
        rows, skipped = export_rows(s, ExportSpec("fastchat", queues=["mtb"]))
    assert sorted(map(_canon_fastchat, rows)) == sorted(map(_canon_fastchat, fastchat_rows))

    out = write_json(tmp_path / "again.json", rows)
    with db.session() as s:
        rep2 = import_file(s, out, "fastchat", queue="mtb-again")
        assert rep2.n_labels == 4
        again, _ = export_rows(s, ExportSpec("fastchat", queues=["mtb-again"]))
    assert sorted(map(_canon_fastchat, again)) == sorted(map(_canon_fastchat, fastchat_rows))

    with db.session() as s:
        trl, skipped = export_rows(s, ExportSpec("trl", queues=["mtb"]))
        maj, skipped_maj = export_rows(s, ExportSpec("trl", queues=["mtb"], aggregate="majority"))
    assert [(r["prompt"], r["chosen"], r["rejected"]) for r in trl] == [
        ("Plan a trip to Hawaii.", "Day 1: Honolulu.", "Go."),
        ("Plan a trip to Hawaii.", "Day 1: Honolulu.", "Go."),
    ]
    assert skipped == {"outcome_both_bad": 1, "diverged_history": 1}
    assert [r["provenance"]["annotators"] for r in trl] == [["judge1"], ["judge2"]]
    assert trl[0]["provenance"]["chosen_model"] == "vicuna-13b"
    assert len(maj) == 1 and maj[0]["provenance"]["agree"] == 2 and maj[0]["provenance"]["votes"] == 2


def test_alpaca_eval_round_trip_and_trl_rows(db, tmp_path, alpaca_rows):
    src = write_json(tmp_path / "annotations.json", alpaca_rows)
    with db.session() as s:
        import_file(s, src, "alpaca_eval", queue="ae")
        outcomes = [lab.outcome for lab in s.scalars(select(Label).order_by(Label.id))]
        rows, _ = export_rows(s, ExportSpec("alpaca_eval", queues=["ae"]))
        trl, skipped = export_rows(s, ExportSpec("trl", queues=["ae"]))
    assert outcomes == ["1", "2", "tie", "1"]
    assert rows == alpaca_rows
    assert [(r["prompt"], r["chosen"], r["rejected"]) for r in trl] == [
        ("Name a prime number.", "7", "8"),
        ("Translate 'cat' to French.", "chat", "chien"),
        ("Add the numbers.\n\n2 and 3", "5", "6"),
    ]
    assert skipped == {"outcome_tie": 1}
    assert trl[1]["provenance"]["chosen_model"] == "davinci"
    assert trl[1]["provenance"]["annotators"] == ["alpaca_eval_gpt4"]


def test_ultrafeedback_round_trip_keeps_scores(db, tmp_path, ultrafeedback_rows):
    src = write_json(tmp_path / "uf.jsonl", ultrafeedback_rows, lines=True)
    with db.session() as s:
        import_file(s, src, "ultrafeedback", queue="uf")
        assert s.scalar(select(func.count(RubricScore.id))) == 6
        rows, _ = export_rows(s, ExportSpec("ultrafeedback", queues=["uf"]))
        conv, _ = export_rows(s, ExportSpec("trl", conversational=True, queues=["uf"]))
    assert rows == ultrafeedback_rows
    assert conv[0]["prompt"] == [{"role": "user", "content": "What is 2+2?"}]
    assert conv[0]["chosen"] == [{"role": "assistant", "content": "4"}]
    scores = {(x["answer"], x["value"]) for x in conv[0]["provenance"]["rubric_scores"]}
    assert scores == {("chosen", 9.0), ("rejected", 2.0)}


def test_helpsteer2_pairs_by_prompt_and_round_trips(db, tmp_path, helpsteer_rows):
    src = write_json(tmp_path / "helpsteer2.jsonl", helpsteer_rows, lines=True)
    with db.session() as s:
        rep = import_file(s, src, "helpsteer2")
        assert rep.queue == "import-helpsteer2-helpsteer2"
        items = s.scalars(select(QueueItem).order_by(QueueItem.id)).all()
        outcomes = [lab.outcome for lab in s.scalars(select(Label).order_by(Label.id))]
        rows, _ = export_rows(s, ExportSpec("helpsteer2"))
        kto, _ = export_rows(s, ExportSpec("kto"))
        pairs, _ = export_rows(s, ExportSpec("trl"))
    assert len(items) == 3 and [bool(i.answer_2) for i in items] == [True, True, False]
    # gravity: first more helpful; haiku: equal helpfulness 3 -> both good; entropy alone, helpfulness 2 -> bad
    assert outcomes == ["1", "both_good", "bad"]
    assert rows == helpsteer_rows
    assert [(r["completion"], r["label"]) for r in kto] == [
        ("Masses attract each other.", True),
        ("It is magic.", False),
        (helpsteer_rows[2]["response"], True),
        (helpsteer_rows[3]["response"], True),
        ("A measure of disorder.", False),
    ]
    assert [r["chosen"] for r in pairs] == ["Masses attract each other."]


@pytest.mark.parametrize("layout", ["standard", "conversational", "implicit"])
def test_trl_import_export_identity(db, tmp_path, trl_rows, layout):
    if layout == "standard":
        rows = trl_rows
    else:
        rows = []
        for r in trl_rows:
            user = [{"role": "user", "content": r["prompt"]}]
            if layout == "conversational":
                rows.append(
                    {
                        "prompt": user,
                        "chosen": [{"role": "assistant", "content": r["chosen"]}],
                        "rejected": [{"role": "assistant", "content": r["rejected"]}],
                    }
                )
            else:
                rows.append(
                    {
                        "chosen": [*user, {"role": "assistant", "content": r["chosen"]}],
                        "rejected": [*user, {"role": "assistant", "content": r["rejected"]}],
                    }
                )
    src = write_json(tmp_path / "prefs.jsonl", rows, lines=True)
    with db.session() as s:
        import_file(s, src, "trl", queue="t")
        out, _ = export_rows(s, ExportSpec("trl", conversational=layout != "standard", queues=["t"]))
    stripped = [{k: v for k, v in r.items() if k != "provenance"} for r in out]
    if layout == "implicit":
        rows = [
            {
                "prompt": r["chosen"][:-1],
                "chosen": r["chosen"][-1:],
                "rejected": r["rejected"][-1:],
            }
            for r in rows
        ]
    assert stripped == rows


def test_exported_provenance_survives_reimport(db, tmp_path, alpaca_rows):
    with db.session() as s:
        import_file(s, write_json(tmp_path / "a.json", alpaca_rows), "alpaca_eval", queue="a")
        res = export_file(s, ExportSpec("trl", queues=["a"]), tmp_path / "out.jsonl")
    with db.session() as s:
        import_file(s, res.path, "trl", queue="b")
        back, _ = export_rows(s, ExportSpec("trl", queues=["b"]))
    assert [r["provenance"]["annotators"] for r in back] == [["alpaca_eval_gpt4"]] * 3
    assert [r["provenance"]["chosen_model"] for r in back] == ["gpt4", "davinci", "gpt4"]


@pytest.mark.parametrize("fmt,conversational", [("trl", False), ("trl", True), ("kto", False), ("kto", True)])
def test_jsonl_parquet_and_datasets_hold_the_same_rows(db, tmp_path, helpsteer_rows, fmt, conversational):
    with db.session() as s:
        import_file(s, write_json(tmp_path / "h.jsonl", helpsteer_rows, lines=True), "helpsteer2")
        spec = ExportSpec(fmt, conversational=conversational)
        a = export_file(s, spec, tmp_path / "x.jsonl")
        b = export_file(s, spec, tmp_path / "x.parquet")
        c = export_file(s, spec, tmp_path / "x_ds")
    from_jsonl = [r.value for r in read_records(tmp_path / "x.jsonl")[0]]
    from_parquet = pq.read_table(tmp_path / "x.parquet").to_pylist()
    from_ds = datasets.load_from_disk(str(tmp_path / "x_ds")).to_list()
    assert a.n_rows == b.n_rows == c.n_rows == len(from_jsonl) > 0
    assert (a.file_format, b.file_format, c.file_format) == ("jsonl", "parquet", "datasets")

    def norm(rows):  # Arrow fills absent struct keys with null; compare through JSON with sorted keys
        return [json.dumps(r, sort_keys=True, default=str) for r in rows]

    assert norm(from_parquet) == norm(from_ds)
    assert [r["label" if fmt == "kto" else "chosen"] for r in from_jsonl] == [
        r["label" if fmt == "kto" else "chosen"] for r in from_parquet
    ]
    assert set(from_parquet[0]["provenance"]) == set(from_jsonl[0]["provenance"])


def test_snapshot_from_labels_is_content_hashed_and_loads_for_training(db, tmp_path, ultrafeedback_rows):
    with db.session() as s:
        import_file(s, write_json(tmp_path / "uf.jsonl", ultrafeedback_rows, lines=True), "ultrafeedback")
        snap = snapshot_from_labels(s)
        again = snapshot_from_labels(s)
    assert snap.created and not again.created and again.hash == snap.hash and snap.n_pairs == 3
    rows = load_snapshot(snap.path, snap.hash)
    assert rows[1] == {
        "prompt": [{"role": "user", "content": "Capital of France?"}],
        "chosen": [{"role": "assistant", "content": "Paris"}],
        "rejected": [{"role": "assistant", "content": "Lyon"}],
    }


def test_kto_labels_by_a_score_threshold_and_freeze_as_an_unpaired_snapshot(db, tmp_path, helpsteer_rows):
    from vibestudio.annotation.unpaired import ScoreRule, is_unpaired

    src = write_json(tmp_path / "helpsteer2.jsonl", helpsteer_rows, lines=True)
    with db.session() as s:
        import_file(s, src, "helpsteer2")
        by_vote, _ = export_rows(s, ExportSpec("kto"))
        strict = ScoreRule("helpfulness", 4.0, (0.0, 4.0))
        by_score, _ = export_rows(s, ExportSpec("kto", score_rule=strict))
        snap = snapshot_from_labels(s, ExportSpec("kto", score_rule=strict))
    assert [r["label"] for r in by_vote] == [True, False, True, True, False]
    # the haiku pair was "both good" at helpfulness 3: below a threshold of 4 both answers are undesirable
    assert [r["label"] for r in by_score] == [True, False, False, False, False]
    rows = load_snapshot(snap.path, snap.hash)
    assert all(is_unpaired(r) for r in rows) and [r["label"] for r in rows] == [
        True,
        False,
        False,
        False,
        False,
    ]
    with db.session() as s:
        from vibestudio.annotation.snapshots import get_snapshot

        assert get_snapshot(s, snap.hash).filter["score_rule"] == {
            "criterion": "helpfulness",
            "threshold": 4.0,
            "scale": [0.0, 4.0],
        }
