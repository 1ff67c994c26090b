"""Inter-annotator agreement in plain numpy: Krippendorff's alpha, Cohen's kappa, Fleiss' kappa, majority
agreement.

Inputs are reliability matrices: one row per coder (annotator), one column per unit (item). A coder who
did not rate a unit has ``None`` / NaN there. Values may be numbers or, for nominal data, any hashable
labels. Nothing here knows about queues or the database. ``annotation.agreement_report`` builds the
matrices.

Conventions, following the textbooks:
- **Krippendorff's alpha** uses the coincidence matrix over pairable values (units with at least two
  ratings). It has the nominal, ordinal, interval and ratio difference functions of Krippendorff (2011,
  "Computing Krippendorff's Alpha-Reliability"). Ordinal distances use the value frequencies, so ordinal
  alpha only needs ranks.
- **Cohen's kappa** compares two coders on the units both rated.
- **Fleiss' kappa** takes a units x categories count table. Units may have different numbers of ratings.
  Then per-unit agreement uses that unit's own count, and category shares are pooled over all ratings. For
  a constant count this is exactly Fleiss 1971.
- **Agreement with the majority** is leave-one-out. A coder's label is compared with the strict plurality
  of the *other* coders' labels on that unit. Units with no strict plurality among the others do not
  count.
Undefined values (no variation, too few pairable units) come back as NaN.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _codes(matrix: Sequence[Sequence[Any]]) -> tuple[np.ndarray, list[Any]]:
    """Map values to integer codes (sorted values); missing -> -1."""
    values = sorted({v for row in matrix for v in row if not _missing(v)}, key=_sort_key)
    index = {v: i for i, v in enumerate(values)}
    codes = np.array([[(-1 if _missing(v) else index[v]) for v in row] for row in matrix], dtype=int)
    return codes, values


def _sort_key(v: Any) -> tuple[int, Any]:
    return (0, float(v)) if isinstance(v, int | float) and not isinstance(v, bool) else (1, str(v))


def coincidence_matrix(matrix: Sequence[Sequence[Any]]) -> tuple[np.ndarray, list[Any]]:
    """Krippendorff's coincidence matrix o[c, k] and the sorted values it is indexed by."""
    codes, values = _codes(matrix)
    n_vals = len(values)
    o = np.zeros((n_vals, n_vals))
    if codes.size == 0:
        return o, values
    for u in range(codes.shape[1]):
        col = codes[:, u]
        col = col[col >= 0]
        m = len(col)
        if m < 2:
            continue
        counts = np.bincount(col, minlength=n_vals).astype(float)
        pairs = np.outer(counts, counts) - np.diag(counts)  # ordered pairs of different coders
        o += pairs / (m - 1)
    return o, values


def _delta2(values: list[Any], n_c: np.ndarray, level: str) -> np.ndarray:
    k = len(values)
    if level == "nominal":
        return 1.0 - np.eye(k)
    if level == "ordinal":
        cum = np.concatenate([[0.0], np.cumsum(n_c)])
        d = np.zeros((k, k))
        for c in range(k):
            for e in range(k):
                lo, hi = min(c, e), max(c, e)
                d[c, e] = (cum[hi + 1] - cum[lo] - (n_c[c] + n_c[e]) / 2.0) ** 2
        return d
    try:
        v = np.array([float(x) for x in values])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{level} alpha needs numeric values, got {values!r}") from exc
    diff = v[:, None] - v[None, :]
    if level == "interval":
        return diff**2
    if level == "ratio":
        total = v[:, None] + v[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(total == 0, 0.0, diff / total)
        return r**2
    raise ValueError(f"unknown measurement level {level!r}; known: {', '.join(LEVELS)}")


def krippendorff_alpha(matrix: Sequence[Sequence[Any]], level: str = "nominal") -> float:
    """Krippendorff's alpha for a coders x units matrix (None/NaN = missing)."""
    if level not in LEVELS:
        raise ValueError(f"unknown measurement level {level!r}; known: {', '.join(LEVELS)}")
    o, values = coincidence_matrix(matrix)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if n <= 1 or len(values) < 2:
        return float("nan")
    d2 = _delta2(values, n_c, level)
    observed = (o * d2).sum()
    expected = (np.outer(n_c, n_c) * d2).sum()
    if expected == 0:
        return float("nan")
    return float(1.0 - (n - 1) * observed / expected)


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> tuple[float, int]:
    """Cohen's kappa of two coders over the units both rated; returns (kappa, n units)."""
    if len(a) != len(b):
        raise ValueError("both coders need one entry per unit")
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if not _missing(x) and not _missing(y)]
    n = len(pairs)
    if n == 0:
        return float("nan"), 0
    cats = sorted({v for p in pairs for v in p}, key=_sort_key)
    idx = {c: i for i, c in enumerate(cats)}
    table = np.zeros((len(cats), len(cats)))
    for x, y in pairs:
        table[idx[x], idx[y]] += 1
    p_o = np.trace(table) / n
    p_e = float((table.sum(axis=1) / n) @ (table.sum(axis=0) / n))
    if p_e >= 1.0:
        return float("nan"), n
    return float((p_o - p_e) / (1.0 - p_e)), n


def fleiss_kappa(counts: Sequence[Sequence[float]]) -> float:
    """Fleiss' kappa from a units x categories table of rating counts (units with < 2 ratings are dropped)."""
    t = np.asarray(counts, dtype=float)
    if t.ndim != 2:
        raise ValueError("counts must be a units x categories table")
    n_i = t.sum(axis=1)
    t, n_i = t[n_i >= 2], n_i[n_i >= 2]
    if len(t) == 0:
        return float("nan")
    p_i = ((t * t).sum(axis=1) - n_i) / (n_i * (n_i - 1))
    p_bar = p_i.mean()
    p_j = t.sum(axis=0) / n_i.sum()
    p_e = float((p_j * p_j).sum())
    if p_e >= 1.0:
        return float("nan")
    return float((p_bar - p_e) / (1.0 - p_e))


def counts_table(matrix: Sequence[Sequence[Any]]) -> tuple[np.ndarray, list[Any]]:
    """The units x categories count table of a coders x units matrix (for Fleiss' kappa)."""
    codes, values = _codes(matrix)
    table = np.zeros((codes.shape[1] if codes.size else 0, len(values)))
    for u in range(table.shape[0]):
        col = codes[:, u]
        for c in col[col >= 0]:
            table[u, c] += 1
    return table, values


@dataclass
class MajorityAgreement:
    coder: int
    agree: int
    n: int

    @property
    def rate(self) -> float:
        return self.agree / self.n if self.n else float("nan")


def majority_agreement(matrix: Sequence[Sequence[Any]]) -> list[MajorityAgreement]:
    """Each coder's agreement with the leave-one-out strict plurality of the other coders, per unit."""
    rows = [list(r) for r in matrix]
    n_units = len(rows[0]) if rows else 0
    out = []
    for c, row in enumerate(rows):
        agree = n = 0
        for u in range(n_units):
            mine = row[u]
            if _missing(mine):
                continue
            others = [r[u] for i, r in enumerate(rows) if i != c and not _missing(r[u])]
            top = plurality(others)
            if top is None:
                continue
            n += 1
            agree += int(top == mine)
        out.append(MajorityAgreement(c, agree, n))
    return out


def plurality(labels: Sequence[Hashable]) -> Hashable | None:
    """The most frequent label when it is strictly ahead of the runner-up; None otherwise (or when empty)."""
    if not labels:
        return None
    common = Counter(labels).most_common(2)
    if len(common) > 1 and common[0][1] == common[1][1]:
        return None
    return common[0][0]


def percent_agreement(a: Sequence[Any], b: Sequence[Any]) -> tuple[float, int]:
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if not _missing(x) and not _missing(y)]
    if not pairs:
        return float("nan"), 0
    return sum(x == y for x, y in pairs) / len(pairs), len(pairs)
