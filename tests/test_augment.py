"""Augmentation stages on small graphs whose answers are computed independently (networkx, numpy)."""

from __future__ import annotations

import itertools
import json
import math

import networkx as nx
import numpy as np
import pytest

from graphstrata.augment import AugmentContext, run
from graphstrata.augment.noderag import k_default, select_important
from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest.pipeline import IngestOptions

DOCS = [
    ("Seine", "The Seine flows through Paris. Paris is the capital of France. The Seine reaches Le Havre."),
    ("Loire", "The Loire is the longest river in France. The Loire flows past Orleans and Tours."),
    ("Danube", "The Danube flows through Vienna and Budapest. Vienna is the capital of Austria."),
    ("Rhine", "The Rhine flows through Basel and Cologne. Cologne is a city in Germany on the Rhine."),
    ("Tokyo", "Tokyo is the capital of Japan. Tokyo hosted the Olympic Games in 1964 and 2021."),
    ("Kyoto", "Kyoto was the capital of Japan for a thousand years. Kyoto has many temples."),
]


@pytest.fixture
def ctx(graph: Database, neo4j_settings: Settings) -> AugmentContext:
    gs = GraphStrata(neo4j_settings, db=graph)
    gs.ingest_texts(DOCS, IngestOptions(extractor="spacy"))
    return AugmentContext(graph, gs.embedder, neo4j_settings)


def counts(db: Database) -> dict:
    labels = {r["l"]: r["n"] for r in db.read("MATCH (n) RETURN labels(n)[0] AS l, count(*) AS n")}
    rels = {r["t"]: r["n"] for r in db.read("MATCH ()-[r]->() RETURN type(r) AS t, count(*) AS n")}
    return labels | rels


@pytest.mark.parametrize(
    ("exact_up_to", "approximate"), [(20_000, "ivf"), (0, "ivf"), (0, "gds")], ids=["exact", "ivf", "gds-knn"]
)
def test_chunk_knn_matches_brute_force(ctx: AugmentContext, exact_up_to: int, approximate: str) -> None:
    # every way to the layer: exact top-k in numpy, the inverted file and GDS KNN (larger graphs)
    ctx.params = ctx.params.model_copy(update={"knn_exact_max_nodes": exact_up_to, "knn_approximate": approximate})
    run(ctx, ["chunk_knn"])
    db = ctx.db
    chunks = db.read("MATCH (c:Chunk) RETURN c.id AS id, c.embedding AS e ORDER BY id")
    ids = [c["id"] for c in chunks]
    v = np.array([c["e"] for c in chunks])
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    cos = v @ v.T
    np.fill_diagonal(cos, -np.inf)
    expected = {tuple(sorted((ids[i], ids[j]))) for i in range(len(ids)) for j in np.argsort(-cos[i])[:3]}
    got = {
        (r["a"], r["b"]): r["s"]
        for r in db.read(
            "MATCH (a:Chunk)-[r:SIMILAR {kind: 'semantic'}]->(b:Chunk) RETURN a.id AS a, b.id AS b, r.score AS s"
        )
    }
    assert {tuple(sorted(k)) for k in got} == expected
    for (a, b), s in got.items():
        assert s == pytest.approx(cos[ids.index(a), ids.index(b)], abs=1e-5)
    # lexical: number of shared keywords, top-3 per chunk (ties by id), from the stored keyword graph
    kw = {
        c: set(ks)
        for c, ks in (
            (r["c"], r["ks"])
            for r in db.read(
                "MATCH (c:Chunk)-[:HAS_PART]->()<-[:OCCURS_IN]-(k:Keyword) RETURN c.id AS c, collect(k.id) AS ks"
            )
        )
    }
    lex_expected = set()
    for c in ids:
        others = sorted((o for o in ids if o != c and kw[c] & kw[o]), key=lambda o: (-len(kw[c] & kw[o]), ids.index(o)))
        lex_expected |= {tuple(sorted((c, o))) for o in others[:3]}
    lex = db.read("MATCH (a:Chunk)-[r:SIMILAR {kind: 'lexical'}]->(b:Chunk) RETURN a.id AS a, b.id AS b, r.score AS s")
    assert {(r["a"], r["b"]) for r in lex} == lex_expected and lex_expected
    assert all(r["s"] == len(kw[r["a"]] & kw[r["b"]]) for r in lex)


def test_core_chunks_match_networkx_pagerank(ctx: AugmentContext) -> None:
    run(ctx, ["chunk_knn"])
    ctx.params = ctx.params.model_copy(update={"beta": 0.5})
    run(ctx, ["core_chunks"])
    g = nx.Graph()
    g.add_nodes_from(r["id"] for r in ctx.db.read("MATCH (c:Chunk) RETURN c.id AS id"))
    g.add_edges_from(
        (r["a"], r["b"]) for r in ctx.db.read("MATCH (a:Chunk)-[:SIMILAR]->(b:Chunk) RETURN a.id AS a, b.id AS b")
    )
    ref = nx.pagerank(g, alpha=0.85, tol=1e-12)
    rows = {r["id"]: r for r in ctx.db.read("MATCH (c:Chunk) RETURN c.id AS id, c.pagerank AS p, c.is_core AS core")}
    ours = np.array([rows[n]["p"] for n in g.nodes])
    np.testing.assert_allclose(ours / ours.sum(), [ref[n] for n in g.nodes], atol=1e-4)
    expected_core = set(sorted(g.nodes, key=lambda n: (-ref[n], n))[: math.ceil(0.5 * len(g))])
    assert {n for n, r in rows.items() if r["core"]} == expected_core


def test_important_entity_rule_against_networkx() -> None:
    g = nx.powerlaw_cluster_graph(300, 4, 0.3, seed=1)
    k = k_default(g.number_of_nodes(), g.number_of_edges())
    mean_deg = 2 * g.number_of_edges() / g.number_of_nodes()
    assert k == math.floor(math.log(300) * math.sqrt(mean_deg))
    cores = nx.core_number(g)
    b = nx.betweenness_centrality(g, normalized=False)
    got = select_important({str(n): c for n, c in cores.items()}, {str(n): x for n, x in b.items()}, 300, k)
    mean_b = sum(b.values()) / 300
    expected = {str(n) for n in g if cores[n] >= k or b[n] > mean_b * 2}  # floor(log10 300) = 2
    assert got == expected and 0 < len(got) < 300


def test_important_entities_stage_uses_the_heterograph(ctx: AugmentContext) -> None:
    ctx.params = ctx.params.model_copy(update={"betweenness_samples": None})  # exact, as networkx
    report = run(ctx, ["important_entities"])[0]
    db = ctx.db
    g = nx.Graph()
    g.add_nodes_from(
        r["id"] for r in db.read("MATCH (n) WHERE n:Entity OR n:SemanticUnit OR n:Relation RETURN n.id AS id")
    )
    g.add_edges_from(
        (r["a"], r["b"])
        for r in db.read(
            "MATCH (a)-[:MENTIONS|SUBJECT_OF|OBJECT]->(b) WHERE (a:SemanticUnit OR a:Entity OR a:Relation) "
            "AND (b:Entity OR b:Relation) RETURN a.id AS a, b.id AS b"
        )
    )
    n = g.number_of_nodes()
    k = k_default(n, g.number_of_edges())
    assert report.notes["k_default"] == k and report.counts["g1_nodes"] == n
    cores = nx.core_number(g)
    b = nx.betweenness_centrality(g, normalized=False)
    entities = {r["id"] for r in db.read("MATCH (e:Entity) RETURN e.id AS id")}
    mean_b = sum(b.values()) / n
    expected = {e for e in entities if cores[e] >= k or b[e] > mean_b * math.floor(math.log10(n))}
    got = {r["id"] for r in db.read("MATCH (e:Entity)-[:HAS_ATTRIBUTE]->(a:Attribute) RETURN e.id AS id")}
    assert got == expected and got
    row = db.read_one("MATCH (e:Entity)-[:HAS_ATTRIBUTE]->(a) RETURN e.name AS n, a.text AS t, size(a.embedding) AS d")
    assert row["t"].startswith(row["n"] + ":") and row["d"] == 384
    before = counts(db)
    run(ctx, ["important_entities"])
    assert counts(db) == before


def test_leiden_communities_recover_planted_blocks(graph: Database, neo4j_settings: Settings) -> None:
    # two cliques of entities (each entity has one semantic unit) joined by one relation
    blocks = [[f"a{i}" for i in range(6)], [f"b{i}" for i in range(6)]]
    for block in blocks:
        graph.write("UNWIND $ids AS id CREATE (:Entity {id: id, name: id})", ids=block)
        graph.write(
            "UNWIND $pairs AS p MATCH (x:Entity {id: p[0]}), (y:Entity {id: p[1]}) "
            "CREATE (x)-[:SUBJECT_OF]->(:Relation {id: p[0] + '-' + p[1], text: p[0] + ' knows ' + p[1]})"
            "-[:OBJECT]->(y)",
            pairs=[list(p) for p in itertools.combinations(block, 2)],
        )
    graph.write(
        "MATCH (x:Entity {id: 'a0'}), (y:Entity {id: 'b0'}) "
        "CREATE (x)-[:SUBJECT_OF]->(:Relation {id: 'bridge', text: 'a0 meets b0'})-[:OBJECT]->(y)"
    )
    from graphstrata.embed import get_embedder

    ctx = AugmentContext(graph, get_embedder(), neo4j_settings)
    run(ctx, ["communities"])
    found = {
        frozenset(r["m"])
        for r in graph.read("MATCH (e:Entity)-[:IN_COMMUNITY]->(c:Community) RETURN c.id AS c, collect(e.id) AS m")
    }
    assert found == {frozenset(b) for b in blocks}
    ids_before = sorted(r["id"] for r in graph.read("MATCH (c:Community) RETURN c.id AS id"))
    run(ctx, ["communities"])  # re-running gives the same (member-hashed) ids, no duplicates
    assert sorted(r["id"] for r in graph.read("MATCH (c:Community) RETURN c.id AS id")) == ids_before


def test_noderag_layers_and_semantic_matching(ctx: AugmentContext) -> None:
    seen: list[tuple[str, int, int]] = []
    ctx = AugmentContext(
        ctx.db,
        ctx.embedder,
        ctx.settings,
        on_progress=lambda *step: seen.append(step),
        params={"min_community_texts": 2},
    )
    run(ctx, ["important_entities", "communities", "semantic_matching", "semantic_edges"])
    # progress: the run's stage count, and item bars inside the long stages, each ending at its total
    assert ("augment", 4, 4) in seen
    last = {step: (done, total) for step, done, total in seen}
    assert {"attribute summaries", "high_level summaries", "high_level vectors"} <= set(last)
    assert all(done == total for done, total in last.values())
    db = ctx.db
    n_sah = db.read_one("MATCH (n) WHERE n:SemanticUnit OR n:Attribute OR n:HighLevel RETURN count(n) AS n")["n"]
    assert db.read_one("MATCH (h:HighLevel)-[:OF_COMMUNITY]->(:Community) RETURN count(h) AS n")["n"] > 0
    assert db.read_one("MATCH (o:Overview)-[:TITLES]->(:HighLevel) WHERE o.title <> '' RETURN count(o) AS n")["n"] > 0
    # every GROUPS edge joins an H to an S/A of the same community (Algorithm 2, step 3)
    bad = db.read(
        "MATCH (h:HighLevel)-[:GROUPS]->(n) MATCH (h)-[:OF_COMMUNITY]->(c) "
        "WHERE NOT (n)-[:IN_COMMUNITY]->(c) RETURN count(*) AS n"
    )[0]["n"]
    assert bad == 0
    report = run(ctx, ["semantic_matching"])[0]
    assert report.counts["clusters"] == max(1, round(math.sqrt(n_sah)))
    # semantic edges: each embedded node has edges to its nearest neighbours, with cosine scores
    rows = db.read("MATCH (a)-[s:SEMANTIC]->(b) RETURN a.embedding AS x, b.embedding AS y, s.score AS s LIMIT 20")
    assert rows
    for r in rows:
        x, y = np.array(r["x"]), np.array(r["y"])
        assert r["s"] == pytest.approx(x @ y / np.linalg.norm(x) / np.linalg.norm(y), abs=1e-4)
    before = counts(db)
    run(ctx, ["important_entities", "communities", "semantic_matching", "semantic_edges"])
    assert counts(db) == before


def test_darag_chunk_edges_follow_kg_relations(ctx: AugmentContext) -> None:
    # a relation between named entities of different documents (the KG holds no common nouns)
    GraphStrata(ctx.settings, db=ctx.db).ingest_texts(
        [("Meiji", "Emperor Meiji moved from Kyoto to Tokyo in 1868.")], IngestOptions(extractor="spacy")
    )
    run(ctx, ["darag_chunk_edges"])
    db = ctx.db
    mentions = {}
    for r in db.read("MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) RETURN c.id AS c, collect(e.id) AS es"):
        mentions[r["c"]] = set(r["es"])
    related = {(r["a"], r["b"]) for r in db.read("MATCH (a:Entity)-[:RELATED]->(b:Entity) RETURN a.id AS a, b.id AS b")}
    expected = set()
    for c1, c2 in itertools.combinations(sorted(mentions), 2):
        if any((u, w) in related or (w, u) in related for u in mentions[c1] for w in mentions[c2]):
            expected.add((c1, c2))
    got = {(r["a"], r["b"]) for r in db.read("MATCH (a:Chunk)-[:CHUNK_RELATED]->(b:Chunk) RETURN a.id AS a, b.id AS b")}
    assert got == expected and expected  # Meiji's chunk relates to Kyoto's and Tokyo's


def test_a_temporary_projection_is_dropped_even_when_its_run_fails(graph: Database) -> None:
    from graphstrata.gds import GDS

    gds = GDS(graph)
    projection = gds.project("tmp_probe", "*", "*", force=True)
    with pytest.raises(RuntimeError, match="algorithm failed"), gds.temporary(projection) as p:
        assert gds.exists(p.name)
        raise RuntimeError("algorithm failed")
    assert not gds.exists(p.name)


def test_semantic_edges_as_hnsw_base_layer(ctx: AugmentContext) -> None:
    from graphstrata.algorithms.hnsw import base_layer

    ctx.params = ctx.params.model_copy(update={"semantic_graph": "hnsw"})
    report = run(ctx, ["semantic_edges"])[0]
    nodes = ctx.db.read(
        "MATCH (n) WHERE (n:Chunk OR n:SemanticUnit OR n:Attribute OR n:HighLevel) AND n.embedding IS NOT NULL "
        "RETURN n.id AS id, n.embedding AS e ORDER BY id"
    )
    ids = [n["id"] for n in nodes]
    v = np.array([n["e"] for n in nodes])
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    expected = {(ids[a], ids[b]) for a, b in base_layer(v, m=5, ef=200)}
    got = ctx.db.read("MATCH (a)-[s:SEMANTIC]->(b) RETURN a.id AS a, b.id AS b, s.score AS s")
    assert {tuple(sorted((r["a"], r["b"]))) for r in got} == {tuple(sorted(e)) for e in expected}
    for r in got:
        assert r["s"] == pytest.approx(float(v[ids.index(r["a"])] @ v[ids.index(r["b"])]), abs=1e-5)
    assert report.counts["edges"] == len(expected) and report.notes["graph"] == "hnsw"


def test_augment_parameters_are_typed(gs) -> None:
    # a misspelt name or a bad value is an error before any stage runs, not a silently ignored override
    with pytest.raises(ValueError, match="knn_kk"):
        gs.augment(["chunk_knn"], knn_kk=3)
    with pytest.raises(ValueError, match="beta"):
        gs.augment(["core_chunks"], beta=2)
    params = AugmentContext(gs.db, gs.embedder, gs.settings, params={"g": "4"}).params
    assert params.g == 4 and params.beta == 0.8  # (CLI values arrive as text)


def _layers(db: Database) -> dict:
    similar = db.read(
        "MATCH (a)-[r:SIMILAR]->(b) RETURN r.kind AS k, a.id AS a, b.id AS b, r.score AS s ORDER BY k, a, b"
    )
    semantic = db.read("MATCH (a)-[r:SEMANTIC]->(b) RETURN a.id AS a, b.id AS b, r.score AS s ORDER BY a, b")
    return {"similar": similar, "semantic": semantic}


def test_similarity_layers_after_an_ingest_write_only_what_changed(ctx: AugmentContext) -> None:
    stages = ["chunk_knn", "entity_similarity", "important_entities", "communities", "semantic_edges"]
    first = {r.stage: r.counts for r in run(ctx, stages)}
    assert first["entity_similarity"]["written"] == first["entity_similarity"]["edges"] > 0
    again = {r.stage: r.counts for r in run(ctx, ["chunk_knn", "entity_similarity"])}
    assert again["chunk_knn"]["written"] == again["entity_similarity"]["written"] == 0  # nothing changed
    gs = GraphStrata(ctx.settings, db=ctx.db, embedder=ctx.embedder)
    gs.ingest_texts(
        [("Rhine", "The Rhine flows through Basel and Cologne into the North Sea.")], IngestOptions(extractor="spacy")
    )
    after = {r.stage: r.counts for r in run(ctx, stages)}
    incremental = _layers(ctx.db)
    # the new document's chunk and entities and the neighbours they displaced: a part of each layer
    assert 0 < after["chunk_knn"]["written"] < after["chunk_knn"]["semantic"] + after["chunk_knn"]["lexical"]
    assert 0 < after["entity_similarity"]["written"] < after["entity_similarity"]["edges"] / 2
    # the same layers as a rewrite from nothing
    ctx.db.write("MATCH ()-[r:SIMILAR|SEMANTIC]->() DELETE r")
    run(ctx, ["chunk_knn", "entity_similarity", "semantic_edges"])
    assert _layers(ctx.db) == incremental


def test_a_layer_written_half_way_is_built_whole_by_the_retry(
    ctx: AugmentContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deadlock with the other lane ends entity_similarity before its last pairs are written; the
    stage is run again (a TransientError) and must not take the partial layer for a complete one and
    update it in place: the result is the full run's layer."""
    from neo4j.exceptions import TransientError

    from graphstrata.augment import similarity

    run(ctx, ["entity_similarity"])
    whole = _layers(ctx.db)
    ctx.db.write("MATCH ()-[r:SIMILAR]->() DELETE r")
    real = similarity.write_layer
    calls = []

    def most_then_deadlock(c, layer, edges, **params):
        calls.append(len(layer.rows))
        if len(calls) == 1:
            similarity.replace_edges(c, layer.rows[:-3], edges, **params)
            raise TransientError("deadlock detected (simulated)")
        return real(c, layer, edges, **params)

    monkeypatch.setattr(similarity, "write_layer", most_then_deadlock)
    [report] = run(ctx, ["entity_similarity"])
    assert len(calls) == 2 and report.notes["transient_retries"] == 1
    assert report.notes["path"] == "exact"  # not "incremental" from the partial layer
    assert _layers(ctx.db) == whole


def test_the_noderag_lane_runs_beside_the_other_stages_and_builds_the_same_graph(
    ctx: AugmentContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from graphstrata import augment
    from tests.conftest import wipe
    from tests.test_ingest import snapshot

    for name in augment.order():  # one stage at a time, in pipeline order
        run(ctx, [name])
    one_by_one = snapshot(ctx.db)

    wipe(ctx.db)
    GraphStrata(ctx.settings, db=ctx.db).ingest_texts(DOCS, IngestOptions(extractor="spacy"))
    started = {"important_entities": threading.Event(), "chunk_knn": threading.Event()}
    threads: dict[str, str] = {}

    def meeting(name: str, other: str):
        stage_fn = augment.STAGES[name]

        def fn(c: AugmentContext):
            threads[name] = threading.current_thread().name
            started[name].set()
            # each lane's first stage waits for the other's: run one after the other, this times out
            assert started[other].wait(60), f"{other} did not start while {name} ran"
            return stage_fn(c)

        return fn

    monkeypatch.setitem(augment.STAGES, "important_entities", meeting("important_entities", "chunk_knn"))
    monkeypatch.setitem(augment.STAGES, "chunk_knn", meeting("chunk_knn", "important_entities"))
    reports = run(ctx)
    assert [r.stage for r in reports] == augment.order()
    assert threads["important_entities"] != threads["chunk_knn"]
    side_by_side = snapshot(ctx.db)
    if side_by_side != one_by_one:  # name what differs (a race shows only under load: its diff is the clue)
        for part in ("nodes", "rels"):
            a = {json.dumps(x, sort_keys=True, default=str) for x in one_by_one[part]}
            b = {json.dumps(x, sort_keys=True, default=str) for x in side_by_side[part]}
            print(f"{part}: only one by one {sorted(a - b)[:15]}; only side by side {sorted(b - a)[:15]}")
            print(f"{part} retries: {[(r.stage, r.notes) for r in reports if 'retries' in str(r.notes)]}")
    assert side_by_side == one_by_one


def test_a_stage_a_transient_error_ends_is_run_again(ctx: AugmentContext, monkeypatch: pytest.MonkeyPatch) -> None:
    from neo4j.exceptions import TransientError

    from graphstrata import augment

    calls = []
    stage_fn = augment.STAGES["core_chunks"]

    def deadlocked_once(c: AugmentContext):
        calls.append(1)
        if len(calls) == 1:
            raise TransientError("deadlock detected")
        return stage_fn(c)

    monkeypatch.setitem(augment.STAGES, "core_chunks", deadlocked_once)
    reports = run(ctx, ["chunk_knn", "core_chunks", "important_entities"])
    assert len(calls) == 2 and [r.stage for r in reports] == ["chunk_knn", "core_chunks", "important_entities"]
    assert reports[1].notes["transient_retries"] == 1  # counted in the stage's report
    assert "transient_retries" not in reports[0].notes
    assert ctx.db.read_one("MATCH (c:Chunk) WHERE c.is_core RETURN count(c) AS n")["n"] > 0


def test_similarity_layers_after_a_small_ingest_are_updated_in_place(ctx: AugmentContext) -> None:
    """Incremental augment: after one more document the top-k layers take the new nodes' lists from the
    vector indexes (graphstrata/augment/knn_index.py) when the ingest only added nodes, and are computed
    whole when nodes were replaced (NodeRAG's attributes, re-created by a full important_entities);
    either way the layers equal those of a full run (with HNSW's candidates above this graph's node
    count the index path is exact)."""

    def layers() -> dict[str, set]:
        rows = ctx.db.read(
            "MATCH (a)-[r:SIMILAR|SEMANTIC]->(b) RETURN labels(a)[0] + type(r) + coalesce(r.kind, '') AS layer, "
            "a.id AS a, b.id AS b, r.score AS s"
        )
        out: dict[str, set] = {}
        for r in rows:  # scores to 1e-5: the index path's cosines come from Neo4j's (1 + cos) / 2
            out.setdefault(r["layer"], set()).add((r["a"], r["b"], round(r["s"], 5)))
        return out

    def paths(reports: list) -> dict[str, str]:
        got = {r.stage: r.notes["path"] for r in reports if r.stage in layered}
        got["lexical"] = next(r.notes["lexical_path"] for r in reports if r.stage == "chunk_knn")
        return got

    layered = ["chunk_knn", "entity_similarity", "semantic_edges"]

    def full() -> dict[str, set]:
        now = ctx.params
        ctx.params = now.model_copy(update={"knn_incremental": False})
        assert set(paths(run(ctx, layered)).values()) == {"exact"}
        ctx.params = now
        return layers()

    whole = [*layered, "important_entities", "communities", "semantic_matching"]
    assert set(paths(run(ctx, whole)).values()) == {"exact"}
    # every node a candidate of every new one: the in-place update is exact
    ctx.params = ctx.params.model_copy(update={"knn_incremental_max_share": 0.5, "knn_index_candidates": 1000})
    gs = GraphStrata(ctx.settings, db=ctx.db)
    gs.ingest_texts([("Nile", "The Nile flows through Cairo. Cairo is the capital of Egypt.")], IngestOptions())
    added = run(ctx, layered)
    assert set(paths(added).values()) == {"index"}
    assert all(r.counts["new_nodes"] > 0 for r in added if r.stage != "chunk_knn")
    updated = layers()
    nile = (
        "MATCH (e:Entity)-[:SIMILAR {kind: 'semantic'}]-() WHERE toLower(e.name) CONTAINS 'nile' RETURN count(*) AS n"
    )
    assert ctx.db.read_one(nile)["n"] > 0  # the new entity is in the layer
    assert full() == updated

    gs.ingest_texts([("Ganges", "The Ganges flows past Varanasi. Varanasi is a city in India.")], IngestOptions())
    replaced = paths(run(ctx, whole))  # attributes re-created: nodes replaced, not only added
    assert replaced == {
        "chunk_knn": "index",
        "lexical": "index",
        "entity_similarity": "index",
        "semantic_edges": "exact",
    }
    updated = layers()
    assert full() == updated
