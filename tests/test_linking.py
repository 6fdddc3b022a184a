"""The knowledge-graph layer's quality: entity resolution (SYNONYM links), query linking (LLM through
the fake OpenAI server, spaCy offline, word-level matching, specificity) and evidence without
repeated text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphstrata.algorithms.synonyms import Named, embedding_links, initials, merge_links, string_links
from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.retrieval import linking
from graphstrata.retrieval.base import ContextItem, dedupe
from graphstrata.retrieval.noderag import personalization
from graphstrata.text.names import normalize_name

pytest_plugins = ["tests.conftest_llm"]


def named(name: str, typ: str | None = None) -> Named:
    return Named(id=normalize_name(name), name=name, normalized=normalize_name(name), type=typ)


# --- entity resolution: string rules on hand-made names ------------------------------------------
def test_string_rules_link_qualified_names_and_acronyms() -> None:
    ents = [
        named("Maximum Overdrive (film)", "WORK_OF_ART"),
        named("Maximum Overdrive", "WORK_OF_ART"),
        named("Leland (North Carolina)", "GPE"),
        named("Leland", "PERSON"),  # same base name, another known type: stays apart
        named("British Broadcasting Corporation", "ORG"),
        named("BBC", "ORG"),
        named("Bank of Brazil Corp", "ORG"),  # initials "bbc" with "of" skipped: also BBC
        named("Nolan"),
        named("Christopher Nolan", "PERSON"),  # no string rule makes a surname a synonym
    ]
    links = {(a, b): r for a, b, _, r in string_links(ents, normalize_name)}
    mo, mof = normalize_name("Maximum Overdrive"), normalize_name("Maximum Overdrive (film)")
    assert links[tuple(sorted((mo, mof)))] == "qualifier"
    assert links[tuple(sorted(("bbc", "british broadcasting corporation")))] == "acronym"
    assert links[tuple(sorted(("bbc", "bank of brazil corp")))] == "acronym"
    assert not any("leland" in a and "leland" in b for a, b in links)  # GPE vs PERSON
    assert not any("nolan" in a and "nolan" in b for a, b in links)
    assert len(links) == 3
    assert initials("the united states of america") == "usa" and initials("new york") is None


def test_embedding_links_agree_with_brute_force_and_respect_types() -> None:
    rng = np.random.default_rng(7)
    base = rng.normal(size=(6, 16))
    vecs = np.vstack([base, base[:3] + 0.01 * rng.normal(size=(3, 16))])  # 6..8 near-copies of 0..2
    ents = [named(f"name {i}", "PERSON" if i != 7 else "GPE") for i in range(9)]
    links = embedding_links(ents, vecs, threshold=0.95, block=4)  # blocks smaller than the input
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    cos = unit @ unit.T
    expected = {
        tuple(sorted((ents[i].id, ents[j].id)))
        for i in range(9)
        for j in range(i + 1, 9)
        if cos[i, j] >= 0.95 and ents[i].type == ents[j].type
    }
    assert {(a, b) for a, b, _, _ in links} == expected
    assert len(expected) == 2  # 0~6, 2~8; 1~7 is a different type
    a, b, score, _ = links[0]
    merged = merge_links(links, [(a, b, 1.0, "qualifier")])  # one pair found by two rules: one link
    assert len(merged) == len(links) and all(r["a"] < r["b"] for r in merged)
    both = next(r for r in merged if (r["a"], r["b"]) == (a, b))
    assert both["rules"] == ["embedding", "qualifier"] and both["score"] == 1.0 > score


# --- the stage on a real graph, and linking through it ---------------------------------------------
KNOWN = [
    {
        "id": "k1",
        "title": "Maximum Overdrive",
        "text": "Maximum Overdrive is a 1986 film directed by Stephen King. It was shot in Leland.",
        "entities": ["Maximum Overdrive (film)", "Stephen King", "Leland"],
        "triples": [
            ["Maximum Overdrive (film)", "directed by", "Stephen King"],
            ["Maximum Overdrive (film)", "shot in", "Leland"],
        ],
    },
    {
        "id": "k2",
        "title": "Stephen King",
        "text": "Stephen King is an author from Maine. King wrote Carrie.",
        "entities": ["Stephen King", "Maine", "Carrie"],
        "triples": [["Stephen King", "from", "Maine"], ["Stephen King", "wrote", "Carrie"]],
    },
    {
        "id": "k3",
        "title": "Leland",
        "text": "Leland is a town in North Carolina. Maximum Overdrive was filmed there.",
        "entities": ["Leland", "North Carolina", "Maximum Overdrive"],
        "triples": [["Leland", "in", "North Carolina"]],
    },
]


@pytest.fixture
def kg(graph: Database, neo4j_settings: Settings, tmp_path: Path) -> GraphStrata:
    path = tmp_path / "known.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in KNOWN))
    gs = GraphStrata(neo4j_settings, db=graph)
    gs.ingest_extractions(path)
    gs.augment(["entity_synonyms"])
    return gs


def test_synonym_stage_links_the_qualified_title(kg: GraphStrata) -> None:
    rows = kg.db.read(
        "MATCH (a:Entity)-[s:SYNONYM]->(b:Entity) RETURN a.name AS a, b.name AS b, s.rules AS rules, s.score AS score"
    )
    pairs = {frozenset((r["a"], r["b"])): r for r in rows}
    link = pairs[frozenset(("Maximum Overdrive (film)", "Maximum Overdrive"))]
    assert "qualifier" in link["rules"] and link["score"] == pytest.approx(1.0)
    assert all(r["a"] != r["b"] for r in rows)
    # re-running replaces, never duplicates
    kg.augment(["entity_synonyms"])
    assert kg.db.read_one("MATCH ()-[s:SYNONYM]->() RETURN count(s) AS n")["n"] == len(rows)


def test_linking_exact_words_synonyms_and_specificity(kg: GraphStrata) -> None:
    got = linking.link_entities(kg.db, ["Maximum Overdrive", "King", "Atlantis"]).entities
    by = {(e.query_name, e.name): e for e in got}
    assert by[("Maximum Overdrive", "Maximum Overdrive")].via == "exact"
    assert by[("Maximum Overdrive", "Maximum Overdrive (film)")].via == "synonym"  # through SYNONYM
    assert by[("King", "Stephen King")].via == "words"  # word-level: no entity is named just "King"
    assert not any(e.query_name == "Atlantis" for e in got)
    # specificity 1/|chunks mentioning it|, counted independently
    for e in got:
        n = kg.db.read_one("MATCH (c:Chunk)-[:MENTIONS]->(:Entity {id: $id}) RETURN count(c) AS n", id=e.id)["n"]
        assert e.chunks == n and e.specificity == pytest.approx(1 / n)


def test_accurate_search_matches_overview_titles_in_the_linking_round_trip(
    kg: GraphStrata, monkeypatch: pytest.MonkeyPatch
) -> None:
    titles = [f"Stephen King adaptation {i}" for i in range(6)] + ["Leland history", "Unrelated matters"]
    kg.db.write(
        "UNWIND range(0, size($titles) - 1) AS i CREATE (:Overview {id: 'o' + i, title: $titles[i]})", titles=titles
    )
    by_id = {f"o{i}": t for i, t in enumerate(titles)}
    reads: list[str] = []
    read = Database.read_plain
    monkeypatch.setattr(Database, "read_plain", lambda self, q, **kw: reads.append(q) or read(self, q, **kw))

    got = linking.link_entities(kg.db, ["Stephen King", "Leland"])
    assert len(reads) == 1  # entities and overview titles in one round trip
    assert {e.name for e in got.entities} >= {"Stephen King", "Leland"}
    hits = [by_id[o["id"]] for o in got.overviews]
    # seven titles hold one of the names as a phrase; the best OVERVIEW_K of them are kept
    assert len(hits) == linking.OVERVIEW_K == 5
    assert all("Stephen King" in h or "Leland" in h for h in hits)
    assert all(o["via"] == "exact" and o["label"] == "Overview" and o["score"] > 0 for o in got.overviews)
    assert [by_id[o["id"]] for o in linking.link_entities(kg.db, ["Leland"]).overviews] == ["Leland history"]
    assert len(linking.link_entities(kg.db, ["Atlantis"]).overviews) == 0
    assert linking.link_entities(kg.db, ['Lel"and \\ "']).overviews == []  # quotes and escapes are only text


def test_offline_query_entities_are_names_not_nouns() -> None:
    names = linking.spacy_query_entities("Which film did Stephen King direct in the town of Leland in 1986?")
    assert "Stephen King" in names and "Leland" in names
    assert not {"film", "town"} & {normalize_name(n) for n in names}


def test_llm_query_linking_through_the_fake_server(kg: GraphStrata, fake_openai: Any, tmp_path: Path) -> None:
    question = "Who directed the film shot in Leland?"
    seen: list[list[dict]] = []

    def reply(messages: list[dict], failure: str | None) -> str:
        seen.append(messages)
        assert messages[0]["content"] == linking.QUERY_ENTITIES_PROMPT
        return json.dumps({"entities": ["Leland", "Maximum Overdrive"]})

    fake_openai.chat_reply = reply
    settings = kg.settings.model_copy(
        update={
            "openai_api_key": fake_openai.api_key,
            "openai_base_url": fake_openai.base_url,
            "chat_model": "fake-chat",
            "cache_dir": tmp_path / "cache",
            "llm_timeout": 5.0,
        }
    )
    linking._CACHE.clear()
    names, source = linking.question_entities(question, settings)
    assert (names, source) == (["Leland", "Maximum Overdrive"], "llm")
    assert seen[0][1]["content"] == f"Question: {question}"
    # one call per question, shared: a second method asking again costs nothing
    gs = GraphStrata(settings, db=kg.db)
    res = gs.retrieve(question, "noderag")
    assert res.notes["entities_from"] == "llm" and len(seen) == 1
    assert any(link.startswith("Maximum Overdrive -> Maximum Overdrive") for link in res.notes["linked"])
    # an unusable model falls back to spaCy's names, and is asked again next time
    linking._CACHE.clear()
    fake_openai.chat_reply = lambda messages, failure: "no JSON here"
    names, source = linking.question_entities("Where is Leland?", settings)
    assert source == "spacy" and names == ["Leland"]


# --- evidence -----------------------------------------------------------------------------------
def item(i: str, text: str, chunks: list[str]) -> ContextItem:
    return ContextItem(node_id=i, label="X", text=text, score=0.0, why="", chunk_ids=chunks)


def test_dedupe_keeps_no_repeated_text() -> None:
    passage = "Leland is a town. Maximum Overdrive was filmed there."
    items = [
        item("s1", "Leland is a town.", ["c1"]),
        item("x", "Stephen King directed it.", ["c2"]),
        item("s2", "Maximum  Overdrive was filmed there.", ["c1"]),  # whitespace differs
        item("t", passage, ["c1"]),
        item("t-again", passage, ["c9"]),
    ]
    out = dedupe(items)
    assert [i.node_id for i in out] == ["t", "x"]  # the passage takes its first sentence's place
    assert out[0].chunk_ids == ["c1", "c9"]
    texts = [" ".join(i.text.split()).lower() for i in out]
    assert not any(a in b for n, a in enumerate(texts) for b in texts[:n] + texts[n + 1 :])


def test_weighted_personalization_is_a_distribution() -> None:
    linked = [
        linking.LinkedEntity(id="e1", name="A", query_name="A", via="exact", score=1.0, chunks=1),
        linking.LinkedEntity(id="e2", name="B", query_name="B", via="exact", score=1.0, chunks=4),
    ]
    p = personalization({"t1": 0.6, "t2": 0.2}, linked, {}, "weighted")
    assert sum(p.values()) == pytest.approx(1.0)
    assert p["t1"] == pytest.approx(0.5 * 0.75) and p["e1"] == pytest.approx(0.5 * 0.8)  # 1 / (1 + 1/4)
    u = personalization({"t1": 0.6}, linked, {}, "uniform")
    assert len(u) == 3 and all(v == pytest.approx(1 / 3) for v in u.values())
    assert personalization({}, [], {}, "weighted") == {}


def test_noderag_evidence_has_no_repeated_text(kg: GraphStrata) -> None:
    res = kg.retrieve("Who directed the film that was shot in Leland?", "noderag", budget=4000)
    texts = [" ".join(i.text.split()).casefold() for i in res.items]
    assert texts and len(texts) == len(set(texts))
    assert not any(a in b for n, a in enumerate(texts) for b in texts[:n])
    assert all(i.label != "Relation" for i in res.items)  # triples are read in their passages
