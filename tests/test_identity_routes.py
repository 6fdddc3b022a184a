"""One file by two routes, and one text chunked two ways, against the real Neo4j: the same file
ingested by path (CLI) and by upload (`upload:<name>`) is two documents and the second ingest says
so; re-ingesting unchanged text with another chunk size re-chunks it (docs/identity.md)."""

from __future__ import annotations

from pathlib import Path

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest.pipeline import IngestOptions
from graphstrata.server.ingest_jobs import load_uploads

TEXT = " ".join(
    f"Section {i}: the river Tigris floods the plain near Nineveh in spring, and the farmers of Assur "
    f"store barley number {i} in granaries of mud brick."
    for i in range(12)
)


def chunk_count(db: Database) -> int:
    return db.read_one("MATCH (:Document)-[:HAS_CHUNK]->(c:Chunk) RETURN count(c) AS n")["n"]


def test_same_file_by_path_and_by_upload_is_reported(graph: Database, neo4j_settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / "tigris.txt"
    path.write_text(TEXT)
    gs = GraphStrata(neo4j_settings, db=graph)
    options = IngestOptions(extractor="none")
    first = gs.ingest([path], options)
    assert first.documents_new == 1 and first.identity_notes == []
    docs, _notes, failed = load_uploads([("tigris.txt", path.read_bytes())], options.max_document_bytes)
    assert failed == [] and docs[0].source == "upload:tigris.txt"
    second = gs.ingest_documents(docs, options)
    assert second.documents_new == 1  # another identity: a document of its own …
    (note,) = [n for n in second.identity_notes if "the same text" in n]
    assert str(path.resolve()) in note and "graphstrata delete" in note  # … and the ingest says which and how
    rows = graph.read("MATCH (d:Document) RETURN d.source AS s ORDER BY s")
    assert [r["s"] for r in rows] == sorted([str(path.resolve()), "upload:tigris.txt"])
    # the same upload again: unchanged, and nothing more to say
    again = gs.ingest_documents(docs, options)
    assert again.documents_unchanged == 1 and not [n for n in again.identity_notes if "the same text" in n]


def test_another_chunk_size_rechunks_unchanged_text(graph: Database, neo4j_settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / "tigris.txt"
    path.write_text(TEXT)
    gs = GraphStrata(neo4j_settings, db=graph)
    big = gs.ingest([path], IngestOptions(extractor="none", chunk_size=400, chunk_overlap=20))
    assert big.documents_new == 1
    n_big = chunk_count(graph)
    small = gs.ingest([path], IngestOptions(extractor="none", chunk_size=100, chunk_overlap=20))
    assert small.documents_unchanged == 0
    assert any("chunk_size 400 -> 100" in n for n in small.identity_notes), small.identity_notes
    n_small = chunk_count(graph)
    assert n_small > n_big
    stored = graph.read_one("MATCH (d:Document) RETURN d.chunk_size AS size, count(d) AS n")
    assert stored == {"size": 100, "n": 1}
    # the same settings again: nothing to do
    same = gs.ingest([path], IngestOptions(extractor="none", chunk_size=100, chunk_overlap=20))
    assert same.documents_unchanged == 1 and chunk_count(graph) == n_small
