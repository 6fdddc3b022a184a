"""KET-RAG retrieval on hand-made data whose seeds, relation order and sub-chunks are computed here."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest.pipeline import IngestOptions
from graphstrata.text.tokens import count_tokens

pytest_plugins = ["tests.conftest_llm"]

ENTITIES = ["Marie Curie", "Pierre Curie", "polonium", "radium", "Paris", "banana", "tropics"]
RELATIONS = [  # (id, subject, object, text, chunk)
    ("r1", "Marie Curie", "polonium", "Marie Curie discovered polonium", "c1"),
    ("r2", "Marie Curie", "Pierre Curie", "Marie Curie married Pierre Curie", "c1"),
    ("r3", "Pierre Curie", "Paris", "Pierre Curie lived in Paris", "c2"),
    ("r4", "banana", "tropics", "Bananas grow in the tropics", "c3"),
    ("r5", "Marie Curie", "radium", "Marie Curie isolated radium", "c2"),
]
CHUNKS = {"c1": "Curie notes", "c2": "Paris notes", "c3": "Fruit notes"}


@pytest.fixture
def kg(graph: Database, neo4j_settings: Settings) -> GraphStrata:
    gs = GraphStrata(neo4j_settings, db=graph)
    vec = dict(zip(ENTITIES, gs.embedder.embed(ENTITIES).tolist(), strict=True))
    rel_vec = gs.embedder.embed([r[3] for r in RELATIONS]).tolist()
    graph.write(
        "UNWIND $rows AS r CREATE (e:Entity {id: r.name, name: r.name, description: 'about ' + r.name}) "
        "WITH e, r CALL db.create.setNodeVectorProperty(e, 'embedding', r.v)",
        rows=[{"name": n, "v": vec[n]} for n in ENTITIES],
    )
    for cid, title in CHUNKS.items():
        sub_text = f"{title}: " + " ".join(r[3] + "." for r in RELATIONS if r[4] == cid)
        graph.write(
            "CREATE (c:Chunk {id: $c, doc_title: $t})-[:HAS_PART]->(s:SubChunk {id: $c + '-s', text: $x}) "
            "WITH s CALL db.create.setNodeVectorProperty(s, 'embedding', $v)",
            c=cid,
            t=title,
            x=sub_text,
            v=gs.embedder.embed([sub_text])[0].tolist(),
        )
    for (rid, s, o, text, cid), v in zip(RELATIONS, rel_vec, strict=True):
        graph.write(
            "MATCH (s:Entity {id: $s}), (o:Entity {id: $o}), (c:Chunk {id: $c}) "
            "CREATE (s)-[:SUBJECT_OF]->(r:Relation {id: $id, text: $t, subject: $s, predicate: 'relates to', "
            "object: $o})-[:OBJECT]->(o), (c)-[:HAS_RELATION]->(r), "
            "(c)-[:MENTIONS]->(s), (c)-[:MENTIONS]->(o) "
            "WITH r CALL db.create.setNodeVectorProperty(r, 'embedding', $v)",
            s=s,
            o=o,
            c=cid,
            id=rid,
            t=text,
            v=v,
        )
    graph.write("CALL db.awaitIndexes(60)")
    return gs


def test_skeleton_seeds_relations_and_subchunks(kg: GraphStrata) -> None:
    question = "What did Marie Curie discover?"
    r = kg.retrieve(question, "ketrag-skeleton", seed_entities=3, budget=2000)
    # seeds: top-3 entities by cosine, computed independently
    q = kg.embedder.embed([question])[0]
    ev = kg.embedder.embed(ENTITIES)
    seeds = [ENTITIES[i] for i in np.argsort(-(ev @ q))[:3]]
    assert [i.node_id for i in r.items if i.label == "Entity"] == seeds
    # relations: adjacent to seeds; joining two seeds first, then by cosine to the question
    rv = dict(zip([x[0] for x in RELATIONS], kg.embedder.embed([x[3] for x in RELATIONS]) @ q, strict=True))
    adjacent = [(x[0], (x[1] in seeds) + (x[2] in seeds)) for x in RELATIONS if x[1] in seeds or x[2] in seeds]
    expected = [rid for rid, _ in sorted(adjacent, key=lambda a: (-a[1], -rv[a[0]]))]
    assert [i.node_id for i in r.items if i.label == "Relation"] == expected
    # sub-chunks: chunks most linked to the seeds and chosen relations come first
    assert next(i.node_id for i in r.items if i.label == "SubChunk") == "c1-s"
    assert "c3-s" not in [i.node_id for i in r.items]  # the fruit chunk touches no seed
    assert r.notes["lambda"] == 1.0 and r.tokens <= 2000


def test_relations_without_vectors_are_ranked_by_id_among_equals(kg: GraphStrata) -> None:
    # spaCy's relations have no vector: they all score 0, and the ones joining equally many seeds
    # must come in one order whatever order the store and the query plan read them in
    kg.db.write("MATCH (r:Relation) REMOVE r.embedding")
    kg.db.write("MATCH (r:Relation {id: 'r5'}) DETACH DELETE r")
    kg.db.write(  # r9 is written last: the store reads it first (newest first), the id order last
        "MATCH (s:Entity {id: 'Marie Curie'}), (o:Entity {id: 'radium'}), (c:Chunk {id: 'c2'}) "
        "CREATE (s)-[:SUBJECT_OF]->(r:Relation {id: 'r9', text: 'Marie Curie isolated radium', "
        "subject: 'Marie Curie', predicate: 'relates to', object: 'radium'})-[:OBJECT]->(o), (c)-[:HAS_RELATION]->(r)"
    )
    question = "What did Marie Curie discover?"
    r = kg.retrieve(question, "ketrag-skeleton", seed_entities=3, budget=2000)
    seeds = {i.node_id for i in r.items if i.label == "Entity"}
    rows = [("r9", "Marie Curie", "radium"), *[(x[0], x[1], x[2]) for x in RELATIONS if x[0] != "r5"]]
    adjacent = [(rid, (s in seeds) + (o in seeds)) for rid, s, o in rows if s in seeds or o in seeds]
    expected = [rid for rid, _ in sorted(adjacent, key=lambda a: (-a[1], a[0]))]
    assert len(expected) >= 3
    assert [i.node_id for i in r.items if i.label == "Relation"] == expected


def test_relation_share_bounds_the_graph_part(kg: GraphStrata) -> None:
    r = kg.retrieve("What did Marie Curie discover?", "ketrag-skeleton", seed_entities=5, budget=60, relation_share=0.5)
    graph_tokens = sum(i.tokens for i in r.items if i.label in ("Entity", "Relation"))
    assert 0 < graph_tokens <= 30 and r.tokens <= 60


def test_skeleton_keeps_the_chunks_nearest_the_question_among_equally_linked(
    graph: Database, neo4j_settings: Settings
) -> None:
    """21 chunks each mention the one seed once; the skeleton reads at most 20 chunks (Algorithm 2, line
    3): the one left out is the chunk whose sub-chunk is farthest from the question (cosine, numpy)."""
    gs = GraphStrata(neo4j_settings, db=graph)
    topics = ["rivers", "bread", "volcanoes", "radium", "chess", "tides", "violins", "glaciers", "comets"]
    texts = [f"Curie notes {i} on {topics[i % len(topics)]} and item {i * 7}" for i in range(21)]
    vectors = gs.embedder.embed(texts)
    graph.write(
        "CREATE (e:Entity {id: 'curie', name: 'Marie Curie', description: 'a physicist'}) "
        "WITH e CALL db.create.setNodeVectorProperty(e, 'embedding', $v)",
        v=gs.embedder.embed(["Marie Curie"])[0].tolist(),
    )
    graph.write(
        "MATCH (e:Entity {id: 'curie'}) UNWIND $rows AS r "
        "CREATE (c:Chunk {id: r.id, doc_title: r.id})-[:MENTIONS]->(e), "
        "(c)-[:HAS_PART]->(s:SubChunk {id: r.id + '-s', text: r.text}) "
        "WITH s, r CALL db.create.setNodeVectorProperty(s, 'embedding', r.v)",
        rows=[
            {"id": f"c{i:02d}", "text": t, "v": v.tolist()} for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
        ],
    )
    graph.write("CALL db.awaitIndexes(60)")
    question = "What did Marie Curie find about radium?"
    r = gs.retrieve(question, "ketrag-skeleton", seed_entities=1, budget=20_000, relation_share=0.1)
    q = gs.embedder.embed([question])[0]
    cos = vectors @ q / np.linalg.norm(vectors, axis=1) / np.linalg.norm(q)
    got = {i.node_id for i in r.items if i.label == "SubChunk"}
    assert got == {f"c{i:02d}-s" for i in np.argsort(-cos)[:20]}


DOCS = [
    ("Volcanoes", "Volcanoes erupt molten lava. Lava cools into basalt rock. Basalt covers ocean floors."),
    ("Glaciers", "Glaciers carve valleys from rock. Ice sheets cover Antarctica. Glaciers move slowly."),
    ("Bread", "Bakers knead dough with yeast. Yeast makes bread rise. Ovens bake the bread."),
    ("Reefs", "Coral reefs grow in warm ocean water. Reefs shelter fish. Warm water bleaches coral."),
]


def test_keyword_channel_ranks_its_candidates_by_cosine(graph: Database, neo4j_settings: Settings) -> None:
    gs = GraphStrata(neo4j_settings, db=graph)
    gs.ingest_texts(DOCS, IngestOptions(extractor="none"))
    question = "What happens to lava when it cools?"
    budget = 60
    r = gs.retrieve(question, "ketrag-keyword", budget=budget, keyword_pool=1.0)
    q = gs.embedder.embed([question])[0]
    # reference: keywords by cosine of their stored (summed) embedding; add until the pool holds the budget
    kws = graph.read(
        "MATCH (k:Keyword)-[:OCCURS_IN]->(s:SubChunk) RETURN k.term AS t, k.id AS id, k.embedding AS e, "
        "collect({id: s.id, tokens: s.tokens, e: s.embedding}) AS subs"
    )
    sim = {k["t"]: float(np.asarray(k["e"]) @ q / np.linalg.norm(k["e"])) for k in kws}
    pool, tokens = {}, 0
    for k in sorted(kws, key=lambda k: (-sim[k["t"]], k["id"])):  # equal vectors: by id
        for s in sorted(k["subs"], key=lambda s: s["id"]):
            if s["id"] not in pool:
                pool[s["id"]] = s
                tokens += s["tokens"]
        if tokens >= budget:
            break
    assert r.notes["seed_keywords"][0] == max(sim, key=sim.get)
    cos = {i: float(np.asarray(s["e"]) @ q / np.linalg.norm(s["e"])) for i, s in pool.items()}
    got = [i.node_id for i in r.items]
    assert got and set(got) <= set(pool)
    assert [i for i in sorted(pool, key=lambda i: -cos[i]) if i in got] == got  # cosine order
    assert r.items[0].doc_titles == ["Volcanoes"] and r.tokens <= budget
    assert all(i.tokens == count_tokens(i.text) for i in r.items)


@pytest.mark.parametrize("budget", [60, 250])
def test_seed_keywords_are_read_only_as_far_as_the_pool_needs(
    graph: Database, neo4j_settings: Settings, budget: int
) -> None:
    """Algorithm 4, line 2, against a reference over every keyword's sub-chunks: the same seed keywords
    (at 250 tokens more than the first read's batch of keywords), and no keyword's sub-chunks read past
    the batch that filled the pool."""
    from graphstrata.retrieval.ketrag import KEYWORD_BATCH

    gs = GraphStrata(neo4j_settings, db=graph)
    # 24 more short documents, each on words of its own, so that many keywords hold a few sub-chunks each
    words = [
        "amber",
        "basil",
        "cedar",
        "delta",
        "ember",
        "fjord",
        "garnet",
        "harbor",
        "iris",
        "juniper",
        "kelp",
        "lagoon",
    ]
    more = [
        (f"Note {i}", f"The {a} lies near the {b}. A {a} and a {b} meet at dawn.")
        for i, (a, b) in enumerate((a, b) for a in words[:6] for b in words[6:])
    ][:24]
    gs.ingest_texts(DOCS + more, IngestOptions(extractor="none"))
    question = "What happens to lava when it cools?"
    r = gs.retrieve(question, "ketrag-keyword", budget=budget, keyword_pool=1.0, max_keywords=50)
    q = gs.embedder.embed([question])[0]
    kws = graph.read(
        "MATCH (k:Keyword)-[:OCCURS_IN]->(s:SubChunk) RETURN k.term AS t, k.id AS id, k.embedding AS e, "
        "collect({id: s.id, tokens: s.tokens}) AS subs"
    )
    ranked = sorted(kws, key=lambda k: (-float(np.asarray(k["e"]) @ q / np.linalg.norm(k["e"])), k["id"]))[:50]
    pool, tokens, seeds = set(), 0, []
    for k in ranked:
        seeds.append(k["t"])
        for sub in k["subs"]:
            if sub["id"] not in pool:
                pool.add(sub["id"])
                tokens += sub["tokens"]
        if tokens >= budget:
            break
    assert tokens >= budget and len(seeds) < len(ranked)  # the pool fills before the keywords run out
    assert r.notes["seed_keywords"] == seeds and r.notes["keyword_candidates"] == len(pool)
    # batches of 4, 8, 16 …: the read that filled the pool is the last
    sizes, read = [], 0
    while read < len(seeds):
        sizes.append(min(KEYWORD_BATCH * 2 ** len(sizes), len(ranked) - read))
        read += sizes[-1]
    assert r.notes["keywords_read"] == read < len(ranked)
    if budget == 250:
        assert len(seeds) > KEYWORD_BATCH


def test_ketrag_splits_the_budget(kg: GraphStrata) -> None:
    kg.ingest_texts(DOCS[:2], IngestOptions(extractor="none"))
    r = kg.retrieve("What did Marie Curie discover about lava?", "ketrag", lam=0.5, budget=200, seed_entities=3)
    skeleton = [i for i in r.items if i.why.startswith(("seed entity", "relation", "sub-chunk of a chunk"))]
    keyword = [i for i in r.items if i.why == "sub-chunk of a seed keyword"]
    assert skeleton and keyword
    assert sum(i.tokens for i in skeleton) <= 100 and r.tokens <= 200


def test_the_keyword_pool_is_sized_by_the_whole_budget(kg: GraphStrata) -> None:
    """With the skeleton channel beside it (lambda 0.5) the keyword channel ranks every candidate it ranks
    alone (lambda 0): the seed keywords alone are the first of those with both channels."""
    kg.ingest_texts(DOCS, IngestOptions(extractor="none"))
    question = "What did Marie Curie discover about lava?"
    alone = kg.retrieve(question, "ketrag-keyword", budget=30, keyword_pool=1.0)
    both = kg.retrieve(question, "ketrag", budget=30, keyword_pool=1.0, lam=0.5, seed_entities=3, relation_share=1.0)
    assert sum(i.tokens for i in both.items if i.why != "sub-chunk of a seed keyword") > 0  # the skeleton took some
    seeds, seeds_both = alone.notes["seed_keywords"], both.notes["seed_keywords"]
    assert len(seeds) >= 2 and seeds_both[: len(seeds)] == seeds
    assert both.notes["keyword_candidates"] >= alone.notes["keyword_candidates"]


@pytest.mark.parametrize("entry", ["ingest_ketrag", "options"])
def test_ketrag_profile_extracts_only_core_chunks(
    graph: Database, neo4j_settings: Settings, fake_openai, tmp_path, entry: str
) -> None:
    settings = neo4j_settings.model_copy(
        update={
            "openai_base_url": fake_openai.base_url,
            "openai_api_key": fake_openai.api_key,
            "chat_model": "fake-chat",
            "cache_dir": tmp_path,
        }
    )
    docs = [(t, x) for t, x in DOCS] + [
        ("Curie", "Marie Curie discovered polonium in Paris. She won two Nobel Prizes.")
    ]
    folder = tmp_path / "docs"
    folder.mkdir()
    for t, x in docs:
        (folder / f"{t}.txt").write_text(x)
    gs = GraphStrata(settings, db=graph)
    if entry == "ingest_ketrag":
        report = gs.ingest_ketrag([folder], beta=0.4, knn_k=2)
    else:  # the profile as an ingest option, as the CLI and the HTTP API give it
        report = gs.ingest([folder], IngestOptions(profile="ketrag", ketrag_beta=0.4, ketrag_knn_k=2))
    core = {r["id"] for r in graph.read("MATCH (c:Chunk) WHERE c.is_core RETURN c.id AS id")}
    n_chunks = graph.read_one("MATCH (c:Chunk) RETURN count(c) AS n")["n"]
    assert len(core) == 2 == report.ketrag["core_chunks"] and n_chunks == 5  # ceil(0.4 * 5)
    assert report.ketrag["llm_calls_saved"] == 3 and report.ketrag["prompt_tokens_saved"] > 0
    assert (report.documents_new, report.documents_replaced) == (5, 0)  # a fresh corpus: five new documents
    assert fake_openai.calls_by_path.get("/v1/chat/completions", 0) == 2  # one extraction per core chunk
    with_relations = {
        r["id"] for r in graph.read("MATCH (c:Chunk)-[:HAS_RELATION|HAS_UNIT]->() RETURN DISTINCT c.id AS id")
    }
    assert with_relations and with_relations <= core  # the skeleton comes from core chunks only
    # the keyword graph covers every chunk
    assert (
        graph.read_one("MATCH (c:Chunk) WHERE NOT (c)-[:HAS_PART]->()<-[:OCCURS_IN]-() RETURN count(c) AS n")["n"] == 0
    )


def test_ketrag_profile_options_are_checked() -> None:
    with pytest.raises(ValueError, match="ketrag_beta"):
        IngestOptions(profile="ketrag", ketrag_beta=0)
    with pytest.raises(ValueError, match="profile"):
        IngestOptions(profile="skeleton")


DESCRIBED = [
    {
        "title": "Can makers",
        "text": "Zephyr Kline built a can that seals itself. The Tin Can Museum in Ohio shows it.",
        "entities": [
            {"name": "Zephyr Kline", "type": "PERSON", "description": "inventor of the self-sealing tin can"},
            {"name": "Tin Can Museum", "type": "ORGANIZATION", "description": "a packaging museum"},
            {"name": "Ohio", "type": "LOCATION"},
        ],
        "triples": [["Tin Can Museum", "located in", "Ohio"], ["Tin Can Museum", "shows work of", "Zephyr Kline"]],
    }
]


def test_entities_the_question_names_seed_the_skeleton_first(
    graph: Database, neo4j_settings: Settings, tmp_path
) -> None:
    # seed_mentions: the graph entities the question names (the shared query linking) lead the seeds,
    # however far their embeddings are; without it the seeds are the embedding's nearest alone
    import json

    path = tmp_path / "described.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in DESCRIBED) + "\n")
    gs = GraphStrata(neo4j_settings, db=graph)
    gs.ingest_extractions(path, IngestOptions())
    gs.augment(["entity_descriptions"])
    question = "Who invented the self-sealing tin can sold in Ohio?"
    plain = gs.retrieve(question, "ketrag-skeleton", seed_entities=2, budget=2000, seed_mentions=False)
    assert "Ohio" not in plain.notes["seeds"] and "mention" not in plain.notes["seeds_matched_by"]
    named = gs.retrieve(question, "ketrag-skeleton", seed_entities=2, budget=2000)
    assert named.notes["seeds"] == ["Ohio", *plain.notes["seeds"]]
    assert named.notes["seeds_matched_by"]["mention"] == 1
    # its relation (Tin Can Museum; located in; Ohio) joins two seeds now: it leads the relations
    first = next(i.text for i in named.items if i.label == "Relation")
    assert first.startswith("(Tin Can Museum; located in; Ohio)")


def test_skeleton_seeds_are_matched_by_their_written_descriptions(
    graph: Database, neo4j_settings: Settings, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # KET-RAG §5.1 / GraphRAG local search: an entity a model (here: the user) described is matched by
    # the embedding of "name: description"; one without a description by its name
    import json

    path = tmp_path / "described.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in DESCRIBED) + "\n")
    gs = GraphStrata(neo4j_settings, db=graph)
    gs.ingest_extractions(path, IngestOptions())
    [report] = gs.augment(["entity_descriptions"])
    assert report.counts["described"] == 2 and report.counts["embedded"] == 2
    question = "Who invented the self-sealing tin can?"
    q = gs.embedder.embed([question])[0]
    texts = {
        "Zephyr Kline": "Zephyr Kline: inventor of the self-sealing tin can",
        "Tin Can Museum": "Tin Can Museum: a packaging museum",
        "Ohio": "Ohio",
    }
    ref = dict(zip(texts, gs.embedder.embed(list(texts.values())) @ q, strict=True))
    by_name = dict(zip(texts, gs.embedder.embed(list(texts)) @ q, strict=True))
    expected = sorted(ref, key=lambda n: -ref[n])
    assert expected[0] != max(by_name, key=by_name.get)  # by name alone the museum would lead
    r = gs.retrieve(question, "ketrag-skeleton", seed_entities=3, budget=2000)
    assert r.notes["seeds"] == expected, r.items
    assert r.notes["seeds_matched_by"] == {"description": 2, "name": 1}
    # incremental: a second run embeds nothing; a description that goes clears its vector
    assert gs.augment(["entity_descriptions"])[0].counts["embedded"] == 0
    graph.write("MATCH (:Chunk)-[m:MENTIONS]->(:Entity {name: 'Tin Can Museum'}) SET m.description = null")
    assert gs.augment(["entity_descriptions"])[0].counts["cleared"] == 1
    r = gs.retrieve(question, "ketrag-skeleton", seed_entities=3, budget=2000)
    assert r.notes["seeds_matched_by"] == {"description": 1, "name": 2}
    expected_after_clear = r.notes["seeds"]
    # a graph from before the description index still answers, by names: the indexes are checked once
    # per connection and graph version (when the graph is opened for questions), no query fails
    from graphstrata import schema

    graph.write("DROP INDEX entity_description_embedding")
    checks: list[int] = []
    read_indexes = schema._online_indexes
    monkeypatch.setattr(schema, "_online_indexes", lambda db: checks.append(1) or read_indexes(db))
    with Database.from_settings(neo4j_settings) as older:  # the graph opened as an older build left it
        old_gs = GraphStrata(neo4j_settings, db=older)
        for _ in range(3):
            r = old_gs.retrieve(question, "ketrag-skeleton", seed_entities=3, budget=2000)
            assert r.notes["seeds_matched_by"] == {"description": 0, "name": 3}
            assert r.notes["seeds"] == sorted(by_name, key=lambda n: -by_name[n])
        assert len(checks) == 1  # read when first asked, then kept
        # a build that adds the index marks the graph changed: the open connection sees it at once
        from graphstrata.schema import apply_schema

        apply_schema(graph, gs.embedder.name, gs.embedder.dim)
        r = old_gs.retrieve(question, "ketrag-skeleton", seed_entities=3, budget=2000)
        assert r.notes["seeds_matched_by"] == {"description": 1, "name": 2}
        assert r.notes["seeds"] == expected_after_clear


def test_an_item_cap_is_split_by_lambda_like_the_budget(kg: GraphStrata) -> None:
    kg.ingest_texts(DOCS, IngestOptions(extractor="none"))
    question = "What did Marie Curie discover about lava?"
    r = kg.retrieve(question, "ketrag", lam=0.2, budget=5000, top_k=10, seed_entities=5)
    skeleton = [i for i in r.items if not i.why.startswith("sub-chunk of a seed keyword")]
    keyword = [i for i in r.items if i.why.startswith("sub-chunk of a seed keyword")]
    # round(0.2 * 10) = 2 items for the skeleton (one of them text), the other 8 for the keywords
    assert len(skeleton) == 2 and [i.label for i in skeleton].count("SubChunk") == 1
    assert 1 <= len(keyword) <= 8 and len(r.items) <= 10
    # alone (lambda 1), the skeleton's cap is half entities and relations, half text
    s = kg.retrieve(question, "ketrag-skeleton", budget=5000, top_k=4, seed_entities=5)
    assert [i.label for i in s.items].count("SubChunk") == 2 and len(s.items) == 4


def test_both_channels_text_is_one_list_by_cosine(kg: GraphStrata) -> None:
    kg.ingest_texts(DOCS, IngestOptions(extractor="none"))
    question = "Marie Curie discovered polonium; lava cools into basalt"
    r = kg.retrieve(question, "ketrag", lam=0.5, budget=400, seed_entities=3)
    text = [i for i in r.items if i.label == "SubChunk"]
    whys = {i.why.startswith("sub-chunk of a seed keyword") for i in text}
    assert whys == {True, False}  # both channels contributed text
    q = kg.embedder.embed([question])[0]
    vecs = {x["id"]: np.asarray(x["e"]) for x in kg.db.read("MATCH (s:SubChunk) RETURN s.id AS id, s.embedding AS e")}
    cos = {i.node_id: float(vecs[i.node_id] @ q / np.linalg.norm(vecs[i.node_id])) for i in text}
    assert [i.node_id for i in text] == sorted(cos, key=lambda k: -cos[k])
    # all text first, the graph's entities and relations after it
    labels = [i.label for i in r.items]
    assert labels[: len(text)] == ["SubChunk"] * len(text) and len(labels) > len(text)
