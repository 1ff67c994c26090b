"""Discovered changes: the phrases, openings and closings whose rate rose or fell most from parent to child.
It also asks whether the child took on what its training preferences rewarded.

No list of phrases is needed. Every candidate is counted once per answer:
- every word n-gram of 1-3 words (punctuation and emoji count as words);
- every answer opening: its first one, two and three words;
- every closing: its last one to three words.
Candidates are ranked by the weighted log-odds ratio with an informative Dirichlet prior (Monroe, Colaresi
& Quinn 2008, "Fightin' Words"). The prior is the pooled parent + child counts, scaled by ``prior_scale``.
It shrinks rare phrases towards "no change".

**How sure a change is.** Parent and child answer the same prompts with the same seeds. So each
candidate's p-value is the exact sign test on the prompts where only one side used it (McNemar). Unpaired
lists fall back to the log-odds z. Phrases and answer edges (openings and closings) are two families. Each
is adjusted on its own with Benjamini-Hochberg. So a habit at the start of answers is not drowned by
thousands of n-grams. Two samples of the same model find nothing.

**Rewarded.** ``rewarded`` reads the training snapshot instead. It finds the candidates its chosen answers
carry more (or less) than its rejected ones, pair by pair. Those few are named before the held-out answers
are seen. Then they are tested on the child against its parent (``took_on``, Benjamini-Hochberg over just
them). That is far more sensitive than searching every n-gram. It answers the question the studio exists
for: did the child pick up what the preferences rewarded?
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from scipy.stats import norm

from vibestudio.common.stats import bh, sign_test
from vibestudio.standings.ratings._features import assistant_text
from vibestudio.textfeatures.vibes import TOKEN_RE

Key = tuple[str, str]  # (kind, phrase)
FAMILY = {"phrase": "phrases", "opening": "edges", "closing": "edges"}


@dataclass
class Phrase:
    phrase: str
    kind: str  # "phrase", "opening" or "closing"
    parent_rate: float  # share of parent answers that contain it
    child_rate: float
    log_odds: float  # child vs parent (> 0: rose)
    z: float
    significant: bool
    examples: list[dict[str, str]] = field(default_factory=list)
    p: float = 1.0
    q: float = 1.0  # Benjamini-Hochberg within its family
    family: str = "phrases"  # "phrases" or "edges" (openings and closings)
    tested: int = 0  # candidates tested in its family

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _tokens(text: str) -> list[str]:
    return TOKEN_RE.findall((text or "").casefold().replace("\u2019", "'"))


def candidates(text: str, max_n: int = 3, edge: int = 3) -> set[Key]:
    """Every (kind, phrase) an answer contains, each once."""
    toks = _tokens(text)
    out: set[Key] = set()
    for n in range(1, max_n + 1):
        for i in range(len(toks) - n + 1):
            out.add(("phrase", " ".join(toks[i : i + n])))
    for k in range(1, min(edge, len(toks)) + 1):
        out.add(("opening", " ".join(toks[:k]) + " …"))
        out.add(("closing", "… " + " ".join(toks[-k:])))
    return out


def _log_odds(
    ya: Counter[Key], yb: Counter[Key], keys: Iterable[Key], prior_scale: float
) -> dict[Key, tuple[float, float]]:
    """Weighted log-odds of b vs a with an informative Dirichlet prior: {key: (delta, z)} (> 0: more in b)."""
    n_a, n_b = sum(ya.values()), sum(yb.values())  # all candidates, also the rare ones left out of the test
    a0 = prior_scale * (n_a + n_b)
    out = {}
    for k in keys:
        prior = a0 * (ya[k] + yb[k]) / (n_a + n_b)
        lb = math.log((yb[k] + prior) / (n_b + a0 - yb[k] - prior))
        la = math.log((ya[k] + prior) / (n_a + a0 - ya[k] - prior))
        out[k] = (lb - la, (lb - la) / math.sqrt(1 / (yb[k] + prior) + 1 / (ya[k] + prior)))
    return out


def _discordant(key: Key, a_sets: list[set[Key]], b_sets: list[set[Key]]) -> tuple[int, int]:
    """Paired answers where only b has the candidate, and where only a has it."""
    only_b = sum(1 for x, y in zip(a_sets, b_sets, strict=True) if key in y and key not in x)
    only_a = sum(1 for x, y in zip(a_sets, b_sets, strict=True) if key in x and key not in y)
    return only_b, only_a


def _paired_p(key: Key, a_sets: list[set[Key]], b_sets: list[set[Key]]) -> float:
    """Exact sign test on the answers where only one side has the candidate (McNemar for paired presence)."""
    return sign_test(*_discordant(key, a_sets, b_sets))[0]


def _rows_with(sets: list[set[Key]]) -> dict[Key, frozenset[int]]:
    """For every candidate, the rows whose answer has it."""
    where: dict[Key, set[int]] = {}
    for i, cands in enumerate(sets):
        for k in cands:
            where.setdefault(k, set()).add(i)
    return {k: frozenset(v) for k, v in where.items()}


def _examples(
    key: Key, sets: list[set[Key]], answers: list[str], prompts: list[str] | None, side: str, n: int
) -> list[dict[str, str]]:
    found = [i for i, s in enumerate(sets) if key in s][:n]
    return [{"side": side, "prompt": prompts[i] if prompts else "", "answer": answers[i]} for i in found]


def discover(
    parent_answers: list[str],
    child_answers: list[str],
    prompts: list[str] | None = None,
    *,
    top: int = 12,
    min_answers: int = 3,
    prior_scale: float = 0.1,
    alpha: float = 0.05,
    examples: int = 2,
) -> list[Phrase]:
    """The ``top`` candidates with the largest |z|, most significant first (rises and falls both). The lists
    are paired (answer i of each to prompt i) when they have the same length."""
    p_sets = [candidates(t) for t in parent_answers]
    c_sets = [candidates(t) for t in child_answers]
    yp: Counter[Key] = Counter(k for s in p_sets for k in s)
    yc: Counter[Key] = Counter(k for s in c_sets for k in s)
    keys = [k for k in set(yp) | set(yc) if yp[k] + yc[k] >= min_answers]
    if not keys:
        return []
    scores = _log_odds(yp, yc, keys, prior_scale)
    paired = len(p_sets) == len(c_sets)
    pvals = {
        k: _paired_p(k, p_sets, c_sets) if paired else 2 * float(norm.sf(abs(scores[k][1]))) for k in keys
    }
    qvals: dict[Key, float] = {}
    sizes: dict[str, int] = {}
    for fam in set(FAMILY.values()):
        members = [k for k in keys if FAMILY[k[0]] == fam]
        sizes[fam] = len(members)
        qvals.update(zip(members, bh([pvals[k] for k in members]), strict=True))
    ranked = sorted(keys, key=lambda k: (-round(abs(scores[k][1]), 6), -len(k[1].split()), k))
    out = []
    for kind, phrase in ranked[:top]:
        k = (kind, phrase)
        delta, z = scores[k]
        side, sets, answers = (
            ("child", c_sets, child_answers) if delta > 0 else ("parent", p_sets, parent_answers)
        )
        out.append(
            Phrase(
                phrase,
                kind,
                yp[k] / max(len(parent_answers), 1),
                yc[k] / max(len(child_answers), 1),
                delta,
                z,
                bool(qvals[k] < alpha),
                _examples(k, sets, answers, prompts, side, examples),
                pvals[k],
                qvals[k],
                FAMILY[kind],
                sizes[FAMILY[kind]],
            )
        )
    out.sort(key=lambda d: (not d.significant, -abs(d.z)))
    return out


# -- what the preferences rewarded ---------------------------------------------------------------------------------
def _text(answer: Any) -> str:
    """An answer of a snapshot row: a string or a list of messages (the assistant's content joined)."""
    return answer if isinstance(answer, str) else assistant_text(answer) or ""


def preference_answers(rows: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The chosen and the rejected answer of every snapshot row that has both."""
    chosen, rejected = [], []
    for row in rows or []:
        c, r = _text(row.get("chosen")), _text(row.get("rejected"))
        if c.strip() and r.strip():
            chosen.append(c)
            rejected.append(r)
    return chosen, rejected


@dataclass
class Rewarded:
    """A candidate the preferences rewarded (chosen > rejected) or penalised, and how the child moved on it."""

    phrase: str
    kind: str
    direction: str  # "rewarded" (more in chosen answers) or "penalised" (more in rejected ones)
    chosen_rate: float
    rejected_rate: float
    preference_p: float  # exact sign test over the snapshot's rows where only one answer of the pair has it
    parent_rate: float = 0.0
    child_rate: float = 0.0
    child_only: int = 0  # held-out prompts where only the child's answer has it
    parent_only: int = 0
    p: float = 1.0
    q: float = 1.0  # Benjamini-Hochberg over the candidates tested
    took_on: bool = False  # significant, in the direction the preferences pushed
    examples: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rewarded(
    rows: list[dict[str, Any]], *, top: int = 8, min_rows: int = 3, max_p: float = 0.05
) -> list[Rewarded]:
    """The candidates the snapshot's preferences pushed hardest: for each, the rows (a prompt with a chosen and a
    rejected answer) where only the chosen answer has it against those where only the rejected one does, the
    exact sign test's p below ``max_p``, most decisive first, at most ``top``. Candidates present in exactly the
    same rows on both sides are one habit (every word of a template answer, say): only the first of them is kept,
    an opening or closing before a phrase and the shortest first, since that carries over to new prompts best.
    Empty when the snapshot has no pairs or no candidate differs."""
    chosen, rejected = preference_answers(rows)
    in_chosen = _rows_with([candidates(t) for t in chosen])
    in_rejected = _rows_with([candidates(t) for t in rejected])
    none: frozenset[int] = frozenset()
    pattern = {k: (in_chosen.get(k, none), in_rejected.get(k, none)) for k in in_chosen.keys() | in_rejected}
    scored = []
    for k, (c, r) in pattern.items():
        only_c, only_r = len(c - r), len(r - c)
        if only_c + only_r >= min_rows:
            p = sign_test(only_c, only_r)[0]
            if p < max_p:
                scored.append(
                    (p, -abs(only_c - only_r), k[0] == "phrase", len(k[1].split()), k, only_c, only_r)
                )
    scored.sort()
    n = max(len(chosen), 1)
    out: list[Rewarded] = []
    seen: set[tuple[frozenset[int], frozenset[int]]] = set()
    for p, _, _, _, k, only_c, only_r in scored:
        if pattern[k] in seen:
            continue
        seen.add(pattern[k])
        c, r = pattern[k]
        out.append(
            Rewarded(k[1], k[0], "rewarded" if only_c > only_r else "penalised", len(c) / n, len(r) / n, p)
        )
        if len(out) == top:
            break
    return out


def took_on(
    found: list[Rewarded],
    parent_answers: list[str],
    child_answers: list[str],
    prompts: list[str] | None = None,
    *,
    alpha: float = 0.05,
    examples: int = 2,
) -> list[Rewarded]:
    """Test each rewarded / penalised candidate on paired held-out answers: the exact sign test on the prompts
    where only one side has it, Benjamini-Hochberg over the candidates; ``took_on`` when the child moved the
    way the preferences pushed."""
    if len(parent_answers) != len(child_answers):
        raise ValueError("took_on needs paired answers (the same prompts on both sides)")
    p_sets = [candidates(t) for t in parent_answers]
    c_sets = [candidates(t) for t in child_answers]
    n = max(len(parent_answers), 1)
    out = []
    for r in found:
        k = (r.kind, r.phrase)
        only_c, only_p = _discordant(k, p_sets, c_sets)
        rose = only_c > only_p
        out.append(
            Rewarded(
                **{
                    **r.to_dict(),
                    "parent_rate": sum(k in s for s in p_sets) / n,
                    "child_rate": sum(k in s for s in c_sets) / n,
                    "child_only": only_c,
                    "parent_only": only_p,
                    "p": sign_test(only_c, only_p)[0],
                    "examples": _examples(
                        k,
                        c_sets if rose else p_sets,
                        child_answers if rose else parent_answers,
                        prompts,
                        "child" if rose else "parent",
                        examples,
                    ),
                }
            )
        )
    for r, q in zip(out, bh([r.p for r in out]), strict=True):
        r.q = q
        pushed = (r.child_only > r.parent_only) == (r.direction == "rewarded")
        r.took_on = bool(q < alpha and pushed and r.child_only != r.parent_only)
    return out


# -- phrases summarised into tone axes -----------------------------------------------------------------------------
#: Groups for phrases whose sentences show no tone axis: what the words themselves are about.
PRESENCE = {
    "address": "addressing the user (you, your)",
    "self": "first-person presence (I, my)",
    "exclamations": "exclamation marks",
    "emoji": "emoji",
}
_SECOND = {"you", "your", "you're", "yours", "yourself", "you've", "you'll"}
_FIRST = {"i", "i'm", "my", "me", "i've", "i'll", "i'd", "myself", "mine"}


def _phrase_tokens(phrase: str, kind: str) -> list[str]:
    """The tokens of a phrase as ``candidates`` made them ("you're" and "you ' re" alike; no "…")."""
    return _tokens(phrase.replace("…", " "))


def _contains(toks: list[str], sub: list[str]) -> bool:
    n = len(sub)
    return any(toks[i : i + n] == sub for i in range(len(toks) - n + 1))


def phrase_axis(phrase: str, kind: str, answers: list[str]) -> tuple[str, int, int]:
    """The tone axis a discovered phrase belongs to, read from the sentences that use it in ``answers`` (the side
    where it rose): the axis most of those sentences show; else what its words are about (``PRESENCE``: "you" is
    addressing the user, "I'm" first-person presence, "!" exclamations, emoji), else "". Returns (axis, sentences
    showing that axis, sentences using the phrase)."""
    from vibestudio.textfeatures import tone
    from vibestudio.textfeatures.vibes import emoji_list

    sub = _phrase_tokens(phrase, kind)
    votes: Counter[str] = Counter()
    using = 0
    for text in answers:
        body, why = tone.readable(text)
        if why is not None:
            continue
        sents = tone.sentences(body)
        if kind == "opening":
            sents = sents[:1]
        elif kind == "closing":
            sents = sents[-1:]
        for sent in sents:
            if sub and _contains(_tokens(sent), sub):
                using += 1
                votes.update(tone.sentence_axes(sent))
    if votes:  # ties go to the first axis in textfeatures.tone's order (praise before enthusiasm)
        order = {a: i for i, a in enumerate(tone.AXES)}
        axis, k = max(votes.items(), key=lambda kv: (kv[1], -order.get(kv[0], 99)))
        if k >= max(2, (using + 1) // 2):
            return axis, k, using
    words = set(sub)
    if words & _SECOND:
        return "address", 0, using
    if words & _FIRST:
        return "self", 0, using
    if "!" in words:
        return "exclamations", 0, using
    if any(emoji_list(w) for w in words):
        return "emoji", 0, using
    return "", 0, using


def _rate(values: list[float]) -> float:
    return sum(1 for v in values if v > 0) / len(values) if values else 0.0


def summarise_tone(
    features: dict[str, Any],
    discovered: list[dict[str, Any]],
    candidates: list[dict[str, Any]],
    prompts: list[str],
    parent: list[str],
    child: list[str],
) -> dict[str, Any]:
    """The tone axes of a report in words a person uses: per axis its paired change (from ``features``, the
    report's drift), the share of answers showing it on each side, example sentences from the side it moved
    to, and the discovered and rewarded phrases that belong to it (``phrase_axis``); phrases of no tone axis are
    grouped by what their words are about. Plain data for ``training.report.text``."""
    from vibestudio.textfeatures import tone
    from vibestudio.textfeatures.vibes import features as text_features

    ta = [tone.axes(t, p) for t, p in zip(parent, prompts, strict=True)]
    tb = [tone.axes(t, p) for t, p in zip(child, prompts, strict=True)]
    pairs = [(x, y) for x, y in zip(ta, tb, strict=True) if x is not None and y is not None]
    na: dict[str, Counter[str]] = {"parent": Counter(), "child": Counter()}
    for side, texts in (("parent", parent), ("child", child)):
        for t, p in zip(texts, prompts, strict=True):
            why = tone.readable(t, p)[1]
            if why:
                na[side][why] += 1
    fa = [text_features(t) for t in parent]
    fb = [text_features(t) for t in child]
    phrases: dict[str, list[dict[str, Any]]] = {}
    for d in discovered:
        rose = d.get("z", 0) > 0
        axis, shows, using = phrase_axis(d["phrase"], d["kind"], child if rose else parent)
        phrases.setdefault(axis, []).append(
            {
                "phrase": d["phrase"],
                "kind": d["kind"],
                "source": "discovered",
                "parent_rate": d["parent_rate"],
                "child_rate": d["child_rate"],
                "supported": bool(d.get("significant")),
                "sentences": using,
                "showing": shows,
            }
        )
    for c in candidates:
        rose = c.get("child_only", 0) > c.get("parent_only", 0)
        axis, shows, using = phrase_axis(c["phrase"], c["kind"], child if rose else parent)
        phrases.setdefault(axis, []).append(
            {
                "phrase": c["phrase"],
                "kind": c["kind"],
                "source": "rewarded",
                "parent_rate": c["parent_rate"],
                "child_rate": c["child_rate"],
                "supported": bool(c.get("took_on")),
                "sentences": using,
                "showing": shows,
            }
        )
    axes = []
    for name in tone.TONE_FEATURES:
        f = features.get(name)
        if f is None:
            continue
        if name in tone.AXES:
            pr, cr, n = _rate([x[name] for x, _ in pairs]), _rate([y[name] for _, y in pairs]), len(pairs)
        else:
            pr, cr, n = _rate([r[name] for r in fa]), _rate([r[name] for r in fb]), len(fa)
        up = f["delta"] > 0
        q = f.get("q")
        axes.append(
            {
                "axis": name,
                "label": tone.LABELS[name],
                "parent_rate": pr,
                "child_rate": cr,
                "n": n,
                **{k: f[k] for k in ("parent", "child", "delta", "low", "high", "p", "q", "flagged")},
                "significant": q is not None and q < 0.05,
                "direction": "up" if up else "down" if f["delta"] < 0 else "",
                "examples": tone.examples(child if up else parent, name) if name in tone.AXES else [],
                "phrases": phrases.pop(name, []),
            }
        )
    presence = [
        {"group": g, "label": label, "phrases": phrases.pop(g)}
        for g, label in PRESENCE.items()
        if g in phrases
    ]
    return {
        "axes": axes,
        "presence": presence,
        "unassigned": phrases.pop("", []),
        "n_pairs": len(pairs),
        "n": len(prompts),
        "not_applicable": {side: dict(c) for side, c in na.items()},
        "method": "sentences read for who they are about and the VADER lexicon (textfeatures.tone)",
    }
