"""Training the dominance model ``M`` on the corpus graph, and storing it (SG-RAG §4.2, Appendix C).

Paper: SG-RAG §4.2 "Training of the Dominant Embedding Model" (one star ``g_{v_i}`` per data node, the hinge
dominance loss of Eq. 3 over substructures ``s ⊂ g``), Appendix C Algorithm 2 (training loop), Fig. 5
(substructure lattice).

:func:`fit_dominance` samples the data graph's stars (seeded, distinct stars only), builds their substructure
lattices and trains a monotone :class:`~graphstrata.algorithms.sgrag.gat.StarGAT` with
:func:`~graphstrata.algorithms.sgrag.train.train_dominance`.  Label embeddings ``o_0`` come from
:class:`~graphstrata.algorithms.sgrag.gat.HashingLabelEncoder`: the paper embeds labels with an LLM, but the
dominance test only needs label *identity* (semantic equality is checked on the labels themselves), and a
seeded hash needs no stored vectors, so query stars with any label can be embedded.

The monotone model dominates every substructure for *any* weights, so training does not decide exactness;
it decides pruning power.  The paper's loss only asks substructures to stay below their superstructures;
``negatives_per_star > 0`` adds a non-containment term (our extension, off by default, see
:func:`~graphstrata.algorithms.sgrag.train.negative_pairs`) that pushes a star with a leaf the data star lacks
out of its dominance region (measured in ``bench/results/sgrag_dominance.json``).  On the training pairs,
``separated`` is the share of covering pairs ``(g, s + one leaf = g)`` whose embeddings differ in at least one
coordinate — only then can a query star with a leaf the data star lacks be rejected by the embeddings alone.

:func:`to_record` / :func:`from_record` turn a trained model into JSON-able primitives (the model file under
the cache directory) and back.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from graphstrata.algorithms.sgrag.dominance import DOMINANCE_ATOL, DOMINANCE_RTOL
from graphstrata.algorithms.sgrag.embedder import DominanceEmbedder
from graphstrata.algorithms.sgrag.gat import HashingLabelEncoder, StarGAT
from graphstrata.algorithms.sgrag.query_graph import Star
from graphstrata.algorithms.sgrag.train import substructure_pairs, train_dominance

__all__ = ["DominanceConfig", "FitReport", "fit_dominance", "from_record", "separated_share", "to_record"]

RECORD_VERSION = 1


@dataclass(frozen=True)
class DominanceConfig:
    """Model size and training budget (defaults: seconds on a 10k-entity corpus with 2 cores)."""

    label_dim: int = 16
    hidden: int = 16
    out_dim: int = 8
    epochs: int = 20
    lr: float = 0.01
    margin: float = 0.1  # at 0.01 the random initialisation already has zero loss on corpus stars
    max_stars: int = 2000  # stars sampled from the corpus graph
    max_leaves: int = 64  # larger stars are cut to a random sub-star (their lattices are sampled anyway)
    max_per_star: int = 32  # substructure budget per star (Fig. 5 lattice, else random removal chains)
    batch_pairs: int = 4096
    seed: int = 0
    # extension (not in the paper): non-containment pairs per star and their hinge (train.negative_pairs);
    # 0 = Appendix C's loss alone
    negatives_per_star: int = 0
    negative_margin: float = 0.1
    negative_weight: float = 1.0


@dataclass
class FitReport:
    """What :func:`fit_dominance` did: corpus stars seen/used, the training report, pruning power."""

    corpus_stars: int
    train_stars: int
    pairs: int
    epochs: int
    initial_loss: float  # Algorithm 2's epoch loss of the untrained (randomly initialised) model
    loss: float
    violations: int
    initial_separated: float
    separated: float
    seconds: float
    negatives: int = 0
    negative_satisfied: float = 0.0  # share of the non-containment pairs the embeddings reject


def _sample(stars: Sequence[Star], config: DominanceConfig) -> list[Star]:
    rng = np.random.default_rng(config.seed)
    distinct = sorted(set(stars), key=lambda s: (s.center, s.leaves))  # sorted: the sample is seeded, not hashed
    if len(distinct) > config.max_stars:
        keep = np.sort(rng.choice(len(distinct), size=config.max_stars, replace=False))
        distinct = [distinct[i] for i in keep]
    out = []
    for s in distinct:
        if len(s.leaves) > config.max_leaves:
            pick = np.sort(rng.choice(len(s.leaves), size=config.max_leaves, replace=False))
            s = Star(s.center, tuple(s.leaves[i] for i in pick))
        out.append(s)
    return out


def separated_share(embedder: DominanceEmbedder, stars: Sequence[Star], pairs: np.ndarray) -> float:
    """Share of pairs ``(g, s)`` with ``o(s) ⪯ o(g)`` *strictly* in some coordinate (beyond the matcher's slack)."""
    if len(pairs) == 0:
        return 0.0
    o = embedder.model.embed(stars, embedder.encode)
    lower, upper = o[pairs[:, 1]], o[pairs[:, 0]]
    strict = (upper > lower + DOMINANCE_ATOL + DOMINANCE_RTOL * np.abs(lower)).any(axis=1)
    return float(strict.mean())


def fit_dominance(stars: Sequence[Star], config: DominanceConfig | None = None) -> tuple[DominanceEmbedder, FitReport]:
    """Train ``M`` on (a seeded sample of) the corpus graph's stars; see the module docstring."""
    cfg = config or DominanceConfig()
    t = time.perf_counter()
    sample = _sample(stars, cfg)
    encode = HashingLabelEncoder(cfg.label_dim, seed=cfg.seed)
    model = StarGAT(cfg.label_dim, hidden=cfg.hidden, out_dim=cfg.out_dim, monotone=True, seed=cfg.seed)
    embedder = DominanceEmbedder(model, encode)
    unique, pairs = substructure_pairs(sample, max_per_star=cfg.max_per_star, seed=cfg.seed)  # as trained on
    initial_loss = _hinge(embedder, unique, pairs, cfg.margin)
    initial_separated = separated_share(embedder, unique, pairs)
    report = train_dominance(
        model,
        sample,
        encode,
        epochs=cfg.epochs,
        lr=cfg.lr,
        margin=cfg.margin,
        batch_pairs=cfg.batch_pairs,
        max_per_star=cfg.max_per_star,
        seed=cfg.seed,
        negatives_per_star=cfg.negatives_per_star,
        negative_margin=cfg.negative_margin,
        negative_weight=cfg.negative_weight,
    )
    fit = FitReport(
        corpus_stars=len(set(stars)),
        train_stars=len(sample),
        pairs=report.pairs,
        epochs=report.epochs,
        initial_loss=initial_loss,
        loss=report.loss,
        violations=report.violations,
        initial_separated=round(initial_separated, 4),
        separated=round(separated_share(embedder, unique, pairs), 4),
        seconds=round(time.perf_counter() - t, 3),
        negatives=report.negatives,
        negative_satisfied=round(report.negative_satisfied, 4),
    )
    return embedder, fit


def _hinge(embedder: DominanceEmbedder, stars: Sequence[Star], pairs: np.ndarray, margin: float) -> float:
    """Epoch loss of Algorithm 2 (the sum over all pairs) for the model as it is."""
    if len(pairs) == 0:
        return 0.0
    o = embedder.model.embed(stars, embedder.encode)
    return float(np.sum(np.maximum(o[pairs[:, 1]] - o[pairs[:, 0]] + margin, 0.0) ** 2))


def to_record(embedder: DominanceEmbedder, config: DominanceConfig, report: FitReport) -> dict[str, Any]:
    """JSON-able primitives: config, report and the weights as one JSON string (no float lists per key)."""
    encode = embedder.encode
    if not isinstance(encode, HashingLabelEncoder):
        raise TypeError("only models with a HashingLabelEncoder can be stored")
    weights = {name: value.tolist() for name, value in embedder.model.state_dict().items()}
    return {
        "version": RECORD_VERSION,
        "config": json.dumps(asdict(config)),
        "report": json.dumps(asdict(report)),
        "weights": json.dumps(weights),
        "encoder": json.dumps({"kind": "hashing", "dim": encode.dim, "seed": encode.seed}),
    }


def from_record(record: dict[str, Any]) -> tuple[DominanceEmbedder, DominanceConfig, FitReport]:
    """Inverse of :func:`to_record`; raises ``ValueError`` for a record of another version or shape."""
    if record.get("version") != RECORD_VERSION:
        raise ValueError(f"dominance model record version {record.get('version')!r}, expected {RECORD_VERSION}")
    config = DominanceConfig(**json.loads(record["config"]))
    report = FitReport(**json.loads(record["report"]))
    enc = json.loads(record["encoder"])
    encode = HashingLabelEncoder(enc["dim"], seed=enc["seed"])
    model = StarGAT(config.label_dim, hidden=config.hidden, out_dim=config.out_dim, monotone=True)
    model.load_state_dict({k: np.asarray(v) for k, v in json.loads(record["weights"]).items()})
    return DominanceEmbedder(model, encode), config, report
