"""Prompts by kind: a small category classifier the studio trains on the labelled prompt sets it holds.

Multinomial naive Bayes over word unigrams and bigrams, in numpy. Words are lower-cased letters and
digits, with Laplace smoothing `alpha`. A few hundred labelled prompts train it in milliseconds. With one
or two hundred examples it is as good as anything heavier. A scikit-learn dependency is not worth it for
this.

`cross_validate` reports held-out accuracy by stratified k-fold: every prompt is scored by a model that
never saw it. It gives a Wilson 95% interval and the majority-class baseline. So a reader sees whether the
classifier beats guessing.

Can't tell: fewer than two categories. A category with fewer than two labelled prompts is left out, said
in `notes`. It knows nothing about databases; `standings` feeds it prompts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vibestudio.common.stats import wilson

_WORD = re.compile(r"[a-z0-9]+")
#: Fewer labelled prompts than this in a category: the category is left out of training.
MIN_PER_CLASS = 2


def features(text: str) -> list[str]:
    """Word unigrams and bigrams of `text` (lower-cased)."""
    words = _WORD.findall((text or "").lower())
    return words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]


@dataclass
class PromptClassifier:
    """A fitted multinomial naive Bayes: `classes`, log priors, per-class log feature probabilities."""

    classes: list[str]
    vocab: dict[str, int]
    log_prior: np.ndarray
    log_prob: np.ndarray  # classes x (vocab + 1): the last column is an unseen feature

    @classmethod
    def fit(cls, texts: list[str], labels: list[str], alpha: float = 0.5) -> PromptClassifier:
        if len(texts) != len(labels) or not texts:
            raise ValueError("need one label per prompt and at least one prompt")
        classes = sorted(set(labels))
        vocab: dict[str, int] = {}
        docs = [[vocab.setdefault(f, len(vocab)) for f in features(t)] for t in texts]
        counts = np.zeros((len(classes), len(vocab) + 1))
        index = {c: k for k, c in enumerate(classes)}
        for doc, label in zip(docs, labels, strict=True):
            np.add.at(counts[index[label]], doc, 1.0)
        smoothed = counts + alpha
        log_prob = np.log(smoothed) - np.log(smoothed.sum(axis=1, keepdims=True))
        prior = np.array([labels.count(c) for c in classes], dtype=float)
        return cls(classes, vocab, np.log(prior / prior.sum()), log_prob)

    def scores(self, text: str) -> np.ndarray:
        unseen = len(self.vocab)
        idx = [self.vocab.get(f, unseen) for f in features(text)]
        return self.log_prior + self.log_prob[:, idx].sum(axis=1)

    def probabilities(self, text: str) -> dict[str, float]:
        """The posterior probability of every category."""
        s = self.scores(text)
        p = np.exp(s - s.max())
        p /= p.sum()
        return {c: float(v) for c, v in zip(self.classes, p, strict=True)}

    def predict(self, text: str) -> tuple[str, float]:
        """The most probable category and its posterior probability."""
        s = self.scores(text)
        p = np.exp(s - s.max())
        p /= p.sum()
        k = int(np.argmax(p))
        return self.classes[k], float(p[k])


@dataclass
class KindsReport:
    """Held-out accuracy of the classifier on the labelled prompts, with its interval and the baseline."""

    n_prompts: int
    classes: list[str]
    accuracy: float | None
    ci_low: float | None
    ci_high: float | None
    majority: float | None
    folds: int
    per_class: dict[str, dict[str, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def sentence(self) -> str:
        if self.accuracy is None:
            return "prompt classifier: can't tell (" + "; ".join(self.notes) + ")"
        return (
            f"prompt classifier: {100 * self.accuracy:.0f}% held-out accuracy [{100 * (self.ci_low or 0):.0f}%, "
            f"{100 * (self.ci_high or 0):.0f}%] on {self.n_prompts} labelled prompts in {len(self.classes)} "
            f"categories ({self.folds}-fold; always guessing the largest category: {100 * (self.majority or 0):.0f}%)"
        )


def usable(texts: list[str], labels: list[str | None]) -> tuple[list[str], list[str], list[str]]:
    """The prompts with a label whose category has at least `MIN_PER_CLASS` of them, and notes on the rest."""
    pairs = [(t, lab) for t, lab in zip(texts, labels, strict=True) if lab and t and t.strip()]
    count: dict[str, int] = {}
    for _, lab in pairs:
        count[lab] = count.get(lab, 0) + 1
    small = sorted(c for c, n in count.items() if n < MIN_PER_CLASS)
    notes = (
        [f"left out: categories with fewer than {MIN_PER_CLASS} labelled prompts ({', '.join(small)})"]
        if small
        else []
    )
    kept = [(t, lab) for t, lab in pairs if lab not in small]
    return [t for t, _ in kept], [lab for _, lab in kept], notes


def cross_validate(
    texts: list[str], labels: list[str | None], *, folds: int = 5, seed: int = 0, alpha: float = 0.5
) -> KindsReport:
    """Stratified `folds`-fold held-out accuracy of `PromptClassifier` on the labelled prompts."""
    xs, ys, notes = usable(texts, labels)
    classes = sorted(set(ys))
    report = KindsReport(len(xs), classes, None, None, None, None, folds, notes=notes)
    if len(classes) < 2:
        report.notes.append("fewer than two categories with labelled prompts: nothing to train on")
        return report
    rng = np.random.default_rng(seed)
    fold = np.zeros(len(ys), dtype=int)
    for c in classes:
        members = rng.permutation([i for i, y in enumerate(ys) if y == c])
        fold[members] = np.arange(len(members)) % folds
    right = np.zeros(len(ys), dtype=bool)
    for k in range(folds):
        train = [i for i in range(len(ys)) if fold[i] != k]
        test = [i for i in range(len(ys)) if fold[i] == k]
        if not test or len({ys[i] for i in train}) < 2:
            continue
        model = PromptClassifier.fit([xs[i] for i in train], [ys[i] for i in train], alpha)
        for i in test:
            right[i] = model.predict(xs[i])[0] == ys[i]
    n = len(ys)
    report.accuracy = float(right.mean())
    report.ci_low, report.ci_high = wilson(int(right.sum()), n) or (None, None)
    report.majority = max(ys.count(c) for c in classes) / n
    for c in classes:
        idx = [i for i, y in enumerate(ys) if y == c]
        report.per_class[c] = {"n": float(len(idx)), "accuracy": float(right[idx].mean())}
    return report
