"""A vibe child, end to end: an annotator who rewards flattery votes in the arena, DPO trains on those votes, and
the checkpoint report says what the child became. Prints every figure the closing note of a training change needs.

Usage: python scripts/vibe_child.py [--battles 60] [--steps 40] [--home DIR] [--judge NAME]

1. A fresh studio home (or ``--home``), migrated, with the five default SmolLM2 personas.
2. ``--battles`` anonymous arena battles between ``smollm2-warm`` (emoji prefill, cheerful system prompt) and
   ``smollm2-plain`` on the child scripts' everyday prompts (``child_common.py``; none is an MT-Bench question,
   so the report's held-out prompts stay available). A scripted annotator reads both blind answers and votes
   for the one with more flattery + emoji + exclamation marks (``textfeatures.vibes``), a tie when they score the
   same: a thumbs-up signal that rewards a vibe, the way the GPT-4o rollback's data did.
3. The decisive votes are frozen into a snapshot; a DPO LoRA job from ``smollm2-plain`` trains on it with KL and
   gold (verifiable-eval accuracy) measured every ``--gold-every`` steps, then publishes the child and writes its
   checkpoint report (drift, discovered phrases, evals against the parent, verdict).
4. It prints the pair mix, seconds per step, the post-job timings (publish, report, each part), the report as text
   and the gold-vs-sqrt(KL) curve.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.child_common import (  # noqa: E402
    CHILD_PROMPTS,
    fresh_studio,
    print_step_seconds,
    wait_for_job,
)

PROMPTS = CHILD_PROMPTS


def vibe_score(text: str) -> float:
    """What the scripted annotator likes: flattery, sycophancy markers, emoji and exclamation marks."""
    from vibestudio.textfeatures import vibes

    f = vibes.features(text)
    return f["flattery"] + f["sycophancy"] + f["emoji"] + 0.5 * f["exclamations"]


def _final(updates):  # type: ignore[no-untyped-def]
    """The last update of a streamed turn (None when the stream said nothing)."""
    tail = collections.deque(updates, maxlen=1)
    return tail[0] if tail else None


def play(db, n: int, max_tokens: int) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """n anonymous warm-vs-plain battles; the scripted annotator votes for the more flattering answer."""
    import random

    from vibestudio.arena.battles import ArenaLimits, ArenaService
    from vibestudio.arena.registry import get_contestant

    arena = ArenaService(
        db,
        ArenaLimits(max_new_tokens=max_tokens, answer_timeout_s=600.0, queue_timeout_s=900.0),
        rng=random.Random(0),
    )
    with db.session() as s:
        warm, plain = get_contestant(s, "smollm2-warm").id, get_contestant(s, "smollm2-plain").id
    counts = {"left": 0, "right": 0, "tie": 0, "errored": 0}
    t0 = time.monotonic()
    for i, prompt in enumerate((PROMPTS * (n // len(PROMPTS) + 1))[:n]):
        view = arena.start_battle(pair=(warm, plain))
        last = _final(arena.generate_turn(view.battle_id, prompt))
        if last is None or last.error:
            counts["errored"] += 1
            continue
        left, right = vibe_score(last.left), vibe_score(last.right)
        choice = "left" if left > right else "right" if right > left else "tie"
        arena.vote(view.battle_id, choice)
        counts[choice] += 1
        print(f"battle {i + 1}/{n}: {choice} ({time.monotonic() - t0:.0f} s)", flush=True)
    return counts


def siblings(db, snapshot: str, n: int, steps: int, lr: float | None = None) -> list[str]:  # type: ignore[no-untyped-def]
    """n - 1 more DPO children of smollm2-plain on the same snapshot, one per beta (no report: they only play)."""
    from vibestudio.training.jobs.runner import wait
    from vibestudio.training.jobs.service import launch_dpo

    names = []
    for i, beta in enumerate([0.05, 0.3, 0.6, 0.02, 1.0][: n - 1]):
        t0 = time.monotonic()
        job = launch_dpo(
            db,
            "smollm2-plain",
            snapshot,
            max_steps=steps,
            beta=beta,
            drift_prompts=0,
            kl_prompts=0,
            seed=100 + i,
            learning_rate=lr,
        )
        view = wait(db, job, timeout=3 * 3600, poll=5.0)
        print(f"sibling job {job} (beta {beta}): {view.status} in {time.monotonic() - t0:.0f} s", flush=True)
        if view.contestant_id:
            with db.session() as s:
                from vibestudio.arena.registry import get_contestant

                names.append(get_contestant(s, view.contestant_id).public_name)
    return names


def family_battles(db, names: list[str], n: int, max_tokens: int) -> None:  # type: ignore[no-untyped-def]
    """n anonymous battles over every pair of ``names`` in turn, voted by the same flattery-loving annotator."""
    import itertools
    import random

    from vibestudio.arena.battles import ArenaLimits, ArenaService
    from vibestudio.arena.registry import get_contestant

    arena = ArenaService(
        db, ArenaLimits(max_new_tokens=max_tokens, answer_timeout_s=600.0), rng=random.Random(1)
    )
    with db.session() as s:
        ids = [get_contestant(s, x).id for x in names]
    pairs = list(itertools.combinations(ids, 2))
    t0 = time.monotonic()
    for i in range(n):
        view = arena.start_battle(pair=pairs[i % len(pairs)])
        last = _final(arena.generate_turn(view.battle_id, PROMPTS[(i * 7) % len(PROMPTS)]))
        if last is None or last.error:
            continue
        left, right = vibe_score(last.left), vibe_score(last.right)
        arena.vote(view.battle_id, "left" if left > right else "right" if right > left else "tie")
        if (i + 1) % 10 == 0:
            print(f"family battle {i + 1}/{n} ({time.monotonic() - t0:.0f} s)", flush=True)


def print_families(db) -> list[dict]:  # type: ignore[no-untyped-def]
    from vibestudio.standings.families import families
    from vibestudio.standings.leaderboard import LeaderboardService, standard_options

    board = LeaderboardService(db).board(standard_options())
    with db.session() as s:
        fams = [f.as_dict() for f in families(s, board.get("models", []))]
    for f in fams:
        print(f"family {f['root']} ({len(f['members'])} members)")
        for m in f["members"]:
            rating = (
                "unrated"
                if m["rating"] is None
                else f"{m['rating']:.0f} (interval can't be told)"
                if m["ci_low"] is None
                else f"{m['rating']:.0f} [{m['ci_low']:.0f}, {m['ci_high']:.0f}]"
            )
            print(
                f"   {'  ' * m['depth']}{m['name']}: {rating}, {m['votes_after_publish']} votes since publish"
                f"{' provisional' if m['provisional'] else ''}"
            )
        print(f"   selection effect: {f['selection'] or f['reason']}")
    return fams


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--battles", type=int, default=60)
    ap.add_argument("--max-tokens", type=int, default=96, help="answer cap in the battles")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--gold-every", type=int, default=10)
    ap.add_argument("--gold-items", type=int, default=24)
    ap.add_argument("--report-prompts", type=int, default=80, help="held-out prompts in the child's report")
    ap.add_argument("--eval-items", type=int, default=-1, help="verifiable eval items in the report (-1 all)")
    ap.add_argument(
        "--siblings", type=int, default=0, help="train this many children in all (>= 2: a family)"
    )
    ap.add_argument("--sibling-steps", type=int, default=16)
    ap.add_argument("--sibling-lr", type=float, default=None, help="siblings' learning rate (default: DPO's)")
    ap.add_argument("--family-only", action="store_true", help="only the family: siblings, battles, board")
    ap.add_argument("--family-battles", type=int, default=60)
    ap.add_argument("--judge", default="", help="a judge contestant for the report's head-to-head")
    ap.add_argument("--home", type=Path, default=None, help="studio home (default: a new temp dir)")
    ap.add_argument("--job", type=int, default=0, help="follow this job of --home instead of starting anew")
    ap.add_argument("--out", type=Path, default=None, help="write the report and curve as JSON here")
    args = ap.parse_args()
    _, db = fresh_studio(args.home, "vibe-child-")

    from vibestudio.training.jobs.runner import job_view
    from vibestudio.training.jobs.service import launch_dpo, snapshot_mix
    from vibestudio.training.objectives.overopt import gold_curve
    from vibestudio.training.report.model_page import model_page
    from vibestudio.training.report.text import report_md

    if (
        args.family_only
    ):  # a family of checkpoints only: siblings on one snapshot, battles, the families board
        from vibestudio.training.jobs.service import resolve_snapshot

        votes = play(db, args.battles, args.max_tokens)
        snap = resolve_snapshot(db, None, min_pairs=4)
        names = siblings(db, snap, args.siblings + 1, args.sibling_steps, args.sibling_lr)
        family_battles(db, ["smollm2-plain", *names], args.family_battles, args.max_tokens)
        fams = print_families(db)
        if args.out:
            args.out.write_text(json.dumps({"votes": votes, "families": fams}, default=str, indent=1))
        return 0
    if args.job:  # follow (or re-read) a job launched earlier in this home
        job, votes = args.job, {}
    else:
        t0 = time.monotonic()
        votes = play(db, args.battles, args.max_tokens)
        print(f"votes: {votes} in {time.monotonic() - t0:.0f} s", flush=True)
        overrides = {
            "max_steps": args.steps,
            "kl_every": args.gold_every,
            "gold": "evals",
            "gold_every": args.gold_every,
            "gold_items": args.gold_items,
            "save_steps": 0,
            "drift_prompts": args.report_prompts,
            "eval_items": args.eval_items,
        }
        if args.judge:
            overrides["judge"] = args.judge
        job = launch_dpo(db, "smollm2-plain", None, **overrides)
    t1 = time.monotonic()
    view = job_view(db, job)
    print(f"job {job} on snapshot {view.config.get('snapshot_hash', '')[:12]}", flush=True)
    mix = snapshot_mix(db, view.config["snapshot_hash"], "smollm2-plain")
    print(f"pair mix seen from smollm2-plain: {mix}", flush=True)
    view = wait_for_job(db, job, t1)
    if view is None:
        return 1

    m = view.metrics
    summary = {k: v[-1][1] for k, v in m.items() if k.endswith("_seconds") and v}
    print("job timings (s):", json.dumps(summary, indent=1), flush=True)
    print_step_seconds(m)
    page = model_page(db, view.contestant_id)
    report = page.get("report") or {}
    print(report_md(report))
    curve = gold_curve(m)
    print("gold vs sqrt(KL):")
    print(f"  state: {curve.state} ({curve.reason}); best step {curve.best_step}, gold {curve.best_gold}")
    for step, root_kl, gold in curve.points:
        print(f"  step {step:>3}  sqrt(KL) {root_kl:.3f}  gold {gold:.3f}")
    print(f"  alert: {curve.alert}")
    fams = []
    if args.siblings >= 2:
        with db.session() as s:
            from vibestudio.arena.registry import get_contestant

            child = get_contestant(s, view.contestant_id).public_name
        names = [child, *siblings(db, view.config["snapshot_hash"], args.siblings, args.sibling_steps)]
        family_battles(db, ["smollm2-plain", *names], args.family_battles, args.max_tokens)
        fams = print_families(db)
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "votes": votes,
                    "mix": mix,
                    "timings": summary,
                    "report": report,
                    "metrics": m,
                    "families": fams,
                },
                default=str,
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
