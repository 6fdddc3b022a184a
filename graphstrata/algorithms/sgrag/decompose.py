"""Cost-aware decomposition of a query graph into query paths of length ≤ ``l`` (SG-RAG Algorithm 4).

Paper: SG-RAG §4.3 "Path Decomposition and Label Completion" and Appendix E "Cost-Aware Path
Decomposition", Algorithm 4 (Cost-Model-Based Query Plan Selection); §5.4 for the choice of ``l``.

A *query path* is a simple path of the query graph (distinct nodes) given by its node sequence and the
indices of the query edges it walks, so parallel query edges give distinct paths.  A path and its
reverse are the same path; the stored orientation is the one whose node-position tuple is smaller.

Candidate paths: every simple path of length exactly ``l``; an edge that lies on no such path (its
component is too small, e.g. a single-edge query with ``l = 2``) is covered by the longest simple
paths through it instead, so every plan uses paths of length ``≤ l`` and as long as the query allows.

Cost model.  The paper scores a path by ``w(p) = -Σ_{q_i ∈ p} deg(q_i)`` (high-degree query nodes
have larger stars, so their dominance embeddings prune more) and picks paths with minimal edge
overlap, keeping the plan with the smallest ``Σ w(p)``.  Because ``w`` is negative, comparing raw sums
would favour plans with *more* paths, so plans are compared lexicographically by

    ``(number of paths, edge overlap, Σ w(p))``    where  overlap = Σ |E(p)| − |E(q)|

(fewest index probes and joins, then least redundancy, then the paper's degree weight; remaining ties
are broken by the node-position tuples so results are deterministic).  With all paths of length
``l`` the overlap is fixed by the path count, so this is exactly the paper's "minimal overlap, then
minimal weight".

* ``method="exact"`` finds the optimum of that key by iterative deepening on the number of paths with
  exact-cover branching (the first uncovered edge must lie on some chosen path);
* ``method="greedy"`` is Algorithm 4 itself: start from each length-``l`` path through the
  highest-degree node (paths *containing* it — "starting from" it would exclude the centre of a star,
  whose length-2 paths all pass through it), then repeatedly add the candidate path that shares a node
  with the plan and covers an uncovered edge with minimal (overlap, weight); the best plan over all
  starts is kept.  Deviations from the literal pseudo-code: the initial path's weight is counted
  (line 5 sets ``local_cost ← 0``), a path must cover at least one new edge (else the loop need not
  end), and plans are compared by the key above rather than by ``Σ w`` alone.
* ``method="auto"`` (default) is exact up to ``max_exact_edges`` query edges, greedy beyond.

Isolated query nodes have no edge to cover and are not part of any plan.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Literal

from graphstrata import limits
from graphstrata.algorithms.sgrag.query_graph import Hop, QueryGraph

__all__ = [
    "Decomposition",
    "QueryPath",
    "candidate_query_paths",
    "decompose",
    "path_weight",
    "plan_key",
    "query_hops",
    "simple_query_paths",
]

NodeId = Hashable


@dataclass(frozen=True, slots=True)
class QueryPath:
    """A simple path of the query graph: ``nodes`` (``length + 1`` query node ids) and the indices of
    the query edges between consecutive nodes."""

    nodes: tuple[NodeId, ...]
    edges: tuple[int, ...]

    @property
    def length(self) -> int:
        return len(self.edges)


@dataclass(frozen=True, slots=True)
class Decomposition:
    """A query plan ``Q``: the chosen paths and their (number, overlap, Σ w) key."""

    paths: tuple[QueryPath, ...]
    overlap: int
    cost: int
    method: str

    @property
    def key(self) -> tuple[int, int, int]:
        return (len(self.paths), self.overlap, self.cost)

    @property
    def lengths(self) -> frozenset[int]:
        """Path lengths the plan needs an index for."""
        return frozenset(p.length for p in self.paths)


def query_hops(query: QueryGraph, path: QueryPath) -> tuple[Hop, ...]:
    """The hops of ``path`` (relation of each query edge, walked forward or backward)."""
    out = []
    for i, e in enumerate(path.edges):
        edge = query.edges[e]
        out.append(Hop(edge.relation, edge.src == path.nodes[i]))
    return tuple(out)


def path_weight(query: QueryGraph, path: QueryPath) -> int:
    """``w(p) = -Σ deg(q_i)`` over the nodes of ``p`` (Appendix E)."""
    return -sum(query.degree(n) for n in path.nodes)


def _canonical(query: QueryGraph, nodes: tuple[NodeId, ...], edges: tuple[int, ...]) -> QueryPath:
    pos = tuple(query.index[n] for n in nodes)
    if pos[::-1] < pos:
        return QueryPath(nodes[::-1], edges[::-1])
    return QueryPath(nodes, edges)


def _position_key(query: QueryGraph, path: QueryPath) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return (tuple(query.index[n] for n in path.nodes), path.edges)


def simple_query_paths(query: QueryGraph, max_length: int) -> list[QueryPath]:
    """Every simple path with ``1..max_length`` edges, once per (undirected) path, sorted."""
    seen: set[QueryPath] = set()

    def walk(nodes: list[NodeId], edges: list[int]) -> Iterator[QueryPath]:
        if edges:
            yield _canonical(query, tuple(nodes), tuple(edges))
        if len(edges) == max_length:
            return
        for nbr, hop_list in query.neighbors(nodes[-1]).items():
            if nbr in nodes:
                continue
            nodes.append(nbr)
            for e, _ in hop_list:
                edges.append(e)
                yield from walk(nodes, edges)
                edges.pop()
            nodes.pop()

    for start in query.nodes:
        seen.update(walk([start], []))
    return sorted(seen, key=lambda p: (p.length, _position_key(query, p)))


def candidate_query_paths(query: QueryGraph, length: int) -> list[QueryPath]:
    """Paths a plan may use: all simple paths of exactly ``length`` edges, plus, for every edge on no
    such path, the longest simple paths through it."""
    if length < 1:
        raise ValueError("path length must be >= 1")
    paths = simple_query_paths(query, length)
    longest = [0] * len(query.edges)
    for p in paths:
        for e in p.edges:
            longest[e] = max(longest[e], p.length)
    keep = []
    for p in paths:
        if p.length == length or any(longest[e] == p.length for e in p.edges):
            keep.append(p)
    return keep


def plan_key(query: QueryGraph, paths: list[QueryPath] | tuple[QueryPath, ...]) -> tuple[int, int, int]:
    """``(number of paths, Σ|E(p)| − |E(q)|, Σ w(p))`` of a covering plan."""
    return (
        len(paths),
        sum(p.length for p in paths) - len(query.edges),
        sum(path_weight(query, p) for p in paths),
    )


def _tiebreak(query: QueryGraph, paths: list[QueryPath]) -> tuple:
    return tuple(sorted(_position_key(query, p) for p in paths))


def _finish(query: QueryGraph, paths: list[QueryPath], method: str) -> Decomposition:
    ordered = sorted(paths, key=lambda p: _position_key(query, p))
    _, overlap, cost = plan_key(query, ordered)
    return Decomposition(tuple(ordered), overlap, cost, method)


def _exact(query: QueryGraph, cands: list[QueryPath]) -> list[QueryPath]:
    n_edges = len(query.edges)
    full = (1 << n_edges) - 1
    masks = [sum(1 << e for e in set(p.edges)) for p in cands]
    by_edge: list[list[int]] = [[] for _ in range(n_edges)]
    for i, p in enumerate(cands):
        for e in set(p.edges):
            by_edge[e].append(i)
    max_len = max(p.length for p in cands)
    best: list[tuple[tuple, list[QueryPath]]] = []

    def dfs(covered: int, chosen: list[int], budget: int) -> None:
        if covered == full:
            plan = [cands[i] for i in chosen]
            key = (plan_key(query, plan), _tiebreak(query, plan))
            if not best or key < best[0][0]:
                best[:] = [(key, plan)]
            return
        uncovered = n_edges - covered.bit_count()
        if budget == 0 or uncovered > budget * max_len:
            return
        first = (~covered & full & -(~covered & full)).bit_length() - 1  # lowest uncovered edge
        for i in by_edge[first]:
            chosen.append(i)
            dfs(covered | masks[i], chosen, budget - 1)
            chosen.pop()

    for k in range(math.ceil(n_edges / max_len), n_edges + 1):
        limits.check()
        dfs(0, [], k)
        if best:
            return best[0][1]
    raise AssertionError("every edge lies on a candidate path")  # pragma: no cover


def _greedy(query: QueryGraph, cands: list[QueryPath]) -> list[QueryPath]:
    n_edges = len(query.edges)
    start = max(query.nodes, key=lambda n: (query.degree(n), -query.index[n]))
    initial = [p for p in cands if start in p.nodes]
    weights = {}
    for p in cands:
        limits.check()  # a request's deadline: a long question's query graph has many candidate paths
        weights[p] = path_weight(query, p)
    best: tuple | None = None
    best_plan: list[QueryPath] = []
    for first in initial:
        plan = [first]
        covered = set(first.edges)
        touched = set(first.nodes)
        while len(covered) < n_edges:
            limits.check()
            options = [p for p in cands if not covered.issuperset(p.edges)]
            connected = [p for p in options if touched.intersection(p.nodes)]
            pool = connected or options  # a disconnected query continues in another component
            nxt = min(
                pool,
                key=lambda p: (len(covered.intersection(p.edges)), weights[p], _position_key(query, p)),
            )
            plan.append(nxt)
            covered.update(nxt.edges)
            touched.update(nxt.nodes)
        key = (plan_key(query, plan), _tiebreak(query, plan))
        if best is None or key < best:
            best, best_plan = key, plan
    return best_plan


def decompose(
    query: QueryGraph,
    length: int,
    *,
    method: Literal["auto", "exact", "greedy"] = "auto",
    max_exact_edges: int = 12,
) -> Decomposition:
    """Cover every query edge with simple query paths of length ``≤ length`` at minimal
    ``(number, overlap, Σ w)`` (``exact``) or by Algorithm 4 (``greedy``); see the module docstring."""
    if not query.edges:
        return Decomposition((), 0, 0, method)
    cands = candidate_query_paths(query, length)
    if method == "auto":
        method = "exact" if len(query.edges) <= max_exact_edges else "greedy"
    if method == "exact":
        plan = _exact(query, cands)
    elif method == "greedy":
        plan = _greedy(query, cands)
    else:
        raise ValueError(f"unknown method {method!r}")
    return _finish(query, plan, method)
