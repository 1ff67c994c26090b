"""Judge-described differences between two models' answers, in the manner of VibeCheck.

The paper is Dunlap et al., "VibeCheck: Discover and Quantify Qualitative Differences in Large Language
Models", ICLR 2025. A judge model (any engine) reads both sides' answers to the same prompts and names how
they differ. Each named difference is then checked, prompt by prompt, on prompts the judge did not see
while naming it.

1. *Propose.* ``batches`` batches of ``per_batch`` prompts, each showing the question and both answers as
   "Model 1" and "Model 2". Which side is Model 1 alternates between batches; the seed draws the first.
   The judge lists properties that differ, one ``AXIS: <short phrase>`` line each. Examples: "uses emoji",
   "opens by praising the question". It may answer ``AXIS: none``. A judge that names nothing anywhere
   leaves the step unmeasured, since its "none" was never checked. Candidates are cleaned: 1-8 words, no
   "Model 1" in them. They are deduplicated on their content words: "more concise" = "less concise" =
   "concise", and the validation finds the direction. They are ranked by how many batches named them, and
   capped at ``max_axes``.
2. *Validate.* For every axis and every validation prompt, the judge is asked which answer shows MORE of
   the property. Validation prompts are disjoint from the proposal prompts. The reply is ``[[A]]``,
   ``[[B]]`` or ``[[C]]`` (about equal / neither). It is asked once with the parent's answer first, once
   with the child's first. Both orders agreeing on a side is *decisive*. Disagreeing is *inconsistent*,
   counted as neither; so a judge that always says "A" finds nothing. Either reply unreadable is
   *unreadable*.
3. *Statistics.* Per axis, the child's share of the decisive prompts gets a Wilson interval and the exact
   sign test (``common.stats.sign_test``). The p-values of all axes are adjusted together
   (Benjamini-Hochberg). An axis is *found* only when its q-value is below ``alpha`` and most of its
   replies were readable.

What it leaves out of the paper: the iterative re-proposal on prompts the found vibes do not separate.
Also the vibes' power to predict model identity and user preference. Cost:
``batches + 2 * axes * prompts`` judge calls, short greedy replies; 3 + 2 x 6 x 12 = 147 by default. A
judge that is down, or whose replies are mostly unreadable, raises ``Unmeasured`` with the reason, and the
caller records it. It is never read as "no difference".

It knows nothing about the database or contestants: an engine and aligned prompts and answers in, plain
data out.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from vibestudio.annotation.judges import PAIRWISE_PREFILL, both_orders
from vibestudio.arena.engines.ask import ask
from vibestudio.arena.engines.base import Engine, EngineError, Sampling
from vibestudio.common.stats import bh, sign_test
from vibestudio.training.report.minimums import MIN_VALIDATE  # the pre-launch check's too

MAX_AXES = 6
VALIDATE_PROMPTS = 12
BATCHES = 3
PER_BATCH = 3
METHOD = "VibeCheck-style (Dunlap et al., ICLR 2025): judge-proposed axes, position-swapped validation"

PROPOSE_SYSTEM = (
    "You compare the writing of two AI models. You describe how their answers differ (tone, format, length, "
    "openings and closings, emoji, praise, hedging, correctness); you do not say which is better."
)
PROPOSE_PROMPT = (
    "Two AI models, Model 1 and Model 2, answered the same {n} questions.\n\n{blocks}\n\n"
    "Name up to {k} properties that differ between Model 1's answers and Model 2's answers across these "
    "questions. Each property is a short phrase of 2 to 6 words naming something an answer can show more or "
    "less of (for example: uses emoji, opens by praising the question, more concise, hedges its claims). Do not "
    "say which model shows it more. Write one property per line, each line starting with AXIS: and nothing "
    "else. If the answers do not differ, write the single line AXIS: none"
)
PROPOSE_BLOCK = "[Question {i}]\n{question}\n[Model 1]\n{first}\n[Model 2]\n{second}"
VALIDATE_SYSTEM = (
    "You compare two answers on one property at a time. Judge only the property named, not which answer is "
    "better, and ignore the order the answers are shown in."
)
VALIDATE_PROMPT = (
    "[Question]\n{question}\n\n[The Start of Answer A]\n{a}\n[The End of Answer A]\n\n"
    "[The Start of Answer B]\n{b}\n[The End of Answer B]\n\n"
    "Property: {axis}\nWhich answer shows MORE of this property? Reply with [[A]] if answer A shows more of it, "
    "[[B]] if answer B shows more of it, or [[C]] if they show it about equally or neither shows it."
)
_AXIS_LINE = re.compile(
    r"^[ \t>*•-]*(?:\d+[.)][ \t]*)?\**[ \t]*AXIS[ \t]*\**[ \t]*[:：][ \t]*(.*?)[ \t]*$", re.I | re.M
)
_NONE = {"none", "n/a", "na", "nothing", "no difference", "no differences", "no clear difference", "-"}
_MODEL = re.compile(r"\b(?:model|answer|assistant)\s*[12ab]\b", re.I)
_STOP = set(
    "a an the of its their it they more less fewer greater higher lower much many most least very answer "
    "answers response responses is are uses use using used with in to and or by for model".split()
)
_SIDES = {"1": "parent", "2": "child", "tie": "neither"}  # both orders' verdict in item terms -> the side


#: Judge wordings -> the tone axis of ``textfeatures.tone`` they describe (a stem found among the axis's words).
TONE_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("flattery", ("flatter", "prais", "compliment", "admir", "sycophan", "fawn", "butter")),
    ("agreement", ("agree", "validat", "affirm", "concur")),
    ("apology", ("apolog", "sorry", "regret", "grovel")),
    (
        "feelings",
        (
            "feeling",
            "emotion",
            "personal",
            "anecdot",
            "life stor",
            "first-person",
            "first person",
            "experience",
            "memor",
            "childhood",
        ),
    ),
    ("enthusiasm", ("enthusias", "excite", "cheer", "exclamation", "upbeat", "energetic", "bubbly")),
    ("hedging", ("hedg", "uncertain", "caveat", "qualif", "tentative")),
    ("refusal", ("refus", "declin")),
)


def tone_axis(axis: str) -> str:
    """The ``textfeatures.tone`` axis a judge-named difference describes ("praises the user" -> "flattery"), or "".
    The first axis whose stems occur in the wording wins, so "praises the user's question" is flattery."""
    text = axis.lower()
    for name, stems in TONE_WORDS:
        if any(stem in text for stem in stems):
            return name
    return ""


class Unmeasured(ValueError):
    """The differences could not be described or checked (the message says why); ``calls`` were spent.
    ``judge_failed`` is false when the judge answered as asked but there was nothing to check (it named no
    difference), or too few prompts were given."""

    def __init__(self, message: str, calls: int = 0, judge_failed: bool = True) -> None:
        super().__init__(message)
        self.calls = calls
        self.judge_failed = judge_failed


@dataclass
class Axis:
    """One judge-named axis and what checking it on the validation prompts gave."""

    axis: str
    proposed_by: int  # proposal batches that named it (after deduplication)
    n: int  # validation prompts
    decisive: int  # both orders named the same side
    child_more: int
    parent_more: int
    neither: int  # both orders said about equal / neither
    inconsistent: int  # the orders disagreed (a position preference, or no real difference)
    unreadable: int  # at least one reply could not be read
    child_share: float | None  # child_more / decisive
    low: float | None  # Wilson interval of child_share
    high: float | None
    p: float  # exact two-sided sign test on the decisive prompts
    q: float | None = None  # adjusted over all axes (Benjamini-Hochberg)
    found: bool = False
    more_in: str = ""  # "child" or "parent" when found
    note: str = ""
    examples: list[dict[str, str]] = field(default_factory=list)
    tone_axis: str = ""  # the textfeatures.tone axis this wording describes (tone_axis), "" when none


@dataclass
class Described:
    judge: str
    axes: list[Axis]
    candidates: list[dict[str, Any]]  # every distinct candidate, most named first (also those over the cap)
    dropped_lines: int  # AXIS lines that were not a usable short phrase
    propose_prompts: int
    validate_prompts: int
    calls: dict[str, int]
    seconds: float
    alpha: float
    method: str = METHOD

    @property
    def found(self) -> list[Axis]:
        return [a for a in self.axes if a.found]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "n_found": len(self.found)}


def clean_axis(raw: str) -> str | None:
    """A usable axis phrase from one ``AXIS:`` line: lower case, trimmed; "" for an explicit "none"; None when
    it is not a short phrase (too long, no letters, or naming which model shows it)."""
    text = " ".join(str(raw).replace("**", "").split()).strip(" \"'`*_.;:,!").lower()
    text = re.sub(r"^(?:model|answer)\s*[12ab]\s+(?:is\s+|are\s+|has\s+)?", "", text)
    if text in _NONE:
        return ""
    words = text.split()
    if not 1 <= len(words) <= 8 or len(text) > 60 or not re.search(r"[^\W\d_]", text) or _MODEL.search(text):
        return None
    return text


def parse_axes(text: str) -> tuple[list[str], int] | None:
    """The axes of a proposal reply and how many of its AXIS lines were unusable; None when the reply has no
    usable line at all (no ``AXIS:`` line, or only unusable ones): the judge did not answer in the format."""
    lines = _AXIS_LINE.findall(text or "")
    cleaned = [clean_axis(x) for x in lines]
    usable = [c for c in cleaned if c is not None]
    if not usable:
        return None
    return [c for c in usable if c], len(cleaned) - len(usable)


def axis_key(axis: str) -> str:
    """What two wordings of one axis share: their content words, singular, sorted ("uses emojis" = "emoji")."""
    words = re.findall(r"[^\W_]+|[^\w\s]", axis.lower())
    stems = {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words}
    key = sorted(stems - _STOP)
    return " ".join(key) or axis.lower()


def merge_candidates(proposals: Sequence[Sequence[str]]) -> list[dict[str, Any]]:
    """Distinct axes over all proposal replies: the first wording of each, how many replies named it; most
    named first, then in the order first named."""
    seen: dict[str, dict[str, Any]] = {}
    for reply in proposals:
        for key in dict.fromkeys(axis_key(a) for a in reply):
            wording = next(a for a in reply if axis_key(a) == key)
            entry = seen.setdefault(key, {"axis": wording, "batches": 0, "order": len(seen)})
            entry["batches"] += 1
    ranked = sorted(seen.values(), key=lambda e: (-e["batches"], e["order"]))
    return [{"axis": e["axis"], "batches": e["batches"]} for e in ranked]


class _Judge:
    """The judge engine with greedy short replies, counting calls, errors and the first error (thread-safe)."""

    def __init__(self, engine: Engine, seed: int) -> None:
        self.engine = engine
        self.seed = seed
        self.calls = 0
        self.errors = 0
        self.first_error = ""
        self._lock = threading.Lock()

    def ask(self, system: str, prompt: str, prefill: str, max_tokens: int) -> str | None:
        with self._lock:
            self.calls += 1
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        sampling = Sampling(temperature=0.0, top_p=1.0, max_tokens=max_tokens, seed=self.seed)
        try:
            return ask(self.engine, msgs, sampling, prefill).text
        except EngineError as exc:
            with self._lock:
                self.errors += 1
                self.first_error = self.first_error or f"{type(exc).__name__}: {exc}"
            return None


def _clip(text: str, limit: int) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit] + " …"


def _propose(
    judge: _Judge,
    prompts: list[str],
    parent: list[str],
    child: list[str],
    batches: int,
    per_batch: int,
    max_axes: int,
    seed: int,
) -> tuple[list[dict[str, Any]], int, list[str]]:
    """Candidates over the proposal batches, unusable lines, and the raw replies; Unmeasured when no reply
    was readable."""
    child_first = random.Random(seed).random() < 0.5
    replies: list[list[str]] = []
    raws: list[str] = []
    dropped = 0
    for b in range(batches):
        idx = range(b * per_batch, min((b + 1) * per_batch, len(prompts)))
        if not idx:
            break
        swap = child_first != (b % 2 == 1)  # alternate which side is Model 1
        blocks = "\n\n".join(
            PROPOSE_BLOCK.format(
                i=k + 1,
                question=_clip(prompts[i], 600),
                first=_clip((child if swap else parent)[i], 700),
                second=_clip((parent if swap else child)[i], 700),
            )
            for k, i in enumerate(idx)
        )
        raw = judge.ask(
            PROPOSE_SYSTEM, PROPOSE_PROMPT.format(n=len(idx), blocks=blocks, k=max_axes), "", 24 * max_axes
        )
        raws.append(raw or "")
        parsed = parse_axes(raw or "")
        if parsed is not None:
            replies.append(parsed[0])
            dropped += parsed[1]
    if not replies:
        if judge.errors == judge.calls:
            raise Unmeasured(f"could not ask the judge: {judge.first_error}", judge.calls)
        sample = next((r for r in raws if r.strip()), "")
        raise Unmeasured(
            f"the judge named no axis in the required format (AXIS: <phrase>) in any of {judge.calls} "
            f"proposal replies, e.g. {_clip(sample, 80)!r}",
            judge.calls,
        )
    return merge_candidates(replies), dropped, raws


def _combine(parent_first: str, child_first: str) -> str:
    """One prompt's outcome from the two orders' verdicts in item terms ("1" = the parent, "2" = the child)."""
    if "unparsed" in (parent_first, child_first):
        return "unreadable"
    if parent_first != child_first:
        return "inconsistent"
    return _SIDES[parent_first]


def _validate(
    judge: _Judge,
    axes: list[dict[str, Any]],
    prompts: list[str],
    parent: list[str],
    child: list[str],
    workers: int,
) -> tuple[list[list[str]], list[str]]:
    """Per axis, each validation prompt's outcome; and the unreadable raw replies (for the reason)."""
    jobs = [(i, j) for i in range(len(axes)) for j in range(len(prompts))]

    def one(job: tuple[int, int]) -> tuple[tuple[str, str], tuple[str, str]]:
        i, j = job

        def ask_one(first: str, second: str) -> str | None:
            prompt = VALIDATE_PROMPT.format(
                question=_clip(prompts[j], 1200),
                a=_clip(first, 1500),
                b=_clip(second, 1500),
                axis=axes[i]["axis"],
            )
            return judge.ask(VALIDATE_SYSTEM, prompt, PAIRWISE_PREFILL, 4)

        return both_orders(ask_one, parent[j], child[j])

    with ThreadPoolExecutor(max(1, workers)) as pool:
        replies = dict(zip(jobs, pool.map(one, jobs), strict=True))
    outcomes = [
        [_combine(replies[(i, j)][0][0], replies[(i, j)][1][0]) for j in range(len(prompts))]
        for i in range(len(axes))
    ]
    bad = [raw for pair in replies.values() for verdict, raw in pair if verdict == "unparsed"]
    return outcomes, bad


def _axis(cand: dict[str, Any], outcomes: list[str]) -> Axis:
    """Counts, the child's share with its interval and the sign test, for one axis's per-prompt outcomes."""
    count = {k: outcomes.count(k) for k in ("child", "parent", "neither", "inconsistent", "unreadable")}
    p, low, high = sign_test(count["child"], count["parent"])
    decisive = count["child"] + count["parent"]
    return Axis(
        axis=cand["axis"],
        proposed_by=cand["batches"],
        n=len(outcomes),
        decisive=decisive,
        child_more=count["child"],
        parent_more=count["parent"],
        neither=count["neither"],
        inconsistent=count["inconsistent"],
        unreadable=count["unreadable"],
        child_share=count["child"] / decisive if decisive else None,
        low=low,
        high=high,
        p=p,
        note="most replies unreadable" if count["unreadable"] > len(outcomes) / 2 else "",
        tone_axis=tone_axis(cand["axis"]),
    )


def _examples(
    axis: Axis, outcomes: list[str], prompts: list[str], parent: list[str], child: list[str], k: int
) -> list[dict[str, str]]:
    """Up to ``k`` validation prompts on which the judge (both orders) named the side the axis leans to."""
    side = axis.more_in or ("child" if axis.child_more >= axis.parent_more else "parent")
    return [
        {
            "prompt": _clip(prompts[j], 300),
            "parent": _clip(parent[j], 400),
            "child": _clip(child[j], 400),
            "more": side,
        }
        for j in [j for j, o in enumerate(outcomes) if o == side][:k]
    ]


def describe(
    engine: Engine,
    judge_name: str,
    prompts: list[str],
    parent: list[str],
    child: list[str],
    *,
    max_axes: int = MAX_AXES,
    n_validate: int = VALIDATE_PROMPTS,
    batches: int = BATCHES,
    per_batch: int = PER_BATCH,
    min_validate: int = MIN_VALIDATE,
    alpha: float = 0.05,
    examples: int = 2,
    seed: int = 0,
) -> Described:
    """Propose axes on the first prompts, validate them on the next ``n_validate`` ones (see the module text).
    Raises ``Unmeasured`` (with the reason and the calls spent) when the judge cannot be used."""
    t0 = time.perf_counter()
    if not len(prompts) == len(parent) == len(child):
        raise ValueError(f"prompts and answers differ in length: {len(prompts)}, {len(parent)}, {len(child)}")
    if n_validate < min_validate or max_axes < 1 or batches < 1 or per_batch < 1:
        raise ValueError(
            f"need at least {min_validate} validation prompts and one axis, batch and prompt per batch (got "
            f"{n_validate}, {max_axes}, {batches}, {per_batch})"
        )
    n_propose = min(batches * per_batch, len(prompts) // 2)
    val = slice(n_propose, n_propose + n_validate)
    vp, vpa, vca = prompts[val], parent[val], child[val]
    if len(vp) < min_validate or n_propose < 1:
        raise Unmeasured(
            f"only {len(prompts)} prompts: {n_propose} to propose axes on and {len(vp)} to check them on "
            f"(at least {min_validate} needed)",
            judge_failed=False,
        )
    judge = _Judge(engine, seed)
    workers = max(1, min(int(getattr(engine, "concurrency", 1) or 1), 8))
    cands, dropped, _ = _propose(
        judge, prompts[:n_propose], parent[:n_propose], child[:n_propose], batches, per_batch, max_axes, seed
    )
    proposed = judge.calls
    chosen = cands[:max_axes]
    if not chosen:  # "AXIS: none" is the judge's unchecked claim, not a measurement of "no difference"
        raise Unmeasured(
            f"the judge named no difference in any of its {proposed} proposal replies (it said none), so there "
            "was nothing to check",
            judge.calls,
            judge_failed=False,
        )
    outcomes, bad = _validate(judge, chosen, vp, vpa, vca, workers)
    asked = judge.calls - proposed
    if len(bad) > asked / 2:
        why = (
            f"could not ask the judge: {judge.first_error}"
            if judge.errors > asked / 2
            else f"the judge gave no readable verdict ([[A]], [[B]] or [[C]]) on {len(bad)} of {asked} "
            f"validation calls, e.g. {_clip(next((r for r in bad if r.strip()), ''), 80)!r}"
        )
        raise Unmeasured(why, judge.calls)
    axes = [_axis(c, o) for c, o in zip(chosen, outcomes, strict=True)]
    for a, q in zip(axes, bh([a.p for a in axes]), strict=True):
        a.q = q
        a.found = q < alpha and not a.note
        if a.found:
            a.more_in = "child" if a.child_more > a.parent_more else "parent"
    for a, o in zip(axes, outcomes, strict=True):
        a.examples = _examples(a, o, vp, vpa, vca, examples)
    axes.sort(key=lambda a: (not a.found, a.q if a.q is not None else 1.0, -a.decisive))
    return Described(
        judge=judge_name,
        axes=axes,
        candidates=cands,
        dropped_lines=dropped,
        propose_prompts=n_propose,
        validate_prompts=len(vp),
        calls={
            "propose": proposed,
            "validate": asked,
            "unreadable": len(bad),
            "errors": judge.errors,
            "total": judge.calls,
        },
        seconds=time.perf_counter() - t0,
        alpha=alpha,
    )
