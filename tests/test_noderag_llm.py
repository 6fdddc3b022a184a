"""NodeRAG's LLM-written layers (§2.3.1 attributes, §2.3.2 high-level elements) through the fake
OpenAI server: what the prompts carry and what the graph gets from the replies."""

from __future__ import annotations

import json
import re

import pytest

from graphstrata.augment import AugmentContext, run
from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest.pipeline import IngestOptions
from graphstrata.summarize import PROMPT_TOKENS
from graphstrata.text.tokens import count_tokens

pytest_plugins = ["tests.conftest_llm"]

CITIES = ["Paris", "Lyon", "Lille", "Nantes", "Nice", "Rennes", "Dijon", "Tours", "Metz", "Brest", "Caen", "Pau"]
# Marie Curie is mentioned by 24 statements: more than the 12 per kind the old prompt kept
CURIE = " ".join(
    f"Marie Curie lectured in {city} in {1890 + i}. Marie Curie met Pierre Curie in {city} in {1900 + i}."
    for i, city in enumerate(CITIES)
)
DOCS = [
    ("Curie", CURIE),
    ("Rivers", "The Seine flows through Paris. The Loire flows past Tours. The Rhone flows through Lyon."),
    ("Science", "Pierre Curie studied magnetism in Paris. Marie Curie discovered polonium in Paris."),
]


def scripted(messages: list[dict], failure: str | None) -> str:
    prompt = messages[-1]["content"]
    if "high-level elements" in prompt:
        first = re.findall(r"^- (.+)$", prompt, re.M)[0]
        return json.dumps(
            {
                "elements": [
                    {"title": "Shared theme", "description": f"A theme: {first}"},
                    {"title": "Second insight", "description": "Another idea the statements share."},
                ]
            }
        )
    if "attribute summary" in prompt:
        return "An attribute summary."
    return "A summary."


@pytest.fixture
def llm_ctx(graph: Database, neo4j_settings: Settings, llm_client, fake_openai) -> AugmentContext:
    gs = GraphStrata(neo4j_settings, db=graph)
    gs.ingest_texts(DOCS, IngestOptions(extractor="spacy"))
    fake_openai.chat_reply = scripted
    fake_openai.reset()
    return AugmentContext(graph, gs.embedder, neo4j_settings, llm=llm_client)


def prompts(fake_openai, marker: str) -> list[str]:
    return [
        r["body"]["messages"][-1]["content"]
        for r in fake_openai.requests
        if r.get("path") == "/v1/chat/completions" and marker in r["body"]["messages"][-1]["content"]
    ]


def test_attribute_prompt_carries_all_the_entity_statements(llm_ctx: AugmentContext, fake_openai) -> None:
    run(llm_ctx, ["important_entities"])
    curie = llm_ctx.db.read_one(
        "MATCH (e:Entity {normalized: 'marie curie'}) RETURN e.important AS important, "
        "COUNT { (:SemanticUnit)-[:MENTIONS]->(e) } + COUNT { (e)-[:SUBJECT_OF|OBJECT]-(:Relation) } AS statements"
    )
    assert curie["important"] and curie["statements"] > 24
    sent = [p for p in prompts(fake_openai, "attribute summary") if "'Marie Curie'" in p]
    assert len(sent) == 1
    listed = re.findall(r"^- (.+)$", sent[0], re.M)
    assert len(listed) == curie["statements"]  # all of them (the old prompt stopped at 12 + 12)
    assert llm_ctx.db.read_one(
        "MATCH (:Entity {normalized: 'marie curie'})-[:HAS_ATTRIBUTE]->(a) RETURN a.text AS t, a.extractor AS x"
    ) == {"t": "Marie Curie: An attribute summary.", "x": "llm"}


def test_communities_get_the_models_high_level_elements_with_titles(llm_ctx: AugmentContext, fake_openai) -> None:
    run(llm_ctx, ["important_entities", "communities"])
    asked = prompts(fake_openai, "high-level elements")
    assert asked and all(count_tokens(p) < PROMPT_TOKENS + 200 for p in asked)
    rows = llm_ctx.db.read(
        "MATCH (h:HighLevel)-[:OF_COMMUNITY]->(c:Community) MATCH (o:Overview)-[:TITLES]->(h) "
        "RETURN c.id AS c, h.text AS text, o.title AS title, h.extractor AS x, h.embedding IS NOT NULL AS v"
    )
    by_community: dict[str, list[dict]] = {}
    for r in rows:
        by_community.setdefault(r["c"], []).append(r)
    assert len(by_community) == len(asked)  # one call per community with enough statements
    for elements in by_community.values():  # two H per community, each with its own O
        assert sorted(e["title"] for e in elements) == ["Second insight", "Shared theme"]
        assert all(e["x"] == "llm" and e["v"] for e in elements)


def test_statements_beyond_the_prompt_limit_are_left_out_least_central_first() -> None:
    import numpy as np

    from graphstrata.summarize import prompt_statements

    texts = ["near the centre " * 3, "far away outlier " * 40, "close to centre " * 3]
    vectors = np.array([[1.0, 0.0], [-1.0, 0.2], [0.95, 0.05]])
    budget = count_tokens(texts[0]) + count_tokens(texts[2]) + 5
    # most central first: the centroid (0.34, 0.08) is nearest texts[2], then texts[0]
    assert prompt_statements(texts, vectors, budget) == [texts[2], texts[0]]
    assert prompt_statements(texts, vectors, 10_000) == [texts[2], texts[0], texts[1]]
