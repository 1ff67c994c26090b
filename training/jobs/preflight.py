"""The one pre-launch check, and the choice of base model: everything that can fail cheaply fails here, not
in a job process.

``check_job`` is the check. It:
- finds the parent contestant and decides which checkpoint the job trains on (``choose_base``);
- opens the snapshot (hash verified, answers non-empty, enough pairs after the ``pairs`` filter) or the
  task set;
- asks the reward sources: a judge that is down, a failed reward job;
- refuses a taken output name and a job that cannot fit in memory;
- refuses a tracker in ``report_to`` that is not installed (``training.jobs.trackers``);
- refuses GRPO's vLLM server mode when no server answers TRL's health check, or no CUDA GPU is here;
- refuses a job whose report cannot be made: too few held-out prompts beside its training data
  (``training.report.minimums``). So "Config valid" means every part of the report can be made;
- refuses a report setting that turns off a measure a ``required`` verdict rule needs (``eval_items: 0``
  under the built-in rules): the child's verdict could never be more than "unknown" (``REPORT_SWITCHES``).
It returns every problem at once, each tied to its field, with what it resolved on the way. It also notes
what is allowed but worth saying (``Findings.notes``): a skipped report holds the child, when the rules say so.

The Train tab, ``vibestudio train --dry-run`` and the API reach it through
``training.jobs.service.check_config``. A launch passes that result on (``Findings.checked``) instead of
checking again. ``preflight`` is the same check in the job process, and for a caller of ``runner.submit``
that brings no check. There any problem is a ``JobError`` naming them all. It never loads a model, so it
takes milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from vibestudio.annotation.snapshots import (
    SnapshotError,
    get_snapshot,
    load_snapshot,
    vote_pairs,
    vote_unpaired,
)
from vibestudio.annotation.unpaired import ScoreRule, balance, from_pairs, is_unpaired
from vibestudio.arena.registry import BUILTIN_GGUF, BUILTIN_HF, ContestantInfo, RegistryError, get_contestant
from vibestudio.db.models import Checkpoint, Contestant, Job, JobMetric
from vibestudio.training.jobs import fit, trackers, vllm_server
from vibestudio.training.jobs.config import (
    JOB_KINDS,
    ConfigError,
    FieldError,
    GRPOJobConfig,
    JobConfig,
    KTOJobConfig,
    config_from_dict,
)
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.estimate import (
    GIB,
    Estimate,
    Timing,
    estimate,
    formula_seconds,
    history_for,
    report_key,
)
from vibestudio.training.objectives.pairmix import filter_rows, pair_mix
from vibestudio.training.report.fair import held_out
from vibestudio.training.report.minimums import MIN_PROMPTS

T = TypeVar("T")


@dataclass
class BaseChoice:
    """What a job trains: ``model_ref`` (a builtin: ref or a checkpoint path, as the contestant will record it),
    optionally on top of the parent's LoRA adapter."""

    model_ref: str
    adapter_ref: str | None = None


@dataclass
class Checked:
    parent: ContestantInfo | None
    base: BaseChoice
    snapshot_id: int | None  # None for a job on a task set
    snapshot_hash: str
    snapshot_path: str
    n_pairs: int  # preference pairs, or train tasks for a job on a task set
    estimate: Estimate | None = None
    task_set: str | None = None  # the task set's name (RLVR); its checks are in training.tasks.checks

    @property
    def parent_id(self) -> int | None:
        return self.parent.id if self.parent else None


def find_parent(session: Session, ident: str | int) -> ContestantInfo:
    """A contestant by public name, or by id when ``ident`` is a number that is not a name."""
    try:
        return get_contestant(session, str(ident))
    except RegistryError:
        if str(ident).isdigit():
            try:
                return get_contestant(session, int(ident))
            except RegistryError:
                pass
    raise JobError(f"parent contestant {ident!r} not found (give a public name or an id)")


def choose_base(parent: ContestantInfo | None, base_model: str = "") -> BaseChoice:
    """The checkpoint to train: ``base_model`` when given, else derived from the parent's engine and model."""
    if base_model:
        # Local or hub id is decided by the text alone, never by probing the disk (no existence oracle), and
        # a missing path and one that is not a checkpoint get the same answer.
        looks_local = base_model.startswith(("/", ".", "~")) or base_model.count("/") > 1
        if looks_local and not (Path(base_model).expanduser() / "config.json").is_file():
            raise JobError(f"base_model {base_model!r} is not a checkpoint directory (no config.json)")
        return BaseChoice(base_model)
    if parent is None:
        raise JobError("no parent contestant and no base_model: nothing to train")
    if parent.engine == "llama_cpp":
        if parent.model_ref == BUILTIN_GGUF:
            return BaseChoice(BUILTIN_HF)
        raise JobError(
            f"contestant {parent.public_name!r} runs a GGUF file ({parent.model_ref}); training needs an HF "
            "checkpoint: set base_model to its HF directory"
        )
    if parent.engine == "transformers":
        return BaseChoice(parent.model_ref, parent.adapter_ref)
    if parent.engine == "vllm":
        served = str((parent.engine_config.get("serve") or {}).get("model") or parent.model_ref)
        if (Path(served).expanduser() / "config.json").exists() or served.startswith("builtin:"):
            return BaseChoice(served, parent.adapter_ref)
        raise JobError(
            f"contestant {parent.public_name!r} is served by vLLM as {served!r}, which is not a local checkpoint: "
            "set base_model to the HF directory the server loads"
        )
    raise JobError(
        f"contestant {parent.public_name!r} uses engine {parent.engine!r}, which cannot be trained here"
    )


@dataclass
class Findings:
    """What ``check_job`` found: every problem tied to its field, and what it resolved on the way."""

    errors: list[FieldError] = field(default_factory=list)
    parent: ContestantInfo | None = None
    base: BaseChoice | None = None
    snapshot: Any = None  # the snapshot row (id, hash, path) the job names, once found
    n_pairs: int = 0  # pairs left to train on, or train tasks for a job on a task set
    mix: dict[str, int] | None = None  # on / half / off / unknown pairs for the parent
    estimate: Estimate | None = None
    task_set: str | None = None
    balance: dict[str, Any] | None = None  # KTO: desirable / undesirable counts and TRL's weights
    rows: list[dict[str, Any]] | None = (
        None  # the rows checked (the snapshot's, or the votes'), for the launch
    )
    #: what the config leads to that is allowed but worth saying (``NO_REPORT``: a skipped report)
    notes: list[str] = field(default_factory=list)

    def checked(self, snapshot: Any = None) -> Checked:
        """What a launch passes on to the queued job: the resolved inputs (``snapshot``: the one the launch
        froze, when the check read the current votes). Only for findings without errors."""
        assert not self.errors and self.base is not None
        snap = snapshot if snapshot is not None else self.snapshot
        if snap is None:
            return Checked(self.parent, self.base, None, "", "", self.n_pairs, self.estimate, self.task_set)
        return Checked(self.parent, self.base, snap.id, snap.hash, snap.path, self.n_pairs, self.estimate)

    def problem(self, name: str, call: Callable[[], T]) -> T | None:
        """``call()``, or None with its error recorded against field ``name``."""
        try:
            return call()
        except (JobError, SnapshotError, ValueError) as exc:
            self.errors.append(FieldError(name, str(exc)))
            return None


def errors_text(errors: list[FieldError]) -> str:
    """Every problem on one line, each after the field it is about."""
    return "; ".join(f"{e.field}: {e.message}" if e.field and not e.where else e.message for e in errors)


def check_job(session: Session, cfg: JobConfig, *, fresh_from_votes: bool = False) -> Findings:
    """Every pre-launch problem of ``cfg`` at once (see the module text). ``fresh_from_votes``: an empty
    ``snapshot_hash`` means the snapshot the current votes would make at launch, checked by the same rule."""
    found = Findings()
    named = str(cfg.parent_contestant).strip()
    if named:
        found.parent = found.problem("parent_contestant", lambda: find_parent(session, cfg.parent_contestant))
    if found.parent is not None or cfg.base_model:
        found.base = found.problem("base_model", lambda: choose_base(found.parent, cfg.base_model))
    elif not named:
        found.errors.append(
            FieldError("parent_contestant", "no parent contestant and no base_model: nothing to train")
        )
    tasks = str(cfg.tasks or "") if isinstance(cfg, GRPOJobConfig) else ""
    if isinstance(cfg, GRPOJobConfig) and tasks:
        from vibestudio.training.tasks.checks import check_task_job

        found.task_set = tasks
        found.n_pairs = found.problem("tasks", lambda: check_task_job(session, cfg)) or 0
    else:
        _check_pairs(session, cfg, found, fresh_from_votes)
    _check_report(cfg, found)
    found.problem("rewards", lambda: check_reward_sources(session, cfg))
    found.problem("report_to", lambda: trackers.check(cfg.report_to))
    found.problem("qlora", lambda: fit.qlora_ready(cfg))
    found.problem("vllm_server_host", lambda: vllm_server.check_server(cfg))
    found.problem("vllm_mode", lambda: vllm_server.check_gpu(cfg))
    if cfg.output_name and session.scalar(
        select(Contestant.id).where(Contestant.public_name == cfg.output_name)
    ):
        found.errors.append(
            FieldError(
                "output_name", f"a contestant named {cfg.output_name!r} already exists; choose another"
            )
        )
    base = found.base
    if base is not None:
        found.estimate = found.problem(
            "per_device_train_batch_size",
            lambda: check_resources(session, cfg, base, found.parent.id if found.parent else None),
        )
    if found.notes and found.estimate is not None:  # the skipped report's note, where the estimate says it
        found.estimate.report_note = next((n for n in found.notes if n.startswith(NO_REPORT)), "")
    return found


def _check_pairs(session: Session, cfg: JobConfig, found: Findings, fresh_from_votes: bool) -> None:
    """One rule for a frozen snapshot and for the one the current votes would make: the on/half/off mix for the
    parent, and a refusal when fewer than ``min_pairs`` pairs are left to train on."""
    rows: list[dict[str, Any]] | None = None
    if cfg.snapshot_hash:
        found.snapshot = found.problem("snapshot_hash", lambda: get_snapshot(session, cfg.snapshot_hash))
        snap = found.snapshot
        if snap is not None:
            rows = found.problem(
                "snapshot_hash", lambda: load_snapshot(snap.path, snap.hash, provenance=True)
            )
    elif fresh_from_votes:  # an unpaired kind reads the votes its own way (_check_unpaired)
        rows = [] if JOB_KINDS[cfg.kind].rows == "unpaired" else vote_pairs(session)[0]
    else:
        found.errors.append(
            FieldError("snapshot_hash", "no dataset snapshot given (it is empty); make one from votes first")
        )
    if rows is None:
        return
    found.rows = rows
    if JOB_KINDS[cfg.kind].rows == "unpaired":
        _check_unpaired(session, cfg, found, rows, fresh_from_votes)
        return
    if any(is_unpaired(r) for r in rows):
        found.errors.append(
            FieldError(
                "snapshot_hash",
                f"this snapshot holds unpaired (KTO) rows, {len(rows)} single answers; a {cfg.kind} job needs "
                "preference pairs: pick a snapshot of pairs",
            )
        )
        return
    kept = len(rows)
    if found.parent is not None:
        found.mix = pair_mix(rows, found.parent.public_name)
        kept = len(filter_rows(rows, found.parent.public_name, cfg.pairs))
    found.n_pairs = kept
    if kept < cfg.min_pairs:  # the one minimum-pairs rule of a launch (the pairs filter's too)
        fresh = not cfg.snapshot_hash
        source = "the current votes make" if fresh else "this snapshot has"
        what = f"{source} {kept} pair(s) to train on ({cfg.pairs})"
        if cfg.pairs != "all" and found.mix is not None and found.parent is not None:
            m = found.mix
            what = (
                f"{source} {kept} pair(s) to train on ({cfg.pairs} keeps {kept} of {len(rows)} pairs for "
                f"{found.parent.public_name!r}: on {m['on']}, half {m['half']}, off {m['off']}, unknown "
                f"{m['unknown']})"
            )
        found.errors.append(
            FieldError(
                "pairs" if cfg.pairs != "all" else "snapshot_hash",
                f"{what}; at least {cfg.min_pairs} are needed"
                + (": vote A or B on more arena battles, or pick a frozen snapshot" if fresh else ""),
            )
        )


@dataclass(frozen=True)
class ReportSwitch:
    """A config setting that turns a part of the checkpoint report off, and the measures the report then leaves
    unmeasured, named as the report names them (``training.report.steps``). When it is off is said in
    ``unreachable_rules``."""

    field: str
    said: str  # what the setting does when off
    measures: tuple[str, ...]
    way_on: str  # how to turn it back on


#: The report's parts a config can turn off (drift_prompts 0 is not here: it skips the whole report, which the
#: rules' ``hold.skipped_report`` decides about).
REPORT_SWITCHES = (
    ReportSwitch(
        "eval_items",
        "eval_items 0 turns the report's verifiable evals off",
        ("evals/accuracy",),
        "set eval_items above 0 (-1 = all)",
    ),
    ReportSwitch(
        "judge",
        "with no judge the report has no head-to-head and no judge-described differences",
        ("judge/child_win_rate", "described/significant"),
        "name a judge contestant",
    ),
    ReportSwitch(
        "describe_axes",
        "describe_axes 0 turns the judge-described differences off",
        ("described/significant",),
        "set describe_axes above 0",
    ),
)


def _rules_in_force(cfg: JobConfig) -> tuple[Any, str]:
    """The verdict rules a job's report is judged by (the config's ``verdict_rules``, else the built-in ones),
    and how to name them in a message. ValueError when the file cannot be read."""
    from vibestudio.training.jobs.config import rules_file
    from vibestudio.training.report.verdict import load_rules

    rules = load_rules(rules_file(cfg.verdict_rules) if cfg.verdict_rules else None)
    return (
        rules,
        f"verdict_rules {cfg.verdict_rules!r}" if cfg.verdict_rules else "the built-in verdict rules",
    )


def unreachable_rules(cfg: JobConfig) -> list[FieldError]:
    """A refusal per report setting that leaves a measure unmeasured which a ``required`` rule of the verdict
    rules in force needs: its child's verdict would be "unknown" (and held) for good. Read from the rules
    themselves: a rule's ``measure`` may be a pattern."""
    import fnmatch

    off = {
        "eval_items": cfg.report_counts()[1] == 0,
        "judge": not cfg.judge,
        "describe_axes": bool(cfg.judge) and cfg.describe_axes == 0,
    }
    rules, named = _rules_in_force(cfg)
    out = []
    for switch in REPORT_SWITCHES:
        needed = None
        for rule in rules.rules if off[switch.field] else ():
            for measure in switch.measures if rule.required else ():
                if needed is None and fnmatch.fnmatchcase(measure, rule.measure):
                    needed = (rule, measure)
        if needed is not None:
            rule, measure = needed
            way = switch.way_on[:1].upper() + switch.way_on[1:]
            out.append(
                FieldError(
                    switch.field,
                    f"{switch.said}, but the rule {rule.name!r} of {named} requires {measure}: the child's "
                    f"verdict would stay 'unknown' (held) for good. {way}, or set verdict_rules to rules that "
                    f"do not require {measure}",
                )
            )
    return out


#: How the note on a skipped report starts (``skipped_report_note``).
NO_REPORT = "no checkpoint report (drift_prompts 0)"


def skipped_report_note(cfg: JobConfig) -> list[str]:
    """What a skipped report (``drift_prompts: 0``) does to the child, read from the verdict rules in force
    (their ``hold.skipped_report``): held until a researcher releases it, or let play unchecked. Not a refusal:
    drift_prompts 0 is the way to skip the report. [] when the rules cannot be read (the field checks say so)."""
    try:
        rules, named = _rules_in_force(cfg)
    except ValueError:
        return []
    held = rules.holds.skipped_report
    then = "will be held until a researcher lets it in" if held else "plays at once, unchecked"
    return [f"{NO_REPORT}: the child {then} ({named}: hold.skipped_report: {'true' if held else 'false'})"]


def _check_report(cfg: JobConfig, found: Findings) -> None:
    """The report's drift needs ``MIN_PROMPTS`` held-out prompts: MT-Bench's first turns less those the job
    trains on. A job that cannot have them is refused here, not held as "unknown" after training; so is one
    whose settings turn off a measure a required verdict rule needs (``unreachable_rules``)."""
    if not (JOB_KINDS[cfg.kind].publishes and cfg.publish):
        return
    n_prompts, _ = cfg.report_counts()
    if n_prompts == 0:
        found.notes += skipped_report_note(cfg)
        return
    try:
        found.errors += unreachable_rules(cfg)
    except ValueError as exc:  # a rules file that cannot be read (the field checks name it too)
        found.errors.append(FieldError("verdict_rules", str(exc)))
    pool = held_out(n_prompts, found.rows, cfg.seed)
    if len(pool.prompts) < MIN_PROMPTS:
        found.errors.append(
            FieldError(
                "drift_prompts",
                f"the report would compare only {len(pool.prompts)} held-out prompts ({pool.excluded} of the "
                f"{pool.pool} MT-Bench first turns are in the training data); its drift measures need at least "
                f"{MIN_PROMPTS}: train on other prompts, or set drift_prompts: 0 to skip the report",
            )
        )


def score_rule(cfg: JobConfig) -> ScoreRule | None:
    """The rule that labels scored answers for a KTO job (None: the votes alone); ConfigError naming the field."""
    rule: ScoreRule | None = cfg.score_rule() if isinstance(cfg, KTOJobConfig) else None
    return rule


def _check_unpaired(
    session: Session, cfg: JobConfig, found: Findings, rows: list[dict[str, Any]], fresh_from_votes: bool
) -> None:
    """KTO: count desirable and undesirable answers (a frozen snapshot of either layout, or the current votes
    under the job's score rule); refuse a class with none, or fewer rows than ``min_pairs``, naming the counts."""
    assert isinstance(cfg, KTOJobConfig)
    fresh = fresh_from_votes and not cfg.snapshot_hash
    if fresh:
        try:
            rule = score_rule(cfg)
        except ConfigError as exc:
            found.errors.append(FieldError("desirable_threshold", str(exc)))
            return
        rows, skipped, n_votes = vote_unpaired(session, rule)
        found.rows = rows
    else:
        rows = rows if all(is_unpaired(r) for r in rows) else from_pairs(rows)
        skipped, n_votes = {}, None
    good = sum(1 for r in rows if r["label"])
    bad = len(rows) - good
    found.n_pairs = len(rows)
    found.balance = balance(good, bad, cfg.desirable_weight, cfg.undesirable_weight)
    if skipped:
        found.balance["left_out"] = skipped
    source = "the current votes make" if fresh else "this snapshot has"
    counts = f"{source} {good} desirable and {bad} undesirable answer(s)" + (
        f" from {n_votes} vote(s)" if n_votes is not None else ""
    )
    if not good or not bad:
        missing = (
            "desirable (a winner, both good, a high score)"
            if not good
            else "undesirable (a loser, both bad, a low score)"
        )
        found.errors.append(
            FieldError("snapshot_hash", f"{counts}: KTO needs both kinds, and there are no {missing} answers")
        )
    elif len(rows) < cfg.min_pairs:
        found.errors.append(
            FieldError("snapshot_hash", f"{counts}; at least {cfg.min_pairs} rows are needed")
        )


def preflight(session: Session, cfg: JobConfig) -> Checked:
    """``check_job`` at submit time and in the job process: the resolved inputs, or a JobError naming every problem."""
    found = check_job(session, cfg)
    if found.errors:
        raise JobError(errors_text(found.errors))
    return found.checked()


def check_reward_sources(session: Session, cfg: JobConfig) -> None:
    """GRPO rewards that point at other things (a judge contestant, a reward job) must exist."""
    from vibestudio.db.models import Job

    for i, spec in enumerate(getattr(cfg, "rewards", None) or []):
        if spec.get("type") == "judge" and spec.get("judge") is not None:
            try:
                judge = find_parent(session, spec["judge"])
            except JobError:
                raise JobError(f"reward {i} (judge): no contestant {spec['judge']!r}") from None
            problem = judge_unreachable(judge)
            if problem:
                raise JobError(f"reward {i} (judge): contestant {judge.public_name!r} is down: {problem}")
        if spec.get("type") == "reward_model" and spec.get("job") is not None:
            job = session.get(Job, int(spec["job"]))
            if job is None or job.kind != "reward":
                raise JobError(f"reward {i} (reward_model): job {spec['job']} is not a reward-model job")
            if job.status in ("failed", "cancelled"):
                raise JobError(f"reward {i} (reward_model): job {spec['job']} {job.status}; it has no model")


def judge_unreachable(judge: ContestantInfo, timeout: float = 3.0) -> str | None:
    """Why a judge contestant cannot answer right now (None when it looks usable), without loading a model:
    a server engine must answer ``GET /v1/models``; a local engine's model files must exist."""
    if judge.engine in ("openai", "vllm"):
        import httpx

        from vibestudio.arena.engines.egress import UrlRefused, check_url, client

        url = str(judge.engine_config.get("base_url") or "").rstrip("/")
        if not url:
            return None if judge.engine_config.get("serve") else "no base_url in its engine config"
        try:  # the engine URL policy first: a check must not reach what an answer may not
            check_url(url)
        except UrlRefused as exc:
            return str(exc)
        try:
            with client(timeout) as http:
                http.get(f"{url}/models")
        except httpx.HTTPError as exc:
            return f"{url} does not answer ({type(exc).__name__})"
        return None
    if judge.model_ref.startswith("builtin:"):
        return None  # shipped with the package (or converted from what is)
    if not Path(judge.model_ref).expanduser().exists():
        return f"its model {judge.model_ref!r} is not on this machine"
    if judge.adapter_ref and not Path(judge.adapter_ref).exists():
        return f"its adapter {judge.adapter_ref!r} is not on this machine"
    return None


def past_timings(session: Session, limit: int = 50) -> list[Timing]:
    """The measured times of the training jobs this studio ran to the end (oldest first): started and ended,
    the report's own seconds (``drift_seconds``), and the formula's figures for each job's config on the base it
    trained (its checkpoint's manifest, else the base its parent gives), for ``estimate`` to calibrate on."""
    from vibestudio.training.publishing.artifacts import read_manifest

    jobs = session.execute(
        select(Job.id, Job.kind, Job.config, Job.started_at, Job.ended_at, Job.parent_contestant_id)
        .where(Job.status == "succeeded", Job.kind != "report", Job.started_at.is_not(None))
        .where(Job.ended_at.is_not(None))
        .order_by(Job.id.desc())
        .limit(limit)
    ).all()
    out = []
    for job_id, kind, config, started, ended, parent_id in reversed(jobs):
        try:
            cfg = config_from_dict(dict(config or {}))
        except (ConfigError, TypeError, ValueError):
            continue  # a config this code no longer reads: nothing to compare it with
        path = session.scalar(select(Checkpoint.path).where(Checkpoint.job_id == job_id).limit(1))
        model_ref = read_manifest(path).get("base_model_ref") if path else None
        if model_ref is None:
            try:
                parent = get_contestant(session, parent_id) if parent_id is not None else None
                model_ref = choose_base(parent, cfg.base_model).model_ref
            except (RegistryError, JobError):
                continue
        try:
            f_train, f_report = formula_seconds(cfg, str(model_ref))
        except (ValueError, OSError):
            continue  # a base whose shape cannot be read here
        metrics = _report_metrics(session, job_id)
        report = metrics.get("drift_seconds")
        took = (ended - started).total_seconds()
        share = _seconds(metrics.get("report_decoded_share"))
        kept = bool(metrics.get("report_parent_kept"))
        out.append(
            Timing(
                job_id,
                kind,
                str(model_ref),
                cfg.lora,
                f_train,
                f_report,
                took,
                _seconds(report),
                decoded=1.0 if share is None else min(max(share, 0.0), 1.0),
                parent=parent_id,
                report_key=report_key(cfg),
                parent_kept=kept,
            )
        )
    return out


#: What a job's checkpoint report logs that the estimate calibrates on (``training.report.job``).
REPORT_METRICS = ("drift_seconds", "report_decoded_share", "report_parent_kept")


def _report_metrics(session: Session, job_id: int) -> dict[str, Any]:
    """The job's ``REPORT_METRICS`` that it logged, in one query (each is logged once, at the report)."""
    rows = session.execute(
        select(JobMetric.name, JobMetric.value).where(
            JobMetric.job_id == job_id, JobMetric.name.in_(REPORT_METRICS)
        )
    ).all()
    found: dict[str, Any] = {}
    for name, value in rows:
        found.setdefault(name, value)
    return found


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)


def check_resources(
    session: Session, cfg: JobConfig, base: BaseChoice, parent: int | None = None
) -> Estimate | None:
    """The memory/time estimate; JobError when the job cannot fit (and ``cfg.check_memory``)."""
    try:
        seconds, tokens = history_for(session, cfg, base.model_ref)
        row = session.get(Contestant, parent) if parent is not None else None
        gguf = row is not None and row.engine == "llama_cpp"
        est = estimate(cfg, base.model_ref, seconds, tokens, past_timings(session), parent, gguf_parent=gguf)
    except (ValueError, OSError):
        return None  # unknown shape (e.g. a hub id): no estimate, no refusal
    found_fit = gpu_fit(cfg, base.model_ref, est)
    if found_fit is not None:
        if cfg.check_memory and not found_fit.fits:
            raise JobError(found_fit.reason() + " (check_memory: false skips this check)")
        return est
    if cfg.check_memory and not est.fits:
        assert est.available_bytes is not None
        raise JobError(
            f"this job needs about {est.peak_bytes / GIB:.1f} GiB but {est.available_bytes / GIB:.1f} GiB is "
            f"available on {est.device}: lower per_device_train_batch_size (now {cfg.per_device_train_batch_size}) "
            f"or max_length (now {cfg.max_length})"
            + ("" if cfg.lora else ", or use LoRA")
            + " (check_memory: false skips this check)"
        )
    return est


def gpu_fit(cfg: JobConfig, model_ref: str, est: Estimate) -> fit.Fit | None:
    """The per-GPU fit (``training.jobs.fit``) when the job's GPUs are known, written into ``est``, so the form
    shows the figure the check used. None without GPUs (torch.cuda or ``gpu_memory_gb``)."""
    found = fit.job_fit(cfg, model_ref)
    if found is not None:
        est.peak_bytes, est.available_bytes = int(found.needed), int(found.gpus.memory)
        est.device = f"GPU ({found.gpus.words()})"
        est.breakdown = {k: int(v) for k, v in found.breakdown.items()}
        est.fit = found
    return found
