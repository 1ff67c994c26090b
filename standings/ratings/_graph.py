"""Connected components of the comparison graph (weak: who met whom; strong: who scored against whom).

Plain Python over the pair list: at most models^2 / 2 edges, a few thousand models at the very most. Why
not `scipy.sparse.csgraph`? Importing it (and `scipy.sparse.linalg` / `scipy.linalg` with it) cost about
as much as a whole 100-round bootstrap on a million battles. Every process that prints a board paid it.
The graphs are small, so an iterative Tarjan pass takes milliseconds.
"""

from __future__ import annotations

import numpy as np


def weak_components(m: int, src: np.ndarray, dst: np.ndarray) -> tuple[int, np.ndarray]:
    """(number of components, label per node) of the undirected graph, labels in order of first node."""
    parent = list(range(m))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for u, v in zip(src.tolist(), dst.tolist(), strict=True):
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[max(ru, rv)] = min(ru, rv)
    roots = [find(x) for x in range(m)]
    index: dict[int, int] = {}
    labels = np.array([index.setdefault(r, len(index)) for r in roots], dtype=np.int64)
    return len(index), labels


def strong_components(m: int, src: np.ndarray, dst: np.ndarray) -> tuple[int, np.ndarray]:
    """(number of components, label per node) of the directed graph src -> dst (Tarjan, iterative)."""
    adjacency: list[list[int]] = [[] for _ in range(m)]
    for u, v in zip(src.tolist(), dst.tolist(), strict=True):
        adjacency[u].append(v)
    index = [-1] * m
    low = [0] * m
    on_stack = [False] * m
    labels = np.full(m, -1, dtype=np.int64)
    stack: list[int] = []
    counter = 0
    n_comp = 0
    for root in range(m):
        if index[root] >= 0:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack[node] = True
            recurse = False
            edges = adjacency[node]
            while child < len(edges):
                nxt = edges[child]
                child += 1
                if index[nxt] < 0:
                    work.append((node, child))
                    work.append((nxt, 0))
                    recurse = True
                    break
                if on_stack[nxt]:
                    low[node] = min(low[node], index[nxt])
            if recurse:
                continue
            if low[node] == index[node]:
                while True:
                    top = stack.pop()
                    on_stack[top] = False
                    labels[top] = n_comp
                    if top == node:
                        break
                n_comp += 1
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return n_comp, labels
