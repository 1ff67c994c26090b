"""Training fixtures: a tiny-model parent contestant and frozen preference snapshots written straight to the db."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.training import pair_rows, register_tiny_parent
from vibestudio.annotation.snapshots import write_snapshot


@pytest.fixture
def make_snapshot(db):
    def make(n: int = 8, rows: list[dict] | None = None) -> str:
        with db.session() as s:
            return write_snapshot(s, rows if rows is not None else pair_rows(n), {"source": "test"}).hash

    return make


@pytest.fixture
def tiny_parent(db, tiny_model_dir: Path) -> int:
    return register_tiny_parent(db, tiny_model_dir)
