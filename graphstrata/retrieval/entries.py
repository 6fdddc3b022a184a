"""The question vector's entry points into the graph, one read for the methods that need them:

- HippoRAG 2's passage seeds (arXiv:2502.14802 §3.2): the ``k`` passages nearest the question and
  the entities of the nearest one (:class:`PassageSeeds`);
- NodeRAG's similarity search (arXiv:2504.11544 §2.5): the top-``k`` over S, A, H and T together,
  and the ``fact_k`` relations nearest the question (:class:`SimilaritySearch`).

Each method asks for its own part. Fused on one question, each also asks for the part of the method
running beside it (fusion puts its members' parameters in the context,
:class:`~graphstrata.retrieval.shared.FusedQuestion`), so the two calls are one request, read once:
the second gets the first's rows (:func:`~graphstrata.retrieval.shared.single_flight`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from graphstrata.cypher import query
from graphstrata.retrieval.shared import FUSED, single_flight

if TYPE_CHECKING:
    from graphstrata.db import Database


class PassageSeeds(NamedTuple):
    k: int
    candidates: int


class SimilaritySearch(NamedTuple):
    indexes: tuple[str, ...]
    k: int
    candidates: int
    fact_k: int
    fact_candidates: int


class Entries(NamedTuple):
    passages: dict[str, float]  # id -> dense score, nearest first (empty unless PassageSeeds were asked for)
    feedback: list[dict]  # {id, name, chunks}: the entities of the nearest passage
    entries: list[dict]  # {id, label, via: similarity | fact, score} (empty unless SimilaritySearch)
    version: Any  # when the stored graph last changed


@runtime_checkable
class AsksEntryPoints(Protocol):
    """Parameters of a method that reads a part of the entry points (HippoRAG's, NodeRAG's)."""

    def entry_points(self) -> PassageSeeds | SimilaritySearch: ...


def entry_points(db: Database, vector: list[float], own: AsksEntryPoints) -> Entries:
    """The part `own` asks for, and the parts the methods fused beside it ask for, in one round trip;
    fused methods asking the same share it."""
    fused = FUSED.get()
    beside = [p for p in fused.params.values() if isinstance(p, AsksEntryPoints)] if fused else []
    parts = [own.entry_points()] + [p.entry_points() for p in beside]
    seeds = next((x for x in parts if isinstance(x, PassageSeeds)), None)
    similar = next((x for x in parts if isinstance(x, SimilaritySearch)), None)
    key = ("entry_points", id(db), tuple(vector), seeds, similar)
    return single_flight(key, lambda: _read(db, vector, seeds, similar))


def _read(db: Database, vector: list[float], seeds: PassageSeeds | None, similar: SimilaritySearch | None) -> Entries:
    (row,) = db.read_plain(
        query("retrieval.entry_points"),
        vector=vector,
        passage_k=seeds.k if seeds else 0,
        passage_candidates=seeds.candidates if seeds else 0,
        indexes=list(similar.indexes) if similar else [],
        k=similar.k if similar else 0,
        candidates=similar.candidates if similar else 0,
        fact_k=similar.fact_k if similar else 0,
        fact_candidates=similar.fact_candidates if similar else 0,
    )
    passages = dict(zip(row["passage_ids"], row["passage_scores"], strict=True))
    return Entries(passages, row["feedback"], row["entries"], row["version"])
