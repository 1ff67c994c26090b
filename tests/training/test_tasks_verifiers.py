"""Verifiers: numbers (separators, units, tolerance, several numbers), exact, choice letters, regex with its own
timeout, JSON schema (with and without jsonschema), reward specs, code checks off and on, hangs and raises."""

from __future__ import annotations

import builtins
import time

import pytest

from vibestudio.training.tasks import verifiers as v
from vibestudio.training.tasks.verifiers import VerifierError, check_reference, check_spec, verify


def ok(spec, answer, ref, choices=None):
    return verify(check_spec(spec), answer, ref, choices)


@pytest.mark.parametrize(
    "answer,ref,passed",
    [
        ("The total is 1,234 apples.", "1234", True),
        ("Answer: 1234.0", "1,234", True),
        ("She has 3 left. Answer: 7", "7", True),  # the stated result, not the last number
        ("3 + 4 = 7", "7", True),
        ("#### 12", "12", True),
        ("so \\boxed{\\frac{1}{2}} hmm 0.5", "0.5", True),
        ("Answer: 3/4", "0.75", True),
        ("Answer: 50%", "0.5", True),
        ("Answer: -5", "5", False),
        ("Answer: $12.50", "12.5", True),
        ("no number here", "4", False),
        ("Answer: 3000 m", "3 km", True),  # units converted
        ("Answer: 3 kg", "3 km", False),  # another dimension
        ("Answer: 3000 meters", "3000 m", True),
    ],
)
def test_numeric(answer, ref, passed):
    assert ok("numeric", answer, ref).passed is passed


def test_numeric_tolerance_and_the_gameable_any_match():
    assert ok({"type": "numeric", "tolerance": 0.1}, "Answer: 3.14", "3.1").passed
    assert not ok({"type": "numeric"}, "Answer: 3.14", "3.1").passed
    assert ok({"type": "numeric", "rel": 0.01}, "Answer: 1005", "1000").passed
    gamed = "Answer: 5 or 6 or 7 or 8"
    assert not ok("numeric", gamed, "7").passed  # the honest verifier reads the stated result: 5
    assert ok({"type": "numeric", "match": "any"}, gamed, "7").passed  # the planted one is fooled


def test_exact_normalises_and_choice_reads_letters():
    assert ok("exact", "Answer: 'C-A-T'.", "c-a-t").passed
    assert ok("exact", "tac", "tac").passed
    assert not ok("exact", "Answer: cat", "tac").passed
    choices = ["red", "green", "blue"]
    assert ok("choice", "The answer is (B).", "B", choices).passed
    assert ok("choice", "B) green", "B", choices).passed
    assert ok("choice", "green", "B", choices).passed
    assert not ok("choice", "A) or B) maybe (C)", "B", choices).passed  # ambiguous
    assert not ok("choice", "D", "D", choices).passed  # not a choice


def test_regex_with_answer_and_a_catastrophic_pattern_times_out():
    assert ok(
        {"type": "regex", "pattern": r"^Answer: {answer}$", "flags": "M"}, "x\nAnswer: a.b", "a.b"
    ).passed
    assert not ok({"type": "regex", "pattern": r"^Answer: {answer}$"}, "Answer: aXb", "a.b").passed
    t0 = time.perf_counter()
    c = ok({"type": "regex", "pattern": r"(a|aa)+$", "timeout_s": 0.3}, "a" * 60 + "!", "")
    assert c.error is not None and "timeout" in c.error
    assert time.perf_counter() - t0 < 5


def test_a_verifier_that_hangs_or_raises_is_a_counted_skip(monkeypatch):
    def hang(*a):
        while True:
            pass

    monkeypatch.setitem(v._VERIFY, "exact", hang)
    c = ok({"type": "exact", "timeout_s": 0.2}, "x", "x")
    assert not c.passed and c.error.startswith("timeout")
    monkeypatch.setitem(v._VERIFY, "exact", lambda *a: 1 / 0)
    c = ok("exact", "x", "x")
    assert not c.passed and "ZeroDivisionError" in c.error


def test_json_schema_with_jsonschema_or_the_subset(monkeypatch):
    schema = {
        "type": "object",
        "required": ["name", "age"],
        "properties": {"age": {"type": "integer", "minimum": 0}},
    }
    spec = {"type": "json_schema", "schema": schema}
    assert ok(spec, 'Here: {"name": "Ana", "age": 3} done', "").passed
    assert not ok(spec, '{"name": "Ana", "age": -1}', "").passed
    assert not ok(spec, '{"name": "Ana"}', "").passed
    assert not ok(spec, "no json", "").passed
    real_import = builtins.__import__

    def no_jsonschema(name, *a, **k):
        if name == "jsonschema":
            raise ImportError(name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_jsonschema)
    c = ok(spec, '{"name": "Ana", "age": 3}', "")
    assert c.passed and "subset" in c.note
    assert not ok(spec, '{"name": "Ana", "age": "3"}', "").passed
    # the reference may be the schema itself
    assert ok("json_schema", '{"a": 1}', '{"type": "object", "required": ["a"]}').passed


def test_reward_spec_as_verifier():
    spec = {"type": "reward", "reward": {"type": "contains", "keywords": ["paris"]}}
    assert ok(spec, "It is Paris.", "").passed
    assert not ok(spec, "It is Rome.", "").passed
    with pytest.raises(VerifierError, match="reward"):
        check_spec({"type": "reward", "reward": {"type": "nope"}})


def test_code_checks_are_off_unless_the_operator_turns_them_on(monkeypatch):
    code = "```python\ndef add(a, b):\n    return a + b\n```"
    tests = "assert add(2, 3) == 5\n"
    monkeypatch.delenv("VIBESTUDIO_CODE_CHECKS", raising=False)
    c = ok("code", code, tests)
    assert not c.passed and "code checks are off" in c.error
    monkeypatch.setenv("VIBESTUDIO_CODE_CHECKS", "true")
    assert ok("code", code, tests).passed
    assert not ok("code", "def add(a, b):\n    return a - b\n", tests).passed
    looping = ok({"type": "code", "cpu_s": 1}, "while True:\n    pass\n", tests)
    # killed by the CPU limit, or (on a loaded machine, where 1 CPU second takes longer) by the wall clock
    assert not looping.passed and looping.error is None
    assert "CPU" in (looping.note or "") or "timed out" in (looping.note or "")
    hog = ok({"type": "code", "memory_mb": 64}, "x = bytearray(512 * 2**20)\n", tests)
    assert not hog.passed and "MemoryError" in (hog.note or "")
    forks = ok("code", "import os\nos.fork()\n", tests)
    assert not forks.passed


@pytest.mark.parametrize(
    "spec,message",
    [
        ({"type": "nope"}, "unknown"),
        ({"type": "numeric", "tolerance": -1}, "tolerance"),
        ({"type": "numeric", "match": "some"}, "match"),
        ({"type": "regex"}, "pattern"),
        ({"type": "regex", "pattern": "("}, "bad pattern"),
        ({"type": "exact", "bogus": 1}, "bogus"),
        ({"type": "exact", "timeout_s": 0}, "timeout_s"),
        (["numeric"], "mapping"),
    ],
)
def test_bad_specs_name_the_parameter(spec, message):
    with pytest.raises(VerifierError, match=message):
        check_spec(spec)


def test_references_the_verifier_cannot_read():
    assert "not a number" in check_reference({"type": "numeric"}, "seven", None)
    assert "empty" in check_reference({"type": "exact"}, "  ", None)
    assert "letter" in check_reference({"type": "choice"}, "E", ["a", "b"])
    assert "choices" in check_reference({"type": "choice"}, "A", None)
    assert check_reference({"type": "numeric"}, "1,234.5", None) is None
