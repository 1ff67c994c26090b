"""Shared fixtures: an isolated data home per test, a migrated database (SQLite, and PostgreSQL with
``-m postgres``), a tiny random model."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
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


PG_URL = os.environ.get("VIBESTUDIO_TEST_PG_URL")


@contextmanager
def pg_schema(base_url: str) -> Iterator[str]:
    """A fresh PostgreSQL schema for one test; yields a URL whose connections use it, drops it afterwards."""
    from sqlalchemy import create_engine, text

    from db.session import Database

    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(Database(base_url).url)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{base_url}{'&' if '?' in base_url else '?'}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path):
    """A migrated database: SQLite in a temp dir, and (``-m postgres``) a fresh schema on VIBESTUDIO_TEST_PG_URL."""
    from db.session import Database

    if request.param == "sqlite":
        database = Database(f"sqlite:///{tmp_path / 'test.sqlite'}")
        database.migrate()
        yield database
        database.dispose()
        return
    if not PG_URL:
        pytest.skip("VIBESTUDIO_TEST_PG_URL not set")
    with pg_schema(PG_URL) as url:
        database = Database(url)
        database.migrate()
        yield database
        database.dispose()


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from arena.default_model import ensure_tokenizer_dir

    return ensure_tokenizer_dir(tmp_path_factory.mktemp("tok") / "smollm2-tokenizer")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, tokenizer_dir: Path) -> Path:
    """A tiny random Llama (hidden 64, 2 layers) with the real SmolLM2 tokenizer, saved like a checkpoint."""
    from arena.default_model import make_tiny_llama

    return make_tiny_llama(tokenizer_dir, tmp_path_factory.mktemp("tiny") / "tiny-llama")
