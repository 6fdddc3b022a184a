"""E2GraphRAG on a real Neo4j: the summary tree stage (shape, idempotence, updates, deletion, LLM
mode) and every branch of Algorithm 1 on a hand-made corpus whose answers are computed by hand.

Order matters: the summary-tree tests use the function-scoped ``graph`` fixture (a wiped
database); the retrieval tests share one module-scoped corpus, built when the first of them runs,
so they come last.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from graphstrata.augment import AugmentContext, run
from graphstrata.augment.summary_tree import level_sizes
from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest.chunk import token_chunks
from graphstrata.ingest.pipeline import IngestOptions
from graphstrata.retrieval.base import available_methods
from graphstrata.text.nlp import query_entities
from graphstrata.text.tokens import encoder, join_overlapping

pytest_plugins = ["tests.conftest_llm"]

FAST = IngestOptions(extractor="none")
WORDS = [f"w{c}{d}" for c in "abcdefgh" for d in "klmnpqrs"]  # 64 distinct made-up words


def doc_of_chunks(n: int, size: int = 7) -> str:
    """A text that token-chunks (size, no overlap) into exactly n chunks."""
    words = " ".join(f"The {WORDS[i % len(WORDS)]} number {i} is here." for i in range(4 * n + 8))
    text = encoder().decode(encoder().encode_ordinary(words)[: size * n])
    assert len(token_chunks(text, size, 0)) == n
    return text


def stage(gs: GraphStrata, llm=None, **params):
    ctx = AugmentContext(db=gs.db, embedder=gs.embedder, settings=gs.settings, llm=llm, params=params)
    return run(ctx, ["summary_tree"])[0]


def tree(db: Database, doc_title: str) -> dict[int, list[dict]]:
    """Summaries of a document per level, in order, each with its children's ids."""
    rows = db.read(
        "MATCH (s:Summary)-[r:SUMMARIZES]->(x) WHERE s.doc_title = $t "
        "WITH s, x ORDER BY r.ordinal "
        "RETURN s.id AS id, s.level AS level, s.ordinal AS ordinal, s.text AS text, size(s.embedding) AS dim, "
        "collect(x.id) AS children, collect(labels(x)[0]) AS kinds ORDER BY level, ordinal",
        t=doc_title,
    )
    out: dict[int, list[dict]] = {}
    for r in rows:
        out.setdefault(r["level"], []).append(r)
    return out


def chunk_ids(db: Database, doc_title: str) -> list[str]:
    return [
        r["id"] for r in db.read("MATCH (c:Chunk {doc_title: $t}) RETURN c.id AS id ORDER BY c.ordinal", t=doc_title)
    ]


def summary_snapshot(db: Database) -> list[dict]:
    rows = db.read(
        "MATCH (s:Summary) OPTIONAL MATCH (s)-[r:SUMMARIZES]->(x) "
        "WITH s, r, x ORDER BY r.ordinal "
        "RETURN s.id AS id, properties(s) AS p, collect([r.ordinal, x.id]) AS kids ORDER BY id"
    )
    for r in rows:
        r["p"]["embedding"] = [round(v, 5) for v in r["p"]["embedding"]]
    return rows


# --- summary tree -------------------------------------------------------------------------------


def test_level_sizes_follow_ceil_n_over_g() -> None:
    for g in (2, 3, 4, 5, 8):
        for n in range(0, 200):
            sizes, m = [], n
            if n >= 2:  # independent restatement: summarise until g or fewer remain (level 1 always)
                while True:
                    m = -(-m // g)
                    sizes.append(m)
                    if m <= g:
                        break
            assert level_sizes(n, g) == sizes, (n, g)
            if sizes:
                assert sizes[-1] <= g and (n > g or sizes == [1])
    assert level_sizes(1, 5) == [] and level_sizes(1, 5, summarize_single_chunk=True) == [1]
    with pytest.raises(ValueError):
        level_sizes(10, 1)


@pytest.mark.parametrize(("n", "g", "expected"), [(13, 3, [5, 2]), (26, 5, [6, 2]), (5, 5, [1]), (1, 5, [])])
def test_tree_shape(gs: GraphStrata, n: int, g: int, expected: list[int]) -> None:
    gs.ingest_texts([("Book", doc_of_chunks(n))], IngestOptions(extractor="none", chunk_size=7, chunk_overlap=0))
    leaves = chunk_ids(gs.db, "Book")
    assert len(leaves) == n
    report = stage(gs, g=g)
    assert report.counts["summaries_created"] == sum(expected)
    levels = tree(gs.db, "Book")
    assert [len(levels[lv]) for lv in sorted(levels)] == expected
    below = leaves
    for lv in sorted(levels):
        nodes = levels[lv]
        assert [x["ordinal"] for x in nodes] == list(range(len(nodes)))
        for i, node in enumerate(nodes):  # g consecutive nodes of the level below, in order
            assert node["children"] == below[i * g : (i + 1) * g]
            assert set(node["kinds"]) == {"Chunk" if lv == 1 else "Summary"}
            assert node["text"] and node["dim"] == gs.embedder.dim
        below = [x["id"] for x in nodes]
    assert len(below) <= g  # the top: a single root, or g or fewer nodes
    if n <= g and n > 1:
        assert len(below) == 1


def test_extractive_summary_is_central_sentences_of_children(gs: GraphStrata) -> None:
    sentences = [
        "The river flooded the valley in spring.",
        "Farmers in the valley rebuilt the river banks.",
        "The valley river now floods less often.",
        "A comet was seen over Norway in 1910.",
    ]
    text = " ".join(sentences)
    gs.ingest_texts([("Valley", text)], IngestOptions(extractor="none", chunk_size=12, chunk_overlap=3))
    n = len(chunk_ids(gs.db, "Valley"))
    assert n >= 2
    stage(gs, g=8, summary_tokens=25)
    (root,) = tree(gs.db, "Valley")[1]
    # a subset of the text's sentences in document order, the off-topic one left out first
    kept = [s for s in sentences if s in root["text"]]
    assert kept and " ".join(kept) == root["text"]
    assert "comet" not in root["text"]


def test_rerun_is_a_no_op_and_updates_are_incremental(gs: GraphStrata) -> None:
    opts = IngestOptions(extractor="none", chunk_size=7, chunk_overlap=0)
    text = doc_of_chunks(13)
    gs.ingest_texts([("Book", text), ("Other", doc_of_chunks(4))], opts)
    first = stage(gs, g=3)
    assert first.counts["summaries_created"] == 5 + 2 + 2  # Book 13 chunks: 5, 2; Other 4 chunks: 2
    before = summary_snapshot(gs.db)
    again = stage(gs, g=3)
    assert again.counts["summaries_created"] == 0 and again.counts["summaries_deleted"] == 0
    assert again.counts["documents_unchanged"] == 2
    assert summary_snapshot(gs.db) == before
    # one more chunk: groups 0-3 of level 1 and the first level-2 node are kept, the rest rebuilt
    gs.ingest_texts([("Book", doc_of_chunks(14))], opts)
    upd = stage(gs, g=3)
    assert upd.counts["summaries_kept"] == 5
    assert upd.counts["summaries_created"] == 2 and upd.counts["summaries_deleted"] == 2
    levels = tree(gs.db, "Book")
    assert [len(levels[lv]) for lv in sorted(levels)] == [5, 2]
    leaves = chunk_ids(gs.db, "Book")
    assert [c for node in levels[1] for c in node["children"]] == leaves  # kept nodes relinked to new chunks
    assert stage(gs, g=3).counts["summaries_created"] == 0
    # a different g rebuilds the tree, never duplicating it
    stage(gs, g=4)
    levels = tree(gs.db, "Book")
    assert [len(levels[lv]) for lv in sorted(levels)] == [math.ceil(14 / 4)]
    total = gs.db.read_one("MATCH (s:Summary {doc_title: 'Book'}) RETURN count(s) AS n")["n"]
    assert total == math.ceil(14 / 4)


def test_deleting_a_document_removes_its_summaries(gs: GraphStrata) -> None:
    opts = IngestOptions(extractor="none", chunk_size=7, chunk_overlap=0)
    gs.ingest_texts([("Book", doc_of_chunks(9)), ("Other", doc_of_chunks(6))], opts)
    stage(gs, g=3)
    other = summary_snapshot(gs.db)
    other = [r for r in other if r["p"]["doc_title"] == "Other"]
    assert gs.db.read_one("MATCH (s:Summary {doc_title: 'Book'}) RETURN count(s) AS n")["n"] == 3
    gs.delete("Book")
    report = stage(gs, g=3)
    assert report.counts["orphans_deleted"] == 3
    assert gs.db.read_one("MATCH (s:Summary {doc_title: 'Book'}) RETURN count(s) AS n")["n"] == 0
    assert summary_snapshot(gs.db) == other


def test_llm_summaries_are_cached(gs: GraphStrata, llm_client) -> None:
    gs.ingest_texts([("Book", doc_of_chunks(7))], IngestOptions(extractor="none", chunk_size=7, chunk_overlap=0))
    report = stage(gs, llm=llm_client, g=3)
    assert report.counts["summaries_created"] == 3
    assert report.notes["summariser"].startswith("llm:")
    usage = llm_client.usage()["summary"]
    assert usage["calls"] == 3
    assert all(x["text"] for lv in tree(gs.db, "Book").values() for x in lv)
    assert stage(gs, llm=llm_client, g=3).counts["summaries_created"] == 0
    gs.db.write("MATCH (s:Summary) DETACH DELETE s")
    stage(gs, llm=llm_client, g=3)  # rebuilt from the LLM cache: no new call
    usage = llm_client.usage()["summary"]
    assert usage["calls"] == 3 and usage["cache_hits"] == 3
    # switching summariser replaces the tree rather than mixing two
    stage(gs, g=3)
    kinds = gs.db.read("MATCH (s:Summary) RETURN DISTINCT s.extractor AS x")
    assert [k["x"] for k in kinds] == ["extractive:1000"]


def test_join_overlapping_writes_the_overlap_once() -> None:
    text = " ".join(f"Sentence {i} talks about the {WORDS[i]}." for i in range(12))
    pieces = token_chunks(text, 20, 6)
    assert len(pieces) >= 3
    assert join_overlapping([p.text for p in pieces], 6) == text
    assert join_overlapping(["a b", "c d"], 0) == "a b c d"


def test_global_mode_without_a_tree_uses_chunks_then_the_tree(gs: GraphStrata) -> None:
    gs.ingest_texts(
        [("Notes", doc_of_chunks(6)), ("Memo", "A short memo about nothing.")],
        IngestOptions(extractor="none", chunk_size=7, chunk_overlap=0),
    )
    r = gs.retrieve("What is it?", "e2graphrag", top_k=50)
    assert r.notes["branch"] == "global"
    assert "chunks only" in r.notes["tree"]
    assert {i.label for i in r.items} == {"Chunk"}
    stage(gs, g=3)
    r = gs.retrieve("What is it?", "e2graphrag", top_k=50)
    assert r.notes["tree"] == "2 Summary nodes"  # Notes: 6 chunks, g = 3; Memo: one chunk, no tree
    summaries = [i for i in r.items if i.label == "Summary"]
    assert len(summaries) == 2 and all(i.chunk_ids == [] for i in summaries)
    assert len(r.items) == 7 + 2
    # a changed document's old tree is invisible until the stage rebuilds it
    gs.ingest_texts([("Notes", doc_of_chunks(5))], IngestOptions(extractor="none", chunk_size=7, chunk_overlap=0))
    r = gs.retrieve("What is it?", "e2graphrag", top_k=50)
    assert [i for i in r.items if i.label == "Summary"] == []


# --- retrieval: a hand-made corpus for every branch of Algorithm 1 -------------------------------

WORKSHOP = [
    "The lantern hung beside the violin.",
    "The lantern brightened the old violin.",
    "The parrot watched the mirror.",
    "The violin rested near the lantern.",
    "The mirror showed the parrot.",
    "The parrot faced the mirror.",
    "The mirror showed the parrot.",
]
DOCS = [
    ("Attic", "The violin lay under the lantern."),
    ("Aerie", "The falcon chased the rabbit. The falcon caught the rabbit. The falcon soared."),
    ("Burrow", "The rabbit hid from the falcon."),
    ("Garden", "The tulip bloomed in the garden."),
    ("Forge", "The kettle sat near the anvil. The anvil rested on the saddle."),
    ("Smithy", "The anvil rested on the bellows."),
    # tightening: kayak-canyon (2 hops, via river) in 30 chunks, kayak-paddle (1 hop) in 3
    *[(f"Trip {i:02d}", "The kayak drifted down the river. The river carved the canyon.") for i in range(30)],
    *[(f"Shed {i}", "The kayak leaned on the paddle.") for i in range(3)],
    # fallback: anchor, rope and buoy co-occur directly in all 28 chunks
    (
        "Dock 00",
        "The anchor hung from the rope near the buoy. The buoy bobbed near the anchor. "
        "The anchor dropped near the buoy.",
    ),
    ("Dock 01", "The anchor hung from the rope near the buoy. The buoy floated."),
    ("Dock 02", "The anchor hung from the rope near the buoy."),
    ("Dock 03", "The anchor hung from the rope. The anchor held. The anchor rusted."),
    ("Dock 04", "The anchor hung from the rope. The rope frayed."),
    *[(f"Dock {i:02d}", "The anchor hung from the rope.") for i in range(5, 28)],
]


@pytest.fixture(scope="module")
def corpus(db: Database, neo4j_settings: Settings) -> GraphStrata:
    from graphstrata.gds import GDS
    from graphstrata.schema import apply_schema

    db.wipe()
    GDS(db).drop_all()
    g = GraphStrata(neo4j_settings, db=db)
    apply_schema(db, g.embedder.name, g.embedder.dim)
    g.ingest_texts(DOCS, FAST)
    g.ingest_texts([("Workshop", " ".join(WORKSHOP))], IngestOptions(extractor="none", chunk_size=21, chunk_overlap=7))
    stage(g)  # g = 5: the 4-chunk Workshop gets one root summary, one-chunk documents none
    return g


def title_of(gs: GraphStrata) -> dict[str, str]:
    rows = gs.db.read("MATCH (n) WHERE n:Chunk OR n:Summary RETURN n.id AS id, n.doc_title AS t")
    return {r["id"]: r["t"] for r in rows}


def tree_vectors(gs: GraphStrata) -> tuple[list[str], np.ndarray]:
    rows = gs.db.read("MATCH (n) WHERE n:Chunk OR n:Summary RETURN n.id AS id, n.embedding AS v ORDER BY id")
    return [r["id"] for r in rows], np.array([r["v"] for r in rows], dtype=np.float32)


def nearest(gs: GraphStrata, question: str, k: int) -> tuple[list[str], dict[str, float]]:
    """Brute-force collapsed-tree ranking in numpy: ids best first, and the index's score of each."""
    ids, vecs = tree_vectors(gs)
    q = gs.embedder.embed([question])[0]
    cos = vecs @ q
    order = np.argsort(-cos, kind="stable")
    return [ids[i] for i in order[:k]], {ids[i]: (1 + float(cos[i])) / 2 for i in range(len(ids))}


def test_registered_with_the_papers_defaults() -> None:
    params = available_methods()["e2graphrag"]["parameters"]["properties"]
    assert params["hops"]["default"] == 4
    assert params["max_chunks"]["default"] == 25
    assert params["top_k"]["default"] == 25
    assert params["candidate_factor"]["default"] == 2
    assert params["graph_filter"]["default"] == "cypher"


def test_no_entities_is_global_dense_retrieval_over_the_collapsed_tree(corpus: GraphStrata) -> None:
    for question, unmapped in [("What is it?", []), ("Where is the submarine?", ["submarine"])]:
        r = corpus.retrieve(question, "e2graphrag", top_k=6)
        assert r.notes["branch"] == "global"
        assert r.notes["mapped"] == [] and r.notes["unmapped"] == unmapped
        assert r.notes["tree"] == "1 Summary nodes"
        best, score = nearest(corpus, question, 6)
        got = [i.node_id for i in r.items]
        assert 4 <= len(got) <= 6  # the top 6, less the nodes whose text a returned item already holds
        for item in r.items:  # the index's scores are the brute-force cosines, best first (an item that
            # holds a better-ranked node's text takes that node's place and score)
            assert any(item.score == pytest.approx(score[x], abs=2e-3) for x in [item.node_id, *best])
        assert [i.score for i in r.items] == sorted((i.score for i in r.items), reverse=True)
        # the collapsed tree is the two vector indexes' top 6 merged (HNSW is approximate, and this
        # corpus is full of near-duplicates, so the brute-force top 6 is compared up to that)
        v = corpus.embedder.embed([question])[0].tolist()
        both = corpus.db.read(
            "CALL db.index.vector.queryNodes('chunk_embedding', 6, $v) YIELD node, score RETURN node.id AS id, score "
            "UNION ALL CALL db.index.vector.queryNodes('summary_embedding', 6, $v) YIELD node, score "
            "RETURN node.id AS id, score",
            v=v,
        )
        top = sorted(both, key=lambda x: -x["score"])[:6]
        texts = {
            x["id"]: " ".join(x["text"].split())
            for x in corpus.db.read("MATCH (n) WHERE n.id IN $ids RETURN n.id AS id, n.text AS text", ids=got + best)
        }
        returned = " ".join(" ".join(i.text.split()) for i in r.items)
        kept = [x["id"] for x in top if x["id"] in got or texts.get(x["id"], "\0") not in returned]
        # (HNSW is approximate: every returned node is among the index's or the brute-force top 6)
        assert set(got) == set(kept) or set(got) <= {x["id"] for x in top} | set(best)
        assert all(texts[b] in returned for b in best if b not in got)  # dropped: repeated text only
        assert len(set(got) & set(best)) >= 4
    # the Workshop summary is one of the collapsed tree's nodes
    r = corpus.retrieve("What is it?", "e2graphrag", top_k=100)
    assert next(i for i in r.items if i.label == "Summary").doc_titles == ["Workshop"]


def test_single_entity_is_global_with_occurrence_ranking(corpus: GraphStrata) -> None:
    q = "Tell me about the falcon."
    assert query_entities(q) == ["falcon"]
    r = corpus.retrieve(q, "e2graphrag", top_k=3, entity_weight="uniform")  # the paper's counts
    assert r.notes["branch"] == "global+occurrence"
    assert r.notes["reason"] == "a single query entity"
    assert r.notes["candidates"] == 6
    # hand computation: falcon occurs 3 times in Aerie, once in Burrow, nowhere else
    best, score = nearest(corpus, q, 6)
    titles = title_of(corpus)
    weight = {"Aerie": 3, "Burrow": 1}
    assert {"Aerie", "Burrow"} <= {titles[c] for c in best}
    expected = sorted(best, key=lambda c: (-weight.get(titles[c], 0), -score[c]))[:3]
    assert [titles[i.node_id] for i in r.items][:2] == ["Aerie", "Burrow"]
    assert [i.node_id for i in r.items][:2] == expected[:2]
    rest = r.items[2:]  # weight 0: by similarity (the index's ranking, HNSW being approximate)
    assert len(rest) == 1 and titles[rest[0].node_id] not in weight
    assert r.items[0].score == pytest.approx(3 + score[expected[0]], abs=2e-3)  # weight + similarity
    assert rest[0].score == pytest.approx(score[rest[0].node_id], abs=2e-3)
    # the default weighs an occurrence by the entity's idf: log(chunks / chunks mentioning falcon (2))
    n = corpus.db.read_one("MATCH (c:Chunk) RETURN count(c) AS n")["n"]
    r_idf = corpus.retrieve(q, "e2graphrag", top_k=3)
    assert [i.node_id for i in r_idf.items][:2] == expected[:2]
    idf = math.log(n / 2)
    assert r_idf.items[0].score == pytest.approx(3 * idf + score[expected[0]], abs=2e-3)
    assert r_idf.items[1].score == pytest.approx(1 * idf + score[expected[1]], abs=2e-3)


def test_entities_without_a_pair_within_h_are_global_with_occurrence_ranking(corpus: GraphStrata) -> None:
    # falcon and tulip are in different components: no path at all
    r = corpus.retrieve("Did the falcon see the tulip?", "e2graphrag", top_k=5)
    assert r.notes["branch"] == "global+occurrence"
    assert r.notes["reason"] == "no entity pair within h hops"
    assert r.notes["pairs"] == [{"a": "falcon", "b": "tulip", "within_h": False}]
    titles = [i.doc_titles[0] for i in r.items]
    assert titles[0] == "Aerie"  # 3 occurrences
    assert set(titles[1:3]) == {"Burrow", "Garden"}  # 1 each (falcon / tulip)
    # kettle - anvil - saddle: 2 hops. h = 1 drops the pair; h = 2 keeps it and maps to Forge
    q = "How is the kettle related to the saddle?"
    r = corpus.retrieve(q, "e2graphrag", hops=1)
    assert r.notes["branch"] == "global+occurrence"
    assert r.items[0].doc_titles == ["Forge"]
    r = corpus.retrieve(q, "e2graphrag", hops=2, fill=False)
    assert r.notes["branch"] == "local" and r.notes["local"] == "direct"
    assert [i.doc_titles for i in r.items] == [["Forge"]]
    assert r.items[0].text.startswith("kettle-saddle: Forge\n")


def test_a_pair_with_no_shared_chunk_is_global_with_occurrence_ranking(corpus: GraphStrata) -> None:
    # kettle and bellows are 2 hops apart (via anvil) but no chunk mentions both
    r = corpus.retrieve("Is the kettle older than the bellows?", "e2graphrag", top_k=5)
    assert r.notes["pairs"] == [{"a": "kettle", "b": "bellow", "within_h": True}]
    assert r.notes["branch"] == "global+occurrence"
    assert r.notes["reason"] == "no chunk holds both entities of a pair within h hops"
    assert r.notes["h_history"] == [[4, 0]]
    assert {i.doc_titles[0] for i in r.items[:2]} == {"Forge", "Smithy"}


def test_local_direct_merges_adjacent_chunks_in_document_order(corpus: GraphStrata) -> None:
    q = "Was the lantern near the violin?"
    assert query_entities(q) == ["lantern", "violin"]
    r = corpus.retrieve(q, "e2graphrag", fill=False)
    assert r.notes["branch"] == "local" and r.notes["local"] == "direct"
    assert r.notes["h_history"] == [[4, 3]]
    workshop = chunk_ids(corpus.db, "Workshop")
    attic = chunk_ids(corpus.db, "Attic")
    # by hand: Workshop chunks 0 and 1 hold both entities (4 and 2 occurrences), chunk 2 and 3
    # neither; Attic's one chunk holds both (2). One group "lantern-violin"; Workshop (best chunk
    # first) with its adjacent chunks 0+1 merged, then Attic.
    assert [i.chunk_ids for i in r.items] == [workshop[:2], attic]
    ids = encoder().encode_ordinary(" ".join(WORKSHOP))
    merged = encoder().decode(ids[: 14 + 21])  # windows [0, 21) and [14, 35): the overlap once
    assert r.items[0].text == f"lantern-violin: Workshop\n{merged}"
    assert r.items[1].text == "lantern-violin: Attic\nThe violin lay under the lantern."
    assert r.chunk_ids() == workshop[:2] + attic
    assert all(i.label == "Chunk" for i in r.items)
    assert set(r.subgraph.nodes) >= set(workshop[:2] + attic)


def test_local_tightens_h_while_more_than_25_chunks(corpus: GraphStrata) -> None:
    q = "Where did the kayak, the paddle and the canyon go?"
    assert query_entities(q) == ["kayak", "paddle", "canyon"]
    r = corpus.retrieve(q, "e2graphrag", fill=False, max_df_share=1.0)  # kayak and canyon are common here
    # by hand: kayak-paddle 1 hop (3 Shed chunks), kayak-canyon 2 hops (30 Trip chunks),
    # paddle-canyon 3 hops (no chunk): 33 chunks for h = 4, 3, 2; 3 for h = 1
    assert r.notes["branch"] == "local" and r.notes["local"] == "tightened"
    assert r.notes["h_history"] == [[4, 33], [3, 33], [2, 33], [1, 3]]
    assert r.notes["h"] == 1
    assert sorted(i.doc_titles[0] for i in r.items) == ["Shed 0", "Shed 1", "Shed 2"]
    assert all(i.text.startswith("kayak-paddle: Shed ") for i in r.items)


def test_local_falls_back_to_entity_aware_ranking_when_tightening_empties(corpus: GraphStrata) -> None:
    q = "Was the anchor tied to the rope and the buoy?"
    assert query_entities(q) == ["anchor", "rope", "buoy"]
    r = corpus.retrieve(q, "e2graphrag", top_k=5, max_df_share=1.0)  # anchor and rope are common here
    # by hand: all three pairs co-occur directly, so 28 chunks at every h down to 1 and none at 0;
    # the 28 of h = 1 are ranked by distinct query entities, then occurrences:
    # Dock 00 (3 entities, 7), 01 (3, 4), 02 (3, 3), then Dock 03 (2, 4), 04 (2, 3); the rest (2, 2)
    assert r.notes["branch"] == "local" and r.notes["local"] == "entity-aware fallback"
    assert r.notes["h_history"] == [[4, 28], [3, 28], [2, 28], [1, 28], [0, 0]]
    assert r.notes["h"] == 1
    assert [i.doc_titles[0] for i in r.items] == ["Dock 00", "Dock 01", "Dock 02", "Dock 03", "Dock 04"]
    assert [i.text.split(":")[0] for i in r.items] == ["anchor-rope-buoy"] * 3 + ["anchor-rope"] * 2
    # without the bound the 28 chunks would all be returned
    r = corpus.retrieve(q, "e2graphrag", max_chunks=30, top_k=100, fill=False)
    assert r.notes["too_common"] == [] and r.notes["local"] == "direct" and len(r.chunk_ids()) == 28


def test_a_query_entity_in_more_chunks_than_local_mode_may_hold_is_left_out(corpus: GraphStrata) -> None:
    q = "Where did the kayak, the paddle and the canyon go?"
    # by hand: kayak is in 33 chunks (30 Trip, 3 Shed), canyon in 30, paddle in 3, of 71 chunks (67
    # one-chunk documents and the Workshop's 4); an entity is left out above max(1% of 71,
    # max_chunks = 25) chunks: kayak and canyon; paddle alone
    # has no pair, so the query is global with occurrence ranking, as for a single entity (§3.2)
    r = corpus.retrieve(q, "e2graphrag")
    assert r.notes["too_common"] == ["kayak", "canyon"] and r.notes["unmapped"] == []
    assert r.notes["mapped"] == ["paddle"]
    assert r.notes["branch"] == "global+occurrence" and r.notes["reason"] == "a single query entity"
    assert {i.doc_titles[0] for i in r.items[:3]} == {"Shed 0", "Shed 1", "Shed 2"}  # paddle's chunks first
    # the share counts once it is above max_chunks: 40% of 71 chunks = 28.4 (> 25): both out;
    # 45% = 31.95: canyon (30) stays, kayak (33) does not; 50% = 35.5: both stay
    assert corpus.retrieve(q, "e2graphrag", max_df_share=0.4).notes["too_common"] == ["kayak", "canyon"]
    assert corpus.retrieve(q, "e2graphrag", max_df_share=0.45).notes["too_common"] == ["kayak"]
    assert corpus.retrieve(q, "e2graphrag", max_df_share=0.5).notes["too_common"] == []
    # and max_chunks is the floor: at 40 both stay; the GDS path leaves out the same ones
    assert corpus.retrieve(q, "e2graphrag", max_chunks=40).notes["too_common"] == []
    gds = corpus.retrieve(q, "e2graphrag", graph_filter="gds")
    assert gds.notes["too_common"] == ["kayak", "canyon"] and gds.notes["branch"] == "global+occurrence"


def test_local_mode_fills_k_from_global_occurrence_ranking(corpus: GraphStrata) -> None:
    q = "Was the lantern near the violin?"
    local = corpus.retrieve(q, "e2graphrag", fill=False)
    r = corpus.retrieve(q, "e2graphrag", top_k=4)
    # the local evidence first, unchanged: 3 chunks (Workshop 0+1 merged, Attic), so one more of k = 4
    assert [i.chunk_ids for i in r.items[:2]] == [i.chunk_ids for i in local.items]
    assert r.notes["filled"] == 1 and len(r.items) == 3
    # by hand: among the 2k = 8 nearest collapsed-tree nodes, the Workshop summary weighs 6 (the
    # occurrences below it: 4 + 2), Attic 2 (already local), everything else 0, then similarity
    best, score = nearest(corpus, q, 8)
    titles = title_of(corpus)
    kinds = dict(
        (x["id"], x["l"])
        for x in corpus.db.read("MATCH (n) WHERE n:Chunk OR n:Summary RETURN n.id AS id, labels(n)[0] AS l")
    )
    summary = next(i for i in best if kinds[i] == "Summary") if "Summary" in {kinds[i] for i in best} else None
    taken = set(local.chunk_ids())
    rest = [c for c in best if c not in taken and titles[c] != "Attic"]
    expected = summary or max(rest, key=lambda c: score[c])
    assert r.items[2].node_id == expected
    assert corpus.retrieve(q, "e2graphrag", top_k=3).notes.get("filled", 0) == 0  # local already holds k


def test_entity_aware_ties_go_to_the_chunk_nearer_the_question() -> None:
    from graphstrata.retrieval.e2graphrag_rank import entity_aware_rank

    info = {
        "a": {"doc_id": "d1", "ordinal": 0, "occ": {"x": 1, "y": 1}},
        "b": {"doc_id": "d2", "ordinal": 0, "occ": {"x": 1, "y": 1}},
        "c": {"doc_id": "d3", "ordinal": 0, "occ": {"x": 2, "y": 1}},
        "d": {"doc_id": "d0", "ordinal": 0, "occ": {"x": 1, "y": 1, "z": 1}},
    }
    # coverage first (d), then occurrences (c), then similarity (b over a), not the documents' order
    assert entity_aware_rank(set(info), info, {"a": 0.1, "b": 0.9, "c": 0.0, "d": 0.0}) == ["d", "c", "b", "a"]
    assert entity_aware_rank(set(info), info) == ["d", "c", "a", "b"]  # no similarities: document order
    # weighted (idf): a rare entity outweighs two common ones; d (x, y, z) = 0.5 + 0.5 + 0.2 = 1.2
    # covers less than b (x, y) with x rare: 3 + 0.5 = 3.5; c and a the same weight as b, then
    # occurrences (c: 2·3 + 0.5), then similarity
    w = {"x": 3.0, "y": 0.5, "z": 0.2}
    info["d"]["occ"] = {"y": 1, "z": 1}
    assert entity_aware_rank(set(info), info, {"a": 0.1, "b": 0.9}, w) == ["c", "b", "a", "d"]


def test_gds_graph_filter_agrees_with_cypher(corpus: GraphStrata) -> None:
    for q, params in [
        ("Where did the kayak, the paddle and the canyon go?", {}),
        ("Was the anchor tied to the rope and the buoy?", {"top_k": 5}),
        ("How is the kettle related to the saddle?", {"hops": 1}),
        ("Did the falcon see the tulip?", {}),
    ]:
        a = corpus.retrieve(q, "e2graphrag", **params)
        b = corpus.retrieve(q, "e2graphrag", graph_filter="gds", **params)
        assert a.notes["branch"] == b.notes["branch"]
        assert a.notes.get("h_history") == b.notes.get("h_history")
        assert [i.node_id for i in a.items] == [i.node_id for i in b.items]


def test_one_round_trip_for_the_local_branch(corpus: GraphStrata, monkeypatch: pytest.MonkeyPatch) -> None:
    """Latency: the local branch reads the graph once (entities, pair distances, the entity→chunk
    index and the chunk texts in one statement); the global branches add the dense query."""
    from graphstrata.cypher import query
    from graphstrata.db import Database

    statements: list[str] = []
    read = Database.read_plain

    def counted(self: Database, cypher: str, **params: object) -> list[dict]:
        statements.append(cypher)
        return read(self, cypher, **params)

    monkeypatch.setattr(Database, "read_plain", counted)
    for q, branch, reads in [
        ("Was the lantern near the violin?", "local", 2),  # 3 local chunks < k: the dense read fills
        ("Where did the kayak, the paddle and the canyon go?", "local", 2),  # tightened: still one local read
        ("Tell me about the falcon.", "global+occurrence", 2),
        ("What is it?", "global", 1),  # no entity: no graph read at all, only the dense one
    ]:
        statements.clear()
        r = corpus.retrieve(q, "e2graphrag", max_df_share=1.0)
        assert r.notes["branch"] == branch
        assert len(statements) == reads, q
    # the raw rows are what Database.read returns
    text = query("e2graphrag.local_index").replace("MAX_HOPS", "4")
    vector = corpus.embedder.embed(["lantern"])[0].tolist()
    params = {"names": ["lantern", "violin"], "inline": 100, "vector": vector, "max_df_share": 0.01, "min_df": 25}
    assert read(corpus.db, text, **params) == corpus.db.read(text, **params)
