"""How OpenMP's idle threads wait, measured on the studio's two CPU engines, quiet and with cores busy elsewhere.

The raw baseline is OpenMP's own default (idle threads spin a while before they sleep); the studio's processes set
``OMP_WAIT_POLICY=PASSIVE`` (``common.threads``). Each cell is a fresh process (OpenMP reads the variable once, when it
loads) that loads the model, warms up, then times:

- ``llama.cpp``: the shipped SmolLM2-135M GGUF answering one prompt, ``--tokens`` tokens, as the arena plays it;
- ``transformers``: the fp32 HF conversion answering 16 held-out prompts x 64 tokens in one batch, as the post-job
  report does (``training.report.fair.answer_all``).

``--busy N`` runs every cell again beside N busy-loop processes (a machine whose other work holds the cores: the web
app, a training job, a browser). Prints the median of ``--repeat`` runs per cell and the ratio default / passive.
Run: ``python benchmarks/thread_waits.py [--repeat 3] [--busy 1] [--tokens 128]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CELL = r"""
import json, sys, time
sys.path.insert(0, {root!r})
engine, tokens = sys.argv[1], int(sys.argv[2])
if engine == "llama.cpp":
    from vibestudio.arena.default_model import default_gguf_path
    from llama_cpp import Llama
    llm = Llama(model_path=str(default_gguf_path()), n_ctx=1024, verbose=False, seed=0)
    ask = [{{"role": "user", "content": "Describe a walk along a river in autumn."}}]
    llm.create_chat_completion(ask, max_tokens=8, temperature=0)
    t = time.perf_counter()
    out = llm.create_chat_completion(ask, max_tokens=tokens, temperature=0, seed=0)
    print(json.dumps([time.perf_counter() - t, out["usage"]["completion_tokens"]]))
else:
    from vibestudio.arena.default_model import ensure_hf_base
    from vibestudio.arena.registry import ContestantInfo
    from vibestudio.training.report.fair import answer_all, held_out
    info = ContestantInfo(
        id=1, public_name="p", engine="transformers", model_ref=str(ensure_hf_base()), adapter_ref=None,
        system_prompt="", prefill="", sampling={{"temperature": 0.7, "top_p": 0.95, "max_tokens": 64}},
        aliases=[], parent_id=None, job_id=None, snapshot_hash=None, active=True, created_at=None,
        description="", engine_config={{}},
    )
    prompts = held_out(16).prompts
    answer_all(info, prompts[:2], 0, reuse=False)
    t = time.perf_counter()
    answers = answer_all(info, prompts, 0, reuse=False)
    print(json.dumps([time.perf_counter() - t, sum(a.tokens for a in answers)]))
"""


def cell(engine: str, policy: str | None, tokens: int) -> tuple[float, int]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    out = subprocess.run(
        [sys.executable, "-c", CELL.format(root=str(ROOT)), engine, str(tokens)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    seconds, n = json.loads(out.strip().splitlines()[-1])
    return seconds, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--busy", type=int, default=1, help="busy-loop processes for the loaded rows (0: quiet only)"
    )
    ap.add_argument("--tokens", type=int, default=128, help="tokens of the llama.cpp answer")
    args = ap.parse_args()
    loads = [0] + ([args.busy] if args.busy else [])
    print(f"{os.cpu_count()} CPUs; median of {args.repeat} fresh processes per cell")
    print(
        f"{'engine':<13} {'busy':>4} {'default s':>10} {'passive s':>10} {'default/passive':>16} {'tokens':>7}"
    )
    for busy in loads:
        burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
        try:
            for engine in ("llama.cpp", "transformers"):
                times: dict[str, list[float]] = {"default": [], "passive": []}
                n = 0
                for _ in range(args.repeat):  # the two policies take turns, so load hits both alike
                    for name, policy in (("default", None), ("passive", "PASSIVE")):
                        seconds, n = cell(engine, policy, args.tokens)
                        times[name].append(seconds)
                d, p = statistics.median(times["default"]), statistics.median(times["passive"])
                print(f"{engine:<13} {busy:>4} {d:>10.2f} {p:>10.2f} {d / p:>15.2f}x {n:>7}", flush=True)
        finally:
            for b in burners:
                b.kill()


if __name__ == "__main__":
    main()
