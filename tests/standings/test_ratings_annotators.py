"""Rigging resistance: simulated rigged accounts are flagged (recall >= 0.9 at FPR <= 0.05 over honest ones), the
robust board puts the target back at its honest rank, and the diagnostics say what they cannot estimate."""

from __future__ import annotations

import pandas as pd
import pytest

from vibestudio.standings.ratings import (
    annotator_diagnostics,
    format_annotators,
    leaderboard,
    robust_leaderboard,
)
from vibestudio.standings.ratings._simulate import simulate_arena


def _rank(board, name: str) -> int:  # type: ignore[no-untyped-def]
    return [m.name for m in board.models].index(name) + 1


@pytest.mark.parametrize("timing", [True, False], ids=["with-timing", "identity-only"])
def test_rigged_accounts_flagged_and_undone(timing: bool) -> None:
    caught = riggers = false_pos = honest = 0
    for strategy in ("target", "style"):
        for n_riggers, seed in ((1, 11), (2, 12)):
            frame, truth = simulate_arena(riggers=n_riggers, rigger_votes=300, strategy=strategy, seed=seed)
            if not timing:
                frame = frame.drop(columns=["vote_seconds"])
            report = annotator_diagnostics(frame)
            flagged = set(report.flagged)
            caught += len(flagged & set(truth["riggers"]))
            riggers += n_riggers
            false_pos += len(flagged & set(truth["honest"]))
            honest += len(truth["honest"])
            for name in truth["riggers"]:
                assert report.get(name).favoured == truth["target"]
                assert report.get(name).weight < 0.05
            opts = {"ci_method": "sandwich", "elo_k": None}
            target = truth["target"]
            honest_rank = _rank(leaderboard(frame[frame["judge"].isin(truth["honest"])], **opts), target)
            rigged_rank = _rank(leaderboard(frame, **opts), target)
            robust, _ = robust_leaderboard(frame, report=report, **opts)
            assert rigged_rank < honest_rank  # the rigging worked on the plain board...
            assert _rank(robust, target) == honest_rank  # ...and the robust board undoes it
            assert any("down-weighted" in w for w in robust.warnings)
            assert len(frame) == sum(m.n_battles for m in robust.models) // 2  # nothing deleted
    assert caught / riggers >= 0.9
    assert false_pos / honest <= 0.05


def test_fast_voting_is_flagged() -> None:
    frame, truth = simulate_arena(riggers=1, rigger_votes=200, strategy="target", seed=21)
    report = annotator_diagnostics(frame)
    rigger = report.get(truth["riggers"][0])
    assert rigger.fast_share == 1.0
    assert any("faster than reading" in f for f in rigger.flags)
    assert all((report.get(h).fast_share or 0.0) < 0.5 for h in truth["honest"])


def test_missing_annotator_ids() -> None:
    frame, _ = simulate_arena(seed=22, n_honest=10, votes_per_honest=50)
    frame.loc[frame.index[:7], "judge"] = None
    report = annotator_diagnostics(frame)
    assert any("7 votes have no annotator id" in n for n in report.notes)
    assert sum(a.n_votes for a in report.annotators) == len(frame) - 7
    bare = frame.drop(columns=["judge"])
    report = annotator_diagnostics(bare)
    assert report.annotators == [] and "cannot be estimated" in report.notes[0]
    assert "cannot be estimated" in format_annotators(report)
    board, _ = robust_leaderboard(bare, ci_method="sandwich", elo_k=None)
    assert board.ratings() == pytest.approx(leaderboard(bare, ci_method="sandwich", elo_k=None).ratings())


def test_all_ties_and_small_annotators() -> None:
    frame = pd.DataFrame(
        {
            "model_a": ["a", "b", "c"] * 10,
            "model_b": ["b", "c", "a"] * 10,
            "winner": ["tie"] * 30,
            "judge": ["u1"] * 25 + ["u2"] * 5,
        }
    )
    report = annotator_diagnostics(frame)
    assert any("every vote is a tie" in n for n in report.notes)
    assert all(a.fit_z is None and a.note for a in report.annotators)
    frame["winner"] = ["model_a"] * 15 + ["model_b"] * 15
    report = annotator_diagnostics(frame)
    assert report.get("u2").note and "too few" in report.get("u2").note
    assert report.get("u2").weight == 1.0 and report.get("u2").fit_z is None


def test_vote_weights_are_checked() -> None:
    frame, _ = simulate_arena(seed=23, n_honest=5, votes_per_honest=20)
    with pytest.raises(ValueError, match="vote_weights"):
        leaderboard(frame, vote_weights=[1.0, 2.0])
