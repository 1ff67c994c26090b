"""Objectives side by side on SmolLM2, from arena votes: real battles among the default personas, votes by a planted
taste, then DPO, KTO, ORPO and SimPO children of ``smollm2-plain`` trained on one freeze of those votes with
matched budgets, each with its checkpoint report, compared in one table.

Usage: python scripts/objectives_demo.py [--battles 48] [--steps 24] [--objectives dpo,kto,orpo,simpo]
       [--report-prompts 40] [--eval-items 40] [--home DIR] [--out comparison.json]

1. A fresh studio home (or ``--home``) with the default SmolLM2 personas (llama.cpp).
2. ``--battles`` anonymous battles drawn by the arena's own sampler on everyday prompts (none from MT-Bench, so the
   reports' held-out prompts stay free), answers capped at ``--answer-tokens``. The voter likes plain prose: an
   answer is *good* when it has no markdown list, heading or bold and no emoji, and at least five tokens. Both good:
   *both good*; neither: *both bad*; else the good one wins. So KTO gets the both-good and both-bad votes that the
   pair objectives leave out.
3. ``training.compare.launch_comparison`` freezes the votes once and queues one job per objective; the script
   follows them (and their reports) and prints ``training.compare.markdown`` of the comparison, then each child's
   verdict line. ``--out`` saves the comparison as JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent))

from scripts.child_common import EVERYDAY_PROMPTS, fresh_studio  # noqa: E402


def good(text: str) -> bool:
    """The planted taste: plain prose, no lists, headings, bold or emoji."""
    from vibestudio.textfeatures.vibes import features

    f = features(text)
    return f["tokens"] >= 5 and not (f["list_items"] or f["headers"] or f["bold"] or f["emoji"])


def choice_for(left: str, right: str) -> str:
    gl, gr = good(left), good(right)
    if gl and gr:
        return "both_good"
    if not gl and not gr:
        return "both_bad"
    return "left" if gl else "right"


def play(db, n: int, tokens: int, seed: int) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """``n`` anonymous battles, each answered in full and voted by the planted taste; the count per vote."""
    from vibestudio.arena.battles import ArenaLimits, ArenaService

    arena = ArenaService(db, ArenaLimits(max_new_tokens=tokens), rng=random.Random(seed))
    counts: dict[str, int] = {}
    t0 = time.monotonic()
    for i in range(n):
        battle = arena.start_battle()
        prompt = EVERYDAY_PROMPTS[i % len(EVERYDAY_PROMPTS)]
        updates = list(arena.generate_turn(battle.battle_id, prompt))
        last = updates[-1] if updates else None
        if last is None or last.error or last.left_error or last.right_error:
            print(
                f"battle {i + 1}: no answer ({last.error if last else 'nothing streamed'}); skipped",
                flush=True,
            )
            arena.end_battle(battle.battle_id)
            continue
        vote = choice_for(last.left, last.right)
        arena.record_vote(battle.battle_id, vote)
        arena.end_battle(battle.battle_id)
        counts[vote] = counts.get(vote, 0) + 1
        if (i + 1) % 8 == 0:
            print(f"battle {i + 1}/{n} ({time.monotonic() - t0:.0f} s): votes so far {counts}", flush=True)
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--battles", type=int, default=48)
    ap.add_argument("--answer-tokens", type=int, default=96)
    ap.add_argument("--objectives", default="dpo,kto,orpo,simpo")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--batch", type=int, default=4, help="pairs per step (KTO: twice as many answers)")
    ap.add_argument("--report-prompts", type=int, default=40)
    ap.add_argument("--eval-items", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--home", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    _, db = fresh_studio(args.home, "objectives-demo-")

    from vibestudio.training.compare import comparison, launch_comparison, markdown
    from vibestudio.training.jobs.runner import fail_lost

    counts = play(db, args.battles, args.answer_tokens, args.seed)
    print(f"votes: {counts}", flush=True)
    t0 = time.monotonic()
    cid = launch_comparison(
        db,
        "smollm2-plain",
        args.objectives,
        max_steps=args.steps,
        per_device_train_batch_size=args.batch,
        seed=args.seed,
        drift_prompts=args.report_prompts,
        eval_items=args.eval_items,
        eval_max_tokens=64,
    )
    view = comparison(db, cid)
    print(f"comparison {cid}: jobs {[c.job_id for c in view.children]}", flush=True)
    seen: dict[int, str] = {}
    while not view.done:
        time.sleep(10)
        fail_lost(db)
        view = comparison(db, cid)
        for c in view.children:
            now = f"{c.status}/{c.state or '-'}/{c.verdict or '-'}"
            if seen.get(c.job_id) != now:
                seen[c.job_id] = now
                print(f"{time.monotonic() - t0:6.0f} s  {c.label}: {now}", flush=True)
    print(markdown(view), flush=True)
    for c in view.children:
        print(f"{c.label}: {c.verdict or '-'}: {c.verdict_note}", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"votes": counts, **asdict(view)}, indent=1, default=str))
    return 0 if all(c.status == "succeeded" for c in view.children) else 1


if __name__ == "__main__":
    raise SystemExit(main())
