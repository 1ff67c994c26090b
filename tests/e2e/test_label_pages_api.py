"""The Annotate and Agreement tabs through the app's own API (gradio_client against a real server): import a
file with a bad row, import it with skip-bad, compute agreement, export labels, freeze a snapshot."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.helpers.servers import start_server

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(tmp_path):
    home = tmp_path / "studio-home"
    home.mkdir()
    proc, url = start_server(home)
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_import_agreement_export_through_the_api(server, tmp_path):
    from gradio_client import Client, handle_file

    rows = []
    for i in range(4):
        for who, pref in (("ann", 1.0), ("bob", 1.0 if i < 3 else 2.0)):
            rows.append(
                {
                    "instruction": f"Q{i}",
                    "output_1": f"good {i}",
                    "output_2": f"bad {i}",
                    "generator_1": "m1",
                    "generator_2": "m2",
                    "preference": pref,
                    "annotator": who,
                }
            )
    rows.append({"instruction": "broken"})
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps(rows, indent=1))

    client = Client(server, verbose=False)
    report, _ = client.predict(handle_file(str(path)), "alpaca_eval", "ae", False, api_name="/queue_import")
    assert "<p>❌" in report and "field 'output_1': is missing" in report  # HTML from the display path
    report, _ = client.predict(handle_file(str(path)), "alpaca_eval", "ae", True, api_name="/queue_import")
    assert "imported 8 label(s)" in report and "skipped 1 bad row(s)" in report

    summary, _crit, pairs, majority, _judge = client.predict("ae", ["import"], False, api_name="/agreement")
    assert "<strong>8</strong> labels on <strong>4</strong> items by <strong>2</strong> annotators" in summary
    assert pairs["data"] == [["ann", "bob", 0.0, 0.75, 4]]  # all-"1" coder: kappa 0 by definition

    text, file = client.predict(
        ["ae"], "trl", "Parquet", ["import"], False, "majority", api_name="/labels_export"
    )
    assert "<strong>3</strong> rows" in text  # item 4 has no majority (1 vs 2)
    assert 'href="/studio/download/' in file and '.parquet"' in file  # a link to the checked download route
    text, _ = client.predict(["ae"], ["import"], "each", api_name="/labels_freeze")
    assert "snapshot" in text and "<strong>8</strong> pairs" in text  # every decisive label is a pair
