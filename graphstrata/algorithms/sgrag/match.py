"""Exact subgraph matching with path dominance embeddings (SG-RAG Algorithm 7) — the in-memory driver.

Paper: SG-RAG §4.1 (Eq. 2 pipeline), §4.3 "Path-level Retrieval", §4.4, Algorithm 1 lines 9–24,
Appendix L / Algorithm 7.

:func:`match_query` runs, over a :class:`~graphstrata.algorithms.sgrag.query_graph.DataGraph` (the
candidate subgraph the Neo4j layer fetched with Cypher):

1. decomposition of the (normalised) query graph into paths of length ``≤ l`` (Algorithm 4);
2. the path index over the data paths of the lengths the plan needs, with path dominance embeddings
   when a :class:`DominanceEmbedder` is given (Eq. 4) — or a prebuilt :class:`PathIndex`;
3. label completion of the unknown nodes (Algorithms 5–6; wildcard rows pass the dominance filter,
   completed with their own labels, before the exact check);
4. per completed path set ``Q'`` and query path ``p_q``: candidates with equal labels, compatible
   hops and ``o(p_q) ⪯ o(p_z)`` from the index, then the exact containment check, giving
   ``p_q.cand_list`` (Algorithm 7, lines 10–36; candidate lists are cached across completions when
   the labels around a path do not change);
5. conflict-free assembly (Algorithm 8) and, if nothing matched, the 1-hop fallback subgraph.

Exactness: every filter is either exact (labels, hops, containment, assembly) or has no false
negatives (dominance embeddings; guaranteed by construction for a monotone
:class:`~graphstrata.algorithms.sgrag.gat.StarGAT`), so the matches are exactly the injective
label/relation-preserving embeddings of the query's edges (the semantics in
:mod:`graphstrata.algorithms.sgrag.query_graph`).  When the completions outnumber
``max_label_combinations``, one wildcard pass replaces the per-combination passes (unknown positions
restricted to their candidate labels, no embedding filter): same matches, no enumeration blow-up.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from graphstrata import limits
from graphstrata.algorithms.sgrag.assemble import SubgraphMatch, assemble, fallback_anchors, one_hop_subgraph
from graphstrata.algorithms.sgrag.completion import PathStats, candidate_labels, completions, n_completions
from graphstrata.algorithms.sgrag.decompose import Decomposition, QueryPath, decompose, query_hops
from graphstrata.algorithms.sgrag.dominance import path_contained
from graphstrata.algorithms.sgrag.embedder import DominanceEmbedder
from graphstrata.algorithms.sgrag.path_index import PathIndex
from graphstrata.algorithms.sgrag.query_graph import (
    DataGraph,
    DataPath,
    QueryGraph,
    enumerate_paths,
    enumerate_paths_through,
)

__all__ = ["DominanceEmbedder", "MatchResult", "PathStats", "build_path_index", "match_query"]

NodeId = Hashable
FloatArray = npt.NDArray[np.float64]


def build_path_index(
    graph: DataGraph,
    lengths: Iterable[int],
    embedder: DominanceEmbedder | None = None,
    *,
    node_embeddings: Mapping[NodeId, npt.ArrayLike] | None = None,
    anchored: Mapping[int, set[tuple[int, str]]] | None = None,
) -> PathIndex:
    """Index the simple paths of ``graph`` with the given lengths (both orientations): all of them, or
    for a length in ``anchored`` only those with a label at a position it names (``(i, label)``, see
    :func:`enumerate_paths_through`)."""
    paths: list[DataPath] = []
    for length in sorted(set(lengths)):
        if anchored is not None and length in anchored:
            paths.extend(enumerate_paths_through(graph, length, anchored[length]))
        else:
            paths.extend(enumerate_paths(graph, length))
    if node_embeddings is None and embedder is not None:
        node_embeddings = embedder.node_embeddings(graph)
    return PathIndex(paths, node_embeddings)


@dataclass
class MatchResult:
    """Output of :func:`match_query`; ``fallback`` is set iff there is no exact match."""

    query: QueryGraph
    plan: Decomposition
    label_candidates: dict[NodeId, frozenset[str]]
    matches: list[SubgraphMatch]
    fallback: DataGraph | None
    completions_tried: int = 0
    wildcard_pass: bool = False
    stats: list[PathStats] = field(default_factory=list)

    @property
    def used_fallback(self) -> bool:
        return self.fallback is not None

    def funnel(self) -> dict[str, int]:
        """Rows summed over all index lookups: after labels, after hops, after the dominance filter,
        after the exact check; ``pruned_by_dominance`` = exact checks the embeddings saved."""
        keys = ("label_group", "structural", "filtered", "exact")
        out = {k: sum(getattr(s, k) for s in self.stats) for k in keys}
        out["pruned_by_dominance"] = out["structural"] - out["filtered"]
        out["lookups"] = len(self.stats)
        return out

    def answers(self, query_node: NodeId | None = None) -> list[NodeId]:
        """Distinct data nodes bound to ``query_node`` (default: the query's only unknown node)."""
        if query_node is None:
            unknown = self.query.unknown_nodes
            if len(unknown) != 1:
                raise ValueError("pass the query node: the query has no or several unknown nodes")
            query_node = unknown[0]
        return list(dict.fromkeys(m[query_node] for m in self.matches))


def _anchored(query: QueryGraph, paths: Sequence[QueryPath]) -> dict[int, set[tuple[int, str]]]:
    """Per path length, the (position, label) of every known node of the plan's paths of that length,
    in both orientations — the only data paths their lookups can return (labels are compared exactly,
    at known positions, before and after label completion). A length with a path of unknown nodes
    only is left out: its lookups need every path."""
    out: dict[int, set[tuple[int, str]]] = {}
    open_lengths = set()
    for p in paths:
        known = {(i, lab) for i, q in enumerate(p.nodes) if (lab := query.labels[q]) is not None}
        if not known:
            open_lengths.add(p.length)
        out.setdefault(p.length, set()).update(known | {(p.length - i, lab) for i, lab in known})
    return {n: a for n, a in out.items() if n not in open_lengths}


def _neighbourhood_key(query: QueryGraph, qpath: QueryPath) -> tuple:
    """Labels that decide a path's candidates: the path nodes and all their query neighbours."""
    around = dict.fromkeys(qpath.nodes)
    for q in qpath.nodes:
        around.update(dict.fromkeys(query.neighbors(q)))
    return tuple((q, query.labels[q]) for q in around)


def _exact_candidates(
    query: QueryGraph, qpath: QueryPath, graph: DataGraph, index: PathIndex, rows: npt.NDArray[np.int64], directed: bool
) -> list[DataPath]:
    out = []
    for r in rows.tolist():
        dpath = index.path(qpath.length, r)
        if path_contained(query, qpath, graph, dpath, directed=directed):
            out.append(dpath)
    return out


def match_query(
    query: QueryGraph,
    graph: DataGraph,
    *,
    path_length: int = 2,
    index: PathIndex | None = None,
    embedder: DominanceEmbedder | None = None,
    directed: bool = False,
    method: Literal["auto", "exact", "greedy"] = "auto",
    max_matches: int | None = None,
    max_label_combinations: int = 256,
    normalized: Mapping[NodeId, NodeId] | None = None,
) -> MatchResult:
    """Exact SG-RAG retrieval of ``query`` in ``graph`` (see the module docstring).

    ``index`` may be prebuilt (e.g. with stored node embeddings); it must hold the path lengths the
    plan needs.  ``normalized`` (query node → data node, from entity normalisation) only picks the
    fallback anchors.  ``max_matches`` caps the matches per assembled path set.
    """
    plan = decompose(query, path_length, method=method)
    result = MatchResult(query, plan, {}, [], None)
    if plan.paths:
        if index is None:
            index = build_path_index(graph, plan.lengths, embedder, anchored=_anchored(query, plan.paths))
        elif missing := plan.lengths - set(index.lengths):
            raise ValueError(f"the index has no paths of length {sorted(missing)}")
        _match(query, graph, plan, index, embedder, directed, max_matches, max_label_combinations, result)
    if not result.matches:
        result.fallback = one_hop_subgraph(graph, fallback_anchors(query, graph, normalized))
    return result


def _match(
    query: QueryGraph,
    graph: DataGraph,
    plan: Decomposition,
    index: PathIndex,
    embedder: DominanceEmbedder | None,
    directed: bool,
    max_matches: int | None,
    max_label_combinations: int,
    result: MatchResult,
) -> None:
    paths: Sequence[QueryPath] = plan.paths
    hops = [query_hops(query, p) for p in paths]
    use_embeddings = embedder is not None and index.embedding_dim is not None
    U = candidate_labels(
        query, paths, index, graph, directed=directed, embedder=embedder if use_embeddings else None, stats=result.stats
    )
    result.label_candidates = U
    if any(not labels for labels in U.values()):
        return
    found: dict[tuple, SubgraphMatch] = {}

    if n_completions(U) > max_label_combinations:
        # one wildcard pass: unknown positions restricted to U, exact check with wildcards
        result.wildcard_pass = True
        cand_lists = []
        for qpath, qhops in zip(paths, hops, strict=True):
            limits.check()  # a request's deadline (a long question makes many paths)
            labels = tuple(query.labels[q] for q in qpath.nodes)
            semantic = index.rows(labels)
            rows = index.filter_hops(qpath.length, semantic, qhops, directed)
            for pos, q in enumerate(qpath.nodes):
                if q in U and len(rows):
                    allowed = U[q]
                    rows = rows[[lab in allowed for lab in index.label_at(qpath.length, rows, pos)]]
            structural = len(rows)
            if use_embeddings:
                rows = embedder.filter_rows(query, qpath, index, rows)  # type: ignore[union-attr]
            exact = _exact_candidates(query, qpath, graph, index, rows, directed)
            result.stats.append(PathStats(qpath, labels, len(semantic), structural, len(rows), len(exact), "wildcard"))
            cand_lists.append(exact)
        for m in assemble(paths, cand_lists, max_results=max_matches):
            found.setdefault(m.binding, m)
        result.matches = list(found.values())
        return

    cache: dict[tuple, tuple[list[DataPath], PathStats]] = {}
    for completion in completions(query, U):
        limits.check()
        result.completions_tried += 1
        completed = query.with_labels(completion)
        cand_lists = []
        for k, (qpath, qhops) in enumerate(zip(paths, hops, strict=True)):
            limits.check()
            key = (k, _neighbourhood_key(completed, qpath))
            if key not in cache:
                labels = tuple(completed.labels[q] for q in qpath.nodes)
                semantic = index.rows(labels)
                structural = index.filter_hops(qpath.length, semantic, qhops, directed)
                if use_embeddings:
                    q_emb = embedder.query_path_embedding(completed, qpath)  # type: ignore[union-attr]
                    rows = index.candidates(labels, qhops, q_emb, directed=directed)  # type: ignore[arg-type]
                else:
                    rows = structural
                exact = _exact_candidates(completed, qpath, graph, index, rows, directed)
                stats = PathStats(qpath, labels, len(semantic), len(structural), len(rows), len(exact))
                cache[key] = (exact, stats)
                result.stats.append(stats)
            cand_lists.append(cache[key][0])
        for m in assemble(paths, cand_lists, max_results=max_matches):
            found.setdefault(m.binding, m)
    result.matches = list(found.values())
