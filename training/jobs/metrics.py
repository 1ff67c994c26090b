"""Job metrics: a small writer into ``job_metrics`` and the TrainerCallback that feeds it from any TRL
trainer.

Every scalar the trainer logs becomes a row ``(job_id, step, name, value)``. Examples are loss, rewards/*,
logps/*, learning_rate, grad_norm. ``progress`` (step / max_steps) is written each step. So a job page can
draw a bar without parsing logs. Each write is one short transaction, since SQLite allows one writer at a
time. A readable line per log also goes to stdout, which is the job's ``train.log``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from vibestudio.db.models import JobMetric
from vibestudio.db.session import Database

SKIP = {"total_flos"}


class MetricWriter:
    """Append metric rows for one job (no-op when ``job_id`` is None, e.g. a job process run by hand)."""

    def __init__(self, db: Database | None, job_id: int | None) -> None:
        self.db, self.job_id = db, job_id

    def log(self, step: int, values: Mapping[str, Any]) -> dict[str, float]:
        clean = {k: float(v) for k, v in values.items() if _is_scalar(v) and k not in SKIP}
        if clean and self.db is not None and self.job_id is not None:
            with self.db.session() as s:
                s.add_all(
                    JobMetric(job_id=self.job_id, step=int(step), name=k, value=v) for k, v in clean.items()
                )
        return clean


def _is_scalar(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if hasattr(v, "item") and getattr(v, "numel", lambda: 1)() == 1:
        v = v.item()
    return isinstance(v, int | float) and math.isfinite(float(v))


def make_callback(writer: MetricWriter, on_step: Callable[[Any, Any], None] | None = None) -> Any:
    """A transformers TrainerCallback writing logs and progress (built lazily: transformers imports slowly)."""
    from transformers import TrainerCallback

    class MetricsCallback(TrainerCallback):
        def __init__(self) -> None:
            self._t0 = time.perf_counter()
            self._last = self._t0

        def on_step_end(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
            if not state.is_world_process_zero:
                return
            now = time.perf_counter()
            values = {
                "progress": state.global_step / max(state.max_steps, 1),
                "step_seconds": now - self._last,
            }
            self._last = now
            writer.log(state.global_step, values)
            if on_step is not None:
                on_step(state, kwargs)

        def on_log(self, args, state, control, logs=None, **kwargs):  # type: ignore[no-untyped-def]
            if not state.is_world_process_zero:
                return
            clean = writer.log(state.global_step, logs or {})
            shown = " ".join(f"{k}={v:.4g}" for k, v in clean.items() if k in _SHOWN)
            print(f"[train] step {state.global_step}/{state.max_steps} {shown}", flush=True)

    return MetricsCallback()


_SHOWN = (
    "loss",
    "rewards/margins",
    "rewards/accuracies",
    "reward",
    "kl",
    "grad_norm",
    "learning_rate",
    "train_runtime",
    "accuracy",
)
