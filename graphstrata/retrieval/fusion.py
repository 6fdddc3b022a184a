"""Beyond the papers: one graph, several methods. ``fusion`` runs a set of methods concurrently and
fuses their rankings with reciprocal rank fusion.

**fusion** (Cormack et al., 2009: RRF with k = 60). Every method ranks *units*, and the units are
source chunks, so evidence found by several methods adds up even when the methods return different
node types for it (NodeRAG a ``SemanticUnit``, KET-RAG a ``SubChunk``, the baselines the ``Chunk``):

* a method's ranking is the order in which its items first cite each chunk (exactly what
  :meth:`RetrievalResult.chunk_ids` gives, the list Recall@k is measured on); an item that cites no
  chunk (an ``Entity`` description, a ``Summary``) is a unit of its own, keyed by its node id, unless
  another method's copy of the same node names its chunks;
* ``rrf(u) = Σ_m 1 / (k + rank_m(u))`` over the methods that ranked ``u``;
* one item per unit, best fused score first: the ``Chunk`` itself when any method returned it (it
  holds what the smaller items were extracted from), else the best-ranked item that cites the unit.
  A unit already covered by an emitted item (a passage spanning two chunks, or the same node found
  by two methods) adds nothing: context is never spent twice on the same evidence;
* the fused list is packed under the one token budget, and ``notes`` record each method's rank of
  every emitted unit and each method's time, item count and own notes (or its error).

Methods run in threads and share what they would otherwise compute side by side (each once per
fused question, :class:`graphstrata.retrieval.shared.FusedQuestion`): the question's embedding, its
entities and their links, the vector read of their entry points (HippoRAG's passage seeds and
NodeRAG's similarity search are one round trip: each member is told the others' parameters,
:mod:`graphstrata.retrieval.entries`), and the texts of the chunks they rank (read once for all
members, then each member's result packed as it would have been alone). A method that fails or
exceeds ``timeout`` is reported in ``notes["errors"]`` and the others are fused. Without
``methods`` it fuses the methods whose class sets ``fusion_rank`` (the registry decides, in that
order): the two personalized-PageRank walks, hipporag and noderag. On all three benchmark graphs
that pair ranks better than the six methods fused (vector, fulltext, hipporag, noderag, ketrag,
e2graphrag: Recall@5 0.860 / 0.692 / 0.672 against 0.825 / 0.662 / 0.660, Coverage higher too,
bench/results/graphs-session10.md) at half the latency.

``auto`` (routing one method per question) lives in :mod:`graphstrata.retrieval.auto`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import wait
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, ValidationError, model_validator

from graphstrata import limits
from graphstrata.retrieval.base import (
    ContextItem,
    RetrievalError,
    RetrievalResult,
    Retrieved,
    Retriever,
    RetrieverParams,
    Subgraph,
    Timer,
    fill_chunk_texts,
    get_retriever,
    pack_result,
    register,
    registered_methods,
)
from graphstrata.retrieval.shared import FUSED, FusedQuestion, beside

RRF_K = 60
META_METHODS = ("fusion", "auto")


# ------------------------------------------------------------------------------------------------
# reciprocal rank fusion (pure: tested on fixed rankings)
# ------------------------------------------------------------------------------------------------


@dataclass
class Fused:
    """One unit of the fused ranking and the item that represents it."""

    unit: str  # a chunk id, or a node id for an item that cites no chunk
    score: float  # Σ 1/(k + rank)
    ranks: dict[str, int]  # method -> rank of the unit in that method's unit ranking (1-based)
    item: ContextItem  # the representative (a copy with score = RRF and the ranks in `why`)
    method: str  # the method whose item represents the unit
    covers: list[str] = field(default_factory=list)  # units the representative covers


def _units(item: ContextItem, node_chunks: Mapping[str, list[str]]) -> list[str]:
    if item.chunk_ids:
        return list(dict.fromkeys(item.chunk_ids))
    return node_chunks.get(item.node_id) or [item.node_id]


def unit_rankings(rankings: Mapping[str, Sequence[ContextItem]]) -> dict[str, dict[str, int]]:
    """Method → {unit: rank}: the order in which each method's items first cite each unit."""
    node_chunks = _node_chunks(rankings)
    out: dict[str, dict[str, int]] = {}
    for method, items in rankings.items():
        ranks: dict[str, int] = {}
        for item in items:
            for u in _units(item, node_chunks):
                ranks.setdefault(u, len(ranks) + 1)
        out[method] = ranks
    return out


def _node_chunks(rankings: Mapping[str, Sequence[ContextItem]]) -> dict[str, list[str]]:
    """Node id → the chunks some method says it comes from (so a copy without chunk ids dedups too)."""
    found: dict[str, list[str]] = {}
    for items in rankings.values():
        for item in items:
            if item.chunk_ids:
                found.setdefault(item.node_id, list(dict.fromkeys(item.chunk_ids)))
    return found


def rrf_fuse(rankings: Mapping[str, Sequence[ContextItem]], k: int = RRF_K) -> list[Fused]:
    """Reciprocal rank fusion of several methods' ranked items at the chunk level, de-duplicated.

    ``rankings`` maps a method name to its items, best first (dict order breaks score ties). Returns
    one :class:`Fused` per emitted unit, best first; see the module docstring for the rules.
    """
    node_chunks = _node_chunks(rankings)
    ranks = unit_rankings(rankings)
    order = list(rankings)
    units: dict[str, dict[str, int]] = {}  # unit -> method -> rank
    for method in order:
        for u, r in ranks[method].items():
            units.setdefault(u, {})[method] = r
    scores = {u: sum(1.0 / (k + r) for r in by.values()) for u, by in units.items()}
    # best fused score; ties: the better best rank, then the earlier method, then first seen
    seen_order = {u: i for i, u in enumerate(units)}
    ranked = sorted(
        units,
        key=lambda u: (-scores[u], min(units[u].values()), min(order.index(m) for m in units[u]), seen_order[u]),
    )

    # candidates per unit: (item position in its method, method order, method, item)
    candidates: dict[str, list[tuple[int, int, str, ContextItem]]] = {}
    for mi, method in enumerate(order):
        for pos, item in enumerate(rankings[method]):
            for u in _units(item, node_chunks):
                candidates.setdefault(u, []).append((pos, mi, method, item))

    out: list[Fused] = []
    covered: set[str] = set()
    emitted: set[str] = set()
    for u in ranked:
        if u in covered:
            continue
        cands = [c for c in candidates[u] if c[3].node_id not in emitted]
        if not cands:
            continue
        whole = [c for c in cands if c[3].label == "Chunk" and c[3].node_id == u and _units(c[3], node_chunks) == [u]]
        pos, _, method, rep = min(whole or cands, key=lambda c: (c[0], c[1]))
        covers = _units(rep, node_chunks)
        covered.update(covers)
        emitted.add(rep.node_id)
        by = units[u]
        votes = ", ".join(f"{m} #{r}" for m, r in sorted(by.items(), key=lambda x: order.index(x[0])))
        item = rep.model_copy(update={"score": scores[u], "why": f"RRF({votes}); {method}: {rep.why}"})
        out.append(Fused(unit=u, score=scores[u], ranks=dict(by), item=item, method=method, covers=covers))
    return out


# ------------------------------------------------------------------------------------------------
# fusion
# ------------------------------------------------------------------------------------------------


def default_methods() -> list[str]:
    """The methods fused when none are named: those registered with a ``fusion_rank``, in its order."""
    ranked = [(cls.fusion_rank, name) for name, cls in registered_methods().items() if cls.fusion_rank is not None]
    return [name for _, name in sorted(ranked)]


def resolve_methods(requested: Sequence[str] | None) -> list[str]:
    """The methods to run, each once, in the order asked (default: :func:`default_methods`)."""
    if requested is None:
        return default_methods()
    bad = [m for m in requested if m in META_METHODS]
    if bad:
        raise RetrievalError(f"fusion cannot run {', '.join(bad)} inside itself")
    known = registered_methods()
    unknown = [m for m in requested if m not in known]
    if unknown:
        raise RetrievalError(f"unknown method(s) {unknown} for fusion; available: {', '.join(known)}")
    return list(dict.fromkeys(requested))


class FusionParams(RetrieverParams):
    top_k: int = Field(20, ge=1, le=1000, description="fused units kept before budget packing")
    methods: list[str] | None = Field(
        None,
        description="methods to fuse (default: hipporag, noderag: the methods registered with a fusion_rank)",
    )
    rrf_k: int = Field(RRF_K, ge=1, le=10_000, description="RRF constant k: 1/(k + rank)")
    method_params: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="per-method parameters, e.g. {'noderag': {'entry_k': 5}}"
    )
    timeout: float = Field(120.0, gt=0, le=3600, description="seconds to wait for the methods; late ones are dropped")

    @model_validator(mode="after")
    def _check(self) -> FusionParams:
        if self.methods is not None and not self.methods:
            raise ValueError("methods is empty")
        return self


@register
class FusionRetriever(Retriever):
    name = "fusion"
    summary = (
        "Fusion: runs several methods concurrently and fuses them by reciprocal rank fusion (k=60) over source "
        "chunks, de-duplicated, under one token budget."
    )
    Params = FusionParams

    def _retrieve(self, question: str, p: FusionParams, t: Timer) -> Retrieved:
        methods = resolve_methods(p.methods)
        # the methods start at once: the question's embedding and entities are computed by the first
        # that asks and shared with the others (graphstrata/retrieval/shared.py)
        results, errors, ms = self.run_methods(question, methods, p)
        if not results:
            limits.check()  # past the request's deadline, that is the error to report
            raise RetrievalError(f"every fused method failed: {errors}")
        with t.stage("texts"):
            results = self.finish(results)
        with t.stage("fuse"):
            fused = rrf_fuse({m: results[m].items for m in methods if m in results}, p.rrf_k)[: p.top_k]
        nodes: dict[str, None] = {}
        rels: dict[str, None] = {}
        for r in results.values():
            nodes.update(dict.fromkeys(r.subgraph.nodes))
            rels.update(dict.fromkeys(r.subgraph.relationships))
        notes: dict[str, Any] = {
            "rrf_k": p.rrf_k,
            "methods": {
                m: {
                    "ms": round(ms[m], 1),
                    "items": len(results[m].items) if m in results else 0,
                    "tokens": results[m].tokens if m in results else 0,
                    **({"error": errors[m]} if m in errors else {}),
                    **({"notes": results[m].notes} if m in results and results[m].notes else {}),
                }
                for m in methods
            },
            "ranks": [
                {
                    "node_id": f.item.node_id,
                    "unit": f.unit,
                    "rrf": round(f.score, 6),
                    "from": f.method,
                    "ranks": f.ranks,
                }
                for f in fused
            ],
        }
        if errors:
            notes["errors"] = errors
        return Retrieved([f.item for f in fused], Subgraph(nodes=list(nodes), relationships=list(rels)), notes)

    def finish(self, results: dict[str, RetrievalResult]) -> dict[str, RetrievalResult]:
        """The members' results as each would have returned it alone: the texts of all their chunks
        read in one round trip, then each result packed into its own budget."""
        fill_chunk_texts(self.db, [it for r in results.values() for it in r.items])
        return {m: pack_result(r) for m, r in results.items()}

    def run_methods(
        self, question: str, methods: list[str], p: FusionParams
    ) -> tuple[dict[str, RetrievalResult], dict[str, str], dict[str, float]]:
        """Every method on `question` in its own thread: (results, errors, milliseconds) by method.
        The results are as found, their chunks without texts and nothing packed (:meth:`finish`)."""
        results: dict[str, RetrievalResult] = {}
        errors: dict[str, str] = {}
        ms: dict[str, float] = {}

        params = {m: {"budget": p.budget, **p.method_params.get(m, {})} for m in methods}

        def one(method: str) -> RetrievalResult:
            start = time.perf_counter()
            try:
                member = get_retriever(method, self.db, self.embedder, self.settings, self.llm)
                member.defer_texts = True  # their chunks' texts are read once for all (finish)
                return member.retrieve(question, **params[method])
            finally:
                ms[method] = (time.perf_counter() - start) * 1000

        # each member learns the others' parameters, to ask for their part of a read they share
        members = {}
        for m in methods:
            with contextlib.suppress(ValidationError):  # the method itself reports its bad parameters
                members[m] = registered_methods()[m].Params(**params[m])
        # each on a worker thread in a copy of this context: the request's deadline (graphstrata.limits)
        # and the fusion (the members' parameters, what they share) reach it
        token = FUSED.set(FusedQuestion(members))
        try:
            futures = {beside(one, m): m for m in methods}
        finally:
            FUSED.reset(token)
        done, late = wait(futures, timeout=p.timeout)
        for f in done:
            m = futures[f]
            try:
                results[m] = f.result()
            except RetrievalError as e:
                errors[m] = str(e)
            except Exception as e:  # one method's failure (e.g. a missing layer) must not sink the others
                errors[m] = f"{type(e).__name__}: {e}"
        for f in late:  # left to finish on their worker; their results are dropped
            m = futures[f]
            errors[m] = f"no result within {p.timeout:g} s"
            ms.setdefault(m, p.timeout * 1000)
        return results, errors, ms
