"""Which style and vibe coefficients the votes can tell: enough votes, no collinearity, a bounded interval.

A coefficient is fitted only when the data can identify it. Three checks, in order:

1. Votes per coefficient. Logistic fits need about ten events per fitted parameter (Peduzzi et al., 1996).
   A covariate fit has (models - 1) ratings plus one coefficient per feature. With fewer than ten votes
   per parameter, no coefficient is fitted. Each reads "can't tell" with the votes it would need.
2. Effective votes per coefficient, by variance inflation factors (VIF, Marquardt 1970). The features are
   first freed of what the models' ratings explain (the Schur complement of the weighted design's Gram
   matrix). So a feature only one model shows is collinear with the models. A coefficient with inflation
   VIF is as precise as one fitted on votes / VIF independent votes. The feature with the fewest effective
   votes below the rule is left out, and the rest rechecked. It names its partners. Exact collinearity
   (infinite VIF) is left out whatever the votes.
3. After the fit (in `_board`): an interval is never narrower than the inverse information allows. One
   wider than `MAX_HALF_WIDTH` either side reads "can't tell" (a near-separated fit).

Left-out features do not enter the fit, so the ratings are those of the identifiable part. The module
knows nothing of boards or UI; it returns plain data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vibestudio.standings.words import counted

#: Votes needed per fitted parameter (ratings after the first, plus coefficients): the events-per-variable rule.
VOTES_PER_COEFFICIENT = 10
#: Eigenvalues of the features' correlation (after the models) below this are exact collinearity.
_EXACT = 1e-9


@dataclass
class CovariateCheck:
    """The columns of X to fit and, per feature left out, why it can't be told."""

    fit_columns: list[int]
    cant_tell: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def votes_needed(n_models: int, n_features: int) -> int:
    """Votes a fit with these ratings and coefficients needs: ten per fitted parameter."""
    return VOTES_PER_COEFFICIENT * max(1, n_models - 1 + n_features)


def check_covariates(
    a: np.ndarray, b: np.ndarray, n_models: int, X: np.ndarray, w: np.ndarray, names: list[str]
) -> CovariateCheck:
    """Which columns of the standardised covariates `X` (one row per vote) the votes can identify."""
    n, k = X.shape
    if k == 0:
        return CovariateCheck([])
    need = votes_needed(n_models, k)
    if n < need:
        reason = (
            f"too few votes: {counted(n_models, 'model')} and {counted(k, 'style/vibe coefficient')} need at "
            f"least {need} votes ({VOTES_PER_COEFFICIENT} per fitted parameter), this board has {n}"
        )
        note = f"style/vibe control not applied: {reason}; the ratings are not controlled for style or vibes"
        return CovariateCheck([], {name: reason for name in names}, [note])
    corr, on_models = _correlation(a, b, n_models, X, w)
    cols = list(range(k))
    out = CovariateCheck(cols)
    while cols:
        vif, null = _vif(corr[np.ix_(cols, cols)])
        need = votes_needed(n_models, len(cols))
        worst = max(range(len(cols)), key=lambda i: (vif[i], i))
        if n / vif[worst] >= need:
            break
        j = cols[worst]
        partners = [names[cols[i]] for i in range(len(cols)) if i != worst and null[worst, i]]
        if on_models[j] < 1.0 / max(vif[worst], 1.0) * 1.5:
            partners.insert(0, "the models (the ratings already explain most of it, e.g. one model shows it)")
        who = ", ".join(partners) or "the other features"
        if not np.isfinite(vif[worst]):
            out.cant_tell[names[j]] = (
                f"exactly collinear with {who}: no number of votes can separate its effect from theirs; left out "
                "of the fit"
            )
        else:
            out.cant_tell[names[j]] = (
                f"nearly collinear with {who} (variance inflation {vif[worst]:.0f}): its {n} votes weigh as "
                f"{n / vif[worst]:.0f} independent ones, it needs {need} (about {int(np.ceil(need * vif[worst]))} "
                "votes at this collinearity); left out of the fit"
            )
        cols.pop(worst)
    out.fit_columns = cols
    if out.cant_tell:
        out.notes.append(
            "style/vibe features left out as collinear (their coefficients read can't tell): "
            + ", ".join(out.cant_tell)
        )
    return out


def _correlation(
    a: np.ndarray, b: np.ndarray, m: int, X: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The features' weighted Gram matrix after the models, as a correlation matrix; and each feature's share of
    variance the models leave (1 - R^2 on the models alone)."""
    wx = X * w[:, None]
    gram = X.T @ wx
    # D^T W X and D^T W D for the incidence D (+1 at a, -1 at b), without building D
    dx = np.stack(
        [np.bincount(a, wx[:, j], m) - np.bincount(b, wx[:, j], m) for j in range(X.shape[1])], axis=1
    )
    diag = np.bincount(a, w, m) + np.bincount(b, w, m)
    off = np.bincount(np.minimum(a, b) * m + np.maximum(a, b), w, m * m).reshape(m, m)
    lap = np.diag(diag) - off - off.T
    schur = gram - dx.T @ np.linalg.pinv(lap, hermitian=True) @ dx
    scale = np.sqrt(np.maximum(np.diag(gram), 1e-300))
    corr = schur / np.outer(scale, scale)
    return (corr + corr.T) / 2.0, np.diag(corr).copy()


def _vif(corr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Variance inflation per feature (inf where exactly collinear) and which features share a (near) null
    direction."""
    vals, vecs = np.linalg.eigh(corr)
    flat = vals <= _EXACT * max(1.0, float(vals[-1]))
    loading = np.abs(vecs[:, flat]) > 1e-6
    null = (loading[:, None, :] & loading[None, :, :]).any(axis=2)
    safe = np.where(flat, np.inf, vals)
    vif = (vecs**2 / safe).sum(axis=1)
    vif[loading.any(axis=1)] = np.inf
    if not flat.all():
        # near-collinear partners: the features loading heavily on the smallest non-null direction
        small = int(np.argmin(np.where(flat, np.inf, vals)))
        heavy = np.abs(vecs[:, small]) > 0.3
        null = null | np.outer(heavy, heavy)
    return vif, null
