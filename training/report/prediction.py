"""A checkpoint report's prediction before play: how the child will fare against its parent in the arena.

Each new report states the child's expected win rate against its parent, ties counted as half, with a 95%
interval. It is saved in the report (``prediction``), with when it was made and on what, so it is fixed
before the child plays. ``training.report.track_record`` scores it on the votes that come after.

What it is based on, first that applies:
- *judge*: the judge's position-swapped head-to-head on the held-out prompts. The predicted rate is the
  judge's child win rate; the interval is the judge's 95% bootstrap interval, widened by ``JUDGE_MARGIN``
  on each side. The margin allows for people not voting as the judge does.
- *verdict*: the report's verdict from its measured drift, mapped to a deliberately wide interval
  (``VERDICT_MAP``). It encodes the report's claim: a pass should play about even, a regress should
  not beat its parent, a watch changed in a way the report does not value.
- none: no parent, or the verdict is unknown with no judge. The prediction then says why there is none.
A report that was saved before predictions has none; one is never made for it after play.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from vibestudio.standings.track_record import votes_needed

#: The prediction's rules; a saved prediction keeps the version it was made with.
VERSION = 1
#: Added to each side of the judge's interval: people do not vote exactly as a judge does.
JUDGE_MARGIN = 0.10
#: A verdict's predicted win rate and its 95% interval (no judge configured).
VERDICT_MAP: dict[str, tuple[float, float, float]] = {
    "pass": (0.50, 0.35, 0.65),
    "watch": (0.50, 0.25, 0.75),
    "regress": (0.35, 0.10, 0.50),
}


def _none(why: str, made_at: str) -> dict[str, Any]:
    return {"version": VERSION, "made_at": made_at, "basis": "none", "why": why}


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def predict(report: dict[str, Any], now: datetime | None = None) -> dict[str, Any]:
    """The prediction of a report (a ``CheckpointReport`` as a dict), made at ``now`` (default: now)."""
    made_at = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    parent = report.get("parent")
    if parent is None:
        return _none("the report has no parent to compare with", made_at)
    judge = report.get("judge") or {}
    if judge.get("n"):
        low = _clip(0.5 + float(judge["low"]) - JUDGE_MARGIN)
        high = _clip(0.5 + float(judge["high"]) + JUDGE_MARGIN)
        p = float(judge["win_rate"])
        based_on = (
            f"judge {judge['judge']}'s position-swapped head-to-head: child preferred {p:.0%} "
            f"[{0.5 + judge['low']:.0%}, {0.5 + judge['high']:.0%}] of {judge['n']} readable verdicts, "
            f"widened by {JUDGE_MARGIN:.0%} each side for people voting unlike the judge"
        )
        inputs = {"judge": judge["judge"], "n": judge["n"], "outcomes": judge.get("outcomes", {})}
        return _made(report, "judge", p, low, high, based_on, inputs, made_at)
    verdict = (report.get("verdict") or {}).get("verdict", "unknown")
    if verdict not in VERDICT_MAP:
        why = (report.get("unmeasured") or {}).get("judge/child_win_rate", "no judge configured")
        return _none(f"the verdict is {verdict} and there is no judge head-to-head ({why})", made_at)
    p, low, high = VERDICT_MAP[verdict]
    reasons = [r for r in (report.get("verdict") or {}).get("reasons", []) if not r.startswith("unknown")]
    based_on = (
        f"the report's verdict {verdict} on {report.get('n_prompts', 0)} held-out prompts"
        + (f" ({'; '.join(reasons[:3])})" if reasons else "")
        + ", mapped to a deliberately wide interval (no judge configured)"
    )
    inputs = {"verdict": verdict, "reasons": reasons, "n_prompts": report.get("n_prompts", 0)}
    return _made(report, "verdict", p, low, high, based_on, inputs, made_at)


def _made(
    report: dict[str, Any],
    basis: str,
    p: float,
    low: float,
    high: float,
    based_on: str,
    inputs: dict[str, Any],
    made_at: str,
) -> dict[str, Any]:
    return {
        "version": VERSION,
        "made_at": made_at,
        "basis": basis,
        "against": report.get("parent"),
        "p": p,
        "low": low,
        "high": high,
        "based_on": based_on,
        "inputs": inputs,
        "needed": votes_needed(low, high),
    }


def since_stamp(prediction: dict[str, Any]) -> float | None:
    """The prediction's time as a battle record's ``tstamp`` (a naive UTC time's ``timestamp()``), or None."""
    made = prediction.get("made_at")
    if not made:
        return None
    at = datetime.fromisoformat(made)
    if at.tzinfo is not None:
        at = at.astimezone(UTC).replace(tzinfo=None)
    return at.timestamp()


def prediction_md(report: dict[str, Any], esc: Any = lambda s: s) -> str:
    """The report's prediction in words, from the same dict as its numbers."""
    pred = report.get("prediction") or {}
    head = "### Prediction before play"
    if not pred:
        return (
            f"{head}\nNo prediction: the report was made before reports predicted (none is made after play)."
        )
    if pred.get("basis") == "none":
        return f"{head}\nNo prediction: {esc(pred.get('why', ''))}."
    return (
        f"{head}\nIn anonymous battles against {esc(str(pred['against']))}, {esc(str(report.get('contestant')))} "
        f"should win **{pred['p']:.0%}** of votes (ties as half), 95% interval "
        f"[{pred['low']:.0%}, {pred['high']:.0%}]. Based on {esc(pred['based_on'])}. Made {pred['made_at']}, "
        f"before play; scored once it has {pred['needed']} head-to-head votes cast after that."
    )
