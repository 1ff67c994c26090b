"""Ratings and leaderboards from arena battles: Elo, Bradley-Terry with confidence intervals, style and vibe control,
win rates and length-controlled win rates, category boards, pairwise matrices and rating over time.

Plain functions over battle records (FastChat's battle layout: `model_a`, `model_b`, `winner`, optional
conversations, `tstamp`, `category`, `question_id`, `sampling_prob`, `turn`); no database access and no UI. The
caller loads records (`load_battles_file`, or rows from the battle store) and passes them in. See docs/ratings.md.
"""

from ._board import SCALE, Leaderboard, ModelRating, leaderboard, rank_intervals
from ._elo import online_elo
from ._records import WINNERS, BattleRecords, RatingsInputError, as_records, load_battles_file
from ._report import format_board, ratings_report
from ._views import PairwiseMatrices, leaderboard_by, pairwise_matrices, rating_over_time, vibe_profiles
from ._winrate import WinRate, win_rates

__all__ = [
    "SCALE",
    "WINNERS",
    "WinRate",
    "BattleRecords",
    "Leaderboard",
    "ModelRating",
    "PairwiseMatrices",
    "RatingsInputError",
    "as_records",
    "format_board",
    "leaderboard",
    "leaderboard_by",
    "load_battles_file",
    "online_elo",
    "pairwise_matrices",
    "rank_intervals",
    "rating_over_time",
    "ratings_report",
    "vibe_profiles",
    "win_rates",
]
