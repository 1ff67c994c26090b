"""Fit the learned tone detector on the tune half of the eval corpus, and write it as plain JSON.

Reads ``tests/data/tone_eval_corpus.jsonl`` and keeps the ``tune`` rows only; eval rows are dropped on reading.
Per axis: TF-IDF (word 1-2 grams, char_wb 2-5 grams) and a logistic regression.
The regularisation C and the decision threshold are chosen by repeated stratified 5-fold CV inside the tune half.
Rows are scored as the detector scores them: each sentence apart, a row found when any sentence is.
Writes ``textfeatures/data/tone_model.json`` (``textfeatures.tone_model`` reads it; no pickle).

``--measure-eval`` does not fit. It scores the eval half once with the shipped file:
rules alone, model alone, and rules or model, with Wilson 95% intervals. Nothing is chosen from it.

``--speed`` times 1,000 answers: the rules alone, then the rules or the model.

Usage: python scripts/fit_tone_model.py [--out PATH] | --measure-eval | --speed
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import FeatureUnion, Pipeline

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vibestudio.common.stats import wilson  # noqa: E402
from vibestudio.textfeatures import tone, tone_model  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "tone_eval_corpus.jsonl"
CARD = ROOT / "tests" / "data" / "tone_eval_corpus.md"
SPLIT_SEED = 20261206  # the card's split generator; also seeds the CV folds here
GRID_C = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
THRESHOLDS = tuple(round(t, 2) for t in np.arange(0.05, 0.96, 0.01))
FOLDS, REPEATS = 5, 3
WORD: dict[str, Any] = {"analyzer": "word", "ngram_range": (1, 2), "min_df": 2, "sublinear_tf": True}
CHAR: dict[str, Any] = {"analyzer": "char_wb", "ngram_range": (2, 5), "min_df": 2, "sublinear_tf": True}
LICENCE = (
    "Weights derived from tests/data/tone_eval_corpus.jsonl (CC0-1.0, every sentence written for the project), "
    "tune half only; this file is dedicated to the public domain under CC0 1.0 as well."
)


def corpus_sha() -> str:
    """The corpus's SHA-256, checked against the card (a changed corpus is refused)."""
    digest = hashlib.sha256(CORPUS.read_bytes()).hexdigest()
    stated = re.search(r"\b([0-9a-f]{64})\s+tone_eval_corpus\.jsonl", CARD.read_text(encoding="utf-8"))
    if not stated or stated.group(1) != digest:
        raise SystemExit(f"{CORPUS.name}: SHA-256 {digest} is not the card's; refusing to fit")
    return digest


def half_rows(half: str) -> list[dict]:
    """The corpus rows of one half (the other half's rows are dropped as they are read)."""
    out = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["half"] == half:
            out.append(row)
    return out


def row_sentences(text: str) -> list[str]:
    """The sentences the detector reads in a row: its own prose, split as ``textfeatures.tone`` splits it."""
    return tone.sentences(tone.own_prose(text))


def pipeline(c: float) -> Pipeline:
    return Pipeline(
        [
            ("tfidf", FeatureUnion([("word", TfidfVectorizer(**WORD)), ("char", TfidfVectorizer(**CHAR))])),
            ("lr", LogisticRegression(C=c, class_weight="balanced", max_iter=5000)),
        ]
    )


def row_scores(pipe: Pipeline, sents: list[list[str]]) -> np.ndarray:
    """Each row's score: the highest probability of any of its sentences (0 for a row with none)."""
    flat = [tone_model.prepare(s) for ss in sents for s in ss]
    p = pipe.predict_proba(flat)[:, 1] if flat else np.zeros(0)
    out, i = np.zeros(len(sents)), 0
    for r, ss in enumerate(sents):
        if ss:
            out[r] = p[i : i + len(ss)].max()
        i += len(ss)
    return out


def f1(y: np.ndarray, hit: np.ndarray) -> float:
    tp = float((y & hit).sum())
    return 2 * tp / (y.sum() + hit.sum()) if y.sum() + hit.sum() else 0.0


def choose(texts: list[str], sents: list[list[str]], y: np.ndarray) -> dict:
    """C and threshold of the best pooled out-of-fold F1 (model alone), over repeated stratified folds."""
    best: dict = {"f1": -1.0}
    for c in GRID_C:
        pooled_y, pooled_p = [], []
        for rep in range(REPEATS):
            folds = StratifiedKFold(FOLDS, shuffle=True, random_state=SPLIT_SEED + rep)
            oof = np.zeros(len(y))
            for train, test in folds.split(texts, y):
                pipe = pipeline(c).fit([tone_model.prepare(texts[i]) for i in train], y[train])
                oof[test] = row_scores(pipe, [sents[i] for i in test])
            pooled_y.append(y)
            pooled_p.append(oof)
        yy, pp = np.concatenate(pooled_y), np.concatenate(pooled_p)
        for t in THRESHOLDS:
            hit = pp >= t
            score = f1(yy, hit)
            if score > best["f1"] + 1e-12:
                tp = int((yy & hit).sum())
                best = {
                    "f1": score,
                    "C": c,
                    "threshold": t,
                    "precision": tp / max(1, int(hit.sum())),
                    "recall": tp / max(1, int(yy.sum())),
                }
    return best


def fit(out: Path) -> None:
    sha = corpus_sha()
    rows = half_rows("tune")
    texts = [tone.own_prose(r["text"]) for r in rows]
    sents = [row_sentences(r["text"]) for r in rows]
    started = time.time()
    axes: dict[str, dict] = {}
    cv: dict[str, dict] = {}
    # One shared TF-IDF: fitted without labels, so every axis's weights line up with one vocabulary.
    shared = pipeline(1.0).named_steps["tfidf"].fit([tone_model.prepare(t) for t in texts])
    for axis in tone.AXES:
        y = np.array([axis in r["axes"] for r in rows])
        pick = choose(texts, sents, y)
        lr = LogisticRegression(C=pick["C"], class_weight="balanced", max_iter=5000)
        lr.fit(shared.transform([tone_model.prepare(t) for t in texts]), y)
        axes[axis] = {
            "C": pick["C"],
            "threshold": pick["threshold"],
            "intercept": float(lr.intercept_[0]),
            "coef": [float(x) for x in lr.coef_[0]],
        }
        cv[axis] = {k: round(v, 4) for k, v in pick.items() if k in ("f1", "precision", "recall")}
        print(
            f"{axis:11s} C={pick['C']:<5} threshold={pick['threshold']:.2f} out-of-fold (tune half, model alone): "
            f"F1 {pick['f1']:.2f} precision {pick['precision']:.2f} recall {pick['recall']:.2f}"
        )
    parts = []
    for name, vec in shared.transformer_list:
        vocab = sorted(vec.vocabulary_, key=vec.vocabulary_.__getitem__)
        spec = WORD if name == "word" else CHAR
        parts.append(
            {
                "analyzer": spec["analyzer"],
                "ngram_range": list(spec["ngram_range"]),
                "min_df": spec["min_df"],
                "sublinear_tf": spec["sublinear_tf"],
                "vocabulary": vocab,
                "idf": [float(x) for x in vec.idf_],
            }
        )
    doc = {
        "format": tone_model.FORMAT,
        "licence": LICENCE,
        "about": (
            "TF-IDF (word 1-2 grams + char_wb 2-5 grams, sublinear tf, l2 per block) and one class-balanced "
            "logistic regression per tone axis; C and threshold by repeated stratified 5-fold CV on the tune half; "
            "the text is lower-cased with curly apostrophes folded (textfeatures.tone_model.prepare)."
        ),
        "corpus": "tests/data/tone_eval_corpus.jsonl",
        "corpus_sha256": sha,
        "split_seed": SPLIT_SEED,
        "fitted_on": {"half": "tune", "rows": len(rows)},
        "fitted_with": {"library": "scikit-learn", "version": __import__("sklearn").__version__},
        "cv": {"folds": FOLDS, "repeats": REPEATS, "grid_C": list(GRID_C), "out_of_fold": cv},
        "parts": parts,
        "axes": axes,
    }
    out.write_text(json.dumps(doc, separators=(",", ":")) + "\n", encoding="utf-8")
    width = sum(len(p["idf"]) for p in parts)
    print(
        f"wrote {out.relative_to(ROOT)}: {width} features, {out.stat().st_size // 1024} KiB, {time.time() - started:.0f}s"
    )


def cell(k: int, n: int) -> str:
    ci = wilson(k, n)
    if ci is None:
        return f"can't tell (0/{n})"
    return f"{k / n:.2f} ({k}/{n}) [{ci[0]:.2f}, {ci[1]:.2f}]"


def measure_eval() -> None:
    """Score the eval half once with the shipped file: rules, model, rules or model. Chooses nothing."""
    corpus_sha()
    rows = half_rows("eval")
    m = tone_model.model()
    print("| axis | source | eval precision | eval recall | 0.8? |\n|---|---|---|---|---|")
    for axis in tone.AXES:
        for source in ("rules", "model", "rules or model"):
            tp = fp = fn = 0
            for r in rows:
                ss = row_sentences(r["text"])
                rules = any(axis in tone.sentence_axes(s) for s in ss)
                model = any(axis in m.found(s) for s in ss)
                hit = {"rules": rules, "model": model, "rules or model": rules or model}[source]
                want = axis in r["axes"]
                tp, fp, fn = tp + (hit and want), fp + (hit and not want), fn + (want and not hit)
            goal = "yes" if tp and min(tp / (tp + fp), tp / (tp + fn)) >= 0.8 else "no"
            print(f"| `{axis}` | {source} | {cell(tp, tp + fp)} | {cell(tp, tp + fn)} | {goal} |")


def speed(n: int = 1000) -> None:
    """Seconds to score ``n`` answers (four sentences of the older corpus each) by the rules, then rules or model.
    Caches are emptied before each run, so every sentence is read afresh."""
    lines = (ROOT / "tests" / "data" / "tone_corpus.jsonl").read_text(encoding="utf-8").splitlines()
    pool = [json.loads(line)["text"] for line in lines]
    rng = np.random.default_rng(SPLIT_SEED)
    answers = [" ".join(rng.choice(pool, 4, replace=False)) + f" Step {i} is done." for i in range(n)]
    took: dict[bool, float] = {}
    for with_model in (False, True, False, True):
        tone.sentence_axes.cache_clear()
        tone_model.sentence_axes.cache_clear()
        tone._sources.cache_clear()
        start = time.perf_counter()
        for a in answers:
            tone.axes(a, with_model=with_model)
        took[with_model] = min(took.get(with_model, 1e9), time.perf_counter() - start)
    print(
        f"{n} answers: rules {took[False]:.2f}s, rules or model {took[True]:.2f}s "
        f"(x{took[True] / took[False]:.2f}; best of two runs each)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=tone_model.MODEL_FILE)
    ap.add_argument("--measure-eval", action="store_true", help="score the eval half once; fits nothing")
    ap.add_argument("--speed", action="store_true", help="time 1,000 answers, rules vs rules or model")
    args = ap.parse_args()
    if args.speed:
        speed()
    elif args.measure_eval:
        measure_eval()
    else:
        fit(args.out)


if __name__ == "__main__":
    main()
