"""The bottom layer of an HNSW graph (Malkov & Yashunin, "Efficient and robust approximate nearest
neighbor search using Hierarchical Navigable Small World graphs", arXiv:1603.09320), which NodeRAG
§2.4 adds to its heterograph as semantic edges.

Layer 0 of HNSW is built by inserting the nodes one after the other (Algorithm 1): a new node links
to at most ``m`` of its nearest earlier nodes, chosen by the neighbour heuristic (Algorithm 4: a
candidate is kept only if it is nearer to the new node than to every neighbour kept before it, which
favours neighbours in different directions), and each of those links back; a node whose list grows
past ``m0`` keeps the ``m0`` its own heuristic chooses. Here the candidates of a new node are its
``ef`` nearest earlier nodes found exactly, where HNSW finds them by a greedy beam search: the graph
HNSW converges to as its search gets exact. Distances are cosine distances of unit vectors (what
hnswlib's ``l2`` space ranks the same way). Defaults are NodeRAG's reference configuration
(``m = 5``, ``m0 = 2m``, ``ef = 200``, hnswlib's conventions).
"""

from __future__ import annotations

import numpy as np


def select_neighbours(
    base: int, candidates: np.ndarray, sim_to_base: np.ndarray, vectors: np.ndarray, m: int
) -> list[int]:
    """Algorithm 4 (without extending or keeping pruned candidates, as hnswlib): `candidates` with
    their similarity to `base`, scanned nearest first; one is kept when it is nearer to `base` than
    to every candidate kept before it, until `m` are kept."""
    kept: list[int] = []
    for j in np.argsort(-sim_to_base, kind="stable"):
        c = int(candidates[j])
        if c == base:
            continue
        if kept and np.any(vectors[kept] @ vectors[c] > sim_to_base[j]):
            continue  # nearer to a kept neighbour than to base: that neighbour covers its direction
        kept.append(c)
        if len(kept) == m:
            break
    return kept


def base_layer(
    vectors: np.ndarray, m: int = 5, m0: int | None = None, ef: int = 200, seed: int = 42
) -> list[tuple[int, int]]:
    """Undirected edges (i < j) of HNSW's layer 0 over the rows of `vectors`, inserted in a seeded
    random order (the graph depends on it, as HNSW's does)."""
    n = len(vectors)
    m0 = m0 or 2 * m
    order = np.random.default_rng(seed).permutation(n)
    # rows in insertion order: the earlier nodes of step s are the slice [:s], no copy
    unit = vectors[order] / np.maximum(np.linalg.norm(vectors[order], axis=1, keepdims=True), 1e-12)
    links: list[list[int]] = [[] for _ in range(n)]
    for q in range(1, n):
        sims = unit[:q] @ unit[q]
        earlier = np.arange(q)
        if q > ef:
            top = np.argpartition(-sims, ef - 1)[:ef]
            earlier, sims = top, sims[top]
        chosen = select_neighbours(q, earlier, sims, unit, m)
        links[q] = chosen
        for e in chosen:
            if len(links[e]) < m0:
                links[e].append(q)
            else:  # too many links: e keeps those its own heuristic picks among them and q
                pool = np.array(links[e] + [q])
                links[e] = select_neighbours(e, pool, unit[pool] @ unit[e], unit, m0)
    edges = {tuple(sorted((int(order[a]), int(order[b])))) for a in range(n) for b in links[a]}
    return sorted(edges)
