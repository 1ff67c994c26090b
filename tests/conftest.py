"""Shared fixtures: an isolated data home per test, a migrated SQLite database, a tiny random model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("VIBESTUDIO_HOME", str(home))
    monkeypatch.delenv("VIBESTUDIO_DATABASE_URL", raising=False)
    return home


@pytest.fixture
def db(tmp_path: Path):
    from db.session import Database

    database = Database(f"sqlite:///{tmp_path / 'test.sqlite'}")
    database.migrate()
    yield database
    database.dispose()


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from arena.models import ensure_tokenizer_dir

    return ensure_tokenizer_dir(tmp_path_factory.mktemp("tok") / "smollm2-tokenizer")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, tokenizer_dir: Path) -> Path:
    """A tiny random Llama (hidden 64, 2 layers) with the real SmolLM2 tokenizer, saved like a checkpoint."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    out = tmp_path_factory.mktemp("tiny") / "tiny-llama"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out
