"""Settings stay in one place and documented: only ``common/settings.py`` reads the environment, and
``docs/settings.md`` shows every variable (its table is the one ``python -m vibestudio.common.settings`` prints)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from vibestudio.common.settings import Settings, get_settings, markdown_table, variable_name

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "settings.md"
SETTINGS_MODULE = ROOT / "common" / "settings.py"
BEGIN, END = "<!-- settings table: begin -->", "<!-- settings table: end -->"


def _packages() -> list[Path]:
    """The studio's own packages, as pyproject ships them."""
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    return [ROOT / name.rstrip("*") for name in find["include"]]


def _is_environ(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "environ"
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    )


def environment_reads(source: str) -> list[int]:
    """Lines that read a variable from the process environment.

    Writing one (``os.environ[...] = ``, ``setdefault``) and handing the whole environment to a child process
    (``dict(os.environ)``, ``{**os.environ}``) are not reads of a setting.
    """
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            if (func.attr == "get" and _is_environ(func.value)) or (
                func.attr == "getenv" and isinstance(func.value, ast.Name) and func.value.id == "os"
            ):
                lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            lines.append(node.lineno)  # "X" in os.environ
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            if {a.name for a in node.names} & {"environ", "getenv"}:
                lines.append(node.lineno)
    return sorted(lines)


def test_the_scan_sees_reads_and_lets_writes_pass():
    reads = """
import os
a = os.environ.get("A")
b = os.getenv("B")
c = os.environ["C"]
d = "D" in os.environ
from os import getenv
"""
    writes = """
import os
os.environ["A"] = "1"
os.environ.setdefault("B", "2")
env = dict(os.environ)
child = {**os.environ, "C": "3"}
"""
    assert environment_reads(reads) == [3, 4, 5, 6, 7]
    assert environment_reads(writes) == []


def test_only_the_settings_module_reads_the_environment():
    offenders = []
    for package in _packages():
        for path in sorted(package.rglob("*.py")):
            if path == SETTINGS_MODULE:
                continue
            for line in environment_reads(path.read_text(encoding="utf-8")):
                offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert not offenders, (
        "read the environment through common.settings (add a field to Settings and document it), not directly: "
        + ", ".join(offenders)
    )


def test_the_docs_show_the_settings_table_as_the_code_defines_it():
    text = DOC.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, f"{DOC.name} lost its table markers"
    shown = text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"
    assert shown == markdown_table(), (
        f"{DOC.relative_to(ROOT)} is stale: paste the output of `python -m vibestudio.common.settings` between its markers"
    )
    for field in Settings.model_fields:
        assert f"`{variable_name(field)}`" in shown


def test_every_variable_named_in_the_code_is_documented():
    text = DOC.read_text(encoding="utf-8")
    named: dict[str, str] = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if parts[0].startswith("."):
            continue
        for name in re.findall(r"\bVIBESTUDIO_[A-Z][A-Z0-9_]*\b", path.read_text(encoding="utf-8")):
            named.setdefault(name, str(path.relative_to(ROOT)))
    missing = {name: where for name, where in named.items() if f"`{name}`" not in text}
    assert not missing, f"variables missing from {DOC.relative_to(ROOT)}: {missing}"


def test_settings_are_read_when_asked_not_at_import(monkeypatch, tmp_path):
    monkeypatch.setenv("VIBESTUDIO_ENGINE_CACHE_MB", "12")
    monkeypatch.setenv("VIBESTUDIO_HOME", str(tmp_path / "elsewhere"))
    assert get_settings().engine_cache_mb == 12
    assert get_settings().data_home == tmp_path / "elsewhere"
    monkeypatch.setenv("VIBESTUDIO_ENGINE_CACHE_MB", "34")
    monkeypatch.setenv("VIBESTUDIO_GGUF", "")  # empty counts as unset
    assert get_settings().engine_cache_mb == 34 and get_settings().gguf is None
    monkeypatch.setenv("RANK", "3")
    assert get_settings().rank == 3
