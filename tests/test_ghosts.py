"""Every method survives a glimpse of a document being deleted.

Neo4j is read-committed and applies a committed deletion piece by piece: properties first, then
relationships, then nodes (see tests/test_concurrent_reads.py). A statement running meanwhile can
reach, by traversal, a node that has lost all its properties but still has its label and its
relationships — a "ghost". The soak test once caught KET-RAG failing on one (a sub-chunk with no
token count). This test makes that state on purpose, deterministically: it strips every property
from a fifth of the nodes of every label of an augmented graph, leaving labels and relationships,
and asks every registered method every sample question. No method may fail and no returned item
may carry a ghost's missing text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.retrieval.base import available_methods

ROOT = Path(__file__).resolve().parents[1]

LABELS = "CALL db.labels() YIELD label RETURN label ORDER BY label"
# one statement: what a reader racing a deletion can see, made to last
MAKE_GHOSTS = """
MATCH (n) WHERE $label IN labels(n)
WITH n ORDER BY elementId(n)
WITH collect(n) AS nodes
UNWIND range(0, size(nodes) - 1) AS i
WITH nodes[i] AS n, i WHERE i % $every = $offset
SET n = {}
RETURN count(n) AS ghosts
"""


@pytest.fixture
def haunted(graph: Database, neo4j_settings: Settings) -> tuple[GraphStrata, dict[str, int]]:
    gs = GraphStrata(neo4j_settings, db=graph)
    lines = (ROOT / "samples" / "corpus" / "hotpotqa_sample.jsonl").read_text().splitlines()[:30]
    gs.ingest_texts([(d["title"], d["text"]) for d in map(json.loads, lines)])
    gs.augment()
    ghosts = {}
    for label in [r["label"] for r in graph.read(LABELS)]:
        ghosts[label] = graph.write(MAKE_GHOSTS, label=label, every=5, offset=1)[0]["ghosts"]
    return gs, ghosts


def test_no_method_fails_on_nodes_a_deletion_is_taking_apart(haunted: tuple[GraphStrata, dict[str, int]]) -> None:
    gs, ghosts = haunted
    # the layers every method reads are haunted, so the test reaches what it means to
    assert {k for k, v in ghosts.items() if v} >= {"Chunk", "SubChunk", "Entity", "Relation", "Keyword"}, ghosts
    questions = [json.loads(x)["question"] for x in (ROOT / "samples" / "questions.jsonl").read_text().splitlines()]
    failures, answered = [], 0
    for method in available_methods():
        for q in questions:
            try:
                result = gs.retrieve(q, method)
            except Exception as e:  # any failure is what the test reports
                failures.append(f"{method}: {type(e).__name__}: {str(e).splitlines()[:3]} (on {q!r})")
                continue
            answered += 1
            for item in result.items:
                if not item.node_id or not item.text.strip() or "None" in item.text.split():
                    failures.append(f"{method} on {q!r}: item {item.node_id!r} shows a ghost: {item.text[:60]!r}")
    distinct = {f.split(" (on ")[0]: f for f in failures}  # one line per method and kind of failure
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(distinct.values())
    assert answered == len(questions) * len(available_methods())
