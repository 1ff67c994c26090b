"""RLVR end to end on this machine: GRPO on generated tasks with checkable answers, held-out accuracy that shows
it learned, the report against the parent, one arena battle, and a planted gameable verifier.

Usage: python scripts/rlvr_proof.py [--home DIR] [--out DIR] [--steps 10] [--every 5] [--hack-steps 0]
       python scripts/rlvr_proof.py --home DIR --after-job N     # only step 5 and 6 for a finished job

1. A studio home (``--home``, else a fresh temporary one) with the default SmolLM2 personas.
2. ``tasks generate --family arithmetic`` at ``--difficulty`` (reused when the home has it): train / held-out
   split by content hash.
3. An honest GRPO LoRA job from ``smollm2-plain`` on the train split: the task reward (each task's own numeric
   verifier) plus a short-answer length reward (``--length-weight``); held-out accuracy (greedy,
   ``--heldout`` tasks, ``--heldout-tokens``) with a Wilson interval before the first step, every ``--every``
   steps and after the last, the change since step 0 with an exact McNemar test, printed as the job logs it.
4. The job publishes the child and runs its checkpoint report (held-out task accuracy vs the parent, general
   verifiable evals, drift, thinking aloud, reward-hacking signs, verdict); the script prints its measures.
5. One arena battle, child vs ``smollm2-plain`` on a held-out task the checks did not use, voted by the
   task's verifier (anonymous when the child was released, else named mode).
6. The planted hack, on the job's real held-out answers: the gameable numeric ``match: any`` verifier (any
   number in the answer that equals the reference passes) against each task's own, and the answers the
   report's ``rlvr/gamed`` counts. ``--hack-steps N`` also trains a second job against that verifier and
   reports it (another full job: on a shared 2-core machine, an hour more).
7. Saves everything to ``--out``/rlvr_proof.json: the curve, seconds per step with and without a held-out
   check before it, the report's measures, the battle, the hack check.

The defaults are sized for a loaded 2-core CPU (about 45 minutes at load average 15-20; see docs/training.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def curve(metrics: dict) -> list[dict]:
    acc = dict(metrics.get("heldout/accuracy", []))
    out = []
    for step, a in sorted(acc.items()):
        row = {"step": step, "accuracy": a}
        for k in ("low", "high", "n", "delta", "delta_low", "delta_high", "p", "several_numbers", "seconds"):
            v = dict(metrics.get(f"heldout/{k}", [])).get(step)
            if v is not None:
                row[k] = v
        out.append(row)
    return out


def step_seconds(metrics: dict, every: int) -> dict:
    """Seconds per training step; a step right after a held-out check carries the check's time."""
    secs = dict(metrics.get("step_seconds", []))
    checks = {s for s, _ in metrics.get("heldout/accuracy", [])}
    after = [v for s, v in secs.items() if (s - 1) in checks]
    plain = [v for s, v in secs.items() if (s - 1) not in checks and s > 1]
    mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
    total_check = sum(v for _, v in metrics.get("heldout/seconds", []))
    n = len(secs)
    return {
        "steps": n,
        "mean_step_s_without_check": mean(plain),
        "mean_step_s_after_check": mean(after),
        "heldout_check_s_mean": mean([v for _, v in metrics.get("heldout/seconds", [])]),
        "mean_step_s_all_in": (sum(secs.values()) / n) if n else None,
        "mean_step_s_train_only": ((sum(secs.values()) - total_check) / n) if n else None,
    }


def follow(db, job: int, deadline: float) -> None:  # type: ignore[no-untyped-def]
    """Print each held-out check and training step as the job logs it, until the job ends."""
    from vibestudio.training.jobs.runner import TERMINAL, job_view

    shown: set[tuple[str, int]] = set()
    while time.time() < deadline:
        view = job_view(db, job)
        for row in curve(view.metrics):
            if ("h", row["step"]) not in shown:
                shown.add(("h", row["step"]))
                print(f"[proof] held-out {fmt_row(row)}", flush=True)
        for step, secs in view.metrics.get("step_seconds", []):
            if ("s", step) not in shown:
                shown.add(("s", step))
                reward = dict(view.metrics.get("rewards/task/mean", [])).get(step)
                print(f"[proof] step {step}: {secs:.0f} s, task reward {reward}", flush=True)
        if view.status in TERMINAL:
            return
        time.sleep(20)


def fmt_row(row: dict) -> str:
    text = (
        f"step {row['step']}: accuracy {row['accuracy']:.3f} [{row.get('low', 0):.3f}, {row.get('high', 0):.3f}] "
        f"n={int(row.get('n', 0))}"
    )
    if "delta" in row:
        text += (
            f"; change since step 0 {row['delta']:+.3f} [{row.get('delta_low', 0):+.3f}, "
            f"{row.get('delta_high', 0):+.3f}], McNemar p={row.get('p', 1):.3g}"
        )
    if "seconds" in row:
        text += f" ({row['seconds']:.0f} s)"
    return text


def run_job(db, name: str, tasks: str, args, rewards: list[dict], steps: int) -> dict:  # type: ignore[no-untyped-def]
    from vibestudio.training.jobs.runner import job_view, wait
    from vibestudio.training.jobs.service import launch
    from vibestudio.training.report.steps import load_report

    t0 = time.time()
    job = launch(
        db,
        "grpo",
        "smollm2-plain",
        None,
        tasks=tasks,
        rewards=rewards,
        max_steps=steps,
        learning_rate=args.lr,
        per_device_train_batch_size=args.batch,
        num_generations=args.generations,
        max_completion_length=args.max_tokens,
        temperature=args.temperature,
        beta=args.beta,
        heldout_every=args.every,
        heldout_tasks=args.heldout,
        heldout_max_tokens=args.heldout_tokens,
        kl_prompts=2,
        kl_max_new_tokens=16,
        drift_max_tokens=args.heldout_tokens,
        drift_prompts=args.drift_prompts,
        eval_items=args.eval_items,
        eval_max_tokens=args.heldout_tokens,
        output_name=name,
    )
    print(f"[proof] job {job} ({name}) launched", flush=True)
    follow(db, job, t0 + args.timeout)
    view = wait(db, job, timeout=max(60.0, t0 + args.timeout - time.time()))
    print(f"[proof] job {job}: {view.status} in {time.time() - t0:.0f} s", flush=True)
    if view.status != "succeeded":
        print(view.error or view.log_tail, flush=True)
    view = job_view(db, job)
    out = {
        "job": job,
        "status": view.status,
        "wall_s": time.time() - t0,
        "curve": curve(view.metrics),
        "seconds": step_seconds(view.metrics, args.every),
        "train_reward": view.metrics.get("rewards/task/mean", []),
        "kl_heldout": view.metrics.get("kl_heldout", []),
        "completion_length": view.metrics.get("completions/mean_length", []),
        "error": view.error,
    }
    if view.contestant_id is not None:
        report = load_report(db, view.contestant_id)
        if report is not None:
            out["report"] = {
                "verdict": report.verdict,
                "summary": report.summary(),
                "rlvr": {k: v for k, v in report.measures.items() if k.startswith("rlvr/")},
                "evals": {
                    k: report.evals.get(k) for k in ("parent", "child", "delta", "low", "high", "p", "n")
                },
                "flagged": report.flagged,
                "features": {
                    k: {
                        "parent": f.parent,
                        "child": f.child,
                        "delta": f.delta,
                        "low": f.low,
                        "high": f.high,
                        "q": f.q,
                    }
                    for k, f in report.features.items()
                },
                "unmeasured": report.unmeasured,
            }
    return out


def arena_battle(db, child: int, task) -> dict:  # type: ignore[no-untyped-def]
    """One arena battle, the child against smollm2-plain on a held-out task; the task's verifier votes (the
    side whose answer it passes; a tie when both or neither pass). Anonymous when the child is released, else
    named mode (a held or pending checkpoint plays only there, for researchers)."""
    import collections
    import random

    from vibestudio.arena.battles import ArenaLimits, ArenaService
    from vibestudio.arena.registry import get_contestant
    from vibestudio.training.tasks.verifiers import verify

    arena = ArenaService(db, ArenaLimits(max_new_tokens=64, answer_timeout_s=900.0), rng=random.Random(0))
    with db.session() as s:
        kid = get_contestant(s, child)
        parent = get_contestant(s, "smollm2-plain").id
        mode = "anonymous" if kid.state == "released" else "named"
    view = arena.start_battle(pair=(child, parent), mode=mode)
    tail = collections.deque(arena.generate_turn(view.battle_id, task.prompt), maxlen=1)
    last = tail[0] if tail else None
    if last is None or last.error:
        return {"mode": mode, "error": last.error if last else "no answer"}
    left = verify(task.verifier, last.left, task.answer).passed
    right = verify(task.verifier, last.right, task.answer).passed
    choice = "left" if left and not right else "right" if right and not left else "tie"
    reveal = arena.vote(view.battle_id, choice)
    return {
        "battle": view.battle_id,
        "mode": mode,
        "prompt": task.prompt,
        "reference": task.answer,
        "left": {"name": reveal.left_name, "answer": last.left, "correct": left},
        "right": {"name": reveal.right_name, "answer": last.right, "correct": right},
        "vote": choice,
        "outcome": reveal.outcome,
    }


def hack_on_answers(db, job: int, task_set: str) -> dict:  # type: ignore[no-untyped-def]
    """The planted gameable verifier (numeric ``match: any``) against each task's own one, on the real answers
    of the job's last held-out check: the answers it passes that the honest verifier fails are what the report's
    ``rlvr/gamed`` counts (``training.tasks.scoring.gaming``), with an exact McNemar test of the two pass rates."""
    from vibestudio.common.stats import mcnemar_p
    from vibestudio.training.jobs.runner import job_dir
    from vibestudio.training.tasks.scoring import check_all, gaming
    from vibestudio.training.tasks.store import load_tasks

    saved = json.loads((job_dir(job) / "heldout_answers.json").read_text(encoding="utf-8"))
    by_idx = {t.idx: t for t in load_tasks(db, task_set, "heldout")}
    tasks = [by_idx[a["task"]] for a in saved]
    answers = [a["answer"] for a in saved]
    hack = {"type": "numeric", "match": "any"}
    flags = gaming(tasks, answers, hack)
    own = [c.passed for c in check_all(tasks, answers)]
    gameable = [c.passed for c in check_all(tasks, answers, hack)]
    n = len(answers)
    examples = [
        {"prompt": t.prompt, "reference": t.answer, "answer": a}
        for t, a, g in zip(tasks, answers, flags["gamed"], strict=True)
        if g
    ]
    return {
        "n": n,
        "own_verifier_accuracy": sum(own) / n,
        "gameable_verifier_accuracy": sum(gameable) / n,
        "gamed": sum(flags["gamed"]),
        "several_numbers": sum(flags["several_numbers"]),
        "mcnemar_p": mcnemar_p(own, gameable),
        "examples": examples[:4],
    }


def post(db, job: int, task_set: str, results: dict, battle: bool = True) -> None:  # type: ignore[no-untyped-def]
    """After the honest job: its curve and report printed, one arena battle, the hack check on its answers."""
    from vibestudio.training.jobs.runner import job_view
    from vibestudio.training.report.steps import load_report
    from vibestudio.training.tasks.store import load_tasks

    view = job_view(db, job)
    print("[proof] held-out accuracy curve (greedy, each task's own verifier, Wilson 95%):", flush=True)
    for row in curve(view.metrics):
        print(f"[proof]   {fmt_row(row)}", flush=True)
    print(f"[proof] seconds: {json.dumps(step_seconds(view.metrics, 0))}", flush=True)
    if view.contestant_id is None:
        print(f"[proof] job {job} published no contestant ({view.status}); no battle", flush=True)
    else:
        report = load_report(db, view.contestant_id)
        if report is not None:
            keep = ("rlvr/", "reasoning/", "evals/", "drift/tokens", "degeneration/truncated")
            shown = {k: v for k, v in report.measures.items() if k.startswith(keep) and k != "rlvr/examples"}
            print(f"[proof] report verdict {report.verdict_name}: {report.summary()}", flush=True)
            for k, v in sorted(shown.items()):
                print(f"[proof]   {k}: {json.dumps(v, default=str)}", flush=True)
            results.setdefault("honest", {})["report_measures"] = shown
        if battle:
            task = load_tasks(db, task_set, "heldout")[
                -1
            ]  # past the checked ones when the set is large enough
            results["battle"] = arena_battle(db, view.contestant_id, task)
            print(f"[proof] arena battle: {json.dumps(results['battle'])}", flush=True)
    try:
        results["hack_on_answers"] = hack_on_answers(db, job, task_set)
        print(f"[proof] planted hack on real answers: {json.dumps(results['hack_on_answers'])}", flush=True)
    except FileNotFoundError:
        print("[proof] no held-out answers saved; no hack check", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", default=None)
    ap.add_argument("--out", default=".")
    ap.add_argument("--family", default="arithmetic")
    ap.add_argument("--difficulty", type=int, default=1)
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--hack-steps", type=int, default=0)
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--heldout", type=int, default=48)
    ap.add_argument("--lr", type=float, default=8e-4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--generations", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=48, help="tokens per sampled training answer")
    ap.add_argument(
        "--heldout-tokens", type=int, default=40, help="answer cap of held-out checks and the report"
    )
    ap.add_argument("--temperature", type=float, default=0.7, help="sampling temperature of the group")
    ap.add_argument("--beta", type=float, default=0.0, help="KL penalty (0: no reference forward, faster)")
    ap.add_argument(
        "--length-weight", type=float, default=0.25, help="weight of a short-answer reward (0: off)"
    )
    ap.add_argument("--drift-prompts", type=int, default=20)
    ap.add_argument("--eval-items", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=7200)
    ap.add_argument("--skip-honest", action="store_true")
    ap.add_argument("--no-battle", action="store_true", help="with --after-job: no second battle")
    ap.add_argument(
        "--after-job", type=int, default=None, help="only the battle and the answer-level hack check"
    )
    args = ap.parse_args()
    os.environ["VIBESTUDIO_HOME"] = (
        str(Path(args.home).resolve()) if args.home else tempfile.mkdtemp(prefix="rlvr-proof-")
    )
    from vibestudio.studio.context import build_context
    from vibestudio.training.tasks import generate_task_set, get_task_set, list_task_sets

    ctx = build_context()
    db = ctx.db
    name = f"{args.family}-d{args.difficulty}"
    if name in {t.name for t in list_task_sets(db)}:  # a second run in the same home reuses its set
        info = get_task_set(db, name)
        print(f"[proof] task set {name!r}: {info.n_train} train / {info.n_heldout} held-out", flush=True)
    else:
        info = generate_task_set(db, args.family, args.n, name, difficulty=args.difficulty, seed=0).set
        print(f"[proof] task set {name!r}: {info.n_train} train / {info.n_heldout} held-out", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "rlvr_proof.json"
    results: dict = json.loads(path.read_text(encoding="utf-8")) if args.after_job and path.exists() else {}
    results.update({"task_set": info.to_dict(), "args": vars(args)})

    def save() -> None:
        path.write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")

    job = args.after_job
    if job is None and not args.skip_honest:
        honest: list[dict] = [{"type": "task"}]
        if args.length_weight > 0:
            honest.append(
                {"type": "length", "min": 1, "max": 30, "unit": "words", "weight": args.length_weight}
            )
        results["honest"] = run_job(db, "smollm2-rlvr", name, args, honest, args.steps)
        job = results["honest"]["job"]
        save()
    if job is not None:
        post(db, job, name, results, battle=not args.no_battle)
        save()
    if args.after_job is None and args.hack_steps > 0:
        hack = [{"type": "task", "verifier": {"type": "numeric", "match": "any"}}]
        results["hack"] = run_job(db, "smollm2-rlvr-hack", name, args, hack, args.hack_steps)
        save()
    print(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
