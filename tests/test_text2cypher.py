"""Questions in plain language (`graphstrata cypher --ask`): the fake OpenAI server plays a model that
writes a valid read, a write, or broken Cypher; the query is shown, checked read-only against the
real Neo4j and run, refused, or reported."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner, Result

from graphstrata import text2cypher
from graphstrata.analysts import WriteRefused
from graphstrata.cli import app
from graphstrata.config import Settings, get_settings
from graphstrata.db import Database
from graphstrata.ingest.pipeline import IngestOptions

try:
    from tests.conftest_llm import make_llm_client
    from tests.fake_openai import CHAT_MODEL, FakeOpenAI
except ModuleNotFoundError:  # tests/ is no package
    from conftest_llm import make_llm_client  # type: ignore[no-redef]
    from fake_openai import CHAT_MODEL, FakeOpenAI  # type: ignore[no-redef]

READ = "MATCH (d:Document) RETURN d.title AS title ORDER BY title"
WRITE = "MATCH (d:Document) DETACH DELETE d"
BROKEN = "MATCH (d:Document RETURN d.title"


class CypherModel(FakeOpenAI):
    """Answers a text-to-Cypher prompt with ``self.cypher`` (as JSON), and records the prompt."""

    cypher = READ
    prompts: list[str]

    def chat_reply(self, messages: list[dict[str, Any]], failure: str | None) -> str:
        if messages and messages[0].get("content") == text2cypher.SYSTEM:
            self.prompts.append(messages[-1]["content"])
            return json.dumps({"cypher": self.cypher + ";", "explanation": "the titles of all documents"})
        return super().chat_reply(messages, failure)


@pytest.fixture
def model() -> Iterator[CypherModel]:
    with CypherModel() as fake:
        fake.prompts = []
        yield fake


@pytest.fixture
def docs(graph: Database, neo4j_settings: Settings) -> Database:
    from graphstrata.client import GraphStrata

    with GraphStrata(neo4j_settings, db=graph) as gs:
        gs.ingest_texts(
            [("Kur", "Kur is the Sumerian underworld."), ("Alû", "Alû is a demon.")], IngestOptions(extractor="spacy")
        )
    return graph


def cli(settings: Settings, tmp_path: Path, *args: str, fake: FakeOpenAI | None = None) -> Result:
    env: dict[str, str | None] = dict.fromkeys(("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHSTRATA_CHAT_MODEL"))
    env.update(settings.subprocess_env(COLUMNS="100", GRAPHSTRATA_CACHE_DIR=str(tmp_path / "cache")))
    if fake is not None:
        env.update(OPENAI_API_KEY=fake.api_key, OPENAI_BASE_URL=fake.base_url, GRAPHSTRATA_CHAT_MODEL=CHAT_MODEL)
    get_settings.cache_clear()
    try:
        return CliRunner().invoke(app, list(args), env=env)
    finally:
        get_settings.cache_clear()


def test_valid_read_is_shown_and_run(
    docs: Database, model: CypherModel, tmp_path: Path, neo4j_settings: Settings
) -> None:
    with make_llm_client(model, tmp_path / "c") as llm:
        answer = text2cypher.ask(docs, llm, "Which documents are there?")
    assert answer.cypher == READ  # trailing semicolon dropped
    assert answer.rows == [{"title": "Alû"}, {"title": "Kur"}]
    # the prompt carries the documented data model and the labels the database has now
    assert "# The graphstrata data model" in model.prompts[0] and ":`Document` {" in model.prompts[0]
    # of the document, what the layers are and how labels connect; the property tables come live
    assert "| `HAS_CHUNK` | Document → Chunk |" in model.prompts[0] and "## Layers at a glance" in model.prompts[0]
    assert "### `Document`" not in model.prompts[0] and len(model.prompts[0]) < 8_000

    result = cli(neo4j_settings, tmp_path, "cypher", "--ask", "Which documents are there?", fake=model)
    assert result.exit_code == 0, result.output
    assert READ in result.stderr  # shown before it runs
    assert result.stdout.splitlines() == ["result:", "  title  Alû", "  title  Kur", "2 row(s)"]


def test_write_is_refused_and_nothing_changes(
    docs: Database, model: CypherModel, tmp_path: Path, neo4j_settings: Settings
) -> None:
    model.cypher = WRITE
    with make_llm_client(model, tmp_path / "c") as llm, pytest.raises(WriteRefused, match="writes data"):
        text2cypher.ask(docs, llm, "Delete every document")
    result = cli(neo4j_settings, tmp_path, "cypher", "--ask", "Delete every document", fake=model)
    assert result.exit_code == 5, result.output
    assert WRITE in result.stderr and "refused: this statement writes data" in result.stderr
    assert docs.read_one("MATCH (d:Document) RETURN count(d) AS n")["n"] == 2


def test_invalid_cypher_is_a_clear_error(
    docs: Database, model: CypherModel, tmp_path: Path, neo4j_settings: Settings
) -> None:
    model.cypher = BROKEN
    with make_llm_client(model, tmp_path / "c") as llm, pytest.raises(text2cypher.CypherError) as info:
        text2cypher.ask(docs, llm, "Titles?")
    assert str(info.value).startswith("the query is not valid Cypher: ") and info.value.cypher == BROKEN
    result = cli(neo4j_settings, tmp_path, "cypher", "--ask", "Titles?", fake=model)
    assert result.exit_code == 1, result.output
    assert BROKEN in result.stderr
    assert "error: the generated query is not valid Cypher: Neo.ClientError.Statement.SyntaxError" in result.stderr
    assert "Traceback" not in result.output


def test_no_llm_says_so(docs: Database, tmp_path: Path, neo4j_settings: Settings) -> None:
    result = cli(neo4j_settings, tmp_path, "cypher", "--ask", "Titles?")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: text-to-Cypher needs a language model and none is configured")


def test_api_route(docs: Database, model: CypherModel, tmp_path: Path, neo4j_settings: Settings) -> None:
    from fastapi.testclient import TestClient

    from graphstrata.server import create_app

    settings = neo4j_settings.model_copy(
        update={
            "openai_api_key": model.api_key,
            "openai_base_url": model.base_url,
            "chat_model": CHAT_MODEL,
            "cache_dir": tmp_path / "cache",
            "api_key": SecretStr("k"),  # TestClient's peer is no loopback address
        }
    )
    with TestClient(create_app(settings, host="127.0.0.1"), headers={"Authorization": "Bearer k"}) as http:
        ok = http.post("/cypher/ask", json={"question": "Which documents are there?"})
        assert ok.status_code == 200, ok.text
        assert ok.json()["cypher"] == READ and ok.json()["rows"] == [{"title": "Alû"}, {"title": "Kur"}]
        model.cypher = WRITE
        refused = http.post("/cypher/ask", json={"question": "Delete every document"})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "write_refused"
        model.cypher = BROKEN
        bad = http.post("/cypher/ask", json={"question": "Titles?"})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_cypher"
        assert BROKEN in bad.json()["error"]["message"]
    assert docs.read_one("MATCH (d:Document) RETURN count(d) AS n")["n"] == 2
