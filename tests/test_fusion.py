"""fusion (reciprocal rank fusion over source chunks) and auto (routing by question shape)."""

from __future__ import annotations

import pytest

from graphstrata.retrieval.auto import Shape, question_shape, route
from graphstrata.retrieval.base import METHODS, ContextItem, RetrievalError, Retriever, RetrieverParams, Subgraph
from graphstrata.retrieval.fusion import (
    RRF_K,
    FusionParams,
    FusionRetriever,
    resolve_methods,
    rrf_fuse,
    unit_rankings,
)


def chunk(cid: str, text: str = "", score: float = 1.0) -> ContextItem:
    return ContextItem(node_id=cid, label="Chunk", text=text or f"text of {cid}", score=score, why="w", chunk_ids=[cid])


def node(nid: str, label: str, chunks: list[str], text: str = "") -> ContextItem:
    return ContextItem(node_id=nid, label=label, text=text or f"{label} {nid}", score=1.0, why="w", chunk_ids=chunks)


# ------------------------------------------------------------------------------------------------
# RRF on fixed rankings
# ------------------------------------------------------------------------------------------------


def test_rrf_scores_equal_hand_computation() -> None:
    rankings = {
        "a": [chunk("c1"), chunk("c2"), chunk("c3")],
        "b": [chunk("c3"), chunk("c1"), chunk("c4")],
        "c": [chunk("c2")],
    }
    fused = rrf_fuse(rankings)
    got = {f.unit: f.score for f in fused}
    k = 60
    expected = {
        "c1": 1 / (k + 1) + 1 / (k + 2),  # a #1, b #2
        "c2": 1 / (k + 2) + 1 / (k + 1),  # a #2, c #1
        "c3": 1 / (k + 3) + 1 / (k + 1),  # a #3, b #1
        "c4": 1 / (k + 3),  # b #3
    }
    assert RRF_K == 60
    assert got == pytest.approx(expected, abs=1e-15)
    # c1 and c2 tie on score and on best rank (1): the earlier method (a) ranks c1 first
    assert [f.unit for f in fused] == ["c1", "c2", "c3", "c4"]
    assert fused[0].ranks == {"a": 1, "b": 2}
    assert fused[2].ranks == {"a": 3, "b": 1}
    assert fused[0].item.score == pytest.approx(expected["c1"])
    assert "a #1" in fused[0].item.why and "b #2" in fused[0].item.why


def test_rrf_k_is_a_parameter() -> None:
    fused = rrf_fuse({"a": [chunk("x"), chunk("y")], "b": [chunk("y")]}, k=1)
    assert {f.unit: f.score for f in fused} == pytest.approx({"y": 1 / 3 + 1 / 2, "x": 1 / 2})
    assert [f.unit for f in fused] == ["y", "x"]


def test_unit_ranking_is_first_citation_order() -> None:
    """A method's ranking is over source chunks: an item citing several chunks ranks them in turn,
    a chunk already ranked keeps its first rank, an item without chunks is a unit of its own."""
    items = [
        node("r1", "Relation", ["c2", "c1"]),
        chunk("c1"),
        node("e1", "Entity", []),
        node("s1", "SemanticUnit", ["c3"]),
    ]
    assert unit_rankings({"m": items}) == {"m": {"c2": 1, "c1": 2, "e1": 3, "c3": 4}}


# ------------------------------------------------------------------------------------------------
# de-duplication
# ------------------------------------------------------------------------------------------------


def test_same_source_chunk_is_one_item_and_the_chunk_represents_it() -> None:
    """NodeRAG's semantic unit of c1, KET-RAG's sub-chunk of c1 and the baseline's chunk c1 are one
    unit: their votes add up and the whole chunk is what is emitted, once."""
    rankings = {
        "noderag": [node("s1", "SemanticUnit", ["c1"]), node("s2", "SemanticUnit", ["c2"])],
        "ketrag": [node("sub1", "SubChunk", ["c1"])],
        "vector": [chunk("c2"), chunk("c1")],
    }
    fused = rrf_fuse(rankings)
    assert [f.unit for f in fused] == ["c1", "c2"]
    c1 = fused[0]
    assert c1.ranks == {"noderag": 1, "ketrag": 1, "vector": 2}
    assert c1.score == pytest.approx(2 / 61 + 1 / 62)
    assert c1.item.node_id == "c1" and c1.item.label == "Chunk" and c1.method == "vector"
    assert [f.item.node_id for f in fused] == ["c1", "c2"]


def test_same_node_from_two_methods_is_deduplicated() -> None:
    """An Entity both methods return (no chunk ids) is one unit; a Relation one method cites chunks
    for and the other does not is mapped to those chunks, so it is not emitted twice."""
    rankings = {
        "ketrag": [node("e1", "Entity", []), node("r1", "Relation", [])],
        "noderag": [node("r1", "Relation", ["c9"]), node("e1", "Entity", [])],
    }
    fused = rrf_fuse(rankings)
    ids = [f.item.node_id for f in fused]
    assert sorted(ids) == ["e1", "r1"] and len(ids) == 2
    by_unit = {f.unit: f for f in fused}
    assert by_unit["e1"].ranks == {"ketrag": 1, "noderag": 2}
    assert by_unit["c9"].ranks == {"ketrag": 2, "noderag": 1}


def test_item_spanning_two_chunks_covers_both() -> None:
    """E2GraphRAG merges adjacent chunks into one passage: once it is emitted, a later unit it
    covers adds nothing (context is not spent twice on the same text)."""
    passage = node("c1", "Chunk", ["c1", "c2"], text="c1 and c2 merged")
    rankings = {"e2graphrag": [passage], "fulltext": [chunk("c3"), chunk("c2")]}
    fused = rrf_fuse(rankings)
    # c1 (e2 #1), c3 (fulltext #1) tie on score; c2 has e2 #2 + fulltext #2 and ranks first
    assert fused[0].unit == "c2"
    assert fused[0].ranks == {"e2graphrag": 2, "fulltext": 2}
    # the whole chunk c2 from fulltext represents c2 (it is a pure chunk); the passage still covers c1
    assert [f.item.node_id for f in fused] == ["c2", "c1", "c3"]
    assert fused[1].covers == ["c1", "c2"]


def test_fused_items_keep_provenance_and_text() -> None:
    fused = rrf_fuse({"a": [chunk("c1", "alpha")], "b": [chunk("c1", "alpha")]})
    assert len(fused) == 1
    item = fused[0].item
    assert item.text == "alpha" and item.chunk_ids == ["c1"]
    assert item.score == pytest.approx(2 / 61)


# ------------------------------------------------------------------------------------------------
# methods that are missing, failing or unknown
# ------------------------------------------------------------------------------------------------


def test_resolve_methods_from_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_methods(["vector", "sgrag", "fulltext", "vector"]) == ["vector", "sgrag", "fulltext"]
    with pytest.raises(RetrievalError, match="unknown method"):
        resolve_methods(["vector", "nonsense"])
    with pytest.raises(RetrievalError, match="inside itself"):
        resolve_methods(["fusion"])
    # the default set is whatever the registered classes declare, in their fusion_rank order
    default = resolve_methods(None)
    assert default == ["hipporag", "noderag"]
    described = FusionParams.model_fields["methods"].description or ""
    assert described.startswith(f"methods to fuse (default: {', '.join(default)}:")
    monkeypatch.setitem(METHODS, "fixed-test", type("_Ranked", (_Fixed,), {"fusion_rank": 2}))
    # a rank shared with hipporag: the names break the tie
    assert resolve_methods(None) == ["fixed-test", "hipporag", "noderag"]
    monkeypatch.delitem(METHODS, "sgrag")
    with pytest.raises(RetrievalError, match="unknown method"):
        resolve_methods(["sgrag"])


class _Boom(Retriever):
    name = "boom-test"
    summary = "fails"

    def _retrieve(self, question: str, p: RetrieverParams, t) -> tuple[list[ContextItem], Subgraph, dict]:
        raise RuntimeError("layer missing")


class _Fixed(Retriever):
    name = "fixed-test"
    summary = "fixed ranking"

    def _retrieve(self, question: str, p: RetrieverParams, t) -> tuple[list[ContextItem], Subgraph, dict]:
        return [chunk("c2"), chunk("c1")], Subgraph(nodes=["c2", "c1"]), {"hello": 1}


class _Fixed2(Retriever):
    name = "fixed2-test"
    summary = "another fixed ranking"

    def _retrieve(self, question: str, p: RetrieverParams, t) -> tuple[list[ContextItem], Subgraph, dict]:
        return [chunk("c1"), node("e1", "Entity", [])], Subgraph(nodes=["c1", "e1"]), {}


class _Embedder:
    name, dim = "test", 3

    def embed(self, texts, progress=None):
        import numpy as np

        return np.ones((len(texts), 3), dtype=np.float32)


def test_fusion_retriever_runs_methods_concurrently_and_survives_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    resolve_methods(None)
    for cls in (_Boom, _Fixed, _Fixed2):
        monkeypatch.setitem(METHODS, cls.name, cls)
    r = FusionRetriever(db=None, embedder=_Embedder()).retrieve(  # type: ignore[arg-type]
        "a question", methods=["fixed-test", "boom-test", "fixed2-test"], budget=1000
    )
    assert r.method == "fusion"
    assert [i.node_id for i in r.items] == ["c1", "c2", "e1"]
    assert r.items[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert "RuntimeError: layer missing" in r.notes["errors"]["boom-test"]
    assert set(r.notes["methods"]) == {"fixed-test", "boom-test", "fixed2-test"}
    assert r.notes["methods"]["fixed-test"]["notes"] == {"hello": 1}
    assert all(m["ms"] >= 0 for m in r.notes["methods"].values())
    assert r.notes["ranks"][0] == {
        "node_id": "c1",
        "unit": "c1",
        "rrf": pytest.approx(1 / 62 + 1 / 61, abs=1e-6),
        "from": "fixed2-test",  # the method that ranked it best supplies the item
        "ranks": {"fixed-test": 2, "fixed2-test": 1},
    }
    assert set(r.subgraph.nodes) == {"c1", "c2", "e1"}
    assert r.tokens <= r.budget


def test_fusion_packs_under_one_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    resolve_methods(None)
    monkeypatch.setitem(METHODS, "fixed-test", _Fixed)
    monkeypatch.setitem(METHODS, "fixed2-test", _Fixed2)
    r = FusionRetriever(db=None, embedder=_Embedder()).retrieve(  # type: ignore[arg-type]
        "q", methods=["fixed-test", "fixed2-test"], budget=4
    )
    # each method packs into the budget too (fixed-test keeps c2, fixed2-test c1): a tie, the earlier
    # method first; the fused list is then packed into the one budget
    assert r.tokens <= 4 and len(r.items) == 1 and r.items[0].node_id == "c2"
    assert [x["unit"] for x in r.notes["ranks"]] == ["c2", "c1"]


def test_fusion_of_a_method_not_installed_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    resolve_methods(None)
    monkeypatch.delitem(METHODS, "sgrag", raising=False)
    with pytest.raises(RetrievalError, match="unknown method"):
        FusionRetriever(db=None, embedder=_Embedder()).retrieve("q", methods=["sgrag"])  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------
# auto: the canonical question shapes
# ------------------------------------------------------------------------------------------------

ALL = {"vector", "fulltext", "noderag", "hipporag", "ketrag", "e2graphrag", "darag", "sgrag", "fusion", "auto"}

CANONICAL = [
    # (question, route with every method, route without sgrag, rule with every method)
    ("Which actor starred in Heat and was born in New York?", "sgrag", "hipporag", "multi-constraint"),
    ("Who directed the film that won the Oscar in 1998 and starred Leonardo DiCaprio?", "sgrag", "hipporag", None),
    ("What is the birthplace of the director of Titanic?", "sgrag", "hipporag", "multi-constraint"),
    ("Were Scott Derrickson and Ed Wood of the same nationality?", "vector", "vector", "yes-no"),
    ("How are Alice Smith and Bob Jones related?", "hipporag", "hipporag", "entities"),
    ("Summarize the main themes of the documents.", "noderag", "noderag", "global"),
    ("What are the main themes?", "noderag", "noderag", "global"),
    ("Summarize.", "e2graphrag", "e2graphrag", "global"),
    ("What happened?", "e2graphrag", "e2graphrag", "global"),
    ("What is the capital of France?", "hipporag", "hipporag", "one-entity"),
    ("Who wrote Hamlet?", "hipporag", "hipporag", "one-entity"),
]


@pytest.mark.parametrize(("question", "full", "no_sgrag", "rule"), CANONICAL)
def test_auto_routes_canonical_shapes(question: str, full: str, no_sgrag: str, rule: str | None) -> None:
    shape = question_shape(question)
    r = route(shape, ALL, try_sgrag=True)
    assert route(shape, ALL).method != "sgrag"  # by default auto does not try sgrag
    assert r.method == full, (question, shape)
    if rule:
        assert r.rule == rule
    assert r.reason
    assert route(shape, ALL - {"sgrag"}).method == no_sgrag


def test_shape_of_a_multi_constraint_question() -> None:
    s = question_shape("Which actor starred in Heat and was born in New York?")
    assert s.wh and s.constraints >= 2 and s.multi_constraint
    assert "new york" in s.named
    s = question_shape("Summarize the overview of the main themes and what they imply")
    assert s.summary_style and not s.multi_constraint


def test_auto_falls_through_missing_methods() -> None:
    pair = Shape(query_entities=["a", "b"], named=["a", "b"], wh=False, constraints=0, summary_style=False)
    assert route(pair, {"vector", "noderag"}).method == "noderag"
    r = route(pair, {"vector", "fusion"})
    assert r.method == "fusion" and r.rule == "entities" and not r.passed_over
    nothing = Shape(query_entities=[], named=[], wh=True, constraints=0, summary_style=False)
    assert route(nothing, {"vector", "noderag"}).method == "noderag"
    assert route(nothing, {"vector"}).method == "vector"
    multi = Shape(query_entities=["x", "y"], named=["x"], wh=True, constraints=3, summary_style=False)
    r = route(multi, {"noderag", "e2graphrag"}, try_sgrag=True)
    assert r.method == "noderag" and r.passed_over == ["multi-constraint → sgrag (not installed)"]


def test_auto_retriever_records_route_and_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphstrata.retrieval.auto import AutoRetriever

    resolve_methods(None)
    monkeypatch.setitem(METHODS, "hipporag", _Fixed)  # whatever auto routes to here answers from a fixed ranking
    r = AutoRetriever(db=None, embedder=_Embedder()).retrieve("Who wrote Hamlet?", budget=100)  # type: ignore[arg-type]
    assert r.method == "auto"
    assert r.notes["route"] == "hipporag" and r.notes["rule"] == "one-entity" and r.notes["reason"]
    assert r.notes["shape"]["named_entities"] == ["hamlet"]
    assert r.notes["routed_notes"] == {"hello": 1}
    assert [i.node_id for i in r.items] == ["c2", "c1"]
    assert "classify" in r.timings_ms and any(k.startswith("hipporag.") for k in r.timings_ms)


class _SGExact(_Fixed2):
    def _retrieve(self, question: str, p: RetrieverParams, t) -> tuple[list[ContextItem], Subgraph, dict]:
        items, sub, _ = super()._retrieve(question, p, t)
        return items, sub, {"fallback": False, "matches": 1}


class _SGFallback(_Fixed2):
    def _retrieve(self, question: str, p: RetrieverParams, t) -> tuple[list[ContextItem], Subgraph, dict]:
        items, sub, _ = super()._retrieve(question, p, t)
        return items, sub, {"fallback": True, "reason": "no match"}


@pytest.mark.parametrize(("sgrag", "route_to"), [(_SGExact, "sgrag"), (_SGFallback, "hipporag")])
def test_auto_keeps_sgrag_only_for_exact_matches(monkeypatch: pytest.MonkeyPatch, sgrag, route_to: str) -> None:
    from graphstrata.retrieval.auto import AutoRetriever

    resolve_methods(None)
    monkeypatch.setitem(METHODS, "sgrag", sgrag)
    monkeypatch.setitem(METHODS, "hipporag", _Fixed)
    r = AutoRetriever(db=None, embedder=_Embedder()).retrieve(  # type: ignore[arg-type]
        "Which actor starred in Heat and was born in New York?", budget=100, try_sgrag=True
    )
    assert r.notes["route"] == route_to
    expected = {"sgrag": ["c1", "e1"], "hipporag": ["c2", "c1"]}[route_to]
    assert [i.node_id for i in r.items] == expected
    assert ("rerouted_from_sgrag" in r.notes) == (route_to == "hipporag")
    assert r.chunk_ids() == {"sgrag": ["c1"], "hipporag": ["c2", "c1"]}[route_to]  # the packed context's order
    assert any(k.startswith("sgrag.") for k in r.timings_ms)  # sgrag ran either way
    # by default auto does not try sgrag: the question goes straight to hipporag
    plain = AutoRetriever(db=None, embedder=_Embedder()).retrieve(  # type: ignore[arg-type]
        "Which actor starred in Heat and was born in New York?", budget=100
    )
    assert plain.notes["route"] == "hipporag" and not any(k.startswith("sgrag.") for k in plain.timings_ms)


# ------------------------------------------------------------------------------------------------
# on a real graph
# ------------------------------------------------------------------------------------------------

DOCS = [
    ("Lilu (mythology)", "A lilu or lilû is a masculine Akkadian word for a spirit, related to Alû, demon."),
    (
        "Alû",
        "In Akkadian and Sumerian mythology, Alû is a vengeful spirit of the Utukku that goes down to the "
        "underworld Kur. The demon has no mouth, lips or ears.",
    ),
    ("Christopher Nolan", "Christopher Nolan is a British-American film director, producer and screenwriter."),
]


def test_fusion_and_auto_on_a_real_graph(graph, monkeypatch: pytest.MonkeyPatch) -> None:
    from graphstrata.client import GraphStrata
    from graphstrata.ingest.pipeline import IngestOptions

    gs = GraphStrata(db=graph)
    gs.ingest_texts(DOCS, IngestOptions(extractor="spacy"))
    vector = gs.retrieve("Which spirit is a demon in Akkadian mythology?", "vector", top_k=3)
    r = gs.retrieve(
        "Which spirit is a demon in Akkadian mythology?", "fusion", methods=["vector", "fulltext", "sgrag"], budget=2000
    )
    ids = [i.node_id for i in r.items]
    assert len(ids) == len(set(ids)), "each chunk once"
    assert set(vector.chunk_ids()) <= set(r.chunk_ids())
    assert r.tokens <= 2000
    assert {"vector", "fulltext"} <= set(r.notes["methods"])
    # both methods found the Alû chunk: its score is the sum of two reciprocal ranks
    top = r.notes["ranks"][0]
    assert len(top["ranks"]) >= 2 and top["rrf"] == pytest.approx(
        sum(1 / (60 + k) for k in top["ranks"].values()), abs=1e-6
    )

    monkeypatch.delitem(METHODS, "sgrag", raising=False)
    auto = gs.retrieve("Which actor starred in Heat and was born in New York?", "auto")
    assert auto.notes["route"] == "hipporag" and "passed_over" not in auto.notes  # auto does not try sgrag
    default = gs.retrieve("Summarize the main themes.", "fusion", budget=3000)
    assert list(default.notes["methods"]) == ["hipporag", "noderag"] and default.items
