"""The house rules, checked: imports only go down the layers, and gradio stays in studio/.

Layers, lowest first: common <- textfeatures <- db <- accounts <- arena <- standings <- annotation <- training
<- studio. Every import counts, including the lazy ones inside functions, because a lazy upward import is still an
upward dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.house import house

ROOT = Path(__file__).resolve().parents[1]
LAYERS = list(house.PACKAGES)  # the layer order, lowest first: ``scripts/house.py`` holds the one list
RANK = {name: i for i, name in enumerate(LAYERS)}


def imported_modules(relpath: Path, source: str) -> list[tuple[int, str]]:
    """(line, module) for every import in a file, relative imports resolved against the file's package."""
    tree = ast.parse(source, filename=str(relpath))
    package = ".".join(relpath.with_suffix("").parts[:-1])
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                out.append((node.lineno, ".".join([*base, node.module or ""]).strip(".")))
            elif node.module:
                out.append((node.lineno, node.module))
    return out


def violations(files: list[tuple[Path, str]]) -> list[str]:
    """Upward imports and gradio imports outside studio/ in (path relative to the root, source) pairs."""
    found = []
    for relpath, source in files:
        own = relpath.parts[0]
        for line, module in imported_modules(relpath, source):
            top = module.removeprefix("vibestudio.").split(".")[0]
            where = f"{relpath}:{line}"
            if top in RANK and RANK[top] > RANK[own]:
                found.append(f"{where}: {own} imports {module} (a higher layer)")
            if top == "gradio" and own != "studio":
                found.append(f"{where}: gradio imported outside studio/")
    return found


def package_files() -> list[tuple[Path, str]]:
    paths = sorted(p for name in LAYERS for p in (ROOT / name).rglob("*.py"))
    return [(p.relative_to(ROOT), p.read_text(encoding="utf-8")) for p in paths]


def test_every_package_is_a_known_layer() -> None:
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "benchmarks", "scripts"}
    assert packages == set(LAYERS), f"top-level packages {sorted(packages)} differ from the layers {LAYERS}"


def test_imports_only_go_down() -> None:
    assert violations(package_files()) == []


@pytest.mark.parametrize(
    ("own", "source", "expected"),
    [
        ("arena", "from standings.records import battle_records\n", "arena imports standings.records"),
        ("db", "def f():\n    import arena.registry\n", "db imports arena.registry"),
        ("annotation", "import gradio as gr\n", "gradio imported outside studio/"),
        ("accounts", "from ..studio import app\n", "accounts imports studio "),
    ],
)
def test_the_check_catches_upward_and_lazy_imports(own: str, source: str, expected: str) -> None:
    found = violations([(Path(own) / "mod.py", source)])
    assert any(expected in v for v in found), found


def test_the_check_allows_downward_and_same_layer_imports() -> None:
    source = (
        "from db.models import Vote\nfrom accounts import require_role\nfrom . import sibling\nimport numpy\n"
    )
    assert violations([(Path("arena") / "mod.py", source)]) == []
