"""Typed request parameters are strict on every HTTP surface, and /v1 holds the question limits of
the HTTP API: the real ``openai`` client (over the app in-process) and plain JSON with the wrong
types. A value of the wrong JSON type is a 400 `bad_parameters`, never coerced and never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from graphstrata.config import Settings
from graphstrata.db import Database

KEY = "strict-test-key"
MAX_CHARS = 10_000


@pytest.fixture(scope="module")
def http(neo4j_settings: Settings, db: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    from graphstrata.server import create_app

    try:
        from tests.conftest import fresh_graph
    except ModuleNotFoundError:  # tests/ is no package
        from conftest import fresh_graph  # type: ignore[no-redef]

    fresh_graph(db)  # the schema the retrieval methods read (no documents needed)
    settings = neo4j_settings.model_copy(
        update={
            "api_key": SecretStr(KEY),  # TestClient's peer is no loopback address
            "cache_dir": tmp_path_factory.mktemp("cache"),
            "max_question_chars": MAX_CHARS,
            "openai_api_key": None,
            "openai_base_url": None,
            "chat_model": None,
        }
    )
    with TestClient(create_app(settings, host="127.0.0.1"), headers={"Authorization": f"Bearer {KEY}"}) as client:
        yield client


def refused(r: Any, code: str = "bad_parameters") -> str:
    assert r.status_code == 400, (r.status_code, r.text)
    assert r.json()["error"]["code"] == code, r.text
    return r.json()["error"]["message"]


def test_openai_client_meets_the_question_limits(http: TestClient) -> None:
    client = openai.OpenAI(
        base_url=f"{str(http.base_url).rstrip('/')}/v1", api_key=KEY, http_client=http, max_retries=0
    )
    for content in ("why " * 2_501, [{"type": "text", "text": "x" * (MAX_CHARS + 1)}]):
        with pytest.raises(openai.BadRequestError) as info:
            client.chat.completions.create(model="graphstrata-vector", messages=[{"role": "user", "content": content}])
        assert "GRAPHSTRATA_MAX_QUESTION_CHARS" in str(info.value)
    for blank in ("\u200b\u200d\u2060", "\ufeff \u200c", [{"type": "text", "text": "\u200b"}]):
        with pytest.raises(openai.BadRequestError) as info:
            client.chat.completions.create(model="graphstrata-vector", messages=[{"role": "user", "content": blank}])
        assert info.value.code == "empty_question" and "no user message with text" in str(info.value)


@pytest.mark.parametrize(
    "body",
    [
        {"model": "graphstrata-vector", "messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]},
        {"model": "graphstrata-vector", "messages": [{"role": "user", "content": [{"type": "text"}]}]},
        {"model": "graphstrata-vector", "messages": [{"role": "user", "content": [5]}]},
        {"model": "graphstrata-vector", "messages": [{"role": "user", "content": "Kur?"}], "stream": "yes"},
        {"model": "graphstrata-vector", "messages": [{"role": "user", "content": "Kur?"}], "stream": 1},
        {"model": 5, "messages": [{"role": "user", "content": "Kur?"}]},
        {"model": "graphstrata-vector", "messages": [{"role": True, "content": "Kur?"}]},
    ],
)
def test_v1_wrong_types_are_400(http: TestClient, body: dict) -> None:
    refused(http.post("/v1/chat/completions", json=body))


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/retrieve", {"question": "Kur?", "method": "vector", "params": {"top_k": True}}),
        ("/retrieve", {"question": "Kur?", "method": "vector", "params": {"top_k": "5"}}),
        ("/retrieve", {"question": "Kur?", "method": "vector", "params": {"budget": 2000.5}}),
        ("/retrieve", {"question": 5}),
        ("/retrieve", {"question": "Kur?", "method": True}),
        ("/ask", {"question": "Kur?", "stream": "yes"}),
        ("/ask", {"question": "Kur?", "stream": 1}),
        ("/cypher/ask", {"question": 5}),
        ("/documents", {"documents": [{"title": "T", "text": 5}]}),
        ("/documents", {"documents": [{"title": 5, "text": "Some text."}]}),
        ("/documents", {"documents": [{"title": "T", "text": "Some text."}], "augment": "yes"}),
        ("/documents", {"documents": [{"title": "T", "text": "Some text."}], "options": {"chunk_size": "600"}}),
        ("/documents", {"documents": [{"title": "T", "text": "Some text."}], "options": {"chunk_size": True}}),
    ],
)
def test_http_api_wrong_types_are_400(http: TestClient, path: str, body: dict) -> None:
    refused(http.post(path, json=body))


def test_strict_parameters_still_accept_json_values(http: TestClient) -> None:
    """The same parameters with the right JSON types pass validation (an int where a float is wanted
    is a JSON number, so it is accepted)."""
    r = http.post("/retrieve", json={"question": "Kur?", "method": "vector", "params": {"top_k": 3, "budget": 500}})
    assert r.status_code == 200, r.text
    r = http.post("/ask", json={"question": "Kur?", "method": "vector", "stream": False})
    assert r.status_code == 200, r.text
    parts = [{"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "Kur?"}]
    r = http.post(
        "/v1/chat/completions", json={"model": "graphstrata-vector", "messages": [{"role": "user", "content": parts}]}
    )
    assert r.status_code == 200, r.text


def test_v1_history_keeps_the_recent_turns_that_fit() -> None:
    """A conversation's earlier turns are bounded too: the most recent that fit 4 questions' worth of
    text reach the model; an older huge turn (or one that alone is too long) and all before it do not."""
    from graphstrata.server.openai_compat import ChatMessage, conversation

    turn = lambda role, text: ChatMessage(role=role, content=text)  # noqa: E731
    messages = [
        turn("user", "first " * 10),
        turn("assistant", "y" * 5_000_000),  # a pasted blob, long ago
        turn("user", "a" * 90),
        turn("assistant", "b" * 90),
        turn("system", "s" * 30),  # not a turn of the history
        turn("user", "c" * 90),
        turn("assistant", "   "),
        turn("user", "Where was it shot?"),
    ]
    question, history = conversation(messages, max_chars=100)
    assert question == "Where was it shot?"
    assert [h["content"][0] for h in history] == ["a", "b", "c"]  # 270 chars of a 400 budget
    assert sum(len(h["content"]) for h in history) <= 400
    _, short = conversation(messages, max_chars=50)  # budget 200: only the last two fit
    assert [h["content"][0] for h in short] == ["b", "c"]
