"""Data model of the SG-RAG core: labelled multigraphs, hops, data paths and star subgraphs.

Paper: "Structure Guided Retrieval-Augmented Generation for Factual Queries" (SG-RAG) — §3 (graph
definition), §4.3 and Table 10 (query graph with an ``UNK`` target), §4.2 (paths ``p_z`` of length
``l``), Appendix C (1-hop star subgraphs ``g_{v_i}``).

Everything here is plain Python over small in-memory graphs; the Neo4j layer fetches a candidate
subgraph with Cypher and builds a :class:`DataGraph` (or a list of :class:`DataPath`) from it.

* A :class:`QueryGraph` has nodes whose label is a string or ``None`` (unknown; ``"UNK"``,
  ``"unknown"``, ``"?"`` and ``""`` are read as ``None``, Table 10) and edges with an optional
  relation label (``None`` = any relation: the paper's query edges carry no label).
* A :class:`DataGraph` has string labels only (entity names in SG-RAG) and edges with a relation.
* Edges are directed as stored; a :class:`Hop` records the relation of one traversed edge and whether
  it was traversed along (``forward=True``) or against its direction.  Matching ignores direction
  unless ``directed=True`` is passed (the paper's matching compares node labels only).
* :class:`DataPath` is a path ``p_z`` as a sequence of (node id, node label) with one hop between
  consecutive nodes — the shape a Cypher ``MATCH p = (a)-[*l]-(b)`` returns.

Match semantics used throughout (non-induced subgraph monomorphism, the exact version of "g ≡ q"):
an injective map ``f: V(q) -> V(G)`` with ``label(f(u)) == label(u)`` for every known query node and,
for every query edge ``(u, v, r)``, some data edge between ``f(u)`` and ``f(v)`` whose relation is
``r`` (any relation if ``r is None``) and — only when ``directed`` — oriented from ``f(u)`` to
``f(v)``.  Parallel query edges may be realised by the same data edge.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphstrata import limits

__all__ = [
    "UNKNOWN_TOKENS",
    "DataGraph",
    "DataPath",
    "Edge",
    "Hop",
    "QueryGraph",
    "Star",
    "enumerate_paths",
    "enumerate_paths_through",
    "hop_compatible",
    "is_unknown_label",
]

NodeId = Hashable

#: Query node labels read as "unknown" (the ``UNK`` target of Table 10), compared case-insensitively.
UNKNOWN_TOKENS = frozenset({"unk", "unknown", "?", ""})


def is_unknown_label(label: str | None) -> bool:
    """``True`` for ``None`` and the tokens of :data:`UNKNOWN_TOKENS`."""
    return label is None or label.strip().lower() in UNKNOWN_TOKENS


@dataclass(frozen=True, slots=True)
class Edge:
    """A directed edge ``src -> dst`` with an optional relation label."""

    src: NodeId
    dst: NodeId
    relation: str | None = None


@dataclass(frozen=True, slots=True)
class Hop:
    """One traversed edge of a path: its relation and whether it was walked ``src -> dst``."""

    relation: str | None = None
    forward: bool = True

    def reversed(self) -> Hop:
        return Hop(self.relation, not self.forward)


def hop_compatible(query_hop: Hop, data_hop: Hop, directed: bool = False) -> bool:
    """Whether a data hop can realise a query hop: same relation unless the query's is ``None``, and the
    same orientation when ``directed``."""
    if query_hop.relation is not None and query_hop.relation != data_hop.relation:
        return False
    return not directed or query_hop.forward == data_hop.forward


@dataclass(frozen=True, slots=True)
class Star:
    """A 1-hop star subgraph (Appendix C): centre label and the sorted labels of its distinct neighbours.

    A star ``s`` is a substructure of ``g`` (``s ⊆ g``) iff the centres agree and ``s.leaves`` is a
    sub-multiset of ``g.leaves`` — the node-label part of star containment, which is what the dominance
    embeddings encode (relations and directions are left to the exact check).
    """

    center: str
    leaves: tuple[str, ...]

    @staticmethod
    def of(center: str, leaves: Iterable[str]) -> Star:
        return Star(center, tuple(sorted(leaves)))

    def contains(self, other: Star) -> bool:
        """``other ⊆ self`` as labelled stars (sub-multiset of leaves, equal centres)."""
        if self.center != other.center or len(other.leaves) > len(self.leaves):
            return False
        i = 0
        mine = self.leaves
        for leaf in other.leaves:  # both sorted: a merge walk decides sub-multiset inclusion
            while i < len(mine) and mine[i] < leaf:
                i += 1
            if i == len(mine) or mine[i] != leaf:
                return False
            i += 1
        return True


class _LabelledMultigraph:
    """Common part of :class:`QueryGraph` and :class:`DataGraph` (adjacency with hop lists)."""

    __slots__ = ("_adj", "edges", "index", "labels", "nodes")

    def __init__(
        self,
        nodes: Mapping[NodeId, str | None] | Iterable[tuple[NodeId, str | None]],
        edges: Iterable[Edge | tuple[Any, ...]] = (),
    ) -> None:
        items = nodes.items() if isinstance(nodes, Mapping) else nodes
        self.labels: dict[NodeId, str | None] = {}
        for node, label in items:
            if node in self.labels:
                raise ValueError(f"duplicate node id {node!r}")
            self.labels[node] = self._clean_label(node, label)
        self.nodes: tuple[NodeId, ...] = tuple(self.labels)
        self.index: dict[NodeId, int] = {n: i for i, n in enumerate(self.nodes)}
        self._adj: dict[NodeId, dict[NodeId, list[tuple[int, Hop]]]] = {n: {} for n in self.nodes}
        out: list[Edge] = []
        for raw in edges:
            edge = raw if isinstance(raw, Edge) else Edge(*raw)
            for end in (edge.src, edge.dst):
                if end not in self.labels:
                    raise ValueError(f"edge {edge} uses unknown node {end!r}")
            if edge.src == edge.dst:
                self._self_loop(edge)
                continue
            idx = len(out)
            out.append(edge)
            self._adj[edge.src].setdefault(edge.dst, []).append((idx, Hop(edge.relation, True)))
            self._adj[edge.dst].setdefault(edge.src, []).append((idx, Hop(edge.relation, False)))
        self.edges: tuple[Edge, ...] = tuple(out)

    def _clean_label(self, node: NodeId, label: str | None) -> str | None:  # pragma: no cover - overridden
        return label

    def _self_loop(self, edge: Edge) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, node: object) -> bool:
        return node in self.labels

    def neighbors(self, node: NodeId) -> Mapping[NodeId, list[tuple[int, Hop]]]:
        """Distinct neighbours of ``node`` → ``[(edge index, hop seen from node)]`` (parallel edges)."""
        return self._adj[node]

    def degree(self, node: NodeId) -> int:
        """Number of incident edges (parallel edges counted; self-loops never stored)."""
        return sum(len(v) for v in self._adj[node].values())

    def hops(self, u: NodeId, v: NodeId) -> list[Hop]:
        """Hops of the edges between ``u`` and ``v`` as seen walking from ``u`` to ``v``."""
        return [hop for _, hop in self._adj[u].get(v, ())]


class QueryGraph(_LabelledMultigraph):
    """Query graph ``q`` (§4.3): labels are strings or ``None`` for unknown nodes (``UNK``).

    Self-loops are rejected (a simple path cannot contain them).
    """

    __slots__ = ()

    def _clean_label(self, node: NodeId, label: str | None) -> str | None:
        return None if is_unknown_label(label) else label

    def _self_loop(self, edge: Edge) -> None:
        raise ValueError(f"query graphs cannot contain self-loops: {edge}")

    @property
    def unknown_nodes(self) -> tuple[NodeId, ...]:
        return tuple(n for n in self.nodes if self.labels[n] is None)

    @property
    def known_nodes(self) -> tuple[NodeId, ...]:
        return tuple(n for n in self.nodes if self.labels[n] is not None)

    def with_labels(self, completion: Mapping[NodeId, str]) -> QueryGraph:
        """A copy with unknown nodes labelled from ``completion`` (Algorithm 6, lines 10–17)."""
        labels = {n: (completion.get(n) if lab is None else lab) for n, lab in self.labels.items()}
        return QueryGraph(labels, self.edges)

    def star(self, node: NodeId) -> Star:
        """Star of ``node`` over its distinct neighbours; every node involved must be labelled."""
        center = self.labels[node]
        leaves = [self.labels[u] for u in self._adj[node]]
        if center is None or any(leaf is None for leaf in leaves):
            raise ValueError(f"star of {node!r} has unknown labels; complete the query first")
        return Star.of(center, leaves)  # type: ignore[arg-type]


class DataGraph(_LabelledMultigraph):
    """Data (knowledge) graph ``G`` or a candidate subgraph of it; every node has a string label.

    Self-loops are dropped (they are never part of a simple path nor of a star).
    """

    __slots__ = ()

    def _clean_label(self, node: NodeId, label: str | None) -> str | None:
        if label is None:
            raise ValueError(f"data node {node!r} has no label")
        return label

    def _self_loop(self, edge: Edge) -> None:
        return None

    def label(self, node: NodeId) -> str:
        return self.labels[node]  # type: ignore[return-value]

    def star(self, node: NodeId) -> Star:
        return Star.of(self.label(node), (self.label(u) for u in self._adj[node]))

    def nodes_labelled(self, label: str) -> list[NodeId]:
        return [n for n, lab in self.labels.items() if lab == label]

    def subgraph(self, nodes: Iterable[NodeId]) -> DataGraph:
        """Induced subgraph on ``nodes``."""
        keep = {n: self.labels[n] for n in nodes}
        return DataGraph(keep, (e for e in self.edges if e.src in keep and e.dst in keep))


@dataclass(frozen=True, slots=True)
class DataPath:
    """A path ``p_z = [v_1 .. v_k]``: node ids, their labels and the ``k - 1`` hops between them."""

    nodes: tuple[NodeId, ...]
    labels: tuple[str, ...]
    hops: tuple[Hop, ...]

    def __post_init__(self) -> None:
        if len(self.labels) != len(self.nodes) or len(self.hops) != len(self.nodes) - 1:
            raise ValueError("a path needs one label per node and one hop between consecutive nodes")

    @property
    def length(self) -> int:
        """Number of edges ``l``."""
        return len(self.hops)

    def reversed(self) -> DataPath:
        return DataPath(self.nodes[::-1], self.labels[::-1], tuple(h.reversed() for h in reversed(self.hops)))

    @classmethod
    def from_sequence(cls, seq: Sequence[tuple[Any, ...]]) -> DataPath:
        """From ``[(node id, node label, relation to next[, forward])…]`` (the last relation is ignored).

        ``forward`` (default ``True``) says whether the edge to the next node points that way.
        """
        nodes = tuple(item[0] for item in seq)
        labels = tuple(item[1] for item in seq)
        hops = tuple(Hop(item[2] if len(item) > 2 else None, item[3] if len(item) > 3 else True) for item in seq[:-1])
        return cls(nodes, labels, hops)


def enumerate_paths(graph: DataGraph, length: int) -> list[DataPath]:
    """All simple paths with ``length`` edges, each in both orientations, one per choice of parallel edge.

    Both orientations are listed so that a query path can be looked up in its own orientation
    (``[q_1, q_2, q_3]`` against ``[v_3, v_2, v_1]`` needs no second probe).
    """
    if length < 1:
        raise ValueError("path length must be >= 1")
    out: list[DataPath] = []
    labels = graph.labels

    def extend(nodes: list[NodeId], hops: list[Hop]) -> Iterator[DataPath]:
        if len(hops) == length:
            yield DataPath(tuple(nodes), tuple(labels[n] for n in nodes), tuple(hops))  # type: ignore[misc]
            return
        last = nodes[-1]
        for nbr, hop_list in graph.neighbors(last).items():
            if nbr in nodes:
                continue
            nodes.append(nbr)
            for _, hop in hop_list:
                hops.append(hop)
                yield from extend(nodes, hops)
                hops.pop()
            nodes.pop()

    for start in graph.nodes:
        limits.check()  # a request's deadline: around a hub this enumerates many paths
        out.extend(extend([start], []))
    return out


def enumerate_paths_through(graph: DataGraph, length: int, anchored: Iterable[tuple[int, str]]) -> list[DataPath]:
    """The paths of :func:`enumerate_paths` (same order, parallel edges alike) that have, for some
    ``(i, label)`` of ``anchored``, a node labelled ``label`` at position ``i``.

    A query path whose node at position ``i`` is known only matches such data paths, so a plan whose
    every path has a known node needs no others. They are grown outwards from the labelled nodes — a
    path with the node at ``i`` is a walk of ``i`` edges from it, reversed, joined to a walk of
    ``length - i`` edges — so the work is that of the paths kept, not of every path of a candidate
    subgraph around a hub (millions at length 2)."""
    if length < 1:
        raise ValueError("path length must be >= 1")

    def walks(start: NodeId, n: int) -> list[tuple[tuple[NodeId, ...], tuple[tuple[int, Hop], ...]]]:
        out = [((start,), ())]
        for _ in range(n):
            out = [
                ((*nodes, nbr), (*steps, step))
                for nodes, steps in out
                for nbr, step_list in graph.neighbors(nodes[-1]).items()
                if nbr not in nodes
                for step in step_list
            ]
        return out

    found: dict[tuple[tuple[NodeId, ...], tuple[int, ...]], tuple[Hop, ...]] = {}  # (nodes, edges) → hops
    rank = {n: i for i, n in enumerate(graph.nodes)}
    for i, label in sorted(set(anchored)):
        if not 0 <= i <= length:
            continue
        for a in graph.nodes_labelled(label):
            limits.check()  # a request's deadline
            rights = walks(a, length - i)
            for left_nodes, left_steps in walks(a, i):
                used = set(left_nodes)
                for right_nodes, right_steps in rights:
                    if used.intersection(right_nodes[1:]):
                        continue
                    nodes = left_nodes[::-1] + right_nodes[1:]
                    steps = tuple((e, h.reversed()) for e, h in reversed(left_steps)) + right_steps
                    key = (nodes, tuple(e for e, _ in steps))
                    found.setdefault(key, tuple(h for _, h in steps))
    # enumerate_paths' order: start node in graph order, then each step in adjacency order
    position: dict[NodeId, dict[tuple[NodeId, int], int]] = {}

    def order(key: tuple[tuple[NodeId, ...], tuple[int, ...]]) -> tuple[int, ...]:
        nodes, edges = key
        out = [rank[nodes[0]]]
        for k, e in enumerate(edges):
            u = nodes[k]
            if u not in position:
                position[u] = {
                    (v, ei): j
                    for j, (v, ei) in enumerate((v, ei) for v, lst in graph.neighbors(u).items() for ei, _ in lst)
                }
            out.append(position[u][(nodes[k + 1], e)])
        return tuple(out)

    labels = graph.labels
    return [
        DataPath(nodes, tuple(labels[n] for n in nodes), found[(nodes, edges)])  # type: ignore[misc]
        for nodes, edges in sorted(found, key=order)
    ]
