"""Bytecode for the project's packages before a whole-process benchmark times anything.

A wheel install writes bytecode; an editable checkout under ``PYTHONDONTWRITEBYTECODE=1`` (which some machines set)
compiles every module it imports on each start, while the libraries on the other side of a ratio (Typer, pandas,
SciPy) come compiled from their wheels. Timed that way, a start-up ratio measures the compiler: ``vibestudio --help``
read 1.8-2.3x ``import typer`` from source against 1.3-1.6x from bytecode, and the imports behind ``vibestudio
ratings`` took 0.3 s more. ``compile_project()`` writes what a wheel install would (quiet, and quick when current).
"""

from __future__ import annotations

import compileall
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def compile_project(root: Path = ROOT) -> None:
    """Bytecode for every top-level package of the repository but the tests."""
    for init in sorted(root.glob("*/__init__.py")):
        if init.parent.name != "tests":
            compileall.compile_dir(init.parent, quiet=1, workers=0)
