"""Verdicts: pass / watch / regress / unknown for a checkpoint, from rules in a YAML file, and the hold on
play.

A report (``training.report.steps.CheckpointReport``) carries named measures. Each is one of:
- a ``Change`` (parent vs child with interval, p and q) as a dict;
- a plain number;
- "unmeasured", with the reason.
Rules say which condition on which measure gives which verdict. They live in
``training/report/data/verdict_rules.yaml`` by default, or any file a job or caller names. See the file's
header for the vocabulary. A measure nobody produced is "unmeasured", like the sycophancy probes before
they run. It only matters when its rule is ``required``.

What a verdict does to play is the file's ``hold`` section. These hold:
- a matched rule with ``hold: true``;
- the verdicts listed in ``hold.verdicts`` (regress and unknown by default);
- a report that failed or was skipped (``hold.failed_report`` / ``hold.skipped_report``, true by default).

``record`` stores the verdict as a ``VerdictEvent`` row, with the report's size and who ran it. It applies it
to the contestant's one lifecycle (``arena.lifecycle.apply_verdict``: pending -> released or held, released ->
held...). A verdict releases a child the rules held only when its report measured at least what each report
that held it measured (``shortfall``); otherwise the child stays held and the row says why. ``release`` and
``hold`` are a researcher's decisions through the same lifecycle, logged with who and why. ``current``
gives the state and the newest verdict per contestant, for badges. ``reevaluate`` decides again from a
saved report with the probes stored since. It records the result and applies its hold.
"""

from __future__ import annotations

import copy
import fnmatch
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from vibestudio.accounts import require_role
from vibestudio.arena import lifecycle
from vibestudio.arena.registry import get_contestant
from vibestudio.common.files import read_yaml
from vibestudio.db.models import Contestant, ContestantEvent, User, VerdictEvent
from vibestudio.db.session import Database
from vibestudio.training.publishing.fidelity import FORMS, Policy
from vibestudio.training.report import decisions

RULES_PATH = Path(__file__).parent / "data" / "verdict_rules.yaml"
VERDICTS = ("pass", "watch", "regress", "unknown")
_ORDER = {"pass": 0, "watch": 1, "unknown": 2, "regress": 3}
CONDITIONS = ("significant_increase", "significant_decrease", "flagged", "above", "below")
#: Who runs a report from the CLI or the Python API without an account (as ``arena.lifecycle`` names them).
LOCAL_OPERATOR = "local operator"
BADGES = {"pass": "✅ pass", "watch": "👀 watch", "regress": "⛔ regress", "unknown": "❔ unknown"}


class VerdictError(ValueError):
    """A rules file that cannot be used (the message names the file, rule and field)."""


#: The exit status of a CLI gate that blocks (``--fail-on``): 1 is an error, 2 a usage error (Typer's).
GATE_EXIT = 3


def blocks(verdict: str | None, fail_on: str | None) -> bool:
    """Whether a CI gate set to ``fail_on`` stops on ``verdict``.

    ``fail_on`` names the mildest verdict that blocks: ``regress`` blocks regress only, ``unknown`` blocks unknown
    and regress, ``watch`` everything but pass. No verdict yet counts as unknown. None never blocks.
    """
    if fail_on is None:
        return False
    if fail_on not in _ORDER:
        raise VerdictError(
            f"--fail-on must be one of {', '.join(v for v in VERDICTS if v != 'pass')}, got {fail_on!r}"
        )
    if fail_on == "pass":
        raise VerdictError("--fail-on pass would block every checkpoint; name watch, unknown or regress")
    return _ORDER[verdict or "unknown"] >= _ORDER[fail_on]


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
class HoldPolicy:
    """Which outcomes keep a new checkpoint out of anonymous battles (besides rules with ``hold: true``)."""

    verdicts: tuple[str, ...] = ("regress", "unknown")
    failed_report: bool = True
    skipped_report: bool = True


@dataclass
class Rules:
    version: int
    alpha: float
    rules: list[Rule]
    source: str
    holds: HoldPolicy = field(default_factory=HoldPolicy)
    fidelity: Policy = field(default_factory=Policy)


@dataclass
class Verdict:
    verdict: str
    reasons: list[str] = field(default_factory=list)
    unmeasured: list[str] = field(default_factory=list)
    hold: bool = False
    rules_version: int = 0
    #: one ``training.report.decisions.Decision`` per measure (as dicts): what every view of the report renders
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def badge(self) -> str:
        return BADGES.get(self.verdict, self.verdict)


def load_rules(path: str | Path | None = None) -> Rules:
    """Parse and check a rules file; errors name the file, the rule's index and the field. A file read before
    and unchanged since (same size and modification time) is not parsed again: YAML parsing in pure Python
    took ~0.1 s of a report's verdict, decided again for every reevaluation."""
    path = Path(path or RULES_PATH)
    try:
        st = path.stat()
        key: tuple[str, int, int] | None = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    except OSError:
        key = None  # read_yaml says what is wrong with it
    if key is not None and key in _RULES_CACHE:
        return copy.deepcopy(_RULES_CACHE[key])
    rules = _parse_rules(path)
    if key is not None:
        if len(_RULES_CACHE) >= 8:  # a few files in use at a time, in practice
            _RULES_CACHE.clear()
        _RULES_CACHE[key] = copy.deepcopy(rules)
    return rules


_RULES_CACHE: dict[tuple[str, int, int], Rules] = {}


def _parse_rules(path: Path) -> Rules:
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
    return Rules(
        int(data.get("version", 1)),
        float(alpha),
        rules,
        str(path),
        _hold_policy(path, data.get("hold")),
        _fidelity_policy(path, data.get("fidelity")),
    )


def _fidelity_policy(path: Path, raw: Any) -> Policy:
    """The ``fidelity`` section: which deployed forms a child may play as, and how much of its training each
    must keep (``training.publishing.fidelity``)."""
    if raw is None:
        return Policy()
    _known_fields(path, "fidelity", raw, Policy)
    out = Policy()
    floor = raw.get("floor", out.floor)
    if isinstance(floor, bool) or not isinstance(floor, int | float) or not 0 < floor <= 1:
        raise VerdictError(f"{path}: fidelity.floor must be a number in (0, 1], got {floor!r}")
    forms = raw.get("forms", list(out.forms))
    if not isinstance(forms, list) or not forms or any(f not in FORMS for f in forms):
        raise VerdictError(f"{path}: fidelity.forms must be a list of {', '.join(FORMS)}, got {forms!r}")
    ints = {}
    for key, low in (("prompts", 2), ("tokens", 1), ("seed", 0)):
        v = raw.get(key, getattr(out, key))
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise VerdictError(f"{path}: fidelity.{key} must be an integer >= {low}, got {v!r}")
        ints[key] = v
    floats = {}
    for key in ("min_shift", "max_added_noise"):
        v = raw.get(key, getattr(out, key))
        if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
            raise VerdictError(f"{path}: fidelity.{key} must be a positive number, got {v!r}")
        floats[key] = float(v)
    return Policy(
        floor=float(floor),
        forms=tuple(forms),
        prompts=ints["prompts"],
        tokens=ints["tokens"],
        seed=ints["seed"],
        min_shift=floats["min_shift"],
        max_added_noise=floats["max_added_noise"],
    )


def _known_fields(path: Path, section: str, raw: Any, fields_of: type) -> None:
    """Raise VerdictError unless the rules file's ``section`` is a mapping of ``fields_of``'s fields."""
    names = [f.name for f in fields(fields_of)]
    if not isinstance(raw, dict):
        raise VerdictError(f"{path}: {section} must be a mapping ({', '.join(names)})")
    unknown = set(raw) - set(names)
    if unknown:
        raise VerdictError(f"{path}: {section}: unknown field(s) {', '.join(sorted(unknown))}")


def _hold_policy(path: Path, raw: Any) -> HoldPolicy:
    if raw is None:
        return HoldPolicy()
    _known_fields(path, "hold", raw, HoldPolicy)
    listed = raw.get("verdicts", list(HoldPolicy.verdicts))
    if not isinstance(listed, list) or any(v not in VERDICTS for v in listed):
        raise VerdictError(f"{path}: hold.verdicts must be a list of {', '.join(VERDICTS)}, got {listed!r}")
    flags = {k: raw.get(k, True) for k in ("failed_report", "skipped_report")}
    for k, v in flags.items():
        if not isinstance(v, bool):
            raise VerdictError(f"{path}: hold.{k} must be true or false, got {v!r}")
    return HoldPolicy(tuple(listed), flags["failed_report"], flags["skipped_report"])


def no_report(why: str, skipped: bool, rules: Rules | None = None) -> Verdict:
    """The verdict of a checkpoint whose report failed (or was skipped): unknown, held unless the rules'
    ``hold`` section says otherwise."""
    rules = rules or load_rules()
    held = rules.holds.skipped_report if skipped else rules.holds.failed_report
    return Verdict("unknown", [f"unknown: {why}"], hold=held, rules_version=rules.version)


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
        return (
            decisions.past_threshold(value, alpha)
            if "flagged" in value or "past_threshold" in value
            else False
        )
    child = float(value.get("child", 0.0))
    return (rule.when == "above" and child > rule.value) or (rule.when == "below" and child < rule.value)


def decide(measures: dict[str, Any], unmeasured: dict[str, str], rules: Rules | None = None) -> Verdict:
    """Apply the rules to a report's measures (``{name: Change dict | number}``) and its ``unmeasured`` reasons."""
    rules = rules or load_rules()
    verdict = Verdict("pass", rules_version=rules.version)
    missing_required = []
    named: dict[str, list[str]] = {}
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
                named.setdefault(n, []).append(verdict.reasons[-1])
                if _ORDER[rule.verdict] > _ORDER[verdict.verdict]:
                    verdict.verdict = rule.verdict
                verdict.hold = verdict.hold or rule.hold
    if missing_required and verdict.verdict != "regress":
        verdict.verdict = "unknown"
        verdict.reasons.append("unknown: could not measure " + ", ".join(sorted(set(missing_required))))
    verdict.unmeasured = sorted(set(verdict.unmeasured))
    verdict.decisions = {
        k: d.to_dict() for k, d in decisions.decide(measures, unmeasured, named, rules.alpha).items()
    }
    return verdict


def apply_hold_policy(verdict: Verdict, rules: Rules) -> Verdict:
    """Hold the verdicts the rules' ``hold.verdicts`` lists (after every other adjustment of the verdict)."""
    if verdict.verdict in rules.holds.verdicts and not verdict.hold:
        verdict.hold = True
        verdict.reasons.append(f"held: the rules hold a {verdict.verdict} verdict")
    return verdict


@dataclass(frozen=True)
class Size:
    """What a report measured: its held-out drift prompts, its eval items and the names of its measures."""

    prompts: int = 0
    items: int = 0
    measures: tuple[str, ...] = ()

    def line(self) -> str:
        n = len(self.measures)
        return f"{self.prompts} prompts, {self.items} eval items, {n} measure{'' if n == 1 else 's'}"

    def to_dict(self) -> dict[str, Any]:
        return {"prompts": self.prompts, "items": self.items, "measures": list(self.measures)}

    @classmethod
    def from_dict(cls, d: Any) -> Size | None:
        if not isinstance(d, dict):
            return None
        return cls(
            int(d.get("prompts") or 0), int(d.get("items") or 0), tuple(sorted(d.get("measures") or ()))
        )


def size_of(report: Any) -> Size:
    """The size of a report (a ``CheckpointReport`` or its dict): ``n_prompts``, the evals' ``n`` and the
    names in ``measures`` (a measure left unmeasured is not among them)."""
    data = report.to_dict() if hasattr(report, "to_dict") else report
    if not isinstance(data, dict):
        raise VerdictError(f"a report must be a mapping, got {type(report).__name__}")
    evals = data.get("evals") or {}
    return Size(
        int(data.get("n_prompts") or 0),
        int(evals.get("n") or 0) if isinstance(evals, dict) else 0,
        tuple(sorted(data.get("measures") or {})),
    )


def shortfall(size: Size | None, holding: Size) -> list[str]:
    """What a report of ``size`` lacks to release a child ``holding`` held; empty when it may release it.

    The rule: it may release only if it has at least as many drift prompts and at least as many eval items,
    and every measure the holding report measured is measured too. None (no report: a verdict recorded
    without one) measured nothing. A report that measured less can pass only because its intervals are wider
    or a measure is missing, so it cannot undo a hold from a larger one.
    """
    size = size or Size()
    short = []
    if size.prompts < holding.prompts:
        short.append(f"{size.prompts} < {holding.prompts} prompts")
    if size.items < holding.items:
        short.append(f"{size.items} < {holding.items} eval items")
    missing = sorted(set(holding.measures) - set(size.measures))
    if missing:
        short.append("not measured: " + ", ".join(missing))
    return short


@dataclass
class Recorded:
    """What ``record_verdict`` did: the contestant's state after, and why a passing report kept it held."""

    state: str
    kept_held: str | None = None


def record(
    db: Database,
    contestant_id: int,
    verdict: Verdict,
    report_path: str | None = None,
    *,
    report: Any = None,
    user_id: int | None = None,
    by: str | None = None,
) -> str:
    """Store the verdict and apply it to the contestant's lifecycle, in one transaction; returns the state.
    See ``record_verdict`` for the arguments."""
    return record_verdict(
        db, contestant_id, verdict, report_path, report=report, user_id=user_id, by=by
    ).state


def record_verdict(
    db: Database,
    contestant_id: int,
    verdict: Verdict,
    report_path: str | None = None,
    *,
    report: Any = None,
    user_id: int | None = None,
    by: str | None = None,
) -> Recorded:
    """Store the verdict and apply it to the contestant's lifecycle, in one transaction.

    ``report`` (or else the saved report at ``report_path``) gives the report's size; none means it measured
    nothing. ``user_id`` (a user) or ``by`` (a name, e.g. the CLI's local operator) is who ran it; neither is
    an automatic verdict (the report job). A verdict that would release a child the rules hold does not when
    its report is smaller than one that held it (``shortfall``): the child stays held and ``kept_held`` says why,
    with both sizes and how to go on.
    """
    size = _size(report, report_path)
    with db.session() as s:
        name = _user_name(s, user_id)
        details: dict[str, Any] = {"unmeasured": verdict.unmeasured, "report": report_path}
        details["size"] = size.to_dict() if size is not None else None
        if by and by.strip() and name is None:
            details["by"] = by.strip()  # who ran it, without an account (``_by`` names the row by it)
        kept = None if verdict.hold else _kept_held(s, contestant_id, size)
        reasons = list(verdict.reasons)
        if kept is not None:
            details["kept_held"] = kept
            reasons.append(kept)
        event = VerdictEvent(
            contestant_id=contestant_id,
            action="verdict",
            verdict=verdict.verdict,
            held=verdict.hold,  # what this verdict asked for; the state itself is contestants.state
            user_id=user_id,
            reason="; ".join(reasons) or "no rule matched",
            details=details,
        )
        s.add(event)
        s.flush()
        lifecycle.apply_verdict(
            s,
            contestant_id,
            verdict.verdict,
            verdict.hold or kept is not None,
            reasons,
            by=_by(event, name),  # the state change names who ran the report as the history does
            user_id=user_id,
        )
        # the newest lifecycle event this verdict saw (its own included): orders it among them without a clock
        event.details = {**details, "seen": _last_event_id(s, contestant_id)}
        return Recorded(lifecycle.state_of(s, contestant_id), kept)


def _size(report: Any, report_path: str | None) -> Size | None:
    if report is not None:
        return size_of(report)
    if not report_path:
        return None
    try:
        data = json.loads(Path(report_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VerdictError(f"{report_path}: cannot read the report to record its verdict ({exc})") from exc
    return size_of(data)


def _user_name(s: Session, user_id: int | None) -> str | None:
    if user_id is None:
        return None
    name = s.scalar(select(User.name).where(User.id == user_id))
    if name is None:
        raise VerdictError(f"no user with id {user_id} to record the verdict for")
    return str(name)


def _last_event_id(s: Session, contestant_id: int) -> int:
    q = select(func.max(ContestantEvent.id)).where(ContestantEvent.contestant_id == contestant_id)
    return int(s.scalar(q) or 0)


def _kept_held(s: Session, contestant_id: int, size: Size | None) -> str | None:
    """Why a releasing verdict of this size keeps the contestant held, or None when it may release it.

    The reports that hold it are the holding verdicts recorded since it last left pending or released (a
    person's release ends a hold). Only a hold the rules keep counts: a person's hold is undone by a person.
    """
    row = s.get(Contestant, contestant_id)
    if row is None or row.state not in ("held", "hidden"):
        return None
    events = list(
        s.scalars(
            select(ContestantEvent)
            .where(ContestantEvent.contestant_id == contestant_id)
            .order_by(ContestantEvent.id)
        )
    )
    if row.state == "held":
        into = next((e for e in reversed(events) if e.to_state == "held"), None)
        if into is not None and into.action in lifecycle.PERSON_ACTIONS:
            return None  # a person's hold: the lifecycle keeps it whatever the report
    since = max((e.id for e in events if e.from_state in (None, "pending", "released")), default=0)
    holding = [
        (e, held)
        for e in s.scalars(
            select(VerdictEvent)
            .where(VerdictEvent.contestant_id == contestant_id, VerdictEvent.action == "verdict")
            .order_by(VerdictEvent.id)
        )
        if e.held
        and int((e.details or {}).get("seen") or 0) >= since
        and (held := Size.from_dict((e.details or {}).get("size"))) is not None
    ]
    short = [(e, held, lacks) for e, held in holding if (lacks := shortfall(size, held))]
    if not short:
        return None
    need = Size(  # covers every report that holds it: following the advice releases it
        max(h.prompts for _, h in holding),
        max(h.items for _, h in holding),
        tuple(sorted({m for _, h in holding for m in h.measures})),
    )
    this = size.line() if size is not None else "no report"
    held_by = "; ".join(
        f"verdict #{e.id} ({e.verdict}, {e.created_at:%Y-%m-%d %H:%M}: {h.line()}; short: {', '.join(lacks)})"
        for e, h, lacks in short
    )
    missing = sorted(set(need.measures) - set((size or Size()).measures))
    rerun = f"--prompts {need.prompts} --eval-items {need.items}"
    return (
        f"kept held: this report ({this}) measured less than the report that held it: {held_by}. "
        f"Rerun the report with at least {need.prompts} prompts and {need.items} eval items ({rerun})"
        + (f" measuring {', '.join(missing)}" if missing else "")
        + f", or a researcher releases it by hand: `vibestudio models release {row.public_name} --reason ...` "
        "(logged with their name)"
    )


def _manual(db: Database, contestant: int | str, user_id: int | None, reason: str, active: bool) -> None:
    require_role(db, user_id, "researcher")
    if not reason.strip():
        raise VerdictError("say why (a reason is logged with the decision)")
    with db.session() as s:
        info = get_contestant(s, contestant)
        try:
            if active:
                lifecycle.release(s, info.id, reason, user_id=user_id)
            else:
                lifecycle.hold(s, info.id, reason, user_id=user_id)
        except lifecycle.LifecycleError as exc:
            raise VerdictError(str(exc)) from exc


def release(db: Database, contestant: int | str, user_id: int | None, reason: str) -> None:
    """A researcher lets a held (or pending) checkpoint into anonymous battles; who and why are logged."""
    _manual(db, contestant, user_id, reason, True)


def hold(db: Database, contestant: int | str, user_id: int | None, reason: str) -> None:
    """A researcher takes a contestant out of anonymous battles; who and why are logged."""
    _manual(db, contestant, user_id, reason, False)


def _latest(session: Any) -> dict[int, VerdictEvent]:
    out: dict[int, VerdictEvent] = {}
    for row in session.scalars(select(VerdictEvent).order_by(VerdictEvent.id)):
        out[row.contestant_id] = row
    return out


@dataclass
class Status:
    verdict: str | None  # the newest recorded verdict (None: never judged)
    held: bool  # the lifecycle state is held (the one truth; not the verdict's wish)
    badge: str
    reason: str
    state: str = "released"
    history: list[dict[str, Any]] = field(default_factory=list)


def current(db: Database) -> dict[int, Status]:
    """Per contestant id that has a verdict or is not released: its state and newest verdict (for badges)."""
    with db.session() as s:
        latest = _latest(s)
        states = dict(s.execute(select(Contestant.id, Contestant.state)).tuples().all())
        out = {}
        for cid, state in states.items():
            e = latest.get(cid)
            if e is None and state == "released":
                continue
            out[cid] = Status(
                e.verdict if e else None,
                state == "held",
                badge_for(e.verdict if e else None, state),
                (e.reason or "") if e else "",
                state,
            )
        return out


def badge_for(verdict: str | None, state: str | bool = "released") -> str:
    """The verdict's badge and, when it is not simply released, the lifecycle state."""
    if isinstance(state, bool):  # older callers passed held=True/False
        state = "held" if state else "released"
    text = BADGES.get(verdict or "", "")
    if state != "released":
        text = f"{text} · {lifecycle.badge(state)}" if text else lifecycle.badge(state)
    return text.strip(" ·")


def history(db: Database, contestant: int | str) -> list[dict[str, Any]]:
    """Every verdict and every state change for one contestant, oldest first (who, what, why, when)."""
    with db.session() as s:
        info = get_contestant(s, contestant)
        rows = s.execute(
            select(VerdictEvent, User.name)
            .outerjoin(User, VerdictEvent.user_id == User.id)
            .where(VerdictEvent.contestant_id == info.id)
            .order_by(VerdictEvent.id)
        ).all()
        out = [
            {
                "action": e.action,
                "verdict": e.verdict,
                "held": e.held,
                "by": _by(e, name),
                "reason": e.reason,
                "at": e.created_at.isoformat(timespec="seconds"),
                "kind": "verdict",
                "_order": (e.created_at, 0, e.id),
            }
            for e, name in rows
            if e.action == "verdict"  # hold/release rows from before the lifecycle are in its log now
        ]
        last_verdict = None
        changes = s.scalars(
            select(ContestantEvent)
            .where(ContestantEvent.contestant_id == info.id)
            .order_by(ContestantEvent.id)
        ).all()
        for c in changes:
            if c.action == "verdict":
                continue  # the verdict row above is the same fact (arena.lifecycle.history has the move)
            out.append(
                {
                    "action": c.action,
                    "verdict": (c.details or {}).get("verdict", last_verdict),
                    "held": c.to_state == "held",
                    "by": c.by_user,
                    "reason": c.reason,
                    "at": c.created_at.isoformat(timespec="seconds"),
                    "kind": "state",
                    "from": c.from_state,
                    "to": c.to_state,
                    "_order": (c.created_at, 1, c.id),
                }
            )
        # verdicts and state changes live in two tables: within each, the id order is the truth
        out = _merge_in_order(out)
        for row in out:
            row.pop("_order", None)
        return out


def _by(e: VerdictEvent, name: str | None) -> str:
    """Who a verdict row names: the person who ran the report, with "(rules)" (the rules decided); "rules"
    alone for an automatic verdict (the report job); a person's hold or release row from before the lifecycle
    is theirs."""
    person = name or (e.details or {}).get("by")
    if e.action != "verdict":
        return person or "open-mode user"
    return f"{person} (rules)" if person else "rules"


def _merge_in_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Two id-ordered streams merged by time; a verdict's own state change (same transaction) follows it."""
    verdict_rows = [r for r in rows if r["kind"] == "verdict"]
    state_rows = [r for r in rows if r["kind"] == "state"]
    merged: list[dict[str, Any]] = []
    i = j = 0
    while i < len(verdict_rows) or j < len(state_rows):
        take_verdict = j >= len(state_rows) or (
            i < len(verdict_rows) and verdict_rows[i]["_order"][0] <= state_rows[j]["_order"][0]
        )
        if take_verdict:
            merged.append(verdict_rows[i])
            i += 1
        else:
            merged.append(state_rows[j])
            j += 1
    return merged


def badges_by_name(db: Database) -> dict[str, str]:
    """Verdict badge per contestant name (only contestants that have a verdict): for lists and dropdowns."""
    status = current(db)
    if not status:
        return {}
    with db.session() as s:
        names = dict(s.execute(select(Contestant.id, Contestant.public_name)).tuples().all())
    return {names[cid]: st.badge for cid, st in status.items() if cid in names}
