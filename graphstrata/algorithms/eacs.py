"""Embedding-attributed community search (EACS) on one graph layer, and the subgraph-quality measures
of DA-RAG ("Dynamic Attributed Community Search for Retrieval-Augmented Generation", Zeng et al.,
WWW '26; docs/methods.md): numpy / Python (and numba for the peel), no database.

- :class:`TrussIndex`, :func:`eacs`: Q-Peel (DA-RAG Algorithm 1) for every k of a range, one truss
  decomposition for all (kept per graph, reused by every query).
- :func:`pairwise_similarity`, :func:`density_bound`, :func:`diameter_bound`: Appendix B.3's
  average pairwise similarity and Appendix A.1/A.2's bounds on a k-truss community.
- :func:`greedy_pack`: §5.1's greedy report packing under the budget C_b.

Tested against brute force and hand graphs in tests/test_darag.py.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from graphstrata.algorithms.ktruss import IntArray, simplify_edges
from graphstrata.algorithms.ktruss_compiled import component_groups, truss_numbers
from graphstrata.algorithms.qpeel import Community, PeelStart, cosine_similarities, peel_start, q_peel_component
from graphstrata.algorithms.qpeel_dense import top_means
from graphstrata.text.tokens import fit


class TrussIndex:
    """The query-independent half of Algorithm 1 for one graph: its truss decomposition (line 3's
    T_k for every k at once) and, per k, the connected components of T_k (line 4), made on first
    use and kept. Build it once per graph and pass it to :func:`eacs` for every query."""

    def __init__(self, edges: npt.ArrayLike) -> None:
        self.graph = simplify_edges(np.asarray(edges, dtype=np.int64).reshape(-1, 2))
        self.edges = self.graph.edges()
        self.truss = truss_numbers(self.graph.n_nodes, self.graph.u, self.graph.v)
        self.top = int(self.truss.max()) if self.truss.size else 0
        self._components: dict[int, tuple[IntArray, IntArray, IntArray, IntArray]] = {}
        self._starts: dict[tuple[int, int], PeelStart] = {}

    def _groups(self, k: int) -> tuple[IntArray, IntArray, IntArray, IntArray]:
        if k not in self._components:
            g, rows = self.graph, np.flatnonzero(self.truss >= k)
            node_ptr, nodes, edge_ptr, edges = component_groups(g.n_nodes, g.u[rows], g.v[rows])
            self._components[k] = (node_ptr, g.nodes[nodes], edge_ptr, rows[edges])
        return self._components[k]

    def component(self, k: int, i: int) -> tuple[IntArray, IntArray]:
        """Component ``i`` of T_k (largest first, ties by smallest node) as (its nodes, ascending;
        its edges)."""
        node_ptr, nodes, edge_ptr, rows = self._groups(k)
        return nodes[node_ptr[i] : node_ptr[i + 1]], self.edges[rows[edge_ptr[i] : edge_ptr[i + 1]]]

    def members(self, k: int) -> tuple[IntArray, IntArray]:
        """The nodes of every component of T_k, one component after the other, and where each
        starts (CSR)."""
        node_ptr, nodes, _, _ = self._groups(k)
        return nodes, node_ptr

    def peel_start(self, k: int, i: int) -> PeelStart | IntArray:
        """What Q-Peel starts from on component ``i`` of T_k: its :class:`PeelStart` (the triangle
        supports of every edge, the costly query-independent part), kept for components of up to
        ``KEPT_START_NODES`` nodes; the component's edges beyond (each query rebuilds the start)."""
        nodes, edges = self.component(k, i)
        if nodes.size > KEPT_START_NODES:
            return edges
        if (k, i) not in self._starts:  # two questions may both build it: the same value
            self._starts[(k, i)] = peel_start(edges, k, checked=True)
        return self._starts[(k, i)]


BOUND_SLACK = 1e-9  # far above the rounding of a mean of cosines, far below a real difference
KEPT_START_NODES = 2000  # a kept dense start holds 5 n^2 bytes: 20 MB per k at the limit


def eacs(
    graph: npt.ArrayLike | TrussIndex,
    embeddings: npt.ArrayLike,
    q: npt.ArrayLike,
    ks: range | list[int],
    cos: npt.NDArray[np.float64] | None = None,
    anchors: npt.ArrayLike | None = None,
) -> tuple[list[Community], int]:
    """Q-Peel (Algorithm 1) for every k of ``ks`` on ``graph`` (an edge list of local node ids
    indexing the rows of ``embeddings``, or its :class:`TrussIndex`): the best community per k,
    ascending k (a k without a k-truss has none), and the graph's largest truss number.

    The same as :func:`~graphstrata.algorithms.qpeel.q_peel` per k, but one truss decomposition
    serves every k (the maximal k-truss T_k is the edges of truss number >= k, line 3), and each
    connected component of T_k (line 4) goes to ``q_peel_component`` (lines 5-11) as is. Line 12:
    the first component in ``connected_components`` order (largest first) wins ties.

    A component is skipped when it cannot win: Q-Peel returns a connected k-truss, which has at
    least k nodes, so its QRScore is at most the mean of the component's k highest cosines. The
    components are peeled in the order of that bound, so on a large graph most are never peeled
    (the result is the same as peeling them all). ``cos``: the cosine of every row of ``embeddings``
    to ``q``, when the caller already has them. ``anchors``: rows of which a community must hold at
    least one (the query nodes of community search; a component or peeled community without one is
    not a candidate); None: any community."""
    index = graph if isinstance(graph, TrussIndex) else TrussIndex(graph)
    if index.top == 0:
        return [], 0
    cos = cosine_similarities(embeddings, q) if cos is None else cos
    anchor_rows = np.asarray(anchors if anchors is not None else [], dtype=np.int64)
    out = []
    for k in sorted(ks):
        if k > index.top:
            break
        nodes, ptr = index.members(k)
        bounds = top_means(cos, nodes, ptr, k)
        if anchors is not None:  # a component without an anchor cannot hold an anchored community
            inside = np.isin(nodes, anchor_rows).astype(np.int64)
            held = np.add.reduceat(inside, ptr[:-1]) if nodes.size else np.zeros(0, np.int64)
            bounds = np.where(held > 0, bounds, -np.inf)
        best: Community | None = None
        best_at = -1
        for i in np.lexsort((np.arange(bounds.size), -bounds)).tolist():
            # the bound is summed in another order than QRScore: it must fall clearly below to prune
            if best is not None and bounds[i] < best.qrscore - BOUND_SLACK:
                break  # the bounds only fall from here: no later component can win either
            if bounds[i] == -np.inf:
                break  # only components without an anchor are left
            community = q_peel_component(index.peel_start(k, i), embeddings, q, k, cos)
            if anchors is not None and not np.isin(community.nodes, anchor_rows).any():
                continue  # the peel let the anchors go: not a community of this question
            if best is None or (community.qrscore, -i) > (best.qrscore, -best_at):
                best, best_at = community, i
        if best is not None:
            out.append(best)
    return out, index.top


def pairwise_similarity(embeddings: npt.ArrayLike) -> float:
    """Appendix B.3 average pairwise node similarity: mean cosine over the unique pairs (0.0 below 2 nodes)."""
    emb = np.asarray(embeddings, dtype=np.float64)
    n = emb.shape[0]
    if n < 2:
        return 0.0
    norms = np.sqrt(np.einsum("ij,ij->i", emb, emb))[:, None]
    unit = np.divide(emb, norms, out=np.zeros_like(emb), where=norms > 0)
    # the sum of u_i . u_j over i != j is |sum u|^2 - sum |u_i|^2: O(n d), not the n x n matrix
    total = unit.sum(axis=0)
    return float((total @ total - np.einsum("ij,ij->", unit, unit)) / (n * (n - 1)))


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
