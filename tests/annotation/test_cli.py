"""The annotation commands of the ``vibestudio`` CLI, end to end on the isolated data home."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tests.helpers.files import write_json
from vibestudio.studio.cli import app

runner = CliRunner()


def test_import_reports_bad_rows_then_skip_bad_imports_the_rest(tmp_path, alpaca_rows):
    rows = [dict(r) for r in alpaca_rows]
    rows[2]["preference"] = 7
    path = write_json(tmp_path / "ae.json", rows)
    bad = runner.invoke(app, ["import", str(path), "--format", "alpaca_eval", "--queue", "ae"])
    assert bad.exit_code == 1
    assert "field 'preference': 7 is outside 1..2" in bad.output and "Nothing was written" in bad.output
    ok = runner.invoke(app, ["import", str(path), "--queue", "ae", "--skip-bad"])
    assert ok.exit_code == 0, ok.output
    assert "imported 3 label(s) from 4 record(s) into queue 'ae'" in ok.output and "skipped:" in ok.output


def test_export_formats_agreement_and_queue_listing(tmp_path, fastchat_rows):
    path = write_json(tmp_path / "battles.json", fastchat_rows)
    assert runner.invoke(app, ["import", str(path), "--queue", "fc"]).exit_code == 0
    out = tmp_path / "pairs.parquet"
    res = runner.invoke(app, ["export", "--format", "trl", "--queue", "fc", "--out", str(out)])
    assert res.exit_code == 0, res.output
    info = json.loads(res.output)
    assert info["rows"] == 2 and info["file_format"] == "parquet" and out.exists()
    res = runner.invoke(
        app, ["export", "--format", "kto", "--conversational", "--out", str(tmp_path / "kto.jsonl")]
    )
    assert res.exit_code == 0 and json.loads(res.output)["rows"] == 6
    snap = runner.invoke(app, ["export", "--snapshot", "--queue", "fc"])
    assert snap.exit_code == 0 and json.loads(snap.output)["n_pairs"] == 2
    kto = runner.invoke(app, ["export", "--format", "kto", "--snapshot", "--queue", "fc"])
    assert kto.exit_code == 0 and json.loads(kto.output)["n_pairs"] == 6  # both-good / both-bad labels count
    off = [
        "export",
        "--format",
        "kto",
        "--snapshot",
        "--score-criterion",
        "helpfulness",
        "--desirable-threshold",
        "9",
    ]
    res = runner.invoke(app, off)
    assert res.exit_code == 1 and "desirable_threshold 9 is outside 'helpfulness'" in res.output
    res = runner.invoke(app, ["export", "--format", "trl", "--score-criterion", "helpfulness"])
    assert res.exit_code == 1 and "need --format kto" in res.output
    agree = runner.invoke(app, ["agreement", "fc", "--json"])
    assert agree.exit_code == 0
    rep = json.loads(agree.output)
    assert rep["annotators"] == ["judge1", "judge2"] and rep["pairs"][0]["n"] == 1
    listing = runner.invoke(app, ["queue", "list"])
    assert "fc" in listing.output and "items=3" in listing.output
    missing = runner.invoke(app, ["queue", "progress", "nope"])
    assert missing.exit_code == 1 and "no queue named 'nope'" in missing.output


def test_rubric_commands(tmp_path):
    assert "helpfulness" in runner.invoke(app, ["rubric", "show"]).output
    bad = tmp_path / "r.yaml"
    bad.write_text("name: r\nversion: 1\ncriteria:\n  - {name: a, description: d, scale: 2-1}\n")
    res = runner.invoke(app, ["rubric", "validate", str(bad)])
    assert res.exit_code == 1 and "r.yaml: criteria[0].scale" in res.output


def test_queue_create_on_the_real_engine_and_progress():
    res = runner.invoke(
        app,
        [
            "queue",
            "create",
            "cli-q",
            "--policy",
            "smollm2-plain",
            "--max-prompts",
            "1",
            "--max-tokens",
            "4",
            "--overlap",
            "2",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "Queue 'cli-q':" in res.output and "from 1 prompt(s), 2 answers" in res.output
    prog = runner.invoke(app, ["queue", "progress", "cli-q", "--json"])
    info = json.loads(prog.output)
    assert info["overlap"] == 2 and info["target"] == 2 * info["n_items"] and info["labels"] == 0
    bias = runner.invoke(app, ["judge", "bias", "cli-q", "--judge", "smollm2-plain"])
    assert bias.exit_code == 1 and "has no verdicts on queue 'cli-q'" in bias.output
