"""Label completion for unknown query nodes (SG-RAG Appendix E, Algorithms 5 and 6).

Paper: SG-RAG §4.3 "Path Decomposition and Label Completion" and Appendix E "Label Completion for
Unknown Nodes" / "Enumerating Completed Paths".

Algorithm 5 (:func:`candidate_labels`): every plan path through an unknown node is looked up with the
unknown positions as wildcards (known positions must match — the paper's "zero vector" label
embedding compared on known dimensions only), and the labels found at the unknown positions are the
candidates ``U[u]``.  Two refinements, both sound (they never drop the label of a true answer):

* candidates are collected from *every* plan path through ``u`` and intersected (the paper selects
  one path per unknown and merges "accordingly"): a true answer's label appears in the lookup of
  every path through it, because each path of the plan is matched by the answer's embedding;
* with ``graph`` given, a looked-up data path must also pass the exact containment check with
  wildcards (:func:`~graphstrata.algorithms.sgrag.dominance.path_contained`: relations, stars of the
  known nodes), not labels alone, which keeps the Cartesian product of Algorithm 6 small;
* with an ``embedder`` (and an index holding embeddings), the looked-up rows first pass the dominance
  filter ``o(p_q) ⪯ o(p_z)``, the query path completed with each row's own labels
  (:meth:`~graphstrata.algorithms.sgrag.embedder.DominanceEmbedder.filter_rows`), so the exact check
  runs on the rows the embeddings could not rule out (the paper's order: index filter, then match).

Algorithm 6 (:func:`completions`): the Cartesian product of the candidate sets, one label map per
combination (the paper deep-copies the path set per combination; here
:meth:`~graphstrata.algorithms.sgrag.query_graph.QueryGraph.with_labels` makes the copy).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import TYPE_CHECKING, Literal

from graphstrata.algorithms.sgrag.decompose import QueryPath, query_hops
from graphstrata.algorithms.sgrag.dominance import path_contained
from graphstrata.algorithms.sgrag.path_index import PathIndex
from graphstrata.algorithms.sgrag.query_graph import DataGraph, QueryGraph

if TYPE_CHECKING:
    from graphstrata.algorithms.sgrag.embedder import DominanceEmbedder

__all__ = ["PathStats", "candidate_labels", "completions", "n_completions"]

NodeId = Hashable


@dataclass
class PathStats:
    """Candidate counts for one index lookup of a query path (the pruning funnel).

    ``phase``: ``"completion"`` (Algorithm 5 wildcard lookup), ``"match"`` (one completed path,
    Algorithm 7) or ``"wildcard"`` (the single wildcard pass that replaces too many completions).
    """

    path: QueryPath
    labels: tuple[str | None, ...]
    label_group: int  # data paths with these labels at the known positions (semantic constraint)
    structural: int  # … whose hops realise the query hops (relations, directions)
    filtered: int  # … that also pass the dominance filter o(p_q) ⪯ o(p_z) (= structural without a model)
    exact: int  # … that pass the exact containment check
    phase: Literal["completion", "match", "wildcard"] = "match"

    @property
    def pruned_by_dominance(self) -> int:
        """Rows the embeddings ruled out before the exact check."""
        return self.structural - self.filtered


def candidate_labels(
    query: QueryGraph,
    paths: Sequence[QueryPath],
    index: PathIndex,
    graph: DataGraph | None = None,
    *,
    directed: bool = False,
    embedder: DominanceEmbedder | None = None,
    stats: list[PathStats] | None = None,
) -> dict[NodeId, frozenset[str]]:
    """Algorithm 5: ``U`` = unknown query node on some plan path → its candidate labels (maybe empty).

    Unknown nodes on no path of the plan (isolated query nodes) get no entry.  ``stats`` (if given)
    receives one :class:`PathStats` per lookup.
    """
    found: dict[NodeId, frozenset[str]] = {}
    for qpath in paths:
        unknown_pos = [i for i, q in enumerate(qpath.nodes) if query.labels[q] is None]
        if not unknown_pos:
            continue
        labels = [query.labels[q] for q in qpath.nodes]
        semantic = index.rows(labels)
        rows = index.filter_hops(qpath.length, semantic, query_hops(query, qpath), directed)
        structural = len(rows)
        if embedder is not None:
            rows = embedder.filter_rows(query, qpath, index, rows)
        filtered = len(rows)
        if graph is not None and len(rows):
            rows = rows[
                [path_contained(query, qpath, graph, index.path(qpath.length, r), directed=directed) for r in rows]
            ]
        if stats is not None:
            stats.append(PathStats(qpath, tuple(labels), len(semantic), structural, filtered, len(rows), "completion"))
        for pos in unknown_pos:
            q = qpath.nodes[pos]
            seen = frozenset(index.label_at(qpath.length, rows, pos)) if len(rows) else frozenset()
            found[q] = seen if q not in found else found[q] & seen
    return found


def n_completions(candidates: Mapping[NodeId, frozenset[str]]) -> int:
    """Number of label combinations Algorithm 6 would enumerate."""
    total = 1
    for labels in candidates.values():
        total *= len(labels)
    return total


def completions(query: QueryGraph, candidates: Mapping[NodeId, frozenset[str]]) -> Iterator[dict[NodeId, str]]:
    """Algorithm 6: one ``{unknown node: label}`` map per element of the Cartesian product of ``U``
    (unknown nodes in query order, labels sorted, so the enumeration is deterministic)."""
    ids = [q for q in query.nodes if q in candidates]
    for combo in product(*(sorted(candidates[q]) for q in ids)):
        yield dict(zip(ids, combo, strict=True))
