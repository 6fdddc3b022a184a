"""The OpenAI-compatible endpoint as chat front ends meet it: the real ``openai`` client pointed at a
real ``graphstrata serve`` process (the one of tests/test_server.py), the answering LLM being the
fake OpenAI server; and a second server with no LLM configured, which answers with the evidence."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from graphstrata.config import Settings
from graphstrata.generate import NO_MODEL
from graphstrata.retrieval.base import METHODS, _load_methods
from graphstrata.server.chat_reply import NO_MODEL_SHORT
from graphstrata.server.conversation import REWRITE_PROMPT

try:
    from tests.test_server import (
        DOCS,
        KEY,
        ROOT,
        STARTUP_S,
        Server,
        fake,
        free_port,
        ingested,
        serve_cmd,
        server,
        server_env,
    )
except ModuleNotFoundError:  # tests/ is no package
    from test_server import (  # type: ignore[no-redef]
        DOCS,
        KEY,
        ROOT,
        STARTUP_S,
        Server,
        fake,
        free_port,
        ingested,
        serve_cmd,
        server,
        server_env,
    )

__all__ = ["fake", "ingested", "server"]  # pytest fixtures (`fake` is one `server` depends on)


def client_for(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0, timeout=120)


def test_models_are_the_methods(server: Server) -> None:
    _load_methods()
    models = client_for(server.url).models.list()
    ids = {m.id for m in models.data}
    assert ids == {f"graphstrata-{m}" for m in METHODS}
    assert {"graphstrata-noderag", "graphstrata-auto", "graphstrata-vector"} <= ids
    assert client_for(server.url).models.retrieve("graphstrata-auto").id == "graphstrata-auto"


def test_needs_the_api_key(server: Server) -> None:
    bad = openai.OpenAI(base_url=f"{server.url}/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()
    with pytest.raises(openai.AuthenticationError):
        bad.chat.completions.create(model="graphstrata-vector", messages=[{"role": "user", "content": "Kur?"}])


def test_completion_cites_and_uses_the_conversation(server: Server, ingested: dict) -> None:
    fake = server.fake
    before = len(fake.requests)
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Tell me about Akkadian spirits."},
        {"role": "assistant", "content": "There are several, for example the lilu."},
        {"role": "user", "content": "Which demon has no mouth?"},
    ]
    reply = client_for(server.url).chat.completions.create(model="graphstrata-vector", messages=messages)
    text = reply.choices[0].message.content
    assert reply.model == "graphstrata-vector" and reply.choices[0].finish_reason == "stop"
    assert text.startswith("Fake answer")
    # the answer cites [1] (the fake echoes the prompt), resolved to the passage's document
    assert "Sources:" in text and "[1] Alû (Chunk " in text
    # the question was the last user message; the earlier turns reached the model as history
    sent = [r["body"]["messages"] for r in fake.requests[before:] if r["path"].endswith("/chat/completions")]
    # two calls: the follow-up rewritten into a standalone question for retrieval, then the answer
    assert len(sent) == 2 and sent[0][0]["content"] == REWRITE_PROMPT
    roles = [m["role"] for m in sent[1]]
    assert roles == ["system", "user", "assistant", "user"]
    assert sent[1][1]["content"] == "Tell me about Akkadian spirits."
    assert "Question: Which demon has no mouth?" in sent[1][-1]["content"]


def test_follow_up_is_rewritten_by_the_model(server: Server, ingested: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a model, the follow-up is rewritten into a standalone question from the conversation, and
    retrieval searches that; the reply says so and carries `usage`."""
    fake = server.fake
    answer_with = fake.chat_reply
    rewritten = "Which films did Christopher Nolan make?"

    def reply(messages: list[dict], failure: str | None) -> str:
        return rewritten if messages[0]["content"] == REWRITE_PROMPT else answer_with(messages, failure)

    monkeypatch.setattr(fake, "chat_reply", reply)
    before = len(fake.requests)
    messages = [
        {"role": "user", "content": "Tell me about the director Christopher Nolan."},
        {"role": "assistant", "content": "He is a British-American film director and screenwriter."},
        {"role": "user", "content": "Which films did he make?"},
    ]
    done = client_for(server.url).chat.completions.create(model="graphstrata-vector", messages=messages)
    sent = [r["body"]["messages"] for r in fake.requests[before:] if r["path"].endswith("/chat/completions")]
    # first the rewrite (the conversation as a transcript), then the answer
    assert sent[0][0]["content"] == REWRITE_PROMPT
    assert "user: Tell me about the director Christopher Nolan." in sent[0][1]["content"]
    assert sent[0][1]["content"].endswith("Last user message: Which films did he make?")
    answer_prompt = sent[-1][-1]["content"]
    # the context was retrieved for the rewritten question: the Nolan passage comes first
    nolan = next(d["text"] for d in DOCS if d["title"] == "Christopher Nolan")
    assert answer_prompt.startswith(f"Context:\n[1] Christopher Nolan\n{nolan}\n\n")
    assert "Question: Which films did he make?" in answer_prompt  # the model answers the user's own words
    searched = done.model_extra["graphstrata"]["searched"]
    assert searched == {
        "question": "Which films did he make?",
        "searched": rewritten,
        "how": "rewritten",
        "entities": [],
    }
    text = done.choices[0].message.content
    assert text.endswith(f'Searched (rewritten from the conversation): "{rewritten}"')
    assert done.usage.completion_tokens > 0 and done.usage.prompt_tokens > len(answer_prompt) // 8
    assert done.usage.total_tokens == done.usage.prompt_tokens + done.usage.completion_tokens


def test_streamed_completion(server: Server, ingested: dict) -> None:
    client = client_for(server.url)
    question = [{"role": "user", "content": "Who directed Inception and Interstellar?"}]
    stream = client.chat.completions.create(model="graphstrata-noderag", messages=question, stream=True)
    chunks = list(stream)
    pieces = [c.choices[0].delta.content or "" for c in chunks]
    assert len([p for p in pieces if p]) > 3, pieces
    assert chunks[-1].choices[0].finish_reason == "stop"
    streamed = "".join(pieces)
    assert streamed.startswith("Fake answer") and "\n\nSources:\n[1] " in streamed
    # the same question unstreamed: the same text (one prompt format, one answer cache)
    plain = client.chat.completions.create(model="graphstrata-noderag", messages=question)
    assert plain.choices[0].message.content == streamed


def test_bad_requests(server: Server) -> None:
    client = client_for(server.url)
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Kur?"}])
    assert "graphstrata-auto" in str(e.value)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="graphstrata-vector", messages=[{"role": "system", "content": "hi"}])


@pytest.fixture(scope="module")
def no_llm_server(neo4j_settings: Settings, server: Server, ingested: dict, tmp_path_factory) -> Iterator[str]:
    """A second server over the same graph, with no model configured."""
    port = free_port()
    log: Path = tmp_path_factory.mktemp("nollm") / "server.log"
    env = server_env(neo4j_settings, GRAPHSTRATA_API_KEY=KEY)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GRAPHSTRATA_CHAT_MODEL"):
        env.pop(name, None)
    with open(log, "wb") as out:
        proc = subprocess.Popen(serve_cmd("127.0.0.1", port), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            assert proc.poll() is None, log.read_text()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                    break
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def test_no_model_answers_with_the_evidence(no_llm_server: str) -> None:
    client = client_for(no_llm_server)
    question = [{"role": "user", "content": "Which demon has no mouth?"}]
    text = client.chat.completions.create(model="graphstrata-vector", messages=question).choices[0].message.content
    assert text.startswith(NO_MODEL_SHORT)
    assert "[1] Alû: " in text and "no mouth" in text
    full = client.chat.completions.create(
        model="graphstrata-vector", messages=question, extra_body={"evidence": "full"}
    )
    assert full.choices[0].message.content.startswith(NO_MODEL) and "[1] (Alû) " in full.choices[0].message.content
    streamed = "".join(
        c.choices[0].delta.content or ""
        for c in client.chat.completions.create(model="graphstrata-vector", messages=question, stream=True)
    )
    assert streamed == text
