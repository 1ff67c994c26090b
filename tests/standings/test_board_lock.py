"""Board fits do not hold the lock the arena's sampler needs: while a slow board is being fitted (someone cycling
the Leaderboard's options), the sampler still reads new votes and its ratings at once."""

from __future__ import annotations

import threading
from typing import Any

from tests.helpers.standings import register_contestants, write_battles
from vibestudio.standings.leaderboard import BoardOptions, LeaderboardService
from vibestudio.standings.vote_cache import VoteCache


def test_sampler_does_not_wait_for_a_board_fit(db, tmp_path, monkeypatch):
    import vibestudio.standings.ratings as standings_ratings

    ids = register_contestants(db)
    write_battles(db, ids, 120)
    svc = LeaderboardService(db, VoteCache(db, tmp_path / "cache"))
    svc.sampler_inputs()  # the sampler's own board, fitted once
    real = standings_ratings.leaderboard
    started, release = threading.Event(), threading.Event()

    def slow_fit(
        *args, **kwargs
    ):  # a board fit that lasts until the test lets it end (bootstrap on many votes)
        started.set()
        assert release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(standings_ratings, "leaderboard", slow_fit)
    fit = threading.Thread(target=svc.board, args=(BoardOptions(bootstrap=5, seed=9, board="single-turn"),))
    fit.start()
    try:
        assert started.wait(10)
        out: list[Any] = []
        sampler = threading.Thread(
            target=lambda: out.append(svc.sampler_inputs())
        )  # new votes, memoized ratings
        sampler.start()
        sampler.join(20)
        # the fit is still running: a sampler that needed its lock would still be waiting
        assert not sampler.is_alive() and fit.is_alive(), "the sampler waited for a board fit"
    finally:
        release.set()
        fit.join(30)
    assert out and out[0].ratings, "the sampler lost its ratings"
