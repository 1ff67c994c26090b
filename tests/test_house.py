"""The house, checked from its imports (``scripts/house.py`` draws the graph): no import circle among the studio's
own modules unless a member's module docstring explains it as a deliberate recursion, and every package's front
door (its ``__init__.py`` docstring) tells the truth.

A front door says what the package imports in one sentence, ``Imports common, db and accounts.`` (or ``Imports no
other package of the studio.``): the packages named must be exactly those its modules import (lazy imports and
``TYPE_CHECKING`` ones included) and all of them below it in the README's layer line. What the door says the
package holds (its first paragraph, and any sentence with "holds") must not name a module that lives in another
package and not in this one (``arena`` claiming ``probes`` after they moved to ``standings``), and every dotted
name it cites (``training.jobs.runner``) must exist.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.helpers.house import house
from tests.test_layers import LAYERS

ROOT = Path(__file__).resolve().parents[1]

MARK = "deliberate recursion"


def unexplained_circles(h: house.House) -> list[str]:
    """Each import circle none of whose members' module docstrings says it is a deliberate recursion."""
    found = []
    for component in house.circles(h.graph()):
        if not any(MARK in (ast.get_docstring(h.trees[m]) or "").lower() for m in component):
            edges = "; ".join(
                f"{e.source}:{e.line} -> {e.target} ({e.kind})" for e in house.circle_edges(h, component)
            )
            found.append(f"{' <-> '.join(component)}: {edges}")
    return found


def readme_layers() -> list[str]:
    """The layer line of the README: ``common/`` <- ``db/`` <- ... (lowest first)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if ln.startswith("`common/`") and "←" in ln)
    return [part.strip().strip("`").rstrip("/") for part in line.split("←")]


def claimed_imports(doc: str, layers: list[str]) -> set[str] | None:
    """The packages a front door says its package imports, or None when it has no ``Imports ...`` sentence."""
    match = re.search(r"(?:^|[.:]\s+|\n)Imports\s+([^.]*)\.", doc)
    if match is None:
        return None
    sentence = match.group(1)
    if re.match(r"no other package|nothing", sentence):
        return set()
    return {name for name in layers if re.search(rf"\b{name}\b", sentence)}


def actual_imports(h: house.House, package: str) -> set[str]:
    return {
        e.target.split(".")[0]
        for e in h.edges
        if e.source.split(".")[0] == package and e.target.split(".")[0] != package
    }


def held_text(doc: str) -> str:
    """What a front door says its package holds: the first paragraph and every sentence with "holds", with the
    ``Imports`` sentence and backticked names left out (those are checked on their own)."""
    paragraphs = doc.split("\n\n")
    sentences = re.split(r"(?<=\.)\s+", " ".join(paragraphs[1:]))
    text = " ".join([paragraphs[0], *(s for s in sentences if "holds" in s)])
    text = re.sub(r"``[^`]*``|`[^`]*`", " ", text)
    return re.sub(r"Imports\s+[^.]*\.", " ", text)


def stale_holdings(h: house.House, package: str, doc: str) -> list[str]:
    """Words of what a front door says its package holds that name a module (or sub-package) directly inside
    another package and nowhere in this one: ``probes`` in arena's door, ``standings.probes`` in the tree."""
    own = {m.split(".")[-1] for m in h.files if m.startswith(f"{package}.")}
    elsewhere = {
        m.split(".")[-1]: m for m in sorted(h.files) if m.count(".") == 1 and not m.startswith(f"{package}.")
    }
    words = set(re.findall(r"[a-z_]+", held_text(doc)))
    return sorted(f"{w} (that is {elsewhere[w]})" for w in words if w in elsewhere and w not in own)


def missing_names(h: house.House, doc: str, layers: list[str]) -> list[str]:
    """Dotted names of the studio a front door cites (``training.jobs.runner``, ``common.files``) that do not exist."""
    missing = []
    for dotted in sorted(set(re.findall(rf"\b(?:{'|'.join(layers)})(?:\.\w+)+", doc))):
        parts = dotted.split(".")
        cut = max(i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in h.files)
        rest = parts[cut:]
        if len(rest) > 1 or (rest and rest[0] not in _top_level_names(h.trees[".".join(parts[:cut])])):
            missing.append(dotted)
    return missing


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def front_door_problems(h: house.House, layers: list[str]) -> list[str]:
    problems = []
    for package in layers:
        doc = ast.get_docstring(h.trees[package]) or ""
        where = f"{package}/__init__.py"
        claimed = claimed_imports(doc, layers)
        actual = actual_imports(h, package) & set(layers)
        if claimed is None:
            problems.append(f"{where}: no 'Imports ...' sentence (it imports {sorted(actual) or 'nothing'})")
        else:
            if claimed != actual:
                problems.append(
                    f"{where}: says it imports {sorted(claimed)}, its modules import {sorted(actual)}"
                )
            above = sorted(c for c in claimed if layers.index(c) >= layers.index(package))
            if above:
                problems.append(f"{where}: claims imports at or above its layer: {above}")
        problems += [f"{where}: says it holds {w}" for w in stale_holdings(h, package, doc)]
        problems += [f"{where}: cites {n}, which does not exist" for n in missing_names(h, doc, layers)]
    return problems


@pytest.fixture(scope="module")
def the_house() -> house.House:
    return house.read_house(ROOT, LAYERS)


def test_no_import_circle_unless_it_is_a_deliberate_recursion(the_house: house.House) -> None:
    assert unexplained_circles(the_house) == []


def reached(h: house.House, start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others (lazy and typing imports included)."""
    graph = h.graph()
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_the_job_queue_reaches_neither_publishing_nor_the_report_job(the_house: house.House) -> None:
    """``training.jobs.runner`` is the job queue alone: publishing (``training.publishing.publish``) and the report job
    (``training.report.job``, ``training.report.steps``) call it, never the other way round."""
    assert "training.jobs.runner" in the_house.files
    above = {
        "training.publishing.publish",
        "training.report.job",
        "training.report.steps",
        "training.jobs.job_process",
    }
    assert reached(the_house, "training.jobs.runner") & above == set()


def test_reached_follows_lazy_imports(tmp_path: Path) -> None:
    h = _tree(
        tmp_path,
        {
            "low/__init__.py": "",
            "low/a.py": "def f():\n    from low import b\n",
            "low/b.py": "import low.c\n",
            "low/c.py": "x = 1\n",
            "high/__init__.py": "",
        },
    )
    assert reached(h, "low.a") == {"low.b", "low.c"} and reached(h, "low.c") == set()


def test_the_readme_layer_line_is_the_layer_table(the_house: house.House) -> None:
    assert readme_layers() == LAYERS


def test_every_front_door_tells_the_truth(the_house: house.House) -> None:
    assert front_door_problems(the_house, readme_layers()) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> house.House:
    for rel, source in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return house.read_house(tmp_path, ["low", "high"])


def test_a_lazy_or_type_checking_circle_is_caught_and_a_docstring_can_explain_it(tmp_path: Path) -> None:
    h = _tree(
        tmp_path,
        {
            "low/__init__.py": '"""Low. Imports no other package of the studio."""\n',
            "low/a.py": "from low import b\n",
            "low/b.py": "def f():\n    from . import a\n",
            "low/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from low.d import X\n",
            "low/d.py": "import low.c\nX = 1\n",
            "high/__init__.py": '"""High. Imports low."""\n',
        },
    )
    assert house.circles(h.graph()) == [["low.a", "low.b"], ["low.c", "low.d"]]
    kinds = {(e.source, e.kind) for e in h.edges}
    assert ("low.b", "lazy") in kinds and ("low.c", "typing") in kinds
    assert len(unexplained_circles(h)) == 2
    (tmp_path / "low" / "b.py").write_text(
        '"""A deliberate recursion with low.a."""\ndef f():\n    from . import a\n'
    )
    h = house.read_house(tmp_path, ["low", "high"])
    assert [c.split(":")[0] for c in unexplained_circles(h)] == ["low.c <-> low.d"]


def test_a_longer_circle_is_one_component(tmp_path: Path) -> None:
    h = _tree(
        tmp_path,
        {
            "low/__init__.py": "",
            "low/a.py": "import low.b\n",
            "low/b.py": "from .c import x\n",
            "low/c.py": "x = 1\ndef g():\n    from low import a\n",
            "low/d.py": "from low import a\n",
            "high/__init__.py": "",
        },
    )
    assert house.circles(h.graph()) == [["low.a", "low.b", "low.c"]]


@pytest.mark.parametrize(
    ("low_doc", "high_doc", "high_source", "expected"),
    [
        ("Low.", "High. Imports low.", "import low.a\n", "low/__init__.py: no 'Imports ...' sentence"),
        ("Low. Imports no other package of the studio.", "High. Imports low.", "", "says it imports ['low']"),
        (
            "Low. Imports high.",
            "High. Imports low.",
            "import low.a\n",
            "claims imports at or above its layer",
        ),
        ("Low. Imports nothing.", "High: routes and a. Imports low.", "import low.a\n", "says it holds a"),
        (
            "Low. Imports nothing.",
            "High. Imports low. See ``low.a.missing``.",
            "import low.a\n",
            "cites low.a.missing",
        ),
        (
            "Low. Imports nothing.",
            "High. Imports low. It holds the a of low.",
            "import low.a\n",
            "says it holds a",
        ),
    ],
)
def test_the_front_door_check_catches_stale_doors(
    tmp_path: Path, low_doc: str, high_doc: str, high_source: str, expected: str
) -> None:
    h = _tree(
        tmp_path,
        {
            "low/__init__.py": f'"""{low_doc}"""\n',
            "low/a.py": "present = 1\n",
            "high/__init__.py": f'"""{high_doc}"""\n',
            "high/b.py": high_source,
        },
    )
    problems = front_door_problems(h, ["low", "high"])
    assert any(expected in p for p in problems), problems


def test_a_truthful_front_door_passes(tmp_path: Path) -> None:
    h = _tree(
        tmp_path,
        {
            "low/__init__.py": '"""Low: the a. Imports no other package of the studio."""\n',
            "low/a.py": "present = 1\n",
            "high/__init__.py": '"""High: the b, reading ``low.a.present``.\n\nImports low."""\n',
            "high/b.py": "def f():\n    from low.a import present\n",
        },
    )
    assert front_door_problems(h, ["low", "high"]) == []


#: The sycophancy probes' modules: the only ones whose name may say "probe" (the migration adds their tables).
PROBE_MODULES = {
    "standings/probes.py",
    "studio/pages/probes.py",
    "studio/cli/probes.py",
    "scripts/make_probe_items.py",
    "db/migrations/versions/0006a_probes.py",
}


def misnamed_probes(root: Path, layers: list[str]) -> list[str]:
    """Modules named ``*probe*`` outside the sycophancy probes' own, and classes named ``*Probe*`` in
    ``training/``: "probe" means a sycophancy probe; what a training job measures while it runs is a check."""
    found = []
    for folder in [*layers, "scripts", "benchmarks"]:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if "probe" in path.stem.lower() and rel not in PROBE_MODULES:
                found.append(f"{rel}: a module named probe outside the sycophancy probes")
    for path in sorted((root / "training").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and "probe" in node.name.lower():
                found.append(
                    f"{path.relative_to(root).as_posix()}:{node.lineno}: class {node.name} in training"
                )
    return found


def test_probe_means_the_sycophancy_probes_only() -> None:
    assert misnamed_probes(ROOT, LAYERS) == []


def test_the_probe_name_check_catches_a_stray_module_and_class(tmp_path: Path) -> None:
    for rel, source in {
        "standings/probes.py": "class ProbeItem:\n    pass\n",
        "training/tasks/probe.py": "x = 1\n",
        "training/objectives/kl.py": "class KLProbe:\n    pass\n",
        "scripts/make_probe_items.py": "",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(source, encoding="utf-8")
    (tmp_path / "benchmarks").mkdir()
    found = misnamed_probes(tmp_path, ["standings", "training"])
    assert found == [
        "training/tasks/probe.py: a module named probe outside the sycophancy probes",
        "training/objectives/kl.py:1: class KLProbe in training",
    ]


def test_no_room_of_training_climbs_back_up(the_house: house.House) -> None:
    """A room of ``training/`` (jobs, objectives, publishing, report, tasks) never imports ``training`` itself or a
    module directly in it (``training.compare``): the front door uses the rooms, never the other way round."""
    climbing = [
        f"{e.source}:{e.line} -> {e.target}"
        for e in the_house.edges
        if house.room_of(e.source) and house.room_of(e.target) == ""
    ]
    assert climbing == []
    assert set(house.rooms(the_house)) == {"jobs", "objectives", "publishing", "report", "tasks"}


#: The ceiling on the average words per sentence of the module docstrings. Measured after the rewrite of issue
#: #47 at 11.5 (23.6 before), and set at that figure rounded up to the next whole number.
WORDS_PER_SENTENCE_CEILING = 12


def test_module_docstrings_keep_their_sentences_short(the_house: house.House) -> None:
    """The module docstrings average at most 12 words a sentence (``scripts/house.py`` measures it: inline
    code one word; list items, lines ending with ":" and table rows each a sentence). The ceiling is the
    figure measured after issue #47's rewrite (11.5, from 23.6) rounded up to the next whole number. A
    docstring that pushes the average up should be split into shorter sentences or a list."""
    average, worst = house.words_per_sentence(the_house, top=5)
    listed = ", ".join(f"{name} ({avg:.1f})" for avg, _, name in worst)
    assert average <= WORDS_PER_SENTENCE_CEILING, (
        f"module docstrings average {average:.1f} words a sentence (ceiling {WORDS_PER_SENTENCE_CEILING}); "
        f"longest: {listed}"
    )


def test_the_sentence_measure_counts_code_as_one_word_and_lists_as_sentences() -> None:
    doc = (
        "What it holds: ``a long code span`` here. Second one!\n"
        "\n"
        "Steps:\n"
        "1. first step. Its second sentence\n"
        "   runs on here.\n"
        "   - a nested item\n"
        "- a bullet\n"
        "  that wraps\n"
        "Back at the margin\n"
        "\n"
        "  a   table   row\n"
    )
    assert house.docstring_sentences(doc) == [
        "What it holds: CODE here.",
        "Second one!",
        "Steps:",
        "first step.",
        "Its second sentence runs on here.",
        "a nested item",
        "a bullet that wraps",
        "Back at the margin",
        "a   table   row",
    ]
    assert [house.word_count(s) for s in house.docstring_sentences(doc)[:2]] == [5, 2]


def test_the_average_pools_sentences_and_leaves_generated_migrations_out(tmp_path: Path) -> None:
    for rel, source in {
        "db/__init__.py": '"""One two three four. Five six."""\n',
        "db/a.py": '"""One two three four five six seven eight nine ten."""\n',
        "db/migrations/versions/0001_x.py": '"""' + "word " * 90 + '"""\n',
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(source, encoding="utf-8")
    h = house.read_house(tmp_path, ["db"])
    assert "db.migrations.versions.0001_x" in h.trees
    average, worst = house.words_per_sentence(h)
    assert average == pytest.approx(16 / 3)
    assert [name for _, _, name in worst] == ["db.a", "db"]
