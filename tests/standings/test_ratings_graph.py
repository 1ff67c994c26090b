"""The comparison-graph components (`standings.ratings._graph`) partition nodes exactly as scipy's csgraph does."""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from vibestudio.standings.ratings._graph import strong_components, weak_components


def test_components_match_scipy_on_random_graphs() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        m = int(rng.integers(1, 30))
        e = int(rng.integers(0, 60))
        src, dst = rng.integers(0, m, e), rng.integers(0, m, e)
        graph = coo_matrix((np.ones(e), (src, dst)), shape=(m, m))
        for ours, options in (
            (weak_components, {"directed": False}),
            (strong_components, {"directed": True, "connection": "strong"}),
        ):
            n_ours, labels_ours = ours(m, src, dst)
            n_ref, labels_ref = connected_components(graph, **options)
            assert n_ours == n_ref
            assert len(set(zip(labels_ours.tolist(), labels_ref.tolist(), strict=True))) == n_ref


def test_long_chain_does_not_recurse() -> None:
    m = 50_000
    src = np.arange(m - 1)
    n, labels = strong_components(m, src, src + 1)
    assert n == m
    n, labels = strong_components(m, np.concatenate([src, [m - 1]]), np.concatenate([src + 1, [0]]))
    assert n == 1 and labels.max() == 0
