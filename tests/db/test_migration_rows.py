"""Rows carried through every migration: a database is built one revision at a time from the first, and each
revision that adds a table gets representative rows in it at once (every column filled: numbers, text at its
length limit's scale, JSON, times, booleans both ways, foreign keys pointing at earlier rows). After every step
each row written so far is read back with every column it was written with still there; at head the rows load
through the models; then the database goes down again step by step to the first revision, and the rows of each
table that still exists are read back again. SQLite always, PostgreSQL (``-m postgres``) on VIBESTUDIO_TEST_PG_URL.

Migrations that change data on purpose are allowed their change, and only that: 0010 turns ``active`` into a
lifecycle ``state`` (an inactive contestant becomes hidden, with a logged event) and back; 0011 fills
``battles.active_at`` from ``created_at``; 0012 deletes later duplicate labels of one assignment (the rows here
give each label its own assignment, so none is a duplicate and all must survive)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory

from db.models import Base
from db.session import Database, alembic_config
from tests.helpers.postgres import PG_URL, pg_schema

ROWS = 2  # rows per table: two, so a foreign key can point at a row other than the first, booleans go both ways
#: Columns whose values the studio reads as a vocabulary, given a value it knows (any other column gets a
#: generated value of its type).
KNOWN = {
    ("votes", "outcome"): ["a", "b"],
    ("contestant_events", "action"): ["hide", "restore"],  # the two actions every revision knows
    ("users", "role"): ["admin", "annotator"],
    ("battles", "mode"): ["battle", "side_by_side"],
    ("battles", "status"): ["done", "open"],
    ("jobs", "status"): ["done", "failed"],
    ("jobs", "kind"): ["dpo", "reward"],
    ("contestants", "engine"): ["llama_cpp", "openai"],
    ("contestants", "state"): ["released", "hidden"],
}
#: Columns a migration rewrites on purpose (see the module docstring): not compared after that migration.
REWRITTEN = {("battles", "active_at"), ("contestants", "state")}


def _order(url: str) -> list[str]:
    """Every revision from the first to head, each after all it revises (the early fan in file order)."""
    script = ScriptDirectory.from_config(alembic_config(url))
    revs = list(reversed(list(script.walk_revisions("base", "heads"))))
    return [r.revision for r in revs]


def _value(table: sa.Table, col: sa.Column, i: int, ids: dict[str, list[int]]) -> Any:
    if (table.name, col.name) in KNOWN:
        return KNOWN[(table.name, col.name)][i % ROWS]
    if col.foreign_keys:
        target = next(iter(col.foreign_keys)).column.table.name
        have = ids.get(target, [])
        if have and not (target == table.name):
            return have[i % len(have)]
        return None if col.nullable else (have or [1])[0]
    t = col.type
    if isinstance(t, sa.Boolean):
        return i % 2 == 0
    if isinstance(t, sa.Integer):
        return 7 + i
    if isinstance(t, (sa.Float, sa.Numeric)):
        return 0.25 + i
    if isinstance(t, sa.DateTime):
        return dt.datetime(2024, 1, 2, 3, 4, 5 + i)
    if isinstance(t, sa.JSON):
        return {"row": i, "text": "émoji ✓", "list": [1, 2]}
    if isinstance(t, sa.String) and t.length:
        return f"{col.name[:4]}{i}"[: t.length]
    if isinstance(t, sa.String):
        return f"{table.name}.{col.name} row {i}: ünïcode, 'quotes' and \"more\""
    raise AssertionError(f"no value for {table.name}.{col.name} of type {t!r}")  # a new type: add it above


def _fill(engine: sa.Engine, written: dict[str, dict[int, dict[str, Any]]]) -> None:
    """Rows in every table that has none written yet (in foreign-key order)."""
    meta = sa.MetaData()
    meta.reflect(bind=engine)
    ids = {name: sorted(rows) for name, rows in written.items()}
    with engine.begin() as conn:
        for table in meta.sorted_tables:
            if table.name in written or table.name == "alembic_version":
                continue
            rows: dict[int, dict[str, Any]] = {}
            for i in range(ROWS):
                row = {c.name: _value(table, c, i, ids) for c in table.columns if c.name != "id"}
                row["id"] = 101 + i
                conn.execute(table.insert().values(**row))
                rows[row["id"]] = row
            written[table.name] = rows
            ids[table.name] = sorted(rows)
        if engine.dialect.name == "postgresql":  # explicit ids: move each sequence past them
            for table in meta.sorted_tables:
                if "id" in table.columns and table.name in written:
                    conn.execute(
                        sa.text(
                            f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                            f"(SELECT MAX(id) FROM {table.name}))"
                        )
                    )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
        return a.replace(tzinfo=None) == b.replace(tzinfo=None)
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and abs(float(a) - float(b)) < 1e-9
    return bool(a == b)


def _check(engine: sa.Engine, written: dict[str, dict[int, dict[str, Any]]], where: str) -> int:
    """Every row written into a table that exists here is still there with the columns it still has."""
    meta = sa.MetaData()
    meta.reflect(bind=engine)
    seen = 0
    with engine.connect() as conn:
        for name, rows in written.items():
            if name not in meta.tables:
                continue
            table = meta.tables[name]
            got = {r["id"]: dict(r) for r in conn.execute(sa.select(table)).mappings()}
            for rid, row in rows.items():
                assert rid in got, f"at {where}: {name} row {rid} is gone"
                for col, value in row.items():
                    if col in got[rid] and (name, col) not in REWRITTEN:
                        assert _same(got[rid][col], value), (
                            f"at {where}: {name}.{col} of row {rid} reads {got[rid][col]!r}, was {value!r}"
                        )
                seen += 1
    return seen


def _read_with_models(db: Database, written: dict[str, dict[int, dict[str, Any]]]) -> None:
    """At head every written row loads through its model, its attributes as written (the rewritten ones as the
    migrations define them)."""
    models = {m.class_.__tablename__: m.class_ for m in Base.registry.mappers}
    with db.session() as s:
        for name, rows in written.items():
            model = models[name]
            for rid, row in rows.items():
                obj = s.get(model, rid)
                assert obj is not None, f"{name} row {rid} does not load"
                for col, value in row.items():
                    if hasattr(obj, col) and (name, col) not in REWRITTEN:
                        assert _same(getattr(obj, col), value), f"{name}.{col} of {rid}"
        c = s.get(models["contestants"], 101), s.get(models["contestants"], 102)
        assert [x.state for x in c] == ["released", "hidden"]  # 0010: active -> released, inactive -> hidden
        b = s.get(models["battles"], 101)
        assert _same(b.active_at, b.created_at)  # 0011


def _carry(url: str) -> None:
    cfg = alembic_config(url)
    order = _order(url)
    db = Database(url)
    written: dict[str, dict[int, dict[str, Any]]] = {}
    try:
        for rev in order:
            command.upgrade(cfg, rev)
            _fill(db.engine, written)
            _check(db.engine, written, f"upgrade to {rev}")
        assert set(written) >= {m.class_.__tablename__ for m in Base.registry.mappers}  # every table had rows
        _read_with_models(db, written)
        merge = order.index("0009_merge_fan")
        for rev in reversed(order[merge:-1]):  # one revision at a time, down the linear chain to the merge
            command.downgrade(cfg, rev)
            assert _check(db.engine, written, f"downgrade to {rev}") > 0
        command.downgrade(cfg, order[0])  # the merge's parents (the early fan) come down together
        assert _check(db.engine, written, f"downgrade to {order[0]}") > 0
    finally:
        db.dispose()


def test_sqlite_rows_survive_every_revision_up_and_down(tmp_path):
    _carry(f"sqlite:///{tmp_path / 'carry.sqlite'}")


@pytest.mark.postgres
def test_postgres_rows_survive_every_revision_up_and_down():
    if not PG_URL:
        pytest.skip("VIBESTUDIO_TEST_PG_URL not set")
    with pg_schema(PG_URL) as url:
        _carry(url)
