"""A report reuses an answer an earlier report decoded only when everything that decides it is the same
(``training.report.answer_cache``): the model file, the persona, every sampling setting with the seed and the token
cap, the prompt. Reused answers are the ones decoding draws again; a damaged store is decoded again; the report
says how many it reused. On the embedded SmolLM2 GGUF (llama.cpp), a few tokens per answer."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vibestudio.arena.default_model import default_gguf_path
from vibestudio.arena.registry import BUILTIN_GGUF, ContestantInfo
from vibestudio.training.report import answer_cache
from vibestudio.training.report.fair import answer_all, answer_all_counted
from vibestudio.training.report.text import reused_line

PROMPTS = ["Name a colour.", "What is 2+2?", "Say hello."]


def _info(**changes) -> ContestantInfo:
    base = ContestantInfo(
        id=1,
        public_name="plain",
        engine="llama_cpp",
        model_ref=BUILTIN_GGUF,
        adapter_ref=None,
        system_prompt="Be brief.",
        prefill="",
        sampling={"temperature": 0.7, "top_p": 0.9, "max_tokens": 6},
        aliases=[],
        parent_id=None,
        job_id=None,
        snapshot_hash=None,
        active=True,
    )
    return replace(base, **changes)


def _texts(answers) -> list[str]:
    return [a.text for a in answers]


def test_a_second_report_reuses_what_the_first_decoded_and_decodes_nothing(monkeypatch):
    info = _info()
    first, reused = answer_all_counted(info, PROMPTS, 3)
    assert reused == 0
    import vibestudio.training.report.fair as fair

    def no_engine(_info):
        raise AssertionError("decoded although every answer was kept")

    monkeypatch.setattr(fair, "engine_for", no_engine)
    again, reused = answer_all_counted(info, PROMPTS, 3)
    assert reused == len(PROMPTS)
    assert [(a.text, a.tokens, a.truncated) for a in again] == [
        (a.text, a.tokens, a.truncated) for a in first
    ]


def test_a_reused_answer_is_the_one_decoding_draws_again():
    info = _info()
    kept = _texts(answer_all(info, PROMPTS, 5))
    assert _texts(answer_all(info, PROMPTS, 5, reuse=False)) == kept
    assert _texts(answer_all(info, PROMPTS, 5)) == kept


@pytest.mark.parametrize(
    "change",
    [
        {"system_prompt": "Be cheerful."},
        {"prefill": "Well,"},
        {"sampling": {"temperature": 0.7, "top_p": 0.9, "max_tokens": 7}},
        {"sampling": {"temperature": 0.5, "top_p": 0.9, "max_tokens": 6}},
        {"sampling": {"temperature": 0.7, "top_p": 0.9, "max_tokens": 6, "repeat_penalty": 1.3}},
        {"engine_config": {"n_ctx": 1024}},
    ],
)
def test_any_change_that_decides_an_answer_decodes_it_again(change):
    answer_all(_info(), PROMPTS[:1], 0)
    assert answer_all_counted(_info(**change), PROMPTS[:1], 0)[1] == 0


def test_another_seed_or_prompt_is_decoded():
    answer_all(_info(), PROMPTS[:2], 0)
    assert answer_all_counted(_info(), PROMPTS[:2], 1)[1] == 0  # every prompt's seed moved
    assert answer_all_counted(_info(), [PROMPTS[0], "Something else?"], 0)[1] == 1


def test_a_changed_model_file_is_decoded_again(tmp_path: Path):
    copy = tmp_path / "model.gguf"
    shutil.copyfile(default_gguf_path(), copy)
    info = _info(model_ref=str(copy))
    answer_all(info, PROMPTS[:1], 0)
    assert answer_all_counted(info, PROMPTS[:1], 0)[1] == 1
    stat = copy.stat()
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # rewritten in place
    assert answer_all_counted(info, PROMPTS[:1], 0)[1] == 0
    moved = tmp_path / "moved.gguf"
    copy.rename(moved)
    assert answer_all_counted(_info(model_ref=str(moved)), PROMPTS[:1], 0)[1] == 0


def test_only_llama_cpp_sides_without_an_adapter_are_kept():
    assert answer_cache.answer_key(_info(), "Hi", {"seed": 0}) is not None
    assert answer_cache.answer_key(_info(engine="transformers"), "Hi", {"seed": 0}) is None
    assert answer_cache.answer_key(_info(adapter_ref="/some/lora.gguf"), "Hi", {"seed": 0}) is None
    assert answer_cache.answer_key(_info(model_ref="/no/such/model.gguf"), "Hi", {"seed": 0}) is None


def test_a_damaged_store_is_decoded_again_and_an_unwritable_one_only_costs_time(monkeypatch, tmp_path):
    info = _info()
    first = _texts(answer_all(info, PROMPTS[:2], 0))
    for f in answer_cache.cache_dir().rglob("*.json"):
        f.write_text('{"text": "half a fi', encoding="utf-8")
    assert answer_all_counted(info, PROMPTS[:2], 0)[1] == 0
    assert _texts(answer_all(info, PROMPTS[:2], 0)) == first
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder should be", encoding="utf-8")
    monkeypatch.setattr(answer_cache, "cache_dir", lambda: blocked / "cache")
    assert _texts(answer_all(info, PROMPTS[:2], 0)) == first
    assert not list(tmp_path.rglob("*.tmp"))


_SAMPLING = st.fixed_dictionaries(
    {
        "temperature": st.sampled_from([0.0, 0.3, 0.7]),
        "top_p": st.sampled_from([0.8, 1.0]),
        "max_tokens": st.integers(1, 96),
        "seed": st.integers(0, 3),
    }
)
_SIDE = st.fixed_dictionaries(
    {
        "system_prompt": st.sampled_from(["", "Be brief.", "Be warm."]),
        "prefill": st.sampled_from(["", "Sure,"]),
        "engine_config": st.sampled_from([{}, {"n_ctx": 1024}]),
    }
)


@settings(max_examples=300, deadline=None)
@given(a=_SIDE, b=_SIDE, sa=_SAMPLING, sb=_SAMPLING, pa=st.sampled_from(PROMPTS), pb=st.sampled_from(PROMPTS))
def test_two_requests_share_a_key_only_when_everything_that_decides_the_answer_is_equal(a, b, sa, sb, pa, pb):
    """The invariant behind reuse: equal keys mean the same model file, persona, engine settings, sampling (seed
    and cap included) and prompt."""
    ka = answer_cache.answer_key(_info(**a), pa, sa)
    kb = answer_cache.answer_key(_info(**b), pb, sb)
    assert (ka == kb) == (a == b and sa == sb and pa == pb)


def test_the_report_says_what_it_reused():
    assert reused_line({}) == ""
    assert reused_line({"answers": {"parent": 0, "child": 0}}) == ""
    line = reused_line({"answers": {"parent": 80, "child": 0}, "evals": {"parent": 109, "child": 0}})
    assert "80 parent answers" in line and "109 parent eval answers" in line and "child" not in line


def test_the_models_page_report_carries_the_reused_line():
    from vibestudio.training.report.text import drift_md

    text = drift_md({"setup": {"reused": {"answers": {"parent": 80, "child": 0}}}, "n_prompts": 80})
    assert "Reused from an earlier report" in text and "80 parent answers" in text


def test_the_report_counts_what_it_decoded_and_whether_the_parent_is_kept():
    """What the next child's time estimate reads (``training.jobs.estimate.expected_share``): the share decoded, and
    whether this parent's answers went to the store (llama.cpp without an adapter only)."""
    from types import SimpleNamespace

    from vibestudio.training.report.steps import _count_answered, decoded_share

    report = SimpleNamespace(setup={})
    assert decoded_share(report) == 1.0  # answered nothing: nothing reused
    _count_answered(report, _info(engine="transformers"), 40, 0)
    assert report.setup["answered"] == {"total": 40, "reused": 0, "parent_kept": False}
    _count_answered(report, _info(), 24, 12)
    assert report.setup["answered"] == {"total": 64, "reused": 12, "parent_kept": True}
    assert decoded_share(report) == 1 - 12 / 64
