"""Lazy commands (studio/cli/_lazy.py): `vibestudio --help` and `vibestudio train --help` list `drift`, `models`
and the train kinds without importing the job config, while `vibestudio train KIND --help` still shows one option
per config field with its help, and each listed line is the loaded command's own."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from vibestudio.studio.cli import app
from vibestudio.studio.cli._lazy import LazyGroup, LazyTyper
from vibestudio.studio.cli.train import KIND_HELP

CONFIG = "vibestudio.training.jobs.config"


def _loaded_modules(*args: str) -> tuple[str, list[str]]:
    """The help `vibestudio ARGS` prints in a fresh process, and the project's training modules it imported."""
    code = (
        "import sys\n"
        f"sys.argv = ['vibestudio', *{list(args)!r}]\n"
        "from vibestudio.studio.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('vibestudio.training')"
        " or m in ('vibestudio.studio.cli.train', 'vibestudio.studio.cli.models')), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return proc.stdout, ast.literal_eval(proc.stderr.strip().splitlines()[-1])


def test_the_root_and_train_help_import_no_job_config() -> None:
    out, modules = _loaded_modules("--help")
    assert "drift" in out and "models" in out and "train" in out, out
    assert modules == [], modules  # not even studio.cli.train or studio.cli.models
    out, modules = _loaded_modules("train", "--help")
    assert all(kind in out for kind in KIND_HELP), out
    assert not [m for m in modules if m.startswith("vibestudio.training")], modules
    out, modules = _loaded_modules("train", "dpo", "--help")  # the check above sees the module when it loads
    assert "--beta" in out and CONFIG in modules, modules


def _option_names(help_text: str) -> set[str]:
    """Every option name in a command's help (`--steps, --max-steps <int>`, `--lora / --full`)."""
    names: set[str] = set()
    for line in help_text.splitlines():
        if not line.startswith("  --"):
            continue
        head = line.strip().split("  ")[0].split(" <")[0]
        parts = head.replace("/", ",").split(",")
        names |= {
            part.split()[0] for part in parts if part.strip().startswith("--")
        }  # no metavar (FIELD=VALUE)
    return names


def _field_names(field: dataclasses.Field) -> set[str]:
    """The option names a config field declares (``flags``), with ``--field-name`` (``--no-...`` for a switch)."""
    dashed = "--" + field.name.replace("_", "-")
    declared = {n.strip() for flag in field.metadata.get("flags", ()) for n in flag.split("/")}
    if str(field.type).replace(" | None", "") != "bool":
        return declared | {dashed}
    return declared or {dashed, "--no-" + dashed[2:]}


@pytest.mark.parametrize("kind", list(KIND_HELP))
def test_train_kind_help_shows_one_option_per_config_field_with_its_help(kind: str) -> None:
    from vibestudio.training.jobs.config import CONFIG_KINDS

    result = CliRunner().invoke(app, ["train", kind, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    fields = [f for f in dataclasses.fields(CONFIG_KINDS[kind]) if f.metadata.get("cli", True)]
    assert len(fields) > 40, kind
    own = {"--config", "--set", "--dry-run", "--wait", "--no-wait", "--timeout", "--json", "--help"}
    if kind == "grpo":
        own |= {"--reward", "--verifier"}
    expected = own.union(*(_field_names(f) for f in fields))
    assert _option_names(result.output) == expected
    flat = " ".join(result.output.split())
    missing = [f.name for f in fields if " ".join(f.metadata["help"].split())[:60] not in flat]
    assert missing == [], missing


def _lazy_groups(group: typer.core.TyperGroup, path: tuple[str, ...] = ()):
    """Each lazy group below ``group`` (loading its commands), with its path."""
    if isinstance(group, LazyGroup):
        yield path, group
    for name in list(group.commands):
        cmd = group.commands[name]
        if isinstance(cmd, typer.core.TyperGroup):
            yield from _lazy_groups(cmd, (*path, name))


def test_each_listed_line_is_the_loaded_commands_own() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, LazyGroup)
    seen = []
    for path, group in _lazy_groups(root):
        for name in group.targets:
            stand_in = group.lazy_commands.listed(name)
            real = group.commands[name]
            assert real is not stand_in and group.lazy_commands.listed(name) is real, (path, name)
            assert stand_in.help == real.help, (path, name)
            assert stand_in.get_short_help_str(60) == real.get_short_help_str(60), (path, name)
            seen.append((*path, name))
    assert {("drift",), ("models",), ("train",), ("train", "dpo"), ("train", "grpo")} <= set(seen), seen


def _demo(calls: list[str]) -> LazyTyper:
    demo = LazyTyper(help="Demo.", no_args_is_help=True)

    @demo.command("first")
    def first() -> None:
        """The first."""

    def load() -> object:
        calls.append("loaded")

        def second(n: int = typer.Option(1, help="How many.")) -> None:
            """The second."""
            typer.echo(f"second {n}")

        return second

    demo.lazy_command("second", load, help="The second.")

    @demo.command("third")
    def third() -> None:
        """The third."""

    return demo


def test_a_lazy_command_keeps_its_place_and_loads_only_when_used() -> None:
    calls: list[str] = []
    demo = _demo(calls)
    result = CliRunner().invoke(demo, ["--help"])
    assert result.exit_code == 0 and calls == [], result.output
    listed = [line.split()[0] for line in result.output.split("Commands:")[1].splitlines() if line.strip()]
    assert listed == ["first", "second", "third"]
    result = CliRunner().invoke(demo, ["second", "--help"])
    assert "--n <int>" in result.output and "How many." in result.output and calls == ["loaded"]
    result = CliRunner().invoke(demo, ["second", "--n", "3"])
    assert result.exit_code == 0 and result.output == "second 3\n"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_colon_here", "target 'no_colon_here' is not 'package.module:attribute'"),
        ("vibestudio.studio.cli._common:nothing", "vibestudio.studio.cli._common has no 'nothing'"),
        (lambda: 42, "is neither a command function nor a Typer"),
    ],
)
def test_a_bad_target_names_the_command_and_the_target(target, message: str) -> None:
    demo = LazyTyper(help="Demo.")
    demo.lazy_command("broken", target, help="Broken.")
    demo.command("fine")(lambda: None)
    group = typer.main.get_command(demo)
    assert isinstance(group, LazyGroup)
    with pytest.raises((ValueError, ImportError, TypeError), match="lazy command 'broken'") as info:
        group.commands["broken"]
    assert message in str(info.value)
