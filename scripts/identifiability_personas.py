"""How recognisable are the five default personas by their answers alone? Real battles on the embedded SmolLM2
(llama.cpp), then `arena.identifiability` as the Leaderboard shows it, with and without the fixed openings.

Every pair of the five personas meets on ``--per-pair`` MT-Bench first turns (each battle a different question),
through `ArenaService` as the Arena tab runs it (streaming, prefill, length cap); each battle gets one vote and
ends by the idle sweep, so its answers count. Usage::

    python scripts/identifiability_personas.py [--per-pair 8] [--max-tokens 40]
"""

from __future__ import annotations

import argparse
import itertools
import random
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from sqlalchemy import select, update


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-pair", type=int, default=8, help="battles per pair of personas")
    ap.add_argument("--max-tokens", type=int, default=40, help="answer length cap")
    args = ap.parse_args()

    from vibestudio.arena.battles import ArenaLimits, ArenaService
    from vibestudio.arena.identifiability import contestant_identifiability
    from vibestudio.arena.prompts import ensure_mt_bench
    from vibestudio.arena.registry import DEFAULT_PERSONAS, ensure_defaults
    from vibestudio.db.models import Battle, Prompt
    from vibestudio.db.session import Database

    home = Path(tempfile.mkdtemp(prefix="ident-"))
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    db.migrate()
    with db.session() as s:
        ensure_defaults(s)
        ensure_mt_bench(s)
        ids = [p.public_name for p in DEFAULT_PERSONAS]
        prompts = list(s.execute(select(Prompt.id, Prompt.turns).order_by(Prompt.id)))
    svc = ArenaService(db, ArenaLimits(max_new_tokens=args.max_tokens), rng=random.Random(0))
    rng = random.Random(0)
    pairs = [p for p in itertools.combinations(ids, 2) for _ in range(args.per_pair)]
    t0 = time.monotonic()
    for k, pair in enumerate(pairs):
        pid, turns = prompts[k % len(prompts)]
        bid = svc.start_battle(prompt_id=pid, include=list(pair)).battle_id  # anonymous, this pair only
        list(svc.generate_turn(bid, turns[0]))
        svc.record_vote(bid, rng.choice(["left", "right", "tie"]))
        if (k + 1) % 10 == 0:
            print(f"{k + 1}/{len(pairs)} battles, {time.monotonic() - t0:.0f} s", flush=True)
    with db.session() as s:  # nobody revealed them: the idle sweep ends them and they count
        s.execute(update(Battle).values(active_at=Battle.created_at - timedelta(hours=1)))
    print(f"ended by the idle sweep: {len(svc.end_idle_battles())} battles")
    for strip in (False, True):
        with db.session() as s:
            rep = contestant_identifiability(s, strip_prefill=strip)
        print(
            f"\n{'without the fixed openings' if strip else 'as shown'}: {rep.n_answers} answers, {rep.method}"
        )
        for c in rep.contestants:
            print(f"  {c.line()}")
    print(
        f"\n{len(pairs)} battles, max_tokens {args.max_tokens}, {time.monotonic() - t0:.0f} s; data in {home}"
    )


if __name__ == "__main__":
    main()
