"""The over-optimisation view in the Train tab and CLI: a job whose gold peaked and fell shows the alert in the jobs
list, the job view text and figure, and `vibestudio train health`; a job without gold shows none of it."""

from __future__ import annotations

import json
import math

from typer.testing import CliRunner

from vibestudio.db.models import Job, JobMetric
from vibestudio.db.session import Database
from vibestudio.studio.cli import app
from vibestudio.studio.context import build_context
from vibestudio.studio.pages.gold import gold_figure, gold_markdown
from vibestudio.studio.pages.train import _jobs_table


def _gold(d: float) -> float:
    return 0.2 + (d * (0.5 - 0.3 * math.log(d)) if d > 0 else 0.0)


def _add_job(db: Database, with_gold: bool) -> int:
    with db.session() as s:
        job = Job(kind="dpo", status="running")
        s.add(job)
        s.flush()
        for step in range(0, 21, 2):
            s.add(JobMetric(job_id=job.id, step=step, name="kl", value=0.5 * step))
            s.add(JobMetric(job_id=job.id, step=step, name="rewards/margins", value=0.1 * step))
            if with_gold:
                s.add(JobMetric(job_id=job.id, step=step, name="gold", value=_gold(math.sqrt(0.5 * step))))
        return job.id


def test_alert_reaches_jobs_list_job_view_and_cli():
    ctx = build_context()
    bad, fine = _add_job(ctx.db, True), _add_job(ctx.db, False)
    table = _jobs_table(ctx).set_index("id")
    assert "gold peaked at step 8" in table.loc[bad, "alerts"] and table.loc[fine, "alerts"] == ""
    with ctx.db.session() as s:
        metrics: dict = {}
        for m in s.query(JobMetric).filter(JobMetric.job_id == bad).order_by(JobMetric.step):
            metrics.setdefault(m.name, []).append((m.step, m.value))
    text = gold_markdown(metrics)
    assert text.startswith("⚠️ over-optimisation: gold peaked") and "**falling**" in text
    fig = gold_figure(metrics)
    assert fig is not None and [t.name for t in fig.data] == ["gold", "fit (rl)"]
    assert gold_figure({"kl": metrics["kl"]}) is None and gold_markdown({"kl": metrics["kl"]}) == ""
    res = CliRunner().invoke(app, ["train", "health", str(bad), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["gold"]["state"] == "falling" and out["gold"]["best_step"] == 8 and len(out["alerts"]) == 1
    res = CliRunner().invoke(app, ["train", "health", str(fine)])
    assert "unmeasurable: no gold signal recorded" in res.output and "no alerts" in res.output
