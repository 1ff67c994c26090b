"""The checkpoint report as a job: its settings, the run that makes, saves and records it, and the ``report``
job.

``ReportOptions`` are the report settings of a job config (``training.report.options``). ``run_report`` makes a
published checkpoint's report against its parent (``training.report.steps.drift_report``). It saves it
beside the contestant. It records its verdict (``training.report.verdict.record``), which releases or
holds the contestant. It never raises.

Two paths run it, both from ``training.publishing.publish``, the one publish path:
- At the end of a job, the job process (``training.jobs.job_process``) runs it in its own process right
  after publishing.
- A checkpoint published on the way gets a queued ``report`` job, in the publish's own transaction:
  ``report_job_settings`` is its config, queued by the job runner's one path (``runner.queue``). The
  queue starts it like any job. Its process runs ``run_report_job``, and finishes the job itself.
This room never imports the job runner: the jobs room calls down into it, not the other way.
``after_probes`` decides again the verdicts that sycophancy probes stored since can change.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import select

from vibestudio.db.models import Contestant, utcnow
from vibestudio.db.session import Database
from vibestudio.training.report import steps, verdict
from vibestudio.training.report.options import REPORT_FIELDS, ReportOptions

__all__ = [
    "REPORT_FIELDS",
    "ReportOptions",
    "after_probes",
    "report_job_settings",
    "run_report",
    "run_report_job",
]


def run_report(
    db: Database,
    contestant_id: int,
    options: ReportOptions,
    *,
    on_metrics: Callable[[dict[str, float]], object] | None = None,
    say: Callable[[str], None] = lambda msg: print(f"[report] {msg}", flush=True),
) -> str:
    """The checkpoint report vs the parent, saved, and its verdict recorded (which releases or holds the
    contestant). Never raises: a report that cannot be made records "unknown" with the reason (held by
    default), and a skipped one (``drift_prompts: 0``) does too. Returns the contestant's state after."""
    from vibestudio.annotation.snapshots import get_snapshot, load_snapshot

    t0 = time.perf_counter()
    try:
        rules = verdict.load_rules(options.verdict_rules or None)
    except Exception as exc:
        return verdict.record(db, contestant_id, verdict.no_report(f"the verdict rules: {exc}", False))
    from vibestudio.training.publishing import fidelity

    untrained = fidelity.not_as_trained(db, contestant_id)
    if untrained is not None:  # the report would certify another model than the one the votes trained
        say(untrained)
        return verdict.record(db, contestant_id, verdict.no_report(untrained, False, rules))
    if options.drift_prompts <= 0:
        why = "the checkpoint report was skipped (drift_prompts: 0)"
        say(why)
        return verdict.record(db, contestant_id, verdict.no_report(why, True, rules))
    try:
        rows = None
        providers = None
        if options.tasks:  # RLVR: no snapshot; held-out task accuracy and reward hacking instead
            from vibestudio.training.tasks.checks import task_reward_override
            from vibestudio.training.tasks.report import task_measures

            n_tasks = options.heldout_tasks if options.heldout_tasks > 0 else -1
            override = task_reward_override(options)
            providers = [
                task_measures(options.tasks, override, n_tasks, options.eval_max_tokens, options.seed)
            ]
        elif options.snapshot_hash:
            with db.session() as s:
                snap = get_snapshot(s, options.snapshot_hash)
                snap_path, digest = snap.path, snap.hash
            rows = load_snapshot(snap_path, digest)
        if options.report_probes:
            _probe_pair(db, contestant_id, options, say)
        n_prompts, n_items = options.counts()
        report = steps.drift_report(
            db,
            contestant_id,
            n_prompts=n_prompts,
            max_tokens=options.drift_max_tokens,
            seed=options.seed,
            thresholds=options.drift_thresholds,
            exclude=rows,
            eval_items=n_items,
            eval_max_tokens=options.eval_max_tokens,
            judge=options.judge or None,
            describe_axes=options.describe_axes,
            describe_prompts=options.describe_prompts,
            rules_path=options.verdict_rules or None,
            providers=providers,
            progress=say,
        )
        if options.detect_drift_sd is not None or options.detect_eval_change is not None:
            report.setup.setdefault("power", {})["chosen_for"] = {
                "drift_sd": options.detect_drift_sd,
                "eval_change": options.detect_eval_change,
                "prompts": n_prompts,
                "items": n_items,
            }
        path = steps.save_report(report, steps.report_folder(db, contestant_id))
        if on_metrics is not None:
            values = {f"drift/{name}": f.delta for name, f in report.features.items()}
            if report.evals:
                values["evals/accuracy_delta"] = report.evals["delta"]
            code = {"pass": 0, "watch": 1, "regress": 2, "unknown": 3}[report.verdict_name]
            on_metrics(
                {
                    **values,
                    "drift/flagged": len(report.flagged),
                    "drift_seconds": report.seconds,
                    "report_decoded_share": steps.decoded_share(report),
                    "report_parent_kept": float(steps.parent_kept(report)),
                    "verdict/code": code,
                }
            )
        state = verdict.record(db, contestant_id, verdict.Verdict(**report.verdict), str(path), report=report)
        say(f"{report.summary()} ({report.seconds:.1f} s) -> {state}")
        return state
    except Exception as exc:
        traceback.print_exc()
        why = f"the checkpoint report failed after {time.perf_counter() - t0:.1f} s: {type(exc).__name__}: {exc}"
        say(why)
        try:
            return verdict.record(db, contestant_id, verdict.no_report(why, False, rules))
        except Exception:
            traceback.print_exc()  # the contestant was deleted meanwhile, or the database is gone
            return "unknown"


def _probe_pair(db: Database, contestant_id: int, options: ReportOptions, say: Callable[[str], None]) -> None:
    """Run the sycophancy probes (a small spread of items) on the child and its parent, so the report's
    ``sycophancy/*`` measures are measured rather than left as gaps."""
    from vibestudio.standings.probes import PROBES, run_probe

    with db.session() as s:
        row = s.get_one(Contestant, contestant_id)
        names = [row.public_name]
        if row.parent_id is not None and s.get(Contestant, row.parent_id) is not None:
            names.append(s.get_one(Contestant, row.parent_id).public_name)
    for probe in PROBES:
        for name in names:
            run = run_probe(db, probe, name, limit=options.probe_items, max_tokens=options.probe_max_tokens)
            say(f"probe {probe} on {name}: {len(run.measurements)} measurements in {run.seconds:.1f} s")


def run_report_job(db: Database, config_path: str) -> str | None:
    """A ``report`` job's process: run the report of the contestant it names. Returns why the job itself is
    unusable (it fails, and the sweep holds the contestant), or None; the job process finishes the job."""
    data = yaml.safe_load(Path(config_path).read_text(encoding="utf-8")) or {}
    contestant_id = int(data["contestant_id"])
    with db.session() as s:
        if s.get(Contestant, contestant_id) is None:
            return f"contestant {contestant_id} no longer exists"
    state = run_report(db, contestant_id, ReportOptions.from_config(data))
    print(
        f"[report] contestant {contestant_id} is {state} at {utcnow().isoformat(timespec='seconds')}",
        flush=True,
    )
    return None


def after_probes(
    db: Database, name: str, *, user_id: int | None = None, by: str | None = None
) -> list[tuple[str, str]]:
    """Probes were stored for ``name``: decide again the verdict of it and of its children (whose reports
    compare with it), record the new ones and apply their hold. Returns (contestant, state) for each change.
    ``user_id`` or ``by`` is who stored the probes (``verdict.record_verdict``)."""
    with db.session() as s:
        row = s.scalar(select(Contestant).where(Contestant.public_name == name))
        if row is None:
            return []
        ids = [row.id, *s.scalars(select(Contestant.id).where(Contestant.parent_id == row.id))]
        names = dict(s.execute(select(Contestant.id, Contestant.public_name)).tuples().all())
    out = []
    for cid in ids:
        state = steps.reevaluate(db, cid, user_id=user_id, by=by)
        if state is not None:
            out.append((names[cid], state))
    return out


def report_job_settings(
    contestant_id: int, source_job: int, step: int, config: dict[str, Any]
) -> dict[str, Any]:
    """The config of a ``report`` job for ``contestant_id``, a checkpoint saved at ``step`` of job ``source_job``,
    with that job's report settings (``config``: its job config). The publish path queues it through the job
    runner (``training.jobs.runner.queue``), in the publish's own transaction."""
    return {
        "kind": "report",
        "contestant_id": contestant_id,
        "source_job": source_job,
        "step": step,
        **{k: config[k] for k in REPORT_FIELDS if k in config},
    }
