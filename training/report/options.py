"""The report's settings, read from the job config's field definitions.

Each setting is defined once, in ``training.jobs.config``: its default, help and bounds.
``ReportOptions`` holds the fields the report reads (``REPORT_FIELDS``) with those defaults.
``DEFAULTS`` is one such object; ``drift_report`` and ``vibestudio drift`` take their defaults from it.
``report_bounds`` and ``report_problem`` give a setting's bounds in words and check a value against them, so
``vibestudio drift`` refuses what the job config refuses. A command that always makes a report
(``required``) refuses a setting's "off" value too (0 for ``drift_prompts``).

The report's seed is the job's seed (42): a report made by hand draws the same held-out prompts and
sampling seeds as the one made after training, so both compare, and cached answers are reused.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from vibestudio.training.jobs.config import GRPOJobConfig, bounds_text, default_of, field_errors

#: The job-config fields the checkpoint report reads (copied into a mid-run checkpoint's report job).
REPORT_FIELDS = (
    "drift_prompts",
    "drift_max_tokens",
    "seed",
    "drift_thresholds",
    "eval_items",
    "eval_max_tokens",
    "detect_drift_sd",
    "detect_eval_change",
    "judge",
    "describe_axes",
    "describe_prompts",
    "verdict_rules",
    "snapshot_hash",
    "report_probes",
    "probe_items",
    "probe_max_tokens",
    # RLVR jobs (a task set instead of a snapshot): the report measures held-out task accuracy and reward hacking
    "tasks",
    "heldout_tasks",
    "rewards",
)


def report_help(name: str) -> str:
    """The help of report setting ``name``, as the job config defines it."""
    return str(report_fields()[name].metadata.get("help", ""))


def report_bounds(name: str, *, required: bool = False) -> str:
    """The bounds of report setting ``name`` in words, as ``vibestudio train`` shows them ('' when none).
    ``required``: for a command that always makes a report, so a 0-means-off setting is "at least N"."""
    meta = report_fields()[name].metadata
    if required and "zero_or_at_least" in meta:
        return bounds_text({"ge": meta["zero_or_at_least"]})
    return bounds_text(meta)


def report_problem(name: str, value: Any, *, required: bool = False) -> str | None:
    """Why ``value`` is not allowed for report setting ``name`` ("must be at least -1 (got -5)"), or None.
    The job config's own check decides (``field_errors``). ``required``: 0 does not turn the report off here."""
    meta = report_fields()[name].metadata
    least = meta.get("zero_or_at_least") if required else None
    if least is not None and value < least:
        off = "; 0 turns a training job's report off, and this command makes one" if value == 0 else ""
        return f"must be {report_bounds(name, required=True)} (got {value!r}{off})"
    errors = field_errors(GRPOJobConfig, {name: value})
    return errors[0].message.removeprefix(f"{name} ") if errors else None


def report_fields() -> dict[str, dataclasses.Field[Any]]:
    """The definitions of the report's settings (every kind's shared fields, and GRPO's task fields)."""
    by_name = {f.name: f for f in dataclasses.fields(GRPOJobConfig)}
    return {name: by_name[name] for name in REPORT_FIELDS}


class ReportOptions:
    """The report settings of a job config, with the job config's defaults (nothing restated here)."""

    drift_prompts: int
    drift_max_tokens: int
    seed: int
    drift_thresholds: dict[str, Any]
    eval_items: int
    eval_max_tokens: int
    detect_drift_sd: float | None
    detect_eval_change: float | None
    judge: str
    describe_axes: int
    describe_prompts: int
    verdict_rules: str
    snapshot_hash: str
    report_probes: bool
    probe_items: int
    probe_max_tokens: int
    tasks: str
    heldout_tasks: int
    rewards: list[Any]

    def __init__(self, **given: Any) -> None:
        unknown = set(given) - set(REPORT_FIELDS)
        if unknown:
            raise TypeError(f"not report settings: {', '.join(sorted(unknown))}")
        for name, f in report_fields().items():
            setattr(self, name, given[name] if name in given else default_of(f))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReportOptions) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"ReportOptions({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    @classmethod
    def from_config(cls, data: dict[str, Any]) -> ReportOptions:
        return cls(**{k: data[k] for k in REPORT_FIELDS if k in data and data[k] is not None})

    def counts(self) -> tuple[int, int]:
        """(prompts, eval items) as ``JobConfig.report_counts`` gives them (``fair.chosen_counts``)."""
        from vibestudio.training.report import fair

        return fair.chosen_counts(
            self.drift_prompts, self.eval_items, self.detect_drift_sd, self.detect_eval_change
        )


#: The report's settings at their defaults: what a report made without a job config uses.
DEFAULTS = ReportOptions()
