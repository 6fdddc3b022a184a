"""Shared aggregates kept as counts (graphstrata/ingest/tally.py).

The derived properties are checked on hand tallies with known answers, and, after a history of
ingests, replacements and deletions in a real Neo4j, against an independent reference: Cypher that
aggregates every entity's, term's and RELATED edge's per-chunk records from scratch.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest.pipeline import IngestOptions
from graphstrata.ingest.tally import Delta, dump, entity_properties, load, related_properties, term_properties
from tests.conftest import wipe
from tests.fake_openai import FakeOpenAI, fake_llm_settings
from tests.test_ingest import snapshot

pytest_plugins = ["tests.conftest_llm"]

OPTS = IngestOptions(chunk_size=1200, chunk_overlap=100)  # deletes use the default options too
DOCS = [
    ("curie", "Marie Curie was born in Warsaw. Marie Curie moved to Paris in 1891."),
    ("pierre", "Pierre Curie lived in Paris with Marie Curie."),
    ("nobel", "Marie Curie was born in Warsaw. She won the Nobel Prize in 1911."),
    ("sorbonne", "Marie Curie taught at the Sorbonne in Paris. Pierre Curie taught in Paris too."),
]


def tally(**fields: dict[str, int]):
    return load(dump({f: Counter(c) for f, c in fields.items()}))


def test_entity_properties_follow_counts_ranks_and_text_ties() -> None:
    t = tally(
        names={"Curie": 2, "M. Curie": 2, "Marie Curie": 1},
        types={"1:PERSON": 5, "0:SCIENTIST": 1, "0:CHEMIST": 1, "2:ORG": 9},
        extractors={"spacy": 3, "llm": 1},
        descriptions={"b": 2, "a": 2, "c": 3},
    )
    p = entity_properties(t, max_descriptions=2)
    # name: the most used form, ties alphabetical; type: rank 0 (LLM/user) beats any count of rank 1
    assert p["name"] == "Curie" and p["type"] == "CHEMIST"
    assert p["descriptions"] == ["c", "a"] and p["description"] == "c a"
    assert p["extractors"] == ["llm", "spacy"] and p["source"] == "llm"
    assert entity_properties(tally(types={"2:ORG": 1}), 3)["type"] == "ORG"
    bare = entity_properties(tally(), 3)
    assert (bare["name"], bare["type"], bare["descriptions"], bare["source"]) == (None, "UNKNOWN", None, "spacy")


def test_term_and_related_properties() -> None:
    forms = tally(forms={'["Paris","GPE"]': 2, '["paris",null]': 2, '["Paris",null]': 2})
    assert term_properties(forms) == {"name": "Paris", "type": "GPE"}  # ties: name, then a missing type last
    r = related_properties(tally(extractors={"llm": 2, "": 1}, descriptions={"x": 1}), 3)
    assert (r["weight"], r["extractors"], r["descriptions"]) == (3, ["llm"], ["x"])


def test_delta_adds_removes_and_forgets_zeros() -> None:
    d = Delta()
    d.add("e", {"names": ["A", "B"]})
    d.add("e", {"names": ["B", "C"]}, removed=True)
    d.add("f", {"names": []}, removed=True)
    assert d.keys() == ["e", "f"]
    assert d.applied("e", tally(names={"B": 1, "C": 1})) == tally(names={"A": 1, "B": 1})
    assert d.applied("e", tally(), removes=False) == tally(names={"A": 1, "B": 1})
    assert dump(d.applied("e", tally(names={"C": 1}))) == dump(tally(names={"A": 1}))  # no zero entries


# --- in a real graph -------------------------------------------------------------------------------

ENTITY_REFERENCE = """
MATCH (e:Entity)
RETURN e.id AS id, e.name AS name, e.type AS type, e.extractors AS extractors, e.descriptions AS descriptions,
  COLLECT { MATCH (:Chunk)-[m:MENTIONS]->(e) WHERE m.name IS NOT NULL
            WITH m.name AS n, count(*) AS k ORDER BY k DESC, n RETURN n LIMIT 1 } AS ref_name,
  COLLECT { MATCH (:Chunk)-[m:MENTIONS]->(e)
            UNWIND [[0, CASE WHEN m.extractor IN ['llm', 'user'] THEN m.type END], [1, m.label],
                    [2, CASE WHEN m.extractor = 'spacy' THEN m.type END]] AS c
            WITH c[0] AS rank, c[1] AS t WHERE t IS NOT NULL AND t <> 'UNKNOWN'
            WITH rank, t, count(*) AS k ORDER BY rank, k DESC, t RETURN t LIMIT 1 } AS ref_type,
  COLLECT { MATCH (:Chunk)-[m:MENTIONS]->(e) WHERE m.description IS NOT NULL
            WITH m.description AS d, count(*) AS k ORDER BY k DESC, d RETURN d LIMIT $limit } AS ref_descriptions,
  COLLECT { MATCH (:Chunk)-[m:MENTIONS]->(e)
            UNWIND [m.extractor, CASE WHEN m.label IS NOT NULL THEN 'spacy' END] AS x
            WITH DISTINCT x WHERE x IS NOT NULL RETURN x ORDER BY x } AS ref_extractors
"""

RELATED_REFERENCE = """
MATCH (a:Entity)-[:SUBJECT_OF]->(x:Relation)-[:OBJECT]->(b:Entity)
WITH a.id AS a, x.predicate AS p, b.id AS b, count(x) AS n
OPTIONAL MATCH (:Entity {id: a})-[r:RELATED {predicate: p}]->(:Entity {id: b})
RETURN a, p, b, n, r.weight AS weight
"""


@pytest.fixture
def gs(graph: Database, neo4j_settings: Settings, fake_openai: FakeOpenAI, tmp_path: Path):
    settings = fake_llm_settings(neo4j_settings, fake_openai, tmp_path / "cache", llm_timeout=10.0)
    with GraphStrata(settings, db=graph) as client:
        yield client


def check_against_records(db: Database) -> int:
    """Every aggregate's properties equal a from-scratch Cypher aggregation of its records."""
    rows = db.read(ENTITY_REFERENCE, limit=OPTS.max_descriptions)
    for r in rows:
        assert r["name"] == r["ref_name"][0], r
        assert r["type"] == (r["ref_type"] or ["UNKNOWN"])[0], r
        assert r["extractors"] == r["ref_extractors"], r
        assert (r["descriptions"] or []) == r["ref_descriptions"], r
    for r in db.read(RELATED_REFERENCE):
        assert r["weight"] == r["n"], r
    orphans = db.read_one(
        "MATCH (a)-[r:RELATED]->(b) WHERE NOT EXISTS { (a)-[:SUBJECT_OF]->(:Relation {predicate: r.predicate})"
        "-[:OBJECT]->(b) } RETURN count(r) AS n"
    )
    assert orphans["n"] == 0
    forms: dict[str, Counter] = defaultdict(Counter)
    for h in db.read("MATCH (:Chunk)-[h:HAS_TERM]->(t:Term) RETURN t.id AS id, h.name AS name, h.type AS type"):
        forms[h["id"]][(h["name"], h["type"])] += 1
    for t in db.read("MATCH (t:Term) RETURN t.id AS id, t.name AS name, t.type AS type"):
        best = min(forms[t["id"]].items(), key=lambda f: (-f[1], f[0][0], f[0][1] is None, f[0][1] or ""))[0]
        assert (t["name"], t["type"]) == best, t
    return len(rows)


def test_a_history_of_writes_keeps_every_aggregate_equal_to_its_records(gs: GraphStrata, graph: Database) -> None:
    gs.ingest_texts(DOCS[:2], OPTS)
    gs.ingest_texts(DOCS[2:], OPTS)
    assert check_against_records(graph) > 5
    gs.ingest_texts([("curie", DOCS[0][1].replace("Warsaw", "Krakow")), DOCS[3]], OPTS)  # one replaced
    check_against_records(graph)
    gs.delete("nobel")
    check_against_records(graph)
    # two replaced in one transaction, each with entities of its own that its removal deletes
    sorbonne = DOCS[3][1].replace("Sorbonne", "College de France")
    report = gs.ingest_texts([("sorbonne", sorbonne), ("pierre", DOCS[1][1].replace("Paris", "Sceaux"))], OPTS)
    assert report.documents_replaced == 2
    check_against_records(graph)
    # a tally that is dumped is what a fresh ingest of the end state writes
    incremental = snapshot(graph)
    wipe(graph)
    curie, pierre = DOCS[0][1].replace("Warsaw", "Krakow"), DOCS[1][1].replace("Paris", "Sceaux")
    gs.ingest_texts([("curie", curie), ("pierre", pierre), ("sorbonne", sorbonne)], OPTS)
    assert snapshot(graph) == incremental


def test_aggregates_written_without_tallies_are_counted_from_their_records(gs: GraphStrata, graph: Database) -> None:
    gs.ingest_texts(DOCS[:3], OPTS)
    graph.write("MATCH (n) WHERE n:Entity OR n:Term REMOVE n._tally")
    graph.write("MATCH ()-[r:RELATED]->() REMOVE r._tally")
    gs.ingest_texts([DOCS[3]], OPTS)
    gs.delete("pierre")
    touched = graph.read_one("MATCH (e:Entity {normalized: 'marie curie'}) RETURN e._tally AS t")
    assert touched["t"] is not None
    check_against_records(graph)
    graph.write("MATCH (n) WHERE n:Entity OR n:Term REMOVE n._tally")
    graph.write("MATCH ()-[r:RELATED]->() REMOVE r._tally")
    after = snapshot(graph)
    wipe(graph)
    gs.ingest_texts([DOCS[0], DOCS[2], DOCS[3]], OPTS)
    graph.write("MATCH (n) WHERE n:Entity OR n:Term REMOVE n._tally")
    graph.write("MATCH ()-[r:RELATED]->() REMOVE r._tally")
    assert snapshot(graph) == after
