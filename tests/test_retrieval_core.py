"""The shared retrieval machinery and the two baselines, on a small hand-made corpus."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.generate import NO_MODEL
from graphstrata.retrieval.base import ContextItem, RetrievalError, pack
from graphstrata.text.tokens import count_tokens

pytest_plugins = ["tests.conftest_llm"]

DOCS = [
    ("Seine", "The Seine is a river that flows through Paris and reaches the English Channel at Le Havre."),
    ("Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889."),
    ("Danube", "The Danube flows through Vienna, Budapest and Belgrade into the Black Sea."),
    ("Photosynthesis", "Photosynthesis converts light energy into chemical energy in plants and algae."),
    ("Zanzibar", "Zanzibar is an archipelago off the coast of Tanzania, known for cloves and nutmeg."),
]


@pytest.fixture
def gs(graph: Database, neo4j_settings: Settings) -> GraphStrata:
    g = GraphStrata(neo4j_settings, db=graph)
    g.ingest_texts(DOCS)
    return g


def test_vector_ranks_like_brute_force_cosine(gs: GraphStrata) -> None:
    question = "Which river runs through the French capital?"
    result = gs.retrieve(question, "vector", top_k=5)
    # independent reference: embed the chunk inputs ourselves and rank by cosine in numpy
    inputs = [f"{t}\n{x}" for t, x in DOCS]
    vecs = gs.embedder.embed(inputs)
    q = gs.embedder.embed([question])[0]
    expected = [DOCS[i][0] for i in np.argsort(-(vecs @ q))]
    assert [i.doc_titles[0] for i in result.items] == expected
    assert result.items[0].doc_titles == ["Seine"]
    for item in result.items:  # the index's scores are the cosines (up to quantisation)
        i = [t for t, _ in DOCS].index(item.doc_titles[0])
        assert item.score == pytest.approx((1 + float(vecs[i] @ q)) / 2, abs=2e-3)
    assert result.chunk_ids() == [i.node_id for i in result.items]
    assert set(result.timings_ms) >= {"embed", "search", "pack"}
    assert result.params == {"top_k": 5, "budget": 4000}


def test_fulltext_matches_words_and_escapes_lucene_syntax(gs: GraphStrata) -> None:
    result = gs.retrieve("cloves nutmeg", "fulltext")
    assert result.items[0].doc_titles == ["Zanzibar"]
    assert gs.retrieve("Eiffel", "fulltext", top_k=1).items[0].doc_titles == ["Eiffel Tower"]
    for nasty in ["Paris AND (river", '"unclosed', "*:*", "title:Seine OR 1=1", "\\", "river~2^5 -[x TO y]"]:
        r = gs.retrieve(nasty, "fulltext")  # never a Lucene syntax error
        assert all(it.label == "Chunk" for it in r.items)
    assert gs.retrieve("???", "fulltext").items == []


def test_errors_are_clear(gs: GraphStrata) -> None:
    with pytest.raises(RetrievalError, match=r"unknown method 'nope'.*fulltext.*vector"):
        gs.retrieve("anything", "nope")
    for empty in ("", "   "):
        with pytest.raises(RetrievalError, match="empty"):
            gs.retrieve(empty, "vector")
    with pytest.raises(RetrievalError, match="top_k"):
        gs.retrieve("rivers", "vector", top_k=0)
    with pytest.raises(RetrievalError, match="colour"):
        gs.retrieve("rivers", "vector", colour="red")


def test_budget_packing() -> None:
    items = [
        ContextItem(node_id=str(i), label="Chunk", text="word " * n, score=1.0, why="")
        for i, n in enumerate([50, 30, 80, 10])
    ]
    packed = pack([i.model_copy() for i in items], budget=100)
    assert [p.node_id for p in packed] == ["0", "1", "3"]  # 80 does not fit after 80 tokens; 10 does
    assert sum(p.tokens for p in packed) <= 100
    first_too_big = pack([items[2].model_copy()], budget=20)
    assert first_too_big[0].tokens == 20 == count_tokens(first_too_big[0].text)


def test_result_respects_budget(gs: GraphStrata) -> None:
    r = gs.retrieve("rivers in Europe", "vector", top_k=5, budget=60)
    assert 0 < r.tokens <= 60 and len(r.items) < 5


def test_ask_without_model_returns_the_evidence(gs: GraphStrata) -> None:
    a = gs.ask("Where is the Eiffel Tower?", "vector", top_k=2)
    assert a.answer is None and a.note == NO_MODEL and a.citations == []
    assert a.retrieval.items[0].doc_titles == ["Eiffel Tower"]


def test_ask_with_a_model_cites_node_ids(gs: GraphStrata, fake_openai, tmp_path) -> None:
    settings = gs.settings.model_copy(
        update={
            "openai_base_url": fake_openai.base_url,
            "openai_api_key": fake_openai.api_key,
            "chat_model": "fake-chat",
            "cache_dir": tmp_path,
        }
    )
    with GraphStrata(settings, db=gs.db, embedder=gs.embedder) as g:
        a = g.ask("Where is the Eiffel Tower?", "vector", top_k=2)
    assert a.answer and a.answer.startswith("Fake answer") and a.model == "fake-chat"
    prompt = fake_openai.requests[-1]["body"]["messages"][-1]["content"]
    assert "[1] Eiffel Tower" in prompt and "Question: Where is the Eiffel Tower?" in prompt
    assert a.citations and a.citations[0] == a.retrieval.items[0].node_id


def test_single_flight_computes_once_for_callers_at_the_same_instant(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    from concurrent.futures import Future

    from graphstrata.retrieval import shared

    waiting = threading.Event()

    class Watched(Future):
        def result(self, timeout=None):
            waiting.set()  # a second caller is about to wait for the first one's result
            return super().result(timeout)

    monkeypatch.setattr(shared, "Future", Watched)
    started, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def slow() -> str:
        calls.append(1)
        started.set()
        assert release.wait(10)
        return "vector"

    results: list[str] = []
    first = threading.Thread(target=lambda: results.append(shared.single_flight("k", slow)))
    first.start()
    assert started.wait(10)  # the first caller is computing
    second = threading.Thread(target=lambda: results.append(shared.single_flight("k", slow)))
    second.start()
    assert waiting.wait(10)  # the second waits on the first
    release.set()
    first.join(10)
    second.join(10)
    assert results == ["vector", "vector"] and calls == [1]
    # done: a later call computes again (the callers' own caches serve repeats)
    assert shared.single_flight("k", lambda: "again") == "again"


def test_single_flight_passes_the_error_to_every_waiter() -> None:
    from graphstrata.retrieval.shared import single_flight

    with pytest.raises(ValueError, match="boom"):
        single_flight("e", lambda: (_ for _ in ()).throw(ValueError("boom")))


def test_within_a_fusion_single_flight_keeps_results_for_members_that_come_late() -> None:
    from graphstrata.retrieval import shared

    question = shared.FusedQuestion({})
    token = shared.FUSED.set(question)
    try:
        calls: list[str] = []
        first = shared.beside(lambda: shared.single_flight("q", lambda: calls.append("a") or "first")).result(10)
        # a member arriving after the first finished gets its result, on another worker too
        late = shared.beside(lambda: shared.single_flight("q", lambda: calls.append("b") or "second")).result(10)
        assert (first, late, calls) == ("first", "first", ["a"])
        with pytest.raises(ValueError, match="boom"):
            shared.single_flight("e", lambda: (_ for _ in ()).throw(ValueError("boom")))
        assert shared.single_flight("e", lambda: "retried") == "retried"  # an error is not kept
    finally:
        shared.FUSED.reset(token)
    # outside the fusion nothing of it is kept, and another fusion starts empty
    assert shared.single_flight("q", lambda: "fresh") == "fresh"
    token = shared.FUSED.set(shared.FusedQuestion({}))
    try:
        assert shared.single_flight("q", lambda: "other fusion") == "other fusion"
    finally:
        shared.FUSED.reset(token)


def test_beside_runs_in_the_callers_context_on_a_reused_worker() -> None:
    import contextvars
    import threading
    import time

    from graphstrata.retrieval import shared

    request = contextvars.ContextVar("request", default=None)
    request.set("question 1")
    parked_before = len(shared._parked)  # workers other tests left parked
    first = shared.beside(lambda: (request.get(), threading.get_ident()))
    seen, worker = first.result(10)
    assert seen == "question 1" and worker != threading.get_ident()
    deadline = time.monotonic() + 10
    while len(shared._parked) < max(parked_before, 1) and time.monotonic() < deadline:
        time.sleep(0.01)  # the worker parks right after handing over its result
    # the next call goes to the worker parked last (that one): no new thread
    assert shared.beside(threading.get_ident).result(10) == worker


def test_beside_calls_that_wait_for_each_other_do_not_deadlock() -> None:
    """Fusion's methods run beside the question, and each runs its own linking beside itself."""
    from graphstrata.retrieval.shared import beside

    def method(i: int) -> int:
        return beside(lambda: i * i).result(30) + 1

    futures = [beside(method, i) for i in range(24)]
    assert [f.result(60) for f in futures] == [i * i + 1 for i in range(24)]


def test_beside_hands_the_error_to_the_caller() -> None:
    from graphstrata.retrieval.shared import beside

    def fail() -> None:
        raise ValueError("no entities")

    error = beside(fail).exception(10)
    assert isinstance(error, ValueError) and "no entities" in str(error)
