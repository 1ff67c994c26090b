"""Children on the arena's engine: a checkpoint written as GGUF at its parent's quantization answers as the
transformers engine does, a failed or corrupt conversion is never registered, and ``models export`` writes both
deployable forms. On the tiny random Llama (SmolLM2's tokenizer; its GGUF parent is made from the embedded
SmolLM2 GGUF's tokenizer and chat template)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from vibestudio.arena.default_model import default_gguf_path
from vibestudio.arena.engines.base import Request, Sampling
from vibestudio.arena.registry import ContestantSpec, get_contestant, register
from vibestudio.db.models import Checkpoint, Job
from vibestudio.training.jobs.config import make_config
from vibestudio.training.jobs.metrics import MetricWriter
from vibestudio.training.jobs.preflight import preflight
from vibestudio.training.objectives.context import JobContext, TrainResult
from vibestudio.training.publishing import gguf_export
from vibestudio.training.publishing.gguf_export import ConversionError, convert
from vibestudio.training.publishing.publish import publish

PROMPTS = ["What is the capital of France?", "Write a haiku about rain.", "Count to five."]
GREEDY = Sampling(temperature=0.0, max_tokens=8, repeat_penalty=1.0, seed=0)


@pytest.fixture(scope="module")
def lora_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LoRA adapter on the tiny model with random (non-zero) weights: merging it changes every projection."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(1)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    cfg = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False)
    out = tmp_path_factory.mktemp("lora") / "output"
    get_peft_model(model, cfg).save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def parents(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny model as GGUF parents: F32 (for exact comparisons) and Q4_1 (the embedded model's type)."""
    folder = tmp_path_factory.mktemp("parents")
    template = default_gguf_path()
    return {
        "f32": convert(str(tiny_model_dir), None, template, folder / "tiny.f32.gguf", ftype=0).path,
        "q4_1": convert(str(tiny_model_dir), None, template, folder / "tiny.q4_1.gguf", ftype=3).path,
    }


def _answers(engine) -> list[str]:
    return [
        r.text
        for r in engine.generate_batch([Request([{"role": "user", "content": p}], GREEDY) for p in PROMPTS])
    ]


def test_child_gguf_answers_as_the_transformers_engine(tiny_model_dir, lora_dir, parents, tmp_path):
    from vibestudio.arena.engines.hf import TransformersEngine
    from vibestudio.arena.engines.llamacpp import LlamaCppEngine

    done = convert(str(tiny_model_dir), str(lora_dir), parents["f32"], tmp_path / "child.gguf")
    assert done.file_type == "F32" and not done.reused
    ours = _answers(LlamaCppEngine(str(done.path)))
    theirs = _answers(TransformersEngine(str(tiny_model_dir), str(lora_dir)))
    assert all(ours) and ours == theirs  # greedy: the same tokens, so the same text
    parent = _answers(LlamaCppEngine(str(parents["f32"])))
    assert parent != ours  # the LoRA was merged (the parent answers otherwise)
    assert convert(str(tiny_model_dir), str(lora_dir), parents["f32"], tmp_path / "child.gguf").reused


def test_quantized_child_has_its_parents_types(tiny_model_dir, lora_dir, parents, tmp_path):
    import gguf

    done = convert(str(tiny_model_dir), str(lora_dir), parents["q4_1"], tmp_path / "child.gguf")
    assert done.file_type == "Q4_1"
    types = {t.name: t.tensor_type.name for t in gguf.GGUFReader(str(done.path)).tensors}
    assert types == {t.name: t.tensor_type.name for t in gguf.GGUFReader(str(parents["q4_1"])).tensors}
    assert types["blk.0.attn_q.weight"] == "Q4_1" and types["blk.0.attn_norm.weight"] == "F32"


def test_a_corrupt_conversion_never_reaches_its_name(
    tiny_model_dir, lora_dir, parents, tmp_path, monkeypatch
):
    def broken(src: Path, dst: Path, ftype: int, like: Path | None = None) -> None:
        dst.write_bytes(src.read_bytes()[: src.stat().st_size // 2])  # a partial file, as a crash leaves one

    monkeypatch.setattr(gguf_export, "quantize", broken)
    target = tmp_path / "child.gguf"
    with pytest.raises(ConversionError, match="could not load"):
        convert(str(tiny_model_dir), str(lora_dir), parents["q4_1"], target)
    assert not target.exists() and [p.name for p in tmp_path.iterdir()] == ["child.gguf.lock"]


def test_a_corrupt_file_at_the_name_is_replaced(tiny_model_dir, lora_dir, parents, tmp_path):
    target = tmp_path / "child.gguf"
    target.write_bytes(parents["f32"].read_bytes()[:4096])
    done = convert(str(tiny_model_dir), str(lora_dir), parents["f32"], target)
    assert not done.reused and target.stat().st_size == parents["f32"].stat().st_size


def test_foreign_tokenizer_is_refused(tiny_model_dir, parents, tmp_path, monkeypatch):
    from transformers import AutoTokenizer

    real = AutoTokenizer.from_pretrained

    def shuffled(path, *a, **kw):
        tok = real(path, *a, **kw)
        tok.add_tokens(["<not-in-the-template>"])
        return tok

    monkeypatch.setattr(AutoTokenizer, "from_pretrained", shuffled)
    with pytest.raises(ConversionError, match="tokenizer"):
        convert(str(tiny_model_dir), None, parents["f32"], tmp_path / "x.gguf")
    assert not (tmp_path / "x.gguf").exists()


def _publish_child(db, tiny_model_dir, lora_dir, parent_gguf: Path, tmp_path: Path, make_snapshot):
    with db.session() as s:
        register(
            s,
            ContestantSpec(
                "gguf-parent", engine="llama_cpp", model_ref=str(parent_gguf), sampling={"max_tokens": 8}
            ),
        )
    cfg = make_config(
        "dpo",
        parent_contestant="gguf-parent",
        base_model=str(tiny_model_dir),
        snapshot_hash=make_snapshot(4),
        output_name="gguf-child",
    )
    with db.session() as s:
        checked = preflight(s, cfg)
        job = Job(kind=cfg.kind, config=cfg.to_dict(), status="running")
        s.add(job)
        s.flush()
        job_id = job.id
    folder = tmp_path / "output"
    import shutil

    shutil.copytree(lora_dir, folder)
    ctx = JobContext(job_id, cfg, checked, tmp_path, MetricWriter(db, job_id))
    out = publish(db, ctx, TrainResult(folder, True, 3, 1.0, time.perf_counter()))
    with db.session() as s:
        return out, get_contestant(s, out.contestant_id)


def test_child_of_a_gguf_parent_plays_the_fastest_form_that_keeps_its_training(
    db, tiny_model_dir, lora_dir, parents, tmp_path, make_snapshot
):
    out, child = _publish_child(db, tiny_model_dir, lora_dir, parents["q4_1"], tmp_path, make_snapshot)
    assert child.engine == "llama_cpp"
    with db.session() as s:
        record = s.scalar(select(Checkpoint.fidelity).where(Checkpoint.contestant_id == child.id))
    assert record is not None and record["forms"], "every publish records what it measured"
    chosen = next(f for f in record["forms"] if f["form"] == record["chosen"])
    assert chosen["passed"] and chosen["kept"] >= record["floor"] and chosen["kept_interval"]
    for f in record["forms"]:  # forms tried before the chosen one failed, and their files are gone
        if f is not chosen:
            assert not f["passed"] and not Path(f["model_path"] or "/nonexistent").exists()
    if record["chosen"] == "adapter":
        assert child.model_ref == str(parents["q4_1"]) and child.adapter_ref.endswith("adapter.f32.gguf")
    else:
        assert child.model_ref.endswith(".gguf") and child.adapter_ref is None
    assert "Plays on llama.cpp as " in child.description and "of the trained shift" in child.description
    assert child.state == "pending" and out.needs_report  # its report and gate still decide


def test_unmeasurable_forms_publish_on_transformers(db, tiny_model_dir, lora_dir, tmp_path, make_snapshot):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 60)  # a parent file no reader can read
    out, child = _publish_child(db, tiny_model_dir, lora_dir, broken, tmp_path, make_snapshot)
    assert child.engine == "transformers" and child.model_ref == str(tiny_model_dir)
    assert child.adapter_ref == str(tmp_path / "output")
    assert "Plays on the transformers engine: the other forms could not be measured (" in child.description
    assert child.state == "pending" and out.needs_report
    assert not list((tmp_path / "output").glob("*.gguf"))


def test_models_export_gguf_and_merged(tiny_model_dir, lora_dir, parents, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from tests.helpers.training import pair_rows
    from vibestudio.annotation.snapshots import write_snapshot
    from vibestudio.db.session import Database
    from vibestudio.studio.cli import app

    db = Database()  # the data home's database, the one the command opens
    db.migrate()
    with db.session() as s:
        digest = write_snapshot(s, pair_rows(4), {"source": "test"}).hash
    _publish_child(db, tiny_model_dir, lora_dir, parents["q4_1"], tmp_path, lambda n: digest)
    run = CliRunner().invoke
    r = run(app, ["models", "export", "gguf-child", "--format", "gguf", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    with db.session() as s:
        child = get_contestant(s, "gguf-child")
    if child.adapter_ref:  # it plays its parent's file with its LoRA at run time: both, as it plays
        folder = tmp_path / "out" / "gguf-child-gguf"  # beside the merged export's folder, never in its way
        assert (folder / "model.gguf").read_bytes() == parents["q4_1"].read_bytes()
        assert (folder / "adapter.gguf").read_bytes() == Path(child.adapter_ref).read_bytes()
    else:
        assert (tmp_path / "out" / "gguf-child.gguf").read_bytes() == Path(child.model_ref).read_bytes()
    assert "of the trained shift" in r.output  # the export says how much of the training it keeps
    r = run(app, ["models", "export", "gguf-child", str(tmp_path / "out"), "--format", "merged"])
    assert r.exit_code == 0, r.output
    merged = AutoModelForCausalLM.from_pretrained(tmp_path / "out" / "gguf-child")
    _, expected = gguf_export.load_merged(str(tiny_model_dir), str(lora_dir))
    for (name, a), b in zip(merged.state_dict().items(), expected.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    assert (tmp_path / "out" / "gguf-child" / "tokenizer_config.json").exists()
    r = run(app, ["models", "export", "gguf-child", str(tmp_path / "out"), "--format", "merged"])
    assert r.exit_code == 1 and "exists" in r.output  # never written over
    r = run(app, ["models", "export", "gguf-child", str(tmp_path / "out2"), "--format", "onnx"])
    assert r.exit_code == 1 and "unknown" in r.output
    r = run(app, ["models", "export", "nobody", str(tmp_path / "out2"), "--format", "gguf"])
    assert r.exit_code == 1


def test_llama_cpp_batch_decodes_as_the_stream_does(parents):
    """A report's answers on llama.cpp come from sequences decoded together: greedily the very tokens one
    stream each gives; sampled, the same text again for the same seed; the token cap is kept and said."""
    from vibestudio.arena.engines.ask import ask_each
    from vibestudio.arena.engines.base import EngineError
    from vibestudio.arena.engines.llamacpp import LlamaCppEngine

    engine = LlamaCppEngine(str(parents["f32"]))
    asks = [Request([{"role": "user", "content": p}], GREEDY) for p in PROMPTS * 2]
    batched = engine.generate_batch(asks)
    assert [r.text for r in batched] == [r.text for r in ask_each(engine, asks)]
    assert all(r.tokens == 8 and r.truncated for r in batched)  # a random model never stops by itself
    warm = Sampling(temperature=0.9, max_tokens=6, seed=7)
    ask = [Request([{"role": "user", "content": "Hi"}], warm, "Well,")]
    twice = [engine.generate_batch(ask)[0].text for _ in "ab"]
    assert twice[0] == twice[1] and twice[0].startswith("Well,")
    with pytest.raises(EngineError) as err:
        engine.generate_batch([Request([{"role": "user", "content": "word " * 3000}], GREEDY)])
    assert err.value.kind == "too_long"
