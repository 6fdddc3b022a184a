"""Readers during writes: what a query running while documents are ingested, replaced and deleted
can see.

Our writes are one transaction per group of whole documents. Neo4j (read-committed) applies a
committed transaction to the store in a fixed order: created properties and relationships before
the nodes that hold them, then updates, then deletions (properties, relationships, nodes) and index
entries last (Neo4j KB "Neo4j current transaction commit process order"). So:

- a document being *written* is invisible until its node is, and then it is whole: readers never
  see a new document, or a new version of one, in part (strict in both tests below);
- a document being *deleted* (or the old version of a replaced one) can be seen by one statement
  while it is taken apart: nodes that lost their properties ("ghosts", e.g. a vector-index hit
  whose properties are gone), chunks that lost their document. That is the isolation Neo4j offers;
  the test allows exactly those views of what an in-flight transaction removes, and nothing else.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pytest

from graphstrata.client import GraphStrata
from graphstrata.db import Database
from graphstrata.ingest import write
from graphstrata.ingest.chunk import split_subchunks, token_chunks
from graphstrata.ingest.load import SourceDocument
from graphstrata.ingest.pipeline import IngestOptions

# Small chunks, few documents per transaction: many commits of documents with several chunks each,
# so a reader that could see inside a write would catch a document with only some of its chunks.
OPTS = IngestOptions(
    extractor="spacy", chunk_size=40, chunk_overlap=0, splits=1, min_subchunk_tokens=10, group_chunks=4
)
PLACES = ["Paris", "Berlin", "Rome", "Madrid", "Vienna", "Lisbon", "Oslo", "Prague", "Warsaw", "Dublin"]
QUESTIONS = ["Which river flows through Vienna?", "Who founded the museum in Lisbon?", "bridges of Prague"]
GHOST = "<ghost>"  # a node whose properties a committing deletion already removed


def text_of(i: int, version: int) -> str:
    """Document i's text: 2-3 chunks of 40 tokens, a different length per version."""
    a, b = PLACES[i % len(PLACES)], PLACES[(i * 3 + version) % len(PLACES)]
    sentences = [
        f"Report {i} version {version}: {a} lies on a river and trades with {b}.",
        f"The museum of {a} was founded by Ada Byron in {1800 + i}.",
        f"Bridges connect {a} and {b}; travellers from {b} cross them daily.",
        f"In {1900 + version} the council of {a} wrote to the council of {b}.",
        f"Markets in {a} sell bread, cheese and wine from {b} every morning.",
        f"Historians of {b} describe {a} as a city of towers and gardens.",
    ]
    return " ".join(sentences[: 3 + (i + version) % 4])


def whole(docs: list[tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """{content hash: (chunks, sub-chunks)} of each version: what the pipeline writes for it under OPTS."""
    out = {}
    for title, text in docs:
        pieces = token_chunks(text, OPTS.chunk_size, OPTS.chunk_overlap)
        subs = sum(len(split_subchunks(p.text, OPTS.splits, OPTS.min_subchunk_tokens)) for p in pieces)
        out[SourceDocument(source=title, title=title, text=text).sha256] = (len(pieces), subs)
    return out


# One statement each: a statement is what a reader sees at once.
DOCUMENTS = """
MATCH (d:Document)
RETURN d.id AS id, d.sha256 AS sha,
       COUNT { (d)-[:HAS_CHUNK]->(:Chunk) } AS chunks,
       COUNT { (d)-[:HAS_CHUNK]->(:Chunk)-[:HAS_PART]->(:SubChunk) } AS subs
"""
ORPHANS = """
RETURN
  COLLECT { MATCH (c:Chunk) WHERE NOT EXISTS { (:Document)-[:HAS_CHUNK]->(c) }
            RETURN coalesce(c.id, $ghost) } AS chunks,
  COLLECT { MATCH (s:SubChunk) WHERE NOT EXISTS { (:Chunk)-[:HAS_PART]->(s) }
            RETURN coalesce(s.id, $ghost) } AS subs,
  COLLECT { MATCH (e:Entity) WHERE NOT EXISTS { (:Chunk)-[:MENTIONS]->(e) }
            RETURN coalesce(e.id, $ghost) } AS entities
"""
CHUNK_HOME = """
UNWIND $ids AS id
OPTIONAL MATCH (c:Chunk {id: id})
RETURN id, c IS NOT NULL AS exists, EXISTS { (:Document)-[:HAS_CHUNK]->(c) } AS has_document
"""
PARTS = """
MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk) WHERE d.title IN $titles
OPTIONAL MATCH (c)-[:HAS_PART]->(s:SubChunk)
OPTIONAL MATCH (c)-[:MENTIONS]->(e:Entity)
RETURN collect(DISTINCT c.id) AS chunks, collect(DISTINCT s.id) AS subs, collect(DISTINCT e.id) AS entities
"""


@dataclass
class Going:
    """What the writes under test remove: the only things a reader may see being taken apart."""

    versions: set[str] = field(default_factory=set)  # content hashes of outgoing versions
    chunks: set[str] = field(default_factory=set)
    subs: set[str] = field(default_factory=set)
    entities: set[str] = field(default_factory=set)


@dataclass
class Observations:
    snapshots: int = 0
    retrievals: int = 0
    doc_counts: set[int] = field(default_factory=set)
    retrieved: set[str] = field(default_factory=set)  # chunk ids returned by retrieval
    shown: dict[str, str] = field(default_factory=dict)  # chunk id -> what the reader saw (for failure messages)
    torn_views: int = 0  # views of an outgoing version being taken apart (allowed, counted)
    violations: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def check_snapshot(db: Database, expected: dict[str, tuple[int, int]], going: Going, seen: Observations) -> None:
    docs = db.read(DOCUMENTS)
    seen.snapshots += 1
    seen.doc_counts.add(len(docs))
    for d in docs:
        if d["sha"] is None and d["id"] is None:
            torn = bool(going.versions)  # a document node whose properties a deletion removed
        elif d["sha"] not in expected:
            torn = False  # a document that was never committed as such: a half-written one
        elif (d["chunks"], d["subs"]) == expected[d["sha"]]:
            continue
        else:
            torn = d["sha"] in going.versions  # fewer parts: fine only while that version is deleted
        if not torn:
            seen.violations.append(f"document {d['id']} (sha {d['sha']}) seen with {d['chunks']}/{d['subs']} parts")
        seen.torn_views += 1
    orphans = db.read_one(ORPHANS, ghost=GHOST)
    for kind, allowed in (("chunks", going.chunks), ("subs", going.subs), ("entities", going.entities)):
        for node_id in orphans[kind]:
            if node_id == GHOST or node_id in allowed:
                seen.torn_views += 1
            else:
                seen.violations.append(f"{kind} {node_id} seen without its parent, and no deletion explains it")


def check_retrieval(gs: GraphStrata, i: int, going: Going, seen: Observations) -> None:
    method = "vector" if i % 2 else "fulltext"
    # An index hit whose node a committing deletion already emptied has no id: the index queries
    # skip such rows, so no retrieval may fail (the reader records any exception as an error).
    result = gs.retrieve(QUESTIONS[i % len(QUESTIONS)], method, top_k=8)
    seen.retrievals += 1
    ids = [c for item in result.items for c in item.chunk_ids]
    seen.retrieved.update(ids)
    for item in result.items:
        seen.shown.setdefault(item.node_id, f"{method} #{seen.retrievals}: {item.text[:80]!r}")
        if not item.text.strip() or not item.doc_titles or not item.doc_titles[0]:
            seen.violations.append(f"retrieved chunk {item.node_id} without text or document title")
    for row in gs.db.read(CHUNK_HOME, ids=ids):
        # gone since the search (replaced or deleted): fine; still there without its document: not
        if row["exists"] and not row["has_document"] and row["id"] not in going.chunks:
            seen.violations.append(f"retrieved chunk {row['id']} exists without its document")


def reader(gs: GraphStrata, expected: dict, going: Going, stop: threading.Event, seen: Observations) -> None:
    """Query until `stop`: graph invariants and retrievals, alternately."""
    i = 0
    while not stop.is_set():
        i += 1
        try:
            check_snapshot(gs.db, expected, going, seen)
            check_retrieval(gs, i, going, seen)
        except Exception as e:  # no read may fail because of a concurrent write
            seen.errors.append(f"{type(e).__name__}: {e}")
            time.sleep(0.05)


def look_again(seen: Observations, deadline: float = 120.0) -> bool:
    """Wait until the reader has checked the graph and retrieved once more; False if it did not
    within ``deadline`` seconds."""
    target, end = seen.retrievals + 1, time.monotonic() + deadline
    while seen.retrievals < target:
        if time.monotonic() >= end:
            return False
        time.sleep(0.01)
    return True


def looked_again(seen: Observations):
    """A write hook (``ingest.write.FAULT_HOOK``): each document write and removal waits, inside its
    transaction, until the reader has looked once more (:func:`look_again`), so the reader sees the
    corpus between every two writes however busy the machine is (a condition, not a speed)."""

    def hook(name: str) -> None:
        if name in ("set_documents", "delete_document_nodes"):
            assert look_again(seen), "the reader made no progress"

    return hook


def run_with_reader(gs: GraphStrata, expected: dict, going: Going, work) -> Observations:
    """``work()`` (writes) while a reader checks the graph and retrieves, once between every two writes."""
    seen = Observations()
    stop = threading.Event()
    with GraphStrata(gs.settings, db=Database.from_settings(gs.settings), embedder=gs.embedder) as rgs:
        t = threading.Thread(target=reader, args=(rgs, expected, going, stop, seen), daemon=True)
        t.start()
        try:
            write.FAULT_HOOK = looked_again(seen)
            work()
        finally:
            write.FAULT_HOOK = None
            look_again(seen)  # a last look at the end state
            stop.set()
            t.join(timeout=120)
    return seen


FIRST = [(f"doc{i:02d}", text_of(i, 0)) for i in range(16)]
SECOND = [(f"doc{i:02d}", text_of(i, 1)) for i in range(0, 16, 2)]  # every other document replaced
DELETED = [f"doc{i:02d}" for i in range(1, 16, 4)]  # 4 deleted


def test_documents_being_added_are_seen_whole_or_not_at_all(gs: GraphStrata, graph: Database) -> None:
    expected = whole(FIRST)
    assert min(chunks for chunks, _ in expected.values()) >= 2, "documents must span chunks to test anything"
    gs.ingest_texts(FIRST[:1], OPTS)  # load the models before the reader starts
    seen = run_with_reader(
        gs, expected, Going(), lambda: gs.ingest_texts(FIRST[1:], OPTS.model_copy(update={"batch_documents": 3}))
    )
    assert not seen.errors, seen.errors[:3]
    assert not seen.violations, seen.violations[:5]
    assert seen.torn_views == 0  # nothing is deleted: nothing may look torn
    # the reader really overlapped the writes: it saw the corpus at several sizes
    assert seen.snapshots >= 5 and len(seen.doc_counts) >= 3, (seen.snapshots, sorted(seen.doc_counts))
    final = graph.read("MATCH (c:Chunk) RETURN c.id AS id")
    unexplained = seen.retrieved - {r["id"] for r in final}
    assert seen.retrieved and not unexplained, {c: seen.shown.get(c) for c in sorted(unexplained)[:5]}


@pytest.mark.slow
def test_replacements_and_deletions_never_show_a_new_version_in_part(gs: GraphStrata, graph: Database) -> None:
    gs.ingest_texts(FIRST, OPTS)
    expected = whole(FIRST) | whole(SECOND)
    outgoing = [t for t, _ in SECOND] + DELETED
    parts = graph.read_one(PARTS, titles=outgoing)
    going = Going(
        versions={sha for t, x in FIRST if t in outgoing for sha in whole([(t, x)])},
        chunks=set(parts["chunks"]),
        subs=set(parts["subs"]),
        entities=set(parts["entities"]),
    )
    before = {r["id"] for r in graph.read("MATCH (c:Chunk) RETURN c.id AS id")}
    to_delete = list(DELETED)

    def churn() -> None:
        for k in range(0, len(SECOND), 2):
            gs.ingest_texts(SECOND[k : k + 2], OPTS)
            if to_delete:
                gs.delete(to_delete.pop())

    seen = run_with_reader(gs, expected, going, churn)
    assert not seen.errors, seen.errors[:3]
    assert not seen.violations, seen.violations[:5]
    assert seen.snapshots >= 5 and seen.retrievals >= 5, (seen.snapshots, seen.retrievals)
    # every retrieved chunk was committed at some point (an old or a new version), never invented
    after = {r["id"] for r in graph.read("MATCH (c:Chunk) RETURN c.id AS id")}
    assert seen.retrieved <= before | after
    # and once the writes are done, the graph is exactly the end state, with nothing left half-removed
    final = {r["t"]: r["sha"] for r in graph.read("MATCH (d:Document) RETURN d.title AS t, d.sha256 AS sha")}
    want = {t: x for t, x in dict(FIRST).items() if t not in DELETED} | dict(SECOND)
    assert final == {t: SourceDocument(source=t, title=t, text=x).sha256 for t, x in want.items()}
    assert graph.read_one(ORPHANS, ghost=GHOST) == {"chunks": [], "subs": [], "entities": []}
    check = Observations()
    check_snapshot(graph, expected, Going(), check)
    assert not check.violations and check.torn_views == 0
    print(f"torn views of outgoing versions: {seen.torn_views}")


def test_the_checker_catches_half_documents_and_orphans(gs: GraphStrata, graph: Database) -> None:
    """The invariants above fail if a write ever leaves a document in part (checked on purpose-made damage)."""
    docs = FIRST[:3]
    gs.ingest_texts(docs, OPTS)
    clean = Observations()
    check_snapshot(graph, whole(docs), Going(), clean)
    assert clean.violations == []
    # a document missing one of its chunks, and that chunk left without its document
    graph.write(
        "MATCH (d:Document {title: $t})-[h:HAS_CHUNK]->(c:Chunk) WITH h ORDER BY c.ordinal DESC LIMIT 1 DELETE h",
        t=docs[0][0],
    )
    damaged = Observations()
    check_snapshot(graph, whole(docs), Going(), damaged)
    doc_id = SourceDocument(source=docs[0][0], title=docs[0][0], text=docs[0][1]).id
    assert any(doc_id in v and "parts" in v for v in damaged.violations), damaged.violations
    assert any(v.startswith("chunks ") for v in damaged.violations), damaged.violations
    # the same views are allowed only while that version is being deleted
    going = Going(versions=set(whole(docs[:1])), chunks={r["id"] for r in graph.read(CHUNK_IDS)})
    excused = Observations()
    check_snapshot(graph, whole(docs), going, excused)
    assert excused.violations == [] and excused.torn_views == 2


CHUNK_IDS = "MATCH (c:Chunk) WHERE NOT EXISTS { (:Document)-[:HAS_CHUNK]->(c) } RETURN c.id AS id"
