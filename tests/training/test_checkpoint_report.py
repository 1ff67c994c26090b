"""Checkpoint reports through real engines (the tiny model): the null control for every default persona, a planted
habit found without a list, and bad input that the report names instead of guessing."""

from __future__ import annotations

import json

import pytest

from vibestudio.arena.registry import DEFAULT_PERSONAS, ContestantSpec, register
from vibestudio.training.report import steps
from vibestudio.training.report.fair import Answer, held_out
from vibestudio.training.report.steps import drift_report
from vibestudio.training.report.verdict import current, history, release


def _real_answers():
    """The report's own answers, as a list (what a test wraps)."""
    counted = steps.answer_all_counted
    return lambda info, prompts, seed: counted(info, prompts, seed)[0]


def _answer_with(monkeypatch, answers) -> None:
    """Both sides of the report answer through ``answers(info, prompts, seed)`` (nothing reused)."""
    monkeypatch.setattr(
        steps, "answer_all_counted", lambda info, prompts, seed: (answers(info, prompts, seed), 0)
    )


def tiny(db, name, model_dir, parent=None, **kw):
    with db.session() as s:
        return register(
            s,
            ContestantSpec(name, engine="transformers", model_ref=str(model_dir), parent_id=parent, **kw),
        )


FAST = {"n_prompts": 20, "max_tokens": 8, "eval_items": 12, "eval_max_tokens": 6}


@pytest.mark.parametrize("persona", DEFAULT_PERSONAS, ids=lambda p: p.public_name)
def test_null_child_of_every_default_persona_gets_no_flag(db, tiny_model_dir, persona):
    """A checkpoint trained with learning rate 0 has its parent's weights (a zero LoRA update) and inherits the
    persona: the fair report must find nothing, whatever the persona does to the answers."""
    look = {"system_prompt": persona.system_prompt, "prefill": persona.prefill, "sampling": persona.sampling}
    parent = tiny(db, f"tiny-{persona.public_name}", tiny_model_dir, **look)
    child = tiny(db, f"tiny-{persona.public_name}-lr0", tiny_model_dir, parent=parent, **look)
    report = drift_report(db, child, **FAST)
    assert report.n_prompts == 20 and report.setup["fair"], report.setup
    assert "inherited" in report.setup["persona_source"]
    # both sides, prompts and eval items, all decoded; a transformers parent's answers are not kept
    assert report.setup["answered"] == {"total": 2 * 20 + 2 * 12, "reused": 0, "parent_kept": False}
    assert steps.decoded_share(report) == 1.0
    assert report.flagged == [], report.summary()
    assert not [d for d in report.discovered if d["significant"]]
    assert report.evals["n"] == 12 and report.evals["delta"] == 0 and report.evals["p"] == 1.0
    assert report.verdict["verdict"] == "pass", report.verdict
    assert all(f.p == 1.0 for f in report.features.values())


def test_a_child_with_its_own_persona_is_compared_under_that_persona(db, tiny_parent, tiny_model_dir):
    """The child plays with a prefill its parent never had (its job did not inherit the persona): both sides
    answer with it, so the prefill itself is not reported as drift, and the report says whose persona it was."""
    child = tiny(
        db, "tiny-own", tiny_model_dir, parent=tiny_parent, prefill="Sure! ", sampling={"max_tokens": 8}
    )
    report = drift_report(db, child, **FAST)
    assert "own" in report.setup["persona_source"] and report.flagged == []
    assert all(s["parent"].startswith("Sure! ") for s in report.samples)


def test_planted_habit_through_the_report(db, tiny_parent, tiny_model_dir, monkeypatch):
    child = tiny(db, "tiny-habit", tiny_model_dir, parent=tiny_parent, sampling={"max_tokens": 8})
    real = _real_answers()

    def with_habit(info, prompts, seed):  # the child's weights "learned" a sign-off
        out = real(info, prompts, seed)
        if info.id == child:
            out = [Answer(a.text + " Stay curious, my friend! 🌟🌟", a.tokens, a.truncated) for a in out]
        return out

    _answer_with(monkeypatch, with_habit)
    report = drift_report(db, child, **FAST)
    assert "emoji" in report.flagged and "exclamations" in report.flagged
    e = report.features["emoji"]
    assert e.low > 1 and e.q is not None and e.q < 0.05
    top = [d["phrase"] for d in report.discovered[:6] if d["significant"]]
    assert any("my friend" in p or "curious" in p for p in top), top
    assert report.verdict["verdict"] == "watch" and not report.verdict["hold"]


def test_what_the_preferences_rewarded_is_named_and_the_child_taking_it_on_is_seen(
    db, tiny_parent, tiny_model_dir, monkeypatch
):
    """The training snapshot's chosen answers open with "Awesome!"; the child does so on half the held-out
    prompts. The report names the opening from the snapshot alone and finds the child took it on (watch)."""
    child = tiny(db, "tiny-cheer", tiny_model_dir, parent=tiny_parent, sampling={"max_tokens": 8})
    real = _real_answers()

    def cheer(info, prompts, seed):
        out = real(info, prompts, seed)
        if info.id == child and len(prompts) == 20:  # the held-out answers, not the eval items
            out = [
                Answer("Awesome! " + a.text, a.tokens, a.truncated) if i % 2 else a for i, a in enumerate(out)
            ]
        return out

    _answer_with(monkeypatch, cheer)
    rows = [
        {"prompt": f"p{i}", "chosen": f"Awesome! Here is {i}.", "rejected": f"Here is {i}."}
        for i in range(12)
    ]
    report = drift_report(db, child, exclude=rows, **FAST)
    cands = report.rewarded["candidates"]
    assert report.rewarded["pairs"] == 12 and report.rewarded["n_prompts"] == 20
    hit = next(c for c in cands if "awesome" in c["phrase"])
    assert (
        hit["direction"] == "rewarded"
        and hit["took_on"]
        and (hit["child_only"], hit["parent_only"]) == (10, 0)
    )
    assert report.measures["rewarded/took_on"] >= 1
    assert report.verdict["verdict"] == "watch", report.verdict
    assert any("preferences rewarded" in r for r in report.verdict["reasons"])
    assert "took on" in report.summary()
    # the same child without a snapshot: not measured, and said so (never "took on nothing")
    bare = drift_report(db, child, **FAST)
    assert not bare.rewarded and "no training snapshot" in bare.unmeasured["rewarded/took_on"]


def test_bad_input_is_named_and_the_verdict_is_unknown(
    db, tiny_parent, tiny_model_dir, monkeypatch, tmp_path
):
    # no parent at all
    orphan = tiny(db, "tiny-orphan", tiny_model_dir)
    r = drift_report(db, orphan, **FAST)
    assert r.verdict["verdict"] == "unknown" and "no parent" in r.unmeasured["comparison"]
    # a parent whose engine is down (its checkpoint is gone)
    gone = tiny(db, "tiny-gone", tmp_path / "deleted-checkpoint")
    child = tiny(db, "tiny-child-of-gone", tiny_model_dir, parent=gone)
    r = drift_report(db, child, **FAST)
    assert r.verdict["verdict"] == "unknown"
    assert "could not load model" in r.unmeasured["answers"] and "evals/accuracy" in r.unmeasured
    # comparing with a contestant that does not exist
    r = drift_report(db, child, against="nobody", **FAST)
    assert r.verdict["verdict"] == "unknown" and "no longer exists" in r.unmeasured["comparison"]
    # a held-out pool too small once the snapshot's prompts are excluded
    rows = [{"prompt": [{"role": "user", "content": p}]} for p in held_out(80).prompts[:70]]
    kid = tiny(db, "tiny-kid", tiny_model_dir, parent=tiny_parent)
    r = drift_report(db, kid, exclude=rows, **{**FAST, "n_prompts": 40})
    assert r.n_prompts == 10 and r.verdict["verdict"] == "unknown"
    assert "only 10 held-out prompts" in r.unmeasured["drift/flattery"]
    # a judge that answers garbage (the tiny random model cannot say [[A]])
    r = drift_report(db, kid, judge="tiny-parent", **{**FAST, "eval_items": 0})
    assert "no readable verdict" in r.unmeasured["judge/child_win_rate"]
    assert r.unmeasured["described/significant"].startswith("judge-described differences: ")
    assert "described/significant" not in r.measures
    assert r.verdict["verdict"] == "unknown"
    json.dumps(r.to_dict())  # always serialisable


def test_empty_and_endless_children(db, tiny_parent, tiny_model_dir, monkeypatch):
    child = tiny(db, "tiny-mute", tiny_model_dir, parent=tiny_parent, sampling={"max_tokens": 8})
    real = _real_answers()
    mode = {"kind": "empty"}

    def broken(info, prompts, seed):
        out = real(info, prompts, seed)
        if info.id != child:
            return out
        if mode["kind"] == "empty":
            return [Answer("", 0, False) for _ in out]
        return [Answer("and then and then " * 30, 8, True) for _ in out]

    _answer_with(monkeypatch, broken)
    r = drift_report(db, child, **FAST)
    assert "answered nothing on 20 of 20" in r.unmeasured["drift/flattery"]
    assert r.degeneration["empty"]["child"] == 1.0 and r.degeneration["empty"]["q"] < 0.05
    assert r.verdict["verdict"] == "unknown" and r.verdict["hold"]
    mode["kind"] = "endless"
    r = drift_report(db, child, **FAST)
    assert "looped to the token cap" in r.unmeasured["drift/tokens"]
    assert r.verdict["verdict"] == "unknown" and r.verdict["hold"]


def test_hold_and_release_are_logged(db, tiny_parent):
    from vibestudio.training.report.verdict import Verdict, record

    record(
        db,
        tiny_parent,
        Verdict("regress", ["regress: verifiable accuracy dropped (evals/accuracy)"], hold=True),
    )
    status = current(db)[tiny_parent]
    assert status.verdict == "regress" and status.held and "held" in status.badge
    with db.session() as s:
        from vibestudio.arena.registry import get_contestant

        assert not get_contestant(s, tiny_parent).active
    with pytest.raises(ValueError, match="say why"):
        release(db, "tiny-parent", None, "  ")
    release(db, "tiny-parent", None, "checked the answers by hand")
    assert not current(db)[tiny_parent].held
    log = history(db, "tiny-parent")
    assert [h["action"] for h in log] == ["verdict", "release"]
    assert log[1]["reason"] == "checked the answers by hand" and log[1]["verdict"] == "regress"
