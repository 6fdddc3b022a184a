"""Embedding-attributed community search (EACS) on one graph layer, and the subgraph-quality measures
of DA-RAG ("Dynamic Attributed Community Search for Retrieval-Augmented Generation", Zeng et al.,
WWW '26; docs/methods.md): pure numpy / Python, no database.

- :func:`eacs`: Q-Peel (DA-RAG Algorithm 1) for every k of a range, one truss decomposition for all.
- :func:`pairwise_similarity`, :func:`density_bound`, :func:`diameter_bound`: Appendix B.3's
  average pairwise similarity and Appendix A.1/A.2's bounds on a k-truss community.
- :func:`greedy_pack`: §5.1's greedy report packing under the budget C_b.

Tested against brute force and hand graphs in tests/test_darag.py.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from graphstrata.algorithms.ktruss import connected_components, simplify_edges, truss_decomposition
from graphstrata.algorithms.qpeel import Community, q_peel_component
from graphstrata.text.tokens import fit


def eacs(
    edges: npt.ArrayLike, embeddings: npt.ArrayLike, q: npt.ArrayLike, ks: range | list[int]
) -> tuple[list[Community], int]:
    """Q-Peel (Algorithm 1) for every k of ``ks`` on the graph ``edges`` (local node ids indexing the
    rows of ``embeddings``): the best community per k, ascending k (a k without a k-truss has none),
    and the graph's largest truss number.

    The same as :func:`~graphstrata.algorithms.qpeel.q_peel` per k, but one truss decomposition
    serves every k (the maximal k-truss T_k is the edges of truss number >= k, line 3), and each
    connected component of T_k (line 4) goes to ``q_peel_component`` (lines 5-11) as is. Line 12:
    the first component in ``connected_components`` order (largest first) wins ties."""
    arr = simplify_edges(np.asarray(edges, dtype=np.int64).reshape(-1, 2)).edges()
    if arr.size == 0:
        return [], 0
    truss = truss_decomposition(arr)
    top = int(truss.max())
    out = []
    for k in sorted(ks):
        if k > top:
            break
        tk = arr[truss >= k]
        best: Community | None = None
        for nodes in connected_components(tk):
            inside = np.isin(tk[:, 0], nodes)  # an edge of T_k lies in the component of either end
            community = q_peel_component(tk[inside], embeddings, q, k)
            if best is None or best.qrscore < community.qrscore:
                best = community
        if best is not None:
            out.append(best)
    return out, top


def pairwise_similarity(embeddings: npt.ArrayLike) -> float:
    """Appendix B.3 average pairwise node similarity: mean cosine over the unique pairs (0.0 below 2 nodes)."""
    emb = np.asarray(embeddings, dtype=np.float64)
    n = emb.shape[0]
    if n < 2:
        return 0.0
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    unit = np.divide(emb, norms, out=np.zeros_like(emb), where=norms > 0)
    sims = unit @ unit.T
    return float((sims.sum() - np.trace(sims)) / (n * (n - 1)))


def diameter_bound(n_nodes: int, k: int) -> int:
    """Appendix A.2: a connected k-truss on |V| nodes has diameter <= floor((2|V| - 2) / k)."""
    return (2 * n_nodes - 2) // k


def density_bound(n_nodes: int, k: int) -> float:
    """Appendix A.1: a k-truss on |V| nodes has density (2|E| / (|V|(|V|-1))) >= (k - 1) / (|V| - 1)."""
    return (k - 1) / (n_nodes - 1) if n_nodes > 1 else 0.0


def greedy_pack(scores: list[float], lengths: list[int], budget: int) -> list[int]:
    """§5.1: argmax_K sum S subject to sum len(R) <= C_b, greedily. The candidates come ranked (by
    descending S); each is taken if its report still fits, else skipped; a score <= 0 adds nothing
    to the objective and is never taken. Returns the indices taken, in rank order."""
    positive = [i for i in range(len(scores)) if scores[i] > 0]
    return [positive[j] for j in fit([lengths[i] for i in positive], budget)]
