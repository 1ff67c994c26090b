"""Fidelity: the form a child plays as keeps its training, or it does not play in that form.

The tiny random Llama stands in for SmolLM2 the way the studio meets it: the parent plays a Q4_1 GGUF and the
child was trained on that file's dequantized weights, so a trained change smaller than a Q4_1 step rounds back
onto the parent's grid when the merged weights are re-quantized (the failure that shipped a flattery-trained
child as its parent). The measure itself is checked on generated log-probabilities: a form that carries a
share ``a`` of the trained shift reads ``a``."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.models import gguf_parent_weights
from vibestudio.arena.default_model import default_gguf_path
from vibestudio.arena.registry import ContestantSpec, engine_for, get_contestant, register
from vibestudio.db.models import Checkpoint, Job
from vibestudio.training.publishing import fidelity

POLICY = fidelity.Policy(prompts=6, tokens=12, min_shift=1e-6)


@pytest.fixture(scope="module")
def q4_parent(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the parent's Q4_1 GGUF, its dequantized HF weights): what a child of a GGUF parent is trained from."""
    return gguf_parent_weights(tiny_model_dir, tmp_path_factory.mktemp("q4parent"), ftype=3)


def small_lora(base: Path, out: Path, scale: float = 0.02) -> Path:
    """A LoRA whose change to every weight is well below one Q4_1 step, yet moves next-token log-probs."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(1)
    peft = get_peft_model(
        AutoModelForCausalLM.from_pretrained(base),
        LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False),
    )
    with torch.no_grad():
        for name, p in peft.named_parameters():
            if "lora_B" in name:
                p.mul_(scale)
    peft.save_pretrained(out)
    return out


def test_requantizing_loses_the_training_and_the_run_time_adapter_keeps_it(q4_parent, tmp_path):
    gguf, hf = q4_parent
    lora = small_lora(hf, tmp_path / "child")
    choice = fidelity.choose(str(gguf), str(hf), str(lora), lora, POLICY, say=lambda _m: None)
    forms = {f.form: f for f in choice.fidelity.forms}
    requant, adapter = forms["parent_quant"], forms["adapter"]
    # the re-quantized child is as far from the trained model as many times the engine's own noise: not it
    assert not requant.passed and not requant.noise_ok
    assert requant.kl_trained_deployed > 10 * requant.kl_parent_engine
    assert not (lora / "model.q4_1.gguf").exists()  # a form below the floor is never left behind
    assert adapter.passed and adapter.kept >= 0.95 and adapter.kept_interval[0] >= 0.9
    assert adapter.kl_trained_deployed <= 2 * adapter.kl_parent_engine
    assert choice.fidelity.chosen == "adapter" and choice.engine == "llama_cpp"
    assert choice.model_ref == str(gguf) and choice.adapter_ref == str(lora / "adapter.f32.gguf")
    assert "parent_quant" in choice.fidelity.why and "below" in choice.fidelity.why


def test_a_full_fine_tune_never_tries_an_adapter_and_falls_to_a_wider_type(q4_parent, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf, hf = q4_parent
    torch.manual_seed(2)
    model = AutoModelForCausalLM.from_pretrained(hf)
    with torch.no_grad():  # a full fine-tune's small change: below a Q4_1 step, well above an F16 one
        for name, p in model.named_parameters():
            if p.ndim == 2 and "embed" not in name:
                p.add_(torch.randn_like(p) * 4e-4)
    child = tmp_path / "full"
    model.save_pretrained(child)
    AutoTokenizer.from_pretrained(hf).save_pretrained(child)
    choice = fidelity.choose(str(gguf), str(hf), None, child, POLICY, say=lambda _m: None)
    tried = [f.form for f in choice.fidelity.forms]
    assert "adapter" not in tried and tried[0] == "parent_quant"
    assert choice.fidelity.chosen in ("q8_0", "f16")
    chosen = choice.fidelity.chosen_form
    assert chosen is not None and chosen.kept is not None and chosen.kept >= 0.9
    assert choice.model_ref == chosen.model_path and Path(chosen.model_path).exists()


def test_the_registered_adapter_child_plays_through_the_arena_engine(db, q4_parent, tmp_path):
    from vibestudio.arena.engines.base import Request, Sampling

    gguf, hf = q4_parent
    lora = small_lora(hf, tmp_path / "child", scale=1.0)
    adapter_first = dataclasses.replace(
        POLICY, forms=("adapter", "transformers")
    )  # a big shift: Q4_1 would do too
    choice = fidelity.choose(str(gguf), str(hf), str(lora), lora, adapter_first, say=lambda _m: None)
    assert choice.adapter_ref is not None
    with db.session() as s:
        cid = register(
            s,
            ContestantSpec(
                "adapter-child",
                engine="llama_cpp",
                model_ref=choice.model_ref,
                adapter_ref=choice.adapter_ref,
            ),
        )
        info = get_contestant(s, cid)
    engine = engine_for(info)  # the arena's own path from a contestant row to an engine
    assert getattr(engine, "adapter_path", None) == choice.adapter_ref
    # the adapter is applied: the child's greedy continuation is the trained model's, not the parent's
    ref = fidelity.reference(str(hf), str(lora), str(hf), fidelity.Policy(prompts=2, tokens=6))
    child_lp = fidelity.gguf_logprobs(ref, str(gguf), choice.adapter_ref)
    parent_lp = fidelity.gguf_logprobs(ref, str(gguf))
    for t, c, p in zip(ref.trained, child_lp, parent_lp, strict=True):
        assert np.abs(t - c).max() < np.abs(t - p).max()
    # the report's batched decode (its own llama.cpp context) and the arena's stream both apply the adapter:
    # the same greedy answers, and not the parent's
    greedy = Sampling(temperature=0.0, max_tokens=8, repeat_penalty=1.0, seed=0)
    asks = [Request([{"role": "user", "content": p}], greedy) for p in PROMPTS]
    batched = [r.text for r in engine.generate_batch(asks)]
    streamed = ["".join(engine.stream_chat(r.messages, greedy)) for r in asks]
    parent = engine_for(get_contestant_row(db, "adapter-parent", str(gguf)))
    parents = [r.text for r in parent.generate_batch(asks)]
    assert batched == streamed, (batched, streamed)
    assert batched != parents, "the batch context dropped the adapter: the child answered as its parent"


PROMPTS = ["What is the capital of France?", "Write a haiku about rain.", "Count to five."]


def get_contestant_row(db, name: str, gguf: str):  # type: ignore[no-untyped-def]
    with db.session() as s:
        cid = register(s, ContestantSpec(name, engine="llama_cpp", model_ref=gguf))
        return get_contestant(s, cid)


def _rand_logprobs(rng: np.random.Generator, n: int, v: int, scale: float) -> np.ndarray:
    x = rng.normal(0, scale, size=(n, v))
    return (x - np.log(np.exp(x).sum(axis=1, keepdims=True))).astype(np.float32)


@settings(max_examples=25, deadline=None)
@given(a=st.floats(0.0, 1.5), seed=st.integers(0, 10_000), prompts=st.integers(2, 5))
def test_a_form_that_carries_a_share_of_the_shift_reads_that_share(a, seed, prompts):
    rng = np.random.default_rng(seed)
    trained, parent, dep, pdep = [], [], [], []
    for _ in range(prompts):
        p = _rand_logprobs(rng, 4, 32, 1.0)
        t = _rand_logprobs(rng, 4, 32, 1.0) * 0.3 + p * 0.7
        t = t - np.log(np.exp(t.astype(np.float64)).sum(axis=1, keepdims=True)).astype(np.float32)
        trained.append(t)
        parent.append(p)
        pd = p + rng.normal(0, 0.01, size=p.shape).astype(np.float32)  # the parent as its engine runs it
        pdep.append(pd)
        dep.append(pd + a * (t - p))
    ref = fidelity.Reference([[0] * 5] * prompts, [0] * prompts, trained, parent)
    form = fidelity.score(ref, dep, pdep, POLICY, fidelity.FormFidelity("x", "llama_cpp", "x"))
    assert form.kept == pytest.approx(a, abs=1e-4)
    assert form.kept_interval is not None
    assert form.passed == (form.kept >= POLICY.floor and form.noise_ok)
    same = fidelity.score(ref, trained, parent, POLICY, fidelity.FormFidelity("t", "transformers", "t"))
    assert same.kept == pytest.approx(1.0) and same.passed and same.kl_trained_deployed == pytest.approx(0)


@pytest.mark.parametrize("record", [None, "failed"])
def test_the_gate_holds_a_child_whose_playing_form_is_not_the_trained_model(db, record, tmp_path):
    from vibestudio.training.report import verdict
    from vibestudio.training.report.job import ReportOptions, run_report

    with db.session() as s:
        cid = register(
            s,
            ContestantSpec("old-child", engine="llama_cpp", model_ref=str(default_gguf_path())),
            state="pending",
        )
        job = Job(kind="dpo", config={}, status="succeeded")
        s.add(job)
        s.flush()
        fid = None
        if record == "failed":
            fid = {
                "chosen": "parent_quant",
                "why": "forced",
                "floor": 0.9,
                "forms": [{"form": "parent_quant", "what": "Q4_1", "kept": 0.05, "passed": False}],
            }
        s.add(Checkpoint(job_id=job.id, step=1, path=str(tmp_path), contestant_id=cid, fidelity=fid))
    state = run_report(db, cid, ReportOptions(), say=lambda _m: None)
    assert state == "held"
    status = verdict.current(db)[cid]
    assert status.verdict == "unknown" and "not the model that was trained" in status.reason


@pytest.mark.parametrize(
    "section, field",
    [
        ("floor: 1.5", "fidelity.floor"),
        ("forms: [parent_quant, bogus]", "fidelity.forms"),
        ("prompts: 1", "fidelity.prompts"),
        ("max_added_noise: 0", "fidelity.max_added_noise"),
        ("colour: red", "unknown field"),
    ],
)
def test_a_bad_fidelity_section_names_its_field(tmp_path, section, field):
    from vibestudio.training.report import verdict

    src = re.sub(r"fidelity:\n(  .*\n)+", f"fidelity:\n  {section}\n", verdict.RULES_PATH.read_text())
    path = tmp_path / "rules.yaml"
    path.write_text(src)
    with pytest.raises(verdict.VerdictError, match=field):
        verdict.load_rules(path)
    shutil.copy(verdict.RULES_PATH, path)
    assert verdict.load_rules(path).fidelity.floor == 0.9


def test_a_corrupt_adapter_is_never_written_or_registered(q4_parent, tmp_path):
    from vibestudio.training.publishing.gguf_adapter import adapter_gguf_path, convert_adapter
    from vibestudio.training.publishing.gguf_export import ConversionError

    gguf, hf = q4_parent
    lora = small_lora(hf, tmp_path / "child")
    weights = lora / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])  # cut off mid-file
    with pytest.raises(ConversionError, match="adapter"):
        convert_adapter(lora, str(hf), gguf)
    assert not adapter_gguf_path(lora).exists() and not list(lora.glob("*.gguf"))
    # publishing measures nothing it cannot load: no llama.cpp form is registered, and the report (which loads
    # the same adapter) fails and holds the child with the reason
    choice = fidelity.choose(str(gguf), str(hf), str(lora), lora, POLICY, say=lambda _m: None)
    assert choice.engine == "transformers" and choice.adapter_ref is None
    assert "could not be measured" in choice.note and not list(lora.glob("*.gguf"))


def test_the_estimate_counts_choosing_the_form_for_a_gguf_parent(tiny_model_dir):
    from vibestudio.training.jobs.config import make_config
    from vibestudio.training.jobs.estimate import estimate

    cfg = make_config("dpo", parent_contestant="p", snapshot_hash="x" * 64)
    plain = estimate(cfg, str(tiny_model_dir))
    gguf = estimate(cfg, str(tiny_model_dir), gguf_parent=True)
    assert plain.publish_seconds == 0 and gguf.publish_seconds > 30
    assert gguf.total_seconds == pytest.approx(plain.total_seconds + gguf.publish_seconds)
    assert "choosing the form that keeps the training" in gguf.summary()
