"""What the training preferences rewarded and whether the child took it on (``training.report.discover.rewarded`` /
``took_on``), and the paired, per-family discovery: synthetic parents and children, no models."""

from __future__ import annotations

import pytest

from tests.training.test_report_stats import answers
from vibestudio.training.report.discover import candidates, discover, preference_answers, rewarded, took_on


def rows(chosen: list[str], rejected: list[str], conversational: bool = True) -> list[dict]:
    def msg(text: str) -> list[dict[str, str]] | str:
        return [{"role": "assistant", "content": text}] if conversational else text

    return [
        {"prompt": [{"role": "user", "content": f"q{i}"}], "chosen": msg(c), "rejected": msg(r)}
        for i, (c, r) in enumerate(zip(chosen, rejected, strict=True))
    ]


def cheery(text: str) -> str:
    return "Awesome! " + text + " Have fun!"


# preferences of 40 pairs: every chosen answer is cheery, every rejected one plain
PREFS = rows([cheery(a) for a in answers(11)], answers(12))


def test_rewarded_names_what_the_chosen_answers_carry():
    found = rewarded(PREFS)
    assert 0 < len(found) <= 8
    names = {(r.kind, r.phrase) for r in found}
    # "Awesome!", "Have fun!" and the final "!" come in exactly the same pairs: one habit, named once, by an edge
    assert ("closing", "… !") in names and not any("awesome" in p or "fun" in p for _, p in names), names
    for r in [r for r in found if r.preference_p < 1e-6]:  # the habit, and the plain ending it replaced
        want = (1.0, 0.0) if r.direction == "rewarded" else (0.0, 1.0)
        assert (r.chosen_rate, r.rejected_rate) == want, r
    assert ("closing", "… .") in {(r.kind, r.phrase) for r in found if r.direction == "penalised"}


def test_habits_in_different_pairs_are_named_apart():
    base = answers(11)
    chosen = [("Awesome! " if i < 30 else "") + a + " Have fun!" for i, a in enumerate(base)]
    found = {(r.kind, r.phrase): r for r in rewarded(rows(chosen, answers(12)))}
    assert ("opening", "awesome …") in found and ("closing", "… !") in found, list(found)
    assert found[("opening", "awesome …")].chosen_rate == 0.75


def test_penalised_phrases_are_named_too_and_plain_strings_are_read():
    plain = rows(answers(13), [a + " However, who knows?" for a in answers(14)], conversational=False)
    assert preference_answers(plain)[0] == answers(13)
    found = rewarded(plain)
    penalised = [r.phrase for r in found if r.direction == "penalised"]
    assert "… ?" in penalised, penalised  # "However, who knows?": one habit, named by its closing
    assert "… ." in [r.phrase for r in found if r.direction == "rewarded"]  # chosen answers end plainly


def test_no_difference_in_the_preferences_names_nothing():
    assert rewarded(rows(answers(1), answers(2))) == []
    assert rewarded([]) == []
    assert rewarded([{"prompt": "q", "chosen": "", "rejected": "x"}, {"nonsense": 1}]) == []


@pytest.mark.parametrize("share", [10, 40])
def test_a_child_that_took_on_a_rewarded_opening_in_a_quarter_of_its_answers_is_caught(share):
    """10 of 40 answers opening with "Awesome!" is too rare to survive BH over every n-gram, but it is one of a
    handful of phrases the preferences named beforehand, so the paired test over just those finds it."""
    parent = answers(1)
    child = [cheery(a) if i < share else a for i, a in enumerate(parent)]
    tested = took_on(rewarded(PREFS), parent, child, [f"q{i}" for i in range(40)])
    hits = [r for r in tested if r.took_on and r.direction == "rewarded"]
    assert hits, [(r.phrase, r.child_only, r.parent_only, r.q) for r in tested]
    top = hits[0]
    assert top.child_only == share and top.parent_only == 0 and top.child_rate == share / 40
    assert top.examples and top.examples[0]["side"] == "child" and top.examples[0]["prompt"] == "q0"


def test_a_child_that_moved_against_its_preferences_did_not_take_them_on():
    parent = [cheery(a) for a in answers(1)]
    child = answers(1)  # lost the cheer its preferences rewarded
    tested = took_on(rewarded(PREFS), parent, child)
    assert not any(r.took_on for r in tested)
    assert any(r.parent_only == 40 and r.q < 0.05 for r in tested)  # a significant change, the other way


def test_the_null_child_took_on_nothing():
    found = rewarded(PREFS)
    parent = answers(1)
    assert not any(r.took_on for r in took_on(found, parent, parent))
    for seed in (2, 3, 4):  # another sample from the same "model"
        assert not any(r.took_on for r in took_on(found, parent, answers(seed))), seed
    with pytest.raises(ValueError, match="paired"):
        took_on(found, parent, parent[:-1])


def test_openings_and_closings_are_their_own_family_and_the_test_is_paired():
    parent = answers(1)
    child = [a + " Cheers!" for a in parent]  # the same answers with a sign-off: paired, 40 of 40
    found = discover(parent, child)
    fams = {d.family for d in found}
    assert fams == {"phrases", "edges"} or "edges" in fams, fams
    edge = next(d for d in found if d.kind == "closing" and "cheers" in d.phrase)
    assert edge.significant and edge.p < 1e-9 and 0 < edge.tested < 200
    phrase = next(d for d in found if d.family == "phrases")
    assert phrase.tested > edge.tested  # thousands of n-grams vs a few dozen edges
    assert ("opening", "rivers …") in candidates("Rivers form.") and ("closing", "… form .") in candidates(
        "Rivers form."
    )
