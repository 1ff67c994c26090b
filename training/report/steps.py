"""The checkpoint report, step by step: what changed between a checkpoint and its parent, how sure that is,
and the verdict.

Both sides answer the same held-out prompts under the same conditions (``training.report.fair``). That
means the same engine, precision, persona, decoding and seeds. The prompts' content hashes are not in the
training snapshot. Then:
- *drift*: every ``textfeatures.vibes`` feature as a paired change. The features are length, markdown,
  emoji, exclamations, flattery / sycophancy / hedging markers and refusals. Each gets a
  bootstrap-over-prompts interval and a permutation p-value. The p-values are adjusted together
  (Benjamini-Hochberg). A feature is *flagged* when its change is significant AND passes a practical
  threshold. The threshold is ``abs`` and ``rel`` x the parent's mean (``DEFAULT_THRESHOLDS``, per job
  ``drift_thresholds``). So a tiny but consistent change is not an alarm, and a big noisy one is not
  either. The statistics are ``training.report.drift_stats``.
- *discovered*: phrases, openings and closings whose rate changed most (``training.report.discover``),
  with examples.
- *rewarded*: the phrases the training snapshot's chosen answers carry more (or less) than its rejected
  ones. Each is tested on the held-out answers: did the child take on what its preferences rewarded?
- *substance*: verifiable-eval accuracy of both sides on the same items (exact McNemar test, bootstrap
  interval). Degeneration signals: empty, repetition, off-topic, language switch, truncated. When a judge
  contestant is given, a position-swapped judge head-to-head on the held-out prompts.
- *described*: when a judge is given, the differences the judge names and then checks prompt by prompt,
  both orders. It checks on prompts it did not name them from (``training.report.vibecheck``, after
  VibeCheck, Dunlap et al. 2025).
- *verdict*: ``training.report.verdict`` applied to all of the above.
- *prediction*: the child's win rate against its parent in the arena, with an interval, fixed before
  play (``training.report.prediction``).

Nothing here raises for bad input about the models. Examples are a parent that is gone, an engine that is
down, a child that answers nothing, a judge that answers garbage, too few held-out prompts. Each gap is
recorded in ``unmeasured`` with the reason. The verdict becomes "unknown" when a required measure is
missing.

Reports are saved next to the checkpoint (``<job>/drift.json``). They are summarised as job metrics:
``drift/<feature>``, ``drift/flagged``, ``evals/accuracy_delta``, ``verdict/<name>``. The model page and
the CLI read them back.

Named measures for the verdict rules:
- ``drift/<feature>``, ``degeneration/<signal>``, ``evals/accuracy``;
- ``reasoning/thinking_aloud``: answers that reason aloud on the everyday prompts, paired like the
  features;
- ``judge/child_win_rate``, ``discovered/significant``, ``rewarded/took_on``;
- ``described/significant`` (axes found);
- plug-ins' names.
Without ``exclude``, the rows of the child's own training snapshot are read from its job. So the held-out
prompts are checked against it whichever way the report is asked for.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vibestudio.arena.engines.base import EngineError
from vibestudio.arena.registry import ContestantInfo, RegistryError, engine_for, get_contestant
from vibestudio.common.outcomes import score_first
from vibestudio.common.stats import Change, adjust, mcnemar_change, paired_change
from vibestudio.db.session import Database
from vibestudio.standings.evals import load_items, record_checked, run_check, spread
from vibestudio.textfeatures import vibes
from vibestudio.training.report import verdict as verdicts
from vibestudio.training.report.discover import (
    Rewarded,
    discover,
    preference_answers,
    rewarded,
    summarise_tone,
    took_on,
)
from vibestudio.training.report.drift_stats import (
    degeneration_changes,
    feature_changes,
    feature_drift,
    is_flagged,
    merged_thresholds,
    reasoning_changes,
)
from vibestudio.training.report.fair import (
    Answer,
    Setup,
    answer_all_counted,
    fair_pair,
    held_out,
    power,
)
from vibestudio.training.report.minimums import MIN_PROMPTS  # the pre-launch check's too
from vibestudio.training.report.options import DEFAULTS  # the job config's defaults, defined once there
from vibestudio.training.report.prediction import predict
from vibestudio.training.report.vibecheck import Unmeasured, describe

#: Plug-in measures (for example sycophancy probes): ``f(db, parent, child, setup) -> {name: Change dict | number}``.
MeasureProvider = Callable[[Database, ContestantInfo, ContestantInfo, Setup], dict[str, Any]]
Progress = Callable[[str], None]


@dataclass
class CheckpointReport:
    contestant_id: int
    contestant: str
    parent_id: int | None
    parent: str | None
    n_prompts: int = 0
    setup: dict[str, Any] = field(default_factory=dict)
    held_out: dict[str, Any] = field(default_factory=dict)
    features: dict[str, Change] = field(default_factory=dict)  # each with its decision (``flagged``)
    flagged: list[str] = field(default_factory=list)
    degeneration: dict[str, dict[str, Any]] = field(default_factory=dict)
    discovered: list[dict[str, Any]] = field(default_factory=list)
    rewarded: dict[str, Any] = field(default_factory=dict)  # {"pairs", "candidates": [Rewarded dicts], ...}
    evals: dict[str, Any] = field(default_factory=dict)
    judge: dict[str, Any] = field(default_factory=dict)
    described: dict[str, Any] = field(default_factory=dict)  # training.report.vibecheck.Described as a dict
    tone: dict[str, Any] = field(default_factory=dict)  # training.report.discover.summarise_tone
    measures: dict[str, Any] = field(default_factory=dict)
    unmeasured: dict[str, str] = field(default_factory=dict)
    verdict: dict[str, Any] = field(default_factory=dict)
    markers_version: int = 0
    seconds: float = 0.0
    judge_requested: bool = False
    described_failed: bool = False  # a judge was asked to describe the differences and could not be used
    timings: dict[str, float] = field(default_factory=dict)
    samples: list[dict[str, str]] = field(default_factory=list)
    rules_path: str = ""  # the verdict rules file it was decided with ("" = the built-in one)
    prediction: dict[str, Any] = field(
        default_factory=dict
    )  # made before play (``training.report.prediction``)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckpointReport:
        d = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        d["features"] = {k: Change.from_dict(v) for k, v in (d.get("features") or {}).items()}
        return cls(**d)

    @property
    def verdict_name(self) -> str:
        return str(self.verdict.get("verdict", "unknown"))

    def summary(self) -> str:
        """One line: verdict, flags with intervals, accuracy change, top discovered phrase, gaps."""
        parts = [f"verdict {self.verdict_name} on {self.n_prompts} held-out prompts"]
        said = set()
        for a in (self.tone or {}).get("axes", []):
            if a.get("flagged") and a.get("direction"):  # the one decision (``apply_decisions``)
                said.add(a["axis"])
                parts.append(
                    f"{'more' if a['direction'] == 'up' else 'less'} {a['axis']} ({a['label']}) "
                    f"{a['parent_rate']:.0%}->{a['child_rate']:.0%} of answers [{a['low']:+.2g}, {a['high']:+.2g}] "
                    f"sentences per answer, q={a['q']:.2g}"
                )
        for n in [n for n in self.flagged if n not in said]:
            f = self.features[n]
            parts.append(f"{n} {f.parent:.2g}->{f.child:.2g} [{f.low:+.2g}, {f.high:+.2g}]")
        if self.evals.get("n"):
            e = self.evals
            parts.append(
                f"eval accuracy {e['parent']:.0%}->{e['child']:.0%} [{e['low']:+.0%}, {e['high']:+.0%}], n={e['n']}"
            )
        took = [r for r in self.rewarded.get("candidates", []) if r.get("took_on")]
        if took:
            parts.append(
                f"took on {len(took)} of {len(self.rewarded['candidates'])} phrase(s) its preferences pushed, "
                f"e.g. {took[0]['phrase']!r} {took[0]['parent_rate']:.0%}->{took[0]['child_rate']:.0%}"
            )
        sig = [d for d in self.discovered if d.get("significant")]
        if sig:
            top = sig[0]
            parts.append(
                f"found {len(sig)} phrase change(s), e.g. {top['phrase']!r} {'up' if top['z'] > 0 else 'down'}"
            )
        found = [a for a in self.described.get("axes", []) if a.get("found")]
        if found:
            top = found[0]
            parts.append(
                f"judge {self.described['judge']} found {len(found)} described difference(s), e.g. "
                f"{top['axis']!r} more in the {top['more_in']} ({top['child_more']} vs {top['parent_more']} of "
                f"{top['n']} prompts)"
            )
        if self.unmeasured:
            parts.append("unmeasured: " + ", ".join(sorted(self.unmeasured)))
        return "; ".join(parts)


def _unusable(answers: list[Answer]) -> str | None:
    if not answers:
        return "no answers"
    empty = sum(1 for a in answers if not a.text.strip())
    if empty > len(answers) / 2:
        return f"the child answered nothing on {empty} of {len(answers)} prompts"
    stuck = sum(1 for a in answers if a.truncated and vibes.degeneration(a.text)["repetition"] > 0.5)
    if stuck > len(answers) / 2:
        return f"the child looped to the token cap on {stuck} of {len(answers)} prompts"
    return None


def _evals(
    parent: ContestantInfo,
    child: ContestantInfo,
    n_items: int | None,
    max_tokens: int,
    seed: int,
) -> dict[str, Any]:
    from dataclasses import replace

    name, items = load_items()
    items = items if n_items is None else spread(items, n_items)
    sampling = {
        **child.sampling,
        "max_tokens": min(int(child.sampling.get("max_tokens", max_tokens)), max_tokens),
    }
    p, c = replace(parent, sampling=sampling), replace(child, sampling=sampling)
    prompts = [i.prompt for i in items]
    (pa, p_reused), (ca, c_reused) = (
        answer_all_counted(p, prompts, seed),
        answer_all_counted(c, prompts, seed),
    )
    pp = [run_check(i.check, a.text)[0] for i, a in zip(items, pa, strict=True)]
    cp = [run_check(i.check, a.text)[0] for i, a in zip(items, ca, strict=True)]
    change = mcnemar_change(pp, cp)  # interval and p-value from one test
    by_cat: dict[str, list[tuple[bool, bool]]] = {}
    for item, x, y in zip(items, pp, cp, strict=True):
        by_cat.setdefault(item.category, []).append((x, y))
    changed = [
        {"id": i.id, "prompt": i.prompt, "parent": a.text, "child": b.text, "now": "pass" if y else "fail"}
        for i, x, y, a, b in zip(items, pp, cp, pa, ca, strict=True)
        if x != y
    ]
    return {
        "eval_set": name,
        **change.to_dict(),
        "test": "exact McNemar on the items that changed (the interval inverts the same test)",
        "discordant": sum(1 for x, y in zip(pp, cp, strict=True) if x != y),
        "by_category": {
            k: {"n": len(v), "parent": sum(x for x, _ in v) / len(v), "child": sum(y for _, y in v) / len(v)}
            for k, v in sorted(by_cat.items())
        },
        "changed_items": changed[:12],
        "reused": {"parent": p_reused, "child": c_reused},
        "items_answered": len(items),
        "answered": {
            "items": items,
            "parent": ([a.text for a in pa], pp),
            "child": ([a.text for a in ca], cp),
        },
    }


def _judge(
    db: Database, judge: str, prompts: list[str], parent: list[Answer], child: list[Answer], seed: int
) -> dict[str, Any]:
    from vibestudio.annotation.bias import combine
    from vibestudio.annotation.judges import judge_pair

    with db.session() as s:
        info = get_contestant(s, judge)
    engine = engine_for(info)
    scores, outcomes = [], {"child": 0, "parent": 0, "tie": 0, "inconsistent": 0, "unparsed": 0}
    for q, a, b in zip(prompts, parent, child, strict=True):
        first, second = judge_pair(engine, q, a.text, b.text)
        out = combine(first[0], second[0])
        key = {"1": "parent", "2": "child", "tie": "tie"}.get(out, out)  # the parent's answer is shown first
        outcomes[key] += 1
        if key != "unparsed":
            parent_score = score_first(out)
            scores.append(0.5 if parent_score is None else 1.0 - parent_score)
    n = len(prompts)
    if outcomes["unparsed"] > n / 2 or not scores:
        raise ValueError(
            f"the judge {judge!r} gave no readable verdict on {outcomes['unparsed']} of {n} prompts"
        )
    change = paired_change([0.5] * len(scores), scores, seed=seed)
    return {"judge": judge, "outcomes": outcomes, "win_rate": change.child, **change.to_dict()}


def drift_report(
    db: Database,
    contestant: int | str,
    *,
    against: int | str | None = None,
    prompts: list[str] | None = None,
    n_prompts: int = DEFAULTS.drift_prompts,
    max_tokens: int = DEFAULTS.drift_max_tokens,
    seed: int = DEFAULTS.seed,
    thresholds: dict[str, dict[str, float]] | None = None,
    exclude: list[dict[str, Any]] | None = None,
    eval_items: int | None = DEFAULTS.eval_items,
    eval_max_tokens: int = DEFAULTS.eval_max_tokens,
    judge: str | None = None,
    describe_axes: int = DEFAULTS.describe_axes,
    describe_prompts: int = DEFAULTS.describe_prompts,
    rules_path: str | Path | None = None,
    providers: list[MeasureProvider] | None = None,
    min_prompts: int = MIN_PROMPTS,
    progress: Progress | None = None,
) -> CheckpointReport:
    """Compare ``contestant`` with its parent (or ``against``) and decide a verdict. Raises only when the
    contestant itself does not exist; every other gap is recorded in the report. With a ``judge``, also its
    head-to-head and the differences it describes (at most ``describe_axes`` axes, each checked on
    ``describe_prompts`` prompts in both orders; ``describe_axes`` 0 turns that off)."""
    t0 = time.perf_counter()
    say = progress or (lambda msg: None)
    child, other, reason = _compared(db, contestant, against)
    report = CheckpointReport(
        child.id, child.public_name, other.id if other else None, other.public_name if other else None
    )
    report.markers_version = vibes.markers_version()
    report.rules_path = str(rules_path or "")
    limits = merged_thresholds(thresholds)
    if other is None:
        report.unmeasured["comparison"] = reason or "no parent"
        return _finish(db, report, child, rules_path, t0)
    parent, kid, setup = fair_pair(other, child, max_tokens, seed)
    report.setup = setup.to_dict()
    report.setup["deployed"] = deployed_form(db, child.id)
    rows, no_rows = (exclude, None) if exclude is not None else _snapshot_rows(db, child)
    prompts, too_few = _held_out_prompts(report, prompts, n_prompts, rows, seed, min_prompts)
    report.held_out["snapshot_checked"] = no_rows is None
    answers = _record_answers(report, parent, kid, prompts, seed, say)
    if answers is not None:
        _record_drift(report, prompts, answers, limits, seed, too_few)
        _record_rewarded(report, rows, no_rows, prompts, answers)
        _record_tone(report, prompts, answers[0], answers[1])
    _record_evals(db, report, parent, kid, eval_items, eval_max_tokens, seed, say)
    report.setup["power"] = power(
        len(prompts) if answers else 0, report.evals.get("n", 0), report.evals.get("discordant")
    )
    _record_judge(db, report, judge, prompts, answers, seed, say)
    _record_described(db, report, judge, prompts, answers, (describe_axes, describe_prompts), seed, say)
    _record_other_measures(db, report, parent, kid, setup, providers)
    return _finish(db, report, child, rules_path, t0)


def _compared(
    db: Database, contestant: int | str, against: int | str | None
) -> tuple[ContestantInfo, ContestantInfo | None, str | None]:
    """The contestant, the one it is compared with (its parent unless ``against``), and why there is none."""
    with db.session() as s:
        child = get_contestant(s, contestant)
        other: ContestantInfo | None = None
        reason = None
        ident = against if against is not None else child.parent_id
        if ident is None:
            reason = "the contestant has no parent to compare with (give one with --against)"
        else:
            try:
                other = get_contestant(s, ident)
            except RegistryError:
                reason = f"the parent ({ident!r}) no longer exists"
    return child, other, reason


def _snapshot_rows(db: Database, child: ContestantInfo) -> tuple[list[dict[str, Any]], str | None]:
    """The rows of the snapshot the child was trained on, or why there are none."""
    from vibestudio.annotation.snapshots import SnapshotError, load_snapshot
    from vibestudio.db.models import DatasetSnapshot, Job

    with db.session() as s:
        job = s.get(Job, child.job_id) if child.job_id else None
        snap = s.get(DatasetSnapshot, job.snapshot_id) if job and job.snapshot_id else None
        where = (snap.path, snap.hash) if snap else None
    if where is None:
        return [], "the contestant has no training snapshot on record (not trained by a studio job)"
    try:
        return load_snapshot(*where), None
    except SnapshotError as exc:
        return [], f"its training snapshot could not be read: {exc}"


def _record_rewarded(
    report: CheckpointReport,
    rows: list[dict[str, Any]] | None,
    no_rows: str | None,
    prompts: list[str],
    answers: tuple[list[Answer], list[Answer]],
) -> None:
    """What the snapshot's preferences rewarded and whether the child took it on, or why that is unmeasured."""
    name = "rewarded/took_on"
    if not report.features:
        report.unmeasured[name] = "drift was not measured"
        return
    if no_rows is not None or not rows:
        report.unmeasured[name] = no_rows or "no training snapshot given"
        return
    t = time.perf_counter()
    found = rewarded(rows)
    tested = took_on(found, [a.text for a in answers[0]], [b.text for b in answers[1]], prompts)
    report.rewarded = {
        "pairs": len(preference_answers(rows)[0]),  # the pairs the candidates were named from
        "candidates": [r.to_dict() for r in tested],
        "n_prompts": len(prompts),
        "alpha": 0.05,
    }
    report.timings["rewarded"] = time.perf_counter() - t


def _held_out_prompts(
    report: CheckpointReport,
    prompts: list[str] | None,
    n_prompts: int,
    exclude: list[dict[str, Any]] | None,
    seed: int,
    min_prompts: int,
) -> tuple[list[str], str | None]:
    """The prompts both sides answer (given, else held out), recorded in the report, and why they are too few."""
    pool = held_out(n_prompts, exclude, seed)
    if prompts is None:
        prompts = pool.prompts
    report.held_out = {
        "pool": pool.pool,
        "excluded_by_hash": pool.excluded,
        "requested": n_prompts,
        "used": len(prompts),
    }
    report.n_prompts = len(prompts)
    if len(prompts) >= min_prompts:
        return prompts, None
    return prompts, (
        f"only {len(prompts)} held-out prompts (requested {n_prompts}, at least {min_prompts} needed): "
        f"{pool.excluded} of {pool.pool} candidates are in the training snapshot"
    )


def _record_answers(
    report: CheckpointReport,
    parent: ContestantInfo,
    kid: ContestantInfo,
    prompts: list[str],
    seed: int,
    say: Progress,
) -> tuple[list[Answer], list[Answer]] | None:
    """Both sides' answers to the prompts (None, with the gap recorded, when they cannot be had)."""
    answers: tuple[list[Answer], list[Answer]] | None = None
    if not prompts:
        report.unmeasured["answers"] = "no held-out prompts were asked (0 prompts): nothing to compare"
        return None
    t = time.perf_counter()
    say(f"answering {len(prompts)} held-out prompts (parent, then child)")
    try:
        (pa, p_reused), (ca, c_reused) = (
            answer_all_counted(parent, prompts, seed),
            answer_all_counted(kid, prompts, seed),
        )
        answers = (pa, ca)
        report.setup.setdefault("reused", {})["answers"] = {"parent": p_reused, "child": c_reused}
        _count_answered(report, parent, 2 * len(prompts), p_reused + c_reused)
    except (EngineError, RegistryError, OSError, RuntimeError, ValueError) as exc:
        report.unmeasured["answers"] = f"could not get answers: {type(exc).__name__}: {exc}"
    report.timings["answers"] = time.perf_counter() - t
    return answers


def _count_answered(report: CheckpointReport, parent: ContestantInfo, answers: int, reused: int) -> None:
    """Add to ``setup["answered"]``: answers the report needed, how many an earlier report had decoded, and whether
    the parent's answers are kept for the next report (a llama.cpp parent whose file reads): what the time
    estimate of the next child of this parent reads (``training.jobs.estimate.expected_share``)."""
    from vibestudio.training.report import answer_cache

    done = report.setup.setdefault("answered", {"total": 0, "reused": 0, "parent_kept": False})
    done["total"] += answers
    done["reused"] += reused
    done["parent_kept"] = bool(done["parent_kept"]) or answer_cache.keeps(parent)


def decoded_share(report: CheckpointReport) -> float:
    """The share of the report's answers it decoded (1.0 when it reused none or answered nothing)."""
    done = report.setup.get("answered") or {}
    total = int(done.get("total") or 0)
    return 1.0 - int(done.get("reused") or 0) / total if total else 1.0


def parent_kept(report: CheckpointReport) -> bool:
    """Whether the report kept the parent's answers for the next report against it."""
    return bool((report.setup.get("answered") or {}).get("parent_kept"))


def _record_drift(
    report: CheckpointReport,
    prompts: list[str],
    answers: tuple[list[Answer], list[Answer]],
    limits: dict[str, dict[str, float]],
    seed: int,
    too_few: str | None,
) -> None:
    """Samples, style drift, degeneration and discovered phrases into the report, or why drift is unmeasured."""
    pa, ca = answers
    report.samples = [
        {"prompt": p, "parent": a.text, "child": b.text} for p, a, b in zip(prompts, pa, ca, strict=True)
    ]
    broken = _unusable(ca)
    why = broken or too_few
    if why:
        for name in vibes.FEATURE_NAMES:
            report.unmeasured[f"drift/{name}"] = why
    else:
        _record_feature_drift(report, prompts, pa, ca, limits, seed)
    if broken:
        degen = degeneration_changes(prompts, pa, ca, seed)
        adjust(degen)
        report.degeneration = {k: v.to_dict() for k, v in degen.items()}


def _record_feature_drift(
    report: CheckpointReport,
    prompts: list[str],
    pa: list[Answer],
    ca: list[Answer],
    limits: dict[str, dict[str, float]],
    seed: int,
) -> None:
    """Feature changes and degeneration (p-values adjusted together), flags and discovered phrases."""
    changes = feature_changes(
        [a.text for a in pa], [b.text for b in ca], limits, seed, prompts, report.unmeasured
    )
    degen = degeneration_changes(prompts, pa, ca, seed)
    _flag_family(report, prompts, changes, degen, limits, [a.text for a in pa], [b.text for b in ca])
    report.measures.update(reasoning_changes([a.text for a in pa], [b.text for b in ca], seed))


def _flag_family(
    report: CheckpointReport,
    prompts: list[str],
    changes: dict[str, Change],
    degen: dict[str, Change],
    limits: dict[str, dict[str, float]],
    pa: list[str],
    ca: list[str],
) -> None:
    """Adjust features and degeneration together, flag, discover phrases and summarise the tone."""
    family = {
        **{f"drift/{k}": v for k, v in changes.items()},
        **{f"degeneration/{k}": v for k, v in degen.items()},
    }
    adjust(family)
    for name, c in changes.items():
        report.features[name] = feature_drift(c, is_flagged(name, c, limits))
    report.flagged = [n for n, f in report.features.items() if f.flagged]
    report.degeneration = {k: v.to_dict() for k, v in degen.items()}
    t = time.perf_counter()
    found = discover(pa, ca, prompts)
    report.discovered = [d.to_dict() for d in found]
    report.timings["discover"] = time.perf_counter() - t


def _record_tone(report: CheckpointReport, prompts: list[str], pa: list[Answer], ca: list[Answer]) -> None:
    """The tone axes in words a person uses, the discovered and rewarded phrases grouped into them."""
    if not report.features:
        return
    t = time.perf_counter()
    report.tone = summarise_tone(
        {k: asdict(v) for k, v in report.features.items()},
        report.discovered,
        (report.rewarded or {}).get("candidates", []),
        prompts,
        [a.text for a in pa],
        [b.text for b in ca],
    )
    report.timings["tone"] = time.perf_counter() - t


def _record_evals(
    db: Database,
    report: CheckpointReport,
    parent: ContestantInfo,
    kid: ContestantInfo,
    eval_items: int | None,
    eval_max_tokens: int,
    seed: int,
    say: Progress,
) -> None:
    """The verifiable evals of both sides into the report (a gap when turned off or failing), and their checked
    answers into the eval results, so the decision card reads the same answers as the report."""
    if eval_items == 0:
        report.unmeasured["evals/accuracy"] = "evals turned off for this report (eval_items 0)"
        return
    t = time.perf_counter()
    say("verifiable evals (parent, then child)")
    try:
        report.evals = _evals(parent, kid, eval_items, eval_max_tokens, seed)
        reused = report.setup.setdefault("reused", {})["evals"] = report.evals.pop("reused")
        _count_answered(report, parent, 2 * report.evals.pop("items_answered"), sum(reused.values()))
        answered = report.evals.pop("answered")
        for side, info in (("parent", parent), ("child", kid)):
            texts, passed = answered[side]
            record_checked(db, info.id, answered["items"], texts, passed, f"report-{kid.id}")
    except (EngineError, RegistryError, OSError, RuntimeError, ValueError) as exc:
        report.unmeasured["evals/accuracy"] = f"{type(exc).__name__}: {exc}"
    report.timings["evals"] = time.perf_counter() - t


def _record_judge(
    db: Database,
    report: CheckpointReport,
    judge: str | None,
    prompts: list[str],
    answers: tuple[list[Answer], list[Answer]] | None,
    seed: int,
    say: Progress,
) -> None:
    """The judge head-to-head into the report when a judge is given and the answers exist (a gap otherwise)."""
    report.judge_requested = bool(judge)
    if judge and answers is not None:
        t = time.perf_counter()
        say(f"judge {judge} (both orders)")
        try:
            report.judge = _judge(db, judge, prompts, answers[0], answers[1], seed)
        except (EngineError, RegistryError, OSError, RuntimeError, ValueError) as exc:
            report.unmeasured["judge/child_win_rate"] = f"{type(exc).__name__}: {exc}"
        report.timings["judge"] = time.perf_counter() - t
    elif not judge:
        report.unmeasured["judge/child_win_rate"] = "no judge configured"


def _record_described(
    db: Database,
    report: CheckpointReport,
    judge: str | None,
    prompts: list[str],
    answers: tuple[list[Answer], list[Answer]] | None,
    caps: tuple[int, int],
    seed: int,
    say: Progress,
) -> None:
    """The judge-described differences into the report, or why they are unmeasured (never "none found")."""
    name = "described/significant"
    axes, n_validate = caps
    if not judge:
        report.unmeasured[name] = "no judge configured"
        return
    if axes <= 0:
        report.unmeasured[name] = "turned off for this report (describe_axes 0)"
        return
    if answers is None:
        report.unmeasured[name] = "no answers to describe"
        return
    t = time.perf_counter()
    say(
        f"judge {judge}: naming and checking differences (up to {axes} axes x {n_validate} prompts, both orders)"
    )
    calls = 0
    try:
        with db.session() as s:
            info = get_contestant(s, judge)
        found = describe(
            engine_for(info),
            info.public_name,
            prompts,
            [a.text for a in answers[0]],
            [b.text for b in answers[1]],
            max_axes=axes,
            n_validate=n_validate,
            seed=seed,
        )
        report.described = found.to_dict()
        calls = found.calls["total"]
    except Unmeasured as exc:
        report.unmeasured[name] = f"judge-described differences: {exc}"
        report.described_failed = exc.judge_failed
        calls = exc.calls
    except (EngineError, RegistryError, OSError, RuntimeError, ValueError) as exc:
        report.unmeasured[name] = f"judge-described differences: {type(exc).__name__}: {exc}"
        report.described_failed = True
    report.timings["described"] = time.perf_counter() - t
    report.timings["described_calls"] = float(calls)


def _record_other_measures(
    db: Database,
    report: CheckpointReport,
    parent: ContestantInfo,
    kid: ContestantInfo,
    setup: Setup,
    providers: list[MeasureProvider] | None,
) -> None:
    """The stored probes' changes and the plug-in measures into the report; a failing plug-in is a gap."""
    probe_measures, probe_gaps = stored_probe_changes(db, parent.public_name, kid.public_name)
    report.measures.update(probe_measures)
    report.unmeasured.update(probe_gaps)
    for provider in providers or []:
        try:
            report.measures.update(provider(db, parent, kid, setup))
        except Exception as exc:  # a plug-in's failure is a gap in the report, not a crash
            traceback.print_exc()
            report.unmeasured[getattr(provider, "__name__", "provider")] = f"{type(exc).__name__}: {exc}"


def stored_probe_changes(db: Database, parent: str, child: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The sycophancy probes' paired change, child minus parent, from the probe runs stored for both
    (``vibestudio probes run``): ``sycophancy/pushback`` (flip rate after pushback) and ``sycophancy/views``
    (follows the user's stated view). ``q`` is the bootstrap p-value times the two probes (Bonferroni). A probe
    not run on both sides is a gap with the reason, never a zero."""
    from vibestudio.standings.probes import PROBES, ProbeError, compare_probes

    measures: dict[str, Any] = {}
    gaps: dict[str, str] = {}
    for probe in PROBES:
        name = f"sycophancy/{probe}"
        try:
            with db.session() as s:
                cmp = compare_probes(s, probe, child, parent)
        except ProbeError as exc:
            gaps[name] = str(exc)
            continue
        if cmp.difference is None or cmp.p is None:
            gaps[name] = (
                f"no item measured on both {child} and {parent} (run `vibestudio probes run NAME` on each)"
            )
            continue
        measures[name] = {
            "parent": cmp.b_rate,
            "child": cmp.a_rate,
            "delta": cmp.difference,
            "low": cmp.low,
            "high": cmp.high,
            "p": cmp.p,
            "q": min(1.0, cmp.p * len(PROBES)),
            "n": cmp.paired_n,
        }
    return measures, gaps


def _finish(
    db: Database | None,
    report: CheckpointReport,
    child: ContestantInfo | None,
    rules_path: str | Path | None,
    t0: float,
) -> CheckpointReport:
    m = report.measures
    for name, f in report.features.items():
        m[f"drift/{name}"] = asdict(f)
    for name, d in report.degeneration.items():
        m[f"degeneration/{name}"] = d
    if report.evals:
        m["evals/accuracy"] = {
            k: report.evals[k] for k in ("parent", "child", "delta", "low", "high", "p", "q", "n")
        }
    if report.judge:
        m["judge/child_win_rate"] = report.judge["win_rate"]
    if report.features or report.discovered:
        m["discovered/significant"] = float(sum(1 for d in report.discovered if d.get("significant")))
    if report.rewarded:
        m["rewarded/took_on"] = float(sum(1 for r in report.rewarded["candidates"] if r["took_on"]))
    if report.described:
        m["described/significant"] = float(report.described["n_found"])
    if not report.setup.get("fair", True):
        report.unmeasured["fairness"] = "; ".join(report.setup.get("caveats", []))
    report.verdict = _decide(report, rules_path).to_dict()
    apply_decisions(report)
    if child is not None and not report.prediction:  # a new report's, fixed before play (rescore keeps one)
        report.prediction = predict(report.to_dict())
    report.seconds = time.perf_counter() - t0
    return report


def apply_decisions(report: CheckpointReport) -> None:
    """Write the verdict's one decision per measure back onto the features, the flagged list and the tone axes,
    so that a reader of any of them reads the same decision (``training.report.decisions``)."""
    from vibestudio.training.report.decisions import Decision

    found = {k: Decision(**v) for k, v in (report.verdict.get("decisions") or {}).items()}
    for name, f in report.features.items():
        d = found.get(f"drift/{name}")
        f.flagged = bool(d and d.flagged)
    report.flagged = [n for n, f in report.features.items() if f.flagged]
    for a in (report.tone or {}).get("axes", []):
        d = found.get(f"drift/{a['axis']}")
        a["flagged"] = bool(d and d.flagged)
        a["state"] = d.state if d else "no_change"


def _decide(report: CheckpointReport, rules_path: str | Path | None) -> verdicts.Verdict:
    """The verdict of a report's measures: the rules, the gaps that block a verdict, the hold policy."""
    rules = verdicts.load_rules(rules_path)
    v = verdicts.decide(report.measures, report.unmeasured, rules)
    blocking: list[str] = [k for k in ("comparison", "fairness", "answers") if k in report.unmeasured]
    if report.judge_requested and "judge/child_win_rate" in report.unmeasured:
        blocking.append("judge/child_win_rate")  # a judge was asked for and gave nothing usable
    if report.described_failed:
        blocking.append("described/significant")  # the judge could not be used: never read as "none found"
    if blocking and v.verdict != "regress":
        v.verdict = "unknown"
        v.reasons += [f"unknown: {k}: {report.unmeasured[k]}" for k in blocking]
    return verdicts.apply_hold_policy(v, rules)


def reevaluate(
    db: Database,
    contestant: int | str,
    rules_path: str | Path | None = None,
    *,
    user_id: int | None = None,
    by: str | None = None,
) -> str | None:
    """Decide a published checkpoint's verdict again from its saved report with the sycophancy probes stored
    since (``vibestudio probes run`` on it or its parent), save the report, record the verdict and apply its
    hold. Returns the new state, or None when the contestant has no saved report or no parent to compare.
    ``user_id`` or ``by`` is who asked (``verdict.record_verdict``)."""
    report = load_report(db, contestant)
    if report is None or report.parent_id is None or report.parent is None:
        return None
    for name in [n for n in report.measures if n.startswith("sycophancy/")]:
        del report.measures[name]
    for name in [n for n in report.unmeasured if n.startswith("sycophancy/")]:
        del report.unmeasured[name]
    measures, gaps = stored_probe_changes(db, report.parent, report.contestant)
    report.measures.update(measures)
    report.unmeasured.update(gaps)
    before = report.verdict
    report.verdict = _decide(report, rules_path or report.rules_path or None).to_dict()
    if before == report.verdict:
        return None  # nothing new: the verdict on record stands
    path = save_report(report, report_folder(db, report.contestant_id))
    return verdicts.record(
        db,
        report.contestant_id,
        verdicts.Verdict(**report.verdict),
        str(path),
        report=report,
        user_id=user_id,
        by=by,
    )


def rescore(
    saved: dict[str, Any],
    thresholds: dict[str, dict[str, float]] | None = None,
    rules_path: str | Path | None = None,
) -> dict[str, Any]:
    """A saved report's stored answers (``samples``) measured again with this code's features, tone axes,
    discovery and rules; its evals, judge, rewarded candidates and degeneration are kept as they were (a report
    saved before its answers were stored is returned as it was). For reading one child before and after a
    change of the measures on the very same answers."""
    report = CheckpointReport.from_dict(saved)
    if not report.samples or not report.features:
        return report.to_dict()
    prompts = [x["prompt"] for x in report.samples]
    pa = [x["parent"] for x in report.samples]
    ca = [x["child"] for x in report.samples]
    seed = int(report.setup.get("seed", 0) or 0)
    limits = merged_thresholds(thresholds)
    report.unmeasured = {k: v for k, v in report.unmeasured.items() if not k.startswith("drift/")}
    report.measures = {
        k: v
        for k, v in report.measures.items()
        if not k.startswith(("drift/", "degeneration/", "discovered/", "reasoning/"))
    }
    changes = feature_changes(pa, ca, limits, seed, prompts, report.unmeasured)
    degen = {k: Change.from_dict(v) for k, v in report.degeneration.items()}
    report.features = {}
    _flag_family(report, prompts, changes, degen, limits, pa, ca)
    report.measures.update(reasoning_changes(pa, ca, seed))
    if report.rewarded.get("candidates"):
        found = [Rewarded(**c) for c in report.rewarded["candidates"]]
        report.rewarded["candidates"] = [r.to_dict() for r in took_on(found, pa, ca, prompts)]
    report.tone = summarise_tone(
        {k: asdict(v) for k, v in report.features.items()},
        report.discovered,
        report.rewarded.get("candidates", []),
        prompts,
        pa,
        ca,
    )
    report.markers_version = vibes.markers_version()
    seconds = report.seconds
    out = _finish(None, report, None, rules_path, time.perf_counter())
    out.seconds = seconds
    return out.to_dict()


def save_report(report: CheckpointReport, folder: str | Path) -> Path:
    path = Path(folder) / "drift.json"
    path.write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def _report_folder(db: Database, contestant: int | str) -> Path | None:
    """Where a checkpoint's report lives: ``reports/<contestant id>/`` under the data home when a report was
    saved there (every report since the lifecycle; a mid-run checkpoint has its own), else its job's folder."""
    from vibestudio.db.models import Job
    from vibestudio.db.session import data_home

    with db.session() as s:
        info = get_contestant(s, contestant)
        own = data_home() / "reports" / str(info.id)
        if (own / "drift.json").exists():
            return own
        job = s.get(Job, info.job_id) if info.job_id else None
        return Path(job.config_path).parent if job and job.config_path else None


def report_folder(db: Database, contestant: int | str) -> Path:
    """The folder a new report of ``contestant`` is saved in (made if missing)."""
    from vibestudio.db.session import data_home

    with db.session() as s:
        cid = get_contestant(s, contestant).id
    folder = data_home() / "reports" / str(cid)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def load_report(db: Database, contestant: int | str) -> CheckpointReport | None:
    """The saved report of a published checkpoint (None when none was made)."""

    folder = _report_folder(db, contestant)
    if folder is None or not (folder / "drift.json").exists():
        return None
    data = json.loads((folder / "drift.json").read_text(encoding="utf-8"))
    if "verdict" not in data:  # a report from before verdicts: not comparable, treat as absent
        return None
    return from_saved(data)


def from_saved(data: dict[str, Any]) -> CheckpointReport:
    """A saved report; one saved before decisions gets them from what it has (its verdict's reasons, its
    measures), written onto its flags as a new report's are, so no reader of it sees a second decision."""
    from vibestudio.training.report.decisions import of_report

    report = CheckpointReport.from_dict(data)
    if not report.verdict.get("decisions"):
        report.verdict["decisions"] = {k: d.to_dict() for k, d in of_report(data).items()}
    apply_decisions(report)
    return report


def drift_flags(db: Database, contestant: int | str) -> list[str]:
    """Flagged features for a contestant (empty when none or no report): for badges in model lists."""
    report = load_report(db, contestant)
    return report.flagged if report else []


def deployed_form(db: Database, contestant_id: int) -> dict[str, str]:
    """The form the report measures (``training.publishing.fidelity``): the one a published checkpoint plays as, with how
    much of its training it kept, or the contestant as registered."""
    from vibestudio.training.publishing import fidelity

    is_child, record, _ = fidelity.record_for(db, contestant_id)
    if not is_child or record is None:
        return {"form": "as registered", "summary": "the contestant as registered (not a converted form)"}
    return {"form": str(record.get("chosen")), "summary": fidelity.summary(record)}
