"""Steerable extraction: an extraction schema (entity and relation types, a prompt) is validated,
steers the LLM prompt, bounds what is stored, is recorded on the graph, and a later ingest with
another schema is refused; `graphstrata prompt-tune` drafts one. The LLM is the fake OpenAI server
(its extraction replies are spaCy's reading of the chunk between the prompt's text markers)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graphstrata.cli import app
from graphstrata.client import GraphStrata
from graphstrata.config import Settings, get_settings
from graphstrata.db import Database
from graphstrata.ingest.extract import (
    ENTITY_TYPES,
    EXTRACTION_PROMPT,
    TEXT_BEGIN,
    TEXT_END,
    ExtractionSchema,
    ExtractionSchemaMismatch,
    extraction_messages,
)
from graphstrata.ingest.pipeline import IngestOptions
from graphstrata.ingest.tune import TUNE_SYSTEM

try:
    from tests.fake_openai import CHAT_MODEL, FakeOpenAI
except ModuleNotFoundError:  # tests/ is no package
    from fake_openai import CHAT_MODEL, FakeOpenAI  # type: ignore[no-redef]

TEXT = (
    "Stephen King directed Maximum Overdrive. Maximum Overdrive was shot in Leland, North Carolina. "
    "Emilio Estevez starred in the film."
)
FILMS = {
    "domain": "films and the people who make them",
    "entity_types": ["Person", "film"],
    "relation_types": ["Direct"],
    "prompt": '-Goal-\nFind the people and films in the text. Entity "type" is one of: {types}.\n',
}


def test_schema_is_validated_and_normalised(tmp_path: Path) -> None:
    schema = ExtractionSchema.model_validate(FILMS)
    assert schema.entity_types == ["PERSON", "FILM", "OTHER"]
    assert schema.relation_types == ["direct"]
    with pytest.raises(ValueError, match="text markers"):
        ExtractionSchema(prompt=f"steps {TEXT_BEGIN}")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"entity_types": [], "colour": "red"}))
    with pytest.raises(ValueError, match=r"not a valid extraction schema: entity_types: .*colour: Extra inputs"):
        ExtractionSchema.from_file(bad)


def test_default_prompt_is_unchanged() -> None:
    # the built-in schema must reproduce the prompt the LLM caches of existing graphs were made with
    text = "Kur is the {underworld}."
    expected = EXTRACTION_PROMPT.format(types=", ".join(ENTITY_TYPES), begin=TEXT_BEGIN, text=text, end=TEXT_END)
    assert extraction_messages(text)[1]["content"] == expected


@pytest.fixture
def llm_settings(neo4j_settings: Settings, tmp_path: Path) -> Iterator[tuple[Settings, FakeOpenAI]]:
    with FakeOpenAI() as fake:
        yield (
            neo4j_settings.model_copy(
                update={
                    "openai_api_key": fake.api_key,
                    "openai_base_url": fake.base_url,
                    "chat_model": CHAT_MODEL,
                    "cache_dir": tmp_path / "cache",
                }
            ),
            fake,
        )


def extraction_prompts(fake: FakeOpenAI) -> list[str]:
    return [r["body"]["messages"][1]["content"] for r in fake.requests if r["path"] == "/v1/chat/completions"]


def test_schema_steers_llm_extraction_and_is_recorded(graph: Database, llm_settings: tuple[Settings, FakeOpenAI]):
    settings, fake = llm_settings
    films = ExtractionSchema.model_validate(FILMS)
    with GraphStrata(settings, db=graph) as gs:
        report = gs.ingest_texts([("Maximum Overdrive", TEXT)], IngestOptions(extraction_schema=films))
    assert report.extracted_chunks == 1 and not report.failed_chunks

    (prompt,) = extraction_prompts(fake)
    assert prompt.startswith(
        '-Goal-\nFind the people and films in the text. Entity "type" is one of: PERSON, FILM, OTHER.'
    )
    assert '"predicate" is one of: direct.' in prompt and "semantic units" not in prompt.split(TEXT_BEGIN)[0]

    # the model (spaCy here) typed Leland and North Carolina LOCATION, "film" CONCEPT: outside the schema
    types = graph.read_one(
        "MATCH (:Chunk)-[m:MENTIONS {extractor: 'llm'}]->(e:Entity) RETURN collect(DISTINCT m.type) AS t"
    )["t"]
    assert set(types) <= {"PERSON", "FILM", "OTHER", "UNKNOWN"} and "OTHER" in types and "LOCATION" not in types
    predicates = graph.read_one("MATCH (r:Relation) RETURN collect(DISTINCT r.predicate) AS p")["p"]
    assert predicates == ["direct"]  # "shot in", "star in" are not relation types of the schema

    meta = graph.read_one("MATCH (m:GraphStrata {id: 'meta'}) RETURN m.extraction_schema_fingerprint AS f")
    assert meta["f"] == films.fingerprint()

    # another schema (here: the built-in one) is refused before anything is extracted or written
    calls = fake.calls
    with GraphStrata(settings, db=graph) as gs, pytest.raises(ExtractionSchemaMismatch, match="another schema"):
        gs.ingest_texts([("Kur", "Kur is the Sumerian underworld.")])
    assert fake.calls == calls
    assert graph.read_one("MATCH (d:Document {title: 'Kur'}) RETURN count(d) AS n")["n"] == 0
    # … unless the change is allowed, which records the new schema
    with GraphStrata(settings, db=graph) as gs:
        gs.ingest_texts([("Kur", "Kur is the Sumerian underworld.")], IngestOptions(allow_schema_change=True))
    meta = graph.read_one("MATCH (m:GraphStrata {id: 'meta'}) RETURN m.extraction_schema_fingerprint AS f")
    assert meta["f"] == ExtractionSchema().fingerprint()


class TuningModel(FakeOpenAI):
    """Answers the prompt-tuning request with a film schema and keeps the request."""

    tune_requests: list[str]

    def chat_reply(self, messages: list[dict[str, Any]], failure: str | None) -> str:
        if messages and messages[0].get("content") == TUNE_SYSTEM:
            self.tune_requests.append(messages[1]["content"])
            return json.dumps(FILMS)
        return super().chat_reply(messages, failure)


def test_prompt_tune_drafts_a_schema_that_ingest_accepts(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(12):
        (corpus / f"film{i:02}.txt").write_text(f"Film number {i} was directed by Director {i}.")
    out = tmp_path / "schema.json"
    with TuningModel() as fake:
        fake.tune_requests = []
        env = {
            "OPENAI_API_KEY": fake.api_key,
            "OPENAI_BASE_URL": fake.base_url,
            "GRAPHSTRATA_CHAT_MODEL": CHAT_MODEL,
            "GRAPHSTRATA_CACHE_DIR": str(tmp_path / "cache"),
        }
        get_settings.cache_clear()
        try:
            result = CliRunner().invoke(app, ["prompt-tune", str(corpus), "--out", str(out), "--samples", "4"], env=env)
        finally:
            get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    (request,) = fake.tune_requests
    assert [n for n in range(12) if f"Film number {n} " in request] == [0, 4, 7, 11]  # spread over the corpus
    assert ExtractionSchema.from_file(out) == ExtractionSchema.model_validate(FILMS)
    assert f"graphstrata ingest --schema {out}" in result.stderr


def test_prompt_tune_without_a_model_says_so(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Some text.")
    env = dict.fromkeys(("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHSTRATA_CHAT_MODEL", "OPENAI_MODEL"))
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(app, ["prompt-tune", str(tmp_path)], env=env)
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 1
    assert result.stderr.startswith("error: prompt-tune asks a language model and none is configured")
