"""Ratings and leaderboards from arena battles. It holds:
- Elo, and Bradley-Terry with confidence intervals;
- tie models (Rao-Kupper, Davidson), style and vibe control;
- win rates and length-controlled win rates against a baseline;
- category boards, pairwise matrices, rating over time;
- a predictive check of the methods on held-out votes;
- per-annotator diagnostics with a rigging-resistant fit;
- votes-to-flip: how many votes would change each adjacent pair;
- the composite human + judge board with the judge's exchange rate, overall and per vibe;
- a prompt-conditioned board.

These are plain functions over battle records in FastChat's battle layout. A record has `model_a`,
`model_b`, `winner`, and optional conversations, `tstamp`, `category`, `question_id`, `sampling_prob`,
`turn`, `judge`. No database access and no UI. The caller loads records (`load_battles_file`, or rows from
the battle store) and passes them in. See docs/ratings.md.

Names are imported on first use (PEP 562 `__getattr__`). So `import standings.ratings` costs nothing. A
command that only needs `ratings_report` does not pay for scipy.optimize (win rates) or the views.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "SCALE": "_board",
    "Leaderboard": "_board",
    "ModelRating": "_board",
    "leaderboard": "_board",
    "rank_intervals": "_board",
    "online_elo": "_elo",
    "WINNERS": "_input",
    "BattleRecords": "_input",
    "RatingsInputError": "_input",
    "as_records": "_input",
    "load_battles_file": "_input",
    "format_board": "_report",
    "ratings_report": "_report",
    "BoardGroup": "_views",
    "PairwiseMatrices": "_views",
    "group_boards": "_views",
    "leaderboard_by": "_views",
    "pairwise_matrices": "_views",
    "rating_over_time": "_views",
    "vibe_profiles": "_views",
    "WinRate": "_winrate",
    "win_rates": "_winrate",
    "METHODS": "_ties",
    "TIE_METHODS": "_ties",
    "method_changes": "_views",
    "PREDICT_METHODS": "_predict",
    "PredictiveCheck": "_predict",
    "predictive_check": "_predict",
    "format_predictive": "_predict",
    "AnnotatorReport": "_annotators",
    "annotator_diagnostics": "_annotators",
    "robust_leaderboard": "_annotators",
    "format_annotators": "_annotators",
    "FlipReport": "_flip",
    "PairFlip": "_flip",
    "headline": "_flip",
    "flip_headline": "_flip",
    "votes_to_flip": "_flip",
    "win_rate_intervals": "_lcwin",
    "JudgeWorth": "_composite",
    "composite_board": "_composite",
    "judge_worth": "_composite",
    "VibeReport": "_worth_by_vibe",
    "judge_worth_by_vibe": "_worth_by_vibe",
    "PromptBoard": "_prompt_board",
    "prompt_board": "_prompt_board",
}

__all__ = [
    "AnnotatorReport",
    "BattleRecords",
    "BoardGroup",
    "FlipReport",
    "JudgeWorth",
    "Leaderboard",
    "METHODS",
    "ModelRating",
    "PREDICT_METHODS",
    "PairFlip",
    "PairwiseMatrices",
    "PredictiveCheck",
    "PromptBoard",
    "RatingsInputError",
    "SCALE",
    "TIE_METHODS",
    "VibeReport",
    "WINNERS",
    "WinRate",
    "annotator_diagnostics",
    "as_records",
    "composite_board",
    "flip_headline",
    "format_annotators",
    "format_board",
    "format_predictive",
    "group_boards",
    "headline",
    "judge_worth",
    "judge_worth_by_vibe",
    "leaderboard",
    "leaderboard_by",
    "load_battles_file",
    "method_changes",
    "online_elo",
    "pairwise_matrices",
    "predictive_check",
    "prompt_board",
    "rank_intervals",
    "rating_over_time",
    "ratings_report",
    "robust_leaderboard",
    "vibe_profiles",
    "votes_to_flip",
    "win_rate_intervals",
    "win_rates",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:
    from ._annotators import AnnotatorReport, annotator_diagnostics, format_annotators, robust_leaderboard
    from ._board import SCALE, Leaderboard, ModelRating, leaderboard, rank_intervals
    from ._composite import JudgeWorth, composite_board, judge_worth
    from ._elo import online_elo
    from ._flip import FlipReport, PairFlip, flip_headline, headline, votes_to_flip
    from ._input import WINNERS, BattleRecords, RatingsInputError, as_records, load_battles_file
    from ._lcwin import win_rate_intervals
    from ._predict import PREDICT_METHODS, PredictiveCheck, format_predictive, predictive_check
    from ._prompt_board import PromptBoard, prompt_board
    from ._report import format_board, ratings_report
    from ._ties import METHODS, TIE_METHODS
    from ._views import (
        BoardGroup,
        PairwiseMatrices,
        group_boards,
        leaderboard_by,
        method_changes,
        pairwise_matrices,
        rating_over_time,
        vibe_profiles,
    )
    from ._winrate import WinRate, win_rates
    from ._worth_by_vibe import VibeReport, judge_worth_by_vibe
