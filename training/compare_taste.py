"""Objectives side by side, on one planted axis: which child moved it further, or how many prompts would tell.

The votes plant a taste on one drift feature (an emoji, flattery, list items). Each child's checkpoint
report measures its change against the parent on held-out prompts, with an interval. This module compares
the children on that axis and returns one ``TasteCall``. The page, the CLI and the API render that object.

The test is paired over prompts. Every child of a parent is reported on the same held-out prompts, and each
report stores its answers. So each prompt gives one change per child (child minus parent on that prompt).
The difference between two children's changes is read prompt by prompt with ``common.stats.paired_change``:
its mean, a bootstrap 95% interval, n prompts. The leader is named the winner only when that interval, against
every other child, lies wholly on the planted side of 0.

Otherwise it says "can't tell", with a power calculation for a difference of the observed size. Cohen's
d_z is the mean per-prompt difference over its standard deviation. The prompts needed are the fewest that detect
it 80% of the time at two-sided 5% (``training.report.fair.prompts_for``, a normal approximation).

It knows nothing about jobs or the database: report dicts in, a plain dataclass out.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from vibestudio.common.stats import paired_change
from vibestudio.textfeatures import tone, vibes
from vibestudio.training.jobs.config import JOB_KINDS
from vibestudio.training.report.fair import ALPHA, POWER, prompts_for

TOWARD = ("higher", "lower")


@dataclass
class Measured:
    """One number with its 95% interval and sample size (``low``/``high`` None: no interval)."""

    value: float
    low: float | None
    high: float | None
    n: int
    state: str = ""  # the report's decision: flagged / cant_tell / no_change (drift, evals)


@dataclass
class TasteCall:
    """Which objective moved the planted axis further (``winner``), or can't tell and what would tell."""

    axis: str
    toward: str  # "higher": the taste adds the feature; "lower": it removes it
    effects: dict[str, Measured] = field(
        default_factory=dict
    )  # each child's change vs the parent (its report)
    leader: str | None = None  # the child that moved the axis furthest toward the taste on the paired prompts
    rival: str | None = None  # the child nearest the leader (the hardest to separate from it)
    difference: Measured | None = (
        None  # leader minus rival per prompt: mean, bootstrap 95% interval, n prompts
    )
    d_z: float | None = None  # |mean difference| / its standard deviation over prompts
    winner: str | None = None
    prompts_needed: int | None = None  # paired prompts to separate a difference of this size (80% power, 5%)
    text: str = ""


def axis_error(axis: str | None, toward: str = "higher") -> str | None:
    """Why ``axis``/``toward`` cannot name a planted taste, or None when they can (or no axis is named)."""
    if toward not in TOWARD:
        return f"toward: {toward!r} is not one of {', '.join(TOWARD)}"
    if axis and axis not in vibes.FEATURE_NAMES:
        return f"axis: {axis!r} is not a drift feature; choose from {', '.join(vibes.FEATURE_NAMES)}"
    return None


def per_prompt(report: dict[str, Any], axis: str) -> dict[str, float]:
    """A report's change child - parent on ``axis``, prompt by prompt, from its stored answers (a tone axis
    only where it reads on both answers, as the report's own drift does)."""
    out: dict[str, float] = {}
    for s in report.get("samples") or []:
        prompt, parent, child = str(s.get("prompt", "")), str(s.get("parent", "")), str(s.get("child", ""))
        if axis in tone.AXES:
            a, b = tone.axes(parent, prompt), tone.axes(child, prompt)
            if a is None or b is None:
                continue
            out[prompt] = float(b[axis]) - float(a[axis])
        else:
            out[prompt] = float(vibes.features(child)[axis]) - float(vibes.features(parent)[axis])
    return out


def _effect(report: dict[str, Any], axis: str) -> Measured | None:
    f = (report.get("features") or {}).get(axis)
    if not f:
        return None
    return Measured(float(f["delta"]), f.get("low"), f.get("high"), int(f.get("n", 0)))


def _label(kind: str) -> str:
    return JOB_KINDS[kind].label if kind in JOB_KINDS else kind


def _fmt(m: Measured) -> str:
    return f"{m.value:+.2f} [{m.low:+.2f}, {m.high:+.2f}] (n={m.n})"


def decide(
    axis: str, toward: str, changes: dict[str, dict[str, float]], effects: dict[str, Measured] | None = None
) -> TasteCall:
    """The call from each objective's per-prompt changes on ``axis`` (``per_prompt``); ``effects`` are the
    reports' own changes vs the parent, shown beside it."""
    call = TasteCall(axis, toward, dict(effects or {}))
    if len(changes) < 2:
        call.text = f"can't tell which objective moved {axis} further: {len(changes)} child measured on it"
        return call
    prompts = [p for p in next(iter(changes.values())) if all(p in c for c in changes.values())]
    if len(prompts) < 2:
        call.text = (
            f"can't tell which objective moved {axis} further: the reports share {len(prompts)} prompt(s) "
            "measured on it (at least 2 needed)"
        )
        return call
    sign = 1.0 if toward == "higher" else -1.0
    means = {k: statistics.fmean(c[p] for p in prompts) for k, c in changes.items()}
    leader = max(means, key=lambda k: (sign * means[k], k))
    diffs: dict[str, tuple[Measured, list[float]]] = {}
    for other in (k for k in changes if k != leader):
        lead, rest = [changes[leader][p] for p in prompts], [changes[other][p] for p in prompts]
        ch = paired_change(rest, lead)  # mean of leader - other over the prompts, with its bootstrap interval
        diffs[other] = (
            Measured(ch.delta, ch.low, ch.high, ch.n),
            [x - y for x, y in zip(lead, rest, strict=True)],
        )
    # the rival: the child whose interval of the difference reaches furthest toward 0 (or past it)
    rival = min(diffs, key=lambda k: (sign * (diffs[k][0].low if sign > 0 else diffs[k][0].high), k))  # type: ignore[operator]
    diff, per = diffs[rival]
    call.leader, call.rival, call.difference = leader, rival, diff
    sd = statistics.stdev(per)
    call.d_z = abs(diff.value) / sd if sd > 0 else None
    near = float(diff.low if sign > 0 else diff.high)  # type: ignore[arg-type]
    pair = (
        f"{_label(leader)} - {_label(rival)} on {axis} per answer: {diff.value:+.2f} "
        f"[{diff.low:+.2f}, {diff.high:+.2f}] over {diff.n} paired prompts"
    )
    if sign * near > 0:
        call.winner = leader
        call.text = (
            f"{_label(leader)} moved {axis} further {toward} than "
            f"{'every other objective' if len(diffs) > 1 else _label(rival)}: {pair}, "
            "an interval apart from 0"
        )
        return call
    if call.d_z is None or call.d_z == 0:
        call.text = (
            f"can't tell which objective moved {axis} further: {pair}; no difference on any prompt, so no "
            "count of prompts would separate them"
        )
        return call
    call.prompts_needed = prompts_for(call.d_z)
    call.text = (
        f"can't tell which objective moved {axis} further: {pair}, an interval that includes 0. A difference "
        f"of this size (d_z {call.d_z:.2f}) needs about {call.prompts_needed} paired prompts to show "
        f"{POWER:.0%} of the time at a two-sided {ALPHA:.0%} (report drift_prompts={call.prompts_needed})"
    )
    return call


def taste_call(axis: str, toward: str, reports: dict[str, dict[str, Any] | None]) -> TasteCall:
    """The call over the children's saved reports (objective -> report dict, None: no report yet)."""
    missing = [k for k, r in reports.items() if r is None]
    effects = {k: m for k, r in reports.items() if r is not None and (m := _effect(r, axis)) is not None}
    if missing:
        return TasteCall(
            axis,
            toward,
            effects,
            text=f"can't tell yet which objective moved {axis} further: no report for "
            f"{', '.join(_label(k) for k in missing)}",
        )
    changes = {k: per_prompt(r, axis) for k, r in reports.items() if r is not None}
    empty = [k for k, c in changes.items() if not c]
    if empty:
        return TasteCall(
            axis,
            toward,
            effects,
            text=f"can't tell which objective moved {axis} further: the report of "
            f"{', '.join(_label(k) for k in empty)} has no answers measured on it",
        )
    return decide(axis, toward, changes, effects)


def markdown(call: TasteCall) -> list[str]:
    """The call's lines: each child's change vs the parent, then the sentence."""
    lines = [f"**Planted taste: {call.axis}, {call.toward} is toward it.**"]
    for k, m in call.effects.items():
        if m.low is not None and m.high is not None:
            lines.append(f"- {_label(k)}: change vs the parent {_fmt(m)}")
        else:
            lines.append(f"- {_label(k)}: change vs the parent {m.value:+.2f}, no interval (n={m.n})")
    lines.append(f"- **{'Winner' if call.winner else 'Call'}**: {call.text}")
    return lines
