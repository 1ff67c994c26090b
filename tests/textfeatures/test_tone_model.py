"""The learned tone detector (``textfeatures.tone_model``) against the library that fitted it.

The runtime recomputes TF-IDF and the logistic regressions with numpy from ``data/tone_model.json``.
Here scikit-learn objects are rebuilt from the same file and must give the same scores to 1e-9 on the tune rows.
A refit on the tune half with the file's settings must give the file's vocabulary, idf and weights.
The file must name the frozen corpus (its SHA-256 and split seed) and its CC0 origin.
A bad file is refused with the field at fault; ``tone.named_by`` says which source named each sentence.
Only tune rows are read here: the eval half's figures are in ``test_tone_eval_corpus.py``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from vibestudio.textfeatures import tone, tone_model

sklearn_text = pytest.importorskip("sklearn.feature_extraction.text")
sklearn_lm = pytest.importorskip("sklearn.linear_model")

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "tone_eval_corpus.jsonl"
CARD = ROOT / "tests" / "data" / "tone_eval_corpus.md"


@cache
def spec() -> dict:
    return json.loads(tone_model.MODEL_FILE.read_text(encoding="utf-8"))


@cache
def tune_texts() -> tuple[str, ...]:
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    return tuple(r["text"] for r in rows if r["half"] == "tune")


def vectorizers(fitted: dict) -> list:
    """scikit-learn TF-IDF blocks holding the file's vocabulary and idf."""
    out = []
    for part in fitted["parts"]:
        v = sklearn_text.TfidfVectorizer(
            analyzer=part["analyzer"],
            ngram_range=tuple(part["ngram_range"]),
            sublinear_tf=part["sublinear_tf"],
            vocabulary=part["vocabulary"],
        )
        v.fit(["x"])
        v.idf_ = np.asarray(part["idf"])
        out.append(v)
    return out


def test_the_runtime_scores_equal_scikit_learns_on_the_tune_rows():
    from scipy.sparse import hstack

    docs = [tone_model.prepare(s) for t in tune_texts() for s in tone.sentences(tone.own_prose(t))]
    x = hstack([v.transform(docs) for v in vectorizers(spec())]).tocsr()
    m = tone_model.model()
    ours = np.array([m.decision(d) for d in docs])
    for j, axis in enumerate(m.axes):
        lr = sklearn_lm.LogisticRegression()
        lr.classes_ = np.array([False, True])
        lr.coef_ = np.asarray([spec()["axes"][axis]["coef"]])
        lr.intercept_ = np.asarray([spec()["axes"][axis]["intercept"]])
        theirs = lr.decision_function(x)
        assert np.max(np.abs(ours[:, j] - theirs)) < 1e-9, axis
        p = np.array([m.proba(d)[axis] for d in docs[:50]])
        assert np.max(np.abs(p - lr.predict_proba(x[:50])[:, 1])) < 1e-9, axis
    assert len(docs) >= 431 and (ours > 0).any() and (ours < 0).any()


def test_the_analyzers_split_text_as_scikit_learns():
    odd = ["", "a", "I'm  so\tglad!!", "naïve café—résumé", "x" * 9, "you're right, you're right"]
    for part in spec()["parts"]:
        ref = sklearn_text.TfidfVectorizer(analyzer=part["analyzer"], ngram_range=tuple(part["ngram_range"]))
        analyse = ref.build_analyzer()
        ours = tone_model.word_grams if part["analyzer"] == "word" else tone_model.char_grams
        for doc in [tone_model.prepare(t) for t in [*tune_texts()[:100], *odd]]:
            assert ours(doc, *part["ngram_range"]) == analyse(doc), (part["analyzer"], doc)


def test_a_refit_on_the_tune_half_gives_the_files_weights():
    from sklearn.pipeline import FeatureUnion

    texts = [tone_model.prepare(tone.own_prose(t)) for t in tune_texts()]
    blocks = []
    for i, part in enumerate(spec()["parts"]):
        kw = {k: part[k] for k in ("analyzer", "min_df", "sublinear_tf")}
        blocks.append((str(i), sklearn_text.TfidfVectorizer(ngram_range=tuple(part["ngram_range"]), **kw)))
    union = FeatureUnion(blocks).fit(texts)
    for (_, v), part in zip(union.transformer_list, spec()["parts"], strict=True):
        assert sorted(v.vocabulary_, key=v.vocabulary_.__getitem__) == part["vocabulary"]
        assert np.allclose(v.idf_, part["idf"], rtol=0, atol=1e-12)
    x = union.transform(texts)
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    labels = [r["axes"] for r in rows if r["half"] == "tune"]
    for axis, a in spec()["axes"].items():
        y = np.array([axis in ax for ax in labels])
        lr = sklearn_lm.LogisticRegression(C=a["C"], class_weight="balanced", max_iter=5000).fit(x, y)
        got = lr.decision_function(x)
        want = x @ np.asarray(a["coef"]) + a["intercept"]
        assert np.max(np.abs(got - want)) < 1e-4, axis


def test_the_model_file_names_the_frozen_corpus_and_its_licence():
    digest = hashlib.sha256(CORPUS.read_bytes()).hexdigest()
    assert spec()["corpus_sha256"] == digest, (
        "the model was fitted on another version of the corpus: refit it"
    )
    seed = re.search(r"random\.Random\((\d+)\)", CARD.read_text(encoding="utf-8"))
    assert seed and spec()["split_seed"] == int(seed.group(1))
    assert spec()["fitted_on"] == {"half": "tune", "rows": len(tune_texts())}
    assert "CC0" in spec()["licence"] and spec()["format"] == tone_model.FORMAT
    assert tuple(spec()["axes"]) == tone.AXES
    assert all(0 < a["threshold"] < 1 and a["C"] > 0 for a in spec()["axes"].values())


def _broken(path: Path, change) -> Path:
    doc = copy.deepcopy(spec())
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda d: d.pop("corpus_sha256"), "'corpus_sha256' missing"),
        (lambda d: d.update(format="other/9"), "'format'"),
        (lambda d: d["axes"]["apology"].update(coef=[0.0]), "axes.apology.coef"),
        (lambda d: d["axes"]["feelings"].update(threshold="high"), "axes.feelings.threshold"),
        (lambda d: d["parts"][1].update(idf=[1.0]), "parts[1]"),
        (lambda d: d["parts"][0].update(analyzer="bytes"), "parts[0]"),
    ],
)
def test_a_bad_model_file_is_refused_naming_the_field(tmp_path, change, named):
    path = _broken(tmp_path / "m.json", change)
    with pytest.raises(tone_model.ModelFileError, match=re.escape(named)) as e:
        tone_model.load(path)
    assert str(e.value).startswith("m.json")


def test_a_missing_or_garbled_model_file_is_named(tmp_path):
    with pytest.raises(tone_model.ModelFileError, match="m.json: not found"):
        tone_model.load(tmp_path / "m.json")
    (tmp_path / "m.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(tone_model.ModelFileError, match="m.json: not JSON"):
        tone_model.load(tmp_path / "m.json")


def test_every_hit_says_which_source_named_it():
    seen = dict.fromkeys(tone.SOURCES, 0)
    for text in tune_texts():
        by = tone.named_by(text)
        rules, both = tone.axes(text), tone.axes(text, with_model=True)
        if by is None:
            assert rules is None and both is None
            continue
        for axis in tone.AXES:
            n = by[axis]
            assert n["rules"] + n["both"] == rules[axis], (axis, text)
            assert n["rules"] + n["model"] + n["both"] == both[axis], (axis, text)
            for source in tone.SOURCES:
                seen[source] += int(n[source])
    assert all(seen.values()), seen  # each source alone, and both together, named something on the tune half


def test_an_example_carries_its_sources():
    text = "You clearly know your stuff. When I was a kid I loved baking bread with my uncle."
    ex = tone.sourced_examples([text], "feelings")
    assert ex and ex[0]["sentence"] == "When I was a kid I loved baking bread with my uncle."
    assert set(ex[0]["named_by"]) <= {"rules", "model"} and ex[0]["named_by"]
    want = sorted(tone.sentence_sources(ex[0]["sentence"])["feelings"])
    assert sorted(ex[0]["named_by"]) == want
    assert tone.examples([text], "flattery") == ["You clearly know your stuff."]
