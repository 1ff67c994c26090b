"""No SQL in studio/: the shell calls services that return plain data; it never builds or runs a query.

A module under studio/ may not import SQLAlchemy or the ORM tables (``db.models``), nor call a session's
query methods (``execute``, ``scalar``, ``scalars``, ``query``...). Lazy imports inside functions count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_MODULES = ("sqlalchemy", "db.models", "psycopg", "sqlite3")
QUERY_METHODS = {"execute", "executemany", "exec_driver_sql", "scalar", "scalars", "query", "get_bind"}


def sql_in(relpath: str, source: str) -> list[str]:
    """Every SQL import and query call in one module's source, as ``path:line: what``."""
    found = []
    for node in ast.walk(ast.parse(source, filename=relpath)):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        for module in modules:
            name = module.removeprefix("vibestudio.")
            if any(name == m or name.startswith(m + ".") for m in FORBIDDEN_MODULES):
                found.append(f"{relpath}:{node.lineno}: imports {module}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in QUERY_METHODS
        ):
            found.append(f"{relpath}:{node.lineno}: calls .{node.func.attr}()")
    return found


def test_studio_runs_no_sql() -> None:
    found = [
        hit
        for path in sorted((ROOT / "studio").rglob("*.py"))
        for hit in sql_in(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
    ]
    assert found == [], "move these queries into a service below studio/:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from sqlalchemy import func, select\n", "imports sqlalchemy"),
        ("def f():\n    import sqlalchemy.orm\n", "imports sqlalchemy.orm"),
        ("from vibestudio.db.models import Battle, Vote\n", "imports vibestudio.db.models"),
        ("from vibestudio.db import models\n", "imports vibestudio.db.models"),
        ("def f(s):\n    return s.scalar(q)\n", "calls .scalar()"),
        ("def f(ctx):\n    with ctx.db.session() as s:\n        s.execute(q)\n", "calls .execute()"),
    ],
)
def test_the_check_catches_sql(source: str, expected: str) -> None:
    assert any(expected in hit for hit in sql_in("studio/pages/x.py", source))


def test_the_check_allows_calling_services() -> None:
    source = (
        "from vibestudio.annotation.snapshots import collected\n"
        "def f(ctx):\n    with ctx.db.session() as s:\n        return collected(s)\n"
        "tab.select(None)\n"
    )
    assert sql_in("studio/pages/x.py", source) == []
