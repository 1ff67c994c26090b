"""`ratings_report`: what `vibestudio ratings --battles FILE` prints, as a readable table or as JSON.

It reads the battle file and builds the leaderboard, with bootstrap intervals (sandwich intervals when
bootstrap is 0). It optionally adds win rates against a baseline, and formats. The CLI only parses its
options and prints this string.
"""

from __future__ import annotations

import json
import os
from typing import Any

from vibestudio.standings.words import counted

from ._board import Leaderboard, leaderboard
from ._input import load_battles_file


def ratings_report(
    path: str | os.PathLike[str],
    *,
    style_control: bool = False,
    vibe_control: bool = False,
    bootstrap: int = 100,
    baseline: str | None = None,
    as_json: bool = False,
    skip_bad: bool = False,
    seed: int = 0,
    resample: str = "bayesian",
    method: str = "bt",
    ci: str | None = None,
    robust: bool = False,
    votes_to_flip: bool = False,
) -> str:
    """Leaderboard for a battle file. `bootstrap` rounds (0 = sandwich intervals; `ci` "sandwich" or "bootstrap"
    overrides); `method` "bt", "rao-kupper" or "davidson"; `robust` down-weights outlying annotators (see
    `annotator_diagnostics`); `baseline` adds each model's `win_rate` and `lc_win_rate` (percent) against it;
    `votes_to_flip` adds, per adjacent pair of the plain Bradley-Terry board, the fewest votes found whose removal
    flips it (JSON: a top-level `votes_to_flip` list of {"higher", "lower", "votes"}, details in `flip`). Raises `RatingsInputError` on bad input unless `skip_bad`."""
    records, skipped = load_battles_file(path, skip_bad=skip_bad)
    if ci is None:
        ci = "bootstrap" if bootstrap > 0 else "sandwich"
    options: dict[str, Any] = {
        "bootstrap_rounds": bootstrap if ci == "bootstrap" else 0,
        "ci_method": ci,
        "seed": seed,
        "style_control": style_control,
        "vibe_control": vibe_control,
        "resample": resample,
        "method": method,
    }
    if robust:
        from ._annotators import robust_leaderboard

        board, _ = robust_leaderboard(records, **options)
    else:
        board = leaderboard(records, **options)
    if skipped:
        shown = "; ".join(f"line {line}: {reason}" for line, reason in skipped[:5])
        more = f" (and {len(skipped) - 5} more)" if len(skipped) > 5 else ""
        board.warnings.insert(0, f"skipped {len(skipped)} bad rows: {shown}{more}")
    if baseline is not None:
        from ._winrate import win_rates  # scipy.optimize: only when asked for

        rates = win_rates(records, baseline)
        for model in board.models:
            if model.name in rates:
                model.win_rate = rates[model.name]["win_rate"]
                model.lc_win_rate = rates[model.name]["lc_win_rate"]
        if any(r["lc_win_rate"] is None for r in rates.values()):
            board.warnings.append(
                "length-controlled win rates need the answers (conversations) or token counts"
            )
    flip = None
    if votes_to_flip:
        from ._flip import votes_to_flip as find_flips

        flip = find_flips(records)
    if as_json:
        out = board.to_dict()
        if flip is not None:
            out["votes_to_flip"] = flip.summary()
            out["flip"] = flip.to_dict(with_votes=True)
        return json.dumps(out, indent=2, default=str)
    text = format_board(board, baseline=baseline)
    return text if flip is None else text + "\n\n" + format_flips(flip)


def format_flips(report: Any) -> str:
    """The votes-to-flip table under a board: per adjacent pair, the checked (or, past the checking budget,
    estimated) count and the gap it closes."""
    from ._flip import headline

    estimated = any(p.votes is not None and not p.checked for p in report.pairs)
    lines = [
        "Votes to flip (plain Bradley-Terry order; each count checked by refitting without those votes"
        + ("; ~: estimated by one Newton step, past the checking budget):" if estimated else "):"),
        f"  {headline(report)}",
    ]
    for p in report.pairs:
        count = (
            "can't tell: " + p.note
            if p.votes is None
            else counted(p.votes, "vote")
            if p.checked
            else f"~{counted(p.votes, 'vote')} (estimated)"
        )
        lines.append(f"  #{p.position} {p.higher} > {p.lower}: gap {p.gap:.1f} points, {count}")
    lines += [f"  warning: {w}" for w in report.warnings]
    lines.append(f"  ({report.seconds:.2f} s)")
    return "\n".join(lines)


def format_board(board: Leaderboard, *, baseline: str | None = None) -> str:
    """Plain-text table of a leaderboard, with style coefficients and warnings below it."""
    level = round(board.ci_level * 100)
    how = f"bootstrap, {board.bootstrap_rounds} rounds" if board.ci_method == "bootstrap" else "sandwich"
    control = " with style control" if board.style_coefficients else ""
    title = {
        "bt": "Bradley-Terry",
        "rao-kupper": "Rao-Kupper (ties modelled)",
        "davidson": "Davidson (ties modelled)",
    }
    lines = [
        f"{title.get(board.method, board.method)} ratings{control} (Elo scale, {board.center}), {level}% intervals by {how}",
        f"{counted(board.n_battles, 'battle')}, {counted(len(board.models), 'model')}",
        "",
    ]
    width = max([len("model"), *(len(m.name) for m in board.models)])
    header = (
        f"{'rank':>4}  {'range':<7}  {'model':<{width}}  {'rating':>7}  {f'{level}% CI':>17}  {'battles':>8}"
    )
    header += f"  {'elo':>7}"
    if baseline is not None:
        header += f"  {'win%':>6}  {'LC win%':>7}"
    lines.append(header)
    lines.append("-" * len(header))
    for m in board.models:
        span = f"{m.rank_low}-{m.rank_high}" if m.rank_high != m.rank_low else f"{m.rank_low}"
        ci = "can't tell" if m.ci_low is None or m.ci_high is None else f"[{m.ci_low:7.1f}, {m.ci_high:7.1f}]"
        row = f"{m.rank:>4}  {span:<7}  {m.name:<{width}}  {m.rating:7.1f}  {ci:>17}  {m.n_battles:>8,}"
        row += f"  {m.elo:7.1f}" if m.elo is not None else f"  {'':>7}"
        if baseline is not None:
            row += f"  {_pct(m.win_rate):>6}  {_pct(m.lc_win_rate):>7}"
        lines.append(row)
    unknown = [m for m in board.models if m.cant_tell]
    if unknown:
        lines += ["", "Intervals that can't be told:"] + [f"  {m.name}: {m.cant_tell}" for m in unknown]
    if board.style_coefficients:
        lines += [
            "",
            "Style coefficients (rating points per standard deviation of the normalised difference):",
        ]
        for name, value in board.style_coefficients.items():
            lo, hi = board.style_intervals.get(name, (float("nan"), float("nan")))
            lines.append(f"  {name:<14} {value:+8.1f}   [{lo:+.1f}, {hi:+.1f}]")
    if board.tie_parameters:
        lines += ["", "Tie probability between two equal models, per kind of tie:"]
        for kind, v in board.tie_parameters.items():
            lines.append(f"  {kind:<16} {v['p_equal']:.3f}   [{v['ci_low']:.3f}, {v['ci_high']:.3f}]")
    if baseline is not None:
        lines += ["", f"win% and LC win% are against {baseline} (length-controlled as in AlpacaEval 2)."]
    if board.warnings:
        lines += ["", "Warnings:"] + [f"  - {w}" for w in board.warnings]
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
