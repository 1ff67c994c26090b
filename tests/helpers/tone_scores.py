"""Precision and recall of the tone axes on a labelled corpus, for the corpus tests.

Both corpora (the rule authors' and the one written apart from the rules) are scored the same way: one ``Score``
per axis and half, from the axes the rules find in each row against the axes it is labelled with.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from vibestudio.textfeatures import tone


@dataclass(frozen=True)
class Score:
    axis: str
    half: str
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def found(row: dict) -> set[str]:
    """The tone axes the rules find in a row's text (read against its prompt, where it has one)."""
    got = tone.axes(row["text"], row.get("prompt"))
    return {axis for axis, n in (got or {}).items() if n > 0}


def score_rows(rows: Iterable[dict], halves: Sequence[str]) -> dict[tuple[str, str], Score]:
    """One Score per (axis, half) over labelled rows."""
    tally = {(a, h): [0, 0, 0] for a in tone.AXES for h in halves}
    for row in rows:
        got, want = found(row), set(row["axes"])
        for axis in tone.AXES:
            t = tally[(axis, row["half"])]
            t[0] += axis in got and axis in want
            t[1] += axis in got and axis not in want
            t[2] += axis in want and axis not in got
    return {k: Score(k[0], k[1], *v) for k, v in tally.items()}
