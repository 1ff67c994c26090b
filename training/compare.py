"""Objectives side by side: one action trains N objectives (DPO, KTO, ORPO, SimPO) from one parent, and one
view compares the children.

All train on one freeze of the votes, with matched budgets.

**Launch** (``launch_comparison``) freezes the current votes once, in one transaction. It makes a pair
snapshot for the pair objectives. When KTO is among them, it also makes an unpaired snapshot of the same
votes; both-good and both-bad votes reach KTO only. A given snapshot is used by every objective instead.
KTO then trains on each pair's two answers. Every config is built and checked by the one pre-launch check
before any job is queued. So a refusal names the objective and launches nothing. Examples are too few
undesirable answers for KTO, or a field out of range.

**Matched budget.** All share the same optimizer steps, learning-rate schedule, LoRA, seed, maximum length
and report settings. They also see the same *answers* per step. A pair row holds two answers, so KTO's
batch of single answers is twice the pair objectives' batch. Each objective keeps its own default learning
rate and beta, as its paper and TRL recommend. The caller may set them for all (``shared``) or for one
(``per_objective``).

**The view** (``comparison``) reads each job: status, steps, seconds, peak memory, KL to the parent with
its standard error. It reads each child's checkpoint report: verdict, eval change and drift with their
intervals. For each measure it names the objective whose interval lies wholly on the better side of every
other's. Where the intervals overlap, it says "can't tell". It needs researcher, and each job's owner or
an admin, as every job read does (``training.jobs.runner.job_view``).

**The planted taste.** A comparison may name the drift feature its votes planted a taste on (``axis``).
The view then carries ``training.compare_taste``'s call. It names the objective that moved that axis
further, by a paired test over the reports' shared prompts. Or it says "can't tell" and how many prompts would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select

from vibestudio.accounts import require_role
from vibestudio.annotation.snapshots import SnapshotError, get_snapshot, snapshot_from_votes
from vibestudio.common.stats import Z95
from vibestudio.db.models import Comparison, Contestant
from vibestudio.db.session import Database
from vibestudio.training.compare_taste import Measured, TasteCall, axis_error, taste_call
from vibestudio.training.compare_taste import markdown as taste_markdown
from vibestudio.training.jobs.config import JOB_KINDS, ConfigError, FieldError, JobConfig, config_errors
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.preflight import errors_text, find_parent, score_rule
from vibestudio.training.jobs.runner import JobView, cancel, job_view
from vibestudio.training.objectives.dpo_kin import kl_unmeasured
from vibestudio.training.report.verdict import current as verdict_status

#: The objectives that can be compared: they train on the arena's votes and publish a child.
OBJECTIVES: tuple[str, ...] = tuple(
    k for k, v in JOB_KINDS.items() if v.rows in ("pairs", "unpaired") and v.publishes
)
DEFAULT_OBJECTIVES = ("dpo", "kto", "simpo")
#: The drift features the view always shows (besides any a child's report flagged).
HEADLINE_FEATURES = ("tokens", "list_items", "bold", "emoji", "flattery")
MAX_OBJECTIVES = len(OBJECTIVES)


@dataclass
class Child:
    """One objective's job and, once published and reported, its child."""

    objective: str
    label: str
    job_id: int
    status: str
    rows: str  # what it trained on: "24 pairs" / "30 desirable + 18 undesirable answers"
    contestant: str | None = None
    state: str | None = None  # lifecycle: pending while its report runs, then released / held
    steps: int | None = None
    train_seconds: float | None = None
    peak_memory_gib: float | None = None
    kl: Measured | None = None
    kl_note: str = ""
    verdict: str = ""  # pass / watch / regress, or "" before the report
    verdict_note: str = ""
    evals: Measured | None = None
    drift: dict[str, Measured] = field(default_factory=dict)
    error: str | None = None


@dataclass
class Call:
    """Across the children, for one measure: the objective that stands out, or can't tell."""

    measure: str
    better: str  # "higher" / "lower" / "closer to 0"
    winner: str | None
    text: str


@dataclass
class ComparisonView:
    id: int
    parent: str | None
    objectives: list[str]
    budget: dict[str, Any]
    snapshots: dict[str, str]  # "pairs" / "unpaired" -> hash
    coverage: dict[str, Any]
    children: list[Child]
    calls: list[Call]
    created_at: datetime | None
    taste: TasteCall | None = None  # the planted axis's call (``training.compare_taste``), when one is named

    @property
    def done(self) -> bool:
        return all(
            c.status in ("succeeded", "failed", "cancelled") and c.state != "pending" for c in self.children
        )


@dataclass
class ComparisonSummary:
    id: int
    parent: str | None
    objectives: list[str]
    job_ids: list[int]
    created_at: datetime | None


def _objectives(objectives: list[str] | tuple[str, ...] | str | None) -> list[str]:
    if objectives is None:
        return list(DEFAULT_OBJECTIVES)
    items = objectives.split(",") if isinstance(objectives, str) else list(objectives)
    names = [str(o).strip().lower() for o in items if str(o).strip()]
    unknown = [o for o in names if o not in OBJECTIVES]
    if unknown:
        raise JobError(f"objectives: {', '.join(unknown)} unknown; choose from {', '.join(OBJECTIVES)}")
    if len(set(names)) != len(names):
        raise JobError("objectives: each objective once")
    if len(names) < 2:
        raise JobError(f"objectives: pick at least two to compare (got {len(names)})")
    return names


def _configs(
    objectives: list[str], parent: str, shared: dict[str, Any], per_objective: dict[str, dict[str, Any]]
) -> dict[str, JobConfig]:
    """One config per objective with the shared budget; KTO's batch doubled (single answers, not pairs)."""
    unknown = sorted(set(per_objective) - set(objectives))
    if unknown:
        raise JobError(f"per_objective: {', '.join(unknown)} not among the objectives")
    configs, errors = {}, []
    for kind in objectives:
        data = {"parent_contestant": parent, **shared, **per_objective.get(kind, {})}
        if JOB_KINDS[kind].rows == "unpaired" and "per_device_train_batch_size" not in per_objective.get(
            kind, {}
        ):
            data["per_device_train_batch_size"] = 2 * int(shared.get("per_device_train_batch_size", 4))
        cfg, errs = config_errors(data, kind)
        errors += [FieldError(f"{kind}.{e.field}" if e.field else kind, e.message) for e in errs]
        if cfg is not None:
            configs[kind] = cfg
    if errors:
        raise JobError(errors_text(errors))
    return configs


def _freeze(
    db: Database, configs: dict[str, JobConfig], snapshot: str | None, uid: int | None
) -> dict[str, str]:
    """The snapshots the objectives train on: the given one for all, or one freeze of the current votes as
    pairs (and, for KTO, as unpaired rows of the same votes), in one transaction."""
    kto = next((c for c in configs.values() if JOB_KINDS[c.kind].rows == "unpaired"), None)
    pair_kinds = [c for c in configs.values() if JOB_KINDS[c.kind].rows == "pairs"]
    with db.session() as s:
        try:
            if snapshot:
                snap = get_snapshot(s, snapshot)
                if (snap.filter or {}).get("layout") == "unpaired" and pair_kinds:
                    raise JobError(
                        f"snapshot {snap.hash[:12]} holds unpaired rows; "
                        f"{', '.join(c.kind for c in pair_kinds)} need pairs"
                    )
                key = "unpaired" if (snap.filter or {}).get("layout") == "unpaired" else "pairs"
                return {key: snap.hash}
            out: dict[str, str] = {}
            read: set[int] = set()
            if pair_kinds:
                need = max(c.min_pairs for c in pair_kinds)
                info = snapshot_from_votes(s, min_pairs=need, user_id=uid)
                out["pairs"] = info.hash
                read.add(_votes_read(s, info.hash))
            if kto is not None:
                rule = score_rule(kto)
                info = snapshot_from_votes(s, min_pairs=kto.min_pairs, user_id=uid, unpaired=True, rule=rule)
                out["unpaired"] = info.hash
                read.add(_votes_read(s, info.hash))
            if len(read) > 1:
                raise JobError("votes arrived while the snapshots were frozen; launch again")
            return out
        except (SnapshotError, ConfigError) as exc:
            raise JobError(str(exc)) from exc


def _votes_read(session: Any, digest: str) -> int:
    return int(((get_snapshot(session, digest).filter or {}).get("objectives") or {}).get("votes_read", -1))


def launch_comparison(
    db: Database,
    parent: int | str,
    objectives: list[str] | tuple[str, ...] | str | None = None,
    snapshot: str | None = None,
    created_by: int | None = None,
    per_objective: dict[str, dict[str, Any]] | None = None,
    axis: str | None = None,
    toward: str = "higher",
    **shared: Any,
) -> int:
    """Queue one job per objective on ``parent`` with matched budgets (``shared`` config fields for all,
    ``per_objective`` for one) and record them as one comparison. Every config passes the pre-launch check
    before any is queued. ``axis`` names the drift feature the votes planted a taste on (``toward`` it:
    higher or lower); the view then names the objective that moved it further, or what would tell.
    Returns the comparison id."""
    from vibestudio.training.jobs.service import check_config, launch_checked

    require_role(db, created_by, "researcher")
    names = _objectives(objectives)
    axis = (axis or "").strip() or None
    why = axis_error(axis, toward)
    if why:
        raise JobError(why)
    with db.session() as s:
        info = find_parent(s, str(parent))
        parent_id, parent_name = info.id, info.public_name
    configs = _configs(names, parent_name, dict(shared), dict(per_objective or {}))
    snaps = _freeze(db, configs, snapshot, created_by)
    problems, checks = [], []
    for kind, cfg in configs.items():
        layout = "unpaired" if JOB_KINDS[kind].rows == "unpaired" else "pairs"
        cfg.snapshot_hash = snaps.get(layout) or next(iter(snaps.values()))
        check = check_config(db, cfg, user_id=created_by)  # once per child; its launch reuses it
        checks.append(check)
        if not check.ok:
            problems.append(f"{JOB_KINDS[kind].label}: {check.message() or 'refused'}")
    if problems:
        raise JobError("nothing launched; " + "; ".join(problems))
    job_ids: list[int] = []
    try:
        for check in checks:
            job_ids.append(launch_checked(db, check, created_by=created_by))
    except Exception:
        for jid in job_ids:  # all or nothing: a half-launched comparison compares nothing
            cancel(db, jid, user_id=created_by)
        raise
    pair_batch = int(shared.get("per_device_train_batch_size", 4)) * int(
        shared.get("gradient_accumulation_steps", 1)
    )
    first = configs[names[0]]
    budget = {
        "max_steps": first.max_steps,
        "answers_per_step": 2 * pair_batch,
        "lora": first.lora,
        "seed": first.seed,
    }
    with db.session() as s:
        row = Comparison(
            parent_contestant_id=parent_id,
            spec={
                "objectives": names,
                "budget": budget,
                "snapshots": snaps,
                "shared": _plain(shared),
                **({"taste": {"axis": axis, "toward": toward}} if axis else {}),
            },
            job_ids=job_ids,
            created_by=created_by,
        )
        s.add(row)
        s.flush()
        return int(row.id)


def _plain(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if isinstance(v, str | int | float | bool | type(None))}


def list_comparisons(db: Database, user_id: int | None = None, limit: int = 50) -> list[ComparisonSummary]:
    """Newest first; a researcher sees their own comparisons, an admin and the local operator all."""
    me = require_role(db, user_id, "researcher")
    with db.session() as s:
        q = select(Comparison).order_by(Comparison.id.desc()).limit(limit)
        if me is not None and me.role != "admin":
            q = q.where(Comparison.created_by == me.id)
        names = dict(s.execute(select(Contestant.id, Contestant.public_name)).tuples().all())
        return [
            ComparisonSummary(
                r.id,
                names.get(r.parent_contestant_id) if r.parent_contestant_id else None,
                list((r.spec or {}).get("objectives", [])),
                [int(j) for j in r.job_ids or []],
                r.created_at,
            )
            for r in s.scalars(q)
        ]


def _rows_used(kind: str, coverage: dict[str, Any], sizes: dict[str, int]) -> str:
    if JOB_KINDS[kind].rows == "unpaired" and coverage.get("kto"):
        k = coverage["kto"]
        return f"{k.get('desirable', 0)} desirable + {k.get('undesirable', 0)} undesirable answers from {k.get('votes', 0)} votes"
    if coverage.get("pairs"):
        return f"{coverage['pairs'].get('votes', 0)} pairs"
    if JOB_KINDS[kind].rows == "unpaired" and "pairs" in sizes and "unpaired" not in sizes:
        return f"both answers of {sizes['pairs']} pairs"
    n = sizes.get("unpaired" if JOB_KINDS[kind].rows == "unpaired" else "pairs")
    return f"{n} rows" if n is not None else ""


def _kl(job: JobView, kind: str, parent_adapter: bool) -> tuple[Measured | None, str]:
    """KL(child || parent) on held-out prompts, as the job logged it (DPO: ``kl``; the others ``kl_heldout``,
    since KTO's trainer logs a ``kl`` of its own), with a 95% interval from its standard error over prompts."""
    name = "kl" if kind == "dpo" else "kl_heldout"
    value, se = job.last(name), job.last(f"{name}_se")
    n = int(job.config.get("kl_prompts", 0) or 0)
    if value is None:
        cfg, _ = config_errors({k: v for k, v in job.config.items() if k != "kind"}, kind)
        why = kl_unmeasured(cfg, parent_adapter) if cfg is not None and kind != "dpo" else None
        if not n:
            why = "kl_prompts is 0"
        return None, why or (
            "measured when training ends" if job.status in ("queued", "running") else "not logged"
        )
    if se is None:
        return Measured(value, None, None, n), "no interval (one prompt, or a job from before intervals)"
    return Measured(value, value - Z95 * se, value + Z95 * se, n), ""


def _report_measures(db: Database, cid: int) -> tuple[str, str, Measured | None, dict[str, Measured]]:
    from vibestudio.training.report.decisions import of_report
    from vibestudio.training.report.steps import load_report

    report = load_report(db, cid)
    if report is None:
        return "", "no report yet", None, {}
    data = report.to_dict()
    decisions = of_report(data)
    verdict = str((data.get("verdict") or {}).get("verdict", ""))
    note = "; ".join((data.get("verdict") or {}).get("reasons") or [])
    ev = data.get("evals") or {}
    evals = None
    if ev.get("n"):
        d = decisions.get("evals/accuracy") or decisions.get("evals")
        evals = Measured(
            float(ev["delta"]), ev.get("low"), ev.get("high"), int(ev["n"]), d.state if d else ""
        )
    drift: dict[str, Measured] = {}
    flagged = {n for n, f in report.features.items() if f.flagged}
    for name in [*HEADLINE_FEATURES, *sorted(flagged - set(HEADLINE_FEATURES))]:
        f = report.features.get(name)
        if f is None:
            continue
        d = decisions.get(f"drift/{name}")
        drift[name] = Measured(
            f.delta, f.low, f.high, f.n, d.state if d else ("flagged" if f.flagged else "")
        )
    return verdict, note, evals, drift


def _child(
    db: Database,
    kind: str,
    jid: int,
    uid: int | None,
    coverage: dict[str, Any],
    sizes: dict[str, int],
    parent_adapter: bool,
    verdicts: dict[int, Any],
) -> Child:
    job = job_view(db, jid, user_id=uid)
    rows = _rows_used(kind, coverage, sizes)
    child = Child(kind, JOB_KINDS[kind].label, jid, job.status, rows, error=job.error)
    child.train_seconds = job.last("train_seconds")
    child.peak_memory_gib = job.last("peak_memory_gib")
    series = job.metrics.get("train_seconds") or job.metrics.get("loss")
    child.steps = series[-1][0] if series else None
    child.kl, child.kl_note = _kl(job, kind, parent_adapter)
    if job.contestant_id is not None:
        with db.session() as s:
            c = s.get(Contestant, job.contestant_id)
            child.contestant = c.public_name if c else None
        child.state = job.contestant_state
        child.verdict, child.verdict_note, child.evals, child.drift = _report_measures(db, job.contestant_id)
        status = verdicts.get(job.contestant_id)
        if (
            status is not None and status.verdict
        ):  # the recorded verdict is the one truth (a report may be gone)
            child.verdict, child.verdict_note = status.verdict, status.reason or child.verdict_note
        if child.state == "pending" and not child.verdict:
            child.verdict_note = "its report is running"
    elif job.status in ("queued", "running"):
        child.verdict_note = f"job {job.status}"
    else:
        child.verdict_note = f"no child: job {job.status}"
    return child


def _apart(items: list[tuple[str, Measured]], better: str) -> str | None:
    """The objective whose interval lies wholly on the better side of every other's, else None."""
    if len(items) < 2 or any(m.low is None or m.high is None for _, m in items):
        return None

    def key(m: Measured) -> float:
        return abs(m.value) if better == "closer to 0" else m.value

    ordered = sorted(items, key=lambda x: key(x[1]), reverse=better == "higher")
    (top, m), rest = ordered[0], ordered[1:]
    lo, hi = float(m.low), float(m.high)  # type: ignore[arg-type]
    if better == "higher":
        return top if all(lo > float(o.high) for _, o in rest) else None  # type: ignore[arg-type]
    if better == "lower":
        return top if all(hi < float(o.low) for _, o in rest) else None  # type: ignore[arg-type]
    # closer to 0: its interval's farthest point is nearer 0 than every other interval's nearest point
    far = max(abs(lo), abs(hi))
    for _, o in rest:
        near = 0.0 if float(o.low) <= 0 <= float(o.high) else min(abs(float(o.low)), abs(float(o.high)))  # type: ignore[arg-type]
        if far >= near:
            return None
    return top


def _call(measure: str, better: str, items: list[tuple[str, Measured | None]], missing: str) -> Call:
    have = [(k, m) for k, m in items if m is not None]
    if len(have) < 2:
        return Call(
            measure, better, None, f"can't tell: measured for {len(have)} of {len(items)} ({missing})"
        )
    if any(m.low is None for _, m in have):
        return Call(measure, better, None, "can't tell: not every child has an interval")
    winner = _apart(have, better)
    if winner is None:
        return Call(measure, better, None, "can't tell: the intervals overlap")
    return Call(
        measure,
        better,
        winner,
        f"{JOB_KINDS[winner].label} ({better}; its interval is apart from the others')",
    )


def calls(children: list[Child]) -> list[Call]:
    """Per measure, the objective that stands out, or can't tell (overlapping or missing intervals)."""
    out = [
        _call(
            "eval accuracy change", "higher", [(c.objective, c.evals) for c in children], "reports pending"
        ),
        # KL is >= 0, but its Monte-Carlo estimate on a few prompts can read below 0: nearer 0 is nearer the parent
        _call(
            "KL to the parent", "closer to 0", [(c.objective, c.kl) for c in children], "not measured for all"
        ),
    ]
    features = []
    for c in children:
        features += [f for f in c.drift if f not in features]
    for f in features:
        out.append(
            _call(
                f"drift: {f}",
                "closer to 0",
                [(c.objective, c.drift.get(f)) for c in children],
                "reports pending",
            )
        )
    return out


def comparison(
    db: Database,
    comparison_id: int,
    user_id: int | None = None,
    axis: str | None = None,
    toward: str | None = None,
) -> ComparisonView:
    """The children side by side, with a call per measure (``calls``) and, when a planted axis is named (at
    launch, or here as ``axis``/``toward``), the call on it (``training.compare_taste``)."""
    require_role(db, user_id, "researcher")
    why = axis_error(axis, toward or "higher")
    if why:
        raise JobError(why)
    with db.session() as s:
        row = s.get(Comparison, int(comparison_id))
        if row is None:
            raise JobError(f"no comparison {comparison_id}")
        spec, jobs = dict(row.spec or {}), [int(j) for j in row.job_ids or []]
        parent = s.get(Contestant, row.parent_contestant_id) if row.parent_contestant_id else None
        parent_name = parent.public_name if parent else None
        parent_adapter = bool(parent and parent.adapter_ref)
        coverage: dict[str, Any] = {}
        sizes: dict[str, int] = {}
        for layout, h in (spec.get("snapshots") or {}).items():
            try:
                snap = get_snapshot(s, h)
            except SnapshotError:
                continue
            coverage.update((snap.filter or {}).get("objectives") or {})
            sizes[layout] = int(snap.n_pairs)
        created = row.created_at
    names = list(spec.get("objectives") or [])
    verdicts = verdict_status(db)  # every contestant's newest verdict, read once for all the children
    children = [
        _child(db, k, j, user_id, coverage, sizes, parent_adapter, verdicts)
        for k, j in zip(names, jobs, strict=False)
    ]
    planted = dict(spec.get("taste") or {})
    axis = axis or planted.get("axis")
    toward = toward or (planted.get("toward") if planted.get("axis") == axis else None) or "higher"
    return ComparisonView(
        int(comparison_id),
        parent_name,
        names,
        dict(spec.get("budget") or {}),
        dict(spec.get("snapshots") or {}),
        coverage,
        children,
        calls(children),
        created,
        _taste(db, axis, toward, children) if axis else None,
    )


def _taste(db: Database, axis: str, toward: str, children: list[Child]) -> TasteCall:
    """The planted axis's call over the children's saved reports (None for a child without one yet)."""
    from vibestudio.training.report.steps import load_report

    reports: dict[str, dict[str, Any] | None] = {}
    for c in children:
        cid = _contestant_id(db, c.contestant)
        report = load_report(db, cid) if cid is not None else None
        reports[c.objective] = report.to_dict() if report is not None else None
    return taste_call(axis, toward, reports)


def _contestant_id(db: Database, name: str | None) -> int | None:
    if name is None:
        return None
    with db.session() as s:
        return s.scalar(select(Contestant.id).where(Contestant.public_name == name))


def _num(m: Measured | None, fmt: str = "+.3g") -> str:
    if m is None:
        return "—"
    ci = f" [{m.low:{fmt}}, {m.high:{fmt}}]" if m.low is not None and m.high is not None else " (no interval)"
    state = {"flagged": " ⚑", "cant_tell": " (can't tell)"}.get(m.state, "")
    return f"{m.value:{fmt}}{ci}, n={m.n}{state}"


def markdown(view: ComparisonView) -> str:
    """The comparison as Markdown: the setup, one row per child, one line per measure's call."""
    snaps = ", ".join(f"{k} {h[:12]}" for k, h in view.snapshots.items())
    b = view.budget
    lines = [
        f"**Comparison {view.id}**: {', '.join(JOB_KINDS[o].label for o in view.objectives)} from "
        f"`{view.parent}` on snapshot {snaps}; budget {b.get('max_steps')} steps x {b.get('answers_per_step')} "
        f"answers per step, {'LoRA' if b.get('lora') else 'full fine-tune'}, seed {b.get('seed')}.",
        "",
        "| objective | trained on | job | child | verdict | eval accuracy change | KL to parent | train s | peak GiB |",
        "|---|---|---|---|---|---|---|---:|---:|",
    ]
    for c in view.children:
        verdict = c.verdict or "—"
        if c.verdict_note and not c.verdict:
            verdict = f"— ({c.verdict_note})"
        kl = _num(c.kl, ".3g") if c.kl else f"— ({c.kl_note})" if c.kl_note else "—"
        secs = f"{c.train_seconds:.0f}" if c.train_seconds is not None else "—"
        mem = f"{c.peak_memory_gib:.2f}" if c.peak_memory_gib is not None else "—"
        lines.append(
            f"| {c.label} | {c.rows} | {c.job_id} ({c.status}) | {c.contestant or '—'} | {verdict} | "
            f"{_num(c.evals, '+.0%') if c.evals else '—'} | {kl} | {secs} | {mem} |"
        )
    features = [f for f in dict.fromkeys(f for c in view.children for f in c.drift)]
    if features:
        lines += [
            "",
            "| drift (child - parent, per answer) | " + " | ".join(c.label for c in view.children) + " |",
        ]
        lines.append("|---|" + "---|" * len(view.children))
        for f in features:
            lines.append(f"| {f} | " + " | ".join(_num(c.drift.get(f)) for c in view.children) + " |")
    if view.taste is not None:
        lines += ["", *taste_markdown(view.taste)]
    lines += ["", "**Calls** (an objective is named only when its 95% interval is apart from every other's):"]
    lines += [f"- {c.measure}: {c.text}" for c in view.calls]
    lines.append(
        "- time and memory: one run each, no interval; read them as this machine's cost, not a ranking"
    )
    return "\n".join(lines)
