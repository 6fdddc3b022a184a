"""Q-Peel (query-aware peeling), the EACS solver of DA-RAG, plus the subgraph metrics it is judged by.

Paper: "DA-RAG" — §5.1 (EACS definition, QRScore Eq. 1), §5.2 (Algorithm 1 Q-Peel), Appendix A.1/A.2
(density lower bound, diameter upper bound of a connected k-truss), Appendix A.5 (IsValidImprovement
in O(t) over the removed node's 1-hop neighbourhood) and Appendix B.3 (metric definitions).

Inputs are edge lists of integer node ids and an embedding matrix whose row ``i`` is the embedding of
node ``i`` (the caller maps database nodes to rows).  Nothing here touches Neo4j.

Reading of Algorithm 1 used here (all choices are the paper's unless marked):

* ``SortByRelevance(S, q)`` sorts ascending by ``cos(A(v), q)`` (least relevant first, §5.2 text);
  ties are broken by node id so the result is deterministic.
* ``IsValidImprovement(S', S, q)``: ``QRScore(S') > QRScore(S)`` *and* ``G[S']`` is still a connected
  k-truss.  ``G[S']`` is the subgraph of the component induced by ``S'``; removing ``v`` only removes
  the triangles through ``v``, so the k-truss test only has to re-check the edges among ``v``'s
  neighbours (the O(t) bound of Appendix A.5) plus connectivity.  Edges are never re-peeled: a node
  whose removal would break the k-truss is simply not removed.
* The pseudo-code sets ``updated <- true`` once before the component loop, which would skip the
  refinement of every component after the first; the text says every component is refined, so the
  flag is reset per component (deviation from the literal pseudo-code, matching its intent).
* Line 12 keeps the first component on ties (strict ``<``).
* Density follows Eq. (5) of Appendix A.1, ``2|E| / (|V|(|V|-1))`` — the normalisation under which the
  A.1 bound holds.  (Appendix B.3 prints ``|E| / (|V|(|V|-1))``, i.e. half of it; pass
  ``directed=True`` to :func:`density` for that variant.)  A.1 claims density *greater than*
  ``(k-1)/(|V|-1)`` but proves ``>=``; equality holds exactly when the community is the clique ``K_k``.
"""

from __future__ import annotations

import copy
import heapq
from collections import deque
from collections.abc import Sized
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from graphstrata.algorithms.ktruss import (
    IntArray,
    SimpleGraph,
    component_edges,
    k_truss,
    simplify_edges,
)
from graphstrata.algorithms.ktruss_compiled import neighbour_lists
from graphstrata.algorithms.qpeel_dense import bfs_diameter, dense_start, graph_diameter, peel_dense

__all__ = [
    "Community",
    "PeelStart",
    "cosine_similarities",
    "density",
    "diameter",
    "peel_start",
    "q_peel",
    "q_peel_communities",
    "q_peel_component",
    "qrscore",
]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Community:
    """A retrieved community ``H``: sorted node ids, its edges (``(m, 2)``, smaller id first) and metrics."""

    nodes: IntArray
    edges: IntArray = field(repr=False)
    k: int
    qrscore: float
    density: float
    diameter: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {
            "nodes": self.nodes.tolist(),
            "edges": self.edges.tolist(),
            "k": self.k,
            "qrscore": self.qrscore,
            "density": self.density,
            "diameter": self.diameter,
        }


# --------------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------------


def cosine_similarities(vectors: npt.ArrayLike, query: npt.ArrayLike) -> FloatArray:
    """``cos(A(v_i), q)`` for every row of ``vectors`` (Eq. 1's summand); zero vectors score 0."""
    mat = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
    q = np.asarray(query, dtype=np.float64).ravel()
    if mat.shape[1] != q.size:
        raise ValueError(f"embedding dimension {mat.shape[1]} != query dimension {q.size}")
    norms = np.sqrt(np.einsum("ij,ij->i", mat, mat)) * np.linalg.norm(q)  # no (n, dim) temporary
    dots = mat @ q
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def qrscore(node_embeddings: npt.ArrayLike, query: npt.ArrayLike) -> float:
    """§5.1 Eq. (1): QRScore(H, q) = mean over nodes v of H of cos(A(v), f_embed(q)).

    ``node_embeddings`` holds one row per node of H.
    """
    sims = cosine_similarities(node_embeddings, query)
    if sims.size == 0:
        raise ValueError("QRScore of an empty community is undefined")
    return float(sims.mean())


def _count(x: int | Sized) -> int:
    return int(x) if isinstance(x, int | np.integer) else len(x)


def density(nodes: int | Sized, edges: int | Sized, *, directed: bool = False) -> float:
    """Appendix A.1 Eq. (5): 2|E| / (|V|(|V|-1)); ``directed=True`` gives B.3's |E| / (|V|(|V|-1)).

    ``nodes``/``edges`` are counts or collections (their ``len`` is used).  0.0 when |V| < 2.
    """
    n_v, n_e = _count(nodes), _count(edges)
    if n_v < 2:
        return 0.0
    return (1 if directed else 2) * n_e / (n_v * (n_v - 1))


def diameter(edges: npt.ArrayLike, nodes: npt.ArrayLike | None = None) -> int:
    """Appendix B.3: longest finite shortest path (BFS hop count) between two nodes.

    With ``nodes=None`` it is the diameter of the graph spanned by ``edges`` (the quantity Appendix
    A.2 bounds for a connected k-truss; for a disconnected graph, unreachable pairs are skipped).
    With ``nodes`` given, distances are measured in the graph ``edges`` (e.g. the global graph G) but
    only between members of ``nodes`` — B.3's ``max d_G(u, v)`` over ``u, v`` in ``V_H``.
    """
    g = simplify_edges(edges)
    if g.n_nodes == 0:
        return 0
    indptr, indices, _ = neighbour_lists(g.n_nodes, g.u.astype(np.int64), g.v.astype(np.int64))
    if nodes is None:
        return int(graph_diameter(indptr, indices))
    wanted = np.unique(np.asarray(nodes, dtype=np.int64))
    pos = np.searchsorted(g.nodes, wanted)
    present = pos < g.n_nodes
    present[present] = g.nodes[pos[present]] == wanted[present]
    return int(bfs_diameter(indptr, indices, pos[present]))  # members absent from the graph: unreachable


# --------------------------------------------------------------------------------------------------
# Q-Peel
# --------------------------------------------------------------------------------------------------


class _PeelState:
    """The working subgraph G[S] of one component: adjacency sets and per-edge triangle support.

    A node whose removal was found invalid keeps a *witness*: two alive nodes ``(a, b)`` whose
    presence alone proves the removal is still invalid.  Either ``(a, b)`` is an edge in a triangle
    with ``x`` whose support is at most ``k - 2`` (supports only fall as nodes go, so removing ``x``
    still breaks the truss), or ``a`` and ``b`` are neighbours of ``x`` in different pieces of
    ``G[S] - x`` (removing nodes never joins pieces, so ``x`` stays a cut vertex).  A node is looked
    at again only once a node of its witness is removed (Appendix A.5's O(t) check is then re-run).
    """

    def __init__(self, n: int, u: IntArray, v: IntArray, k: int) -> None:
        self.k = k
        self.adj: list[set[int]] = [set() for _ in range(n)]
        for a, b in zip(u.tolist(), v.tolist(), strict=True):
            self.adj[a].add(b)
            self.adj[b].add(a)
        self.support: dict[tuple[int, int], int] = {
            (a, b): len(self.adj[a] & self.adj[b]) for a, b in zip(u.tolist(), v.tolist(), strict=True)
        }
        self.alive = [True] * n
        self.size = n
        self.n_edges = len(self.support)
        self.watchers: list[list[int]] = [[] for _ in range(n)]  # y -> nodes whose witness holds y

    def fresh_copy(self) -> _PeelState:
        """A copy to peel, this one kept as the start (the witness lists start empty)."""
        other = copy.copy(self)
        other.adj = [set(n) for n in self.adj]
        other.support = dict(self.support)
        other.alive = list(self.alive)
        other.watchers = [[] for _ in self.watchers]
        return other

    def is_connected_k_truss(self) -> bool:
        return (
            self.n_edges > 0
            and all(s >= self.k - 2 for s in self.support.values())
            and len(self._reach(0, skip=-1)) == self.size
        )

    def _reach(self, start: int, skip: int, stop_when: set[int] | None = None) -> set[int]:
        """BFS over alive nodes (never entering ``skip``): the nodes reached — all of them, or fewer
        once every node of ``stop_when`` has been reached."""
        seen = {start}
        queue = deque([start])
        pending = set(stop_when) - seen if stop_when is not None else None
        while queue and (pending is None or pending):
            x = queue.popleft()
            for y in self.adj[x]:
                if y != skip and y not in seen:
                    seen.add(y)
                    queue.append(y)
                    if pending is not None:
                        pending.discard(y)
        return seen

    def blocker(self, x: int) -> tuple[int, int] | None:
        """The structural half of IsValidImprovement: None if G[S \\ {x}] is still a connected
        k-truss, else a witness ``(a, b)`` (see the class docstring); ``(x, x)`` when only an
        edgeless remainder would be left."""
        nbrs = self.adj[x]
        if self.n_edges - len(nbrs) == 0:
            return (x, x)  # an edgeless remainder is not a community, and stays so
        # Each edge (a, b) between two neighbours of x loses exactly the triangle (x, a, b).
        local: dict[int, set[int]] = {}
        for a in nbrs:
            local[a] = common = self.adj[a] & nbrs
            for b in common:
                if a < b and self.support[(a, b)] - 1 < self.k - 2:
                    return (a, b)
        # G - x splits into pieces that each hold a neighbour of x: if the neighbours are connected
        # among themselves G - x is connected; otherwise one BFS in G - x decides.
        start = next(iter(nbrs))
        seen = {start}
        stack = [start]
        while stack:
            for b in local[stack.pop()]:
                if b not in seen:
                    seen.add(b)
                    stack.append(b)
        if len(seen) == len(nbrs):
            return None
        reached = self._reach(start, skip=x, stop_when=nbrs)
        cut_off = next((b for b in nbrs if b not in reached), None)
        return None if cut_off is None else (start, cut_off)

    def remove(self, x: int) -> list[int]:
        """Remove ``x``; the nodes whose witness it was (they must be checked again)."""
        nbrs = self.adj[x]
        for a in nbrs:
            for b in self.adj[a] & nbrs:
                if a < b:
                    self.support[(a, b)] -= 1
        for a in nbrs:
            self.adj[a].discard(x)
            del self.support[(a, x) if a < x else (x, a)]
        self.adj[x] = set()
        self.n_edges -= len(nbrs)
        self.alive[x] = False
        self.size -= 1
        freed, self.watchers[x] = self.watchers[x], []
        return freed


class _DensePeelState:
    """The start of a peel on dense numpy matrices (adjacency and triangle support), for components
    of up to ``DENSE_LIMIT`` nodes; the compiled loop of :mod:`graphstrata.algorithms.qpeel_dense`
    peels a copy of it."""

    def __init__(self, g: SimpleGraph, k: int) -> None:
        self.k = k
        self.adj, self.support, self.indptr, self.indices = dense_start(
            g.n_nodes, g.u.astype(np.int64), g.v.astype(np.int64)
        )
        self.n_edges = int(g.u.size)

    def fresh_copy(self) -> _DensePeelState:
        """A copy to peel (adjacency and support change as it peels), this one kept as the start."""
        other = copy.copy(self)
        other.adj = self.adj.copy()
        other.support = self.support.copy()
        return other

    def is_connected_k_truss(self) -> bool:
        if self.n_edges == 0 or not bool((self.support[self.adj] >= self.k - 2).all()):
            return False
        seen = np.zeros(self.adj.shape[0], dtype=bool)
        seen[0] = True
        frontier = seen.copy()
        while frontier.any():
            frontier = self.adj[frontier].any(axis=0) & ~seen
            seen |= frontier
        return bool(seen.all())


DENSE_LIMIT = 4000  # nodes; a dense state of n nodes holds 5 n^2 bytes (80 MB at the limit)


def _embedding_rows(embeddings: npt.ArrayLike, nodes: IntArray) -> FloatArray:
    emb = np.asarray(embeddings, dtype=np.float64)
    if emb.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D (n_nodes, dim) matrix, got shape {emb.shape}")
    if nodes.size and (nodes.min() < 0 or nodes.max() >= emb.shape[0]):
        raise ValueError(f"node ids must index rows of embeddings (0..{emb.shape[0] - 1})")
    return emb[nodes]


@dataclass(frozen=True)
class PeelStart:
    """The query-independent start of Q-Peel on one connected k-truss component: the component
    relabelled to local ids and its peel state before any removal (adjacency, triangle supports).
    Made once (:func:`peel_start`) and copied by every query that peels the component."""

    graph: SimpleGraph
    k: int
    state: _PeelState | _DensePeelState = field(repr=False)


def peel_start(edges: npt.ArrayLike, k: int, checked: bool = False) -> PeelStart:
    """The :class:`PeelStart` of the component ``edges``; ``ValueError`` if it is not a connected
    k-truss (not tested when the caller has ``checked`` it: a component of a maximal k-truss is one)."""
    if k < 2:
        raise ValueError("k must be >= 2")
    g = simplify_edges(edges)
    state = _DensePeelState(g, k) if g.n_nodes <= DENSE_LIMIT else _PeelState(g.n_nodes, g.u, g.v, k)
    if not checked and not state.is_connected_k_truss():
        raise ValueError(f"the component is not a connected {k}-truss")
    return PeelStart(g, k, state)


def q_peel_component(
    edges: npt.ArrayLike | PeelStart,
    embeddings: npt.ArrayLike,
    query: npt.ArrayLike,
    k: int,
    cos: FloatArray | None = None,
) -> Community:
    """Algorithm 1, lines 5–11 (§5.2): query-aware peeling of one connected k-truss component
    (its edges, or its :class:`PeelStart` at this ``k``).

    Repeatedly removes the least query-relevant node whose removal raises QRScore and leaves a
    connected k-truss, restarting from the least relevant node after every removal, until no node
    qualifies.  Raises ``ValueError`` if ``edges`` is not a connected k-truss.  ``cos``: the cosine
    of every row of ``embeddings`` to ``query``, when the caller already has them.
    """
    start = edges if isinstance(edges, PeelStart) else peel_start(edges, k)
    if start.k != k:
        raise ValueError(f"the peel start is for k={start.k}, not {k}")
    g = start.graph
    state = start.state.fresh_copy()
    if cos is None:
        sims = cosine_similarities(_embedding_rows(embeddings, g.nodes), query)
    else:
        sims = np.asarray(cos, dtype=np.float64)[g.nodes]
    ranked = np.argsort(sims, kind="stable")  # SortByRelevance: ascending, ties by node id
    total = float(sims.sum())
    if isinstance(state, _DensePeelState):
        args = (state.indptr, state.indices, ranked, sims, total, k, state.n_edges)
        keep = peel_dense(state.adj, state.support, *args)
    else:
        keep = _peel(state, ranked.tolist(), sims.tolist(), total)
    kept_edges = keep[g.u] & keep[g.v]
    local = np.cumsum(keep) - 1  # the kept nodes renumbered 0..n-1
    u, v = local[g.u[kept_edges]], local[g.v[kept_edges]]
    nodes = g.nodes[keep]
    indptr, indices, _ = neighbour_lists(nodes.size, u, v)
    return Community(
        nodes=nodes,
        edges=np.stack([nodes[u], nodes[v]], axis=1),
        k=k,
        qrscore=float(sims[keep].mean()),  # Eq. (1)
        density=density(nodes, u),
        diameter=int(graph_diameter(indptr, indices)),
    )


def _peel(state: _PeelState, order: list[int], sim: list[float], total: float) -> np.ndarray:
    """Lines 6-11 on the adjacency-set state: the mask of the nodes kept.

    After every removal the scan restarts from the least relevant node.
    A node with a live witness would fail IsValidImprovement again, so the restarted scan only has
    to visit the others: ``pending`` holds them by their position in ``order`` (same removals, same
    result as the literal loop, without re-checking every blocked node after each removal)."""
    position = {x: i for i, x in enumerate(order)}
    pending = list(range(len(order)))  # a heap of positions; already sorted
    queued = [True] * len(order)
    while pending and state.size >= 2:
        x = order[pending[0]]
        if not state.alive[x]:
            queued[heapq.heappop(pending)] = False
            continue
        # QRScore(S \ {x}) > QRScore(S)  <=>  cos(x) < mean.  The order is ascending, so once the
        # first unblocked node fails this test every later one does too (and blocked ones fail anyway).
        if not (total - sim[x]) / (state.size - 1) > total / state.size:
            break
        queued[heapq.heappop(pending)] = False
        witness = state.blocker(x)
        if witness is None:
            total -= sim[x]
            for w in state.remove(x):
                if state.alive[w] and not queued[position[w]]:
                    queued[position[w]] = True
                    heapq.heappush(pending, position[w])
        else:
            for y in set(witness):
                state.watchers[y].append(x)

    return np.asarray(state.alive, dtype=bool)


def q_peel_communities(
    edges: npt.ArrayLike, embeddings: npt.ArrayLike, query: npt.ArrayLike, k: int
) -> list[Community]:
    """Algorithm 1, lines 3–11 (§5.2): refine every connected component of the maximal k-truss of G.

    Returns one community per component, best QRScore first (ties keep the component order of
    :func:`~graphstrata.algorithms.ktruss.k_truss_components`: larger first).
    """
    if k < 2:
        raise ValueError("k must be >= 2")
    g = simplify_edges(edges)
    tk = g.edges()[k_truss(g.edges(), k)]  # line 3: T_k
    if tk.size == 0:
        return []
    cos = cosine_similarities(embeddings, query)
    result = [q_peel_component(comp, embeddings, query, k, cos) for _, comp in component_edges(tk)]  # line 4: C
    result.sort(key=lambda c: -c.qrscore)  # stable: line 12 only replaces H' on a strict improvement
    return result


def q_peel(edges: npt.ArrayLike, embeddings: npt.ArrayLike, query: npt.ArrayLike, k: int) -> Community | None:
    """Algorithm 1 (§5.2): the refined k-truss community with the highest QRScore, or None if G has
    no k-truss."""
    communities = q_peel_communities(edges, embeddings, query, k)
    return communities[0] if communities else None
