"""Conflict-free subgraph assembly (SG-RAG Algorithm 8) and the 1-hop fallback (Algorithm 1, l. 19–24).

Paper: SG-RAG §4.4 "Subgraph Assembly" and "Generate Answer", Appendix M / Algorithm 8 (Assemble
Subgraphs), Algorithm 1 lines 19–24 (fallback subgraph ``g''``).

Assembly.  Each plan path ``p_{q_i}`` has a candidate list of data paths aligned with it position by
position.  Algorithm 8 walks the Cartesian product of the candidate lists and keeps a combination iff
no query node is bound to two different data nodes.  Two changes, neither of which alters what a
correct combination is:

* *Injectivity.*  Algorithm 8 only checks that a query node gets one data node; it would accept two
  query nodes bound to the *same* data node, which is not an isomorphic match ("g ≡ q", §4.1).  A
  data node bound to two query nodes is therefore also a conflict (``injective=True``, default).
* *Backtracking join.*  :func:`assemble` extends a partial binding one path at a time and drops a
  branch at its first conflict, joining each path on a query node that is already bound (candidates
  are bucketed by the data node at that position), so the work follows the number of consistent
  partial bindings instead of the size of the product.  :func:`assemble_cartesian` is the literal
  Algorithm 8 (plus the injectivity test) and returns the same set (checked in the tests).

Results are distinct *bindings* (query node → data node); combinations realising the same binding
through different parallel edges are reported once, with the first set of paths found.

Fallback.  When no exact subgraph exists, Algorithm 1 builds ``g''`` from the 1-hop neighbours of the
known entities of ``q`` (:func:`one_hop_subgraph`: the anchors, their neighbours and every edge
incident to an anchor).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product

from graphstrata import limits
from graphstrata.algorithms.sgrag.decompose import QueryPath
from graphstrata.algorithms.sgrag.query_graph import DataGraph, DataPath, Edge, QueryGraph

__all__ = [
    "SubgraphMatch",
    "assemble",
    "assemble_cartesian",
    "fallback_anchors",
    "one_hop_subgraph",
]

NodeId = Hashable


@dataclass(frozen=True, slots=True)
class SubgraphMatch:
    """One exact match: the binding of query nodes to data nodes and the data paths realising it."""

    binding: tuple[tuple[NodeId, NodeId], ...]  # (query node, data node), in plan order of first use
    paths: tuple[DataPath, ...]  # one per plan path, aligned with the plan

    @property
    def mapping(self) -> dict[NodeId, NodeId]:
        return dict(self.binding)

    def __getitem__(self, query_node: NodeId) -> NodeId:
        for q, v in self.binding:
            if q == query_node:
                return v
        raise KeyError(query_node)

    @property
    def nodes(self) -> frozenset[NodeId]:
        return frozenset(v for _, v in self.binding)

    @property
    def edges(self) -> frozenset[Edge]:
        """The data edges walked by the matched paths (as directed edges with their relation)."""
        out = set()
        for p in self.paths:
            for i, hop in enumerate(p.hops):
                a, b = p.nodes[i], p.nodes[i + 1]
                out.add(Edge(a, b, hop.relation) if hop.forward else Edge(b, a, hop.relation))
        return frozenset(out)


def _extend(
    binding: dict[NodeId, NodeId], used: dict[NodeId, NodeId], qpath: QueryPath, dpath: DataPath, injective: bool
) -> list[NodeId] | None:
    """Bind ``qpath`` to ``dpath`` on top of ``binding``; return the newly bound query nodes, or
    ``None`` (and leave everything unchanged) on a conflict."""
    added: list[NodeId] = []
    for q, v in zip(qpath.nodes, dpath.nodes, strict=True):
        bound = binding.get(q)
        if bound is not None:
            if bound != v:
                break
            continue
        if injective:
            if v in used:
                break
            used[v] = q
        binding[q] = v
        added.append(q)
    else:
        return added
    _undo(binding, used, added, injective)
    return None


def _undo(binding: dict[NodeId, NodeId], used: dict[NodeId, NodeId], added: list[NodeId], injective: bool) -> None:
    for q in added:
        v = binding.pop(q)
        if injective:
            del used[v]


def _join_order(plan: Sequence[QueryPath], candidates: Sequence[Sequence[DataPath]]) -> list[int]:
    remaining = set(range(len(plan)))
    order: list[int] = []
    bound: set[NodeId] = set()
    while remaining:
        i = min(remaining, key=lambda j: (-len(bound.intersection(plan[j].nodes)), len(candidates[j]), j))
        order.append(i)
        remaining.discard(i)
        bound.update(plan[i].nodes)
    return order


def assemble(
    plan: Sequence[QueryPath],
    candidates: Sequence[Sequence[DataPath]],
    *,
    injective: bool = True,
    max_results: int | None = None,
) -> list[SubgraphMatch]:
    """Algorithm 8 as a backtracking join: every conflict-free combination of one candidate per plan
    path, as distinct bindings (at most ``max_results``)."""
    if len(plan) != len(candidates):
        raise ValueError("one candidate list per plan path")
    if not plan or any(len(c) == 0 for c in candidates):
        return []
    order = _join_order(plan, candidates)
    # bucket each later path's candidates by the data node at one already-bound position
    buckets: list[tuple[int | None, dict[NodeId, list[DataPath]]]] = []
    bound: set[NodeId] = set()
    for i in order:
        pos = next((k for k, q in enumerate(plan[i].nodes) if q in bound), None)
        table: dict[NodeId, list[DataPath]] = {}
        if pos is not None:
            for dp in candidates[i]:
                table.setdefault(dp.nodes[pos], []).append(dp)
        buckets.append((pos, table))
        bound.update(plan[i].nodes)

    results: dict[tuple, SubgraphMatch] = {}
    binding: dict[NodeId, NodeId] = {}
    used: dict[NodeId, NodeId] = {}
    chosen: dict[int, DataPath] = {}
    plan_order = list(dict.fromkeys(q for p in plan for q in p.nodes))  # canonical binding order

    def rec(depth: int) -> bool:
        if depth == len(order):
            key = tuple((q, binding[q]) for q in plan_order)
            if key not in results:
                results[key] = SubgraphMatch(key, tuple(chosen[i] for i in range(len(plan))))
            return max_results is not None and len(results) >= max_results
        i = order[depth]
        pos, table = buckets[depth]
        pool = candidates[i] if pos is None else table.get(binding[plan[i].nodes[pos]], ())
        for dp in pool:
            limits.check()  # a request's deadline: the search over combinations can be long
            added = _extend(binding, used, plan[i], dp, injective)
            if added is None:
                continue
            chosen[i] = dp
            stop = rec(depth + 1)
            _undo(binding, used, added, injective)
            if stop:
                return True
        return False

    rec(0)
    return list(results.values())


def assemble_cartesian(
    plan: Sequence[QueryPath],
    candidates: Sequence[Sequence[DataPath]],
    *,
    injective: bool = True,
) -> list[SubgraphMatch]:
    """Literal Algorithm 8: every element of ``cand_list_1 × … × cand_list_k`` without a conflict
    (exponential; a reference for :func:`assemble`)."""
    if len(plan) != len(candidates):
        raise ValueError("one candidate list per plan path")
    if not plan:
        return []
    results: dict[tuple, SubgraphMatch] = {}
    for combo in product(*candidates):
        limits.check()
        query_node_map: dict[NodeId, NodeId] = {}
        conflict = False
        for qpath, dpath in zip(plan, combo, strict=True):
            for q, v in zip(qpath.nodes, dpath.nodes, strict=True):
                if q in query_node_map:
                    if query_node_map[q] != v:
                        conflict = True
                        break
                else:
                    query_node_map[q] = v
            if conflict:
                break
        if conflict or (injective and len(set(query_node_map.values())) != len(query_node_map)):
            continue
        key = tuple(query_node_map.items())
        results.setdefault(key, SubgraphMatch(key, tuple(combo)))
    return list(results.values())


def fallback_anchors(
    query: QueryGraph, graph: DataGraph, normalized: Mapping[NodeId, NodeId] | None = None
) -> list[NodeId]:
    """Data nodes of the known query entities: ``normalized[q]`` when given (entity normalisation,
    Algorithm 3), otherwise every data node whose label equals the query label."""
    out: list[NodeId] = []
    for q in query.known_nodes:
        if normalized is not None and q in normalized:
            found: Iterable[NodeId] = [normalized[q]]
        else:
            found = graph.nodes_labelled(query.labels[q])  # type: ignore[arg-type]
        out.extend(v for v in found if v in graph and v not in out)
    return out


def one_hop_subgraph(graph: DataGraph, anchors: Iterable[NodeId]) -> DataGraph:
    """``g''``: the anchors, their 1-hop neighbours and the edges incident to an anchor."""
    anchor_set = {a for a in anchors if a in graph}
    keep: dict[NodeId, str] = {}
    for a in anchor_set:
        keep[a] = graph.label(a)
        for u in graph.neighbors(a):
            keep[u] = graph.label(u)
    ordered = {n: keep[n] for n in graph.nodes if n in keep}
    return DataGraph(ordered, (e for e in graph.edges if e.src in anchor_set or e.dst in anchor_set))
