"""The house drawn from its imports: lines per top-level package, the import circles among the studio's own
modules, and the longest functions. It also measures how long the module docstrings' sentences run.

Usage: python scripts/house.py [--top 10]

Every import counts, wherever it sits: at the top of a module, inside a function (marked ``lazy``) or under
``if TYPE_CHECKING:`` (marked ``typing``), because each one is a dependency a reader has to follow. An import
names a module: ``from pkg import name`` points at ``pkg.name`` when that is a module of ours, else at ``pkg``
(its ``__init__.py``); ``import a.b.c`` points at ``a.b.c``. A circle is a strongly connected component of more
than one module in that graph. ``tests/test_house.py`` loads this file and fails on a circle unless a member's
module docstring says it is a deliberate recursion.

Standard library only, so it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [
    "common",
    "textfeatures",
    "db",
    "accounts",
    "arena",
    "standings",
    "annotation",
    "training",
    "studio",
]


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    kind: str  # "top", "lazy" (inside a function) or "typing" (under TYPE_CHECKING)


@dataclass
class House:
    files: dict[str, Path] = field(default_factory=dict)  # module name -> file
    trees: dict[str, ast.Module] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)

    def graph(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {name: set() for name in self.files}
        for edge in self.edges:
            if edge.source != edge.target:
                out[edge.source].add(edge.target)
        return out


def module_name(relpath: Path) -> str:
    parts = relpath.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import node in a module with where it sits: top, lazy or typing."""
    found: list[tuple[ast.Import | ast.ImportFrom, str]] = []

    def walk(node: ast.AST, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            here = kind
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                here = "lazy"
            elif isinstance(child, ast.If) and _is_type_checking(child.test) and kind == "top":
                for sub in child.body:
                    walk_one(sub, "typing")
                for sub in child.orelse:
                    walk_one(sub, kind)
                continue
            walk_one(child, here)

    def walk_one(node: ast.AST, kind: str) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append((node, kind))
        walk(node, kind)

    walk(tree, "top")
    return found


ROOT_PACKAGE = "vibestudio"


def _unrooted(dotted: str) -> str:
    """A module name without the import root: ``vibestudio.db.models`` names ``db.models`` (vibestudio/ links)."""
    if dotted == ROOT_PACKAGE:
        return ""
    return dotted.removeprefix(ROOT_PACKAGE + ".")


def _targets(node: ast.Import | ast.ImportFrom, own: str, is_package: bool, known: set[str]) -> list[str]:
    """The project modules one import statement names (empty for outside modules)."""

    def longest_known(dotted: str) -> str | None:
        parts = _unrooted(dotted).split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in known:
                return candidate
        return None

    if isinstance(node, ast.Import):
        hits = (longest_known(alias.name) for alias in node.names)
        return [hit for hit in hits if hit]
    if node.level:
        package = own.split(".") if is_package else own.split(".")[:-1]
        base = package[: len(package) - node.level + 1]
        module = ".".join([*base, *([node.module] if node.module else [])])
    else:
        module = node.module or ""
    module = _unrooted(module)
    out = []
    for alias in node.names:
        if module == "" and alias.name in known:  # from vibestudio import db
            out.append(alias.name)
        elif f"{module}.{alias.name}" in known:
            out.append(f"{module}.{alias.name}")
        else:
            hit = longest_known(module)
            if hit:
                out.append(hit)
    return out


def read_house(root: Path = ROOT, packages: list[str] = PACKAGES) -> House:
    house = House()
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            name = module_name(path.relative_to(root))
            house.files[name] = path
            house.trees[name] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    known = set(house.files)
    for name, tree in house.trees.items():
        is_package = house.files[name].name == "__init__.py"
        for node, kind in _imports(tree):
            for target in dict.fromkeys(_targets(node, name, is_package, known)):
                house.edges.append(Edge(name, target, node.lineno, kind))
    return house


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def circle_edges(house: House, component: list[str]) -> list[Edge]:
    members = set(component)
    return [e for e in house.edges if e.source in members and e.target in members and e.source != e.target]


def lines_per_package(house: House) -> dict[str, tuple[int, int]]:
    """package -> (files, lines)."""
    out: dict[str, tuple[int, int]] = {}
    for name, path in house.files.items():
        top = name.split(".")[0]
        files, lines = out.get(top, (0, 0))
        out[top] = (files + 1, lines + len(path.read_text(encoding="utf-8").splitlines()))
    return out


def room_of(module: str, package: str = "training") -> str | None:
    """The room of a package a module sits in (``training.jobs.runner`` -> ``jobs``); None outside the package.

    A module directly in the package (``training.compare``, ``training`` itself) sits in no room: its room is "".
    """
    parts = module.split(".")
    if parts[0] != package:
        return None
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and module in _PACKAGE_INITS) else ""


_PACKAGE_INITS: set[str] = set()


def rooms(house: House, package: str = "training") -> dict[str, dict[str, int]]:
    """room -> modules, lines, imports into sibling rooms and imports climbing up into the package's own modules."""
    _PACKAGE_INITS.update(n for n, p in house.files.items() if p.name == "__init__.py")
    out: dict[str, dict[str, int]] = {}
    for name, path in house.files.items():
        room = room_of(name, package)
        if room:
            row = out.setdefault(room, {"modules": 0, "lines": 0, "sideways": 0, "up": 0})
            row["modules"] += 1
            row["lines"] += len(path.read_text(encoding="utf-8").splitlines())
    for edge in house.edges:
        source, target = room_of(edge.source, package), room_of(edge.target, package)
        if source and target is not None and source != target:
            out[source]["up" if target == "" else "sideways"] += 1
    return dict(sorted(out.items()))


def longest_functions(house: House, top: int = 10) -> list[tuple[int, str]]:
    """(lines, "module:Qualified.name") of the longest functions and methods, longest first."""
    found: list[tuple[int, str]] = []

    def walk(node: ast.AST, prefix: str, module: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qualified = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    found.append(
                        ((child.end_lineno or child.lineno) - child.lineno + 1, f"{module}:{qualified}")
                    )
                walk(child, f"{qualified}.", module)

    for name, tree in house.trees.items():
        walk(tree, "", name)
    return sorted(found, key=lambda item: (-item[0], item[1]))[:top]


#: Modules the sentence measure leaves out: Alembic writes the migrations' docstrings, not us.
GENERATED = ("db.migrations.versions.",)

_CODE_SPAN = re.compile(r"``.+?``|`[^`\n]+`", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LIST_ITEM = re.compile(r"([-*]|\d+\.) ")  # "- ", "* " or "1. " opening a list item


def docstring_sentences(doc: str) -> list[str]:
    """The sentences of a docstring, each inline ``code`` span turned into one word.

    A sentence ends at ``.``, ``!`` or ``?`` before a space or a line break. A list item (a line starting
    ``- ``, ``* `` or ``1. ``, ending at the next line back at its margin), a line ending with ``:`` and a
    paragraph end each close a sentence too. Each line of an indented block (a table, an example) is one
    sentence.
    """
    text = _CODE_SPAN.sub("CODE", doc)
    chunks: list[list[str]] = [[]]
    bullet_indent = -1  # the indent of the bullet item being read, -1 outside a list
    for raw in text.splitlines():
        line = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        if not line:
            chunks.append([])
            bullet_indent = -1
            continue
        item = _LIST_ITEM.match(line)
        if item:
            chunks.append([line[item.end() :]])
            bullet_indent = indent
        elif 0 <= indent <= bullet_indent:  # a line back at the list's margin ends the item
            chunks.append([line])
            bullet_indent = -1
        elif indent and bullet_indent < 0:  # a row of an indented table or example stands alone
            chunks += [[line], []]
        else:
            chunks[-1].append(line)
        if line.endswith(":"):
            chunks.append([])
    sentences = []
    for chunk in chunks:
        for piece in _SENTENCE_END.split(" ".join(chunk)):
            if word_count(piece):
                sentences.append(piece)
    return sentences


def word_count(sentence: str) -> int:
    """Words in a sentence: whitespace-separated tokens holding a letter or a digit."""
    return sum(1 for token in sentence.split() if any(ch.isalnum() for ch in token))


def sentence_lengths(house: House) -> dict[str, list[int]]:
    """module -> the word count of each sentence of its docstring (modules in ``GENERATED`` left out)."""
    out: dict[str, list[int]] = {}
    for name, tree in house.trees.items():
        if name.startswith(GENERATED):
            continue
        doc = ast.get_docstring(tree) or ""
        out[name] = [word_count(s) for s in docstring_sentences(doc)]
    return out


def words_per_sentence(house: House, top: int = 15) -> tuple[float, list[tuple[float, int, str]]]:
    """The average words per sentence over every module docstring, and the ``top`` worst modules.

    The average pools all sentences (total words / total sentences). Each worst module comes as
    (its own average, its sentence count, its name), highest average first.
    """
    lengths = sentence_lengths(house)
    words = sum(sum(counts) for counts in lengths.values())
    sentences = sum(len(counts) for counts in lengths.values())
    per_module = [(sum(c) / len(c), len(c), name) for name, c in lengths.items() if c]
    worst = sorted(per_module, key=lambda row: (-row[0], row[2]))[:top]
    return (words / sentences if sentences else 0.0), worst


def report(house: House, top: int = 10) -> str:
    out = ["## Lines per package", "", "| package | files | lines |", "|---|---:|---:|"]
    sizes = lines_per_package(house)
    for package in PACKAGES:
        files, lines = sizes.get(package, (0, 0))
        out.append(f"| {package} | {files} | {lines} |")
    out.append(f"| total | {sum(f for f, _ in sizes.values())} | {sum(n for _, n in sizes.values())} |")
    found = circles(house.graph())
    out += ["", f"## Import circles among project modules: {len(found)}", ""]
    for component in found:
        out.append(f"- {' <-> '.join(component)}")
        for edge in circle_edges(house, component):
            out.append(f"  - {edge.source}:{edge.line} -> {edge.target} ({edge.kind})")
    out += [
        "",
        "## training's rooms",
        "",
        "| room | modules | lines | imports into sibling rooms | climbing up |",
    ]
    out.append("|---|---:|---:|---:|---:|")
    for room, row in rooms(house).items():
        out.append(f"| {room} | {row['modules']} | {row['lines']} | {row['sideways']} | {row['up']} |")
    out += ["", f"## The {top} longest functions", "", "| lines | function |", "|---:|---|"]
    out += [f"| {lines} | {name} |" for lines, name in longest_functions(house, top)]
    average, worst = words_per_sentence(house)
    out += ["", f"## Words per sentence in module docstrings: {average:.1f} on average", ""]
    out += ["| words per sentence | sentences | module |", "|---:|---:|---|"]
    out += [f"| {avg:.1f} | {n} | {name} |" for avg, n, name in worst]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=10, help="how many of the longest functions to list")
    args = parser.parse_args(argv)
    if args.top < 1:
        parser.error("--top must be at least 1")
    sys.stdout.write(report(read_house(), args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
