"""Rows carried through every migration: a database is built one revision at a time from the first, and each
revision that adds a table gets representative rows in it at once (every column filled: numbers, text with
accents and quotes, JSON, times, booleans both ways, foreign keys pointing at earlier rows). After every step each
row written so far is read back with every column it was written with still there; at head the rows load through
the models; then the database goes down again one revision at a time to the merge of the early fan (0009), and the
rows of each table that still exists are read back again (PostgreSQL goes on down to the first revision). SQLite
always, PostgreSQL (``-m postgres``) on VIBESTUDIO_TEST_PG_URL.

Below the merge SQLite is not carried down: 0003's downgrade rebuilds ``users`` in a batch, and SQLite refuses to
DROP a table other rows point at (docs/migrations.md). Migrations that change data on purpose are allowed their
change, and only that: 0010 turns ``active`` into a lifecycle ``state`` (an inactive contestant becomes hidden,
with a logged event) and back; 0011 fills ``battles.active_at``; 0012 deletes later duplicate labels of one
assignment (the rows here give each label its own assignment, so none is a duplicate and all must survive)."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory

from tests.helpers.postgres import PG_URL, pg_schema
from vibestudio.db.models import Base
from vibestudio.db.session import Database, alembic_config

#: Rows per table: two, so a foreign key can point at a row other than the first and booleans go both ways.
ROWS = 2
#: Columns the studio reads as a vocabulary get a value it knows (any other column: a generated value of its type).
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


@dataclass
class Rows:
    """One table's rows as written, by primary key."""

    key: list[str]
    rows: dict[tuple, dict[str, Any]] = field(default_factory=dict)


def _order(url: str) -> list[str]:
    """Every revision from the first to head, each after all it revises (the early fan in file order)."""
    script = ScriptDirectory.from_config(alembic_config(url))
    return [r.revision for r in reversed(list(script.walk_revisions("base", "heads")))]


def _target(col: sa.Column) -> str:
    return next(iter(col.foreign_keys)).target_fullname.split(".")[0]


def _value(table: sa.Table, col: sa.Column, i: int, ids: dict[str, list[int]]) -> Any:
    if (table.name, col.name) in KNOWN:
        return KNOWN[(table.name, col.name)][i % ROWS]
    if col.foreign_keys:
        have = ids.get(_target(col), [])
        if have and _target(col) != table.name:
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


def _in_key_order(tables: list[sa.Table]) -> list[sa.Table]:
    """New tables, each after the new tables it points at; contestants and jobs point at each other (both
    nullable), so whichever comes first leaves that pointer empty."""
    names = {t.name for t in tables}
    done: set[str] = set()
    out: list[sa.Table] = []
    left = sorted(tables, key=lambda t: t.name)

    def waits(t: sa.Table, nullable_too: bool) -> set[str]:
        wanted = {_target(c) for c in t.columns if c.foreign_keys and (nullable_too or not c.nullable)}
        return (wanted & names) - done - {t.name}

    while left:
        nxt = next((t for t in left if not waits(t, True)), None)
        if nxt is None:
            nxt = next((t for t in left if not waits(t, False)), left[0])
        out.append(nxt)
        done.add(nxt.name)
        left.remove(nxt)
    return out


def _fill(engine: sa.Engine, written: dict[str, Rows]) -> None:
    """Rows in every table that has none written yet."""
    new = sorted(set(sa.inspect(engine).get_table_names()) - set(written) - {"alembic_version"})
    if not new:
        return
    meta = sa.MetaData()
    meta.reflect(bind=engine, only=new, resolve_fks=False)
    ids = {name: [k[0] for k in t.rows] for name, t in written.items() if t.key == ["id"]}
    with engine.begin() as conn:
        for table in _in_key_order(list(meta.tables.values())):
            done = written[table.name] = Rows([c.name for c in table.primary_key])
            for i in range(ROWS):
                row = {c.name: _value(table, c, i, ids) for c in table.columns if c.name != "id"}
                if "id" in table.columns:
                    row["id"] = 101 + i
                conn.execute(table.insert().values(**row))
                done.rows[tuple(row[c] for c in done.key)] = row
            if done.key == ["id"]:
                ids[table.name] = [k[0] for k in done.rows]
                if engine.dialect.name == "postgresql":  # explicit ids: move the sequence past them
                    conn.execute(
                        sa.text(
                            f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                            f"(SELECT MAX(id) FROM {table.name}))"
                        )
                    )


def _same(got: Any, want: Any) -> bool:
    """A value read back by plain SQL (SQLite gives JSON and times as text, booleans as 0/1) against the one
    written."""
    if isinstance(want, (dict, list)) and isinstance(got, str):
        got = json.loads(got)
    if isinstance(want, dt.datetime):
        if isinstance(got, str):
            got = dt.datetime.fromisoformat(got)
        return isinstance(got, dt.datetime) and got.replace(tzinfo=None) == want
    if isinstance(want, float) or isinstance(got, float):
        return got is not None and want is not None and abs(float(got) - float(want)) < 1e-9
    return bool(got == want)


def _check(engine: sa.Engine, written: dict[str, Rows], where: str) -> int:
    """Every row written into a table that exists here is still there, with the columns it still has."""
    present = set(sa.inspect(engine).get_table_names())
    seen = 0
    with engine.connect() as conn:
        for name, table in written.items():
            if name not in present:
                continue
            got = {
                tuple(r[c] for c in table.key): dict(r)
                for r in conn.execute(sa.text(f"SELECT * FROM {name}")).mappings()
            }
            for key, row in table.rows.items():
                assert key in got, f"at {where}: {name} row {key} is gone"
                for col, value in row.items():
                    if col in got[key] and (name, col) not in REWRITTEN:
                        assert _same(got[key][col], value), (
                            f"at {where}: {name}.{col} of row {key} reads {got[key][col]!r}, was {value!r}"
                        )
                seen += 1
    return seen


def _read_with_models(db: Database, written: dict[str, Rows]) -> None:
    """At head every written row loads through its model with its attributes as written, and the rewritten
    columns read as their migrations define."""
    models = {m.class_.__tablename__: m.class_ for m in Base.registry.mappers}
    assert set(written) >= set(models), f"tables no revision gave rows: {set(models) - set(written)}"
    with db.session() as s:
        for name, table in written.items():
            for key, row in table.rows.items():
                obj = s.get(models[name], key if len(key) > 1 else key[0])
                assert obj is not None, f"{name} row {key} does not load"
                for col, value in row.items():
                    if hasattr(obj, col) and (name, col) not in REWRITTEN:
                        assert _same(getattr(obj, col), value), f"{name}.{col} of {key}"
        c = [s.get(models["contestants"], 101), s.get(models["contestants"], 102)]
        assert [getattr(x, "state", None) for x in c] == [
            "released",
            "hidden",
        ]  # 0010: active -> released, inactive -> hidden
        b = s.get(models["battles"], 101)
        assert b is not None
        # 0011: no turn or vote came later, so it became active when it was made
        assert b.active_at == b.created_at


def _carry(url: str) -> None:
    cfg = alembic_config(url)
    order = _order(url)
    db = Database(url)
    written: dict[str, Rows] = {}
    try:
        for rev in order:
            command.upgrade(cfg, rev)
            _fill(db.engine, written)
            _check(db.engine, written, f"upgrade to {rev}")
        _read_with_models(db, written)
        merge = order.index("0009_merge_fan")
        for rev in reversed(order[merge:-1]):  # one revision at a time, down the linear chain to the merge
            command.downgrade(cfg, rev)
            assert _check(db.engine, written, f"downgrade to {rev}") > 0
        if db.engine.dialect.name == "postgresql":  # below the merge: see the module docstring
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
