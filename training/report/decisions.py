"""One decision per measure of a checkpoint report, computed once; every view of the report reads it.

Several views once each decided for themselves whether a measure had moved. These were the verdict
reasons, the per-feature flags, the drift and tone tables, the "at a glance" line and the "can't tell yet"
list. They used different tests. The verdict's rule used q alone, the flag q and a practical threshold,
"can't tell" the raw interval. So a child could read "regress: more flattery" while its tone table left
flattery unflagged. Now ``decide`` gives each measure one ``Decision``, and the views only render it:

    flagged     the report stands behind the change: significant once adjusted for everything tested with it
                (q < alpha) and past its practical threshold (``past_threshold``, when the measure has one), or a
                verdict rule matched on it (the rule's own condition is then the threshold)
    cant_tell   not flagged, but its 95% interval excludes 0 or its p (or q) is under alpha: a lean the report
                does not stand behind (not significant once adjusted, or under its practical threshold)
    no_change   neither
    unmeasured  the report could not measure it; ``reason`` says why

A number measure (``discovered/significant``: a count) is flagged when a rule matched on it, else
no_change. ``rules`` are the verdict reasons that name the measure. It knows nothing about models or
databases: plain dicts in, plain dataclasses out.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

STATES = ("flagged", "cant_tell", "no_change", "unmeasured")


@dataclass
class Decision:
    measure: str
    state: str
    direction: str = ""  # "up" (child more), "down", or "" (no change or no number)
    reason: str = ""
    rules: list[str] = field(default_factory=list)  # verdict reasons naming this measure

    @property
    def flagged(self) -> bool:
        return self.state == "flagged"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _number(x: Any) -> float | None:
    """``x`` as a finite number, or None (missing, not a number, NaN, infinite)."""
    if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x):
        return float(x)
    return None


def _significant(value: dict[str, Any], alpha: float) -> bool:
    q = _number(value.get("q") if value.get("q") is not None else value.get("p"))
    return q is not None and q < alpha


def past_threshold(value: dict[str, Any], alpha: float) -> bool:
    """The measure's own flag before any rule: significant, and past its practical threshold when it has one
    (``past_threshold``, or ``flagged`` in reports saved before decisions)."""
    own = value.get("past_threshold")
    if own is None:
        own = value.get("flagged")
    return bool(own) if own is not None else _significant(value, alpha)


def _one(name: str, value: Any, rules: list[str], alpha: float) -> Decision:
    if not isinstance(value, dict):  # a number (a count, a win rate): only a rule can flag it
        if rules:
            return Decision(name, "flagged", "", f"a verdict rule matched ({value})", list(rules))
        return Decision(name, "no_change", "", f"no verdict rule matched ({value})")
    delta = _number(value.get("delta"))
    direction = "up" if delta is not None and delta > 0 else "down" if delta is not None and delta < 0 else ""
    q = _number(value.get("q") if value.get("q") is not None else value.get("p"))
    qtext = f"q = {q:.2g}" if q is not None else "no p-value"
    if rules:
        return Decision(name, "flagged", direction, f"a verdict rule matched ({qtext})", list(rules))
    if past_threshold(value, alpha):
        return Decision(name, "flagged", direction, f"significant and past its practical threshold ({qtext})")
    low, high = _number(value.get("low")), _number(value.get("high"))
    excludes_zero = low is not None and high is not None and (low > 0 or high < 0)
    p = _number(value.get("p"))
    if excludes_zero or _significant(value, alpha) or (p is not None and p < alpha):
        why = (
            "under its practical threshold"
            if _significant(value, alpha)
            else "not significant once adjusted for every measure tested together"
        )
        return Decision(name, "cant_tell", direction, f"{why} ({qtext})")
    return Decision(name, "no_change", "", f"no change the data can tell ({qtext})")


def measure_of(reason: str) -> str | None:
    """The measure a verdict reason names: ``"regress: more flattery (drift/flattery)"`` -> ``drift/flattery``."""
    if not reason.endswith(")") or "(" not in reason:
        return None
    return reason[reason.rindex("(") + 1 : -1] or None


def named_by(reasons: list[str], measures: dict[str, Any]) -> dict[str, list[str]]:
    """The verdict reasons that name each measure (for a report saved before decisions)."""
    named: dict[str, list[str]] = {}
    for r in reasons:
        m = measure_of(r)
        if m is not None and m in measures:
            named.setdefault(m, []).append(r)
    return named


def decide(
    measures: dict[str, Any],
    unmeasured: dict[str, str],
    named: dict[str, list[str]],
    alpha: float = 0.05,
) -> dict[str, Decision]:
    """Every measure's decision: the measures produced (with the verdict reasons that matched on each,
    ``named``) and the gaps (``unmeasured``; a measure that was produced is never also a gap)."""
    out = {name: _one(name, value, named.get(name, []), alpha) for name, value in measures.items()}
    for name, why in unmeasured.items():
        if name not in out:
            out[name] = Decision(name, "unmeasured", "", str(why))
    return out


def of_report(report: dict[str, Any]) -> dict[str, Decision]:
    """The decisions a saved report carries (``verdict.decisions``); for a report saved before decisions, or a
    partial one a test builds, the same function applied to what it has (its features as ``drift/<name>``)."""
    stored = (report.get("verdict") or {}).get("decisions")
    if stored:
        return {k: Decision(**v) for k, v in stored.items()}
    measures = dict(report.get("measures") or {})
    for name, f in (report.get("features") or {}).items():
        measures.setdefault(f"drift/{name}", f)
    reasons = list((report.get("verdict") or {}).get("reasons") or [])
    return decide(measures, dict(report.get("unmeasured") or {}), named_by(reasons, measures))


def drift(decisions: dict[str, Decision], feature: str) -> Decision:
    """The decision of one drift feature or tone axis (``no_change`` when the report has none of it)."""
    return decisions.get(f"drift/{feature}") or Decision(f"drift/{feature}", "no_change")
