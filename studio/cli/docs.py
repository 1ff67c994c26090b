"""``docs/cli.md`` from the commands' own ``--help``: every command and group, in ``--help`` order.

``python -m vibestudio.studio.cli.docs`` (or ``make docs``) rewrites the part of ``docs/cli.md`` below the
marker line, and the job config reference (``docs/job-config.md``) from the config classes. The part above it is written by hand. ``python -m vibestudio.studio.cli.docs --check`` exits
1 when the file is out of date; tests/studio/test_cli_docs.py does the same. The help is rendered at a
fixed width without colour, so the output does not depend on the terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
MARKER = "<!-- Generated below from --help by `python -m vibestudio.studio.cli.docs` (make docs); do not edit by hand. -->"
REGENERATE = "python -m vibestudio.studio.cli.docs"
JOB_DOC = DOC.parent / "job-config.md"
JOB_MARKER = "<!-- Generated below from the job config classes by `make docs`; do not edit by hand. -->"
JOB_HEAD = """# Job config reference

A job config is a YAML mapping of these fields (`kind` picks the table). Each field is defined once, in
`training/jobs/config.py`: its default, what it accepts and its help. The CLI's `vibestudio train KIND` options, the
Train tab's starting values, the checkpoint report's settings and this page are all read from that definition
(`tests/training/test_settings_once.py` checks it). A value outside what a field accepts is refused before
launch, naming the field. See docs/training.md for why the defaults are what they are.

"""
WIDTH = 100
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def command_tree(app: typer.Typer) -> list[tuple[tuple[str, ...], Any]]:
    """Every command and group with its path below the root (the root first, as ``()``), depth first in
    ``--help`` order; hidden ones are left out."""
    out: list[tuple[tuple[str, ...], Any]] = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        if getattr(cmd, "hidden", False):
            return
        out.append((path, cmd))
        if isinstance(getattr(cmd, "commands", None), Mapping):  # a group (a lazy one loads them here)
            ctx = typer.Context(cmd, info_name=path[-1] if path else "vibestudio")
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), (*path, name))

    walk(typer.main.get_command(app), ())
    return out


def command_paths(app: typer.Typer) -> list[tuple[str, ...]]:
    """The paths of ``command_tree``: ``()``, ``("serve",)``, ..., ``("ratings", "predict")``, ..."""
    return [path for path, _ in command_tree(app)]


@contextlib.contextmanager
def _plain_terminal() -> Iterator[None]:
    """Typer's rich help at ``WIDTH`` columns, no colour, whatever the environment says (CI forces colour)."""
    try:
        from typer import rich_utils
    except ImportError:  # typer without rich: click's plain help, sized by terminal_width below
        yield
        return
    saved = {k: getattr(rich_utils, k) for k in ("MAX_WIDTH", "FORCE_TERMINAL", "COLOR_SYSTEM")}
    rich_utils.MAX_WIDTH, rich_utils.FORCE_TERMINAL, rich_utils.COLOR_SYSTEM = WIDTH, False, None
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(rich_utils, k, v)


def help_text(app: typer.Typer, path: tuple[str, ...]) -> str:
    """What ``vibestudio PATH --help`` prints, without trailing spaces."""
    with _plain_terminal():
        result = CliRunner().invoke(
            app, [*path, "--help"], prog_name="vibestudio", terminal_width=WIDTH, max_content_width=WIDTH
        )
    if result.exit_code != 0:
        raise RuntimeError(f"vibestudio {' '.join(path)} --help failed: {result.output}")
    text = _ANSI.sub("", result.output)
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")


def render(app: typer.Typer) -> str:
    """The generated part of docs/cli.md: one section per command, its ``--help`` in a text block."""
    parts = [MARKER, ""]
    for path in command_paths(app):
        parts += [f"## vibestudio {' '.join(path)}".rstrip(), "", "```text", help_text(app, path), "```", ""]
    return "\n".join(parts)


def updated(current: str, app: typer.Typer) -> str:
    """``current`` with everything from the marker on replaced by ``render(app)`` (the marker is added when absent)."""
    head = current.split(MARKER, 1)[0] if MARKER in current else current.rstrip("\n") + "\n\n"
    return head + render(app)


def job_config_doc(current: str) -> str:
    """``current`` (docs/job-config.md) with everything from the marker on written from the job configs' field
    definitions (``training.jobs.config.reference_markdown``)."""
    from vibestudio.training.jobs.config import reference_markdown

    head = current.split(JOB_MARKER, 1)[0] if JOB_MARKER in current else JOB_HEAD
    return head + JOB_MARKER + "\n\n" + reference_markdown()


def main(argv: list[str] | None = None) -> int:
    from vibestudio.studio.cli import app

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--check", action="store_true", help="Exit 1 when docs/cli.md is out of date; write nothing."
    )
    args = ap.parse_args(argv)
    stale = 0
    for doc, make in ((DOC, lambda text: updated(text, app)), (JOB_DOC, job_config_doc)):
        current = doc.read_text(encoding="utf-8") if doc.exists() else ""
        new = make(current)
        if new == current:
            continue
        if args.check:
            print(f"{doc} is out of date: run `{REGENERATE}` (or `make docs`)", file=sys.stderr)
            stale = 1
        else:
            doc.write_text(new, encoding="utf-8")
            print(f"wrote {doc}")
    return stale


if __name__ == "__main__":
    raise SystemExit(main())
