"""Discovered changes: the phrases, openings and closings whose rate rose or fell most from parent to child.

No list of phrases is needed: every word n-gram (1-3 words, punctuation and emoji count as words), every answer
opening (its first three words) and closing (its last three) is a candidate, counted once per answer. Candidates
are ranked by the weighted log-odds ratio with an informative Dirichlet prior (Monroe, Colaresi & Quinn 2008,
"Fightin' Words"), the pooled parent + child counts scaled by ``prior_scale`` serving as the prior, which shrinks
rare phrases towards "no change". A change is *significant* when its two-sided p-value (from the z-score) survives
Benjamini-Hochberg over all candidates tested (so two samples of the same model find nothing), and each comes
with example answers.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.stats import false_discovery_control, norm

from arena.vibes import TOKEN_RE


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _tokens(text: str) -> list[str]:
    return TOKEN_RE.findall((text or "").casefold().replace("\u2019", "'"))


def candidates(text: str, max_n: int = 3, edge: int = 3) -> set[tuple[str, str]]:
    """Every (kind, phrase) an answer contains, each once."""
    toks = _tokens(text)
    out: set[tuple[str, str]] = set()
    for n in range(1, max_n + 1):
        for i in range(len(toks) - n + 1):
            out.add(("phrase", " ".join(toks[i : i + n])))
    if toks:
        out.add(("opening", " ".join(toks[:edge]) + " …"))
        out.add(("closing", "… " + " ".join(toks[-edge:])))
    return out


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
    """The ``top`` candidates with the largest |z|, most significant first (rises and falls both)."""
    p_sets = [candidates(t) for t in parent_answers]
    c_sets = [candidates(t) for t in child_answers]
    yp: Counter[tuple[str, str]] = Counter(k for s in p_sets for k in s)
    yc: Counter[tuple[str, str]] = Counter(k for s in c_sets for k in s)
    keys = [k for k in set(yp) | set(yc) if yp[k] + yc[k] >= min_answers]
    if not keys:
        return []
    n_p, n_c = sum(yp.values()), sum(yc.values())  # all candidates, also the rare ones left out of the test
    a0 = prior_scale * (n_p + n_c)
    scored = []
    for k in keys:
        prior = a0 * (yp[k] + yc[k]) / (n_p + n_c)
        lc = math.log((yc[k] + prior) / (n_c + a0 - yc[k] - prior))
        lp = math.log((yp[k] + prior) / (n_p + a0 - yp[k] - prior))
        delta = lc - lp
        z = delta / math.sqrt(1 / (yc[k] + prior) + 1 / (yp[k] + prior))
        scored.append((k, delta, z))
    pvals = np.array([2 * float(norm.sf(abs(z))) for _, _, z in scored])
    qvals = dict(zip([k for k, _, _ in scored], false_discovery_control(pvals, method="bh"), strict=True))
    scored.sort(key=lambda t: (-round(abs(t[2]), 6), -len(t[0][1].split()), t[0]))
    out = []
    for (kind, phrase), delta, z in scored[:top]:
        side, sets, answers = (
            ("child", c_sets, child_answers) if delta > 0 else ("parent", p_sets, parent_answers)
        )
        found = [i for i, s in enumerate(sets) if (kind, phrase) in s][:examples]
        out.append(
            Phrase(
                phrase,
                kind,
                yp[(kind, phrase)] / max(len(parent_answers), 1),
                yc[(kind, phrase)] / max(len(child_answers), 1),
                delta,
                z,
                bool(qvals[(kind, phrase)] < alpha),
                [
                    {"side": side, "prompt": prompts[i] if prompts else "", "answer": answers[i]}
                    for i in found
                ],
            )
        )
    return out
