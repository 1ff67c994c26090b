"""One of each (#47): the Wilson interval, the Elo update, the liveness check and the drift record are defined
once, and a scan of the packages fails on a second copy.

- Wilson: ``common.stats.wilson`` (SciPy's); no other function named for it, no other copy of its formula, no
  other call of SciPy's, and one z for 95% (``common.stats.Z95``), no other literal 1.96.
- Elo: ``standings.ratings.online_elo``; no other loop applies the update.
- Liveness: ``common.processes.process_alive``; no other ``kill(pid, 0)``.
- Drift record: ``common.stats.Change``; no other dataclass holds a paired change's fields.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.helpers.house import house

ROOT = Path(__file__).resolve().parents[1]
WILSON_HOME = "common/stats.py"
ELO_HOME = "standings/ratings/_elo.py"
LIVENESS_HOME = "common/processes.py"
CHANGE_FIELDS = {"parent", "child", "delta", "low", "high", "p", "n"}
#: The Wilson formula's telltale terms: z^2 / (4 n^2) under the root, z^2 / (2n) in the centre.
WILSON_TERMS = re.compile(
    r"/\s*\(\s*4\s*\*\s*n\s*\*\s*n\s*\)|z\s*\*\s*z\s*/\s*\(\s*2\s*\*\s*n\s*\)|\*\*\s*2\s*/\s*\(\s*2\s*\*\s*n"
)
#: The online Elo update: expected score 1 / (1 + exp(...)) or 1 / (1 + 10 ** (...)) inside a loop.
ELO_TERMS = re.compile(r"1(\.0)?\s*/\s*\(\s*1(\.0)?\s*\+\s*(exp|10(\.0)?\s*\*\*)")


def package_files() -> list[tuple[str, str]]:
    paths = sorted(p for name in house.PACKAGES for p in (ROOT / name).rglob("*.py"))
    return [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in paths]


def copies(files: list[tuple[str, str]]) -> list[str]:
    """Every second copy of the four, as ``path:line: what``."""
    found = []
    for path, source in files:
        tree = ast.parse(source, filename=path)
        for node in ast.walk(tree):
            where = f"{path}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if "wilson" in node.name.lower() and path != WILSON_HOME:
                    found.append(f"{where}: a Wilson interval ({node.name})")
                if path != ELO_HOME and any(
                    isinstance(n, ast.For) and ELO_TERMS.search(ast.unparse(n)) for n in ast.walk(node)
                ):
                    found.append(f"{where}: an online Elo update ({node.name})")
            if isinstance(node, ast.Constant) and isinstance(node.value, float) and path != WILSON_HOME:
                if 1.959 < node.value < 1.961:
                    found.append(f"{where}: a z for 95% ({node.value}; use common.stats.Z95)")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and path != WILSON_HOME:
                if node.func.attr == "proportion_ci":
                    found.append(f"{where}: SciPy's interval called outside common.stats.wilson")
            if isinstance(node, ast.Call) and path != LIVENESS_HOME and _is_kill_zero(node):
                found.append(f"{where}: a liveness check (kill(pid, 0); use common.processes.process_alive)")
            if isinstance(node, ast.ClassDef) and (path, node.name) != (WILSON_HOME, "Change"):
                fields = {
                    s.target.id
                    for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                }
                if CHANGE_FIELDS <= fields:
                    found.append(
                        f"{where}: a second paired-change record ({node.name}; use common.stats.Change)"
                    )
        if path != WILSON_HOME:
            for m in WILSON_TERMS.finditer(source):
                found.append(
                    f"{path}:{source.count(chr(10), 0, m.start()) + 1}: the Wilson formula ({m.group()})"
                )
    return found


def _is_kill_zero(node: ast.Call) -> bool:
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    last = node.args[-1] if len(node.args) == 2 else None
    return name == "kill" and isinstance(last, ast.Constant) and last.value == 0


def test_one_of_each() -> None:
    assert copies(package_files()) == []


def test_each_home_holds_its_one() -> None:
    from vibestudio.common.processes import process_alive
    from vibestudio.common.stats import Change, wilson
    from vibestudio.standings.ratings import online_elo

    assert all(callable(f) for f in (process_alive, wilson, online_elo)) and Change.from_dict


@pytest.mark.parametrize(
    ("source", "expected"),
    [  # the copies #47 found, as they were written
        (
            "def wilson(k, n, z=1.96):\n    p = k / n\n    d = 1 + z * z / n\n"
            "    return z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d\n",
            "a Wilson interval (wilson)",
        ),
        (
            "def _share(k, n):\n    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))\n",
            "the Wilson formula",
        ),
        ("_Z = 1.959963984540054\n", "a z for 95%"),
        ("def rate(k, n):\n    return binomtest(k, n).proportion_ci(method='wilson')\n", "SciPy's interval"),
        (
            "def _advance_elo(ratings, a, b, y, k):\n    r = ratings.tolist()\n"
            "    for i, j, s in zip(a, b, y):\n        delta = k * (s - 1.0 / (1.0 + exp((r[j] - r[i]) * c)))\n",
            "an online Elo update (_advance_elo)",
        ),
        (
            "def pid_alive(pid):\n    try:\n        os.kill(pid, 0)\n    except ProcessLookupError:\n"
            "        return False\n    return True\n",
            "a liveness check",
        ),
        (
            "@dataclass\nclass FeatureDrift:\n    parent: float\n    child: float\n    delta: float\n"
            "    low: float\n    high: float\n    p: float\n    n: int\n    flagged: bool\n",
            "a second paired-change record (FeatureDrift",
        ),
    ],
)
def test_the_scan_catches_a_copy(source: str, expected: str) -> None:
    found = copies([("training/report/x.py", source)])
    assert any(expected in hit for hit in found), found


def test_the_scan_leaves_alone_what_is_not_a_copy() -> None:
    source = (
        "from vibestudio.common.stats import Z95, wilson\n"
        "def predict(r, a, b):\n    return 1.0 / (1.0 + 10.0 ** ((r[b] - r[a]) / 400.0))\n"
        "def share(k, n):\n    return wilson(k, n)\n"
        "os.kill(pid, signal.SIGTERM)\n"
    )
    assert copies([("standings/x.py", source)]) == []
