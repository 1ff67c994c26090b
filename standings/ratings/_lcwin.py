"""Win rate and length-controlled (LC) win rate against a baseline, with bootstrap intervals.

The point estimates are `win_rates` (AlpacaEval 2's length control, `_winrate`). Intervals come from a
seeded bootstrap over each model's battles against the baseline, resampled `rounds` times. Each round
recomputes the raw win rate. It refits the model's own length-controlled logistic fit (theta, phi, psi).
The instruction difficulties stay at their full-data values. Refitting the across-model difficulty fit
would cost an L-BFGS fit per model per round. So the difficulty term's own uncertainty is left out, and LC
intervals are slightly narrow; they say so. With fewer than `min_battles` battles against the baseline
there is no interval ("can't tell").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vibestudio.standings.words import counted

from ._blas import single_threaded
from ._winrate import _against, _lc_value

#: Below this many battles against the baseline a model gets no interval.
MIN_BATTLES = 10


@single_threaded
def win_rate_intervals(
    records: Any,
    baseline: str,
    *,
    rounds: int = 200,
    seed: int = 0,
    ci_level: float = 0.95,
    both_good: str = "tie",
    both_bad: str = "tie",
    min_battles: int = MIN_BATTLES,
) -> dict[str, Any]:
    """{"baseline", "rows": [{"name", "n_battles", "win_rate", "win_low", "win_high", "lc_win_rate", "lc_low",
    "lc_high", "note"}], "notes"}; percentages; rows sorted by LC win rate (else win rate), best first."""
    if rounds < 2:
        raise ValueError("rounds must be at least 2")
    names, model, y, lc_inputs = _against(records, baseline, both_good=both_good, both_bad=both_bad)
    notes: list[str] = []
    if lc_inputs is None and len(model):
        notes.append(
            "length-controlled win rates need the answers (conversations) or token counts: can't tell"
        )
    notes.append(
        f"{round(100 * ci_level)}% bootstrap intervals ({rounds} rounds over each model's battles against "
        f"{baseline}); LC intervals hold the instruction difficulties at their full-data values"
    )
    rng = np.random.default_rng(seed)
    alpha = (1.0 - ci_level) / 2.0
    rows = []
    for m in np.unique(model):
        sel = model == m
        n = int(sel.sum())
        ym = y[sel]
        row: dict[str, Any] = {
            "name": names[int(m)],
            "n_battles": n,
            "win_rate": float(100.0 * ym.mean()),
            "win_low": None,
            "win_high": None,
            "lc_win_rate": None,
            "lc_low": None,
            "lc_high": None,
            "note": "",
        }
        inputs = None if lc_inputs is None else lc_inputs[int(m)]
        if inputs is not None:
            row["lc_win_rate"] = _lc_value(*inputs)
        if n < min_battles:
            row["note"] = (
                f"can't tell: {counted(n, 'battle')} against {baseline} (an interval needs {min_battles})"
            )
            rows.append(row)
            continue
        draws = rng.integers(0, n, (rounds, n))
        wins = 100.0 * ym[draws].mean(axis=1)
        row["win_low"], row["win_high"] = (float(x) for x in np.quantile(wins, [alpha, 1 - alpha]))
        if inputs is not None:
            features, yy, gamma = inputs
            lcs = np.array([_lc_value(features[d], yy[d], gamma[d]) for d in draws])
            row["lc_low"], row["lc_high"] = (float(x) for x in np.quantile(lcs, [alpha, 1 - alpha]))
        rows.append(row)
    rows.sort(key=lambda r: -(r["lc_win_rate"] if r["lc_win_rate"] is not None else r["win_rate"]))
    if not rows:
        notes.insert(0, f"no battles against {baseline}: can't tell")
    return {"baseline": baseline, "rows": rows, "notes": notes}
