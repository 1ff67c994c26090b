"""The board's table, CI chart and Goldilocks panels with intervals that can't be told (issue 35): the table says
"can't tell" with the reason, the charts leave those models out and say so, and Goldilocks labels do not share a
position with their neighbour's."""

from __future__ import annotations

from vibestudio.studio.pages import leaderboard as page


def _board() -> dict:
    rows = [
        {"name": "ant", "rating": 1010.0, "ci_low": 900.0, "ci_high": 1120.0, "cant_tell": None},
        {"name": "bee", "rating": 990.0, "ci_low": 880.0, "ci_high": 1100.0, "cant_tell": None},
        {"name": "cat", "rating": 1000.0, "ci_low": None, "ci_high": None, "cant_tell": "never compared"},
    ]
    for m in rows:
        m.update(rank=1, rank_low=1, rank_high=3, elo=None, n_battles=1, wins=0, losses=0, ties=1)
    return {"models": rows, "options": {"ci_method": "sandwich"}}


def test_table_and_chart_leave_cant_tell_out_and_say_so() -> None:
    board = _board()
    table = page.board_table(board)
    cat = table[table["name"] == "cat"].iloc[0]
    assert cat["ci_low"] == "can't tell" and "never compared" in cat["note"]
    fig = page.board_chart(board)
    assert list(fig.data[0].y) == ["bee", "ant"] and "1 model left out" in fig.layout.title.text
    assert max(abs(x) for x in fig.data[0].error_x.array) < 200


def test_goldilocks_leaves_cant_tell_out_and_keeps_labels_apart() -> None:
    rows = [
        {
            **m,
            "eval_score": 0.5,
            "tokens_per_s": 10.0,
            "latency_s": 0.1,
            "cost_per_answer": 0.0,
            "currency": "",
        }
        for m in _board()["models"]
    ]
    fig = page.goldilocks_chart(rows)
    assert all(trace.name != "cat" for trace in fig.data)
    # names in the legend, once each, none written beside a point (they overlapped and were cut at the edges)
    assert sorted(t.name for t in fig.data if t.showlegend) == ["ant", "bee"]
    assert all(t.mode == "markers" and not t.text for t in fig.data)
    assert "cat" in page.goldilocks_note(rows) and "can't be told" in page.goldilocks_note(rows)
