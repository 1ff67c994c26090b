"""Drift report: how a checkpoint's answers differ from its parent's on held-out prompts, feature by feature.

Both contestants answer the same held-out prompts (MT-Bench first turns not in the training snapshot) the way they
play in the arena (engine, persona, sampling; a fixed seed). ``arena.vibes`` turns each answer into features
(length, markdown, emoji, exclamations, flattery / sycophancy / hedging markers, refusals); the report compares
the means and flags every feature whose change passes its threshold. Thresholds are configurable: a feature is
flagged when the change in mean is at least ``abs`` AND at least ``rel`` of the parent's mean (so going from 0.1 to
0.3 emoji per answer is not an alarm, going from 0 to 2 is).

Reports are saved next to the checkpoint (``<job>/drift.json``) and summarised as job metrics
(``drift/<feature>`` = child mean - parent mean, ``drift/flagged`` = number of flags), so the model page and the
arena's model list can show flags without re-running anything.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arena import vibes
from arena.engines.base import Sampling
from arena.registry import ContestantInfo, engine_for, get_contestant, messages_for
from db.session import Database
from training.kl import held_out_prompts

DEFAULT_THRESHOLDS: dict[str, dict[str, float]] = {
    "tokens": {"abs": 10.0, "rel": 0.3},
    "headers": {"abs": 0.5, "rel": 0.5},
    "list_items": {"abs": 1.0, "rel": 0.5},
    "bold": {"abs": 0.5, "rel": 0.5},
    "code_blocks": {"abs": 0.3, "rel": 0.5},
    "emoji": {"abs": 0.5, "rel": 0.5},
    "exclamations": {"abs": 0.5, "rel": 0.5},
    "flattery": {"abs": 0.3, "rel": 0.5},
    "sycophancy": {"abs": 0.3, "rel": 0.5},
    "hedging": {"abs": 0.3, "rel": 0.5},
    "refusal": {"abs": 0.2, "rel": 0.5},
}


@dataclass
class FeatureDrift:
    parent: float
    child: float
    delta: float
    flagged: bool


@dataclass
class DriftReport:
    contestant_id: int
    parent_id: int
    n_prompts: int
    features: dict[str, FeatureDrift]
    flagged: list[str]
    markers_version: int
    seconds: float
    samples: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DriftReport:
        d = dict(d)
        d["features"] = {k: FeatureDrift(**v) for k, v in d["features"].items()}
        return cls(**d)

    def summary(self) -> str:
        if not self.flagged:
            return f"no drift past thresholds on {self.n_prompts} prompts"
        parts = [f"{n} {self.features[n].parent:.2g}->{self.features[n].child:.2g}" for n in self.flagged]
        return f"drift on {self.n_prompts} prompts: " + ", ".join(parts)


def compare(
    parent_answers: list[str], child_answers: list[str], thresholds: dict[str, dict[str, float]] | None = None
) -> tuple[dict[str, FeatureDrift], list[str]]:
    """Feature means of both sides and which changes pass their thresholds."""
    limits = {name: dict(lim) for name, lim in DEFAULT_THRESHOLDS.items()}
    for name, extra in (thresholds or {}).items():
        limits[name] = {**limits.get(name, {}), **extra}
    a, b = vibes.profile(parent_answers), vibes.profile(child_answers)
    out, flagged = {}, []
    for name in vibes.FEATURE_NAMES:
        p, c = a[name]["mean"], b[name]["mean"]
        limit = limits.get(name)
        delta = c - p
        hit = (
            limit is not None
            and abs(delta) >= limit.get("abs", 0.0)
            and abs(delta) >= limit.get("rel", 0.0) * abs(p)
        )
        out[name] = FeatureDrift(p, c, delta, hit)
        if hit:
            flagged.append(name)
    return out, flagged


def answer(info: ContestantInfo, prompts: list[str], max_tokens: int, seed: int) -> list[str]:
    """The contestant's answers as played in the arena, capped at ``max_tokens`` and seeded."""
    sampling = dict(info.sampling)
    sampling["max_tokens"] = min(int(sampling.get("max_tokens", max_tokens)), max_tokens)
    engine = engine_for(info)
    out = []
    for i, prompt in enumerate(prompts):
        s = Sampling.from_dict({**sampling, "seed": seed + i})
        out.append("".join(engine.stream_chat(messages_for(info, [], prompt), s, prefill=info.prefill)))
    return out


def drift_report(
    db: Database,
    contestant: int | str,
    prompts: list[str] | None = None,
    n_prompts: int = 8,
    max_tokens: int = 64,
    seed: int = 0,
    thresholds: dict[str, dict[str, float]] | None = None,
    exclude: list[dict[str, Any]] | None = None,
) -> DriftReport:
    """Compare a contestant with its parent on held-out prompts (MT-Bench first turns by default)."""
    with db.session() as s:
        child = get_contestant(s, contestant)
        if child.parent_id is None:
            raise ValueError(f"contestant {child.public_name!r} has no parent to compare with")
        parent = get_contestant(s, child.parent_id)
    prompts = prompts or held_out_prompts(n_prompts, exclude, seed)
    t0 = time.perf_counter()
    parent_answers = answer(parent, prompts, max_tokens, seed)
    child_answers = answer(child, prompts, max_tokens, seed)
    features, flagged = compare(parent_answers, child_answers, thresholds)
    samples = [
        {"prompt": p, "parent": a, "child": b}
        for p, a, b in zip(prompts, parent_answers, child_answers, strict=True)
    ]
    return DriftReport(
        child.id,
        parent.id,
        len(prompts),
        features,
        flagged,
        vibes.markers_version(),
        time.perf_counter() - t0,
        samples,
    )


def save_report(report: DriftReport, folder: str | Path) -> Path:
    path = Path(folder) / "drift.json"
    path.write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def load_report(db: Database, contestant: int | str) -> DriftReport | None:
    """The saved drift report of a published checkpoint (None when its job made none)."""
    from db.models import Job

    with db.session() as s:
        info = get_contestant(s, contestant)
        job = s.get(Job, info.job_id) if info.job_id else None
        folder = Path(job.config_path).parent if job and job.config_path else None
    if folder is None or not (folder / "drift.json").exists():
        return None
    return DriftReport.from_dict(json.loads((folder / "drift.json").read_text(encoding="utf-8")))


def drift_flags(db: Database, contestant: int | str) -> list[str]:
    """Flagged features for a contestant (empty when none or no report): for badges in model lists."""
    report = load_report(db, contestant)
    return report.flagged if report else []
