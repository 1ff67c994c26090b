"""Benchmark: streaming inside the arena path (both sides at once) vs raw llama.cpp on the same prompt and settings.

Measured per stream: time to first token (TTFT, from request to first model text) and decode tokens/s
(``(tokens - 1) / (end - first token)``), each the median of ``--reps`` runs. Baselines, all llama-cpp-python on the
embedded SmolLM2-135M GGUF with the same rendered prompt, sampling and ``max_tokens``:

- ``raw alone, all cores``: one ``Llama`` with every core, one stream, the machine to itself (the issue's goal
  compares each arena stream with this).
- ``raw alone, pool threads``: one ``Llama`` with the threads one arena pool instance gets, one stream.
- ``raw pair``: two ``Llama`` instances with pool threads streaming at the same time in two threads (the same
  concurrency as a battle, without the arena): arena / raw pair isolates the arena's own overhead.
- ``arena``: ``ArenaService.generate_turn`` with two identical contestants (threads, gates, queue, database write);
  the figures are those the arena stores on the turn.

    python benchmarks/arena_stream.py              # 128 tokens, 3 repetitions
    python benchmarks/arena_stream.py --tokens 64 --reps 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from typing import Any

PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."


def _rendered_prompt(llm: Any) -> tuple[str, list[str]]:
    from vibestudio.arena.engines.llamacpp import LlamaCppEngine

    engine = LlamaCppEngine.__new__(LlamaCppEngine)  # only its prompt rendering, no pool
    return engine._prompt(llm, [{"role": "user", "content": PROMPT}], "")


def raw_stream(llm: Any, max_tokens: int, seed: int) -> dict[str, float]:
    """One streamed completion straight from llama-cpp-python; TTFT and decode tokens/s measured like the arena."""
    prompt, stops = _rendered_prompt(llm)
    t0 = time.perf_counter()
    first = None
    n = 0
    for chunk in llm.create_completion(
        prompt,
        max_tokens=max_tokens,
        temperature=0.7,
        top_p=0.95,
        repeat_penalty=1.1,
        seed=seed,
        stop=stops,
        stream=True,
    ):
        if chunk["choices"][0].get("text"):
            if first is None:
                first = time.perf_counter() - t0
            n += 1
    total = time.perf_counter() - t0
    tps = (n - 1) / (total - first) if first is not None and n > 1 and total > first else float("nan")
    return {"ttft": first or float("nan"), "tps": tps, "tokens": n}


def _load(threads: int) -> Any:
    from llama_cpp import Llama

    from vibestudio.arena.default_model import default_gguf_path

    return Llama(
        model_path=str(default_gguf_path()), n_ctx=2048, n_threads=threads, n_batch=256, verbose=False
    )


def raw_pair(llms: list[Any], max_tokens: int, seed: int) -> list[dict[str, float]]:
    """Two raw streams at the same time, one per instance, in two Python threads."""
    results: list[dict[str, float]] = [{}, {}]

    def run(i: int) -> None:
        results[i] = raw_stream(llms[i], max_tokens, seed + 100 * i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


class ArenaBench:
    """Two identical contestants on the embedded GGUF in a scratch database; one battle turn per call."""

    def __init__(self, max_tokens: int) -> None:
        from vibestudio.arena.battles import ArenaLimits, ArenaService
        from vibestudio.arena.registry import ContestantSpec, register
        from vibestudio.db.session import Database

        home = tempfile.mkdtemp(prefix="arena-bench-")
        os.environ["VIBESTUDIO_HOME"] = home
        self.db = Database(f"sqlite:///{home}/bench.sqlite")
        self.db.migrate()
        sampling = {"temperature": 0.7, "top_p": 0.95, "repeat_penalty": 1.1, "max_tokens": max_tokens}
        with self.db.session() as s:
            for name in ("left", "right"):
                register(s, ContestantSpec(f"bench-{name}", sampling=sampling))
        warm = ArenaService(self.db, limits=ArenaLimits(max_new_tokens=8))
        list(warm.generate_turn(warm.start_battle().battle_id, "Hi"))  # loads the pool
        self.svc = ArenaService(self.db, limits=ArenaLimits(max_new_tokens=max_tokens))

    def turn(self) -> list[dict[str, float]]:
        from sqlalchemy import select

        from vibestudio.db.models import Turn

        bid = self.svc.start_battle().battle_id
        last = list(self.svc.generate_turn(bid, PROMPT))[-1]
        if last.error:
            raise SystemExit(f"arena turn failed: {last.error}")
        with self.db.session() as s:
            t = s.scalar(select(Turn).where(Turn.battle_id == bid))
            return [
                {"ttft": t.latency_a, "tps": t.tps_a, "tokens": t.tokens_a},
                {"ttft": t.latency_b, "tps": t.tps_b, "tokens": t.tokens_b},
            ]


def _med(rows: list[dict[str, float]], key: str) -> float:
    vals = [r[key] for r in rows if r.get(key) == r.get(key) and r.get(key) is not None]
    return statistics.median(vals) if vals else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=128, help="max_tokens per answer")
    ap.add_argument("--reps", type=int, default=3, help="repetitions per setting")
    args = ap.parse_args()

    from vibestudio.arena.engines.llamacpp import _threads_per_instance, pool_size

    cores = os.cpu_count() or 1
    pool_threads = _threads_per_instance(pool_size())
    print(
        f"cores: {cores} · arena pool: {pool_size()} instances x {pool_threads} thread(s) · max_tokens {args.tokens}"
    )
    alone_all, alone_pool = _load(cores), _load(pool_threads)
    pair = [_load(pool_threads), _load(pool_threads)]
    for llm in (alone_all, alone_pool, *pair):
        raw_stream(llm, 8, 0)  # warm-up
    arena = ArenaBench(args.tokens)
    names = ("raw alone, all cores", "raw alone, pool threads", "raw pair (2 streams)", "arena (2 streams)")
    results: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    load0 = os.getloadavg()[0]
    for rep in range(args.reps):  # settings interleaved, so other load on the machine hits all of them alike
        results[names[0]].append(raw_stream(alone_all, args.tokens, rep))
        results[names[1]].append(raw_stream(alone_pool, args.tokens, rep))
        results[names[2]] += raw_pair(pair, args.tokens, rep)
        results[names[3]] += arena.turn()
    print(f"load average (1 min) before / after: {load0:.2f} / {os.getloadavg()[0]:.2f}")
    print(f"\n{'setting':<26} {'TTFT ms':>9} {'tok/s per stream':>17} {'tokens':>7}")
    for name, rows in results.items():
        print(
            f"{name:<26} {1000 * _med(rows, 'ttft'):>9.1f} {_med(rows, 'tps'):>17.1f} {_med(rows, 'tokens'):>7.0f}"
        )
    arena = results["arena (2 streams)"]
    a_tps, a_ttft = _med(arena, "tps"), _med(arena, "ttft")
    print("\nratios (arena per stream / baseline):")
    for name in ("raw alone, all cores", "raw alone, pool threads", "raw pair (2 streams)"):
        rows = results[name]
        print(
            f"  tok/s vs {name:<24} {a_tps / _med(rows, 'tps'):.2f}   "
            f"TTFT delta {1000 * (a_ttft - _med(rows, 'ttft')):+.1f} ms"
        )
    alone = _med(results["raw alone, all cores"], "tps")
    print(f"  aggregate arena tok/s (2 streams) vs one raw stream with all cores: {2 * a_tps / alone:.2f}")


if __name__ == "__main__":
    main()
