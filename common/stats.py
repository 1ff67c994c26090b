"""Paired statistics for checkpoint reports: how sure a change between parent and child answers is.

Parent and child answer the same prompts, so every measure is a list of per-prompt pairs.
- ``paired_change`` gives the mean change with a percentile bootstrap interval over prompts. Its p-value
  comes from a sign-flip permutation: under "no change", swapping parent and child on a prompt is equally
  likely.
- ``sign_test`` does the same for outcomes that only say which side won on each prompt. It gives an exact
  binomial p-value and a Wilson interval for the winner's share.
- ``adjust`` (``bh`` on plain lists) turns the p-values of features tested together into
  Benjamini-Hochberg q-values (scipy's ``false_discovery_control``). So a report that tests a dozen
  features does not flag one by chance.
Resampling is seeded: the same answers give the same report.

``wilson`` is the studio's one Wilson interval (SciPy's), with the confidence level as a parameter. ``Z95`` is
its one z for a two-sided 95% interval. ``Change`` is also the one drift record a report stores per feature.

It knows nothing about models or features: lists of numbers in, plain dataclasses out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

#: The normal quantile of a two-sided 95% interval (``scipy.stats.norm.ppf(0.975)``; a test checks it).
Z95 = 1.959963984540054


@dataclass
class Change:
    """Mean of a measure on each side, the change child - parent, its interval and p-value, over ``n`` prompts.

    It is also a feature's drift in a report: ``flagged`` is the report's one decision on it, and
    ``past_threshold`` says whether the change passed its practical threshold. Both stay None until a
    report decides. Its dict leaves out what is undecided, so stored measures keep their keys."""

    parent: float
    child: float
    delta: float
    low: float
    high: float
    p: float
    n: int
    q: float | None = None  # p adjusted for the number of features tested together (Benjamini-Hochberg)
    flagged: bool | None = None  # the report's decision (a verdict rule or the threshold); None: not decided
    past_threshold: bool | None = (
        None  # None with a decision: a report saved before decisions (it was ``flagged``)
    )

    def __post_init__(self) -> None:
        if self.past_threshold is None and self.flagged is not None:
            self.past_threshold = self.flagged

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("flagged", "past_threshold"):
            if out[key] is None:  # not decided: left out, as a measure's dict always was
                del out[key]
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Change:
        """A change read back from a stored report: its own keys only, the optional ones may be missing."""
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})

    def decided(self, flagged: bool, past_threshold: bool) -> Change:
        """This change with a report's decision on it (a copy)."""
        return replace(self, flagged=flagged, past_threshold=past_threshold)

    def significant(self, alpha: float = 0.05) -> bool:
        return (self.q if self.q is not None else self.p) < alpha


def paired_change(
    parent: Sequence[float],
    child: Sequence[float],
    *,
    n_boot: int = 2000,
    n_perm: int = 4000,
    level: float = 0.95,
    seed: int = 0,
) -> Change:
    """Mean change with a bootstrap-over-prompts interval and a two-sided sign-flip permutation p-value."""
    a = np.asarray(parent, dtype=float)
    b = np.asarray(child, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired measures need two equal-length lists, got {a.shape} and {b.shape}")
    n = int(a.size)
    if n == 0:
        raise ValueError("no pairs to compare")
    d = b - a
    delta = float(d.mean())
    if not np.any(d):
        return Change(float(a.mean()), float(b.mean()), 0.0, 0.0, 0.0, 1.0, n)
    rng = np.random.default_rng(seed)
    boots = d[rng.integers(0, n, size=(n_boot, n))].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(boots, [tail, 1 - tail])
    signs = rng.choice(np.array([-1.0, 1.0]), size=(n_perm, n))
    null = np.abs((signs * d).mean(axis=1))
    p = (1 + int(np.sum(null >= abs(delta) - 1e-12))) / (n_perm + 1)
    return Change(float(a.mean()), float(b.mean()), delta, float(low), float(high), float(p), n)


def bh(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in the order given."""
    if not len(pvalues):
        return []
    from scipy.stats import false_discovery_control

    return [float(q) for q in false_discovery_control(np.asarray(pvalues, dtype=float), method="bh")]


def adjust(changes: dict[str, Change]) -> None:
    """Fill each change's ``q`` with its Benjamini-Hochberg adjusted p-value (in place)."""
    names = list(changes)
    for name, q in zip(names, bh([changes[k].p for k in names]), strict=True):
        changes[name].q = q


def wilson(k: float, n: int, level: float = 0.95) -> tuple[float, float] | None:
    """The Wilson score interval of ``k`` successes in ``n`` trials; None when ``n`` is 0 (nothing to estimate).

    Whole counts go to SciPy (``binomtest(k, n).proportion_ci(method="wilson")``). SciPy takes only whole counts.
    A score that counts a tie as half a win is not one, so it takes the same interval in closed form.
    Its z comes from SciPy's normal quantile; a test checks both paths agree on whole counts."""
    from scipy.stats import binomtest

    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"wilson needs 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return None
    if float(k).is_integer():
        ci = binomtest(int(k), n).proportion_ci(confidence_level=level, method="wilson")
        return float(ci.low), float(ci.high)
    return _wilson_closed(k, n, level)


def _wilson_closed(k: float, n: int, level: float) -> tuple[float, float]:
    """The Wilson interval from its formula, for a count SciPy will not take (a half from ties)."""
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    p, zz = k / n, z * z / n
    centre = (p + zz / 2) / (1 + zz)
    half = z * math.sqrt(p * (1 - p) / n + zz / (4 * n)) / (1 + zz)
    return max(0.0, centre - half), min(1.0, centre + half)


def sign_test(wins: int, losses: int, level: float = 0.95) -> tuple[float, float | None, float | None]:
    """Paired yes / no outcomes that went one way (``wins``) or the other (``losses``), ties left out: the exact
    two-sided sign test's p-value and a Wilson interval for the share of wins (None, None when there are none)."""
    from scipy.stats import binomtest

    n = wins + losses
    ci = wilson(wins, n, level)
    if ci is None:
        return 1.0, None, None
    return float(binomtest(wins, n, 0.5).pvalue), ci[0], ci[1]


def mcnemar_p(parent_pass: Sequence[bool], child_pass: Sequence[bool]) -> float:
    """Exact McNemar test (binomial on the discordant pairs) for paired pass / fail outcomes."""
    from scipy.stats import binomtest

    worse = sum(1 for p, c in zip(parent_pass, child_pass, strict=True) if p and not c)
    better = sum(1 for p, c in zip(parent_pass, child_pass, strict=True) if c and not p)
    if worse + better == 0:
        return 1.0
    return float(binomtest(better, worse + better, 0.5).pvalue)


def mcnemar_change(parent_pass: Sequence[bool], child_pass: Sequence[bool], level: float = 0.95) -> Change:
    """Change in pass rate with its interval and p-value from one test: the exact McNemar test.

    Conditional on the d items that changed, the b that got better are Binomial(d, pi), and "no change" is
    pi = 1/2. The p-value is the exact two-sided binomial test (``mcnemar_p``). The interval is the
    Clopper-Pearson interval of pi, the inversion of that same test, mapped to the change d / n (2 pi - 1).
    So the interval excludes 0 exactly when p < 1 - level. No changed item: change 0, interval [0, 0], p 1."""
    from scipy.stats import binomtest

    pairs = list(zip(parent_pass, child_pass, strict=True))
    n = len(pairs)
    if n == 0:
        raise ValueError("no pairs to compare")
    better = sum(1 for p, c in pairs if c and not p)
    worse = sum(1 for p, c in pairs if p and not c)
    d = better + worse
    parent, child = sum(map(bool, parent_pass)) / n, sum(map(bool, child_pass)) / n
    if d == 0:
        return Change(parent, child, 0.0, 0.0, 0.0, 1.0, n, q=1.0)
    test = binomtest(better, d, 0.5)
    ci = test.proportion_ci(confidence_level=level, method="exact")
    low, high = (d / n * (2.0 * x - 1.0) for x in (ci.low, ci.high))
    p = float(test.pvalue)
    return Change(parent, child, (better - worse) / n, float(low), float(high), p, n, q=p)
