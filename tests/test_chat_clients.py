"""Chat front ends and client libraries against a served graph of samples/corpus, with no language
model configured: the real ``openai`` client following a two-turn conversation, ``usage`` (streamed
and not), the short evidence digest; ``/v1/embeddings`` used by the ``openai`` client, LangChain's
``OpenAIEmbeddings`` (+ ``Neo4jVector``) and neo4j-graphrag's ``OpenAIEmbeddings`` (+
``VectorRetriever``), which must find the chunks ``graphstrata retrieve --method vector`` finds."""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import openai
import pytest

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database, connection_params

try:
    from tests.conftest import wipe
    from tests.test_server import KEY, ROOT, STARTUP_S, free_port, serve_cmd, server_env
except ModuleNotFoundError:  # tests/ is no package
    from conftest import wipe  # type: ignore[no-redef]
    from test_server import KEY, ROOT, STARTUP_S, free_port, serve_cmd, server_env  # type: ignore[no-redef]

CORPUS = ROOT / "samples" / "corpus" / "hotpotqa_sample.jsonl"
FIRST = "Which film was shot in Leland, North Carolina in 1986?"
FOLLOW_UP = "Who directed it?"
SUBJECT = {"Leland, North Carolina", "Maximum Overdrive"}  # the two supporting passages (samples/questions.jsonl)
BRIDGE = "Leland, North Carolina"  # the passage that names the film


@pytest.fixture(scope="module")
def corpus(db: Database, neo4j_settings: Settings) -> Iterator[GraphStrata]:
    """samples/corpus ingested (spaCy extraction), and the GraphStrata that did it."""
    from graphstrata.schema import apply_schema

    wipe(db)
    gs = GraphStrata(neo4j_settings, db=db)
    apply_schema(db, gs.embedder.name, gs.embedder.dim)
    report = gs.ingest([CORPUS])
    assert report.documents_new == 50, report
    yield gs


@pytest.fixture(scope="module")
def url(neo4j_settings: Settings, corpus: GraphStrata, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`graphstrata serve` over that graph, with an API key and no model."""
    port = free_port()
    log: Path = tmp_path_factory.mktemp("chat") / "server.log"
    env = server_env(neo4j_settings, GRAPHSTRATA_API_KEY=KEY, GRAPHSTRATA_MAX_EMBED_INPUTS="8")
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GRAPHSTRATA_CHAT_MODEL"):
        env.pop(name, None)
    with open(log, "wb") as out:
        proc = subprocess.Popen(serve_cmd("127.0.0.1", port), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            assert proc.poll() is None, log.read_text()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/health", timeout=5).status_code == 200:
                    break
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        proc.wait(30)
    assert "Traceback" not in log.read_text(), log.read_text()


def client_for(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0, timeout=120)


TITLES = [json.loads(line)["title"] for line in CORPUS.read_text().splitlines() if line.strip()]


def titles_in(text: str) -> set[str]:
    """Document titles of the evidence lines of a full-evidence reply (`[n] (Title) text`)."""
    return {t for t in TITLES if f"] ({t}) " in text}


# ------------------------------------------------------------------------------------------------
# conversations
# ------------------------------------------------------------------------------------------------


def test_follow_up_retrieves_the_conversations_subject(url: str, corpus: GraphStrata) -> None:
    client = client_for(url)
    full = {"evidence": "full"}
    first = client.chat.completions.create(
        model="graphstrata-vector", messages=[{"role": "user", "content": FIRST}], extra_body=full
    )
    assert SUBJECT & titles_in(first.choices[0].message.content)
    assert first.model_extra["graphstrata"]["searched"]["how"] == "last_message"
    conversation = [
        {"role": "user", "content": FIRST},
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": FOLLOW_UP},
    ]
    reply = client.chat.completions.create(model="graphstrata-vector", messages=conversation, extra_body=full)
    text = reply.choices[0].message.content
    searched = reply.model_extra["graphstrata"]["searched"]
    assert searched["how"] == "earlier_entities" and searched["question"] == FOLLOW_UP
    assert any("Leland" in e for e in searched["entities"]), searched
    # the reply says what was searched
    assert f'Searched (with names from earlier turns): "{searched["searched"]}"' in text
    # the follow-up finds the subject's passage (the one naming the film) …
    assert BRIDGE in titles_in(text), titles_in(text)
    # … which the last message alone does not (nor the other supporting passage)
    alone = client.chat.completions.create(
        model="graphstrata-vector", messages=[{"role": "user", "content": FOLLOW_UP}], extra_body=full
    )
    assert titles_in(alone.choices[0].message.content) and not SUBJECT & titles_in(alone.choices[0].message.content)
    # the same search through the library: the passages retrieval saw for the conversation
    result = corpus.retrieve(searched["searched"], "vector")
    assert titles_in(text) == {t for item in result.items for t in item.doc_titles}


# ------------------------------------------------------------------------------------------------
# usage and the readable reply
# ------------------------------------------------------------------------------------------------


def test_usage_and_the_short_digest(url: str) -> None:
    from graphstrata.server.chat_reply import DIGEST_CHARS
    from graphstrata.text.tokens import count_tokens

    client = client_for(url)
    question = [{"role": "user", "content": FIRST}]
    reply = client.chat.completions.create(model="graphstrata-vector", messages=question)
    text = reply.choices[0].message.content
    # readable: a few passages with their documents, and where the rest is
    assert len(text) <= DIGEST_CHARS, len(text)
    assert text.startswith("No language model is configured") and "\n\n[1] " in text
    assert "POST /retrieve" in text and '"evidence": "full"' in text
    full = client.chat.completions.create(
        model="graphstrata-vector", messages=question, extra_body={"evidence": "full"}
    )
    assert len(full.choices[0].message.content) > 2 * len(text)
    usage = reply.usage
    assert usage is not None and usage.completion_tokens == count_tokens(text)
    assert (
        usage.prompt_tokens >= count_tokens(FIRST)
        and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    )
    # streamed: the same text, and with include_usage a last chunk (no choices) with the same usage
    chunks = list(
        client.chat.completions.create(
            model="graphstrata-vector", messages=question, stream=True, stream_options={"include_usage": True}
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    assert chunks[-1].choices == [] and chunks[-1].usage == usage
    assert all(c.usage is None for c in chunks[:-1])
    plain = list(client.chat.completions.create(model="graphstrata-vector", messages=question, stream=True))
    assert all(c.usage is None for c in plain)


# ------------------------------------------------------------------------------------------------
# /v1/embeddings
# ------------------------------------------------------------------------------------------------

QUESTION = "Who directed the film that was shot in or around Leland, North Carolina in 1986"


def test_embeddings_are_the_graphs_vectors(url: str, corpus: GraphStrata) -> None:
    from graphstrata.text.tokens import encode

    client = client_for(url)
    ours = corpus.embedder.embed([QUESTION, FIRST])
    got = client.embeddings.create(model="graphstrata-embed", input=[QUESTION, FIRST])  # base64 on the wire
    assert [d.index for d in got.data] == [0, 1]
    assert np.allclose(np.array([d.embedding for d in got.data]), ours, atol=1e-6)
    assert got.usage.prompt_tokens == len(encode(QUESTION)) + len(encode(FIRST))
    # token ids (what LangChain sends by default) and the float format
    r = httpx.post(
        f"{url}/v1/embeddings",
        headers={"Authorization": f"Bearer {KEY}"},
        json={"model": "graphstrata-embed", "input": [encode(QUESTION)], "encoding_format": "float"},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    assert np.allclose(r.json()["data"][0]["embedding"], ours[0], atol=1e-6)
    # a raw base64 answer is little-endian float32
    r = httpx.post(
        f"{url}/v1/embeddings",
        headers={"Authorization": f"Bearer {KEY}"},
        json={"model": corpus.embedder.name, "input": FIRST, "encoding_format": "base64"},
        timeout=60,
    )
    assert np.allclose(np.frombuffer(base64.b64decode(r.json()["data"][0]["embedding"]), "<f4"), ours[1], atol=1e-6)


def test_embeddings_auth_and_limits(url: str) -> None:
    client = client_for(url)
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0).embeddings.create(
            model="graphstrata-embed", input="x"
        )
    with pytest.raises(openai.NotFoundError) as e:
        client.embeddings.create(model="text-embedding-3-small", input="x")
    assert "graphstrata-embed" in str(e.value)
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model="graphstrata-embed", input=["a"] * 9)  # GRAPHSTRATA_MAX_EMBED_INPUTS=8
    assert "GRAPHSTRATA_MAX_EMBED_INPUTS" in str(e.value)
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model="graphstrata-embed", input="a" * 10_001)
    assert "GRAPHSTRATA_MAX_QUESTION_CHARS" in str(e.value)
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model="graphstrata-embed", input="x", dimensions=1536)
    card = httpx.get(f"{url}/v1/embeddings/model", headers={"Authorization": f"Bearer {KEY}"}).json()
    assert card["id"] == "graphstrata-embed" and card["dimensions"] == 384


def vector_chunks(gs: GraphStrata, k: int) -> list[str]:
    return [item.node_id for item in gs.retrieve(QUESTION, "vector", top_k=k).items][:k]


def test_langchain_through_v1_embeddings_finds_what_retrieve_finds(
    url: str, corpus: GraphStrata, neo4j_settings: Settings
) -> None:
    from langchain_neo4j import Neo4jVector
    from langchain_openai import OpenAIEmbeddings

    # check_embedding_ctx_length=False: send text (the default sends tiktoken ids, which needs
    # tiktoken's table download; the server takes ids too, see above)
    embeddings = OpenAIEmbeddings(
        model="graphstrata-embed", base_url=f"{url}/v1", api_key=KEY, check_embedding_ctx_length=False
    )
    assert np.allclose(embeddings.embed_query(QUESTION), corpus.embedder.embed([QUESTION])[0], atol=1e-6)
    uri, (user, password) = connection_params(neo4j_settings)
    store = Neo4jVector.from_existing_index(
        embedding=embeddings,
        url=uri,
        username=user,
        password=password,
        database=neo4j_settings.neo4j_database,
        index_name="chunk_embedding",
        text_node_property="text",
    )
    try:
        docs = store.similarity_search(QUESTION, k=4)
    finally:
        store._driver.close()
    assert [d.metadata["id"] for d in docs] == vector_chunks(corpus, 4)
    assert docs[0].metadata["doc_title"] in SUBJECT


def test_graphrag_through_v1_embeddings_finds_what_retrieve_finds(
    url: str, corpus: GraphStrata, neo4j_settings: Settings
) -> None:
    from neo4j import GraphDatabase
    from neo4j_graphrag.embeddings import OpenAIEmbeddings
    from neo4j_graphrag.retrievers import VectorRetriever

    embedder = OpenAIEmbeddings(model="graphstrata-embed", base_url=f"{url}/v1", api_key=KEY)
    uri, auth = connection_params(neo4j_settings)
    with GraphDatabase.driver(uri, auth=auth) as driver:
        retriever = VectorRetriever(
            driver,
            "chunk_embedding",
            embedder,
            return_properties=["id", "doc_title"],
            neo4j_database=neo4j_settings.neo4j_database,
        )
        records = retriever.get_search_results(query_text=QUESTION, top_k=4).records
    ids = [r["node"]["id"] for r in records]
    assert ids == vector_chunks(corpus, 4)
