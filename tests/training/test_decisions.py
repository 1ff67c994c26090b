"""One decision per measure: a checkpoint report's verdict reasons, its flags, its drift and tone tables, its
"at a glance" line and its "can't tell yet" list render one decision object per measure and never contradict
each other. First the case from the issue (a flattery rise significant but under its practical threshold: the
verdict said "regress: more flattery" while the tables left it unflagged and "can't tell yet" listed it), then the
same invariants over generated drift results (features with deltas, intervals, q-values, n; tone axes not
applicable; evals present or not) run through the real report path (``steps._finish``) and the real Markdown."""

from __future__ import annotations

import re
import time
from dataclasses import asdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vibestudio.common.stats import Change
from vibestudio.textfeatures import tone, vibes
from vibestudio.training.report import decisions, drift_stats, steps
from vibestudio.training.report.discover import summarise_tone
from vibestudio.training.report.text import drift_md, glance_md, report_md, tone_md

PROMPTS = ["How do I water basil?", "What is 2 + 2?", "Name a planet."]
ANSWERS = ["Water it daily.", "It is 4.", "Mars is a planet."]


def _feature(name: str, parent: float, delta: float, lo: float, hi: float, p: float, q: float | None, n: int):
    c = Change(parent, parent + delta, delta, delta - lo, delta + hi, p, n, q)
    return drift_stats.feature_drift(c, drift_stats.is_flagged(name, c, drift_stats.DEFAULT_THRESHOLDS))


def _report(features: dict, unmeasured: dict | None = None, evals: dict | None = None) -> dict:
    """A report through the real path: measures, verdict, decisions; the tone summary as the report makes it."""
    r = steps.CheckpointReport(2, "child", 1, "parent", n_prompts=40, features=features)
    r.unmeasured = dict(unmeasured or {})
    if evals:
        r.evals = {**evals, "eval_set": "t", "test": "exact McNemar", "by_category": {}}
    r.tone = summarise_tone({k: asdict(v) for k, v in features.items()}, [], [], PROMPTS, ANSWERS, ANSWERS)
    return steps._finish(None, r, None, None, time.perf_counter()).to_dict()


def _drift_flags(md: str) -> dict[str, str]:
    """Feature -> its flag cell in the drift table."""
    out = {}
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 6 and cells[0] in vibes.FEATURE_NAMES:
            out[cells[0]] = cells[5]
    return out


def _tone_flags(md: str) -> dict[str, str]:
    out = {}
    for line in md.splitlines():
        m = re.match(r"\| .* \(`(\w+)`\) \|", line)
        if m:
            out[m.group(1)] = [c.strip() for c in line.strip("|").split("|")][4]
    return out


def _glance(md: str) -> tuple[str, str]:
    """The "at a glance" line and the "can't tell yet" paragraph."""
    at = next((x for x in md.split("\n\n") if x.startswith("**At a glance:**")), "")
    cant = next((x for x in md.split("\n\n") if x.startswith("**Can’t tell yet**")), "")
    return at, cant


def _cant_tell_names(cant: str) -> set[str]:
    body = cant.split("): ", 1)[1] if "): " in cant else ""
    return {part.split(" ")[0] for part in body.split("; ") if part}


def _check(report: dict) -> None:
    """Every invariant of one report."""
    dec = decisions.of_report(report)
    md = report_md(report)
    table, tones = _drift_flags(drift_md(report)), _tone_flags(tone_md(report))
    at, cant = _glance(glance_md(report))
    cant_names = _cant_tell_names(cant)
    for name in report["features"]:
        d = decisions.drift(dec, name)
        assert not (d.flagged and name in cant_names), (name, cant)  # never both flagged and can't tell
        assert (table[name] == "🚩") == d.flagged, (name, table[name], d)
        assert (name in cant_names) == (d.state == "cant_tell"), (name, d, cant)
        assert report["features"][name]["flagged"] == d.flagged  # the per-feature flag is the decision
        if name in tones:
            assert tones[name] == table[name], (name, tones[name], table[name])  # tone table = drift table
        if d.flagged:
            word = "more" if d.direction == "up" else "less"
            assert f"{word} {name} (" in at, (name, at)
    assert report["flagged"] == [n for n in report["features"] if decisions.drift(dec, n).flagged]
    for reason in report["verdict"]["reasons"]:
        m = decisions.measure_of(reason)
        if m is None or m not in dec:
            continue  # "unknown: ..." and "held: ..." reasons name no measure
        assert dec[m].flagged and reason in dec[m].rules, (reason, dec[m])
        if m.startswith("drift/"):
            assert table[m.removeprefix("drift/")] == "🚩", (reason, table)
            assert f" {m.removeprefix('drift/')} (" in at, (reason, at)
        elif m == "evals/accuracy":
            assert "correct (" in at, (reason, at)
    assert md.count("### Verdict") == 1


def test_the_issue_flattery_rise_reads_the_same_everywhere():
    # flattery 0.1 -> 0.2 sentences per answer, q = 0.01: significant, under its practical threshold (abs 0.2)
    feats = {
        "flattery": _feature("flattery", 0.1, 0.1, 0.05, 0.05, 0.004, 0.01, 80),
        "tokens": _feature("tokens", 40.0, 1.0, 3.0, 3.0, 0.6, 0.8, 80),
    }
    evals = {"parent": 0.5, "child": 0.5, "delta": 0.0, "low": -0.1, "high": 0.1, "p": 1.0, "q": 1.0, "n": 40}
    report = _report(feats, evals=evals)
    assert report["verdict"]["verdict"] == "regress"
    assert "regress: more flattery (drift/flattery)" in report["verdict"]["reasons"]
    md = report_md(report)
    assert _drift_flags(md)["flattery"] == "🚩" and _tone_flags(md)["flattery"] == "🚩"
    at, cant = _glance(md)
    assert "more flattery (0.1 → 0.2)" in at
    assert "flattery" not in _cant_tell_names(cant)
    assert "**more flattery**" in md  # the tone line, in words
    _check(report)


def test_a_lean_under_its_threshold_with_no_rule_is_cant_tell_only():
    feats = {
        "emoji": _feature("emoji", 1.0, 0.2, 0.1, 0.1, 0.004, 0.01, 80)
    }  # under abs 0.5, no rule on emoji
    report = _report(feats)
    md = report_md(report)
    assert _drift_flags(md)["emoji"] == "can’t tell"
    at, cant = _glance(md)
    assert "emoji" in _cant_tell_names(cant) and "emoji (" not in at
    _check(report)


def test_a_saved_report_from_before_decisions_reads_one_decision():
    feats = {"flattery": _feature("flattery", 0.1, 0.1, 0.05, 0.05, 0.004, 0.01, 80)}
    report = _report(feats)
    del report["verdict"]["decisions"]  # as saved before this change: recomputed from what it has
    report["features"]["flattery"].pop("past_threshold")
    report["features"]["flattery"]["flagged"] = False
    report["flagged"] = []
    _check(steps.from_saved(report).to_dict())


_NAMES = st.sampled_from(vibes.FEATURE_NAMES)
_Q = st.one_of(st.none(), st.floats(0, 1))


@st.composite
def drift_results(draw):
    names = draw(st.lists(_NAMES, min_size=1, max_size=len(vibes.FEATURE_NAMES), unique=True))
    feats = {}
    for name in names:
        parent = draw(st.floats(0, 50 if name == "tokens" else 3))
        delta = draw(st.floats(-3, 3))
        p = draw(st.floats(0, 1))
        q = draw(_Q)
        # q (BH-adjusted) is never below p: a generator of q < p would test a state no report makes
        q = None if q is None else max(q, p)
        feats[name] = _feature(
            name, parent, delta, draw(st.floats(0, 3)), draw(st.floats(0, 3)), p, q, draw(st.integers(1, 200))
        )
    unmeasured = {}
    if draw(st.booleans()):  # the tone axes not applicable: too few pairs readable on both sides
        for axis in tone.AXES:
            feats.pop(axis, None)
            unmeasured[f"drift/{axis}"] = "tone read on only 3 of 40 answer pairs"
    if not feats:
        feats["tokens"] = _feature("tokens", 10.0, 0.0, 1.0, 1.0, 1.0, 1.0, 40)
    evals = None
    if draw(st.booleans()):
        e_delta, e_p = draw(st.floats(-0.5, 0.5)), draw(st.floats(0, 1))
        evals = {"parent": 0.5, "child": 0.5 + e_delta, "delta": e_delta, "low": e_delta - 0.1,
                 "high": e_delta + 0.1, "p": e_p, "q": e_p, "n": draw(st.integers(1, 80))}  # fmt: skip
    return feats, unmeasured, evals


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drift_results())
def test_one_decision_per_measure_over_generated_reports(result):
    feats, unmeasured, evals = result
    report = _report(feats, unmeasured, evals)
    _check(report)
