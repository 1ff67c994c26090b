"""The tone axes on sentences written apart from the rules: ``tests/data/tone_eval_corpus.jsonl``.

Someone who had not read the rules wrote and labelled 862 sentences, then split them once into halves.
The card beside it (``tone_eval_corpus.md``) gives its source, licence, counts and SHA-256.
The rules were tuned on the ``tune`` half only; the ``eval`` half is read here for the figures.
The corpus is frozen: its hash must match the card, so nobody edits the eval half after the fact.
Every row is checked: fields, axes, register, half, and unique text; a bad row is named by line and field.
Each axis keeps a floor on the eval half, set a little under the measured figure.
The learned model alone and the rules or the model keep floors of their own (``textfeatures.tone_model``).
A failure prints counts only, never eval sentences: tune on the tune half, not on these.
docs/training.md states the measured figures with their Wilson intervals; a test checks that table.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.tone_scores import Score, score_rows
from vibestudio.common.stats import wilson
from vibestudio.textfeatures import tone

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "tone_eval_corpus.jsonl"
CARD = ROOT / "tests" / "data" / "tone_eval_corpus.md"
DOC = ROOT / "docs" / "training.md"
HALVES = ("tune", "eval")
REGISTERS = frozenset(
    "chat-assistant customer-support forum-reply email teaching review casual-text formal fiction-dialogue "
    "code-review".split()
)
FIELDS = ("text", "axes", "register", "source", "half")
#: The least each axis keeps on the eval half (precision, recall): the measured figure less about 0.05 (0.03 for
#: apology's precision, so the floor holds its gain over version 4's 0.82). Figures and intervals: docs/training.md.
FLOORS: dict[str, tuple[float, float]] = {
    "flattery": (0.83, 0.28),
    "agreement": (0.88, 0.59),
    "apology": (0.83, 0.87),
    "enthusiasm": (0.91, 0.88),
    "feelings": (0.90, 0.35),
}
GOAL = 0.8  # issue #50: at least 0.8 precision and recall per axis on the eval half
#: The learned model alone (``textfeatures.tone_model``) and the rules or the model (``tone.axes(..., with_model=True)``),
#: on the eval half. Measured once, after the model, its C and its thresholds were chosen on the tune half by
#: ``scripts/fit_tone_model.py``: model alone 0.50/0.50 flattery, 0.70/0.66 agreement, 0.80/0.67 apology, 0.76/0.68
#: enthusiasm, 0.79/0.70 feelings; rules or model 0.53/0.61, 0.75/0.83, 0.82/0.96, 0.80/0.95, 0.79/0.77 (precision/
#: recall, Wilson intervals in docs/training.md). Floors: the measured figure less 0.05.
SOURCE_FLOORS: dict[str, dict[str, tuple[float, float]]] = {
    "model": {
        "flattery": (0.45, 0.45),
        "agreement": (0.65, 0.61),
        "apology": (0.75, 0.62),
        "enthusiasm": (0.71, 0.63),
        "feelings": (0.74, 0.65),
    },
    "rules or model": {
        "flattery": (0.48, 0.56),
        "agreement": (0.70, 0.78),
        "apology": (0.77, 0.91),
        "enthusiasm": (0.75, 0.90),
        "feelings": (0.74, 0.72),
    },
}


def problems(lines: list[str], name: str = CORPUS.name) -> list[str]:
    """Every problem of the corpus's rows, each naming the file, line and field."""
    out: list[str] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(lines, 1):
        where = f"{name} line {n}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            out.append(f"{where}: not JSON ({e.msg})")
            continue
        if not isinstance(row, dict):
            out.append(f"{where}: not a JSON object")
            continue
        for field in sorted(set(FIELDS) - set(row)):
            out.append(f"{where}: field {field!r} missing")
        for field in sorted(set(row) - set(FIELDS)):
            out.append(f"{where}: field {field!r} unknown")
        text, axes = row.get("text"), row.get("axes")
        if "text" in row and (not isinstance(text, str) or not text.strip()):
            out.append(f"{where}: field 'text' must be a non-empty string")
        elif isinstance(text, str):
            key = text.casefold()
            if key in seen:
                out.append(f"{where}: field 'text' repeats line {seen[key]}")
            seen.setdefault(key, n)
        if "axes" in row and (
            not isinstance(axes, list)
            or any(a not in tone.AXES for a in axes)
            or axes != sorted(set(axes), key=tone.AXES.index)
        ):
            out.append(f"{where}: field 'axes' must list axes of {tone.AXES} once each, in that order")
        if "register" in row and (not isinstance(row["register"], str) or row["register"] not in REGISTERS):
            out.append(f"{where}: field 'register' is {row['register']!r}, not one of {sorted(REGISTERS)}")
        if "source" in row and row["source"] != "written":
            out.append(f"{where}: field 'source' is {row['source']!r}, not 'written'")
        if "half" in row and row["half"] not in HALVES:
            out.append(f"{where}: field 'half' is {row['half']!r}, not one of {HALVES}")
    return out


@cache
def rows() -> tuple[dict, ...]:
    return tuple(json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines())


@cache
def scores() -> dict[tuple[str, str], Score]:
    return score_rows(rows(), HALVES)


def cell(k: int, n: int) -> str:
    """A share with its count and 95% Wilson interval: "0.93 (41/44) [0.82, 0.98]"."""
    ci = wilson(k, n)
    if ci is None:
        return f"can't tell (0/{n}: it never fired)"
    return f"{k / n:.2f} ({k}/{n}) [{ci[0]:.2f}, {ci[1]:.2f}]"


def table_md() -> list[str]:
    """The docs' rows: per axis and half, precision and recall with counts and intervals, and the goal met."""
    out = []
    for axis in tone.AXES:
        cells = []
        for half in HALVES:
            s = scores()[(axis, half)]
            cells += [cell(s.tp, s.tp + s.fp), cell(s.tp, s.tp + s.fn)]
        ev = scores()[(axis, "eval")]
        goal = "yes" if min(ev.precision, ev.recall) >= GOAL else "no"
        out.append(f"| `{axis}` | " + " | ".join(cells) + f" | {goal} |")
    return out


def test_the_corpus_is_the_file_its_card_hashes():
    digest = hashlib.sha256(CORPUS.read_bytes()).hexdigest()
    stated = re.search(r"\b([0-9a-f]{64})\s+tone_eval_corpus\.jsonl", CARD.read_text(encoding="utf-8"))
    assert stated, f"{CARD.name}: no SHA-256 line for tone_eval_corpus.jsonl"
    assert digest == stated.group(1), (
        f"{CORPUS.name} changed after it was frozen (SHA-256 {digest}, the card says {stated.group(1)}); "
        "a label correction updates the card's counts and checksum in the same change"
    )


def test_every_row_is_valid():
    assert problems(CORPUS.read_text(encoding="utf-8").splitlines()) == []


def test_the_cards_counts_are_the_rows():
    card = CARD.read_text(encoding="utf-8")
    for axis in tone.AXES:
        n = [sum(axis in r["axes"] and r["half"] == h for r in rows()) for h in HALVES]
        assert f"| {axis} (positives) | {n[0]} | {n[1]} | {sum(n)} |" in card, axis
    n = [sum(not r["axes"] and r["half"] == h for r in rows()) for h in HALVES]
    assert f"| negatives (`axes: []`) | {n[0]} | {n[1]} | {sum(n)} |" in card
    assert f"{len(rows())} rows in all." in card


@given(
    field=st.sampled_from(FIELDS),
    bad=st.one_of(
        st.none(), st.integers(), st.just(""), st.just("nonsense"), st.just(["feelings", "flattery"])
    ),
    line=st.integers(1, 40),
)
def test_a_bad_field_is_named_with_its_line(field, bad, line):
    good = {"text": "x", "axes": [], "register": "email", "source": "written", "half": "tune"}
    lines = [json.dumps({**good, "text": f"row {i}"}) for i in range(1, 41)]
    if field == "text" and isinstance(bad, list):
        bad = None
    lines[line - 1] = json.dumps({**good, "text": f"row {line}", field: bad})
    if field == "text" and bad == "nonsense":
        lines[line - 1] = json.dumps({**good, "text": "ROW 1"})  # repeats line 1 (case-insensitively)
        line = max(line, 2)
        lines[line - 1] = json.dumps({**good, "text": "ROW 1"})
    found_ = problems(lines, "c.jsonl")
    assert found_, (field, bad)
    assert all(p.startswith(f"c.jsonl line {line}: field '{field}'") for p in found_), found_


@pytest.mark.parametrize("axis", tone.AXES)
def test_each_axis_keeps_its_floor_on_the_eval_half(axis):
    s = scores()[(axis, "eval")]
    p_floor, r_floor = FLOORS[axis]
    counts = f"tp={s.tp} fp={s.fp} fn={s.fn}; read the tune half's misses, not the eval half's rows"
    assert s.precision >= p_floor, f"{axis}: eval precision {s.precision:.2f} < {p_floor} ({counts})"
    assert s.recall >= r_floor, f"{axis}: eval recall {s.recall:.2f} < {r_floor} ({counts})"


@cache
def source_scores() -> dict[tuple[str, str], Score]:
    """Per (source, axis) on the eval half: hits by the model alone and by the rules or the model (``tone.named_by``)."""
    tally = {(src, a): [0, 0, 0] for src in SOURCE_FLOORS for a in tone.AXES}
    for row in rows():
        if row["half"] != "eval":
            continue
        by = tone.named_by(row["text"]) or {a: dict.fromkeys(tone.SOURCES, 0.0) for a in tone.AXES}
        for axis in tone.AXES:
            n, want = by[axis], axis in row["axes"]
            hits = {"model": n["model"] + n["both"] > 0, "rules or model": sum(n.values()) > 0}
            for src, hit in hits.items():
                t = tally[(src, axis)]
                t[0] += hit and want
                t[1] += hit and not want
                t[2] += want and not hit
    return {k: Score(k[1], "eval", *v) for k, v in tally.items()}


@pytest.mark.parametrize("axis", tone.AXES)
@pytest.mark.parametrize("source", list(SOURCE_FLOORS))
def test_the_model_and_the_combination_keep_their_floors_on_the_eval_half(source, axis):
    s = source_scores()[(source, axis)]
    p_floor, r_floor = SOURCE_FLOORS[source][axis]
    counts = f"tp={s.tp} fp={s.fp} fn={s.fn}; refit on the tune half, never on these rows"
    assert s.precision >= p_floor, (
        f"{source}, {axis}: eval precision {s.precision:.2f} < {p_floor} ({counts})"
    )
    assert s.recall >= r_floor, f"{source}, {axis}: eval recall {s.recall:.2f} < {r_floor} ({counts})"


def test_the_combination_counts_what_either_source_names():
    for row in rows()[:120]:
        rules, both = tone.axes(row["text"]), tone.axes(row["text"], with_model=True)
        assert (rules is None) == (both is None)
        if rules is not None and both is not None:
            assert all(both[a] >= rules[a] for a in tone.AXES), row["half"]


def source_table_md() -> list[str]:
    """The docs' rows per axis and source on the eval half: precision and recall with counts and intervals."""
    out = []
    for axis in tone.AXES:
        for source in SOURCE_FLOORS:
            s = source_scores()[(source, axis)]
            goal = "yes" if min(s.precision, s.recall) >= GOAL else "no"
            cells = [cell(s.tp, s.tp + s.fp), cell(s.tp, s.tp + s.fn)]
            out.append(f"| `{axis}` | {source} | " + " | ".join(cells) + f" | {goal} |")
    return out


def test_the_docs_state_the_models_measured_figures():
    doc = DOC.read_text(encoding="utf-8")
    missing = [line for line in source_table_md() if line not in doc]
    assert not missing, (
        "docs/training.md's learned-model table is out of date; its rows now read:\n"
        + "\n".join(source_table_md())
    )


def after_table(doc: str) -> str:
    """The docs' table of the current rules: from "After (" to the first blank line after its rows."""
    start = doc.index("\nAfter (")
    return doc[start : doc.index("\n\n", doc.index("\n|", start))]


def test_the_docs_state_the_measured_figures():
    doc = after_table(DOC.read_text(encoding="utf-8"))
    missing = [line for line in table_md() if line not in doc]
    assert not missing, (
        "docs/training.md's eval-corpus table is out of date; its rows now read:\n" + "\n".join(table_md())
    )
