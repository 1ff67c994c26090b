"""Judge-described differences (VibeCheck-style) in the checkpoint report: parent, child and judges are scripted
models behind the real HTTP engine, with known habits. A difference the child's answers carry is found and
pointed the right way; one the judge names but no answer has is not; a judge that always says "A" finds nothing;
a garbage, refusing or unreachable judge leaves the step unmeasured with the reason, and the rest of the report
still finishes."""

from __future__ import annotations

import json

import pytest

from tests.helpers.scripted_judge import ScriptedJudge
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.common.stats import sign_test
from vibestudio.training.report.steps import drift_report
from vibestudio.training.report.text import described_md, report_md
from vibestudio.training.report.vibecheck import _combine, axis_key, clean_axis, merge_candidates, parse_axes

FAST = {"n_prompts": 20, "eval_items": 4}  # 9 prompts to name differences on, 11 to check them on


@pytest.fixture
def chat():
    server = ScriptedJudge()
    yield server
    server.close()


@pytest.fixture
def family(db, chat):
    """A plain parent, a child that signs off with emoji, and a child that answers exactly like the parent."""
    parent = chat.add(db, "plain")
    cheery = chat.add(db, "cheery", parent=parent)
    same = chat.add(db, "plain-again", parent=parent, model="plain")  # answers exactly like its parent
    chat.add(db, "honest-judge", "always-a-judge", "garbage-judge", "refusing-judge", "blind-judge")
    return {"cheery": cheery, "same": same}


# -- building blocks -----------------------------------------------------------------------------------------------
def test_axis_lines_are_parsed_strictly_and_wordings_merge():
    assert parse_axes("Sure!\n1. AXIS: Uses emoji.\n- **AXIS:** more concise\nAXIS: none") == (
        ["uses emoji", "more concise"],
        0,
    )
    assert parse_axes("AXIS: none") == ([], 0)  # an explicit "no difference" is an answer
    assert parse_axes("The answers differ in tone and emoji.") is None  # no AXIS line: not in the format
    long = "AXIS: " + "this is a whole sentence rather than a short phrase naming a property"
    assert parse_axes(long) is None and parse_axes(long + "\nAXIS: emoji") == (["emoji"], 1)
    assert clean_axis("Model 2 uses emoji") == "uses emoji"
    assert clean_axis("model 1 is warmer than model 2") is None  # says which model: not an axis
    assert axis_key("Uses emojis") == axis_key("more emoji") == axis_key("emoji")
    assert axis_key("more concise") == axis_key("less concise") != axis_key("more formal")
    merged = merge_candidates([["uses emoji", "formal tone"], ["more emojis"], ["formal tone", "emoji"]])
    # "emoji" twice in one reply counts once for that reply
    assert merged == [{"axis": "uses emoji", "batches": 3}, {"axis": "formal tone", "batches": 2}]


def test_both_orders_must_agree_and_the_sign_test_needs_decisive_prompts():
    # the two orders' verdicts in item terms (1 = parent, 2 = child) must agree to name a side
    assert _combine("2", "2") == "child" and _combine("1", "1") == "parent"
    assert _combine("1", "2") == "inconsistent" and _combine("tie", "tie") == "neither"
    assert _combine("2", "tie") == "inconsistent" and _combine("unparsed", "2") == "unreadable"
    p, low, high = sign_test(11, 0)
    assert p == pytest.approx(2 * 0.5**11) and low > 0.7 and high == pytest.approx(1.0)
    assert sign_test(0, 0) == (1.0, None, None)
    p, low, high = sign_test(3, 2)
    assert p == 1.0 and low < 0.5 < high


# -- through the report ------------------------------------------------------------------------------------------
def test_a_difference_the_child_carries_is_found_and_a_phantom_one_is_not(db, chat, family):
    r = drift_report(db, family["cheery"], judge="honest-judge", **FAST)
    d = r.described
    assert d["propose_prompts"] == 9 and d["validate_prompts"] == 11
    assert len(chat.emoji_first) == 3 and len(set(chat.emoji_first)) == 2  # which side is Model 1 alternates
    assert d["candidates"] == [
        {"axis": "uses emoji", "batches": 3},  # "Uses emojis." in later batches is the same axis
        {"axis": "mentions the weather", "batches": 3},
    ]
    emoji, weather = d["axes"]
    assert emoji["axis"] == "uses emoji" and emoji["found"] and emoji["more_in"] == "child"
    assert (emoji["n"], emoji["decisive"], emoji["child_more"], emoji["parent_more"]) == (11, 11, 11, 0)
    assert emoji["child_share"] == 1.0 and 0.7 < emoji["low"] < 1 and emoji["q"] < 0.01
    assert "😊" in emoji["examples"][0]["child"] and "😊" not in emoji["examples"][0]["parent"]
    assert not weather["found"] and weather["neither"] == 11 and weather["decisive"] == 0
    assert weather["child_share"] is None and weather["p"] == 1.0
    assert r.measures["described/significant"] == 1.0 and "described/significant" not in r.unmeasured
    assert "watch: judge-described differences found (described/significant)" in r.verdict["reasons"]
    # cost: 3 proposals + 2 axes x 11 prompts x 2 orders, counted and timed; the server saw exactly those
    # (and the 20 x 2 head-to-head calls)
    assert d["calls"] == {"propose": 3, "validate": 44, "unreadable": 0, "errors": 0, "total": 47}
    assert r.timings["described_calls"] == 47 and r.timings["described"] > 0
    assert chat.requests["honest-judge"] == 47 + 40
    assert "found 1 described difference(s), e.g. 'uses emoji' more in the child" in r.summary()
    text = report_md(r.to_dict())
    assert "### Judge-described differences (judge honest-judge)" in text
    assert "| “uses emoji” | child | 100% [" in text and "judge: the child shows more “uses emoji”" in text
    json.dumps(r.to_dict())


def test_no_difference_means_nothing_found_and_a_pass(db, chat, family):
    r = drift_report(db, family["same"], judge="honest-judge", **FAST)
    assert [a["axis"] for a in r.described["axes"]] == ["mentions the weather"]
    assert r.described["n_found"] == 0 and r.measures["described/significant"] == 0.0
    assert r.verdict["verdict"] == "pass", r.verdict


def test_the_cap_bounds_the_calls(db, chat, family):
    r = drift_report(db, family["cheery"], judge="honest-judge", describe_axes=1, describe_prompts=8, **FAST)
    d = r.described
    assert [a["axis"] for a in d["axes"]] == ["uses emoji"] and d["validate_prompts"] == 8
    assert d["calls"]["total"] == 3 + 2 * 1 * 8
    assert "Also named, over the cap: “mentions the weather”" in described_md(r.to_dict())
    off = drift_report(db, family["cheery"], judge="honest-judge", describe_axes=0, **FAST)
    assert off.described == {} and "turned off" in off.unmeasured["described/significant"]
    assert off.verdict["verdict"] == "watch"  # turned off on purpose is not a gap that blocks the verdict


def test_a_judge_that_always_says_a_finds_nothing(db, chat, family):
    r = drift_report(db, family["cheery"], judge="always-a-judge", **FAST)
    emoji = r.described["axes"][0]
    assert emoji["axis"] == "uses emoji" and not emoji["found"]
    assert emoji["inconsistent"] == 11 and emoji["decisive"] == 0 and emoji["child_share"] is None
    assert r.measures["described/significant"] == 0.0


@pytest.mark.parametrize(
    ("judge", "why"),
    [
        (
            "garbage-judge",
            "named no axis in the required format (AXIS: <phrase>) in any of 3 proposal replies",
        ),
        ("refusing-judge", "gave no readable verdict ([[A]], [[B]] or [[C]]) on 44 of 44 validation calls"),
        ("down-judge", "could not ask the judge: EngineError: cannot connect"),
    ],
)
def test_a_judge_that_cannot_be_used_leaves_it_unmeasured(db, chat, family, judge, why):
    if judge == "down-judge":
        with db.session() as s:
            register(
                s,
                ContestantSpec(
                    judge,
                    engine="openai",
                    model_ref=judge,
                    engine_config={"base_url": "http://127.0.0.1:9/v1"},
                ),
            )
    r = drift_report(db, family["cheery"], judge=judge, **FAST)
    gap = r.unmeasured["described/significant"]
    assert gap.startswith("judge-described differences: ") and why in gap, gap
    assert r.described == {} and "described/significant" not in r.measures  # never a zero
    assert r.verdict["verdict"] == "unknown"  # never a pass
    assert any(x.startswith("unknown: described/significant") for x in r.verdict["reasons"])
    assert r.features and "emoji" in r.flagged  # the rest of the report finished
    assert r.timings["described_calls"] == {"garbage-judge": 3, "refusing-judge": 47, "down-judge": 3}[judge]
    assert "Not measured: judge-described differences: " in described_md(r.to_dict())


def test_a_judge_that_names_nothing_has_not_measured_nothing(db, chat, family):
    """ "AXIS: none" everywhere (a lazy or weak judge) is an unchecked claim: unmeasured, not zero; the judge did
    answer as asked, so the verdict is left to the other measures."""
    r = drift_report(db, family["cheery"], judge="blind-judge", **FAST)
    assert "named no difference in any of its 3 proposal replies" in r.unmeasured["described/significant"]
    assert "described/significant" not in r.measures and r.timings["described_calls"] == 3
    assert r.verdict["verdict"] == "watch"  # the emoji drift, not "unknown"
    assert chat.requests["blind-judge"] == 3 + 40


def test_without_a_judge_the_report_says_why(db, chat, family):
    r = drift_report(db, family["cheery"], **FAST)
    assert r.unmeasured["described/significant"] == "no judge configured"
    assert r.verdict["verdict"] == "watch"  # a gap nobody asked to fill does not block the verdict
    assert "Not measured: no judge configured" in described_md(r.to_dict())
