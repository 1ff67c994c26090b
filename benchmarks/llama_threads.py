"""Benchmark: batched llama.cpp decoding with the thread count chosen by timing (``ThreadTuner``) against every
core's thread, beside busy processes, same run; prints the ratio of tokens per second.

The checkpoint report decodes its answers together on llama.cpp (``arena.engines.llamacpp_batch``). On a machine
where other work holds cores, llama.cpp's threads wait at each layer for the one that shares a core, so all cores'
threads decode slower than fewer. The benchmark starts ``cores // 2`` busy processes (at least one), then times the
same 16 held-out prompts on the embedded SmolLM2 GGUF both ways, taking turns, best of ``--reps`` each:

- ``all cores``: the tuner held to one candidate, every core's thread (how the report decoded before);
- ``tuned``: a fresh tuner, as a report process starts with.

``--quiet`` runs with no busy process (the tuner's cost where there is nothing to gain: it probes fewer threads
for a few steps).

    python benchmarks/llama_threads.py              # the performance lane's entry
    python benchmarks/llama_threads.py --quiet
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--quiet", action="store_true", help="no busy process")
    args = ap.parse_args()

    from vibestudio.arena.default_model import default_gguf_path
    from vibestudio.arena.engines import llamacpp_batch
    from vibestudio.arena.engines.base import Request, Sampling
    from vibestudio.arena.engines.llamacpp import LlamaCppEngine
    from vibestudio.training.report.fair import held_out

    cores = max(1, os.cpu_count() or 1)
    engine = LlamaCppEngine(str(default_gguf_path()))
    asks = [
        Request([{"role": "user", "content": p}], Sampling(temperature=0.7, max_tokens=args.tokens, seed=i))
        for i, p in enumerate(held_out(args.prompts).prompts)
    ]
    engine.generate_batch(asks[:2])  # model loaded, caches warm

    def timed(tuner: llamacpp_batch.ThreadTuner) -> float:
        llamacpp_batch._TUNERS[cores] = tuner
        start = time.perf_counter()
        replies = engine.generate_batch(asks)
        return sum(r.tokens for r in replies) / (time.perf_counter() - start)

    def held() -> llamacpp_batch.ThreadTuner:
        tuner = llamacpp_batch.ThreadTuner(cores)
        tuner.candidates = [cores]
        tuner.best = cores
        return tuner

    busy = [] if args.quiet else [max(1, cores // 2)]
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy[0] if busy else 0)
    ]
    try:
        rates: dict[str, list[float]] = {"all cores": [], "tuned": []}
        chosen = []
        for _ in range(args.reps):
            rates["all cores"].append(timed(held()))
            fresh = llamacpp_batch.ThreadTuner(cores)
            rates["tuned"].append(timed(fresh))
            chosen.append(fresh.best)
    finally:
        for p in procs:
            p.kill()
    load = f"{len(procs)} busy process(es)" if procs else "no busy process"
    print(f"{cores} cores, {load}; {args.prompts} prompts x {args.tokens} tokens, best of {args.reps}")
    for name, values in rates.items():
        print(f"  {name:9}: {max(values):6.1f} tok/s  ({', '.join(f'{v:.1f}' for v in values)})")
    print(f"  the tuner chose {chosen} thread(s)")
    print(f"ratio: {max(rates['tuned']) / max(rates['all cores']):.3f}")


if __name__ == "__main__":
    main()
