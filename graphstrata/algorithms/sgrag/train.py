"""Training the star GAT (SG-RAG Appendix C, Algorithm 2): the substructure lattice of each data
star (Fig. 5) as covering pairs, the optional non-containment pairs, and the Adam loop that stops at
zero hinge loss. The model and its loss are in :mod:`graphstrata.algorithms.sgrag.gat`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import product

import numpy as np

from graphstrata import limits
from graphstrata.algorithms.sgrag.dominance import DOMINANCE_ATOL, DOMINANCE_RTOL
from graphstrata.algorithms.sgrag.gat import IntArray, LabelEncoder, StarBatch, StarGAT
from graphstrata.algorithms.sgrag.query_graph import Star

__all__ = ["TrainReport", "dominance_violations", "negative_pairs", "substructure_pairs", "train_dominance"]


def substructure_pairs(stars: Sequence[Star], *, max_per_star: int = 256, seed: int = 0) -> tuple[list[Star], IntArray]:
    """The substructure lattice of each star (Fig. 5) as unique stars plus covering pairs ``(g, s)``.

    A star with leaf counts ``c_1..c_m`` has ``Π (c_i + 1)`` sub-multisets; up to ``max_per_star`` all
    are enumerated, beyond that random removal chains (full star → … → bare centre) are sampled until
    the budget is reached.  ``pairs[k] = (i, j)`` means ``stars[j]`` is ``stars[i]`` minus one leaf.
    """
    rng = np.random.default_rng(seed)
    index: dict[Star, int] = {}
    unique: list[Star] = []

    def add(star: Star) -> int:
        i = index.get(star)
        if i is None:
            i = index[star] = len(unique)
            unique.append(star)
        return i

    edges: set[tuple[int, int]] = set()
    for star in dict.fromkeys(stars):
        limits.check()
        counts = Counter(star.leaves)
        labels = sorted(counts)
        total = 1
        for c in counts.values():
            total *= c + 1
        if total <= max_per_star:
            members = []
            for combo in product(*(range(counts[label] + 1) for label in labels)):
                members.append(
                    Star(star.center, tuple(lab for lab, k in zip(labels, combo, strict=True) for _ in range(k)))
                )
            member_set = set(members)
            for sub in members:
                gi = add(sub)
                for label in set(sub.leaves):
                    leaves = list(sub.leaves)
                    leaves.remove(label)
                    smaller = Star(star.center, tuple(leaves))
                    if smaller in member_set:
                        edges.add((gi, add(smaller)))
        else:
            budget = max_per_star
            while budget > 0:
                leaves = list(star.leaves)
                current = add(star)
                while leaves:
                    leaves.pop(int(rng.integers(len(leaves))))
                    smaller = add(Star(star.center, tuple(leaves)))
                    edges.add((current, smaller))
                    current = smaller
                    budget -= 1
    pairs = np.array(sorted(edges), dtype=np.int64).reshape(-1, 2)
    return unique, pairs


def negative_pairs(
    stars: Sequence[Star], unique: list[Star], per_star: int, *, seed: int = 0
) -> tuple[list[Star], IntArray]:
    """Non-containment pairs ``(q, g)`` for the optional negative term (an extension: the paper trains on
    substructure pairs only, which leaves nothing pushing ``o(q) ⋠ o(g)`` when ``q ⊄ g``, and a sum readout
    then lets a high-degree data star dominate almost any query star).

    ``q`` = a random sub-star of ``g`` (each leaf kept with probability ½) plus one label of the corpus
    vocabulary that ``g`` lacks — the shape of a query star whose node has a neighbour the data node has
    not.  New stars are appended to ``unique`` (indices are into it).
    """
    rng = np.random.default_rng(seed)
    index = {s: i for i, s in enumerate(unique)}
    vocab = sorted({leaf for s in stars for leaf in s.leaves} | {s.center for s in stars})
    rows: list[tuple[int, int]] = []
    for g in dict.fromkeys(stars):
        have = set(g.leaves)
        if len(have) >= len(vocab) or g not in index:
            continue
        for _ in range(per_star):
            extra = vocab[int(rng.integers(len(vocab)))]
            if extra in have:
                continue
            q = Star.of(g.center, [leaf for leaf in g.leaves if rng.random() < 0.5] + [extra])
            qi = index.get(q)
            if qi is None:
                qi = index[q] = len(unique)
                unique.append(q)
            rows.append((qi, index[g]))
    return unique, np.array(sorted(set(rows)), dtype=np.int64).reshape(-1, 2)


@dataclass
class TrainReport:
    """Outcome of :func:`train_dominance` (``violations`` counts pairs with ``o(s) ⋠ o(g)``)."""

    epochs: int
    loss: float
    violations: int
    stars: int
    pairs: int
    history: list[float] = field(default_factory=list)
    negatives: int = 0  # non-containment pairs trained on (0: the paper's loss alone)
    negative_satisfied: float = 0.0  # share of them the embeddings reject (o(q) ⋠ o(g) by the margin)

    @property
    def converged(self) -> bool:
        return self.loss == 0.0


def dominance_violations(model: StarGAT, stars: Sequence[Star], pairs: IntArray, encode: LabelEncoder) -> int:
    """Number of pairs ``(g, s)`` whose embeddings break ``o(s) ⪯ o(g)`` (matcher tolerance)."""
    if len(pairs) == 0:
        return 0
    o = model.embed(stars, encode)
    lower = o[pairs[:, 1]]
    ok = np.all(lower <= o[pairs[:, 0]] + DOMINANCE_ATOL + DOMINANCE_RTOL * np.abs(lower), axis=1)
    return int(np.sum(~ok))


def train_dominance(
    model: StarGAT,
    stars: Sequence[Star],
    encode: LabelEncoder,
    *,
    epochs: int = 200,
    lr: float = 0.01,
    margin: float = 0.01,
    batch_pairs: int = 4096,
    max_per_star: int = 256,
    seed: int = 0,
    negatives_per_star: int = 0,
    negative_margin: float = 0.1,
    negative_weight: float = 1.0,
) -> TrainReport:
    """Algorithm 2: build the substructure pairs of ``stars`` (the data graph's stars), then Adam on
    the hinge dominance loss until an epoch ends with zero loss or ``epochs`` run out.

    ``negatives_per_star > 0`` adds the non-containment term of :meth:`StarGAT.pair_loss` (extension;
    the run then lasts ``epochs``, the stop rule looks at the dominance loss only).
    """
    rng = np.random.default_rng(seed)
    unique, pairs = substructure_pairs(stars, max_per_star=max_per_star, seed=seed)
    negs = np.zeros((0, 2), dtype=np.int64)
    if negatives_per_star > 0:
        unique, negs = negative_pairs(stars, unique, negatives_per_star, seed=seed)
    moments = {n: (np.zeros_like(getattr(model, n)), np.zeros_like(getattr(model, n))) for n in model.PARAMS}
    beta1, beta2, eps, step = 0.9, 0.999, 1e-8, 0
    history: list[float] = []
    epoch_loss = float("inf")
    epochs_run = 0
    # The stars are encoded once: each step runs the (cheap, vectorised) forward pass over all of them and
    # takes the loss on one batch of pairs; rebuilding a batch of stars per step was the Python hot spot.
    full = StarBatch.build(unique, encode)
    while epochs_run < epochs:
        epochs_run += 1
        order = rng.permutation(len(pairs))
        starts = range(0, len(pairs), batch_pairs)
        neg_batches = np.array_split(negs[rng.permutation(len(negs))], len(starts)) if len(starts) else []
        for lo, neg in zip(starts, neg_batches, strict=True):
            limits.check()  # training on first use runs inside a request: it stops with it
            batch = pairs[order[lo : lo + batch_pairs]]
            _, grads = model._pair_loss(full, batch, margin, neg, negative_margin, negative_weight)
            step += 1
            for name, grad in grads.items():
                m, v = moments[name]
                m *= beta1
                m += (1 - beta1) * grad
                v *= beta2
                v += (1 - beta2) * grad * grad
                update = lr * (m / (1 - beta1**step)) / (np.sqrt(v / (1 - beta2**step)) + eps)
                setattr(model, name, getattr(model, name) - update)
            if model.monotone:
                np.maximum(model.W_o, 0.0, out=model.W_o)
        # lines 12-16: the epoch loss over all pairs decides termination
        o = model._forward(full)[0]
        epoch_loss = (
            float(np.sum(np.maximum(o[pairs[:, 1]] - o[pairs[:, 0]] + margin, 0.0) ** 2)) if len(pairs) else 0.0
        )
        history.append(epoch_loss)
        if epoch_loss == 0.0 and not len(negs):
            break
    satisfied = 0.0
    if len(negs):
        o = model._forward(full)[0]
        satisfied = float(np.mean((o[negs[:, 0]] - o[negs[:, 1]]).max(axis=1) >= negative_margin))
    return TrainReport(
        epochs=epochs_run,
        loss=epoch_loss,
        violations=dominance_violations(model, unique, pairs, encode),
        stars=len(unique),
        pairs=len(pairs),
        history=history,
        negatives=len(negs),
        negative_satisfied=satisfied,
    )
