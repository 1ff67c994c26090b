"""The studio's wiring: one leaderboard service per context, and the arena's pair sampler reads its ratings."""

from __future__ import annotations


def test_the_arena_and_the_leaderboard_share_one_ratings_cache(tmp_path):
    from vibestudio.common.settings import Settings
    from vibestudio.db.models import Battle
    from vibestudio.studio.context import build_context

    ctx = build_context(Settings(database_url=f"sqlite:///{tmp_path / 's.sqlite'}"))
    assert ctx.arena.ratings == ctx.sampler_inputs
    service = ctx.leaderboard
    assert ctx.leaderboard is service  # built once, on first use
    assert ctx.arena.sampler_inputs() is service.sampler_inputs(refresh=False)  # the same memoised answer
    view = ctx.arena.start_battle()
    with ctx.db.session() as s:
        assert s.get_one(Battle, view.battle_id).sampler == "active"
