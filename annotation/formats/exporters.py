"""Export labelled items as JSONL, JSON, Parquet or a ``datasets`` directory.

The layouts are TRL preference rows (standard or conversational), KTO unpaired rows, and the FastChat,
AlpacaEval, UltraFeedback and HelpSteer2 layouts.

Every TRL/KTO row carries ``provenance``:
- who labelled it (annotators or judge, label kind) and how many labels agreed;
- the rubric scores given;
- the policy version, model and sampling parameters of each answer;
- the position the chosen answer was shown in, and when.
Provenance has the same keys in every row, with null for absent values. So the rows load into Arrow,
Parquet and ``datasets`` with one schema.

Labels become rows one per label (``aggregate="each"``), or one per item by strict majority
(``"majority"``). Items without a majority are skipped and counted. Pair formats take outcomes 1 / 2. KTO
also takes both_good / both_bad (both answers desirable / undesirable) and good / bad on single answers.
Ties, inconsistent and unparsed judge verdicts make no rows. ``snapshot_from_labels`` freezes
conversational TRL rows into a content-hashed snapshot. Training reads it like a snapshot made from arena
votes.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from vibestudio.accounts import require_role
from vibestudio.annotation.agreement import plurality
from vibestudio.annotation.formats.importers import HELPSTEER_ATTRS
from vibestudio.annotation.queues import LABEL_KINDS, QueueError, n_answers, stamps
from vibestudio.annotation.snapshots import SnapshotInfo, write_snapshot
from vibestudio.annotation.unpaired import ScoreRule
from vibestudio.common.outcomes import (
    ALPACA_PREFERENCE,
    DESIRABLE,
    ITEM_OUTCOMES,
    PREFERENCE_PAIRS,
    SINGLE_OUTCOMES,
    choice_from_item,
    fastchat_from_item,
)
from vibestudio.db.models import Judgement, Label, QueueItem, RubricScore

EXPORT_FORMATS = ("trl", "kto", "fastchat", "alpaca_eval", "ultrafeedback", "helpsteer2")
FILE_FORMATS = ("jsonl", "json", "parquet", "datasets")
SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "seed", "repeat_penalty")


@dataclass
class ExportSpec:
    fmt: str = "trl"
    conversational: bool = False
    queues: list[str] | None = None
    kinds: tuple[str, ...] = LABEL_KINDS
    aggregate: str = "each"
    score_rule: ScoreRule | None = None  # KTO: scores of its criterion label answers by its threshold


@dataclass
class LabelView:
    id: int
    annotator: str
    kind: str
    outcome: str
    left_is_first: bool | None
    reason: str | None
    created_at: datetime
    meta: dict[str, Any]
    scores: list[dict[str, Any]] = field(default_factory=list)  # {annotator, criterion, side, value}


@dataclass
class ItemView:
    id: int
    queue: str
    prompt: list[dict[str, str]]
    answers: list[str]
    stamps: list[dict[str, Any]]
    meta: dict[str, Any]
    labels: list[LabelView]


@dataclass
class ExportResult:
    path: str
    fmt: str
    file_format: str
    n_rows: int
    skipped: dict[str, int]
    sha256: str | None = None


def collect(session: Session, spec: ExportSpec) -> list[ItemView]:
    """Items of the chosen queues with their labels of the chosen kinds and each label's rubric scores."""
    unknown = set(spec.kinds) - set(LABEL_KINDS)
    if unknown:
        raise QueueError(
            f"unknown label kind(s) {', '.join(sorted(unknown))}; known: {', '.join(LABEL_KINDS)}"
        )
    q = select(QueueItem).order_by(QueueItem.id)
    lq = select(Label).where(Label.kind.in_(spec.kinds)).order_by(Label.id)
    if spec.queues:
        q = q.where(QueueItem.queue_id.in_(spec.queues))
        lq = lq.where(Label.queue.in_(spec.queues))
    items = {it.id: it for it in session.scalars(q)}
    labels: dict[int, list[LabelView]] = {}
    by_id: dict[int, LabelView] = {}
    for lab in session.scalars(lq):
        if lab.item_id not in items:
            continue
        v = LabelView(
            lab.id,
            lab.annotator,
            lab.kind,
            lab.outcome,
            lab.left_is_first,
            lab.reason,
            lab.created_at,
            dict(lab.meta or {}),
        )
        labels.setdefault(lab.item_id, []).append(v)
        by_id[lab.id] = v
    if by_id:
        for s in session.scalars(select(RubricScore).where(RubricScore.label_id.in_(list(by_id)))):
            v = by_id[s.label_id]  # type: ignore[index]
            v.scores.append(
                {"annotator": v.annotator, "criterion": s.criterion, "side": s.side, "value": s.value}
            )
        judge_labels = {(v.annotator, iid): v for iid, vs in labels.items() for v in vs if v.kind == "judge"}
        if judge_labels:
            rows = session.execute(
                select(RubricScore, Judgement.judge)
                .join(Judgement, RubricScore.judgement_id == Judgement.id)
                .where(Judgement.item_id.in_([iid for _, iid in judge_labels]))
            ).all()
            for s, judge in rows:
                jv = judge_labels.get((judge, s.item_id or 0))
                if jv is not None:
                    jv.scores.append(
                        {"annotator": judge, "criterion": s.criterion, "side": s.side, "value": s.value}
                    )
    out = []
    for iid, it in items.items():
        answers = [it.answer_1] + ([it.answer_2] if n_answers(it) == 2 else [])
        out.append(
            ItemView(
                iid,
                it.queue_id,
                list(it.prompt_messages or []),
                answers,
                stamps(it),
                dict(it.meta or {}),
                labels.get(iid, []),
            )
        )
    return out


def _groups(item: ItemView, aggregate: str, skipped: Counter) -> list[tuple[str, list[LabelView]]]:
    """(outcome, labels behind it) per row: each label alone, or the item's strict majority."""
    if aggregate == "each":
        return [(lab.outcome, [lab]) for lab in item.labels]
    if aggregate != "majority":
        raise QueueError(f"aggregate must be 'each' or 'majority', got {aggregate!r}")
    if not item.labels:
        return []
    top = plurality([lab.outcome for lab in item.labels])
    if top is None:
        skipped["no_majority"] += 1
        return []
    return [(str(top), [lab for lab in item.labels if lab.outcome == top])]


def flatten_prompt(msgs: list[dict[str, str]]) -> str:
    """A prompt as one text: the user message itself, or a plain transcript for longer conversations."""
    if len(msgs) == 1 and msgs[0]["role"] == "user":
        return msgs[0]["content"]
    return "\n\n".join(f"{m['role'].capitalize()}: {m['content']}" for m in msgs)


def _sampling(stamp: dict[str, Any]) -> dict[str, Any] | None:
    s = stamp.get("sampling")
    return {k: s.get(k) for k in SAMPLING_KEYS} if isinstance(s, dict) else None


def _position(lab: LabelView, side: str) -> str | None:
    if lab.left_is_first is None:
        return None
    return choice_from_item(side, lab.left_is_first)


def _provenance(
    item: ItemView, outcome: str, labs: list[LabelView], n_votes: int, answer_keys: dict[str, str]
) -> dict[str, Any]:
    """``answer_keys`` maps a prefix (chosen / rejected / "") to the item side it describes."""
    kinds = {lab.kind for lab in labs}
    judges = sorted({lab.annotator for lab in labs if lab.kind == "judge"})
    first = labs[0]
    prov: dict[str, Any] = {
        "queue": item.queue,
        "item_id": item.id,
        "label_ids": [lab.id for lab in labs],
        "source": kinds.pop() if len(kinds) == 1 else "mixed",
        "annotators": [lab.annotator for lab in labs if lab.kind != "judge"],
        "judge": ", ".join(judges) or None,
        "votes": n_votes,
        "agree": len(labs),
        "outcome": outcome,
        "created_at": max(lab.created_at for lab in labs).isoformat(timespec="seconds"),
        "format": first.meta.get("format"),
        "external_id": first.meta.get("external_id"),
        "reasons": [lab.reason for lab in labs if lab.reason],
    }
    side_name = {side: prefix for prefix, side in answer_keys.items()}
    for prefix, side in answer_keys.items():
        st = item.stamps[int(side) - 1] if len(item.stamps) >= int(side) else {}
        p = f"{prefix}_" if prefix else ""
        prov[f"{p}position"] = _position(first, side)
        prov[f"{p}model"] = st.get("model")
        prov[f"{p}policy_version"] = st.get("policy_version")
        prov[f"{p}sampling"] = _sampling(st)
    prov["rubric_scores"] = [
        {
            "annotator": s["annotator"],
            "criterion": s["criterion"],
            "answer": side_name.get(s["side"] or "", "other") or "answer",
            "value": s["value"],
        }
        for lab in labs
        for s in lab.scores
    ]
    return prov


def _pair_rows(items: list[ItemView], spec: ExportSpec, skipped: Counter) -> list[dict[str, Any]]:
    rows = []
    for item in items:
        if len(item.answers) != 2:
            continue
        for outcome, labs in _groups(item, spec.aggregate, skipped):
            if outcome not in PREFERENCE_PAIRS:
                skipped[f"outcome_{outcome}"] += 1
                continue
            if "prompt_2" in item.meta:
                skipped["diverged_history"] += 1
                continue
            win, lose = PREFERENCE_PAIRS[outcome]
            chosen, rejected = item.answers[int(win) - 1], item.answers[int(lose) - 1]
            if not chosen.strip() or not rejected.strip():
                skipped["empty_answer"] += 1
                continue
            prov = _provenance(item, outcome, labs, len(item.labels), {"chosen": win, "rejected": lose})
            row: dict[str, Any]
            if spec.conversational:
                row = {
                    "prompt": item.prompt,
                    "chosen": [{"role": "assistant", "content": chosen}],
                    "rejected": [{"role": "assistant", "content": rejected}],
                }
            else:
                row = {"prompt": flatten_prompt(item.prompt), "chosen": chosen, "rejected": rejected}
            rows.append({**row, "provenance": prov})
    return rows


def _kto_sides(
    item: ItemView, outcome: str, labs: list[LabelView], rule: ScoreRule | None
) -> dict[str, bool]:
    """Which answers a label (or a majority) calls desirable: its outcome, or with ``rule`` the mean score each
    answer got on the rule's criterion from those labels (an answer without one keeps the outcome's word)."""
    sides = dict(DESIRABLE.get(outcome) or {})
    if sides and (len(item.answers) == 1) != (outcome in SINGLE_OUTCOMES):
        sides = {}
    if rule is None:
        return sides
    for side in ("1", "2")[: len(item.answers)]:
        values = [
            s["value"]
            for lab in labs
            for s in lab.scores
            if s["criterion"] == rule.criterion and s["side"] == side
        ]
        if values:
            sides[side] = sum(values) / len(values) >= rule.threshold
    return dict(sorted(sides.items()))


def _kto_rows(items: list[ItemView], spec: ExportSpec, skipped: Counter) -> list[dict[str, Any]]:
    rows = []
    for item in items:
        for outcome, labs in _groups(item, spec.aggregate, skipped):
            sides = _kto_sides(item, outcome, labs, spec.score_rule)
            if not sides:
                skipped[f"outcome_{outcome}"] += 1
                continue
            if "prompt_2" in item.meta:
                skipped["diverged_history"] += 1
                continue
            for side, desirable in sides.items():
                answer = item.answers[int(side) - 1]
                if not answer.strip():
                    skipped["empty_answer"] += 1
                    continue
                prov = _provenance(item, outcome, labs, len(item.labels), {"": side})
                prov["answer"] = side
                prompt: Any = item.prompt if spec.conversational else flatten_prompt(item.prompt)
                completion: Any = (
                    [{"role": "assistant", "content": answer}] if spec.conversational else answer
                )
                rows.append(
                    {"prompt": prompt, "completion": completion, "label": desirable, "provenance": prov}
                )
    return rows


def _model_names(item: ItemView) -> tuple[str, str]:
    a, b = (item.stamps + [{}, {}])[:2]
    name_a, name_b = a.get("model") or "answer_1", b.get("model") or "answer_2"
    if name_a == name_b:
        for st, suffix in ((a, "a"), (b, "b")):
            s = st.get("sampling") or {}
            tag = f"T{s.get('temperature')}-seed{s.get('seed')}" if s else suffix
            if st is a:
                name_a = f"{name_a}@{tag}"
            else:
                name_b = f"{name_b}@{tag}"
        if name_a == name_b:
            name_a, name_b = name_a + "#1", name_b + "#2"
    return name_a, name_b


def _fastchat_rows(items: list[ItemView], spec: ExportSpec, skipped: Counter) -> list[dict[str, Any]]:
    rows = []
    for item in items:
        if len(item.answers) != 2:
            continue
        model_a, model_b = _model_names(item)
        for outcome, labs in _groups(item, spec.aggregate, skipped):
            if outcome not in ITEM_OUTCOMES:
                skipped[f"outcome_{outcome}"] += 1
                continue
            lab = labs[0]
            prompt_b = item.meta.get("prompt_2") or item.prompt
            row = {
                "model_a": model_a,
                "model_b": model_b,
                "winner": fastchat_from_item(outcome),
                "judge": lab.annotator,
                "conversation_a": item.prompt + [{"role": "assistant", "content": item.answers[0]}],
                "conversation_b": prompt_b + [{"role": "assistant", "content": item.answers[1]}],
                "turn": item.meta.get("turn") or sum(1 for m in item.prompt if m["role"] == "user"),
                "tstamp": lab.created_at.timestamp(),
            }
            if item.meta.get("question_id") is not None:
                row["question_id"] = item.meta["question_id"]
            rows.append(row)
    return rows


def _alpaca_rows(items: list[ItemView], spec: ExportSpec, skipped: Counter) -> list[dict[str, Any]]:
    rows = []
    for item in items:
        if len(item.answers) != 2:
            continue
        for outcome, labs in _groups(item, spec.aggregate, skipped):
            pref = ALPACA_PREFERENCE.get(outcome)
            if pref is None:
                skipped[f"outcome_{outcome}"] += 1
                continue
            lab = labs[0]
            if spec.aggregate == "each" and lab.meta.get("preference") is not None:
                pref = float(lab.meta["preference"])
            instr = lab.meta.get("instruction")
            row = {
                "instruction": instr if instr is not None else flatten_prompt(item.prompt),
                "output_1": item.answers[0],
                "output_2": item.answers[1],
                "generator_1": (item.stamps + [{}])[0].get("model"),
                "generator_2": (item.stamps + [{}, {}])[1].get("model"),
                "preference": pref,
                "annotator": lab.annotator,
            }
            if lab.meta.get("input") is not None:
                row["input"] = lab.meta["input"]
            rows.append(row)
    return rows


def _uf_rows(items: list[ItemView], spec: ExportSpec, skipped: Counter) -> list[dict[str, Any]]:
    rows = []
    for item in _pair_items(items):
        for outcome, labs in _groups(item, spec.aggregate, skipped):
            if outcome not in PREFERENCE_PAIRS:
                skipped[f"outcome_{outcome}"] += 1
                continue
            win, lose = PREFERENCE_PAIRS[outcome]
            score = {(s["side"]): s["value"] for lab in labs for s in lab.scores if s["criterion"] == "score"}
            chosen = item.prompt + [{"role": "assistant", "content": item.answers[int(win) - 1]}]
            rejected = item.prompt + [{"role": "assistant", "content": item.answers[int(lose) - 1]}]
            rows.append(
                {
                    "prompt": flatten_prompt(item.prompt),
                    "prompt_id": labs[0].meta.get("external_id")
                    or hashlib.sha256(flatten_prompt(item.prompt).encode()).hexdigest(),
                    "chosen": chosen,
                    "rejected": rejected,
                    "messages": chosen,
                    "score_chosen": score.get(win),
                    "score_rejected": score.get(lose),
                }
            )
    return rows


def _pair_items(items: list[ItemView]) -> list[ItemView]:
    return [it for it in items if len(it.answers) == 2 and "prompt_2" not in it.meta]


def _helpsteer_rows(items: list[ItemView], spec: ExportSpec, skipped: Counter) -> list[dict[str, Any]]:
    rows = []
    for item in items:
        for lab in item.labels:
            for side in ("1", "2")[: len(item.answers)]:
                attrs = {s["criterion"]: s["value"] for s in lab.scores if s["side"] == side}
                if not set(HELPSTEER_ATTRS) <= set(attrs):
                    skipped["no_helpsteer_scores"] += 1
                    continue
                row: dict[str, Any] = {
                    "prompt": flatten_prompt(item.prompt),
                    "response": item.answers[int(side) - 1],
                }
                row |= {a: int(attrs[a]) for a in HELPSTEER_ATTRS}
                rows.append(row)
    return rows


BUILDERS = {
    "trl": _pair_rows,
    "kto": _kto_rows,
    "fastchat": _fastchat_rows,
    "alpaca_eval": _alpaca_rows,
    "ultrafeedback": _uf_rows,
    "helpsteer2": _helpsteer_rows,
}


def export_rows(session: Session, spec: ExportSpec) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Rows in the chosen format and what was skipped (by reason)."""
    if spec.fmt not in BUILDERS:
        raise QueueError(f"unknown export format {spec.fmt!r}; known: {', '.join(EXPORT_FORMATS)}")
    skipped: Counter = Counter()
    rows = BUILDERS[spec.fmt](collect(session, spec), spec, skipped)
    return rows, dict(skipped)


def file_format_for(out: Path, file_format: str | None = None) -> str:
    if file_format:
        if file_format not in FILE_FORMATS:
            raise QueueError(f"unknown file format {file_format!r}; known: {', '.join(FILE_FORMATS)}")
        return file_format
    suffix = out.suffix.lower()
    return {".jsonl": "jsonl", ".json": "json", ".parquet": "parquet"}.get(suffix, "datasets")


def write_rows(
    rows: list[dict[str, Any]], out: str | Path, file_format: str | None = None
) -> tuple[str, str | None]:
    """Write rows; returns (file format, sha256 of the file, None for a datasets directory)."""
    out = Path(out)
    ff = file_format_for(out, file_format)
    out.parent.mkdir(parents=True, exist_ok=True)
    if ff == "jsonl":
        body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
        out.write_bytes(body)
    elif ff == "json":
        body = json.dumps(rows, ensure_ascii=False, indent=1).encode("utf-8")
        out.write_bytes(body)
    elif ff == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), out)
    else:
        import datasets

        datasets.Dataset.from_list(rows).save_to_disk(str(out))
        return ff, None
    return ff, hashlib.sha256(out.read_bytes()).hexdigest()


def export_file(
    session: Session,
    spec: ExportSpec,
    out: str | Path,
    file_format: str | None = None,
    min_rows: int = 1,
    user_id: int | None = None,
) -> ExportResult:
    require_role(session, user_id, "researcher")
    rows, skipped = export_rows(session, spec)
    if len(rows) < min_rows:
        reasons = ", ".join(f"{k}={v}" for k, v in sorted(skipped.items())) or "no labels"
        raise QueueError(
            f"only {len(rows)} {spec.fmt} row(s) to export (skipped: {reasons}); at least {min_rows} needed"
        )
    ff, digest = write_rows(rows, out, file_format)
    return ExportResult(str(out), spec.fmt, ff, len(rows), skipped, digest)


def snapshot_from_labels(
    session: Session, spec: ExportSpec | None = None, min_pairs: int = 1, user_id: int | None = None
) -> SnapshotInfo:
    """Freeze conversational rows from labels into a content-hashed snapshot (what training reads): TRL
    preference pairs, or with ``spec.fmt == "kto"`` unpaired desirable / undesirable answers (human labels and
    judge verdicts alike, scores by ``spec.score_rule`` when given) that a KTO job trains on."""
    require_role(session, user_id, "researcher")
    spec = spec or ExportSpec()
    unpaired = spec.fmt == "kto"
    spec = ExportSpec(
        "kto" if unpaired else "trl", True, spec.queues, spec.kinds, spec.aggregate, spec.score_rule
    )
    rows, skipped = export_rows(session, spec)
    if len(rows) < min_pairs:
        reasons = ", ".join(f"{k}={v}" for k, v in sorted(skipped.items())) or "no labels"
        what = "unpaired row(s)" if unpaired else "preference pair(s)"
        raise QueueError(f"only {len(rows)} {what} (skipped: {reasons}); at least {min_pairs} needed")
    filt: dict[str, Any] = {
        "source": "annotation",
        "queues": spec.queues,
        "kinds": list(spec.kinds),
        "aggregate": spec.aggregate,
    }
    if unpaired:
        filt["layout"] = "unpaired"
        if spec.score_rule is not None:
            rule = spec.score_rule
            filt["score_rule"] = {
                "criterion": rule.criterion,
                "threshold": rule.threshold,
                "scale": list(rule.scale),
            }
    return write_snapshot(session, rows, filt, skipped)
