"""Real Chromium: the Models tab of a freshly trained child shows lineage, drift with intervals, discovered phrases,
evals against the parent, why there are no judge-described differences, and the verdict; a researcher lets a held
child play and the reason is logged."""

from __future__ import annotations

import pytest

from tests.helpers.browser import STEP_MS, open_model
from tests.helpers.servers import start_server
from tests.helpers.training import pair_rows
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.training.jobs.runner import wait
from vibestudio.training.jobs.service import launch_dpo

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(2400)  # a whole DPO job and its report first; many minutes on a loaded machine
def test_models_tab_shows_a_fresh_childs_report(tmp_path, browser, tiny_model_dir, monkeypatch):
    from vibestudio.annotation.snapshots import write_snapshot
    from vibestudio.studio.context import build_context

    home = tmp_path / "studio-home"
    home.mkdir()
    monkeypatch.setenv("VIBESTUDIO_HOME", str(home))
    ctx = build_context()
    with ctx.db.session() as s:
        register(
            s,
            ContestantSpec(
                "tiny-parent",
                engine="transformers",
                model_ref=str(tiny_model_dir),
                prefill="Well, ",
                sampling={"temperature": 0.7, "max_tokens": 12},
            ),
        )
        snap = write_snapshot(s, pair_rows(8), {"source": "test"}).hash
    job = launch_dpo(
        ctx.db,
        "tiny-parent",
        snap,
        max_steps=4,
        kl_prompts=2,
        kl_max_new_tokens=8,
        learning_rate=5e-3,
        drift_prompts=20,
        drift_max_tokens=8,
        eval_items=12,
        eval_max_tokens=6,
        output_name="tiny-child",
    )
    view = wait(ctx.db, job, timeout=1500)  # training and the report; many minutes on a loaded machine
    assert view.status == "succeeded", view.error or view.log_tail
    ctx.db.dispose()
    proc, url = start_server(home)
    try:
        page = open_model(browser, url, "tiny-child")
        page.wait_for_function(
            "document.querySelector('#models-report') && "
            "document.querySelector('#models-report').innerText.includes('Verdict')",
            timeout=STEP_MS,
        )
        lineage = page.locator("#models-lineage").inner_text()
        assert "tiny-parent" in lineage and "8 pairs" in lineage and f"Job {job}" in lineage
        report = page.locator("#models-report").inner_text()
        assert "Drift vs tiny-parent on 20 held-out prompts" in report
        assert "change [95% CI]" in report and "inherited" in report
        assert "Discovered changes" in report
        # what the job's own snapshot rewarded ("Great question! ..." over "No."), tested on the child
        rewarded = report.split("What its preferences rewarded", 1)[1].split("Judge-described", 1)[0]
        assert "Named from the 8 training pairs" in rewarded and "“great …”" in rewarded, rewarded[:400]
        # no judge in this job: the judge-described differences say why they are missing
        described = report.split("Judge-described differences", 1)[1]
        assert described.lstrip().startswith("Not measured: no judge configured"), described[:200]
        assert "Verifiable evals vs parent" in report and "on the same 12 items" in report
        header = page.locator("#models-header").inner_text()
        assert any(v in header for v in ("pass", "watch", "regress", "unknown"))
        assert "Rating" in page.locator("#models-rating").inner_text()
        page.get_by_text("Hold or let into anonymous battles").click()
        page.locator("#models-reason textarea").fill("looked at the answers")
        page.locator("#models-hold").click()
        page.wait_for_function(
            "document.querySelector('#models-header').innerText.includes('looked at the answers')",
            timeout=STEP_MS,
        )
        page.close()
    finally:
        proc.terminate()
        proc.wait(10)
