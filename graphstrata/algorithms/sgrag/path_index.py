"""Index ``I_l`` over data paths for semantic + dominance filtering (SG-RAG §4.2 Eq. 4, §4.3, App. E, L).

Paper: SG-RAG §4.2 "Construction of the Path Index" (R*-tree over ``(o_0(p_z), o(p_z))``), §4.3
"Path-level Retrieval" (semantic constraint, dominance region ``DR(o(p_q))`` of Eq. 5, exact match
``o_0(p_q) = o_0(p_z) ∧ o(p_q) ⪯ o(p_z)``), Appendix E / Algorithm 5 (wildcard lookup for label
completion) and Appendix L / Algorithm 7 (best-first traversal with the ``‖o(p_q)‖_1`` stop rule).

What the R*-tree is replaced by, and why:

* *Semantic constraint.*  ``o_0(p)`` is the concatenation of label embeddings, so
  ``o_0(p_q) = o_0(p_z)`` is label-tuple equality.  Paths are grouped by their label tuple (a hash
  lookup: exact, and no MBR over ``(l+1)·F`` ≈ 4.6k text-embedding dimensions is needed).  With unknown
  (wildcard) positions, Algorithm 5 compares known positions only: per-position posting lists
  (label → sorted rows) are intersected.
* *Dominance constraint.*  Inside a label group rows are kept sorted by ``Σ o(p_z)``.  Since
  ``o(p_q) ⪯ o(p_z) ⇒ Σ o(p_q) ≤ Σ o(p_z)``, a binary search skips every row below the query's sum —
  the flat form of Algorithm 7's ``key(N) < ‖o(p_q)‖_1`` early stop — and one vectorised comparison
  over the rest applies the dominance region (Eq. 5) exactly.
* An R*-tree (``rtree``/libspatialindex) over ``[group id, o(p)]`` answering the box query
  ``{gid} × [o(p_q), +∞)`` returns the same rows but was slower than this structure in every setting
  of ``bench/bench_sgrag_index.py`` (10k/100k length-2 paths, 24-dim path embeddings: index
  11–108 µs per query, linear scan 44–470 µs, R*-tree 86–535 µs — no faster than the scan; results
  in ``bench/results/sgrag_index.json``), so it is not used.  The sum bound is applied to label groups
  larger than ``_SUM_BOUND_MIN_GROUP`` rows, where it saves ~15–20 % (1.7k-row groups).

Hop constraints (relation labels, directions) are applied to the surviving rows with vectorised
comparisons.  All filters are exact, so ``candidates`` returns exactly the rows a linear scan with the
same tests returns (:meth:`PathIndex.scan`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from graphstrata.algorithms.sgrag.dominance import DOMINANCE_ATOL, DOMINANCE_RTOL, dominance_mask
from graphstrata.algorithms.sgrag.query_graph import DataPath, Hop

__all__ = ["PathIndex"]

NodeId = Hashable
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Label groups up to this size are filtered directly; the Σ o binary search pays off only above it.
_SUM_BOUND_MIN_GROUP = 256


@dataclass
class _Grouping:
    """Rows grouped by their label codes at some positions: ``order[start[g]:start[g + 1]]``."""

    order: IntArray
    start: IntArray
    keys: dict[tuple[int, ...], int]

    @classmethod
    def build(cls, codes: npt.NDArray[np.int32], within: FloatArray | None = None) -> _Grouping:
        """Group the rows of ``codes``; inside a group rows are sorted by ``within`` (else by row)."""
        uniq, group = np.unique(codes, axis=0, return_inverse=True)
        group = group.reshape(-1)
        order = np.lexsort((within, group)) if within is not None else np.argsort(group, kind="stable")
        start = np.concatenate([[0], np.cumsum(np.bincount(group, minlength=len(uniq)))]).astype(np.int64)
        return cls(order, start, {tuple(row): g for g, row in enumerate(uniq.tolist())})

    def span(self, key: tuple[int, ...]) -> tuple[int, int]:
        g = self.keys.get(key)
        return (0, 0) if g is None else (int(self.start[g]), int(self.start[g + 1]))


@dataclass
class _LengthIndex:
    """All indexed paths of one length ``l`` (``l + 1`` label positions)."""

    paths: list[DataPath]
    codes: npt.NDArray[np.int32]  # (n, l+1) label codes
    rel: npt.NDArray[np.int32]  # (n, l) relation codes, -1 = None
    fwd: npt.NDArray[np.bool_]  # (n, l)
    emb: FloatArray | None  # (n, (l+1)·d) path dominance embeddings o(p_z)
    full: _Grouping  # by the whole label tuple, rows ascending by Σ o inside a group
    sums: FloatArray  # Σ o of full.order[i]
    partial: dict[tuple[int, ...], _Grouping]  # by the labels at some positions (wildcard lookups, lazy)


class PathIndex:
    """Paths of one or more lengths with their label codes, hops and (optional) dominance embeddings.

    ``node_embeddings`` maps a node id to its star dominance embedding ``o(v)``; the path embedding is
    their concatenation in path order (Eq. 16).  Without it only the semantic and hop filters apply.
    """

    def __init__(
        self,
        paths: Sequence[DataPath],
        node_embeddings: Mapping[NodeId, npt.ArrayLike] | None = None,
    ) -> None:
        self.label_codes: dict[str, int] = {}
        self.relation_codes: dict[str, int] = {}
        self.embedding_dim: int | None = None
        by_length: dict[int, list[DataPath]] = {}
        for p in paths:
            by_length.setdefault(p.length, []).append(p)
        node_rows: dict[NodeId, int] = {}
        node_mat: FloatArray | None = None
        if node_embeddings is not None and len(node_embeddings):
            node_rows = {n: i for i, n in enumerate(node_embeddings)}
            node_mat = np.asarray([np.asarray(v, dtype=np.float64) for v in node_embeddings.values()])
            self.embedding_dim = node_mat.shape[1]
        self._by_length = {
            length: self._build(length, group, node_rows, node_mat) for length, group in sorted(by_length.items())
        }

    # -- construction -----------------------------------------------------------------------------------

    def _code(self, table: dict[str, int], value: str) -> int:
        code = table.get(value)
        if code is None:
            code = table[value] = len(table)
        return code

    def _build(
        self, length: int, paths: list[DataPath], node_rows: dict[NodeId, int], node_mat: FloatArray | None
    ) -> _LengthIndex:
        n = len(paths)
        codes = np.array([[self._code(self.label_codes, x) for x in p.labels] for p in paths], dtype=np.int32)
        rel = np.array(
            [
                [-1 if h.relation is None else self._code(self.relation_codes, h.relation) for h in p.hops]
                for p in paths
            ],
            dtype=np.int32,
        ).reshape(n, length)
        fwd = np.array([[h.forward for h in p.hops] for p in paths], dtype=bool).reshape(n, length)
        emb = None
        sums = np.zeros(n)
        if node_mat is not None:
            try:
                idx = np.array([[node_rows[v] for v in p.nodes] for p in paths], dtype=np.int64)
            except KeyError as exc:
                raise ValueError(f"no dominance embedding for node {exc.args[0]!r}") from exc
            emb = node_mat[idx].reshape(n, -1)
            sums = emb.sum(axis=1)
        full = _Grouping.build(codes, sums)
        return _LengthIndex(paths, codes, rel, fwd, emb, full, sums[full.order], {})

    # -- lookups ----------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return sum(len(ix.paths) for ix in self._by_length.values())

    @property
    def lengths(self) -> tuple[int, ...]:
        return tuple(self._by_length)

    def paths(self, length: int) -> list[DataPath]:
        ix = self._by_length.get(length)
        return [] if ix is None else ix.paths

    def path(self, length: int, row: int) -> DataPath:
        return self._by_length[length].paths[int(row)]

    def label_at(self, length: int, rows: IntArray, position: int) -> list[str]:
        """Labels at ``position`` of ``rows`` (used by label completion)."""
        names = self._names()
        return [names[c] for c in self._by_length[length].codes[rows, position].tolist()]

    def _names(self) -> list[str]:
        names = [""] * len(self.label_codes)
        for label, code in self.label_codes.items():
            names[code] = label
        return names

    def label_names(self) -> list[str]:
        """Label of each code (``label_names()[code]``)."""
        return self._names()

    def row_codes(self, length: int, rows: IntArray) -> npt.NDArray[np.int32]:
        """Label codes of ``rows`` (one column per path position)."""
        return self._by_length[length].codes[rows]

    def row_embeddings(self, length: int, rows: IntArray) -> FloatArray:
        """Path dominance embeddings ``o(p_z)`` of ``rows``; the index must hold embeddings."""
        emb = self._by_length[length].emb
        if emb is None:
            raise ValueError("this index holds no dominance embeddings")
        return emb.take(rows, axis=0)

    def _label_key(self, labels: Sequence[str]) -> tuple[int, ...] | None:
        get = self.label_codes.get
        codes = tuple(get(x, -1) for x in labels)
        return None if -1 in codes else codes

    def rows(self, labels: Sequence[str | None]) -> IntArray:
        """Rows whose labels equal ``labels`` at every known (non-``None``) position (sorted).

        Wildcard patterns are served by a grouping on the known positions, built on first use.
        """
        ix = self._by_length.get(len(labels) - 1)
        if ix is None:
            return np.zeros(0, dtype=np.int64)
        known = tuple(pos for pos, x in enumerate(labels) if x is not None)
        if not known:
            return np.arange(len(ix.paths), dtype=np.int64)
        key = self._label_key([labels[pos] for pos in known])  # type: ignore[misc]
        if key is None:
            return np.zeros(0, dtype=np.int64)
        if len(known) == len(labels):
            lo, hi = ix.full.span(key)
            return np.sort(ix.full.order[lo:hi])
        grouping = ix.partial.get(known)
        if grouping is None:
            grouping = ix.partial[known] = _Grouping.build(ix.codes[:, known])
        lo, hi = grouping.span(key)
        return grouping.order[lo:hi].copy()  # stable argsort: already ascending

    def filter_hops(
        self, length: int, rows: IntArray, hops: Sequence[Hop | None] | None, directed: bool = False
    ) -> IntArray:
        """Keep rows whose hops realise ``hops`` (``None`` entries / relations match anything)."""
        if hops is None or len(rows) == 0:
            return rows
        ix = self._by_length[length]
        keep = np.ones(len(rows), dtype=bool)
        for i, hop in enumerate(hops):
            if hop is None:
                continue
            if hop.relation is not None:
                code = self.relation_codes.get(hop.relation)
                if code is None:
                    return rows[:0]
                keep &= ix.rel[rows, i] == code
            if directed:
                keep &= ix.fwd[rows, i] == hop.forward
        return rows[keep]

    def _check_query_embedding(self, ix: _LengthIndex, query_embedding: npt.ArrayLike | None) -> FloatArray | None:
        if query_embedding is None or ix.emb is None:
            return None
        q = np.asarray(query_embedding, dtype=np.float64).reshape(-1)
        if q.shape[0] != ix.emb.shape[1]:
            raise ValueError(f"query embedding has {q.shape[0]} dims, the index {ix.emb.shape[1]}")
        return q

    def candidates(
        self,
        labels: Sequence[str],
        hops: Sequence[Hop | None] | None = None,
        query_embedding: npt.ArrayLike | None = None,
        *,
        directed: bool = False,
    ) -> IntArray:
        """Rows with exactly these labels, compatible hops and ``o(p_q) ⪯ o(p_z)`` (sorted rows).

        ``query_embedding`` is ignored when the index has no embeddings.
        """
        length = len(labels) - 1
        ix = self._by_length.get(length)
        key = self._label_key(labels)
        if ix is None or key is None:
            return np.zeros(0, dtype=np.int64)
        lo, hi = ix.full.span(key)
        q = self._check_query_embedding(ix, query_embedding)
        if q is not None and hi > lo:
            absq = np.abs(q)
            thr = q - (DOMINANCE_ATOL + DOMINANCE_RTOL * absq)  # the dominance region's corner (Eq. 5)
            if hi - lo > _SUM_BOUND_MIN_GROUP:  # Σ o(p_z) >= Σ thr is necessary (Algorithm 7, line 12)
                lo += int(ix.sums[lo:hi].searchsorted(thr.sum() - 1e-12 * (1.0 + absq.sum())))
            rows = ix.full.order[lo:hi]
            rows = rows[(ix.emb.take(rows, axis=0) >= thr).all(1)]  # type: ignore[union-attr]
            rows.sort()  # a copy (boolean indexing), safe to sort in place
        else:
            rows = np.sort(ix.full.order[lo:hi])  # a copy: the slice is a view into the index
        return self.filter_hops(length, rows, hops, directed)

    def scan(
        self,
        labels: Sequence[str],
        hops: Sequence[Hop | None] | None = None,
        query_embedding: npt.ArrayLike | None = None,
        *,
        directed: bool = False,
    ) -> IntArray:
        """Linear-scan reference for :meth:`candidates` (same result, no grouping or sort bound)."""
        length = len(labels) - 1
        ix = self._by_length.get(length)
        codes = [self.label_codes.get(x) for x in labels]
        if ix is None or any(c is None for c in codes):
            return np.zeros(0, dtype=np.int64)
        mask = ix.codes[:, 0] == codes[0]
        for pos in range(1, len(codes)):  # column by column: a row-wise np.all over 3 columns is slower
            mask &= ix.codes[:, pos] == codes[pos]
        rows = np.flatnonzero(mask)
        q = self._check_query_embedding(ix, query_embedding)
        if q is not None:
            rows = rows[dominance_mask(ix.emb[rows], q)]  # type: ignore[index]
        return self.filter_hops(length, rows, hops, directed)
