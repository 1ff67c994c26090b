"""Board fits do not hold the lock the arena's sampler needs: while a slow board is being fitted (someone cycling
the Leaderboard's options), the sampler still reads new votes and its ratings at once."""

from __future__ import annotations

import threading
import time

from tests.helpers.standings import register_contestants, write_battles
from vibestudio.standings.leaderboard import BoardOptions, LeaderboardService
from vibestudio.standings.vote_cache import VoteCache

FIT_S = 1.5


def test_sampler_does_not_wait_for_a_board_fit(db, tmp_path, monkeypatch):
    import vibestudio.standings.ratings as standings_ratings

    ids = register_contestants(db)
    write_battles(db, ids, 120)
    svc = LeaderboardService(db, VoteCache(db, tmp_path / "cache"))
    svc.sampler_inputs()  # the sampler's own board, fitted once
    real = standings_ratings.leaderboard
    started = threading.Event()

    def slow_fit(*args, **kwargs):  # a board that takes FIT_S to fit (bootstrap on many votes does)
        started.set()
        time.sleep(FIT_S)
        return real(*args, **kwargs)

    monkeypatch.setattr(standings_ratings, "leaderboard", slow_fit)
    fit = threading.Thread(target=svc.board, args=(BoardOptions(bootstrap=5, seed=9, board="single-turn"),))
    fit.start()
    assert started.wait(10)
    t0 = time.perf_counter()
    out = svc.sampler_inputs()  # reads new votes (refresh) and the memoized ratings
    waited = time.perf_counter() - t0
    fit.join(30)
    assert out.ratings, "the sampler lost its ratings"
    assert waited < FIT_S / 3, f"the sampler waited {waited:.2f} s for a board fit"
