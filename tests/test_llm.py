"""The LLM client through the real ``openai`` package against the fake OpenAI-compatible server.

No database and no model needed: retries, timeouts, repair/re-ask, the cache and usage accounting
are all checked on real HTTP.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

import openai
import pytest
from pydantic import BaseModel

from graphstrata.config import Settings
from graphstrata.ingest.extract import ChunkExtraction, extract_with_llm, extraction_messages
from graphstrata.ingest.extract_spacy import extract_with_spacy
from graphstrata.llm import REASK_PROMPT, ExtractionFailed, LLMCallFailed, LLMClient, LLMNotConfigured
from graphstrata.llm_json import parse_json_lenient

if TYPE_CHECKING:
    from tests.fake_openai import FakeOpenAI

# The fixtures live in a plugin module (tests/conftest.py belongs to the database fixtures); its
# import name depends on whether tests/ is a package.
pytest_plugins = ["tests.conftest_llm" if __package__ else "conftest_llm"]

TEXT = "Marie Curie discovered polonium in Paris. Pierre Curie worked with Marie Curie at the Sorbonne."


def _stage(client: LLMClient, stage: str) -> dict[str, int]:
    return client.usage()[stage]


# ---- extraction through the client ------------------------------------------------------------


def test_llm_extraction_returns_entities_relations_and_units(llm_client: LLMClient, fake_openai: FakeOpenAI):
    result = extract_with_llm(llm_client, TEXT)

    names = {e.name: e.type for e in result.entities}
    assert names["Marie Curie"] == "PERSON"
    assert names["Paris"] == "LOCATION"
    triples = {(r.subject, r.predicate, r.object) for r in result.relations}
    assert ("Marie Curie", "discover in", "Paris") in triples  # (a common-noun end names no entity)
    assert result.semantic_units[0].text == "Marie Curie discovered polonium in Paris."
    assert set(result.semantic_units[0].entities) >= {"Marie Curie", "Paris"}
    assert result.title and result.description
    # every object says the LLM made it, even though the model's JSON did not say so
    assert result.extractor == "llm"
    assert {o.extractor for o in [*result.entities, *result.relations, *result.semantic_units]} == {"llm"}
    # the fake answers with the spaCy extraction of the chunk it found in the prompt
    assert result.llm_json() == extract_with_spacy(TEXT).llm_json()
    assert fake_openai.calls == 1


def test_requests_use_configured_model_and_temperature_zero(llm_client: LLMClient, fake_openai: FakeOpenAI):
    extract_with_llm(llm_client, TEXT)
    body = fake_openai.requests[0]["body"]
    assert body["model"] == "fake-chat"
    assert body["temperature"] == 0
    assert body["messages"] == extraction_messages(TEXT)


def test_openai_package_retries_are_disabled(llm_client: LLMClient):
    assert llm_client._client.max_retries == 0


# ---- retries ----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["429", "500"])
def test_rate_limits_and_server_errors_are_retried(llm_client: LLMClient, fake_openai: FakeOpenAI, status):
    fake_openai.fail_next(status, 2)
    result = extract_with_llm(llm_client, TEXT)

    assert any(e.name == "Marie Curie" for e in result.entities)
    assert fake_openai.calls == 3
    usage = _stage(llm_client, "extract")
    assert usage["calls"] == 1 and usage["retries"] == 2 and usage["failures"] == 0


def test_timeout_is_retried(fake_openai: FakeOpenAI, llm_client_factory, tmp_path: Path):
    client = llm_client_factory(timeout=0.5)
    fake_openai.fail_next("hang")

    assert client.chat([{"role": "user", "content": "hello"}], stage="answer").startswith("Fake answer")
    assert fake_openai.calls == 2
    assert _stage(client, "answer")["retries"] == 1


def test_exhausted_retries_raise_and_count_a_failure(llm_client: LLMClient, fake_openai: FakeOpenAI):
    fake_openai.fail_next("500", 10)
    with pytest.raises(LLMCallFailed, match="after 4 attempts"):
        llm_client.chat([{"role": "user", "content": "hello"}], stage="answer")
    assert fake_openai.calls == 4  # max_attempts of the test client
    assert _stage(llm_client, "answer") == {
        "calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cache_hits": 0,
        "failures": 1,
        "retries": 3,
    }


def test_unreachable_endpoint_during_extraction_is_an_extraction_failure(
    llm_client: LLMClient, fake_openai: FakeOpenAI
):
    fake_openai.fail_next("429", 10)
    with pytest.raises(ExtractionFailed, match="endpoint failed") as info:
        extract_with_llm(llm_client, TEXT)
    assert isinstance(info.value.__cause__, LLMCallFailed)
    assert _stage(llm_client, "extract")["failures"] == 1


def test_wrong_key_is_not_retried(fake_openai: FakeOpenAI, llm_client_factory, tmp_path: Path):
    client = llm_client_factory(api_key="wrong")
    with pytest.raises(openai.AuthenticationError):
        client.chat([{"role": "user", "content": "hello"}], stage="answer")
    assert fake_openai.unauthorized == 1
    assert _stage(client, "answer")["failures"] == 1


# ---- malformed output -------------------------------------------------------------------------


def test_malformed_json_is_repaired_without_a_second_call(llm_client: LLMClient, fake_openai: FakeOpenAI):
    fake_openai.fail_next("malformed")
    result = extract_with_llm(llm_client, TEXT)
    assert result.llm_json() == extract_with_spacy(TEXT).llm_json()
    assert fake_openai.calls == 1


def test_invalid_json_is_re_asked_with_the_validation_error(llm_client: LLMClient, fake_openai: FakeOpenAI):
    fake_openai.fail_next("invalid")
    result = extract_with_llm(llm_client, TEXT)

    assert any(e.name == "Marie Curie" for e in result.entities)
    assert fake_openai.calls == 2
    reask = fake_openai.requests[1]["body"]["messages"]
    assert reask[:2] == extraction_messages(TEXT)
    assert reask[2]["role"] == "assistant"
    assert "entities" in reask[3]["content"] and reask[3]["content"].startswith(REASK_PROMPT.split("{")[0])
    assert _stage(llm_client, "extract")["calls"] == 2


def test_persistent_garbage_raises_extraction_failed_and_is_not_cached(llm_client: LLMClient, fake_openai: FakeOpenAI):
    fake_openai.fail_next("garbage", 3)
    with pytest.raises(ExtractionFailed, match="no valid ChunkExtraction after 3 replies") as info:
        extract_with_llm(llm_client, TEXT)
    assert info.value.attempts == 3 and len(info.value.errors) == 3
    assert info.value.last_reply and "cannot" in info.value.last_reply
    assert fake_openai.calls == 3
    assert _stage(llm_client, "extract")["failures"] == 1

    # the failure was not cached: once the endpoint behaves, the same chunk is extracted
    result = extract_with_llm(llm_client, TEXT)
    assert result.entities and fake_openai.calls == 4


# ---- cache ------------------------------------------------------------------------------------


def test_cache_makes_a_second_run_cost_zero_calls(fake_openai: FakeOpenAI, llm_client_factory, tmp_path: Path):
    chunks = [
        TEXT,
        "Albert Einstein developed relativity and won the Nobel Prize.",
        "Google acquired YouTube.",
    ]
    first = llm_client_factory()
    fake_openai.fail_next("invalid")  # a re-ask on the first run must not cost anything on the second
    before = [extract_with_llm(first, c) for c in chunks]
    calls_first = fake_openai.calls
    assert calls_first == len(chunks) + 1

    second = llm_client_factory()  # a new process would build a new client
    after = [extract_with_llm(second, c) for c in chunks]

    assert fake_openai.calls == calls_first
    assert after == before
    assert _stage(second, "extract") == {
        "calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cache_hits": 3,
        "failures": 0,
        "retries": 0,
    }
    files = list(tmp_path.rglob("*.json"))
    assert len(files) == len(chunks) and not list(tmp_path.rglob(".tmp-*"))


def test_cache_key_depends_on_model_messages_and_params(llm_client: LLMClient, fake_openai: FakeOpenAI):
    messages = [{"role": "user", "content": "hello"}]
    llm_client.chat(messages, stage="answer")
    llm_client.chat(messages, stage="answer")
    assert fake_openai.calls == 1
    llm_client.chat(messages, stage="answer", max_tokens=50)
    llm_client.chat([{"role": "user", "content": "hello!"}], stage="answer")
    assert fake_openai.calls == 3
    assert _stage(llm_client, "answer")["cache_hits"] == 1


def test_cache_can_be_turned_off(fake_openai: FakeOpenAI, llm_client_factory, tmp_path: Path):
    client = llm_client_factory(use_cache=False)
    for _ in range(2):
        client.chat([{"role": "user", "content": "hello"}])
    assert fake_openai.calls == 2 and not list(tmp_path.rglob("*.json"))


# ---- accounting, concurrency, embeddings ------------------------------------------------------


def test_usage_is_accounted_per_stage(llm_client: LLMClient, fake_openai: FakeOpenAI):
    extract_with_llm(llm_client, TEXT)
    llm_client.chat([{"role": "user", "content": "Who discovered polonium?"}], stage="answer")
    llm_client.chat([{"role": "user", "content": "Where?"}], stage="answer")

    usage = llm_client.usage()
    assert set(usage) == {"extract", "answer"}
    assert usage["extract"]["calls"] == 1 and usage["answer"]["calls"] == 2
    total_prompt = usage["extract"]["prompt_tokens"] + usage["answer"]["prompt_tokens"]
    total_completion = usage["extract"]["completion_tokens"] + usage["answer"]["completion_tokens"]
    assert (total_prompt, total_completion) == (fake_openai.prompt_tokens, fake_openai.completion_tokens)
    assert usage["answer"]["prompt_tokens"] > 0 and usage["extract"]["completion_tokens"] > 0

    llm_client.reset_usage()
    assert llm_client.usage() == {}


def test_map_bounds_concurrency_keeps_order_and_reports_progress(
    fake_openai: FakeOpenAI, llm_client_factory, tmp_path: Path
):
    fake_openai.delay = 0.05
    client = llm_client_factory(concurrency=2)
    prompts = [f"question {i}" for i in range(8)]
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def progress(done: int, total: int) -> None:
        with lock:
            seen.append((done, total))

    replies = client.map(lambda p: client.chat([{"role": "user", "content": p}]), prompts, progress=progress)

    assert [r.endswith(p) for r, p in zip(replies, prompts, strict=True)] == [True] * 8
    assert fake_openai.max_in_flight <= 2
    assert seen == [(i, 8) for i in range(1, 9)]


def test_map_can_collect_failures_instead_of_raising(llm_client: LLMClient, fake_openai: FakeOpenAI):
    def work(i: int) -> int:
        if i == 1:
            raise ExtractionFailed("bad chunk", stage="extract", attempts=1, errors=["x"], last_reply=None)
        return i * 10

    results = llm_client.map(work, [0, 1, 2], return_exceptions=True)
    assert results[0] == 0 and results[2] == 20 and isinstance(results[1], ExtractionFailed)
    with pytest.raises(ExtractionFailed):
        llm_client.map(work, [0, 1, 2])


def test_embeddings_are_deterministic_batched_and_cached(llm_client: LLMClient, fake_openai: FakeOpenAI):
    texts = ["Marie Curie", "polonium", "Paris", "Marie Curie discovered polonium"]
    vectors = llm_client.embed(texts, batch_size=3)

    assert len(vectors) == 4 and all(len(v) == 16 for v in vectors)
    assert fake_openai.calls_by_path["/v1/embeddings"] == 2
    assert fake_openai.requests[0]["body"]["encoding_format"] == "float"

    again = llm_client.embed([*texts, "Sorbonne"], batch_size=3)
    assert again[:4] == vectors
    assert fake_openai.calls_by_path["/v1/embeddings"] == 3  # only the new text was sent
    usage = _stage(llm_client, "embed")
    assert usage["calls"] == 3 and usage["cache_hits"] == 4 and usage["prompt_tokens"] == fake_openai.prompt_tokens


def test_models_endpoint_needs_the_key(fake_openai: FakeOpenAI):
    client = openai.OpenAI(api_key=fake_openai.api_key, base_url=fake_openai.base_url, max_retries=0)
    assert {m.id for m in client.models.list()} == {"fake-chat", "fake-embed"}
    bad = openai.OpenAI(api_key="nope", base_url=fake_openai.base_url, max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()


# ---- configuration and JSON repair ------------------------------------------------------------


def test_no_endpoint_means_no_llm_mode(tmp_path: Path):
    settings = Settings(OPENAI_API_KEY=None, OPENAI_BASE_URL=None, GRAPHSTRATA_CHAT_MODEL=None)
    assert not settings.llm_enabled
    with pytest.raises(LLMNotConfigured):
        LLMClient.from_settings(settings)


def test_chat_without_model_is_not_configured(fake_openai: FakeOpenAI, tmp_path: Path):
    settings = Settings(OPENAI_API_KEY="test-key", OPENAI_BASE_URL=fake_openai.base_url)
    client = LLMClient(settings, cache_dir=tmp_path)
    client.chat_model = None  # (the environment of the test run may configure one)
    with pytest.raises(LLMNotConfigured):
        client.chat([{"role": "user", "content": "hi"}])
    assert fake_openai.calls == 0


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "b": [1, 2]}',
        '```json\n{"a": 1, "b": [1, 2]}\n```',
        'Here you go:\n{"a": 1, "b": [1, 2]}\nHope this helps!',
        '{"a": 1, "b": [1, 2,],}',
        "{'a': 1, 'b': [1, 2]}",
        "Sure. ```\n{'a': 1, 'b': [1, 2,],}\n``` done",
    ],
)
def test_parse_json_lenient_repairs_common_malformations(text: str):
    assert parse_json_lenient(text) == {"a": 1, "b": [1, 2]}


def test_parse_json_lenient_handles_braces_in_strings_and_json_literals():
    assert parse_json_lenient('note {"t": "a } b", "ok": true} end') == {"t": "a } b", "ok": True}
    assert parse_json_lenient("{'x': true, 'y': null}") == {"x": True, "y": None}


@pytest.mark.parametrize("text", ["", "no json here", "{broken", "[1, 2"])
def test_parse_json_lenient_rejects_garbage(text: str):
    with pytest.raises(ValueError):
        parse_json_lenient(text)


def test_chat_json_validates_any_schema(llm_client: LLMClient):
    class Answer(BaseModel):
        title: str

    # the fake answers extraction prompts with an object that has a title
    assert llm_client.chat_json(extraction_messages(TEXT), Answer, stage="t").title
    assert isinstance(llm_client.chat_json(extraction_messages(TEXT), ChunkExtraction, stage="t"), ChunkExtraction)
