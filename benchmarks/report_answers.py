"""Benchmark: the checkpoint report's seconds per answer, the child on the arena's engine against the child on the
transformers engine, same run, same machine; prints the ratio.

The child is a SmolLM2-135M LoRA (r 16, all linear layers, small random B) on the HF conversion of the embedded
GGUF, with the ``smollm2-warm`` persona, as a DPO job publishes it. Both sides of the report answer the same
held-out prompts through ``training.report.fair.answer_all`` (``fair_pair`` decides the engines):

- ``before``: the child on the transformers engine, its parent as the fp32 HF conversion (batched ``generate``);
- ``after``: the child as GGUF at its parent's quantization, both on llama.cpp (sequences decoded together,
  ``arena.engines.llamacpp_batch``), as publishing now makes it.

Printed: seconds per answer each way and the ratio before / after (the budget's floor: the ``after`` side is
faster). ``--report`` also runs the whole report (``drift_report`` with the job defaults: 80 prompts x 64
tokens, 70 eval items x 96 tokens) on the ``after`` child and prints its seconds by part; ``--second`` then
reports a second child of the same parent (a copy of the GGUF under another name), which reuses the parent's
answers from the first report (``training.report.answer_cache``). The benchmark keeps its store in its own
temporary folder, so the first report starts with nothing kept.

    python benchmarks/report_answers.py                   # 16 prompts x 64 tokens, both ways
    python benchmarks/report_answers.py --prompts 32 --report
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--report", action="store_true", help="Also the whole report on the GGUF child.")
    ap.add_argument(
        "--eval-items", type=int, default=70, help="With --report: eval items (the job default 70; -1 all)."
    )
    ap.add_argument("--second", action="store_true", help="With --report: a second child of the same parent.")
    args = ap.parse_args()
    import os
    import shutil
    from dataclasses import replace

    from benchmarks.child_speed import make_child
    from vibestudio.arena.registry import (
        BUILTIN_GGUF,
        BUILTIN_HF,
        DEFAULT_PERSONAS,
        ContestantSpec,
        get_contestant,
        register,
    )
    from vibestudio.db.session import Database
    from vibestudio.training.publishing import fidelity
    from vibestudio.training.report.fair import answer_all, fair_pair, held_out
    from vibestudio.training.report.steps import drift_report
    from vibestudio.training.report.verdict import load_rules

    tmp = Path(tempfile.mkdtemp(prefix="report-answers-"))
    os.environ["VIBESTUDIO_HOME"] = str(tmp / "home")  # the answer store starts empty
    db = Database(f"sqlite:///{tmp / 'bench.sqlite'}")
    db.migrate()
    warm = next(p for p in DEFAULT_PERSONAS if p.public_name == "smollm2-warm")
    base, adapter = make_child(tmp / "output")
    policy = load_rules().fidelity
    choice = fidelity.choose(BUILTIN_GGUF, base, adapter, tmp / "output", policy, say=lambda _m: None)
    chosen = choice.fidelity.chosen_form
    print(
        f"publishing chooses {choice.fidelity.chosen} in {choice.fidelity.seconds:.1f} s: {choice.fidelity.why}"
    )
    # the truth check beside the ratio: the fast child that answers is the trained one
    kept_ok = chosen is not None and chosen.passed and choice.engine == "llama_cpp"
    print(f"truth: {'pass' if kept_ok else 'FAIL'} (the timed llama.cpp child {choice.fidelity.chosen})")
    look = {"system_prompt": warm.system_prompt, "prefill": warm.prefill, "sampling": dict(warm.sampling)}
    with db.session() as s:
        parent_id = register(s, replace(warm))
        before_id = register(
            s,
            ContestantSpec(
                "warm-child-hf",
                engine="transformers",
                model_ref=BUILTIN_HF,
                adapter_ref=adapter,
                parent_id=parent_id,
                **look,
            ),
        )
        after_id = register(
            s,
            ContestantSpec(
                "warm-child-gguf",
                engine=choice.engine,
                model_ref=choice.model_ref or BUILTIN_HF,
                adapter_ref=choice.adapter_ref if choice.engine == "llama_cpp" else adapter,
                parent_id=parent_id,
                **look,
            ),
        )
        parent = get_contestant(s, parent_id)
        children = {"before": get_contestant(s, before_id), "after": get_contestant(s, after_id)}
    prompts = held_out(args.prompts).prompts
    per_answer = {}
    for way, child in children.items():
        p, c, setup = fair_pair(parent, child, args.tokens, 0)
        (
            answer_all(p, prompts[:2], 0, reuse=False),
            answer_all(c, prompts[:2], 0, reuse=False),
        )  # warm-up: models loaded
        t0 = time.perf_counter()
        answers = answer_all(p, prompts, 0, reuse=False) + answer_all(c, prompts, 0, reuse=False)
        seconds = time.perf_counter() - t0
        per_answer[way] = seconds / len(answers)
        tokens = sum(a.tokens for a in answers)
        print(
            f"{way:7} {setup.engine:13} {len(answers)} answers, {tokens} tokens in {seconds:.1f} s: "
            f"{per_answer[way]:.2f} s per answer, {tokens / seconds:.0f} tok/s"
        )
    print(f"before/after (seconds per answer): {per_answer['before'] / per_answer['after']:.2f}")
    print(f"ratio: {per_answer['before'] / per_answer['after']:.3f}")  # the performance lane's line

    def timed_report(child_id: int, label: str) -> None:
        t0 = time.perf_counter()
        report = drift_report(db, child_id, eval_items=args.eval_items)
        print(report.summary())
        print(
            f"{label} seconds:",
            round(time.perf_counter() - t0, 1),
            {k: round(v, 1) for k, v in report.timings.items()},
            "reused:",
            report.setup.get("reused"),
        )
        print((report.setup.get("power") or {}).get("line", ""))

    if args.report:
        timed_report(after_id, "report")
    if args.report and args.second:
        src = Path(choice.adapter_ref or choice.model_ref or "")
        again = tmp / f"second{src.suffix}"
        shutil.copyfile(src, again)
        with db.session() as s:
            second_id = register(
                s,
                ContestantSpec(
                    "warm-child-2",
                    engine="llama_cpp",
                    model_ref=choice.model_ref if choice.adapter_ref else str(again),
                    adapter_ref=str(again) if choice.adapter_ref else None,
                    parent_id=parent_id,
                    **look,
                ),
            )
        timed_report(second_id, "second child's report")


if __name__ == "__main__":
    main()
