"""Star-subgraph GAT in numpy, trained with the hinge dominance loss (SG-RAG Appendix C, Algorithm 2).

Paper: SG-RAG §4.2 "Training of the Dominant Embedding Model", Eq. (3); Appendix C Eq. (9)–(17),
Fig. 4–5, Algorithm 2; GNN-PE (Ye et al., VLDB 2024), which SG-RAG builds on.

Architecture (Fig. 4: input projection → attention message passing → readout → FC head), for a star
``g`` with centre ``c`` and leaves ``L`` (the distinct neighbours), every node with its self-loop:

* input projection ``h_j = W x_j``, ``x_j`` the label embedding ``o_0(v_j)`` (Eq. 9, shared ``W``);
* attention logits ``e_ij = LeakyReLU(a_src·h_i + a_dst·h_j)`` (the usual GAT ``a(Wx_i, Wx_j)``);
* GAT layer (Eq. 10–11, ``σ = ReLU``): a leaf's neighbourhood in the star is {itself, c}, so
  ``x'_j = ReLU(α_jj h_j + α_jc h_c)`` depends on ``j`` and ``c`` only.  The centre aggregates
  ``x'_c = ReLU(Σ_{k ∈ {c} ∪ L} softmax_k(e_ck) h_k)`` (``monotone=False``, the paper's layer), or, with
  ``monotone=True`` (default), the *gated* sum ``x'_c = ReLU(h_c) + Σ_{j ∈ L} sigmoid(e_cj) ReLU(h_j)``;
* readout ``y = x'_c + Σ_{j ∈ L} x'_j`` (Eq. 12) and head ``o(g) = W_o y + b_o`` (Eq. 13 with ``σ`` the
  identity: a ReLU there would force every margin-separated coordinate to stay positive).

Loss.  The text requires ``o(s) ⪯ o(g)`` for every substructure ``s ⊂ g`` (Eq. 14) and the matcher
accepts a data path when the query is dominated; Eq. (3)/(15) print ``max(0, o(g) − o(s))``, which
would enforce the opposite order — a sign slip (GNN-PE writes ``max(0, o(s) − o(g))``).  We use
``Σ ||max(0, o(s) − o(g) + margin)||²``, the margin keeping the optimum away from the degenerate
all-equal embedding.  Substructures of a star (Fig. 5) are its sub-multisets of leaf labels; by
transitivity it is enough to train on *covering* pairs ``(s + one leaf, s)`` of each data star's
substructure lattice, which :func:`~graphstrata.algorithms.sgrag.train.substructure_pairs` enumerates (all of them up to
``max_per_star`` per star, else random removal chains).  Training runs Adam with an analytic backward
pass, the loss taken on batches of pairs (the stars are encoded once, the forward pass covers all of
them), and stops when the epoch loss is exactly zero (Algorithm 2, line 16) or after ``epochs``.

Optional extension (off by default, not in the paper): the loss above never asks a *non*-substructure to
leave the dominance region, and with a sum readout a data star with many leaves then dominates almost any
query star, so the filter prunes little.  ``negatives_per_star`` adds pairs ``(q, g)`` with ``q ⊄ g``
(:func:`~graphstrata.algorithms.sgrag.train.negative_pairs`)
and the hinge ``max(0, m − max_k (o(q) − o(g))_k)²``; it changes what the filter
rejects, never the guarantee below (that comes from the architecture).

Guarantee (the crux of exact retrieval — a false negative loses an answer):

* ``monotone=False`` (paper): zero loss certifies ``o(s) ⪯ o(g)`` for the trained pairs only, i.e.
  for every query star that is a substructure of an *enumerated* data-star lattice.  Stars whose
  lattice was sampled (high degree) or never seen are not covered.
* ``monotone=True``: leaf terms ``x'_j`` and gated centre terms are non-negative and depend on
  (centre, that leaf) only, and ``W_o`` is kept ``≥ 0`` (projected after each step), so adding a leaf
  can only increase every coordinate: ``s ⊆ g ⇒ o(s) ⪯ o(g)`` holds for *all* parameter values and
  all stars, seen or not.  The hinge loss with ``margin > 0`` then trains *strict* growth per added
  leaf.  This is the default because it keeps retrieval exact on stars outside the training lattice.

Float arithmetic: leaves are processed in sorted label order and the matcher compares with a tiny
tolerance (:data:`graphstrata.algorithms.sgrag.dominance.DOMINANCE_RTOL`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from graphstrata import limits
from graphstrata.algorithms.sgrag.query_graph import Star

__all__ = [
    "HashingLabelEncoder",
    "LabelEncoder",
    "StarGAT",
    "mapping_encoder",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Maps a list of labels to their label embeddings ``o_0`` (rows), e.g. a text-embedding model.
LabelEncoder = Callable[[Sequence[str]], FloatArray]


class HashingLabelEncoder:
    """Deterministic pseudo-random unit vectors per label (seeded by a BLAKE2 hash of the label).

    A stand-in for ``o_0(v) = LLM(ℓ(v))`` when no text embedder is wired in (tests, benchmarks); the
    dominance guarantee does not depend on what the label vectors are.
    """

    def __init__(self, dim: int = 16, seed: int = 0) -> None:
        self.dim = dim
        self.seed = seed
        self._cache: dict[str, FloatArray] = {}

    def vector(self, label: str) -> FloatArray:
        vec = self._cache.get(label)
        if vec is None:
            digest = hashlib.blake2b(label.encode(), digest_size=8, key=str(self.seed).encode()).digest()
            rng = np.random.default_rng(int.from_bytes(digest, "little"))
            vec = rng.standard_normal(self.dim)
            vec /= np.linalg.norm(vec)
            self._cache[label] = vec
        return vec

    def __call__(self, labels: Sequence[str]) -> FloatArray:
        if not labels:
            return np.zeros((0, self.dim))
        return np.stack([self.vector(label) for label in labels])


def mapping_encoder(vectors: Mapping[str, npt.ArrayLike]) -> LabelEncoder:
    """A :data:`LabelEncoder` reading precomputed label embeddings (e.g. stored in Neo4j)."""

    def encode(labels: Sequence[str]) -> FloatArray:
        return np.asarray([vectors[label] for label in labels], dtype=np.float64)

    return encode


@dataclass
class StarBatch:
    """Stars in flat (CSR) form: one row per star, leaves of all stars concatenated in star order."""

    xc: FloatArray  # (B, F) centre label embeddings
    xl: FloatArray  # (N, F) leaf label embeddings
    seg: IntArray  # (N,) star of each leaf
    agg: sp.csr_matrix  # (B, N) 0/1: star ← its leaves (segment sums)
    starts: IntArray  # first leaf of each star that has leaves (for segment max)

    @classmethod
    def build(cls, stars: Sequence[Star], encode: LabelEncoder) -> StarBatch:
        counts = np.fromiter((len(s.leaves) for s in stars), dtype=np.int64, count=len(stars))
        seg = np.repeat(np.arange(len(stars), dtype=np.int64), counts)
        vocab: dict[str, int] = {}  # encode each distinct label once
        ids_c = [vocab.setdefault(s.center, len(vocab)) for s in stars]
        ids_l = [vocab.setdefault(leaf, len(vocab)) for s in stars for leaf in s.leaves]
        table = np.asarray(encode(list(vocab)), dtype=np.float64)
        xc = table[np.asarray(ids_c, dtype=np.int64)]
        xl = table[np.asarray(ids_l, dtype=np.int64)]
        agg = sp.csr_matrix((np.ones(len(seg)), (seg, np.arange(len(seg)))), shape=(len(stars), len(seg)))
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        return cls(xc, xl, seg, agg, offsets[counts > 0])


def _lrelu(x: FloatArray, slope: float) -> FloatArray:
    return np.where(x > 0, x, slope * x)


def _dlrelu(x: FloatArray, slope: float) -> FloatArray:
    return np.where(x > 0, 1.0, slope)


def _sigmoid(x: FloatArray) -> FloatArray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class StarGAT:
    """The dominance-embedding model ``M`` (Appendix C); ``embed(stars)`` returns ``o(g)`` per star."""

    PARAMS = ("W", "a_src", "a_dst", "W_o", "b_o")

    def __init__(
        self,
        label_dim: int,
        *,
        hidden: int = 16,
        out_dim: int = 8,
        monotone: bool = True,
        negative_slope: float = 0.2,
        seed: int = 0,
    ) -> None:
        rng = np.random.default_rng(seed)
        self.monotone = monotone
        self.slope = negative_slope
        self.W = rng.standard_normal((label_dim, hidden)) / np.sqrt(label_dim)
        self.a_src = rng.standard_normal(hidden) / np.sqrt(hidden)
        self.a_dst = rng.standard_normal(hidden) / np.sqrt(hidden)
        self.W_o = rng.standard_normal((hidden, out_dim)) / np.sqrt(hidden)
        if monotone:
            self.W_o = np.abs(self.W_o)
        self.b_o = np.zeros(out_dim)

    @property
    def out_dim(self) -> int:
        return self.W_o.shape[1]

    def state_dict(self) -> dict[str, FloatArray]:
        return {name: getattr(self, name).copy() for name in self.PARAMS}

    def load_state_dict(self, state: Mapping[str, npt.ArrayLike]) -> None:
        for name in self.PARAMS:
            setattr(self, name, np.array(state[name], dtype=np.float64))
        if self.monotone and np.any(self.W_o < 0):
            raise ValueError("a monotone model needs W_o >= 0")

    # -- forward / backward ---------------------------------------------------------------------------

    def _forward(self, b: StarBatch) -> tuple[FloatArray, dict[str, FloatArray]]:
        s, seg, agg = self.slope, b.seg, b.agg
        hc, hl = b.xc @ self.W, b.xl @ self.W
        sc, tc, sl, tl = hc @ self.a_src, hc @ self.a_dst, hl @ self.a_src, hl @ self.a_dst
        # leaves: neighbourhood {leaf, centre}; two-way softmax = sigmoid of the logit difference
        pre_ii, pre_ic = sl + tl, sl + tc[seg]
        al = _sigmoid(_lrelu(pre_ic, s) - _lrelu(pre_ii, s))
        zl = (1.0 - al)[:, None] * hl + al[:, None] * hc[seg]
        xl = np.maximum(zl, 0.0)
        pre_cc, pre_cj = sc + tc, sc[seg] + tl
        e_cj = _lrelu(pre_cj, s)
        cache = {"hc": hc, "hl": hl, "pre_ii": pre_ii, "pre_ic": pre_ic, "al": al, "zl": zl, "pre_cj": pre_cj}
        if self.monotone:
            g = _sigmoid(e_cj)
            rl = np.maximum(hl, 0.0)
            xc = np.maximum(hc, 0.0) + agg @ (g[:, None] * rl)
            cache.update(g=g, rl=rl)
        else:
            e_cc = _lrelu(pre_cc, s)
            m = e_cc.copy()
            if len(b.starts):
                np.maximum.at(m, seg[b.starts], np.maximum.reduceat(e_cj, b.starts))
            p_cc, p_cj = np.exp(e_cc - m), np.exp(e_cj - m[seg])
            z = p_cc + agg @ p_cj
            a_cc, a_cj = p_cc / z, p_cj / z[seg]
            zc = a_cc[:, None] * hc + agg @ (a_cj[:, None] * hl)
            xc = np.maximum(zc, 0.0)
            cache.update(pre_cc=pre_cc, a_cc=a_cc, a_cj=a_cj, zc=zc)
        y = xc + agg @ xl
        cache["y"] = y
        return y @ self.W_o + self.b_o, cache

    def _backward(self, b: StarBatch, c: dict[str, FloatArray], do: FloatArray) -> dict[str, FloatArray]:
        s, seg, agg = self.slope, b.seg, b.agg
        hc, hl, al = c["hc"], c["hl"], c["al"]
        grads = {"W_o": c["y"].T @ do, "b_o": do.sum(axis=0)}
        dy = do @ self.W_o.T
        dxc, dxl = dy, dy[seg]
        # leaf update
        dzl = dxl * (c["zl"] > 0)
        dhl = (1.0 - al)[:, None] * dzl
        dhc = agg @ (al[:, None] * dzl)
        du = np.sum(dzl * (hc[seg] - hl), axis=1) * al * (1.0 - al)
        dpre_ic, dpre_ii = du * _dlrelu(c["pre_ic"], s), -du * _dlrelu(c["pre_ii"], s)
        dsl = dpre_ic + dpre_ii
        dtc = agg @ dpre_ic
        dtl = dpre_ii.copy()
        # centre update
        if self.monotone:
            g, rl = c["g"], c["rl"]
            dhc = dhc + dxc * (hc > 0)
            dxcl = dxc[seg]
            dhl = dhl + dxcl * g[:, None] * (hl > 0)
            dpre_cj = np.sum(dxcl * rl, axis=1) * g * (1.0 - g) * _dlrelu(c["pre_cj"], s)
            dsc = agg @ dpre_cj
        else:
            a_cc, a_cj = c["a_cc"], c["a_cj"]
            dzc = dxc * (c["zc"] > 0)
            dhc = dhc + a_cc[:, None] * dzc
            dhl = dhl + a_cj[:, None] * dzc[seg]
            da_cc, da_cj = np.sum(dzc * hc, axis=1), np.sum(dzc[seg] * hl, axis=1)
            mean = a_cc * da_cc + agg @ (a_cj * da_cj)
            dpre_cc = a_cc * (da_cc - mean) * _dlrelu(c["pre_cc"], s)
            dpre_cj = a_cj * (da_cj - mean[seg]) * _dlrelu(c["pre_cj"], s)
            dsc = dpre_cc + agg @ dpre_cj
            dtc = dtc + dpre_cc
        dtl = dtl + dpre_cj
        dhc = dhc + dsc[:, None] * self.a_src + dtc[:, None] * self.a_dst
        dhl = dhl + dsl[:, None] * self.a_src + dtl[:, None] * self.a_dst
        grads["a_src"] = hc.T @ dsc + hl.T @ dsl
        grads["a_dst"] = hc.T @ dtc + hl.T @ dtl
        grads["W"] = b.xc.T @ dhc + b.xl.T @ dhl
        return grads

    # -- public -----------------------------------------------------------------------------------------

    def embed(self, stars: Sequence[Star], encode: LabelEncoder, *, chunk: int = 4096) -> FloatArray:
        """Dominance embeddings ``o(g)`` of ``stars`` (rows), computed in chunks of stars."""
        out = np.empty((len(stars), self.out_dim))
        for lo in range(0, len(stars), chunk):
            limits.check()
            part = stars[lo : lo + chunk]
            out[lo : lo + len(part)] = self._forward(StarBatch.build(part, encode))[0]
        return out

    def pair_loss(
        self,
        stars: Sequence[Star],
        encode: LabelEncoder,
        pairs: IntArray,
        margin: float,
        negatives: IntArray | None = None,
        negative_margin: float = 0.1,
        negative_weight: float = 1.0,
    ) -> tuple[float, dict[str, FloatArray]]:
        """Mean hinge dominance loss over ``pairs`` (rows ``(g, s)`` into ``stars``) and its gradient.

        ``negatives`` (rows ``(q, g)`` with ``q ⊄ g``) add ``negative_weight · mean max(0, m − max_k (o(q) −
        o(g))_k)²``: the query star must exceed the data star by ``m`` in at least one coordinate, so the
        dominance filter can reject it (see :func:`~graphstrata.algorithms.sgrag.train.negative_pairs`;
        not in the paper).
        """
        batch = StarBatch.build(stars, encode)
        return self._pair_loss(batch, pairs, margin, negatives, negative_margin, negative_weight)

    def _pair_loss(
        self,
        b: StarBatch,
        pairs: IntArray,
        margin: float,
        negatives: IntArray | None,
        negative_margin: float,
        negative_weight: float,
    ) -> tuple[float, dict[str, FloatArray]]:
        o, cache = self._forward(b)
        viol = np.maximum(o[pairs[:, 1]] - o[pairs[:, 0]] + margin, 0.0)
        n = max(len(pairs), 1)
        do = np.zeros_like(o)
        np.add.at(do, pairs[:, 1], 2.0 * viol / n)
        np.add.at(do, pairs[:, 0], -2.0 * viol / n)
        loss = float(np.sum(viol**2) / n)
        if negatives is not None and len(negatives):
            diff = o[negatives[:, 0]] - o[negatives[:, 1]]
            k = diff.argmax(axis=1)  # the subgradient of the max flows through the best coordinate only
            short = np.maximum(negative_margin - diff[np.arange(len(negatives)), k], 0.0)
            scale = 2.0 * negative_weight * short / len(negatives)
            np.add.at(do, (negatives[:, 0], k), -scale)
            np.add.at(do, (negatives[:, 1], k), scale)
            loss += negative_weight * float(np.sum(short**2) / len(negatives))
        return loss, self._backward(b, cache, do)
