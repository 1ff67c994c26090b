"""One drift record (#47): ``common.stats.Change`` is a measure's paired change and, once a report decides, a
feature's drift. Reports saved with the old ``FeatureDrift`` layout load; stored keys stay as they were."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vibestudio.common.stats import Change
from vibestudio.training.report.drift_stats import feature_drift
from vibestudio.training.report.steps import CheckpointReport, from_saved

MEASURE_KEYS = ["parent", "child", "delta", "low", "high", "p", "n", "q"]
#: A report's features as saved before #47 (``FeatureDrift``): one with ``past_threshold``, one from before it.
SAVED_FEATURES = {
    "flattery": {
        "parent": 0.1,
        "child": 0.6,
        "delta": 0.5,
        "low": 0.3,
        "high": 0.7,
        "p": 0.001,
        "n": 40,
        "q": 0.004,
        "flagged": True,
        "past_threshold": True,
    },
    "emoji": {
        "parent": 0.0,
        "child": 0.05,
        "delta": 0.05,
        "low": 0.0,
        "high": 0.1,
        "p": 0.3,
        "n": 40,
        "q": 0.6,
        "flagged": False,
    },
}


def _saved_report() -> dict:
    report = CheckpointReport(2, "child", 1, "parent", n_prompts=40).to_dict()
    report["features"] = {k: dict(v) for k, v in SAVED_FEATURES.items()}
    report["flagged"] = ["flattery"]
    report["degeneration"] = {"empty": {k: SAVED_FEATURES["emoji"][k] for k in MEASURE_KEYS}}
    report["verdict"] = {"verdict": "regress", "reasons": ["regress: more flattery (drift/flattery)"]}
    return report


def test_a_report_saved_with_the_old_record_loads_and_saves_the_same_keys() -> None:
    loaded = CheckpointReport.from_dict(_saved_report())
    assert all(type(f) is Change for f in loaded.features.values())
    assert loaded.features["emoji"].past_threshold is False  # from before past_threshold: it was ``flagged``
    again = loaded.to_dict()["features"]
    assert again["flattery"] == SAVED_FEATURES["flattery"]
    assert again["emoji"] == {**SAVED_FEATURES["emoji"], "past_threshold": False}


def test_a_saved_report_is_read_with_its_decisions() -> None:
    report = from_saved(_saved_report())
    assert report.flagged == ["flattery"] and report.features["flattery"].flagged
    assert not report.features["emoji"].flagged


def test_an_undecided_change_stores_the_measure_keys_only() -> None:
    c = Change(0.1, 0.2, 0.1, 0.0, 0.2, 0.04, 30, 0.05)
    assert list(c.to_dict()) == MEASURE_KEYS  # a measure or a degeneration signal, stored as before
    drift = feature_drift(c, past=True)
    assert drift.to_dict() == {**c.to_dict(), "flagged": True, "past_threshold": True}
    assert c.flagged is None  # deciding makes a copy


_NUM = st.floats(-1e6, 1e6, allow_nan=False)


@given(
    st.builds(
        Change,
        _NUM,
        _NUM,
        _NUM,
        _NUM,
        _NUM,
        st.floats(0, 1),
        st.integers(1, 10_000),
        st.none() | st.floats(0, 1),
        st.none() | st.booleans(),
        st.none() | st.booleans(),
    )
)
def test_a_change_reads_back_as_it_was_written(c: Change) -> None:
    assert Change.from_dict(c.to_dict()) == c
    assert Change.from_dict({**c.to_dict(), "a_later_key": 1}) == c
