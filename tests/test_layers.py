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
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {
        "tests",
        "benchmarks",
        "scripts",
        "vibestudio",
    }
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


def bare_imports(relpath: Path, source: str) -> list[str]:
    """Imports of a studio package by its bare name (``import db``) instead of through ``vibestudio``."""
    found = []
    for node in ast.walk(ast.parse(source, filename=str(relpath))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        found += [
            f"{relpath}:{node.lineno}: imports {name}; import it as vibestudio.{name}"
            for name in names
            if name.split(".")[0] in RANK
        ]
    return found


def test_every_import_goes_through_the_one_root() -> None:
    """Code, tests, scripts and benchmarks import ``vibestudio.training``, never ``training``: a bare import would load
    the module a second time under another name, and fail once installed (nothing but vibestudio is installed)."""
    paths = sorted(
        p for name in (*LAYERS, "tests", "scripts", "benchmarks") for p in (ROOT / name).rglob("*.py")
    )
    found = [
        hit
        for p in paths
        if "migrations/versions" not in p.as_posix()
        for hit in bare_imports(p.relative_to(ROOT), p.read_text(encoding="utf-8"))
    ]
    assert found == []
    assert bare_imports(Path("arena") / "mod.py", "import db\nfrom training.jobs import runner\n") != []


def test_only_the_root_is_installed(tmp_path: Path) -> None:
    """Outside the checkout, ``import db`` finds nothing and ``import vibestudio.db`` finds the studio's."""
    import subprocess
    import sys

    script = (
        "import importlib.util as u; import vibestudio.db, vibestudio.training.jobs.runner; "
        "print(sorted(n for n in ('common', 'db', 'training', 'studio', 'arena', 'annotation', 'accounts', "
        "'standings', 'textfeatures') if u.find_spec(n)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
