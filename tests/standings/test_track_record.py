"""Scoring a report's prediction on the arena's votes (``standings.track_record``), over generated records.

Properties: the counts are the head-to-head records of the child and its parent cast since the prediction,
and no other; a record is scored exactly when it has the votes its interval asks for; a hit is an observed
rate inside the predicted interval; the calibration counts the hits.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from vibestudio.common.stats import Z95, wilson
from vibestudio.standings.track_record import (
    Predicted,
    calibrate,
    score,
    table_md,
    track_record,
    unpredicted,
    votes_needed,
)

NAMES = ["kid", "mum", "aunt"]
WINNERS = ["model_a", "model_b", "tie", "tie (bothbad)"]

records = st.lists(
    st.fixed_dictionaries(
        {
            "model_a": st.sampled_from(NAMES),
            "model_b": st.sampled_from(NAMES),
            "winner": st.sampled_from(WINNERS),
            "tstamp": st.floats(0, 100),
        }
    ),
    max_size=120,
)


@st.composite
def predictions(draw: st.DrawFn) -> Predicted:
    low = draw(st.floats(0.0, 0.9))
    high = draw(st.floats(low + 0.05, 1.0))
    p = draw(st.floats(low, high))
    since = draw(st.one_of(st.none(), st.floats(0, 100)))
    return Predicted("kid", "mum", p, low, high, since, "verdict")


def _by_hand(recs: list[dict], since: float | None) -> tuple[int, int, int]:
    wins = losses = ties = 0
    for r in recs:
        if {r["model_a"], r["model_b"]} != {"kid", "mum"} or (since is not None and r["tstamp"] < since):
            continue
        kid = "model_a" if r["model_a"] == "kid" else "model_b"
        if r["winner"].startswith("tie"):
            ties += 1
        elif r["winner"] == kid:
            wins += 1
        else:
            losses += 1
    return wins, losses, ties


@settings(max_examples=300, deadline=None)
@given(recs=records, pred=predictions())
def test_counts_match_the_records_and_hit_follows_the_interval(recs, pred):
    s = score(pred, recs)
    wins, losses, ties = _by_hand(recs, pred.since)
    assert (s.wins, s.losses, s.ties, s.n) == (wins, losses, ties, wins + losses + ties)
    assert s.needed == votes_needed(pred.low, pred.high)
    assert (s.state == "scored") == (s.n >= s.needed)
    if s.n:
        assert s.observed is not None and math.isclose(s.observed, (wins + 0.5 * ties) / s.n)
        assert (s.observed_low, s.observed_high) == wilson(wins + 0.5 * ties, s.n)
    if s.state == "scored":
        assert s.hit == (pred.low <= s.observed <= pred.high)
        assert s.brier is not None and 0 <= s.brier <= 1
        assert "hit" in s.line() if s.hit else "miss" in s.line()
    else:
        assert s.hit is None and s.brier is None
        assert f"can't tell yet: {s.needed - s.n:,} more vote" in s.line()
    cal = calibrate([s, unpredicted("other", "mum", "no judge")])
    assert cal.n_scored == (s.state == "scored") and cal.hits == (1 if s.hit else 0)
    assert cal.unpredicted == 1 and cal.waiting == (s.state != "scored")


@settings(max_examples=200, deadline=None)
@given(low=st.floats(0.0, 0.9), width=st.floats(0.02, 0.5))
def test_enough_votes_make_the_observed_interval_no_wider_than_the_prediction(low, width):
    high = min(1.0, low + width)
    n = votes_needed(low, high)
    assert Z95 * 0.5 / math.sqrt(n) <= (high - low) / 2 + 1e-12  # worst case p = 0.5
    assert n == 1 or Z95 * 0.5 / math.sqrt(n - 1) > (high - low) / 2 - 1e-12  # and no more than that


def _votes(kid_wins: int, mum_wins: int, ties: int, t: float = 10.0) -> list[dict]:
    out = [{"model_a": "kid", "model_b": "mum", "winner": "model_a", "tstamp": t}] * kid_wins
    out += [{"model_a": "mum", "model_b": "kid", "winner": "model_a", "tstamp": t}] * mum_wins
    return out + [{"model_a": "kid", "model_b": "mum", "winner": "tie", "tstamp": t}] * ties


def test_a_miss_a_hit_and_the_calibration_words():
    loser = Predicted("kid", "mum", 0.35, 0.10, 0.50, None, "verdict")  # needs 25 votes
    hit = score(loser, _votes(6, 19, 0))
    miss = score(Predicted("kid", "mum", 0.5, 0.35, 0.65, None, "verdict"), _votes(40, 3, 0))
    assert hit.hit is True and miss.hit is False
    assert math.isclose(hit.brier, (6 * 0.65**2 + 19 * 0.35**2) / 25)
    assert math.isclose(hit.brier_even, 0.25)
    rec = track_record([hit, miss], {"kid": "mum"})
    assert (rec.overall.hits, rec.overall.n_scored) == (1, 2)
    assert rec.overall.words.startswith("1 of 2 predictions hit (50%")
    table = table_md(rec)
    assert "| kid | verdict | 35% | [10%, 50%] | 24% " in table and "| hit |" in table and "| miss |" in table
    # votes cast before the prediction do not count
    early = score(Predicted("kid", "mum", 0.35, 0.10, 0.50, 50.0, "verdict"), _votes(6, 19, 0, t=10.0))
    assert early.n == 0 and early.state == "can't tell yet"
    assert "can't tell yet: no prediction has enough votes" in calibrate([early]).words
