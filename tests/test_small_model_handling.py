"""What a small model gets wrong, on demand: the fake OpenAI server is scripted to reply as a tiny
model does (empty, truncated, inventing entities, relating to an unknown entity, citing nothing,
an endpoint without JSON-schema support, a prompt over the context window), and each gets the
product's clear handling. tests/test_local_llm.py meets the same cases with the real model where it
can be made to misbehave."""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import pytest

from graphstrata.config import Settings
from graphstrata.generate import EMPTY_ANSWER, UNCITED, answer
from graphstrata.ingest.extract import ChunkExtraction, extract_with_llm
from graphstrata.ingest.extract_grounding import (
    MAX_ENTITIES,
    TEXT_CHARS,
    ground,
    reply_schema,
)
from graphstrata.llm import ExtractionFailed
from graphstrata.llm_structured import PromptTooLong, shorter
from graphstrata.retrieval.base import ContextItem, RetrievalResult

try:
    from tests.conftest_llm import make_llm_client
    from tests.fake_openai import FakeOpenAI, _Handler
except ModuleNotFoundError:  # tests/ is no package
    from conftest_llm import make_llm_client  # type: ignore[no-redef]
    from fake_openai import FakeOpenAI, _Handler  # type: ignore[no-redef]

TEXT = "Stephen King directed Maximum Overdrive in 1986. It was filmed in Leland, North Carolina."


class ScriptedFake(FakeOpenAI):
    """Replies from a script (then as the plain fake); finish_reason "length" for scripted cut-offs;
    optionally refuses ``response_format`` as an endpoint without JSON-schema support does; a
    context-window error for any prompt longer than ``ctx_chars``."""

    def __init__(self, *, rejects_schema: bool = False, ctx_chars: int = 10**9) -> None:
        super().__init__(api_key="test-key")
        self.script: deque[tuple[str, str]] = deque()
        self.rejects_schema = rejects_schema
        self.ctx_chars = ctx_chars
        self.formats: list[Any] = []
        self.bodies: list[dict[str, Any]] = []

    def say(self, *replies: str, finish: str = "stop") -> None:
        self.script.extend((r, finish) for r in replies)

    def handler_base(self) -> type:
        fake = self

        class Handler(_Handler):
            def _chat(self, body: dict[str, Any], failure: str | None) -> None:
                fake.formats.append(body.get("response_format"))
                fake.bodies.append(body)
                if fake.rejects_schema and "response_format" in body:
                    return self._error(400, "Unrecognized request argument: response_format", "invalid_request_error")
                if len(json.dumps(body.get("messages"))) > fake.ctx_chars:
                    return self._error(
                        400, "the request exceeds the available context size, try increasing it", "exceed_context_size"
                    )
                if not fake.script:
                    return super()._chat(body, failure)
                text, finish = fake.script.popleft()
                self._send(
                    200,
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model"),
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    },
                )
                return None

        return Handler


@pytest.fixture
def scripted(request: pytest.FixtureRequest):
    with ScriptedFake(**getattr(request, "param", {})) as fake:
        yield fake


def reply(**overrides: Any) -> str:
    base = {
        "title": "Maximum Overdrive",
        "description": "A 1986 film.",
        "entities": [
            {"name": "Stephen King", "type": "PERSON", "description": "director"},
            {"name": "Maximum Overdrive", "type": "WORK", "description": "film"},
        ],
        "relations": [
            {"subject": "Stephen King", "predicate": "directed", "object": "Maximum Overdrive", "description": ""}
        ],
        "semantic_units": [{"text": "Stephen King directed Maximum Overdrive.", "entities": ["Stephen King"]}],
    }
    return json.dumps(base | overrides)


def test_extraction_asks_for_the_bounded_schema(scripted: ScriptedFake, tmp_path) -> None:
    client = make_llm_client(scripted, tmp_path)
    scripted.say(reply())
    x = extract_with_llm(client, TEXT)
    fmt = scripted.formats[-1]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == reply_schema(
        fmt["json_schema"]["schema"]["properties"]["entities"]["items"]["properties"]["type"]["enum"]
    )
    assert fmt["json_schema"]["schema"]["properties"]["entities"]["maxItems"] > 0
    assert {e.name for e in x.entities} == {"Stephen King", "Maximum Overdrive"}


@pytest.mark.parametrize("scripted", [{"rejects_schema": True}], indirect=True)
def test_an_endpoint_without_json_schema_gets_the_prompt_only_request(scripted: ScriptedFake, tmp_path) -> None:
    client = make_llm_client(scripted, tmp_path)
    scripted.say(reply(), reply(title="Second"))
    assert extract_with_llm(client, TEXT).title == "Maximum Overdrive"
    assert scripted.formats[0] is not None and scripted.formats[1] is None  # refused once, then plain
    assert client.json_schema is False
    assert extract_with_llm(client, TEXT + " More.").title == "Second"
    assert scripted.formats[2:] == [None]  # remembered: no second refusal


def test_entities_not_in_the_text_are_dropped_with_their_relations(scripted: ScriptedFake, tmp_path) -> None:
    client = make_llm_client(scripted, tmp_path)
    invented = reply(
        entities=[
            {"name": "Stephen King", "type": "PERSON", "description": ""},
            {"name": "Atlantis", "type": "LOCATION", "description": "invented"},
        ],
        relations=[
            {"subject": "Stephen King", "predicate": "visited", "object": "Atlantis", "description": ""},
            # an end no entity declares, but which the text mentions: kept, typed UNKNOWN
            {"subject": "Stephen King", "predicate": "filmed in", "object": "Leland", "description": ""},
            # an end the text never mentions: the relation goes with it
            {"subject": "Stephen King", "predicate": "met", "object": "Ada Lovelace", "description": ""},
        ],
        semantic_units=[{"text": "King went to Atlantis.", "entities": ["Stephen King", "Atlantis"]}],
    )
    scripted.say(invented)
    x = extract_with_llm(client, TEXT)
    assert {e.name: e.type for e in x.entities} == {"Stephen King": "PERSON", "Leland": "UNKNOWN"}
    assert [(r.subject, r.predicate, r.object) for r in x.relations] == [("Stephen King", "filmed in", "Leland")]
    assert x.semantic_units[0].entities == ["Stephen King"]


def test_grounding_is_word_aligned() -> None:
    x = ChunkExtraction.model_validate_json(
        reply(entities=[{"name": "Kin", "type": "PERSON"}, {"name": "north carolina", "type": "LOCATION"}])
    )
    kept, dropped = ground(x, TEXT)
    assert "Kin" in dropped.entities and "north carolina" not in dropped.entities  # "Kin" is only part of "King"
    assert {e.name for e in kept.entities} >= {"north carolina", "Stephen King"}


def test_empty_and_truncated_replies_are_named_in_the_failure(scripted: ScriptedFake, tmp_path) -> None:
    client = make_llm_client(scripted, tmp_path)
    scripted.say("")
    scripted.say('{"title": "Maximum Overdrive", "description": "A 19', finish="length")
    scripted.say('{"title": "Max', finish="length")
    with pytest.raises(ExtractionFailed) as info:
        extract_with_llm(client, TEXT)
    errors = info.value.errors
    assert len(errors) == 3 and "empty" in errors[0]
    assert all("cut off at the token limit" in e for e in errors[1:])


def test_after_a_cut_off_reply_the_schema_is_tighter(scripted: ScriptedFake, tmp_path) -> None:
    """A small model repeats items until the token limit (SmolLM2-135M at temperature 0 did so on
    every chunk of the real-model tests): the next attempt is constrained to a quarter of the bounds,
    so its reply fits; a plain invalid reply (not cut off) keeps the schema."""
    client = make_llm_client(scripted, tmp_path)
    scripted.say('{"title": "Maximum Overdrive", "description": "A 19', finish="length")
    scripted.say('{"title": 5}')  # invalid, not cut off
    scripted.say(reply())
    x = extract_with_llm(client, TEXT)
    assert x.title == "Maximum Overdrive"
    bounds = [f["json_schema"]["schema"]["properties"]["entities"] for f in scripted.formats[-3:]]
    assert [b["maxItems"] for b in bounds] == [MAX_ENTITIES, MAX_ENTITIES // 4, MAX_ENTITIES // 4]
    described = bounds[1]["items"]["properties"]["description"]
    assert described["maxLength"] == TEXT_CHARS // 4
    assert shorter(shorter(reply_schema(["PERSON"])))["properties"]["entities"]["maxItems"] == 1


@pytest.mark.parametrize("scripted", [{"ctx_chars": 2000}], indirect=True)
def test_a_prompt_over_the_context_window_is_one_clear_failure(scripted: ScriptedFake, tmp_path) -> None:
    client = make_llm_client(scripted, tmp_path)
    with pytest.raises(PromptTooLong, match="context window"):
        client.chat([{"role": "user", "content": "x " * 2000}])
    assert scripted.calls == 1  # not retried: the same prompt cannot fit next time
    with pytest.raises(ExtractionFailed, match="context window"):
        extract_with_llm(client, "Stephen King. " * 300)


def result_of(*texts: str) -> RetrievalResult:
    items = [ContextItem(node_id=f"n{i}", label="Chunk", text=t, score=1.0, why="test") for i, t in enumerate(texts)]
    return RetrievalResult(method="vector", question="q", items=items, tokens=10, budget=100)


def test_answers_that_are_empty_or_cite_nothing_carry_a_note(scripted: ScriptedFake, tmp_path) -> None:
    client = make_llm_client(scripted, tmp_path)
    evidence = result_of("Stephen King directed Maximum Overdrive.", "Leland is in North Carolina.")
    scripted.say("", "Stephen King.", "Stephen King [1] directed it; it was filmed in Leland [2].")
    settings = Settings(OPENAI_BASE_URL=scripted.base_url, GRAPHSTRATA_CHAT_MODEL=client.chat_model)
    empty = answer("Who directed it?", evidence, settings, client=client)
    uncited = answer("Who directed the film?", evidence, settings, client=client)
    cited = answer("Who directed Maximum Overdrive?", evidence, settings, client=client)
    assert (empty.note, uncited.note, cited.note) == (EMPTY_ANSWER, UNCITED, None)
    assert cited.citations == ["n0", "n1"]


def _unbounded(node: Any, path: str = "$") -> list[str]:
    """Paths of the free strings and arrays in a JSON schema that carry no bound (a walk of our own)."""
    found: list[str] = []
    if isinstance(node, dict):
        if node.get("type") == "string" and "maxLength" not in node and not {"enum", "const"} & node.keys():
            found.append(path)
        if node.get("type") == "array" and "maxItems" not in node:
            found.append(path)
        for k, v in node.items():
            found += _unbounded(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _unbounded(v, f"{path}[{i}]")
    return found


def test_every_structured_request_is_bounded_and_a_cut_reply_gets_a_quarter(scripted: ScriptedFake, tmp_path) -> None:
    """Not only extraction: any chat_json (the query graph, question entities, text-to-Cypher, DA-RAG's
    assessments) asks for a schema whose free strings and lists are bounded, so a model that does not
    stop is stopped by the grammar; after a reply cut at the token limit the bounds are a quarter."""
    from graphstrata.llm_structured import REPLY_ITEMS, REPLY_STRING_CHARS
    from graphstrata.retrieval.sgrag_query import QueryGraphSpec

    assert _unbounded(QueryGraphSpec.model_json_schema())  # pydantic's own schema leaves them open
    client = make_llm_client(scripted, tmp_path)
    scripted.say('{"nodes": [{"id": "q0", "label": "Stephen King", "descr', finish="length")
    scripted.say('{"nodes": [{"id": "q0", "label": "Stephen King"}, {"id": "q1", "label": "UNK"}], "edges": []}')
    spec = client.chat_json([{"role": "user", "content": "q"}], QueryGraphSpec, stage="sgrag_query")
    assert [n.label for n in spec.nodes] == ["Stephen King", "UNK"]
    first, second = (f["json_schema"]["schema"] for f in scripted.formats[-2:])
    assert _unbounded(first) == [] and _unbounded(second) == []
    node = first["$defs"]["QGNode"]["properties"]["label"]
    assert node["maxLength"] == REPLY_STRING_CHARS and first["properties"]["nodes"]["maxItems"] == REPLY_ITEMS
    assert second["$defs"]["QGNode"]["properties"]["label"]["maxLength"] == REPLY_STRING_CHARS // 4
    assert second["properties"]["nodes"]["maxItems"] == REPLY_ITEMS // 4


def test_summaries_cap_their_reply(scripted: ScriptedFake, tmp_path) -> None:
    from graphstrata.embed import get_embedder
    from graphstrata.summarize import summarize

    client = make_llm_client(scripted, tmp_path)
    scripted.say("Stephen King directed a film in Leland.")
    text, how = summarize([TEXT, "Leland is a town."], get_embedder(Settings()), client, max_tokens=150)
    assert (text, how) == ("Stephen King directed a film in Leland.", "llm")
    assert scripted.bodies[-1]["max_tokens"] == 300
