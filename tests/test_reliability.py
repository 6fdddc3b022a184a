"""Reliability: hostile input, Cypher injection, concurrent ingests, and a database that dies mid-ingest."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest.chunk import split_subchunks, token_chunks
from graphstrata.ingest.extract import ChunkExtraction
from graphstrata.ingest.load import LoadError, load_file
from graphstrata.ingest.pipeline import IngestOptions
from graphstrata.llm_json import parse_json_lenient
from graphstrata.text.tokens import count_tokens
from tests.test_ingest import snapshot

OPTS = IngestOptions(extractor="spacy")
INJECTIONS = [
    "x'}) MATCH (n) DETACH DELETE n //",
    '"}) WITH 1 AS x MATCH (n) DETACH DELETE n RETURN 1 //',
    "Robert'); DROP CONSTRAINT chunk_id; --",
    "${title} $rows {id: 1} `backtick` \\u0027",
    "CALL db.index.fulltext.queryNodes('chunk_text_fulltext', '*:*')",
]


# --- fuzz: loaders, chunker, extraction parser --------------------------------------------------


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=4096), suffix=st.sampled_from([".txt", ".md", ".json", ".jsonl"]))
def test_loader_never_crashes_without_a_clear_error(tmp_path: Path, data: bytes, suffix: str) -> None:
    path = tmp_path / f"f{suffix}"
    path.write_bytes(data)
    try:
        docs = load_file(path)
    except LoadError as e:
        assert path.name in str(e) and e.reason
        return
    assert docs and all(d.text.strip() and d.title for d in docs)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(text=st.text(max_size=3000), size=st.integers(20, 400), overlap=st.integers(0, 19))
def test_chunker_covers_any_unicode(text: str, size: int, overlap: int) -> None:
    pieces = token_chunks(text, size, overlap)
    assert all(p.tokens <= size for p in pieces)
    if text:
        assert pieces and pieces[-1].start + pieces[-1].tokens == count_tokens(text)
    for p in pieces:
        subs = split_subchunks(p.text, splits=3, min_tokens=5)
        assert sum(s.tokens for s in subs) >= 1 or not p.text


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    payload=st.one_of(
        st.text(max_size=500),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=30),
            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
            max_leaves=20,
        ).map(json.dumps),
    )
)
def test_extraction_parser_accepts_or_refuses_cleanly(payload: str) -> None:
    """Adversarial model output: either a valid ChunkExtraction or a ValueError — never anything else."""
    try:
        obj = parse_json_lenient(payload)
        ChunkExtraction.model_validate(obj)
    except ValueError:
        pass  # pydantic's ValidationError and JSON errors are ValueErrors: a clear refusal


def test_huge_line_and_unicode_edge_cases_ingest(gs: GraphStrata, tmp_path: Path) -> None:
    weird = "\u202e\u200b" + "é" * 3 + "🧪" * 5 + " Zürich ∑ Ω " + ("word " * 5000)
    path = tmp_path / "huge.txt"
    path.write_text(weird)
    report = gs.ingest([path], OPTS)
    assert report.documents_new == 1 and report.chunks >= 4 and not report.errors


# --- Cypher injection ---------------------------------------------------------------------------


def test_injection_strings_are_data_not_cypher(gs: GraphStrata) -> None:
    gs.ingest_texts([("keeper", "Keeper document about Paris and the Seine.")], OPTS)
    docs = [(t, f"{t} is mentioned by {t}. Paris is near {t}.") for t in INJECTIONS]
    report = gs.ingest_texts(docs, OPTS)
    assert report.documents_new == len(INJECTIONS)
    titles = {r["t"] for r in gs.db.read("MATCH (d:Document) RETURN d.title AS t")}
    assert titles == {"keeper", *INJECTIONS}  # stored verbatim, nothing deleted
    assert gs.db.read_one("SHOW CONSTRAINTS YIELD name WHERE name = 'chunk_id' RETURN count(*) AS n")["n"] == 1
    before = snapshot(gs.db)
    for q in INJECTIONS:
        for method in ("vector", "fulltext", "noderag", "ketrag"):
            gs.retrieve(q, method)
    for title in INJECTIONS:  # deleting by a hostile title deletes that document only
        assert [d["title"] for d in gs.delete(title)] == [title]
    after = snapshot(gs.db)
    assert {n["p"].get("title") for n in after["nodes"] if n["label"] == "Document"} == {"keeper"}
    assert len(before["nodes"]) > len(after["nodes"]) > 0


# --- concurrency --------------------------------------------------------------------------------

CORPUS_A = [
    (f"doc{i}", f"Doc {i} says Paris is in France and the Seine flows through Paris. Item {i}.") for i in range(8)
]
CORPUS_B = [
    (f"doc{i}", f"Doc {i} says Paris is in France and the Seine flows through Paris. Item {i}.") for i in range(4, 12)
]


def test_concurrent_overlapping_ingests_equal_a_sequential_one(gs: GraphStrata, graph: Database) -> None:
    from tests.conftest import wipe

    errors: list[BaseException] = []

    def run(docs: list[tuple[str, str]]) -> None:
        try:
            g = GraphStrata(gs.settings, db=Database.from_settings(gs.settings), embedder=gs.embedder)
            g.ingest_texts(docs, OPTS)
            g.db.close()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(c,)) for c in (CORPUS_A, CORPUS_B)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    concurrent = snapshot(graph)
    wipe(graph)
    gs.ingest_texts(sorted(dict(CORPUS_A + CORPUS_B).items()), OPTS)
    assert snapshot(graph) == concurrent
    assert graph.read_one("MATCH (d:Document) RETURN count(d) AS n")["n"] == 12


# --- the database goes away mid-ingest ------------------------------------------------------------


def free_ports(n: int) -> list[int]:
    """`n` distinct ports free on loopback now (held open together, so they differ)."""
    import socket
    from contextlib import ExitStack

    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


@pytest.mark.slow
def test_neo4j_killed_mid_ingest_then_rerun_is_complete(neo4j_mode: str, neo4j_settings: Settings, tmp_path: Path):
    if neo4j_mode != "local":
        pytest.skip("needs the local launcher to kill and restart a server")
    import os
    import signal
    import time

    from graphstrata.neo4j_local import Instance

    # free ports and an instance of its own: two runs of this test at once (or another server) never collide
    bolt, http = free_ports(2)
    s = neo4j_settings.model_copy(
        update={
            "instance": f"pytest-crash-{os.getpid()}",
            "bolt_port": bolt,
            "http_port": http,
            "heap": "1g",
            "pagecache": "128m",
            "data_dir": tmp_path / "data",
        }
    )
    inst = Instance.from_settings(s)
    inst.start(timeout=240)
    try:
        docs = [(f"d{i}", f"Document {i} mentions Berlin, Paris and Rome. " * 10) for i in range(40)]
        opts = IngestOptions(extractor="spacy", group_chunks=2, batch_documents=8)
        failure: list[BaseException] = []

        def ingest() -> None:
            try:
                with GraphStrata(s) as g:
                    g.ingest_texts(docs, opts)
            except BaseException as e:
                failure.append(e)

        worker = threading.Thread(target=ingest)
        worker.start()
        with GraphStrata(s) as probe:  # kill -9 once some documents have landed
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                if probe.db.read_one("MATCH (d:Document) WHERE d.sha256 IS NOT NULL RETURN count(d) AS n")["n"] >= 3:
                    break
                time.sleep(0.2)
        os.kill(inst.pid(), signal.SIGKILL)
        worker.join(timeout=300)
        assert failure, "the ingest must fail loudly when the database dies"
        # restarted on fresh ports: the killed server's are free for anyone meanwhile (another test
        # run on the machine took one once); the store and its password are the instance's own
        bolt, http = free_ports(2)
        s = s.model_copy(update={"bolt_port": bolt, "http_port": http})
        inst = Instance.from_settings(s)
        inst.start(timeout=240)
        with GraphStrata(s) as g:
            # no half documents: every stored document has all of its chunks
            half = g.db.read(
                "MATCH (d:Document) OPTIONAL MATCH (d)-[:HAS_CHUNK]->(c) WITH d, count(c) AS n "
                "WHERE d.sha256 IS NULL OR n = 0 RETURN d.id AS id"
            )
            assert half == []
            landed = g.db.read_one("MATCH (d:Document) RETURN count(d) AS n")["n"]
            assert 0 < landed < len(docs)
            report = g.ingest_texts(docs, opts)  # the re-run completes the rest, duplicating nothing
            assert report.documents_new == len(docs) - landed and report.documents_unchanged == landed
            assert g.db.read_one("MATCH (d:Document) RETURN count(d) AS n")["n"] == len(docs)
            dup = g.db.read_one(
                "MATCH (e:Entity) WITH e.normalized AS n, count(*) AS c WHERE c > 1 RETURN count(*) AS d"
            )
            assert dup["d"] == 0
    finally:
        inst.stop()
