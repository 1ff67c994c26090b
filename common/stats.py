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

It knows nothing about models or features: lists of numbers in, plain dataclasses out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass
class Change:
    """Mean of a measure on each side, the change child - parent, its interval and p-value, over ``n`` prompts."""

    parent: float
    child: float
    delta: float
    low: float
    high: float
    p: float
    n: int
    q: float | None = None  # p adjusted for the number of features tested together (Benjamini-Hochberg)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

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


def sign_test(wins: int, losses: int, level: float = 0.95) -> tuple[float, float | None, float | None]:
    """Paired yes / no outcomes that went one way (``wins``) or the other (``losses``), ties left out: the exact
    two-sided sign test's p-value and a Wilson interval for the share of wins (None, None when there are none)."""
    from scipy.stats import binomtest

    n = wins + losses
    if n == 0:
        return 1.0, None, None
    test = binomtest(wins, n, 0.5)
    ci = test.proportion_ci(confidence_level=level, method="wilson")
    return float(test.pvalue), float(ci.low), float(ci.high)


def mcnemar_p(parent_pass: Sequence[bool], child_pass: Sequence[bool]) -> float:
    """Exact McNemar test (binomial on the discordant pairs) for paired pass / fail outcomes."""
    from scipy.stats import binomtest

    worse = sum(1 for p, c in zip(parent_pass, child_pass, strict=True) if p and not c)
    better = sum(1 for p, c in zip(parent_pass, child_pass, strict=True) if c and not p)
    if worse + better == 0:
        return 1.0
    return float(binomtest(better, worse + better, 0.5).pvalue)
