"""The Leaderboard tab's tables and figures from real service output, and the tab's wiring inside the app (its one
named API endpoint takes only optional inputs, so `client.predict(api_name="/leaderboard")` keeps working)."""

from __future__ import annotations

from tests.helpers.standings import NAMES, register_contestants, write_battles
from vibestudio.standings.leaderboard import (
    BoardOptions,
    LeaderboardService,
    compare_contestants,
    vibe_profile,
)
from vibestudio.standings.vote_cache import VoteCache
from vibestudio.studio.pages import leaderboard as page


def test_tables_and_figures(db, tmp_path):
    ids = register_contestants(db)
    write_battles(db, ids, 120)
    svc = LeaderboardService(db, VoteCache(db, tmp_path / "c"))
    board = svc.board(BoardOptions(style_control=True, ci_method="sandwich", min_battles=100))
    table = page.board_table(board)
    assert list(table["name"]) == [m["name"] for m in board["models"]] and set(table["name"]) == set(NAMES)
    assert page.board_chart(board).data[0].y[-1] == board["models"][0]["name"]  # best at the top
    text = page.summary_text(board)
    assert (
        f"<strong>{board['n_votes']}</strong> rated votes" in text
        and "⚠️" in text
        and "fewer than 100 votes" in text
    )
    style = page.style_table(board)
    told = style[style["note"] == ""]
    assert set(told["feature"]) == set(board["style_coefficients"]) and "tokens" in set(told["feature"])
    assert set(style["feature"]) - set(told["feature"]) == set(board.get("style_cant_tell", {}))
    assert len(page.style_chart(board).data[0].y) == len(told)
    m = svc.matrices()
    assert page.heatmap(m["counts"], "n", counts=True).data[0].z.shape == (4, 4)
    assert len(page.over_time_chart(svc.over_time(freq="W")).data) == 4
    with db.session() as s:
        cmp = compare_contestants(s, "alpha", "bravo")
        prof = vibe_profile(s, "alpha")
    assert [bar.name for bar in page.compare_chart(cmp).data] == ["alpha", "bravo"]
    assert "mean alpha" in page.compare_table(cmp).columns and len(page.profile_table(prof)) >= 10
    rows = [
        {
            "name": "a",
            "rating": 1010.0,
            "ci_low": 990.0,
            "ci_high": 1030.0,
            "eval_score": 0.5,
            "tokens_per_s": 30.0,
        }
        | {"latency_s": 0.2, "cost_per_answer": None, "currency": "USD"},
        {
            "name": "b",
            "rating": None,
            "ci_low": None,
            "ci_high": None,
            "eval_score": 0.9,
            "tokens_per_s": None,
        }
        | {"latency_s": None, "cost_per_answer": None, "currency": "USD"},
    ]
    fig = page.goldilocks_chart(rows)
    assert [t.name for t in fig.data] == ["a", "a", "a"]  # unrated b is in the table only
    # the cost panel has no point: no axis (it ran from -1 to 6), a line that says so
    assert fig.layout.xaxis4.visible is False
    assert [a.text for a in fig.layout.annotations if "measured yet" in a.text] == [
        "no cost per answer USD measured yet (see the note above)"
    ]
    assert list(page.goldilocks_table(rows)["name"]) == ["a", "b"]
    assert page.goldilocks_chart([rows[1]]) is None and page.board_chart({"models": []}) is None


def test_the_tab_builds_and_its_endpoint_needs_no_arguments(tmp_path):
    from vibestudio.common.settings import Settings
    from vibestudio.studio.app import build_app
    from vibestudio.studio.context import build_context

    ctx = build_context(Settings(database_url=f"sqlite:///{tmp_path / 's.sqlite'}"))
    demo = build_app(ctx)
    endpoint = demo.get_api_info()["named_endpoints"]["/leaderboard"]
    assert [p["parameter_has_default"] for p in endpoint["parameters"]] == [
        True
    ] * 5  # ci, controls, board, named, method


def test_method_and_predictive_views(db, tmp_path):
    ids = register_contestants(db)
    write_battles(db, ids, 200)
    svc = LeaderboardService(db, VoteCache(db, tmp_path / "c"))
    board = svc.board(BoardOptions(method="davidson", ci_method="sandwich"))
    text = page.method_text(board)
    assert "Davidson (ties modelled)" in text and "(chosen)" in text and "tie (bothgood) 0." in text
    bt = svc.board(BoardOptions(ci_method="sandwich"))
    change = page.change_text(board, bt)
    assert "Against Bradley-Terry: largest rating change" in change and (
        "same order" in change or "up" in change
    )
    pred = svc.predict(BoardOptions())
    table = page.predict_table(pred)
    assert set(table["split"]) == {"time", "random"} and "davidson" in set(table["method"])
    assert (table["low"] <= table["log-loss"]).all() and (table["log-loss"] <= table["high"]).all()
    assert "automatic method" in page.predict_text(pred)
    assert page.predict_text({"checks": [], "best": None}) == "No rated votes yet: nothing to compare."


def test_main_chart_is_never_blank_when_no_interval_can_be_told():
    """Issue 48: with every interval can't tell, the chart says so with the reasons instead of going blank."""
    board = {
        "models": [
            {"name": n, "rating": 1000.0, "ci_low": None, "ci_high": None, "cant_tell": "never compared"}
            for n in ("a", "b")
        ],
        "options": {},
    }
    fig = page.board_chart(board)
    assert fig is not None and "never compared" in fig.layout.annotations[0].text
    assert "can't tell for all 2 models" in fig.layout.title.text
    assert page.board_chart({"models": []}) is None
