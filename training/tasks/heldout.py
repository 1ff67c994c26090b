"""What a GRPO job on a task set does besides training: its dataset, and the held-out checks it runs.

**The dataset** holds train tasks only, checked again. ``task_rows`` reads the set's train split through
``store.train_tasks``, which refuses any task held out in any set. Before the trainer sees the rows, it
asserts that no row's content hash is a held-out one.

**The check.** ``HeldoutCheck`` answers ``heldout_tasks`` held-out tasks greedily with the policy being
trained. It runs before the first step, every ``heldout_every`` steps and after the last. It checks each
answer with the task's own verifier. It logs to ``job_metrics``:
- ``heldout/accuracy`` with its Wilson 95% interval (``heldout/low``, ``heldout/high``);
- ``heldout/n``, and ``heldout/skipped`` (the verifier could not score);
- the change since step 0 on the same tasks: ``heldout/delta`` with a bootstrap interval, ``heldout/p``
  exact McNemar;
- the share of answers stating several numbers;
- ``heldout/seconds``;
- the task reward's verifier skips so far (``tasks/verifier_skips``);
- the studio's own KL on held-out MT-Bench prompts (``kl_heldout``, ``training.objectives.kl``).
Every check also goes to ``heldout.jsonl`` in the job folder, with the answers of the last one. The report
and the CLI read it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from vibestudio.training.tasks.scoring import accuracy_of, check_all, several_numbers
from vibestudio.training.tasks.store import TaskItem, heldout_hashes, load_tasks, train_tasks


def _db(ctx: Any) -> Any:
    if ctx.metrics.db is not None:
        return ctx.metrics.db
    from vibestudio.common.settings import get_settings
    from vibestudio.db.session import Database

    return Database(get_settings().database_url)  # a replica under accelerate writes no metrics


def task_rows(ctx: Any) -> list[dict[str, Any]]:
    """The train tasks as GRPO rows (conversational prompt, answer, verifier and choices as JSON text)."""
    db = _db(ctx)
    tasks = train_tasks(db, ctx.cfg.tasks)
    held = heldout_hashes(db)
    leaked = [t for t in tasks if t.content_hash in held]
    if leaked:  # train_tasks refuses these already; this is the last line before the trainer
        raise RuntimeError(f"{len(leaked)} held-out task(s) reached the training rows")
    print(
        f"[tasks] {ctx.cfg.tasks}: {len(tasks)} train tasks (held-out tasks excluded and checked)", flush=True
    )
    return [
        {
            "prompt": [{"role": "user", "content": t.prompt}],
            "answer": t.answer,
            "verifier": json.dumps(t.verifier),
            "choices": json.dumps(t.choices) if t.choices else "",
        }
        for t in tasks
    ]


def renamed_heldout(inner: Any) -> _Renamed:
    """``inner`` (a metric writer) filing KL values under ``kl_heldout*``: the name for KL measured on held-out
    prompts in every job whose trainer logs a ``kl`` of its own (GRPO, KTO)."""
    return _Renamed(inner)


class _Renamed:
    """A metric writer that files the KL check's values under ``kl_heldout*`` (TRL logs its own ``kl``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def log(self, step: int, values: dict[str, float]) -> dict[str, float]:
        return dict(self.inner.log(step, {k.replace("kl", "kl_heldout", 1): v for k, v in values.items()}))


def generate_answers(
    model: Any, tok: Any, prompts: list[str], max_new_tokens: int, batch: int = 16
) -> list[str]:
    """Greedy answers of ``model`` to single-turn prompts (chat template), in batches."""
    import torch

    from vibestudio.training.objectives.kl import encode_chat_prompts

    out: list[str] = []
    device = next(model.parameters()).device
    for i in range(0, len(prompts), batch):
        enc = encode_chat_prompts(tok, prompts[i : i + batch], device)
        with torch.no_grad():
            ids = model.generate(
                **enc, do_sample=False, max_new_tokens=max_new_tokens, pad_token_id=tok.pad_token_id
            )
        start = enc["input_ids"].shape[1]
        out += [tok.decode(row[start:], skip_special_tokens=True) for row in ids]
    return out


class HeldoutCheck:
    """Held-out task accuracy of the policy being trained (greedy answers, each task's verifier), and the KL
    on held-out prompts with it."""

    def __init__(
        self,
        tasks: list[TaskItem],
        tok: Any,
        metrics: Any,
        max_new_tokens: int,
        every: int,
        log_path: Path,
        kl: Any = None,
        scorers: list[Any] | None = None,
    ) -> None:
        self.tasks, self.tok, self.metrics = tasks, tok, metrics
        self.max_new_tokens, self.every, self.log_path, self.kl = max_new_tokens, every, log_path, kl
        self.scorers = scorers or []
        self.trainer: Any = None
        self.first: list[bool] | None = None
        self.done: set[int] = set()

    @classmethod
    def for_job(cls, ctx: Any, tok: Any, funcs: list[Any]) -> HeldoutCheck:
        from vibestudio.training.objectives.kl import KLCheck, held_out_prompts

        cfg = ctx.cfg
        tasks = load_tasks(_db(ctx), cfg.tasks, "heldout")
        if cfg.heldout_tasks >= 0:
            tasks = tasks[: cfg.heldout_tasks]
        kl = None
        if cfg.kl_prompts:
            kl = KLCheck(
                held_out_prompts(cfg.kl_prompts, [], cfg.seed),
                tok,
                _Renamed(ctx.metrics),
                cfg.kl_max_new_tokens,
                cfg.seed,
            )
        scorers = [getattr(f, "fn", None) for f in funcs]
        return cls(
            tasks,
            tok,
            ctx.metrics,
            cfg.heldout_max_tokens or cfg.max_completion_length,
            cfg.heldout_every,
            ctx.job_dir / "heldout.jsonl",
            kl,
            [s for s in scorers if s is not None and hasattr(s, "skipped")],
        )

    def measure(self, step: int) -> dict[str, float]:
        if not self.tasks or step in self.done or self.trainer is None:
            return {}
        self.done.add(step)
        t0 = time.perf_counter()
        model = self.trainer.accelerator.unwrap_model(self.trainer.model)
        was_training = model.training
        model.eval()
        try:
            answers = generate_answers(model, self.tok, [t.prompt for t in self.tasks], self.max_new_tokens)
        finally:
            model.train(was_training)
        checks = check_all(self.tasks, answers)
        acc = accuracy_of(checks)
        passed = [c.passed for c in checks]
        values: dict[str, float] = {
            "heldout/n": acc.n,
            "heldout/skipped": acc.skipped,
            "heldout/several_numbers": sum(
                several_numbers(a, t.prompt) for t, a in zip(self.tasks, answers, strict=True)
            )
            / len(answers),
            "tasks/verifier_skips": float(sum(s.skipped for s in self.scorers)),
        }
        if acc.accuracy is not None:
            values.update(
                {
                    "heldout/accuracy": acc.accuracy,
                    "heldout/low": acc.low or 0.0,
                    "heldout/high": acc.high or 0.0,
                }
            )
        if self.first is None:
            self.first = passed
        else:
            from vibestudio.common.stats import mcnemar_change

            change = mcnemar_change(self.first, passed)  # interval and p-value from one test
            values.update(
                {
                    "heldout/delta": change.delta,
                    "heldout/delta_low": change.low,
                    "heldout/delta_high": change.high,
                    "heldout/p": change.p,
                }
            )
        values["heldout/seconds"] = time.perf_counter() - t0
        self.metrics.log(step, values)
        record = {"step": step, **values, "interval": [acc.low, acc.high]}
        with open(self.log_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
        (self.log_path.parent / "heldout_answers.json").write_text(
            json.dumps(
                [
                    {"task": t.idx, "answer": a, "passed": c.passed, "error": c.error}
                    for t, a, c in zip(self.tasks, answers, checks, strict=True)
                ],
                indent=1,
            ),
            encoding="utf-8",
        )
        print(f"[heldout] step {step}: accuracy {acc.text()} ({values['heldout/seconds']:.1f} s)", flush=True)
        if self.kl is not None:
            try:
                self.kl.measure(self.trainer, step)
            except Exception as exc:  # the KL estimate is a measurement, never a reason to stop training
                print(f"[kl] step {step}: not measured ({type(exc).__name__}: {exc})", flush=True)
        return values

    def callback(self) -> Any:
        from transformers import TrainerCallback

        check = self

        class HeldoutCallback(TrainerCallback):
            def on_train_begin(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
                if state.is_world_process_zero:
                    check.measure(state.global_step)

            def on_step_end(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
                step = state.global_step
                if (
                    state.is_world_process_zero
                    and check.every
                    and step % check.every == 0
                    and step < state.max_steps
                ):
                    check.measure(step)

            def on_train_end(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
                if state.is_world_process_zero:
                    check.measure(state.global_step)

        return HeldoutCallback()
