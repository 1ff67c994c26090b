"""How far off the pre-launch time estimate is on real jobs: N small jobs, one after another, in a fresh studio.

    python scripts/estimate_error.py                 # 10 jobs (DPO LoRA / full, reward model), 2-16 steps
    python scripts/estimate_error.py --jobs 4 --json estimate.json

A fresh data home with a SQLite studio, a tiny random Llama (hidden 64, 2 layers, the real SmolLM2 tokenizer)
registered as ``tiny-parent`` and 8 frozen preference pairs, as the tests make them. Each job goes the way the
Train tab and ``vibestudio train`` go: ``training.jobs.service.check_config`` (whose estimate is the one the form and
``--dry-run`` show at that moment, calibrated on the jobs before it), then ``launch_config``, then the detached
job process trains, publishes and writes the checkpoint report. The measured time runs from the launch until the job
is ``succeeded`` (report included). At the end: a table (job, kind, steps, estimate, measured, ratio measured /
estimate) and the studio's own ``past_error`` line, "last N jobs: median error x..., worst x...".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: (kind, LoRA, max_steps), cycled: sizes vary from 2 to 16 steps, DPO with LoRA and full, and a reward model.
PLAN: list[tuple[str, bool, int]] = [
    ("dpo", True, 2),
    ("dpo", True, 6),
    ("dpo", False, 2),
    ("reward", True, 4),
    ("dpo", True, 12),
    ("dpo", False, 6),
    ("reward", True, 16),
    ("dpo", True, 16),
    ("dpo", False, 10),
    ("dpo", True, 4),
]
#: Small enough for a loaded 2-core machine: short rows, a short KL check, the smallest report that measures drift
#: (``training.report.minimums.MIN_PROMPTS`` prompts) with 4 eval items.
SMALL: dict[str, Any] = {
    "per_device_train_batch_size": 2,
    "max_length": 64,
    "learning_rate": 5e-3,
    "drift_prompts": 20,
    "drift_max_tokens": 6,
    "eval_items": 4,
    "eval_max_tokens": 6,
}
DPO_ONLY: dict[str, Any] = {"kl_prompts": 2, "kl_max_new_tokens": 8}


def job_config(kind: str, lora: bool, steps: int, snapshot: str) -> dict[str, Any]:
    """The config the Train form would send for one planned job."""
    cfg = {"kind": kind, "parent_contestant": "tiny-parent", "snapshot_hash": snapshot, "lora": lora}
    cfg.update(SMALL, max_steps=steps)
    if kind == "dpo":
        cfg.update(DPO_ONLY)
    return cfg


def run(n_jobs: int, work: Path, timeout: float) -> dict[str, Any]:
    """Run ``n_jobs`` jobs of ``PLAN`` (cycled) in a fresh studio under ``work``; the rows and the error line."""
    from tqdm import tqdm

    from tests.helpers.models import ensure_tokenizer_dir, make_tiny_llama
    from tests.helpers.servers import seed_tiny_parent
    from vibestudio.db.session import Database
    from vibestudio.training.jobs.estimate import past_error
    from vibestudio.training.jobs.preflight import past_timings
    from vibestudio.training.jobs.runner import wait
    from vibestudio.training.jobs.service import check_config, launch_config

    db = Database(f"sqlite:///{work / 'studio.sqlite'}")
    model_dir = make_tiny_llama(ensure_tokenizer_dir(work / "tok"), work / "tiny-llama")
    snapshot = seed_tiny_parent(db, model_dir)
    rows: list[dict[str, Any]] = []
    for i in tqdm(range(n_jobs), desc="jobs", unit="job"):
        kind, lora, steps = PLAN[i % len(PLAN)]
        cfg = job_config(kind, lora, steps, snapshot)
        check = check_config(db, cfg)
        if check.errors or check.estimate is None:
            raise SystemExit(
                f"job {i + 1} ({kind}) refused before launch: {check.message() or 'no estimate'}"
            )
        est = check.estimate
        start = time.monotonic()
        job_id = launch_config(db, cfg)
        view = wait(db, job_id, timeout=timeout, poll=0.2)
        measured = time.monotonic() - start
        if view.status != "succeeded":
            raise SystemExit(f"job {job_id} ({kind}) {view.status}: {view.error or view.log_tail}")
        rows.append(
            {
                "job": job_id,
                "kind": f"{kind} {'LoRA' if lora else 'full'}",
                "steps": steps,
                "estimate_s": round(est.total_seconds, 1),
                "estimate_train_s": round(est.train_seconds, 1),
                "estimate_report_s": round(est.report_seconds, 1),
                "basis": est.basis,
                "measured_s": round(measured, 1),
                "ratio": round(measured / max(est.total_seconds, 1e-6), 2),
                "load_average": round(os.getloadavg()[0], 1),
            }
        )
    with db.session() as s:
        timings = past_timings(s)
    error = past_error(timings, last=n_jobs)
    recorded = {t.job_id: t for t in timings}
    for row in rows:
        t = recorded.get(row["job"])
        row["studio_took_s"] = round(t.took, 1) if t else None
        row["studio_report_s"] = round(t.report, 1) if t and t.report is not None else None
    return {
        "jobs": rows,
        "past_error": error.line() if error else None,
        "past_error_jobs": error.jobs if error else [],
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
    }


def table(rows: list[dict[str, Any]]) -> str:
    head = f"{'job':>4} {'kind':<11} {'steps':>5} {'estimate s':>10} {'measured s':>10} {'ratio':>6}  basis"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['job']:>4} {r['kind']:<11} {r['steps']:>5} {r['estimate_s']:>10.1f} {r['measured_s']:>10.1f} "
            f"{r['ratio']:>6.2f}  {r['basis']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--jobs", type=int, default=10, help="how many jobs to run, one after another (default 10)"
    )
    ap.add_argument("--json", type=Path, help="also write the table and the error line here")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds one job may take (default 600)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary studio (its folder is printed)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    work = Path(tempfile.mkdtemp(prefix="vibestudio-estimate-"))
    os.environ["VIBESTUDIO_HOME"] = str(work / "home")
    os.environ.pop("VIBESTUDIO_DATABASE_URL", None)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    started = time.monotonic()
    try:
        result = run(args.jobs, work, args.timeout)
    finally:
        if args.keep:
            print(f"the studio is kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    result["wall_s"] = round(time.monotonic() - started, 1)
    print(table(result["jobs"]))
    print(f"studio's own figure: {result['past_error']}")
    print(
        f"{args.jobs} job{'s' if args.jobs != 1 else ''} in {result['wall_s']:.0f} s; load average {os.getloadavg()[0]:.1f} at the end"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
