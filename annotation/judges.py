"""AI judges on any engine: pairwise verdicts with positions swapped, absolute rubric grades, per-prompt
checklists, and the bias / human-agreement report.

A judge is a contestant on any engine: llama.cpp, transformers, OpenAI-compatible, vLLM. Its persona is
not used; the judge prompt is. Prompts follow MT-Bench's pairwise format. The verdict is ``[[A]]``,
``[[B]]`` or ``[[C]]`` (tie). The answer is prefilled up to ``Verdict: [[``, so even a small model's next
token is the verdict. Decoding is greedy and a handful of tokens long. Parsing accepts the bracketed form
anywhere and a few plain phrasings. Anything else is ``unparsed``: kept with the raw text, never guessed.

Every judge call goes through ``arena.engines.ask`` (the engine's gate, stream closed). The position swap
is written once, in ``both_orders``. These use it:
- the pairwise verdicts here;
- the checkpoint report's judge comparison and the judge reward (through ``judge_pair``);
- the validation of judge-described differences (``training.report.vibecheck``).

Each item is judged twice, answer 1 first and then answer 2 first. Both runs are stored as ``judgements``.
Their combination (``annotation.bias.combine``) becomes one label of kind ``judge``, named after the
judge. So judge labels export, snapshot and enter agreement like any other. Absolute grading asks for one
criterion of the queue's rubric at a time, per answer. It stores rubric scores against the judgement.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, select

from vibestudio.accounts import require_role
from vibestudio.annotation.agreement import cohen_kappa, plurality
from vibestudio.annotation.bias import Rate, combine, family_rate, longer_rate, model_family, position_rate
from vibestudio.annotation.queues import QueueError, n_answers, queue_row, set_checklist, stamps
from vibestudio.annotation.rubrics import Criterion, Rubric, rubric_from_dict
from vibestudio.arena.engines.ask import ask
from vibestudio.arena.engines.base import Engine, EngineError, Sampling
from vibestudio.arena.registry import ContestantInfo, engine_for, get_contestant
from vibestudio.common.outcomes import merge_ties
from vibestudio.db.models import Judgement, Label, QueueItem, RubricScore
from vibestudio.db.session import Database
from vibestudio.standings.words import progress_note

Progress = Callable[[int, int, str], None]

JUDGE_SYSTEM = (
    "You are an impartial judge. Compare answers written by AI assistants for quality: helpfulness, "
    "correctness, honesty and clarity. Ignore answer length and the order the answers are shown in."
)
PAIRWISE_PROMPT = (
    "[Question]\n{question}\n\n[The Start of Answer A]\n{a}\n[The End of Answer A]\n\n"
    "[The Start of Answer B]\n{b}\n[The End of Answer B]\n\n"
    "{focus}Which answer is better? Reply with [[A]] if answer A is better, [[B]] if answer B is better, "
    "or [[C]] for a tie."
)
PAIRWISE_PREFILL = "Verdict: [["
ABSOLUTE_PROMPT = (
    "[Question]\n{question}\n\n[The Start of Answer]\n{answer}\n[The End of Answer]\n\n"
    "Rate the answer on {name}: {description}\nScale:\n{scale}\n"
    "Reply with the rating only, in double brackets, for example [[{example}]]."
)
ABSOLUTE_PREFILL = "Rating: [["
CHECKLIST_PROMPT = (
    "Here is a question for an AI assistant:\n\n{question}\n\n"
    "List {n} specific things a good answer to this question must get right. One short line each, numbered."
)
CHECKLIST_PREFILL = "1."
_BRACKET = re.compile(r"\[\[\s*([ABC])\s*(?:\]\]|\]|$|\s)", re.IGNORECASE)
_PLAIN = [
    re.compile(r"\b(?i:verdict)\s*(?:is)?\s*[:=]?\s*\(?\s*([ABC])\b"),
    re.compile(
        r"\b(?:answer|assistant|response)\s+([AB])\s+is\s+(?:better|best|preferred|superior)", re.IGNORECASE
    ),
]


class JudgeError(ValueError):
    """A judge run cannot start (unknown judge or queue, nothing to judge)."""


def parse_pairwise(text: str) -> str | None:
    """``A``, ``B`` or ``C`` (tie) from a judge's reply; None when absent or contradictory."""
    found = {m.group(1).upper() for m in _BRACKET.finditer(text)}
    if len(found) == 1:
        return found.pop()
    if len(found) > 1:
        return None
    for pat in _PLAIN:
        m = pat.search(text)
        if m:
            return m.group(1).upper()
    if re.search(r"\b(?:it'?s a )?tie\b", text, re.IGNORECASE):
        return "C"
    return None


def parse_rating(text: str, crit: Criterion) -> float | None:
    """A rubric level from a judge's reply (the bracketed value first, else the first plausible token)."""
    m = re.search(r"\[\[\s*([^\]\n]{1,40}?)\s*(?:\]|$|\n)", text)
    candidates = [m.group(1)] if m else []
    candidates += re.findall(r"[A-Za-z][A-Za-z_-]*|\d+(?:\.\d+)?", text)
    for cand in candidates:
        cand = cand.strip().strip(".")
        if crit.scale == "categorical":
            for i, cat in enumerate(crit.categories):
                if cand.lower() == cat.lower() or (len(cand) >= 4 and cat.lower().startswith(cand.lower())):
                    return float(i)
            continue
        try:
            v = float(cand)
        except ValueError:
            continue
        if v in crit.levels:
            return v
    return None


def _ask(engine: Engine, prompt: str, prefill: str, max_tokens: int) -> str:
    msgs = [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": prompt}]
    return ask(
        engine, msgs, Sampling(temperature=0.0, top_p=1.0, max_tokens=max_tokens, seed=0), prefill
    ).text


def _question(item: QueueItem) -> str:
    msgs = list(item.prompt_messages or [])
    if len(msgs) == 1:
        return msgs[0]["content"]
    return "\n\n".join(f"{m['role'].capitalize()}: {m['content']}" for m in msgs)


def both_orders(
    ask_one: Callable[[str, str], str | None], answer_1: str, answer_2: str
) -> tuple[tuple[str, str], tuple[str, str]]:
    """The position swap, written once: ``ask_one(first, second)`` with answer 1 shown first, then answer 2
    first; each reply's letter mapped back to item terms. Returns ((verdict, raw), (verdict, raw)), a verdict
    being "1", "2", "tie" or "unparsed" (also when ``ask_one`` gave None: no reply)."""
    out = []
    for swapped in (False, True):
        raw = ask_one(answer_2, answer_1) if swapped else ask_one(answer_1, answer_2)
        letter = None if raw is None else parse_pairwise(raw)
        if letter is None:
            verdict = "unparsed"
        elif letter == "C":
            verdict = "tie"
        else:
            verdict = {"A": "2", "B": "1"}[letter] if swapped else {"A": "1", "B": "2"}[letter]
        out.append((verdict, raw or ""))
    return out[0], out[1]


def judge_pair(
    engine: Engine, question: str, answer_1: str, answer_2: str, focus: str = "", max_tokens: int = 4
) -> tuple[tuple[str, str], tuple[str, str]]:
    """Which answer is better, asked in both orders (``both_orders``): ((verdict, raw), (verdict, raw))."""

    def one(a: str, b: str) -> str:
        prompt = PAIRWISE_PROMPT.format(question=question, a=a, b=b, focus=focus)
        return _ask(engine, prompt, PAIRWISE_PREFILL, max_tokens)

    return both_orders(one, answer_1, answer_2)


def grade(
    engine: Engine, question: str, answer: str, crit: Criterion, max_tokens: int = 6
) -> tuple[float | None, str]:
    scale = "\n".join(
        f"- {name}" + (f": {crit.anchors[name]}" if name in crit.anchors else "") for name in crit.level_names
    )
    prompt = ABSOLUTE_PROMPT.format(
        question=question,
        answer=answer,
        name=crit.name,
        description=crit.description,
        scale=scale,
        example=crit.level_names[-1],
    )
    raw = _ask(engine, prompt, ABSOLUTE_PREFILL, max_tokens)
    return parse_rating(raw, crit), raw


def parse_checklist(text: str, n: int) -> list[str]:
    lines = []
    for ln in text.splitlines():
        ln = re.sub(r"^\s*(?:\d+[.)]|[-*•])\s*", "", ln).strip()
        if len(ln) >= 3:
            lines.append(ln[:200])
    return lines[:n]


@dataclass
class JudgeSpec:
    judge: str | int
    queue: str
    pairwise: bool = True
    absolute: bool = False
    criteria: list[str] | None = None
    max_items: int | None = None
    max_tokens: int = 4
    rerun: bool = False
    workers: int | None = None  # concurrent requests (default: the engine's concurrency)


@dataclass
class JudgeResult:
    judge: str
    queue: str
    n_items: int
    verdicts: dict[str, int]
    n_scores: int
    unparsed_scores: int
    seconds: float
    errors: list[str] = field(default_factory=list)


def _judge_name(info: ContestantInfo) -> str:
    return f"judge:{info.public_name}"


#: Both position-swapped runs of a pairwise verdict, ((verdict, raw), (verdict, raw)), as from `judge_pair`.
_Runs = tuple[tuple[str, str], tuple[str, str]]
#: Absolute grades of one item: (side, criterion, value or None when unparsed, raw text).
_Grades = list[tuple[str, Criterion, float | None, str]]


def run_judge(
    db: Database, spec: JudgeSpec, progress: Progress | None = None, user_id: int | None = None
) -> JudgeResult:
    """Judge a queue's items (those this judge has not labelled yet, unless ``rerun``), one item per transaction."""
    require_role(db, user_id, "researcher")
    t0 = time.perf_counter()
    info, rubric, ids = _pending(db, spec)
    crits = _criteria(spec, rubric)
    engine = engine_for(info)
    name = _judge_name(info)
    verdicts: Counter = Counter()
    n_scores = unparsed = 0
    errors: list[str] = []
    work = _work(db, ids)
    workers = spec.workers or max(1, min(getattr(engine, "concurrency", 1) or 1, 16))
    if progress:
        progress(0, len(work), "judging")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {
            pool.submit(_ask_item, engine, spec, crits, question, answers): item_id
            for item_id, question, answers in work
        }
        for k, fut in enumerate(as_completed(futures), start=1):
            item_id = futures[fut]
            if progress:
                progress(k, len(work), f"item {k}/{len(work)}")
            try:
                runs, grades = fut.result()
            except EngineError as exc:
                errors.append(f"item {item_id}: {exc}")
                continue
            with db.session() as s:
                if spec.rerun:
                    _forget(s, name, item_id)
                label_id = None
                if runs is not None:
                    outcome, label_id = _store_verdict(s, spec.queue, name, info.id, item_id, runs)
                    verdicts[outcome] += 1
                scored, missed = _store_grades(s, name, item_id, grades, label_id)
                n_scores += scored
                unparsed += missed
    return JudgeResult(
        name, spec.queue, len(ids), dict(verdicts), n_scores, unparsed, time.perf_counter() - t0, errors
    )


def _pending(db: Database, spec: JudgeSpec) -> tuple[ContestantInfo, Rubric | None, list[int]]:
    """The judge, the queue's rubric and the ids of the items to judge (in id order, at most ``max_items``)."""
    with db.session() as s:
        info = get_contestant(s, spec.judge)
        q = queue_row(s, spec.queue)
        rubric = rubric_from_dict(q.rubric, q.name) if q.rubric else None
        done = set(
            s.scalars(
                select(Label.item_id).where(Label.queue == spec.queue, Label.annotator == _judge_name(info))
            )
        )
        ids = [
            i
            for i in s.scalars(
                select(QueueItem.id).where(QueueItem.queue_id == spec.queue).order_by(QueueItem.id)
            )
        ]
    return info, rubric, [i for i in ids if spec.rerun or i not in done][: spec.max_items or None]


def _criteria(spec: JudgeSpec, rubric: Rubric | None) -> list[Criterion]:
    """The rubric criteria to grade against (none unless ``absolute``; all unless ``criteria`` names some)."""
    if not spec.absolute:
        return []
    if rubric is None:
        raise JudgeError(f"queue {spec.queue!r} has no rubric to grade against")
    return [c for c in rubric.criteria if not spec.criteria or c.name in spec.criteria]


def _work(db: Database, ids: list[int]) -> list[tuple[int, str, list[str]]]:
    """(item id, question, answers) of each item to judge, read in one transaction."""
    with db.session() as s:
        return [
            (it.id, _question(it), [it.answer_1, it.answer_2][: n_answers(it)])
            for it in s.scalars(select(QueueItem).where(QueueItem.id.in_(ids)).order_by(QueueItem.id))
        ]


def _ask_item(
    engine: Engine, spec: JudgeSpec, crits: list[Criterion], question: str, answers: list[str]
) -> tuple[_Runs | None, _Grades]:
    """One item's engine calls: the pairwise runs (when asked for and there are two answers) and the grades."""
    runs = (
        judge_pair(engine, question, answers[0], answers[1], max_tokens=spec.max_tokens)
        if spec.pairwise and len(answers) == 2
        else None
    )
    grades = [
        (side, c, *grade(engine, question, answers[int(side) - 1], c))
        for side in ("1", "2")[: len(answers)]
        for c in crits
    ]
    return runs, grades


def _store_verdict(
    s: Any, queue: str, name: str, judge_id: int, item_id: int, runs: _Runs
) -> tuple[str, int]:
    """The combined verdict as a judge label and both runs as judgements; returns (outcome, label id)."""
    outcome = combine(runs[0][0], runs[1][0])
    label = Label(
        item_id=item_id,
        queue=queue,
        annotator=name,
        kind="judge",
        outcome=outcome,
        meta={"runs": [runs[0][0], runs[1][0]], "judge_contestant_id": judge_id},
    )
    s.add(label)
    s.flush()
    for swapped, (verdict, raw) in zip((False, True), runs, strict=True):
        s.add(
            Judgement(
                item_id=item_id,
                judge=name,
                verdict=verdict,
                swapped=swapped,
                raw=raw,
                kind="pairwise",
                label_id=label.id,
            )
        )
    return outcome, label.id


def _store_grades(s: Any, name: str, item_id: int, grades: _Grades, label_id: int | None) -> tuple[int, int]:
    """Each grade as a judgement, with a rubric score when it parsed; returns (scores stored, unparsed)."""
    n_scores = unparsed = 0
    for side, crit, value, raw in grades:
        j = Judgement(
            item_id=item_id,
            judge=name,
            verdict="unparsed" if value is None else str(value),
            raw=raw,
            kind="absolute",
            side=side,
            label_id=label_id,
        )
        s.add(j)
        s.flush()
        if value is None:
            unparsed += 1
            continue
        s.add(RubricScore(item_id=item_id, judgement_id=j.id, criterion=crit.name, side=side, value=value))
        n_scores += 1
    return n_scores, unparsed


def _forget(s: Any, judge: str, item_id: int) -> None:
    """Drop a judge's earlier verdicts, grades and label on an item (before a rerun writes new ones)."""
    old = select(Judgement.id).where(Judgement.judge == judge, Judgement.item_id == item_id)
    s.execute(delete(RubricScore).where(RubricScore.judgement_id.in_(old)))
    s.execute(delete(Judgement).where(Judgement.judge == judge, Judgement.item_id == item_id))
    s.execute(delete(Label).where(Label.annotator == judge, Label.item_id == item_id, Label.kind == "judge"))


def generate_checklists(
    db: Database,
    queue: str,
    judge: str | int,
    n: int = 3,
    max_tokens: int = 60,
    progress: Progress | None = None,
    user_id: int | None = None,
) -> dict[str, list[str]]:
    """Per-prompt checklists written by a judge model, stored on the queue's items (editable later)."""
    require_role(db, user_id, "researcher")
    with db.session() as s:
        info = get_contestant(s, judge)
        queue_row(s, queue)
        first: dict[str, int] = {}
        for it in s.scalars(select(QueueItem).where(QueueItem.queue_id == queue).order_by(QueueItem.id)):
            first.setdefault(_question(it), it.id)
    engine = engine_for(info)
    out: dict[str, list[str]] = {}
    for k, (question, item_id) in enumerate(first.items()):
        if progress:
            progress(k, len(first), progress_note(k, len(first), "prompt"))
        msgs = [{"role": "user", "content": CHECKLIST_PROMPT.format(question=question, n=n)}]
        greedy = Sampling(temperature=0.0, top_p=1.0, max_tokens=max_tokens, seed=0)
        raw = ask(engine, msgs, greedy, CHECKLIST_PREFILL).text
        lines = parse_checklist(raw, n)
        if lines:
            with db.session() as s:
                out[question] = set_checklist(s, item_id, lines, author=_judge_name(info))
    return out


HUMAN_KINDS = ("human", "argilla")


@dataclass
class BiasReport:
    judge: str
    queue: str
    n_items: int
    outcomes: dict[str, int]
    consistency: Rate
    first_position: Rate
    longer: Rate
    own_family: Rate
    judge_family: str | None
    human_longer: Rate
    human_own_family: Rate
    human_items: int
    human_agreement: Rate
    human_kappa: float

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "judge": self.judge,
            "queue": self.queue,
            "n_items": self.n_items,
            "outcomes": self.outcomes,
        }
        for key in (
            "consistency",
            "first_position",
            "longer",
            "own_family",
            "human_longer",
            "human_own_family",
            "human_agreement",
        ):
            r: Rate = getattr(self, key)
            d[key] = {"rate": None if not r.n else r.value, "hits": r.hits, "n": r.n}
        d["judge_family"] = self.judge_family
        d["human_items"] = self.human_items
        d["human_kappa"] = None if self.human_kappa != self.human_kappa else self.human_kappa
        return d


def bias_report(
    db: Database,
    queue: str,
    judge: str,
    family: str | None = None,
    human_kinds: tuple[str, ...] = HUMAN_KINDS,
) -> BiasReport:
    """Position, length and own-family preference of one judge on a queue, and its agreement with humans."""
    name = judge if judge.startswith("judge:") else f"judge:{judge}"
    with db.session() as s:
        queue_row(s, queue)
        runs = [
            (j.verdict, j.swapped)
            for j in s.scalars(
                select(Judgement)
                .where(Judgement.judge == name, Judgement.kind == "pairwise")
                .join(QueueItem, Judgement.item_id == QueueItem.id)
                .where(QueueItem.queue_id == queue)
            )
        ]
        labels = s.scalars(select(Label).where(Label.queue == queue)).all()
        items = {it.id: it for it in s.scalars(select(QueueItem).where(QueueItem.queue_id == queue))}
        judge_labels = {lab.item_id: lab.outcome for lab in labels if lab.annotator == name}
        human: dict[int, list[str]] = {}
        for lab in labels:
            if lab.kind in human_kinds:
                human.setdefault(lab.item_id, []).append(merge_ties(lab.outcome))
        lengths = {i: (len(it.answer_1), len(it.answer_2)) for i, it in items.items()}
        fams = {i: tuple(model_family(st.get("model")) for st in stamps(it)[:2]) for i, it in items.items()}
    if not judge_labels:
        raise JudgeError(f"{name} has no verdicts on queue {queue!r}")
    own = family or model_family(name.removeprefix("judge:"))
    decided = [(o, i) for i, o in judge_labels.items() if o in ("1", "2", "tie", "inconsistent")]
    human_major = {i: plurality(v) for i, v in human.items()}
    human_major = {i: v for i, v in human_major.items() if v in ("1", "2", "tie")}
    both = [i for i in judge_labels if i in human_major and judge_labels[i] in ("1", "2", "tie")]
    kappa, _ = cohen_kappa([judge_labels[i] for i in both], [human_major[i] for i in both])
    return BiasReport(
        judge=name,
        queue=queue,
        n_items=len(judge_labels),
        outcomes=dict(Counter(judge_labels.values())),
        consistency=Rate(sum(1 for o, _ in decided if o != "inconsistent"), len(decided)),
        first_position=position_rate(runs),
        longer=longer_rate([(o, *lengths[i]) for i, o in judge_labels.items() if i in lengths]),
        own_family=family_rate([(o, *fams[i]) for i, o in judge_labels.items() if i in fams], own),  # type: ignore[misc]
        judge_family=own,
        human_longer=longer_rate([(str(o), *lengths[i]) for i, o in human_major.items() if i in lengths]),
        human_own_family=family_rate([(str(o), *fams[i]) for i, o in human_major.items() if i in fams], own),  # type: ignore[misc]
        human_items=len(both),
        human_agreement=Rate(sum(1 for i in both if judge_labels[i] == human_major[i]), len(both)),
        human_kappa=kappa,
    )


def judge_names(db: Database, queue: str) -> list[str]:
    with db.session() as s:
        return sorted(
            set(s.scalars(select(Label.annotator).where(Label.queue == queue, Label.kind == "judge")))
        )


__all__ = [
    "BiasReport",
    "JudgeError",
    "JudgeResult",
    "JudgeSpec",
    "QueueError",
    "bias_report",
    "generate_checklists",
    "grade",
    "both_orders",
    "judge_pair",
    "parse_checklist",
    "parse_pairwise",
    "parse_rating",
    "run_judge",
]
