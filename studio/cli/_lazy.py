"""Commands that load when they are used: a group lists them from a stand-in and builds the real one on demand.

``vibestudio --help`` and ``vibestudio train --help`` print one line per command. A stand-in holds that line, so
drawing the list imports neither the command's module nor what it reads to build its options. ``train KIND``
takes one option per config field from ``training.jobs.config``, and ``drift`` its defaults from the report's.
Asking the group for a command loads it: ``get_command``, ``group.commands[name]`` and running it all see the
real one, with every option and its help. Only the list of commands in a group's help reads the stand-in.
tests/studio/test_cli_lazy.py checks that each stand-in's line is the real command's.
"""

import importlib
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, ClassVar

import typer
import typer.core
import typer.main

#: Where a lazy command comes from: ``"package.module:attribute"`` (a command function or a ``typer.Typer``
#: group), or a function of no arguments that returns one.
Target = str | Callable[[], Any]


class LazyTyper(typer.Typer):
    """A ``typer.Typer`` group (plain help, as ``_common.group``) that can also hold lazy commands and groups."""

    def __init__(self, **options: Any) -> None:
        self.targets: dict[str, Target] = {}
        cls = type("LazyGroup", (LazyGroup,), {"targets": self.targets})
        super().__init__(rich_markup_mode=None, cls=cls, **options)

    def lazy_command(self, name: str, target: Target, help: str) -> None:
        """Add command ``name`` from ``target`` (a command function); ``help`` is its line in this group's help."""
        self.targets[name] = target
        self.command(name, help=help)(_stand_in)

    def lazy_group(self, name: str, target: Target, help: str) -> None:
        """Add group ``name`` from ``target`` (a ``typer.Typer``); ``help`` is its line in this group's help.
        Groups keep their place: a group's help lists its commands first, then its groups."""
        self.targets[name] = target
        self.add_typer(typer.Typer(rich_markup_mode=None, help=help), name=name)


def _stand_in() -> None:
    """Never runs: the group hands out the real command whenever one is asked for."""
    raise RuntimeError("a lazy command's stand-in ran instead of the command")


class LazyGroup(typer.core.TyperGroup):
    """A click group whose ``commands`` load on first access (``LazyCommands``); its help lists stand-ins."""

    targets: ClassVar[dict[str, Target]] = {}  # set per group by ``LazyTyper``

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.lazy_commands = LazyCommands(self.commands, self.targets)
        self.commands = self.lazy_commands
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        """The names in the order they were added, loading nothing."""
        return list(self.lazy_commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command (loaded); only while the help lists the commands, the stand-in of one not yet loaded."""
        if self._listing:
            return self.lazy_commands.listed(cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Typer's list of commands, drawn from the stand-ins of those not loaded."""
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False


class _Pending:
    """A command not loaded yet: its stand-in and where the real one comes from."""

    def __init__(self, name: str, target: Target, stand_in: Any) -> None:
        self.name, self.target, self.stand_in = name, target, stand_in

    def load(self) -> Any:
        """The click command that registering the target in the group would have built."""
        obj = self.target() if callable(self.target) else _import(self.name, self.target)
        markup = getattr(self.stand_in, "rich_markup_mode", None)
        if isinstance(obj, typer.Typer):
            return typer.main.get_group(obj)
        if callable(obj):
            holder = typer.Typer(rich_markup_mode=markup, add_completion=False)
            holder.command(self.name)(obj)
            return typer.main.get_command_from_info(
                holder.registered_commands[0], pretty_exceptions_short=True, rich_markup_mode=markup
            )
        raise TypeError(
            f"lazy command {self.name!r}: {self.target!r} is neither a command function nor a Typer"
        )


def _import(name: str, target: str) -> Any:
    module, sep, attribute = target.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(f"lazy command {name!r}: target {target!r} is not 'package.module:attribute'")
    try:
        return getattr(importlib.import_module(module), attribute)
    except AttributeError as exc:
        raise ImportError(f"lazy command {name!r}: {module} has no {attribute!r}") from exc


class LazyCommands(MutableMapping[str, Any]):
    """A group's commands by name, in the order added; a lazy one is built the first time it is looked up."""

    def __init__(self, commands: MutableMapping[str, Any], targets: dict[str, Target]) -> None:
        self._entries: dict[str, Any] = {
            name: _Pending(name, targets[name], cmd) if name in targets else cmd
            for name, cmd in commands.items()
        }

    def __getitem__(self, name: str) -> Any:
        entry = self._entries[name]
        if isinstance(entry, _Pending):
            try:
                entry = self._entries[name] = entry.load()
            except KeyError as exc:  # not "no such command": Mapping.get would read it so
                raise RuntimeError(f"loading command {name!r} failed: {exc!r}") from exc
        return entry

    def listed(self, name: str) -> Any:
        """The command if loaded, else its stand-in (None for an unknown name)."""
        entry = self._entries.get(name)
        return entry.stand_in if isinstance(entry, _Pending) else entry

    def __setitem__(self, name: str, command: Any) -> None:
        self._entries[name] = command

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
