"""The Judge votes sub-tab's tables and the Arena's prompt-board view: "can't tell" and "inf" shown as words,
the clearest disagreement marked, and untrusted names never reaching the page as HTML."""

from __future__ import annotations

from vibestudio.studio.pages.arena import for_prompt_view
from vibestudio.studio.pages.leaderboard import judge_tables, judge_text


def _report() -> dict:
    return {
        "judges": [
            {"judge": "j1", "n_judge_votes": 300, "n_human_votes": 200, "worth": 2.0, "worth_low": 0.5,
             "worth_high": "inf", "note": ""},
            {"judge": "j2", "n_judge_votes": 80, "n_human_votes": 200, "worth": None, "worth_low": None,
             "worth_high": None, "note": "no human overlap: the judge's votes share no model with the human votes"},
        ],
        "sentences": ["j1: one human vote is worth about 2 judge votes [0.5, inf]", "j2: can't tell (no human overlap)"],
        "vibe_sentences": ["j1 disagrees with people most on tokens"],
        "notes": ["<img src=x onerror=alert(1)>"],
        "counts": {"arena": 200, "queue_human": 0, "queue_judge": 380},
        "skipped": {"no verdict": 3, "same model twice": 0},
        "by_vibe": {
            "rows": [
                {"judge": "j1", "vibe": "tokens", "n_human": 90, "n_judge": 120,
                 "worth": {"worth": "inf", "worth_low": 4.0, "worth_high": "inf"},
                 "people_prefer_more": [0.5, 0.4, 0.6], "judge_prefers_more": [0.9, 0.85, 0.94], "gap": 0.4,
                 "clear": True, "note": ""},
                {"judge": "j1", "vibe": "emoji", "n_human": 0, "n_judge": 0, "worth": None,
                 "people_prefer_more": [None, None, None], "judge_prefers_more": [None, None, None], "gap": None,
                 "clear": False, "note": "0 human and 0 judge votes differ in emoji (need 30 of each)"},
            ],
            "disagree_most": {"j1": "tokens"},
        },
    }  # fmt: skip


def test_judge_tables_and_text() -> None:
    worth, vibes = judge_tables(_report())
    assert worth["k (human = k judge votes)"].tolist() == [2.0, "can't tell"]
    assert worth["k high"].tolist()[0] == "inf" and "no human overlap" in worth["note"].tolist()[1]
    assert vibes["vibe"].tolist() == ["tokens"]  # a vibe no judge vote differs in is left out of the table
    assert vibes["k"].tolist() == ["inf"] and vibes["note"].tolist() == ["clearest disagreement"]
    assert vibes["judge picks more"].tolist() == ["90% [85, 94]"]
    text = judge_text(_report())
    assert "<img" not in text and "3 labels (no verdict)" in text and "380 judge labels" in text


def test_for_prompt_view_escapes_names() -> None:
    out = {
        "kinds": {"<b>coding</b>": 0.9, "math": 0.1},
        "board": {"shrink": 8.0, "n_votes": 120},
        "notes": ["<script>x</script>"],
        "models": [{"name": "<i>m0</i>", "rating": 1050.0, "ci_low": 1000.0, "ci_high": 1100.0, "rank_low": 1,
                    "rank_high": 2}],
    }  # fmt: skip
    html, rows = for_prompt_view(out)
    assert "<script>" not in html and "<b>coding" not in html and "90%" in html
    assert rows == [[1, "<i>m0</i>", 1050.0, 1000.0, 1100.0, "1-2"]]
