"""Tiny random models for tests, benchmarks and smoke runs: the real SmolLM2 tokenizer, a random Llama body."""

from __future__ import annotations

from pathlib import Path


def ensure_tokenizer_dir(target: Path) -> Path:
    """Only the SmolLM2 tokenizer (read from the embedded GGUF) saved in ``target``, once; fast."""
    if (target / "tokenizer_config.json").exists():
        return target
    from transformers import AutoTokenizer

    from vibestudio.arena.default_model import default_gguf_path

    gguf = default_gguf_path()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    target.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(target)
    return target


def make_tiny_llama(
    tokenizer_dir: str | Path, out: Path, hidden: int = 64, layers: int = 2, seed: int = 0
) -> Path:
    """A tiny random Llama with the given tokenizer, saved like a checkpoint."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def gguf_parent_weights(hf_dir: str | Path, out: Path, ftype: int) -> tuple[Path, Path]:
    """(GGUF, HF weights) of a parent that plays a GGUF: ``hf_dir`` converted at llama.cpp file type ``ftype`` into
    ``out``, and that file's dequantized weights saved as an HF checkpoint in ``out / "hf"``, what a child of it is
    trained from (as the embedded SmolLM2's HF conversion is of its Q4_1 file)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from vibestudio.arena.default_model import default_gguf_path
    from vibestudio.training.publishing.gguf_export import convert, file_type_name

    out.mkdir(parents=True, exist_ok=True)
    name = f"parent.{file_type_name(ftype).lower()}.gguf"
    gguf = convert(str(hf_dir), None, default_gguf_path(), out / name, ftype=ftype).path
    model = AutoModelForCausalLM.from_pretrained(str(out), gguf_file=gguf.name, dtype=torch.float32)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out / "hf")
    AutoTokenizer.from_pretrained(hf_dir).save_pretrained(out / "hf")
    return gguf, out / "hf"
