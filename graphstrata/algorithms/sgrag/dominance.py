"""Path dominance: the exact structural containment check and the dominance comparison of embeddings.

Paper: SG-RAG §4.2 "Training of the Dominant Embedding Model" (``o(p_q) ⪯ o(p_z)``), §4.3
"Path-level Retrieval" (exact match: equal labels and ``o(p_q) ⪯ o(p_z)``), Eq. (5) (dominance
region), Appendix C Eq. (16)–(17) and Fig. 6 (path-level dominance); GNN-PE (Ye et al., VLDB 2024)
for the underlying idea.

The learned embeddings (:mod:`graphstrata.algorithms.sgrag.gat`) give a *necessary* condition for a
data path to contain a query path: if every query star is contained in the aligned data star, the
query path embedding is dominated (zero false negatives).  They can let through paths that do not
contain the query.  :func:`path_contained` is the exact test the matcher applies to what survives the
embedding filter, so no false positive reaches the assembly step.

``path_contained(query, q_path, graph, d_path)`` is true iff, position by position,

1. the data label equals the query label (unknown query labels match anything — used for label
   completion; after completion all labels are known);
2. each data hop realises the query hop (relation if given; orientation if ``directed``);
3. the data nodes are distinct; and
4. the query star of ``q_i`` embeds into the data star of ``v_i``: there is an injective map of the
   query neighbours of ``q_i`` to data neighbours of ``v_i`` that preserves labels and realises every
   query edge ``q_i — u`` by a data edge ``v_i — f(u)``, where query nodes of the path are pinned to
   their aligned data nodes (so chords of the path are checked too) and the other neighbours may not
   use a data node of the path (injectivity).  The injective map is found by bipartite matching
   (Kuhn's augmenting paths), so the test is exact, not a multiset approximation.

Each star is checked on its own (as the embedding does); the joint consistency of different stars
and paths is the assembly step's job (:mod:`graphstrata.algorithms.sgrag.assemble`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping

import numpy as np
import numpy.typing as npt

from graphstrata.algorithms.sgrag.decompose import QueryPath, query_hops
from graphstrata.algorithms.sgrag.query_graph import DataGraph, DataPath, Hop, QueryGraph, hop_compatible

__all__ = [
    "DOMINANCE_ATOL",
    "DOMINANCE_RTOL",
    "dominance_mask",
    "dominates",
    "path_contained",
    "star_contained",
]

NodeId = Hashable
FloatArray = npt.NDArray[np.float64]

#: Slack of the dominance test ``lower <= upper + atol + rtol * |lower|``: an identical star computed
#: in another batch may differ in the last bits; nothing else relies on the tolerance.
DOMINANCE_RTOL = 1e-9
DOMINANCE_ATOL = 1e-9


def _slack(lower: FloatArray) -> FloatArray:
    return DOMINANCE_ATOL + DOMINANCE_RTOL * np.abs(lower)


def dominates(upper: npt.ArrayLike, lower: npt.ArrayLike) -> bool:
    """``lower ⪯ upper`` componentwise (with the float slack above)."""
    lo = np.asarray(lower, dtype=np.float64)
    return bool(np.all(lo <= np.asarray(upper, dtype=np.float64) + _slack(lo)))


def dominance_mask(uppers: FloatArray, lower: FloatArray) -> npt.NDArray[np.bool_]:
    """For each row of ``uppers``, whether it dominates ``lower`` (the dominance region of Eq. 5)."""
    lo = np.asarray(lower, dtype=np.float64)
    return (uppers >= lo - _slack(lo)).all(axis=-1)


def _hops_realised(query_hops_: Iterable[Hop], data_hops: list[Hop], directed: bool) -> bool:
    return all(any(hop_compatible(q, d, directed) for d in data_hops) for q in query_hops_)


def _label_ok(query_label: str | None, data_label: str | None) -> bool:
    return query_label is None or query_label == data_label


def star_contained(
    query: QueryGraph,
    qnode: NodeId,
    graph: DataGraph,
    vnode: NodeId,
    *,
    pinned: Mapping[NodeId, NodeId] | None = None,
    forbidden: Iterable[NodeId] = (),
    directed: bool = False,
) -> bool:
    """Whether the query star of ``qnode`` embeds into the data star of ``vnode`` (see module doc).

    ``pinned`` maps query nodes to the data node they must use (path positions); ``forbidden`` data
    nodes may not be used by the other query neighbours.
    """
    if not _label_ok(query.labels[qnode], graph.labels[vnode]):
        return False
    pinned = pinned or {}
    data_nbrs = graph.neighbors(vnode)
    taken: set[NodeId] = set(forbidden)
    free: list[tuple[NodeId, list[Hop]]] = []
    for u, qlist in query.neighbors(qnode).items():
        qh = [h for _, h in qlist]
        if u in pinned:
            w = pinned[u]
            if w not in data_nbrs or not _label_ok(query.labels[u], graph.labels[w]):
                return False
            if not _hops_realised(qh, [h for _, h in data_nbrs[w]], directed):
                return False
            taken.add(w)
        else:
            free.append((u, qh))
    if not free:
        return True
    if len(free) > len(data_nbrs) - len(taken.intersection(data_nbrs)):
        return False
    options: list[list[NodeId]] = []
    for u, qh in free:
        opts = [
            w
            for w, dlist in data_nbrs.items()
            if w not in taken
            and _label_ok(query.labels[u], graph.labels[w])
            and _hops_realised(qh, [h for _, h in dlist], directed)
        ]
        if not opts:
            return False
        options.append(opts)
    return _perfect_matching(options)


def _perfect_matching(options: list[list[NodeId]]) -> bool:
    """Whether every left vertex ``i`` can get a distinct right vertex from ``options[i]`` (Kuhn)."""
    owner: dict[NodeId, int] = {}

    def augment(i: int, seen: set[NodeId]) -> bool:
        for w in options[i]:
            if w in seen:
                continue
            seen.add(w)
            if w not in owner or augment(owner[w], seen):
                owner[w] = i
                return True
        return False

    order = sorted(range(len(options)), key=lambda i: len(options[i]))  # most constrained first
    return all(augment(i, set()) for i in order)


def path_contained(
    query: QueryGraph,
    qpath: QueryPath,
    graph: DataGraph,
    dpath: DataPath,
    *,
    directed: bool = False,
) -> bool:
    """Exact test that the data path ``dpath`` (aligned position by position) contains the query path
    ``qpath`` with all its query stars (see module doc).  No false positives, no false negatives."""
    if dpath.length != qpath.length or len(set(dpath.nodes)) != len(dpath.nodes):
        return False
    for q, label in zip(qpath.nodes, dpath.labels, strict=True):
        if not _label_ok(query.labels[q], label):
            return False
    for qh, dh in zip(query_hops(query, qpath), dpath.hops, strict=True):
        if not hop_compatible(qh, dh, directed):
            return False
    pinned = dict(zip(qpath.nodes, dpath.nodes, strict=True))
    return all(
        star_contained(query, q, graph, v, pinned=pinned, forbidden=dpath.nodes, directed=directed)
        for q, v in pinned.items()
    )
