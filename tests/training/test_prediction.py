"""The report's prediction before play (``training.report.prediction``): which basis it stands on, the judge's
interval widened, the verdict's wide mapping, and no prediction with the reason."""

from __future__ import annotations

import math

from vibestudio.training.report.prediction import JUDGE_MARGIN, predict, prediction_md, since_stamp


def _report(**extra) -> dict:
    return {
        "contestant": "kid",
        "parent": "mum",
        "n_prompts": 40,
        "verdict": {"verdict": "regress", "reasons": ["regress: more flattery"]},
        "unmeasured": {"judge/child_win_rate": "no judge configured"},
        **extra,
    }


def test_the_prediction_says_what_it_is_based_on():
    by_verdict = predict(_report())
    assert (by_verdict["basis"], by_verdict["p"], by_verdict["low"], by_verdict["high"]) == (
        "verdict",
        0.35,
        0.10,
        0.50,
    )
    assert "regress: more flattery" in by_verdict["based_on"] and by_verdict["needed"] == 25
    judge = {"judge": "j", "n": 40, "win_rate": 0.3, "low": -0.3, "high": -0.1, "outcomes": {}}
    by_judge = predict(_report(judge=judge))
    assert by_judge["basis"] == "judge" and by_judge["p"] == 0.3
    assert math.isclose(by_judge["low"], 0.2 - JUDGE_MARGIN) and math.isclose(
        by_judge["high"], 0.4 + JUDGE_MARGIN
    )
    none = predict(_report(verdict={"verdict": "unknown", "reasons": []}))
    assert (
        none["basis"] == "none"
        and "the verdict is unknown" in none["why"]
        and "no judge configured" in none["why"]
    )
    assert predict({**_report(), "parent": None})["basis"] == "none"
    assert "No prediction: the verdict is unknown" in prediction_md({**_report(), "prediction": none})
    assert "No prediction: the report was made before" in prediction_md(_report())
    # the time it was made, in the battle records' clock (a naive UTC time's timestamp)
    assert since_stamp({"made_at": "2026-01-05T12:00:00+00:00"}) == since_stamp(
        {"made_at": "2026-01-05T12:00:00"}
    )


def test_an_old_report_gets_no_prediction_after_play_and_a_broken_one_says_so():
    from vibestudio.training.report.steps import from_saved
    from vibestudio.training.report.track_record import score_child

    old = from_saved(
        {"contestant_id": 2, "contestant": "kid", "parent_id": 1, "parent": "mum", "verdict": {}}
    )
    assert old.prediction == {}  # a report saved before predictions: none is made when it is read
    said = score_child("kid", "mum", old.to_dict().get("prediction"), [])
    assert said.state == "no prediction" and "made before reports predicted" in said.why
    broken = score_child("kid", "mum", {"basis": "verdict", "p": "x", "low": 0.1, "high": 0.5}, [])
    assert broken.state == "no prediction" and "does not read (ValueError" in broken.why
    made = predict(_report())
    good = score_child("kid", "mum", made, [])
    assert good.state == "can't tell yet" and good.needed == 25 and "25 more votes needed" in good.line()
