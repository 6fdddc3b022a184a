"""The question vector's entry points (graphstrata/retrieval/entries.py): HippoRAG's passage seeds and
NodeRAG's similarity search are one read when fusion runs the two, and each method alone reads only
its own part; fused or alone, each method returns the same."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from graphstrata.client import GraphStrata
from graphstrata.cypher import query
from graphstrata.retrieval.base import get_retriever
from graphstrata.retrieval.fusion import FusionParams, FusionRetriever
from graphstrata.retrieval.linking import clear_cache

QUESTIONS = [
    "Who directed the film that was shot in or around Leland, North Carolina in 1986?",
    "Which American rock band recorded an album in North Carolina?",
    "Who wrote The Hukilau Song?",
]


@pytest.fixture
def reads(corpus: GraphStrata, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Every read_plain the retrievers make from now on: (statement, parameters)."""
    seen: list[tuple[str, dict[str, Any]]] = []
    lock = threading.Lock()
    real = corpus.db.read_plain

    def counting(statement: str, **params: Any) -> list[dict[str, Any]]:
        with lock:
            seen.append((statement, params))
        return real(statement, **params)

    monkeypatch.setattr(corpus.db, "read_plain", counting)
    return seen


def of(reads: list[tuple[str, dict[str, Any]]], name: str) -> list[dict[str, Any]]:
    return [params for statement, params in reads if statement == query(name)]


def items(result) -> list[tuple[str, float]]:
    return [(i.node_id, i.score) for i in result.items]


def fused(corpus: GraphStrata, reads: list, question: str, **params: Any) -> dict:
    fusion = get_retriever("fusion", corpus.db, corpus.embedder, corpus.settings)
    assert isinstance(fusion, FusionRetriever)
    p = FusionParams(methods=["hipporag", "noderag"], **params)
    results, errors, _ = fusion.run_methods(question, ["hipporag", "noderag"], p)
    assert not errors
    assert all(not it.text for r in results.values() for it in r.items)  # chunks' texts not read yet
    texts_before = len(of(reads, "retrieval.chunks_by_id"))
    results = fusion.finish(results)
    assert len(of(reads, "retrieval.chunks_by_id")) == texts_before + 1  # one read for both members
    return results


@pytest.mark.parametrize(
    "method_params",
    [{}, {"noderag": {"entry_k": 3, "fact_k": 2}, "hipporag": {"passage_k": 40}}],
    ids=["defaults", "members' own parameters"],
)
def test_fused_members_share_one_read_and_return_what_they_return_alone(
    corpus: GraphStrata, reads: list, method_params: dict
) -> None:
    for question in QUESTIONS:
        alone = {}
        for m in ("hipporag", "noderag"):
            clear_cache()
            alone[m] = corpus.retrieve(question, m, budget=2000, **method_params.get(m, {}))
        del reads[:]
        clear_cache()
        together = fused(corpus, reads, question, budget=2000, method_params=method_params)
        (shared,) = of(reads, "retrieval.entry_points")  # one read of the entry points for both
        assert shared["passage_k"] == method_params.get("hipporag", {}).get("passage_k", 200)
        assert shared["k"] == method_params.get("noderag", {}).get("entry_k", 5) and shared["indexes"]
        assert shared["fact_k"] == method_params.get("noderag", {}).get("fact_k", 0)
        assert len(of(reads, "retrieval.link_entities")) == 1  # and one of the question's entities
        for m in ("hipporag", "noderag"):
            assert items(together[m]) == items(alone[m]), m
            assert together[m].items


def test_alone_each_method_reads_only_its_part(corpus: GraphStrata, reads: list) -> None:
    r = corpus.retrieve(QUESTIONS[0], "hipporag")
    (hippo,) = of(reads, "retrieval.entry_points")
    assert hippo["passage_k"] == 200 and hippo["indexes"] == [] and hippo["fact_k"] == 0
    (texts,) = of(reads, "retrieval.chunks_by_id")  # the chunks' texts in one read
    assert set(texts["ids"]) >= {i.node_id for i in r.items} and all(i.text and i.doc_titles for i in r.items)
    del reads[:]
    r = corpus.retrieve(QUESTIONS[0], "noderag")
    (node,) = of(reads, "retrieval.entry_points")
    assert node["passage_k"] == 0 and node["indexes"] and node["k"] == 5
    assert len(of(reads, "retrieval.chunks_by_id")) == 1 and all(i.text for i in r.items)


def test_the_shared_read_holds_each_part_as_read_alone(corpus: GraphStrata) -> None:
    from graphstrata.retrieval.entries import PassageSeeds, SimilaritySearch, _read
    from graphstrata.retrieval.noderag import VECTOR_INDEXES

    seeds, similar = PassageSeeds(20, 100), SimilaritySearch(tuple(VECTOR_INDEXES.values()), 6, 100, 3, 100)
    (facts,) = corpus.db.read("MATCH (r:Relation) WHERE r.embedding IS NOT NULL RETURN count(r) AS n")
    facts = facts["n"]
    for question in QUESTIONS:
        vector = corpus.embedder.embed([question])[0].tolist()
        both = _read(corpus.db, vector, seeds, similar)
        only_seeds, only_similar = _read(corpus.db, vector, seeds, None), _read(corpus.db, vector, None, similar)
        assert both.passages == only_seeds.passages and len(both.passages) == 20
        assert both.feedback == only_seeds.feedback and both.feedback
        assert both.entries == only_similar.entries
        assert sum(e["via"] == "similarity" for e in both.entries) == 6
        assert sum(e["via"] == "fact" for e in both.entries) == min(3, facts)  # spaCy's relations have no vectors
        assert only_seeds.entries == [] and only_similar.passages == {} and only_similar.feedback == []
        assert both.version == only_seeds.version is not None
