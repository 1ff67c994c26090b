"""Verdicts: pass / watch / regress / unknown for a checkpoint, from rules in a YAML file, and the hold on play.

A report (``training.drift.CheckpointReport``) carries named measures, each either a ``Change`` (parent vs child
with interval, p and q) as a dict, a plain number, or "unmeasured" with the reason. Rules
(``training/data/verdict_rules.yaml`` by default, or any file a job or caller names) say which condition on
which measure gives which verdict; see the file's header for the vocabulary. A measure that nobody produced
(the sycophancy probes before they run) is "unmeasured" and only matters when its rule is ``required``.

``record`` stores the verdict as a ``VerdictEvent`` row and, when a matched rule holds, takes the contestant out
of anonymous battles (``active = false``). ``release`` lets it back in and logs who did it and why; ``hold``
takes any contestant out by hand. ``current`` gives the newest verdict per contestant for badges.
"""

from __future__ import annotations

import fnmatch
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from accounts import require_role
from arena.registry import get_contestant, set_active
from db.files import read_yaml
from db.models import VerdictEvent
from db.session import Database

RULES_PATH = Path(__file__).parent / "data" / "verdict_rules.yaml"
VERDICTS = ("pass", "watch", "regress", "unknown")
_ORDER = {"pass": 0, "watch": 1, "unknown": 2, "regress": 3}
CONDITIONS = ("significant_increase", "significant_decrease", "flagged", "above", "below")
BADGES = {"pass": "✅ pass", "watch": "👀 watch", "regress": "⛔ regress", "unknown": "❔ unknown"}


class VerdictError(ValueError):
    """A rules file that cannot be used (the message names the file, rule and field)."""


@dataclass
class Rule:
    name: str
    measure: str
    when: str
    verdict: str
    value: float = 0.0
    min_delta: float = 0.0
    hold: bool = False
    required: bool = False


@dataclass
class Rules:
    version: int
    alpha: float
    rules: list[Rule]
    source: str


@dataclass
class Verdict:
    verdict: str
    reasons: list[str] = field(default_factory=list)
    unmeasured: list[str] = field(default_factory=list)
    hold: bool = False
    rules_version: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def badge(self) -> str:
        return BADGES.get(self.verdict, self.verdict)


def load_rules(path: str | Path | None = None) -> Rules:
    """Parse and check a rules file; errors name the file, the rule's index and the field."""
    path = Path(path or RULES_PATH)
    data, error = read_yaml(path)
    if error is not None:
        raise VerdictError(error.format(str(path)))
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise VerdictError(f"{path}: expected a mapping with a 'rules' list")
    rules = []
    for i, raw in enumerate(data["rules"]):
        where = f"{path}: rules[{i}]"
        if not isinstance(raw, dict):
            raise VerdictError(f"{where}: expected a mapping")
        unknown = set(raw) - set(Rule.__dataclass_fields__)
        if unknown:
            raise VerdictError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        try:
            rule = Rule(**{"name": raw.get("measure", f"rule {i}"), **raw})
        except TypeError as exc:
            raise VerdictError(f"{where}: {exc}") from exc
        if rule.when not in CONDITIONS:
            raise VerdictError(f"{where}: when must be one of {', '.join(CONDITIONS)}, got {rule.when!r}")
        if rule.verdict not in ("watch", "regress"):
            raise VerdictError(f"{where}: verdict must be watch or regress, got {rule.verdict!r}")
        if not isinstance(rule.value, int | float) or not isinstance(rule.min_delta, int | float):
            raise VerdictError(f"{where}: value and min_delta must be numbers")
        rules.append(rule)
    alpha = data.get("alpha", 0.05)
    if not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise VerdictError(f"{path}: alpha must be between 0 and 1, got {alpha!r}")
    return Rules(int(data.get("version", 1)), float(alpha), rules, str(path))


def _matches(rule: Rule, value: Any, alpha: float) -> bool:
    if isinstance(value, int | float):
        return (rule.when == "above" and value > rule.value) or (rule.when == "below" and value < rule.value)
    q = value.get("q") if value.get("q") is not None else value.get("p", 1.0)
    delta = float(value.get("delta", 0.0))
    sig = q is not None and q < alpha and abs(delta) >= rule.min_delta
    if rule.when == "significant_increase":
        return sig and delta > 0
    if rule.when == "significant_decrease":
        return sig and delta < 0
    if rule.when == "flagged":
        return bool(value.get("flagged"))
    child = float(value.get("child", 0.0))
    return (rule.when == "above" and child > rule.value) or (rule.when == "below" and child < rule.value)


def decide(measures: dict[str, Any], unmeasured: dict[str, str], rules: Rules | None = None) -> Verdict:
    """Apply the rules to a report's measures (``{name: Change dict | number}``) and its ``unmeasured`` reasons."""
    rules = rules or load_rules()
    verdict = Verdict("pass", rules_version=rules.version)
    missing_required = []
    for rule in rules.rules:
        names = [n for n in measures if fnmatch.fnmatchcase(n, rule.measure)]
        gaps = [n for n in unmeasured if fnmatch.fnmatchcase(n, rule.measure)]
        if not names and not gaps and "*" not in rule.measure:
            gaps = [rule.measure]
            unmeasured = {**unmeasured, rule.measure: "no measure of this name was produced"}
        for n in gaps:
            verdict.unmeasured.append(f"{n}: {unmeasured[n]}")
            if rule.required:
                missing_required.append(n)
        for n in names:
            if _matches(rule, measures[n], rules.alpha):
                verdict.reasons.append(f"{rule.verdict}: {rule.name} ({n})")
                if _ORDER[rule.verdict] > _ORDER[verdict.verdict]:
                    verdict.verdict = rule.verdict
                verdict.hold = verdict.hold or rule.hold
    if missing_required and verdict.verdict != "regress":
        verdict.verdict = "unknown"
        verdict.reasons.append("unknown: could not measure " + ", ".join(sorted(set(missing_required))))
    verdict.unmeasured = sorted(set(verdict.unmeasured))
    return verdict


def record(db: Database, contestant_id: int, verdict: Verdict, report_path: str | None = None) -> None:
    """Store the verdict; a holding rule takes the contestant out of anonymous battles."""
    with db.session() as s:
        s.add(
            VerdictEvent(
                contestant_id=contestant_id,
                action="verdict",
                verdict=verdict.verdict,
                held=verdict.hold,
                reason="; ".join(verdict.reasons) or "no rule matched",
                details={"unmeasured": verdict.unmeasured, "report": report_path},
            )
        )
        if verdict.hold:
            set_active(s, contestant_id, False)


def _manual(db: Database, contestant: int | str, user_id: int | None, reason: str, active: bool) -> None:
    require_role(db, user_id, "researcher")
    if not reason.strip():
        raise VerdictError("say why (a reason is logged with the decision)")
    with db.session() as s:
        info = get_contestant(s, contestant)
        last = _latest(s).get(info.id)
        s.add(
            VerdictEvent(
                contestant_id=info.id,
                action="release" if active else "hold",
                verdict=last.verdict if last else None,
                held=not active,
                user_id=user_id,
                reason=reason.strip(),
                details={},
            )
        )
        set_active(s, info.id, active)


def release(db: Database, contestant: int | str, user_id: int | None, reason: str) -> None:
    """Let a held checkpoint into anonymous battles; who and why are logged."""
    _manual(db, contestant, user_id, reason, True)


def hold(db: Database, contestant: int | str, user_id: int | None, reason: str) -> None:
    """Take a contestant out of anonymous battles by hand; who and why are logged."""
    _manual(db, contestant, user_id, reason, False)


def _latest(session: Any) -> dict[int, VerdictEvent]:
    out: dict[int, VerdictEvent] = {}
    for row in session.scalars(select(VerdictEvent).order_by(VerdictEvent.id)):
        out[row.contestant_id] = row
    return out


@dataclass
class Status:
    verdict: str | None
    held: bool
    badge: str
    reason: str
    history: list[dict[str, Any]] = field(default_factory=list)


def current(db: Database) -> dict[int, Status]:
    """Newest verdict per contestant id (contestants never judged are absent): for badges in lists."""
    with db.session() as s:
        return {
            cid: Status(e.verdict, e.held, badge_for(e.verdict, e.held), e.reason or "")
            for cid, e in _latest(s).items()
        }


def badge_for(verdict: str | None, held: bool = False) -> str:
    text = BADGES.get(verdict or "", "")
    return (text + " · held" if held else text).strip(" ·")


def history(db: Database, contestant: int | str) -> list[dict[str, Any]]:
    """Every verdict and decision for one contestant, oldest first (who, what, why, when)."""
    from db.models import User

    with db.session() as s:
        info = get_contestant(s, contestant)
        rows = s.execute(
            select(VerdictEvent, User.name)
            .outerjoin(User, VerdictEvent.user_id == User.id)
            .where(VerdictEvent.contestant_id == info.id)
            .order_by(VerdictEvent.id)
        ).all()
        return [
            {
                "action": e.action,
                "verdict": e.verdict,
                "held": e.held,
                "by": name or ("rules" if e.action == "verdict" else "open-mode user"),
                "reason": e.reason,
                "at": e.created_at.isoformat(timespec="seconds"),
            }
            for e, name in rows
        ]


def badges_by_name(db: Database) -> dict[str, str]:
    """Verdict badge per contestant name (only contestants that have a verdict): for lists and dropdowns."""
    from db.models import Contestant

    status = current(db)
    if not status:
        return {}
    with db.session() as s:
        names = dict(s.execute(select(Contestant.id, Contestant.public_name)).tuples().all())
    return {names[cid]: st.badge for cid, st in status.items() if cid in names}
