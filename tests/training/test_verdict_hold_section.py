"""The rules file's ``hold`` section, read by ``training.report.verdict.load_rules``: its defaults, each field, and the
errors that name the file and the field. Written to kill the mutants ``scripts/mutation_check.py`` found
surviving in the hold policy (no test wrote a ``hold`` section before)."""

from __future__ import annotations

import pytest

from vibestudio.training.report import verdict
from vibestudio.training.report.verdict import HoldPolicy, VerdictError, load_rules, no_report

RULE = "rules:\n  - {measure: drift/tokens, when: significant_increase, verdict: watch}\n"


def _rules(tmp_path, hold: str = "", name: str = "rules.yaml"):  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text(RULE + hold, encoding="utf-8")
    return path, load_rules(path)


def test_no_hold_section_holds_regress_unknown_and_failed_or_skipped_reports(tmp_path):
    _, rules = _rules(tmp_path)
    assert rules.holds == HoldPolicy(("regress", "unknown"), True, True)
    assert no_report("crashed", skipped=False, rules=rules).hold
    assert no_report("not run", skipped=True, rules=rules).hold


def test_each_field_of_the_hold_section_is_read(tmp_path):
    _, rules = _rules(tmp_path, "hold: {verdicts: [regress], failed_report: false}\n")
    assert rules.holds == HoldPolicy(("regress",), False, True)
    assert not no_report("crashed", skipped=False, rules=rules).hold
    assert no_report("not run", skipped=True, rules=rules).hold
    _, other = _rules(tmp_path, "hold: {verdicts: [], skipped_report: false}\n", name="other.yaml")
    assert other.holds == HoldPolicy((), True, False)
    assert no_report("crashed", skipped=False, rules=other).hold
    assert not no_report("not run", skipped=True, rules=other).hold
    _, empty = _rules(tmp_path, "hold: {}\n", name="empty.yaml")
    assert empty.holds == HoldPolicy()
    assert isinstance(empty.holds.verdicts, tuple)


@pytest.mark.parametrize(
    ("hold", "message"),
    [
        ("hold: [regress]", r"hold must be a mapping \(verdicts, failed_report, skipped_report\)$"),
        ("hold: {verdict: [regress], when: x}", r"hold: unknown field\(s\) verdict, when$"),
        (
            "hold: {verdicts: regress}",
            r"hold\.verdicts must be a list of pass, watch, regress, unknown, got 'regress'$",
        ),
        (
            "hold: {verdicts: [regress, bad]}",
            r"hold\.verdicts must be a list of pass, watch, regress, unknown, got \['regress', 'bad'\]$",
        ),
        ("hold: {failed_report: 'no'}", r"hold\.failed_report must be true or false, got 'no'$"),
        ("hold: {skipped_report: 1}", r"hold\.skipped_report must be true or false, got 1$"),
    ],
)
def test_a_bad_hold_section_is_refused_naming_the_file_and_the_field(tmp_path, hold, message):
    path = tmp_path / "rules.yaml"
    path.write_text(RULE + hold + "\n", encoding="utf-8")
    with pytest.raises(VerdictError, match="^" + str(path).replace(".", r"\.") + ": " + message):
        load_rules(path)


def test_the_hold_section_decides_what_a_verdict_holds(tmp_path):
    _, rules = _rules(tmp_path, "hold: {verdicts: [watch]}\n")
    watch = verdict.apply_hold_policy(verdict.Verdict("watch", ["watch: x"]), rules)
    regress = verdict.apply_hold_policy(verdict.Verdict("regress", ["regress: x"]), rules)
    assert watch.hold and not regress.hold


def test_a_rules_file_read_again_is_the_same_and_a_caller_cannot_change_the_next_read(tmp_path):
    path, first = _rules(tmp_path, "hold: {verdicts: [regress]}\n")
    again = load_rules(path)
    assert again == first and again is not first
    again.rules.clear()
    again.holds.verdicts = ()
    first.rules[0].verdict = "regress"
    third = load_rules(path)
    assert (
        len(third.rules) == 1 and third.rules[0].verdict == "watch" and third.holds.verdicts == ("regress",)
    )


def test_two_files_of_the_same_size_and_time_are_read_each_and_a_missing_one_is_an_error(tmp_path):
    import os

    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    a.write_text(RULE + "alpha: 0.01\n", encoding="utf-8")
    b.write_text(RULE + "alpha: 0.02\n", encoding="utf-8")
    stamp = a.stat().st_mtime_ns
    os.utime(b, ns=(stamp, stamp))
    assert a.stat().st_size == b.stat().st_size
    assert (load_rules(a).alpha, load_rules(b).alpha) == (0.01, 0.02)
    with pytest.raises(VerdictError, match="missing.yaml"):
        load_rules(tmp_path / "missing.yaml")


def test_each_measures_decision_names_the_rules_that_matched_on_it_at_the_files_alpha(tmp_path):
    _, rules = _rules(tmp_path, "alpha: 0.01\n")
    up = {"delta": 3.0, "low": 1.0, "high": 5.0, "p": 0.03, "q": 0.03, "parent": 10.0, "child": 13.0}
    loose = verdict.decide({"drift/tokens": up}, {}, rules)
    assert loose.verdict == "pass" and loose.reasons == []  # q 0.03 is not below this file's alpha 0.01
    strict = {**up, "p": 0.001, "q": 0.001}
    done = verdict.decide(
        {"drift/tokens": strict, "drift/emoji": {**up, "q": 0.5}}, {"drift/x": "why"}, rules
    )
    assert done.verdict == "watch"
    tokens = done.decisions["drift/tokens"]
    assert tokens["measure"] == "drift/tokens" and tokens["rules"] == ["watch: drift/tokens (drift/tokens)"]
    assert done.decisions["drift/emoji"]["rules"] == [] and done.decisions["drift/x"]["state"] == "unmeasured"
    assert loose.decisions["drift/tokens"]["rules"] == []
    assert (
        loose.decisions["drift/tokens"]["state"] != tokens["state"]
    )  # judged at 0.01, not at the default 0.05


def test_a_flagged_rule_reads_the_measures_own_flag_and_nothing_else(tmp_path):
    path = tmp_path / "flag.yaml"
    path.write_text("rules:\n  - {measure: drift/tokens, when: flagged, verdict: watch}\n", encoding="utf-8")
    rules = load_rules(path)
    own = verdict.decide({"drift/tokens": {"delta": 1.0, "q": 0.5, "past_threshold": True}}, {}, rules)
    old = verdict.decide({"drift/tokens": {"delta": 1.0, "q": 0.5, "flagged": True}}, {}, rules)
    bare = verdict.decide({"drift/tokens": {"delta": 3.0, "q": 0.001}}, {}, rules)  # significant, but no flag
    assert (own.verdict, old.verdict, bare.verdict) == ("watch", "watch", "pass")
