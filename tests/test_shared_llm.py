"""One LLM client per GraphStrata: every model call of retrieval, answering and augmentation goes through
it (one cache, one usage ledger, one concurrency bound), and no other client is opened."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest.pipeline import IngestOptions
from graphstrata.llm import LLMClient
from tests.fake_openai import fake_llm_settings

pytest_plugins = ["tests.conftest_llm"]

DOCS = [
    ("Curie", "Marie Curie was born in Warsaw. Marie Curie won the Nobel Prize in Physics in 1903."),
    ("Warsaw", "Warsaw is the capital of Poland. Warsaw lies on the Vistula river."),
    ("Nobel", "The Nobel Prize in Physics was first awarded in 1901 in Stockholm."),
]


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[LLMClient]:
    """Every LLMClient made through from_settings, in order."""
    made: list[LLMClient] = []
    original = LLMClient.from_settings.__func__

    def counting(cls, settings=None, **overrides):
        made.append(original(cls, settings, **overrides))
        return made[-1]

    monkeypatch.setattr(LLMClient, "from_settings", classmethod(counting))
    return made


def test_retrieval_answers_and_augment_share_the_clients_ledger(
    graph: Database, neo4j_settings: Settings, fake_openai, tmp_path: Path, opened: list[LLMClient]
) -> None:
    settings = fake_llm_settings(neo4j_settings, fake_openai, tmp_path / "cache")
    with GraphStrata(settings, db=graph) as gs:
        gs.ingest_texts(DOCS, IngestOptions(extractor="spacy"))
        gs.augment(stages=["important_entities", "communities"])
        answer = gs.ask("Where was Marie Curie born?", method="hipporag")
        gs.retrieve("Which prize did Marie Curie win?", method="noderag")
        gs.retrieve("Marie Curie born in Warsaw", method="sgrag")
        usage = gs.llm.usage()
    assert answer.answer and answer.answer.startswith("Fake answer")
    # linking (hipporag, noderag), the answer, SG-RAG's query graph and augment's summaries: one ledger
    assert {"query_entities", "answer", "attribute", "high_level"} <= set(usage), usage
    assert usage["query_entities"]["calls"] + usage["query_entities"].get("cache_hits", 0) >= 2
    assert len(opened) == 1, f"{len(opened)} clients opened: one per GraphStrata"
