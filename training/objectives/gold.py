"""The gold signal measured while a job trains, and the option to keep the best-gold weights.

Gold here is the verifiable-eval accuracy of the policy being trained (``standings.evals``: format and
arithmetic items a program checks). The in-training model itself answers greedily on the first
``gold_items`` items. It runs at step 0 (the parent; KL 0 by definition) and every ``gold_every`` steps.
Each measurement writes ``gold`` (share passed), ``gold_se`` (its binomial standard error) and ``gold_n``.
``training.objectives.overopt`` places them against sqrt(KL) and says when gold has peaked.

With ``stop_at_best_gold``, the callback keeps an in-memory copy of the trainable weights at the best gold
so far. That is the LoRA adapter, or the whole model in a full fine-tune. It stops training once gold has
*fallen*: a sustained fall, see ``training.objectives.overopt``. It puts the best weights back before the
job saves and publishes.
"""

from __future__ import annotations

import math
from typing import Any

from vibestudio.standings.evals import EvalItem, load_items, run_check
from vibestudio.training.objectives.kl import encode_chat_prompts
from vibestudio.training.objectives.overopt import gold_curve

GOLD_SIGNALS = ("none", "evals")


class GoldCheck:
    """Verifiable-eval accuracy of the model being trained (greedy answers, checked by the eval checkers)."""

    def __init__(self, items: list[EvalItem], tokenizer: Any, metrics: Any, max_new_tokens: int = 64) -> None:
        self.items, self.tok, self.metrics, self.max_new_tokens = items, tokenizer, metrics, max_new_tokens

    @classmethod
    def for_job(cls, ctx: Any, tokenizer: Any) -> GoldCheck:
        cfg = ctx.cfg
        _, items = load_items()
        return cls(items[: cfg.gold_items], tokenizer, ctx.metrics, cfg.gold_max_new_tokens)

    def answers(self, model: Any) -> list[str]:
        import torch

        tok = self.tok
        enc = encode_chat_prompts(tok, [i.prompt for i in self.items], next(model.parameters()).device)
        with torch.no_grad():
            out = model.generate(
                **enc, do_sample=False, max_new_tokens=self.max_new_tokens, pad_token_id=tok.pad_token_id
            )
        return tok.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)

    def measure(self, trainer: Any, step: int) -> dict[str, float]:
        if not self.items:
            return {}
        model = trainer.accelerator.unwrap_model(trainer.model)
        was_training = model.training
        model.eval()
        try:
            answers = self.answers(model)
        finally:
            model.train(was_training)
        passed = sum(run_check(i.check, a)[0] for i, a in zip(self.items, answers, strict=True))
        n = len(self.items)
        p = passed / n
        values = {"gold": p, "gold_se": math.sqrt(max(p * (1 - p), 0.25 / n) / n), "gold_n": float(n)}
        self.metrics.log(step, values)
        print(f"[gold] step {step}: {passed}/{n} eval items passed", flush=True)
        return values


def make_gold_callback(check: GoldCheck, every: int, stop_at_best: bool, series: Any) -> Any:
    """A TrainerCallback measuring gold at step 0 and every ``every`` steps; ``series()`` returns the job's
    metric series so far (to judge the fall); keeps and restores the best weights when ``stop_at_best``."""
    from transformers import TrainerCallback

    class GoldCallback(TrainerCallback):
        def __init__(self) -> None:
            self.trainer: Any = None
            self.best: tuple[float, int, dict[str, Any]] | None = None
            self.stopped_early = False

        def _measure(self, step: int) -> None:
            values = check.measure(self.trainer, step)
            if stop_at_best and values and (self.best is None or values["gold"] > self.best[0]):
                model = self.trainer.accelerator.unwrap_model(self.trainer.model)
                weights = {k: v.detach().clone() for k, v in model.named_parameters() if v.requires_grad}
                self.best = (values["gold"], step, weights)

        def on_train_begin(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
            if state.is_world_process_zero and state.global_step == 0:
                check.metrics.log(0, {"kl": 0.0})  # the policy is the reference before the first update
                self._measure(0)

        def on_step_end(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
            if not state.is_world_process_zero or not every or state.global_step % every:
                return
            self._measure(state.global_step)
            if stop_at_best and gold_curve(series()).state == "falling":
                print(
                    f"[gold] gold has fallen since step {self.best[1] if self.best else '?'}: stopping",
                    flush=True,
                )
                self.stopped_early = True
                control.should_training_stop = True

        def restore_best(self) -> int | None:
            """Put the best-gold weights back; returns their step (None when nothing was kept)."""
            if self.best is None:
                return None
            model = self.trainer.accelerator.unwrap_model(self.trainer.model)
            params = dict(model.named_parameters())
            for name, saved in self.best[2].items():
                params[name].data.copy_(saved)
            return self.best[1]

    return GoldCallback()


def job_series(metrics: Any) -> dict[str, list[tuple[int, float]]]:
    """The job's metric series so far, read back from the database (empty when the job has none, e.g. by hand)."""
    from sqlalchemy import select

    from vibestudio.db.models import JobMetric

    if getattr(metrics, "db", None) is None or getattr(metrics, "job_id", None) is None:
        return {}
    out: dict[str, list[tuple[int, float]]] = {}
    with metrics.db.session() as s:
        rows = s.execute(
            select(JobMetric.name, JobMetric.step, JobMetric.value)
            .where(
                JobMetric.job_id == metrics.job_id,
                JobMetric.name.in_(["gold", "gold_se", "kl", "rewards/margins"]),
            )
            .order_by(JobMetric.step, JobMetric.id)
        )
        for name, step, value in rows:
            out.setdefault(name, []).append((step, value))
    return out
