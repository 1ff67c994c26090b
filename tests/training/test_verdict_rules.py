"""Each verdict rule kind decides at its edges (training.report.verdict.decide on rules built here): a number above or
below its threshold (equal is not past it), a significant change (q below alpha, p when there is no q, a big
enough delta, the right direction), a flag, a child's value; the worst verdict wins, a hold sticks, a required
measure that is missing makes the verdict unknown but never hides a regress. Written to kill the mutants
``scripts/mutation_check.py`` found surviving in ``_matches`` and ``decide``."""

from __future__ import annotations

import pytest

from vibestudio.arena import lifecycle
from vibestudio.training.report.verdict import (
    HoldPolicy,
    Rule,
    Rules,
    apply_hold_policy,
    badge_for,
    decide,
    no_report,
)


def _rules(*rules: Rule, alpha: float = 0.05) -> Rules:
    return Rules(version=7, alpha=alpha, rules=list(rules), source="test")


def _fires(rule: Rule, value, alpha: float = 0.05) -> bool:
    return decide({rule.measure: value}, {}, _rules(rule, alpha=alpha)).verdict == rule.verdict


@pytest.mark.parametrize("value,fires", [(0.31, True), (0.3, False), (0.29, False)])
def test_a_number_above(value, fires):
    assert _fires(Rule("r", "m", "above", "regress", value=0.3), value) is fires


@pytest.mark.parametrize("value,fires", [(0.29, True), (0.3, False), (0.31, False)])
def test_a_number_below(value, fires):
    assert _fires(Rule("r", "m", "below", "watch", value=0.3), value) is fires


@pytest.mark.parametrize(
    "change,fires",
    [
        ({"q": 0.01, "delta": 0.5}, True),
        ({"q": 0.05, "delta": 0.5}, False),  # q must be below alpha, not equal
        ({"q": 0.01, "delta": 0.2}, True),  # a delta equal to min_delta is big enough
        ({"q": 0.01, "delta": 0.19}, False),
        ({"q": 0.01, "delta": -0.5}, False),  # the wrong direction
        ({"q": None, "p": 0.01, "delta": 0.5}, True),  # no q: the p-value decides
        ({"p": 0.2, "delta": 0.5}, False),
        ({"delta": 0.5}, False),  # neither: p counts as 1
        ({"q": 0.01}, False),  # no delta: no change
    ],
)
def test_a_significant_increase(change, fires):
    assert _fires(Rule("r", "m", "significant_increase", "regress", min_delta=0.2), change) is fires


@pytest.mark.parametrize(
    "change,fires",
    [
        ({"q": 0.01, "delta": -0.5}, True),
        ({"q": 0.01, "delta": 0.5}, False),
        ({"q": 0.01, "delta": -0.1}, False),
    ],
)
def test_a_significant_decrease(change, fires):
    assert _fires(Rule("r", "m", "significant_decrease", "watch", min_delta=0.2), change) is fires


def test_alpha_is_the_rules_own():
    rule = Rule("r", "m", "significant_increase", "regress")
    assert _fires(rule, {"q": 0.08, "delta": 1.0}, alpha=0.1)
    assert not _fires(rule, {"q": 0.08, "delta": 1.0}, alpha=0.05)


def test_a_flag_and_a_childs_value():
    flagged = Rule("r", "m", "flagged", "watch")
    assert (
        _fires(flagged, {"flagged": True})
        and not _fires(flagged, {"flagged": False})
        and not _fires(flagged, {})
    )
    above = Rule("r", "m", "above", "regress", value=0.5)
    assert _fires(above, {"child": 0.6}) and not _fires(above, {"child": 0.5}) and not _fires(above, {})
    below = Rule("r", "m", "below", "regress", value=0.5)
    assert _fires(below, {"child": 0.4}) and not _fires(below, {"child": 0.5})
    assert _fires(below, {})  # a change with no child value reads 0.0


def test_the_worst_verdict_wins_whatever_the_order_and_each_reason_is_named():
    rules = _rules(
        Rule("bad", "a", "above", "regress", value=0),
        Rule("meh", "b", "above", "watch", value=0),
        Rule("fine", "c", "above", "pass", value=0),
    )
    v = decide({"a": 1, "b": 1, "c": 1}, {}, rules)
    assert v.verdict == "regress" and v.rules_version == 7
    assert v.reasons == ["regress: bad (a)", "watch: meh (b)", "pass: fine (c)"]
    v = decide({"a": 0, "b": 1, "c": 1}, {}, rules)
    assert v.verdict == "watch" and v.reasons == ["watch: meh (b)", "pass: fine (c)"]
    rules.rules.reverse()
    assert decide({"a": 1, "b": 1, "c": 1}, {}, rules).verdict == "regress"


def test_a_pattern_matches_many_measures_and_a_hold_sticks():
    rules = _rules(
        Rule("any drift", "drift/*", "above", "watch", value=0, hold=True), Rule("x", "x", "above", "watch")
    )
    v = decide({"drift/a": 1, "drift/b": 0, "other": 5, "x": 0}, {}, rules)
    assert v.verdict == "watch" and v.hold and v.reasons == ["watch: any drift (drift/a)"]
    assert not decide({"drift/a": 0, "x": 0}, {}, rules).hold


def test_a_missing_required_measure_is_unknown_but_never_hides_a_regress():
    req = Rule("needed", "need", "above", "watch", value=0, required=True)
    v = decide({}, {}, _rules(req))
    assert v.verdict == "unknown"
    assert v.unmeasured == ["need: no measure of this name was produced"]
    assert v.reasons == ["unknown: could not measure need"]
    v = decide({}, {"need": "too few pairs"}, _rules(req))
    assert v.verdict == "unknown" and v.unmeasured == ["need: too few pairs"]
    optional = Rule("opt", "opt", "above", "watch", value=0)
    v = decide({}, {}, _rules(optional))
    assert v.verdict == "pass" and v.unmeasured == ["opt: no measure of this name was produced"]
    v = decide({"bad": 1}, {}, _rules(req, Rule("r", "bad", "above", "regress", value=0)))
    assert v.verdict == "regress" and "unknown: could not measure need" not in v.reasons
    wild = Rule(
        "w", "drift/*", "above", "watch", value=0, required=True
    )  # a pattern matching nothing is no gap
    assert decide({}, {}, _rules(wild)).verdict == "pass"
    v = decide({}, {"drift/x": "no pairs", "drift/y": "no pairs"}, _rules(wild))
    assert v.verdict == "unknown" and v.reasons == ["unknown: could not measure drift/x, drift/y"]


def test_the_hold_policy_holds_only_the_verdicts_it_lists_once():
    rules = _rules()
    rules.holds = HoldPolicy(verdicts=("regress",))
    v = apply_hold_policy(decide({}, {}, rules), rules)
    assert v.verdict == "pass" and not v.hold
    v = apply_hold_policy(decide({"a": 1}, {}, _rules(Rule("r", "a", "above", "regress"))), rules)
    assert v.hold and v.reasons[-1] == "held: the rules hold a regress verdict"
    n = len(v.reasons)
    assert apply_hold_policy(v, rules).reasons[n - 1 :] == [v.reasons[-1]]  # already held: no second reason


def test_a_report_that_failed_or_was_skipped_is_unknown_and_held_as_the_policy_says():
    rules = _rules()
    v = no_report("the parent's model is gone", skipped=False, rules=rules)
    assert (v.verdict, v.reasons, v.hold, v.rules_version) == (
        "unknown",
        ["unknown: the parent's model is gone"],
        True,
        7,
    )
    rules.holds = HoldPolicy(failed_report=False, skipped_report=True)
    assert not no_report("crashed", skipped=False, rules=rules).hold
    assert no_report("skipped", skipped=True, rules=rules).hold
    rules.holds = HoldPolicy(failed_report=True, skipped_report=False)
    assert not no_report("skipped", skipped=True, rules=rules).hold


def test_a_badge_names_the_verdict_and_any_state_but_released():
    assert badge_for("pass") == "✅ pass" and badge_for("regress", "released") == "⛔ regress"
    assert badge_for("watch", "held") == f"👀 watch · {lifecycle.badge('held')}"
    assert badge_for(None, "hidden") == lifecycle.badge("hidden") and badge_for(None) == ""
    assert (
        badge_for("nonsense") == ""
        and badge_for("unknown", True) == f"❔ unknown · {lifecycle.badge('held')}"
    )
    assert badge_for("pass", False) == "✅ pass"


def test_no_change_is_neither_an_increase_nor_a_decrease_even_with_no_minimum():
    for when in ("significant_increase", "significant_decrease"):
        rule = Rule("r", "m", when, "regress", min_delta=0.0)
        assert not _fires(rule, {"q": 0.001, "delta": 0.0}), when
