"""A learned tone detector, one sentence at a time, beside the rules of ``textfeatures.tone``.

The rules name a vibe by its words; many wordings have no closed vocabulary. This model reads the rest.
It is TF-IDF over word 1-2 grams and character 2-5 grams inside words, then one logistic regression per axis.
It was fitted by ``scripts/fit_tone_model.py`` on the ``tune`` half of ``tests/data/tone_eval_corpus.jsonl`` only.
The fitted numbers live in ``data/tone_model.json``: plain JSON, never a pickle.
This module recomputes the transform with numpy, so the runtime needs no scikit-learn.
The file names the corpus SHA-256 and the split seed it was fitted on; loading checks its shape.
The weights derive from a CC0 corpus; the file's header says so.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

MODEL_FILE = Path(__file__).resolve().parent / "data" / "tone_model.json"
FORMAT = "vibestudio-tone-model/1"
_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # scikit-learn's default token pattern
_WHITE = re.compile(r"\s\s+")  # scikit-learn's whitespace run, for char_wb


class ModelFileError(ValueError):
    """The model file is missing a field or has one of the wrong shape."""


def prepare(text: str) -> str:
    """The text the model reads: curly apostrophes folded to straight ones, lower case."""
    return text.replace("\u2019", "'").replace("\u2018", "'").replace("\u02bc", "'").lower()


def word_grams(doc: str, lo: int = 1, hi: int = 2) -> list[str]:
    """Word n-grams as scikit-learn's ``analyzer="word"`` makes them from a prepared text."""
    tokens = _TOKEN.findall(doc)
    out = list(tokens) if lo == 1 else []
    for n in range(max(lo, 2), min(hi, len(tokens)) + 1):
        out += [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return out


def char_grams(doc: str, lo: int = 2, hi: int = 5) -> list[str]:
    """Character n-grams inside word boundaries, as scikit-learn's ``analyzer="char_wb"`` makes them."""
    out: list[str] = []
    for w in _WHITE.sub(" ", doc).split():
        w = f" {w} "
        for n in range(lo, hi + 1):
            offset = 0
            out.append(w[:n])
            while offset + n < len(w):
                offset += 1
                out.append(w[offset : offset + n])
            if offset == 0:
                break
    return out


class _Part:
    """One TF-IDF block: its vocabulary, idf and n-gram analyzer."""

    def __init__(self, spec: dict[str, Any], where: str) -> None:
        vocab, idf = spec.get("vocabulary"), spec.get("idf")
        if not isinstance(vocab, list) or not isinstance(idf, list) or len(vocab) != len(idf) or not vocab:
            raise ModelFileError(f"{where}: 'vocabulary' and 'idf' must be lists of the same non-zero length")
        lo, hi = spec.get("ngram_range", (0, 0))
        self.analyzer = spec.get("analyzer")
        if self.analyzer not in ("word", "char_wb") or not 1 <= lo <= hi:
            raise ModelFileError(f"{where}: 'analyzer' must be word or char_wb with a valid 'ngram_range'")
        self.lo, self.hi = int(lo), int(hi)
        self.sublinear = bool(spec.get("sublinear_tf", False))
        self.index = {t: i for i, t in enumerate(vocab)}
        self.idf = np.asarray(idf, dtype=np.float64)

    def transform(self, doc: str) -> tuple[np.ndarray, np.ndarray]:
        """Indices and l2-normalised TF-IDF values of one prepared text."""
        grams = (
            word_grams(doc, self.lo, self.hi)
            if self.analyzer == "word"
            else char_grams(doc, self.lo, self.hi)
        )
        tf = Counter(self.index[g] for g in grams if g in self.index)
        if not tf:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        idx = np.fromiter(tf.keys(), dtype=np.int64, count=len(tf))
        val = np.fromiter(tf.values(), dtype=np.float64, count=len(tf))
        if self.sublinear:
            val = np.log(val) + 1.0
        val *= self.idf[idx]
        norm = math.sqrt(float(val @ val))
        return idx, val / norm if norm else val


class ToneModel:
    """The fitted model: TF-IDF blocks side by side, one logistic regression and threshold per axis."""

    def __init__(self, spec: dict[str, Any], where: str = "tone model") -> None:
        if spec.get("format") != FORMAT:
            raise ModelFileError(f"{where}: 'format' is {spec.get('format')!r}, not {FORMAT!r}")
        for field in ("corpus_sha256", "split_seed", "licence", "parts", "axes"):
            if field not in spec:
                raise ModelFileError(f"{where}: field {field!r} missing")
        self.parts = [_Part(p, f"{where}: parts[{i}]") for i, p in enumerate(spec["parts"])]
        self.offsets = np.cumsum([0] + [len(p.idf) for p in self.parts])
        width = int(self.offsets[-1])
        axes = spec["axes"]
        if not isinstance(axes, dict) or not axes:
            raise ModelFileError(f"{where}: 'axes' must map each axis to its weights")
        self.axes = tuple(axes)
        coef, self.intercept, self.threshold = [], [], []
        for axis, a in axes.items():
            c = a.get("coef") if isinstance(a, dict) else None
            if not isinstance(c, list) or len(c) != width:
                raise ModelFileError(f"{where}: axes.{axis}.coef must list {width} weights")
            for field in ("intercept", "threshold"):
                if not isinstance(a.get(field), (int, float)):
                    raise ModelFileError(f"{where}: axes.{axis}.{field} must be a number")
            coef.append(c)
            self.intercept.append(float(a["intercept"]))
            self.threshold.append(float(a["threshold"]))
        self.coef = np.asarray(coef, dtype=np.float64).T  # features x axes
        self.spec = spec

    def decision(self, text: str) -> np.ndarray:
        """The logistic regressions' raw scores (one per axis) for one text."""
        doc = prepare(text)
        out = np.asarray(self.intercept, dtype=np.float64).copy()
        for part, off in zip(self.parts, self.offsets[:-1], strict=True):
            idx, val = part.transform(doc)
            if len(idx):
                out += val @ self.coef[idx + off]
        return out

    def proba(self, text: str) -> dict[str, float]:
        """The probability of each axis for one text."""
        z = self.decision(text)
        return {a: 1.0 / (1.0 + math.exp(-float(v))) for a, v in zip(self.axes, z, strict=True)}

    def found(self, text: str) -> frozenset[str]:
        """The axes whose probability reaches their threshold."""
        p = self.proba(text)
        return frozenset(a for a, t in zip(self.axes, self.threshold, strict=True) if p[a] >= t)


def load(path: Path = MODEL_FILE) -> ToneModel:
    """A model file read and checked; a bad file is named with the field at fault."""
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ModelFileError(f"{path.name}: not found (run scripts/fit_tone_model.py)") from e
    except json.JSONDecodeError as e:
        raise ModelFileError(f"{path.name}: not JSON ({e.msg} at line {e.lineno})") from e
    if not isinstance(spec, dict):
        raise ModelFileError(f"{path.name}: not a JSON object")
    return ToneModel(spec, path.name)


@cache
def model() -> ToneModel:
    """The shipped model, loaded once."""
    return load()


@lru_cache(maxsize=1 << 16)
def sentence_axes(sentence: str) -> frozenset[str]:
    """The tone axes the model finds in one sentence (cached like the rules)."""
    return model().found(sentence)
