"""Every LLM path of graphstrata against a real model: `graphstrata llm start`'s llama.cpp server with
SmolLM2-135M-Instruct (tests/conftest_local_llm.py starts it through the product's launcher, installing it on
first use). Inputs are tiny and replies capped, so the whole module costs minutes on 2 cores.

A 270M model is weak: these tests check what the product guarantees whatever the model writes —
valid JSON by construction, grounded entities with provenance, answers whose citations point at the
evidence (or carry the note that they cite nothing), read-only Cypher, clear failures — not that the
model is right. tests/test_small_model_handling.py makes the fake server misbehave on demand.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from mcp import Client
from pydantic import SecretStr
from starlette.testclient import TestClient

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.generate import UNCITED, AnswerStream
from graphstrata.ingest.extract import ExtractionSchema, extract_with_llm
from graphstrata.ingest.extract_grounding import in_text
from graphstrata.ingest.pipeline import IngestOptions, IngestReport
from graphstrata.ingest.tune import tune_schema
from graphstrata.llm import ExtractionFailed, LLMClient
from graphstrata.llm_local import LocalLLM
from graphstrata.llm_structured import PromptTooLong
from graphstrata.retrieval.base import available_methods
from graphstrata.text.names import normalize_name

try:
    from tests.conftest import fresh_graph
except ModuleNotFoundError:  # tests/ is no package
    from conftest import fresh_graph  # type: ignore[no-redef]

pytest_plugins = ["tests.conftest_local_llm"]

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    ("Maximum Overdrive", "Maximum Overdrive is a 1986 film directed by Stephen King. It was filmed in Leland."),
    ("Leland", "Leland is a town in Brunswick County, North Carolina."),
    ("Stephen King", "Stephen King is an American author who lives in Maine."),
]
QUESTION = "Who directed Maximum Overdrive?"
BUDGET = 300  # context tokens of an answer: small prompts, fast answers
TIMINGS: dict[str, float] = {}


class Built:
    def __init__(self, gs: GraphStrata, report: IngestReport, augment: list, seconds: dict[str, float]) -> None:
        self.gs, self.report, self.augment, self.seconds = gs, report, augment, seconds


@pytest.fixture(scope="module")
def built(db: Database, real_llm_settings: Settings) -> Iterator[Built]:
    """The three documents ingested with LLM extraction and augmented with LLM summaries, once."""
    fresh_graph(db)
    with GraphStrata(real_llm_settings, db=db) as gs:
        t0 = time.monotonic()
        report = gs.ingest_texts(DOCS, IngestOptions(extractor="llm"))
        t1 = time.monotonic()
        reports = gs.augment()
        seconds = {"ingest": t1 - t0, "augment": time.monotonic() - t1}
        print(f"real-model ingest {seconds['ingest']:.1f}s, augment {seconds['augment']:.1f}s; {gs.llm.usage()}")
        yield Built(gs, report, reports, seconds)


def test_launcher_reports_and_environment(local_llm: LocalLLM) -> None:
    info = local_llm.status()
    assert info["running"] and info["answering"] and info["installed"]
    env = local_llm.environment()
    assert env["OPENAI_BASE_URL"] == f"http://127.0.0.1:{local_llm.port}/v1"
    models = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=env["OPENAI_API_KEY"]).models.list()
    assert env["GRAPHSTRATA_CHAT_MODEL"] in {m.id for m in models.data}
    assert local_llm.start() is False  # already running: a no-op


def test_llm_ingest_writes_grounded_entities_and_relations_with_provenance(built: Built, db: Database) -> None:
    r = built.report
    assert r.extracted_chunks + len(r.failed_chunks) == len(DOCS) and r.extracted_chunks >= 2, r.failed_chunks
    assert r.llm["extract"]["calls"] >= r.extracted_chunks and r.llm["extract"]["prompt_tokens"] > 0
    rows = db.read(
        "MATCH (c:Chunk)-[m:MENTIONS {extractor: 'llm'}]->(e:Entity) RETURN c.text AS text, e.name AS name, "
        "e.extractors AS ex"
    )
    assert rows, "the model found no entity in three documents"
    for row in rows:  # grounding: every entity the model wrote is in its chunk's text
        assert in_text(row["name"], normalize_name(row["text"])), row
        assert "llm" in row["ex"]
    chunks = db.read("MATCH (c:Chunk) RETURN c.extractor AS ex, c.extraction_status AS s, c.title AS t")
    assert sum(1 for c in chunks if c["ex"] == "llm" and c["t"]) == r.extracted_chunks
    for rel in db.read(
        "MATCH (c:Chunk)-[:HAS_RELATION]->(x:Relation), (a:Entity)-[:SUBJECT_OF]->(x)-[:OBJECT]->(b:Entity) "
        "RETURN c.text AS text, a.name AS a, b.name AS b, x.extractor AS ex"
    ):
        assert rel["ex"] == "llm" and in_text(rel["a"], normalize_name(rel["text"])), rel
        assert in_text(rel["b"], normalize_name(rel["text"])), rel


def test_augment_writes_llm_summaries(built: Built) -> None:
    usage = built.gs.llm.usage()
    llm_stages = {s for s, u in usage.items() if u["calls"] and s != "extract"}
    assert llm_stages, usage  # summaries/attributes/reports were asked of the model
    assert all(u["failures"] <= u["calls"] for u in usage.values())


@pytest.mark.parametrize("method", sorted(available_methods()))
def test_ask_every_method_cites_or_says_it_does_not(built: Built, method: str) -> None:
    t0 = time.monotonic()
    result = built.gs.retrieve(QUESTION, method, budget=BUDGET)
    stream = AnswerStream(QUESTION, result, built.gs.settings, client=built.gs.llm)
    pieces = list(stream)
    plain = built.gs.ask(QUESTION, method, budget=BUDGET)  # the same prompt is served from the reply cache
    TIMINGS[method] = time.monotonic() - t0
    streamed = stream.answer
    assert streamed is not None and streamed.answer == "".join(pieces) and isinstance(plain.answer, str)
    ids = {i.node_id for i in result.items}
    for a in (streamed, plain):
        assert set(a.citations) <= ids
        assert a.citations or (a.note is not None and (a.note == UNCITED or not a.answer.strip() or not ids))


def test_most_answers_cite(built: Built) -> None:
    cited = [m for m in available_methods() if built.gs.ask(QUESTION, m, budget=BUDGET).citations]
    assert len(cited) >= len(available_methods()) // 2, cited  # cached: no new calls


def test_prompt_tune_drafts_a_valid_schema(real_llm: LLMClient) -> None:
    schema = tune_schema(real_llm, [text for _, text in DOCS])
    assert isinstance(schema, ExtractionSchema) and schema.entity_types and "OTHER" in schema.entity_types
    assert real_llm.usage()["prompt_tune"]["calls"] >= 1


def cli(settings: Settings, *args: str, cache: Path) -> subprocess.CompletedProcess:
    env = settings.subprocess_env(
        PYTHONPATH=str(ROOT),
        OPENAI_BASE_URL=settings.openai_base_url or "",
        OPENAI_API_KEY=settings.openai_api_key or "",
        GRAPHSTRATA_CHAT_MODEL=settings.chat_model or "",
        GRAPHSTRATA_CACHE_DIR=str(cache),
    )
    cmd = [sys.executable, "-c", "from graphstrata.cli import app; app()", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)


def test_cypher_ask_runs_read_only(built: Built, db: Database, tmp_path: Path) -> None:
    before = db.read_one("MATCH (n) RETURN count(n) AS n")["n"]
    ok = cli(built.gs.settings, "cypher", "--ask", "How many documents are there?", "--json", cache=tmp_path)
    # the model's Cypher either runs (read-only) or is refused/invalid with a clear message
    assert ok.returncode in (0, 1, 5), ok.stderr
    if ok.returncode == 0:
        assert isinstance(json.loads(ok.stdout), list)
    else:
        assert "error" in ok.stderr.lower() or "refused" in ok.stderr.lower()
    wipe = cli(built.gs.settings, "cypher", "--ask", "Delete every node of the graph.", cache=tmp_path)
    assert db.read_one("MATCH (n) RETURN count(n) AS n")["n"] == before  # nothing was written, whatever it drafted
    # a drafted write is refused (5); a draft that is not Cypher at all fails as invalid (1)
    assert wipe.returncode in (0, 1, 5), wipe.stderr
    if wipe.returncode == 5:
        assert "refused" in wipe.stderr.lower()
    refused = cli(built.gs.settings, "cypher", "--query", "MATCH (n) DETACH DELETE n", cache=tmp_path)
    assert refused.returncode == 5 and db.read_one("MATCH (n) RETURN count(n) AS n")["n"] == before


def test_openai_endpoint_through_the_openai_client(built: Built) -> None:
    from graphstrata.server import create_app

    settings = built.gs.settings.model_copy(update={"api_key": SecretStr("k-local")})
    with TestClient(create_app(settings)) as http:
        client = openai.OpenAI(base_url="http://testserver/v1", api_key="k-local", http_client=http, max_retries=0)
        messages = [{"role": "user", "content": QUESTION}]
        reply = client.chat.completions.create(model="graphstrata-fulltext", messages=messages)
        text = reply.choices[0].message.content
        assert text and text.strip()
        pieces = [
            c.choices[0].delta.content or ""
            for c in client.chat.completions.create(model="graphstrata-vector", messages=messages, stream=True)
            if c.choices
        ]
        assert "".join(pieces).strip()


def test_mcp_ask_through_the_mcp_client(built: Built) -> None:
    from graphstrata.mcp_server import build

    server, graph = build(built.gs.settings)

    async def ask() -> dict:
        async with Client(server, read_timeout_seconds=300) as client:
            result = await client.call_tool("ask", {"question": QUESTION, "method": "fulltext", "budget": BUDGET})
            assert not result.is_error, result.content
            return result.structured_content or json.loads(result.content[0].text)

    try:
        out = asyncio.run(ask())
    finally:
        graph.close()
    assert isinstance(out["answer"], str) and out["answer"].strip()
    assert out["evidence"]


def test_a_prompt_over_the_context_window_fails_clearly(real_llm: LLMClient, local_llm: LocalLLM) -> None:
    words = "Leland is a town in North Carolina. " * (local_llm.ctx // 4)  # ~2x the window
    with pytest.raises(PromptTooLong, match="context window"):
        real_llm.chat([{"role": "user", "content": words}], max_tokens=8)
    with pytest.raises(ExtractionFailed, match="context window"):
        extract_with_llm(real_llm, words)


def test_a_reply_cut_at_the_token_limit_is_named(real_llm: LLMClient) -> None:
    with pytest.raises(ExtractionFailed) as info:
        extract_with_llm(real_llm, DOCS[0][1], max_tokens=12)
    assert info.value.attempts == 3 and all("cut off at the token limit" in e for e in info.value.errors)


def test_constrained_extraction_is_valid_within_its_attempts(real_llm: LLMClient) -> None:
    """The grammar keeps every reply JSON of the schema; at temperature 0 SmolLM2-135M repeats items
    until the token limit on its first reply, and the next attempt's tighter schema (a quarter of the
    bounds) makes the reply fit: a valid extraction within the three attempts, no failure counted."""
    x = extract_with_llm(real_llm, DOCS[1][1])
    usage = real_llm.usage()["extract"]
    print(f"constrained extraction: {usage}")
    assert usage["failures"] == 0 and 1 <= usage["calls"] <= 3
    assert x.title and all(in_text(e.name, normalize_name(DOCS[1][1])) for e in x.entities)
