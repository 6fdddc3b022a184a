"""Concurrent ingests that share keywords: every stored keyword vector (a sum of sentence vectors,
kept by addition) equals the one a sequential ingest of the same documents stores.

The ingests are lined up so that each has written its chunks when all of them start adding to the
shared keywords (a barrier in the fault hook, before the first ``add_keywords`` of each thread):
a vector read before the keyword's write lock is taken would be read by every writer at once, and
all but one writer's addition lost.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database, transient_retries
from graphstrata.ingest import write as ingest_write
from graphstrata.ingest.load import SourceDocument
from graphstrata.ingest.pipeline import IngestOptions, Ingestor

try:
    from tests.conftest import STRESS
except ImportError:  # tests/ on sys.path instead of the repository root
    from conftest import STRESS  # type: ignore[no-redef]

OPTS = IngestOptions(extractor="spacy")
WRITERS = 4
ROUNDS = 5 if STRESS else 1  # stress mode: the race again and again
# Each writer's document has nouns (entities) of its own, so no writer waits on another's entity or
# co-occurrence locks before the barrier; all share the keywords old, wide, tall, quiet, crosses, …
NOUNS = [
    ("bridge", "river", "village", "market"),
    ("tower", "harbour", "garden", "mill"),
    ("castle", "lake", "forest", "chapel"),
    ("meadow", "barn", "orchard", "fountain"),
]
SHARED = {"old", "wide", "tall", "quiet", "crosses", "watches", "sells"}


def text_of(i: int) -> str:
    a, b, c, d = NOUNS[i]
    return f"The old {a} crosses the wide {b}. A tall {c} watches the quiet {d}. The old {b} sells the wide {d}."


def keyword_vectors(db: Database) -> dict[str, tuple[int, np.ndarray]]:
    """Each keyword's sentence count and the sum of its sentences' vectors; its indexed copy is checked
    to point the sum's way (within add_keywords' cosine 0.9999)."""
    rows = db.read("MATCH (k:Keyword) RETURN k.term AS term, k.n_sentences AS n, k.sum AS v, k.embedding AS e")
    for r in rows:
        v, e = np.asarray(r["v"], dtype=float), np.asarray(r["e"], dtype=float)
        assert v @ e / np.linalg.norm(v) / np.linalg.norm(e) >= 0.9999 - 1e-6, r["term"]
    return {r["term"]: (r["n"], np.asarray(r["v"], dtype=float)) for r in rows}


def line_up(parties: int) -> threading.Barrier:
    """Install a fault hook holding each thread's first add_keywords until `parties` threads are there."""
    barrier = threading.Barrier(parties, timeout=120)
    seen: set[int] = set()
    lock = threading.Lock()

    def hook(name: str) -> None:
        if name != "add_keywords":
            return
        with lock:
            first = threading.get_ident() not in seen
            seen.add(threading.get_ident())
        if first:
            barrier.wait()

    ingest_write.FAULT_HOOK = hook
    return barrier


@pytest.fixture
def no_hook_after():
    yield
    ingest_write.FAULT_HOOK = None


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_concurrent_ingests_lose_no_keyword_update(
    graph: Database, neo4j_settings: Settings, no_hook_after, round_: int
) -> None:
    docs = [(f"Village report {i}", text_of(i)) for i in range(WRITERS)]
    with GraphStrata(neo4j_settings) as gs:
        gs.ingest_texts([("Warm-up", "A quiet lane.")], OPTS)  # schema and models loaded before the race
        gs.delete("Warm-up")
        errors: list[BaseException] = []
        # an Ingestor applies the schema (an exclusive schema lock) when made: all are made first
        ready = threading.Barrier(WRITERS, timeout=120)
        lined_up = line_up(WRITERS)

        def write(doc: tuple[str, str]) -> None:
            try:
                with GraphStrata(neo4j_settings, embedder=gs.embedder) as client:
                    ingestor = Ingestor(client.db, client.embedder, OPTS)
                    ready.wait()
                    ingestor.ingest_documents([SourceDocument(source=doc[0], title=doc[0], text=doc[1])])
            except BaseException as e:  # reported below, with the thread's document
                errors.append(e)

        threads = [threading.Thread(target=write, args=(d,)) for d in docs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not any(t.is_alive() for t in threads), "a writer did not finish"
        assert not errors, errors
        assert not lined_up.broken, "the writers never all reached add_keywords"
        concurrent = keyword_vectors(gs.db)

        ingest_write.FAULT_HOOK = None
        gs.db.auto("MATCH (n) WHERE NOT n:GraphStrata DETACH DELETE n")
        gs.ingest_texts(docs, OPTS)  # the same documents, one transaction after the other
        sequential = keyword_vectors(gs.db)

    assert set(concurrent) == set(sequential)
    assert {t for t, (n, _) in sequential.items() if n >= WRITERS} >= SHARED  # every writer adds to these
    for term, (n, want) in sequential.items():
        got_n, got = concurrent[term]
        assert got_n == n, term
        err = float(np.abs(got - want).max() / np.abs(want).max())
        assert err < 1e-5, f"keyword {term!r}: stored vector is off by {err:.2g} (relative): a lost update"


def test_a_deadlock_between_two_writers_is_retried_and_counted(empty_db: Database) -> None:
    """Two write transactions lock two nodes in opposite orders, lined up by a barrier after their
    first lock: Neo4j detects the deadlock and ends one; ``write_tx`` runs it again (the other commits
    meanwhile), both writes land, and the victim's thread counts one retry (``transient_retries``)."""
    empty_db.write("UNWIND ['a', 'b'] AS id CREATE (:DeadlockProbe {id: id, writers: []})")
    lined_up = threading.Barrier(2, timeout=60)
    retries: dict[str, int] = {}
    errors: list[BaseException] = []

    def writer(first: str, second: str) -> None:
        attempts = 0

        def work(tx) -> None:
            nonlocal attempts
            attempts += 1
            for i, node in enumerate((first, second)):
                tx.run("MATCH (n:DeadlockProbe {id: $id}) SET n.writers = n.writers + $me", id=node, me=first).consume()
                if i == 0 and attempts == 1:
                    lined_up.wait()  # each holds its first lock; the second lock closes the cycle

        try:
            before = transient_retries()
            empty_db.write_tx(work)
            retries[first] = transient_retries() - before
        except BaseException as e:  # reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=pair) for pair in (("a", "b"), ("b", "a"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert sorted(retries.values()) == [0, 1]  # exactly one victim, retried once
    rows = empty_db.read("MATCH (n:DeadlockProbe) RETURN n.id AS id, n.writers AS w ORDER BY id")
    assert [sorted(r["w"]) for r in rows] == [["a", "b"], ["a", "b"]]  # each writer's two writes, once
