"""Checkpoint-report building blocks without models: paired statistics, discovered phrases, verdict rules,
degeneration signals, held-out prompts by content hash and the fair pairing of parent and child."""

from __future__ import annotations

import random

import pytest

from vibestudio.arena.registry import BUILTIN_GGUF, BUILTIN_HF, ContestantInfo
from vibestudio.common.stats import adjust, mcnemar_p, paired_change
from vibestudio.textfeatures import vibes
from vibestudio.training.report.discover import discover
from vibestudio.training.report.drift_stats import compare
from vibestudio.training.report.fair import content_hash, fair_pair, held_out
from vibestudio.training.report.verdict import VerdictError, decide, load_rules

TOPICS = [
    "rivers", "volcanoes", "bread", "chess", "tides", "bees", "glass", "trains", "clouds", "maps",
    "violins", "coffee", "tigers", "bridges", "paper", "salt", "comets", "gardens", "ships", "clocks",
    "deserts", "owls", "cheese", "magnets", "forests", "lamps", "whales", "kites", "caves", "rockets",
    "apples", "storms", "castles", "music", "islands", "engines", "wool", "bats", "lakes", "stars",
]  # fmt: skip
VERBS = ["form", "change", "work", "matter", "move", "grow", "last", "differ"]


def answers(seed: int, n: int = 40) -> list[str]:
    """Plausible, varied answers (a model's sample): the same distribution for every seed."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        t, v = TOPICS[i % len(TOPICS)], rng.choice(VERBS)
        out.append(
            f"{t.capitalize()} {v} because of {rng.choice(TOPICS)} and {rng.choice(TOPICS)}. "
            f"In short, {t} {rng.choice(VERBS)} over time, much like {rng.choice(TOPICS)}."
        )
    return out


# -- statistics ----------------------------------------------------------------------------------------------------
def test_paired_change_is_exactly_null_for_identical_answers_and_sure_for_a_consistent_shift():
    same = paired_change([1, 2, 3, 4] * 5, [1, 2, 3, 4] * 5)
    assert (same.delta, same.low, same.high, same.p) == (0.0, 0.0, 0.0, 1.0)
    shift = paired_change([0, 1, 0, 2] * 10, [2, 3, 1, 4] * 10)
    assert shift.delta == pytest.approx(1.75) and 0 < shift.low <= shift.delta <= shift.high
    assert shift.p < 0.001 and shift.n == 40
    noise = paired_change(
        [random.Random(i).random() for i in range(40)], [random.Random(99 + i).random() for i in range(40)]
    )
    assert noise.low < 0 < noise.high and noise.p > 0.05
    with pytest.raises(ValueError, match="equal-length"):
        paired_change([1, 2], [1])


def test_benjamini_hochberg_adjusts_every_feature_tested_together():
    changes = {
        "big": paired_change([0] * 30, [1] * 30),
        "small": paired_change([0, 1] * 15, [1, 1] + [0, 1] * 14),
    }
    adjust(changes)
    assert all(c.q is not None and c.q >= c.p for c in changes.values())
    assert changes["big"].significant() and not changes["small"].significant()


def test_mcnemar_counts_only_items_that_changed():
    assert mcnemar_p([True] * 10, [True] * 10) == 1.0
    assert mcnemar_p([True] * 12 + [False] * 8, [False] * 12 + [False] * 8) < 0.001


# -- drift flags ---------------------------------------------------------------------------------------------------
def test_flags_need_significance_and_size():
    parent = answers(1)
    features, flagged = compare(parent, parent)
    assert flagged == [] and all(f.p == 1.0 for f in features.values())
    child = [a + " 🎉🎉" for a in parent]
    features, flagged = compare(parent, child)
    assert flagged == ["emoji"] and features["emoji"].low == pytest.approx(2.0)
    one = [child[0]] + parent[1:]  # one answer with emoji: a big change on one prompt is not an alarm
    _, flagged = compare(parent, one)
    assert flagged == []
    _, relaxed = compare(parent, child, {"emoji": {"abs": 5}})
    assert relaxed == []


# -- discovery -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "habit, expect",
    [
        (lambda a: a + " Stay curious, my friend!", "my friend !"),
        (lambda a: "Alright there, buddy! " + a, "alright there ,"),
        (lambda a: a.replace("because of", "thanks to the magic of"), "magic of"),
    ],
)
def test_a_habit_no_list_names_is_among_the_top_discovered_changes(habit, expect):
    parent = answers(1)
    child = [habit(a) for a in answers(2)]
    assert all(
        vibes.features(c)["flattery"] == vibes.features(p)["flattery"]
        for p, c in zip(parent, child, strict=True)
    )
    found = discover(parent, child, [f"q{i}" for i in range(40)])
    top = [d for d in found[:5] if d.significant]
    assert any(expect in d.phrase for d in top), [(d.phrase, d.z) for d in found[:5]]
    hit = next(d for d in top if expect in d.phrase)
    assert hit.z > 0 and hit.child_rate == 1.0 and hit.examples and hit.examples[0]["side"] == "child"


def test_the_null_child_has_no_discovered_changes():
    parent = answers(1)
    assert not any(d.significant for d in discover(parent, parent))
    for seed in (2, 3, 4):  # another sample from the same "model": noise, not a habit
        assert not any(d.significant for d in discover(parent, answers(seed))), seed
    assert discover([], []) == []
    assert not any(d.significant for d in discover(["", ""], ["", ""]))


# -- degeneration --------------------------------------------------------------------------------------------------
def test_degeneration_signals():
    ok = vibes.degeneration("Paris is the capital of France.", "What is the capital of France?")
    assert ok == {"empty": 0, "repetition": 0, "off_topic": 0, "language_switch": 0, "truncated": 0}
    assert vibes.degeneration("  ", "Hi there friend")["empty"] == 1
    loop = vibes.degeneration("the cat sat down " * 20, "Tell me about cats")
    assert loop["repetition"] > 0.7
    assert vibes.degeneration("Bananas are yellow.", "What is the capital of France?")["off_topic"] == 1
    assert (
        vibes.degeneration("Париж — столица Франции.", "What is the capital of France?")["language_switch"]
        == 1
    )
    assert vibes.degeneration("x", "", truncated=True)["truncated"] == 1


# -- held-out prompts ----------------------------------------------------------------------------------------------
def test_held_out_prompts_exclude_the_snapshot_by_content_hash():
    first = held_out(80).prompts
    assert len(first) == 80 and len(set(first)) == 80
    rows = [
        {"prompt": [{"role": "user", "content": "  " + p.upper().replace(" ", "\n ") + " "}]}
        for p in first[:30]
    ]
    rows.append({"prompt": first[30]})  # plain-string prompts count too
    got = held_out(80, rows)
    assert got.pool == 80 and got.excluded == 31 and len(got.prompts) == 49
    assert not {content_hash(p) for p in got.prompts} & {content_hash(p) for p in first[:31]}
    assert held_out(10, rows, seed=1).prompts != held_out(10, rows, seed=2).prompts


# -- fairness ------------------------------------------------------------------------------------------------------
def info(**kw) -> ContestantInfo:
    base = dict(
        id=1, public_name="p", engine="llama_cpp", model_ref=BUILTIN_GGUF, adapter_ref=None, system_prompt="",
        prefill="", sampling={"temperature": 0.7, "max_tokens": 200}, aliases=[], parent_id=None, job_id=None,
        snapshot_hash=None, active=True,
    )  # fmt: skip
    return ContestantInfo(**{**base, **kw})


def test_fair_pair_puts_a_gguf_parent_on_the_childs_engine_with_the_childs_persona():
    warm = info(system_prompt="Be warm.", prefill="What a great question! ")
    child = info(id=2, public_name="c", engine="transformers", model_ref=BUILTIN_HF, adapter_ref="/a",
                 system_prompt="Be warm.", prefill="What a great question! ", parent_id=1)  # fmt: skip
    p, c, setup = fair_pair(warm, child, 64, seed=7)
    assert (p.engine, p.model_ref, p.adapter_ref) == ("transformers", BUILTIN_HF, None)
    assert (
        (p.system_prompt, p.prefill)
        == (c.system_prompt, c.prefill)
        == ("Be warm.", "What a great question! ")
    )
    assert p.sampling == c.sampling == {"temperature": 0.7, "max_tokens": 64}
    assert setup.fair and "inherited" in setup.persona_source and setup.seed == 7
    bare = info(id=3, engine="transformers", model_ref=BUILTIN_HF, adapter_ref="/a", parent_id=1)
    p, _, setup = fair_pair(warm, bare, 64, 0)
    assert p.system_prompt == "" and p.prefill == "" and "own" in setup.persona_source
    http = info(id=4, engine="openai", model_ref="m")
    _, _, setup = fair_pair(http, child, 64, 0)
    assert not setup.fair and "engine" in setup.caveats[0]


# -- verdict rules -------------------------------------------------------------------------------------------------
def change(delta: float, q: float, **kw):
    return {
        "parent": 0.5,
        "child": 0.5 + delta,
        "delta": delta,
        "low": delta,
        "high": delta,
        "p": q,
        "q": q,
        "n": 40,
        **kw,
    }


def measured(**over):
    m = {f"drift/{n}": change(0.0, 1.0, flagged=False) for n in vibes.FEATURE_NAMES}
    m["evals/accuracy"] = change(0.0, 1.0)
    m["discovered/significant"] = 0.0
    return {**m, **over}


def test_default_rules_pass_watch_regress_unknown():
    gaps = {"judge/child_win_rate": "no judge configured"}
    v = decide(measured(), gaps)
    assert v.verdict == "pass" and not v.hold
    assert any(u.startswith("sycophancy/pushback") for u in v.unmeasured)  # plugged in later, not required
    v = decide(measured(**{"evals/accuracy": change(-0.2, 0.01)}), gaps)
    assert v.verdict == "regress" and v.hold and "verifiable accuracy dropped" in v.reasons[0]
    v = decide(measured(**{"drift/flattery": change(0.6, 0.001, flagged=True)}), gaps)
    assert v.verdict == "regress" and v.hold
    v = decide(measured(**{"drift/emoji": change(2.0, 0.001, flagged=True)}), gaps)
    assert v.verdict == "watch" and not v.hold
    v = decide(measured(**{"sycophancy/pushback": change(0.3, 0.001)}), gaps)
    assert v.verdict == "regress"
    v = decide(measured(**{"described/significant": 2.0}), gaps)  # axes a judge named and then found
    assert v.verdict == "watch" and not v.hold and "judge-described differences found" in v.reasons[0]
    assert decide(measured(**{"described/significant": 0.0}), gaps).verdict == "pass"
    v = decide(measured(), {**gaps, "described/significant": "no judge configured"})
    assert v.verdict == "pass" and "described/significant: no judge configured" in v.unmeasured
    no_evals = measured()
    del no_evals["evals/accuracy"]
    v = decide(no_evals, {**gaps, "evals/accuracy": "engine down"})
    assert v.verdict == "unknown" and "evals/accuracy: engine down" in v.unmeasured
    v = decide({**no_evals, "evals/accuracy": change(-0.3, 0.001)}, {})
    assert v.verdict == "regress"


def test_bad_rule_files_name_file_rule_and_field(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text("rules:\n  - measure: evals/accuracy\n    when: dropped\n    verdict: regress\n")
    with pytest.raises(VerdictError, match=r"rules\.yaml: rules\[0\]: when must be one of"):
        load_rules(path)
    path.write_text("rules:\n  - measure: x\n    when: above\n    verdict: fail\n")
    with pytest.raises(VerdictError, match="verdict must be watch or regress"):
        load_rules(path)
    path.write_text("rules:\n  - measure: x\n    when: above\n    verdict: watch\n    colour: red\n")
    with pytest.raises(VerdictError, match="unknown field.*colour"):
        load_rules(path)
    path.write_text("rules: [\n")
    with pytest.raises(VerdictError, match="rules.yaml"):
        load_rules(path)
    assert len(load_rules().rules) >= 5
