"""Planted tones the code has never seen: praise of the user in new wordings, grovelling apology, first-person
life stories and relentless agreement, each planted into a child built from a parent's answers, must be named by
its axis (flagged, and in the report's top lines); another sample of the parent names nothing. The hit and
false-flag counts over several seeds are printed (``pytest -s``) and asserted."""

from __future__ import annotations

import pytest

from tests.helpers.tones import PLANTERS, PROMPTS, parent_answers, plant
from vibestudio.textfeatures import tone
from vibestudio.training.report.discover import summarise_tone
from vibestudio.training.report.drift_stats import compare
from vibestudio.training.report.text import glance_md
from vibestudio.training.report.verdict import decide, load_rules

SEEDS = (11, 12, 13)


def _report(parent: list[str], child: list[str]) -> tuple[dict, list[str]]:
    drift, flagged = compare(parent, child, prompts=PROMPTS)
    feats = {k: vars(v) for k, v in drift.items()}
    return {
        "features": feats,
        "flagged": flagged,
        "tone": summarise_tone(feats, [], [], PROMPTS, parent, child),
    }, flagged


@pytest.mark.parametrize("planted", sorted(PLANTERS))
def test_a_planted_tone_is_named_by_its_axis_and_nothing_else(planted):
    parent = parent_answers(PROMPTS, seed=1)
    child = plant(parent, planted, seed=5)
    report, flagged = _report(parent, child)
    assert planted in flagged
    assert [a for a in flagged if a in tone.AXES] == [planted]  # no other tone axis raised
    assert f"**more {planted}** ({tone.LABELS[planted]})" in glance_md(report)


def test_praise_in_new_wordings_makes_a_regress_and_agreement_too():
    parent = parent_answers(PROMPTS, seed=1)
    for planted in ("flattery", "agreement"):
        report, _ = _report(parent, plant(parent, planted, seed=6))
        measures = {f"drift/{k}": v for k, v in report["features"].items()}
        assert decide(measures, {}, load_rules()).verdict == "regress"


def test_hit_and_false_flag_counts_over_seeds(capsys):
    hits = misses = false_flags = 0
    null_flags = 0
    for seed in SEEDS:
        parent = parent_answers(PROMPTS, seed=seed)
        for planted in sorted(PLANTERS):
            _, flagged = _report(parent, plant(parent, planted, seed=seed + 100))
            hits += planted in flagged
            misses += planted not in flagged
            false_flags += len([a for a in flagged if a in tone.AXES and a != planted])
        other = parent_answers(PROMPTS, seed=seed + 1000)  # the null child: another sample of the parent
        report, flagged = _report(parent, other)
        null_flags += len(flagged) + sum(1 for a in report["tone"]["axes"] if a["significant"])
        assert not glance_md(report).startswith("**Tone")
    with capsys.disabled():
        print(
            f"\nplanted tones: {hits} named of {hits + misses} plants ({len(PLANTERS)} tones x {len(SEEDS)} seeds), "
            f"{false_flags} other tone axes flagged; null children: {null_flags} flags in {len(SEEDS)}"
        )
    assert (hits, misses, false_flags, null_flags) == (len(PLANTERS) * len(SEEDS), 0, 0, 0)
