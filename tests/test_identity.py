"""Input identity rules (graphstrata/ingest/identity.py): records that share a title, with and
without an explicit `id`, are each found in the graph; what was merged or renamed is reported."""

from __future__ import annotations

import json
from pathlib import Path

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest.load import load_paths
from graphstrata.ingest.pipeline import IngestOptions

OPTS = IngestOptions(extractor="spacy")

RECORDS = [
    {"title": "Introduction", "text": "Ada Lovelace wrote notes on the Analytical Engine."},
    {"title": "Introduction", "text": "Grace Hopper built the first compiler for UNIVAC."},
    {"title": "Introduction", "text": "Ada Lovelace wrote notes on the Analytical Engine."},  # a repeat: once
    {"title": "Introduction", "text": "Alan Turing described the universal machine."},
    {"id": "p-7", "title": "Introduction", "text": "Edsger Dijkstra found shortest paths in graphs."},
    {"id": "p-8", "title": "Introduction", "text": "Barbara Liskov designed the CLU language."},
    {"id": 9, "title": "History", "text": "Charles Babbage designed the Difference Engine."},
]
DISTINCT = 6  # every record but the repeat


def write_corpus(path: Path) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n")
    return path


def test_identity_rules(tmp_path: Path) -> None:
    docs, errors, notes = load_paths([write_corpus(tmp_path / "corpus.jsonl")])
    assert not errors
    assert [d.source for d in docs] == ["Introduction", "Introduction [2]", "Introduction [3]", "p-7", "p-8", "9"]
    assert {d.title for d in docs} == {"Introduction", "History"}
    assert len({d.id for d in docs}) == DISTINCT
    assert any("corpus.jsonl:3" in n and "ingested once" in n for n in notes), notes
    assert any("corpus.jsonl:4" in n and "'Introduction [3]'" in n for n in notes), notes

    # one explicit id twice with different texts: the later record replaces the earlier, reported
    clash = tmp_path / "clash.json"
    clash.write_text(json.dumps([{"id": "x", "title": "A", "text": "one"}, {"id": "x", "title": "B", "text": "two"}]))
    docs, _, notes = load_paths([clash])
    assert [(d.source, d.text) for d in docs] == [("x", "two")]
    assert any("clash.json[1]" in n and "replaces" in n for n in notes), notes


def test_records_sharing_a_title_are_all_ingested(graph: Database, neo4j_settings: Settings, tmp_path: Path):
    corpus = write_corpus(tmp_path / "corpus.jsonl")
    with GraphStrata(neo4j_settings) as gs:
        report = gs.ingest([corpus], OPTS)
        assert report.documents_new == DISTINCT and not report.errors
        assert report.identity_notes  # the repeat and the renamed titles are reported
        for r in RECORDS:  # every text is in the graph, under a document of its own title
            row = graph.read_one(
                "MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk {text: $text}) RETURN d.title AS title, count(*) AS n",
                text=r["text"],
            )
            assert row is not None and row["title"] == r["title"], r
        hits = gs.retrieve("Who built the first compiler?", "fulltext", top_k=3)
        assert any("Grace Hopper" in i.text for i in hits.items)

        again = gs.ingest([corpus], OPTS)  # identities are stable: a re-ingest is a no-op
        assert (again.documents_new, again.documents_replaced, again.documents_unchanged) == (0, 0, DISTINCT)
    assert graph.read_one("MATCH (d:Document) RETURN count(d) AS n")["n"] == DISTINCT


def test_one_identity_twice_in_one_call_is_one_whole_document(graph: Database, neo4j_settings: Settings):
    with GraphStrata(neo4j_settings) as gs:
        report = gs.ingest_texts([("Kur", "Kur is the Sumerian underworld."), ("Kur", "Kur is a mountain.")], OPTS)
    assert report.documents_new == 1 and any("replaces" in n for n in report.identity_notes)
    rows = graph.read("MATCH (:Document {title: 'Kur'})-[:HAS_CHUNK]->(c:Chunk) RETURN c.text AS t")
    assert [r["t"] for r in rows] == ["Kur is a mountain."]
