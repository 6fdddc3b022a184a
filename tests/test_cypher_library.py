"""The analysts' Cypher library, the Browser assets and the data-model docs, against a real graph:
the sample corpus (50 HotpotQA passages) plus one multi-chunk document (so that E2GraphRAG's
summary tree has nodes), ingested with the spaCy extractor and augmented with every stage."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

from graphstrata import analysts as lib
from graphstrata import browser as assets
from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.cypher import load
from graphstrata.db import Database, connection_params
from graphstrata.ingest.pipeline import IngestOptions

ROOT = Path(__file__).resolve().parents[1]
LELAND_DOC = "Leland, North Carolina"
LONG_TITLE = "The Bridges of the River Vell"
TOWNS = ["Harrow", "Vellmoor", "Kestrel Bay", "Orrin Ford", "Tamsley"]
LONG_TEXT = " ".join(
    f"In {1880 + 3 * i}, the mayor of {TOWNS[i % 5]}, Ida Korr, opened the {['north', 'south', 'east', 'west'][i % 4]} "
    f"bridge over the river Vell. Engineers from {TOWNS[(i + 2) % 5]} built it with stone from the Arden quarry."
    for i in range(30)
)
QUESTION = "Who directed the film that was shot in or around Leland, North Carolina in 1986?"
# every label and relationship type graphstrata writes (ingest.cypher, augment.cypher, e2graphrag.cypher, meta)
LABELS = {
    "Document",
    "Chunk",
    "SubChunk",
    "Entity",
    "Term",
    "Relation",
    "SemanticUnit",
    "Attribute",
    "Community",
    "HighLevel",
    "Overview",
    "Summary",
    "Keyword",
    "GraphStrata",
}
REL_TYPES = {
    "HAS_CHUNK",
    "NEXT",
    "HAS_PART",
    "MENTIONS",
    "HAS_TERM",
    "CO_OCCURS",
    "SYNONYM",
    "RELATED",
    "SUBJECT_OF",
    "OBJECT",
    "HAS_RELATION",
    "HAS_UNIT",
    "OCCURS_IN",
    "SIMILAR",
    "HAS_ATTRIBUTE",
    "IN_COMMUNITY",
    "OF_COMMUNITY",
    "TITLES",
    "GROUPS",
    "SEMANTIC",
    "CHUNK_RELATED",
    "SUMMARIZES",
}


@pytest.fixture(scope="module")
def corpus(db: Database, neo4j_settings: Settings) -> GraphStrata:
    from tests.conftest import wipe

    wipe(db)
    gs = GraphStrata(neo4j_settings, db=db)
    gs.ingest(["samples/corpus"], IngestOptions(extractor="spacy"))
    gs.ingest_texts([(LONG_TITLE, LONG_TEXT)], IngestOptions(extractor="spacy", chunk_size=64, chunk_overlap=8))
    gs.augment()
    return gs


@pytest.fixture(scope="module")
def cli_env(neo4j_settings: Settings) -> dict[str, str]:
    """The environment of a `graphstrata` subprocess talking to the test server."""
    uri, (user, password) = connection_params(neo4j_settings)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHSTRATA_")}
    env.update(NEO4J_URI=uri, NEO4J_USER=user, NEO4J_PASSWORD=password, NEO4J_DATABASE=neo4j_settings.neo4j_database)
    return env


def run_q(db: Database, name: str, **params) -> list[dict]:
    return lib.run_library(db, name, params).rows


def one(db: Database, query: str, **params):
    return db.read_one(query, **params)


# --- the library itself ---------------------------------------------------------------------------
def test_library_is_documented_and_consistent() -> None:
    queries = lib.library()
    assert len(queries) >= 15
    for q in queries.values():
        assert q.summary and q.summary.endswith((".", "…")), q.name
        for p in q.params:
            assert p.type in lib.TYPES and p.description, (q.name, p)
    # every query is exercised below
    assert set(queries) == set(CHECKS), set(queries) ^ set(CHECKS)


def test_parameters_are_typed() -> None:
    q = lib.get("shortest_paths")
    assert lib.parse_params(["source=1986", "target=leland"], q) == {"source": "1986", "target": "leland"}
    assert lib.parse_params(["types=RELATED, CO_OCCURS", "limit=3"], q) == {
        "types": ["RELATED", "CO_OCCURS"],
        "limit": 3,
    }
    assert lib.parse_params(['types=["SIMILAR"]'], q) == {"types": ["SIMILAR"]}
    assert lib.parse_params(["core_only=true"], lib.get("core_chunks")) == {"core_only": True}
    with pytest.raises(lib.LibraryError, match="int"):
        lib.parse_params(["limit=ten"], q)
    with pytest.raises(lib.LibraryError, match="no parameter"):
        q.bind({"nope": 1})
    with pytest.raises(lib.LibraryError, match="needs --param"):
        q.bind({"source": "a"})
    assert q.bind({"source": "a", "target": "b"})["types"] == ["RELATED", "SYNONYM", "MENTIONS"]
    # ad-hoc queries: JSON where it parses, else text
    assert lib.parse_params(["a=1", "b=x y", "c=[1,2]", 'd={"k": true}']) == {
        "a": 1,
        "b": "x y",
        "c": [1, 2],
        "d": {"k": True},
    }
    with pytest.raises(lib.LibraryError, match="no library query"):
        lib.get("provenance")


# --- every query against the corpus ----------------------------------------------------------------
def check_find_entities(db: Database, gs: GraphStrata) -> None:
    rows = run_q(db, "find_entities", text="leland")
    leland = next(r for r in rows if r["normalized"] == "leland")
    assert LELAND_DOC in leland["documents"] and leland["chunks"] >= 2
    assert all("leland" in r["normalized"] for r in rows)


def check_entity_provenance(db: Database, gs: GraphStrata) -> None:
    rows = run_q(db, "entity_provenance", entity="Leland")
    assert LELAND_DOC in {r["document"] for r in rows}
    for r in rows:  # each chunk really belongs to the document named, and mentions the entity
        assert one(
            db,
            "MATCH (d:Document {id: $d})-[:HAS_CHUNK]->(c:Chunk {id: $c}) RETURN d",
            d=r["document_id"],
            c=r["chunk"],
        )
        assert r["mentions"] >= 1 and r["surface"] == "Leland"
    expected = one(db, "MATCH (:Chunk)-[m:MENTIONS]->(e:Entity {normalized: 'leland'}) RETURN count(m) AS n")["n"]
    assert len(rows) == expected
    mo = next(r for r in rows if r["document"] == LELAND_DOC)
    assert any("Leland" in u for u in mo["units"])  # the semantic units of that chunk naming Leland
    # by id as well as by name
    eid = one(db, "MATCH (e:Entity {normalized: 'leland'}) RETURN e.id AS id")["id"]
    assert run_q(db, "entity_provenance", entity=eid) == rows


def check_entity_neighbourhood(db: Database, gs: GraphStrata) -> None:
    rows = run_q(db, "entity_neighbourhood", entity="new testament", per_type=5)
    layers = {r["layer"] for r in rows}
    assert {"knowledge graph", "noderag", "similarity", "community", "text"} <= layers
    assert any(r["relationship"] == "RELATED" and r["caption"] == "Ladakh" for r in rows)
    assert not any(r["relationship"] == "CO_OCCURS" for r in rows)  # E2GraphRAG's term layer, not the KG
    per_type: dict[str, int] = {}
    for r in rows:
        per_type[r["relationship"]] = per_type.get(r["relationship"], 0) + 1
    assert max(per_type.values()) <= 5


def check_entity_relations(db: Database, gs: GraphStrata) -> None:
    rows = run_q(db, "entity_relations", entity="new testament")
    assert rows and all("New Testament" in (r["subject"], r["object"]) for r in rows)
    assert any(
        r["subject"] == "New Testament" and r["predicate"] == "printed in" and r["object"] == "Ladakh" for r in rows
    )


def check_shortest_paths(db: Database, gs: GraphStrata) -> None:
    rows = run_q(db, "shortest_paths", source="Stephen King", target="leland", limit=100)
    assert rows
    # reference: BFS over the same undirected RELATED/SYNONYM/MENTIONS graph with networkx
    edges = db.read("MATCH (a)-[r:RELATED|SYNONYM|MENTIONS]->(b) RETURN a.id AS a, b.id AS b")
    g = nx.Graph()
    g.add_edges_from((e["a"], e["b"]) for e in edges)
    ids = {
        r["id"] for r in db.read("MATCH (e:Entity) WHERE e.normalized IN ['stephen king', 'leland'] RETURN e.id AS id")
    }
    src = one(db, "MATCH (e:Entity {normalized: 'stephen king'}) RETURN e.id AS id")["id"]
    dst = one(db, "MATCH (e:Entity {normalized: 'leland'}) RETURN e.id AS id")["id"]
    assert {src, dst} == ids
    expected = {tuple(p) for p in nx.all_shortest_paths(g, src, dst)}
    assert {tuple(r["ids"]) for r in rows} == expected
    for r in rows:
        assert r["path"][0] == "Stephen King" and r["path"][-1] == "Leland"
        assert r["source"] == "Stephen King" and r["target"] == "Leland"
        assert r["hops"] == len(r["path"]) - 1 == nx.shortest_path_length(g, src, dst)
    assert any("Maximum Overdrive" in r["path"] for r in rows)  # the bridge of the multi-hop question
    # restricted to RELATED only: every edge of every path is RELATED (or there is none)
    for r in run_q(db, "shortest_paths", source="Stephen King", target="leland", types=["RELATED"]):
        assert all(t.startswith("RELATED") for t in r["relationships"])


def check_term_cooccurrence(db: Database, gs: GraphStrata) -> None:
    rows = run_q(db, "term_cooccurrence", term="leland", limit=50)
    assert rows and all(r["term"] == "Leland" for r in rows)
    expected = one(
        db, "MATCH (:Term {normalized: 'leland'})-[x:CO_OCCURS]-(o:Term) RETURN count(o) AS n, max(x.weight) AS w"
    )
    assert len(rows) == min(50, expected["n"]) and rows[0]["sentences"] == expected["w"]
    assert [r["sentences"] for r in rows] == sorted((r["sentences"] for r in rows), reverse=True)


def check_chunks_linking(db: Database, gs: GraphStrata) -> None:
    rows = run_q(db, "chunks_linking", source="leland", target="north carolina")
    assert LELAND_DOC in {r["document"] for r in rows}
    assert all(r["source_mentions"] >= 1 and r["target_mentions"] >= 1 for r in rows)


def check_important_entities(db: Database, gs: GraphStrata) -> None:
    rows = run_q(db, "important_entities", limit=100)
    n = one(db, "MATCH (e:Entity {important: true}) RETURN count(e) AS n")["n"]
    assert len(rows) == min(n, 100) > 0
    assert all(r["attribute"].startswith(r["entity"] + ":") for r in rows)
    b = [r["betweenness"] for r in rows]
    assert b == sorted(b, reverse=True)


def check_communities(db: Database, gs: GraphStrata) -> None:
    rows = run_q(db, "communities", limit=10)
    assert len(rows) == 10
    sizes = [r["size"] for r in rows]
    assert sizes == sorted(sizes, reverse=True)
    for r in rows:
        assert r["size"] == r["entities"] + r["relations"] + r["units"] + r["attributes"]
    assert any(r["title"] and r["summary"] for r in rows)


def check_community_report(db: Database, gs: GraphStrata) -> None:
    (row,) = run_q(db, "community_report", community="Leland")
    cid = one(db, "MATCH (:Entity {normalized: 'leland'})-[:IN_COMMUNITY]->(c:Community) RETURN c.id AS id")["id"]
    assert row["id"] == cid and "Leland" in row["entities"] and LELAND_DOC in row["documents"]
    over = one(
        db,
        "MATCH (o:Overview)-[:TITLES]->(:HighLevel)-[:OF_COMMUNITY]->(:Community {id: $c}) RETURN o.title AS t",
        c=cid,
    )
    if over:  # the community has enough texts for a HighLevel summary: found by its title too
        assert row["title"] == over["t"] and row["summary"]
        assert run_q(db, "community_report", community=over["t"])[0]["id"] == cid
    assert run_q(db, "community_report", community=cid)[0]["id"] == cid


def check_community_members(db: Database, gs: GraphStrata) -> None:
    cid = one(db, "MATCH (:Entity {normalized: 'leland'})-[:IN_COMMUNITY]->(c:Community) RETURN c.id AS id")["id"]
    rows = run_q(db, "community_members", community=cid, limit=1000)
    size = one(db, "MATCH (c:Community {id: $c}) RETURN c.size AS n", c=cid)["n"]
    assert len(rows) == size and {r["community"] for r in rows} == {cid}
    assert any(r["label"] == "Entity" and r["caption"] == "Leland" for r in rows)


def check_retrieval_touched(db: Database, gs: GraphStrata) -> None:
    result = gs.retrieve(QUESTION, "noderag")
    ids = [i.node_id for i in result.items] + ["no-such-node"]
    rows = run_q(db, "retrieval_touched", ids=ids)
    assert [r["id"] for r in rows] == ids and [r["rank"] for r in rows] == list(range(len(ids)))
    assert rows[-1]["found"] is False and rows[-1]["chunks"] == []
    for item, row in zip(result.items, rows, strict=False):
        assert row["found"] and row["label"] == item.label
        if item.label in ("Chunk", "SemanticUnit", "Relation"):  # the retriever's provenance is ours
            assert set(item.chunk_ids) <= set(row["chunks"]), (item, row)
    assert LELAND_DOC in {d for r in rows for d in r["documents"]}


def check_retrieval_subgraph(db: Database, gs: GraphStrata) -> None:
    chunk = one(db, "MATCH (d:Document {title: $t})-[:HAS_CHUNK]->(c) RETURN c.id AS c, d.id AS d", t=LELAND_DOC)
    leland = one(db, "MATCH (e:Entity {normalized: 'leland'}) RETURN e.id AS id")["id"]
    rows = run_q(db, "retrieval_subgraph", ids=[chunk["d"], chunk["c"], leland])
    triples = {(r["start"], r["type"], r["end"]) for r in rows}
    assert (chunk["d"], "HAS_CHUNK", chunk["c"]) in triples and (chunk["c"], "MENTIONS", leland) in triples
    assert all(
        r["start"] in (chunk["d"], chunk["c"], leland) and r["end"] in (chunk["d"], chunk["c"], leland) for r in rows
    )


def check_layer_counts(db: Database, gs: GraphStrata) -> None:
    rows = run_q(db, "layer_counts")
    stats = gs.stats()
    assert {r["name"]: r["n"] for r in rows if r["kind"] == "node"} == stats["labels"]
    assert {r["name"]: r["n"] for r in rows if r["kind"] == "relationship"} == stats["relationships"]
    assert all(r["concept"] for r in rows if r["n"] > 0)  # every label and type in use is explained


def check_documents(db: Database, gs: GraphStrata) -> None:
    rows = {r["title"]: r for r in run_q(db, "documents")}
    assert len(rows) == 51
    assert rows[LELAND_DOC]["chunks"] == 1 and rows[LELAND_DOC]["entities"] >= 10
    assert rows[LONG_TITLE]["chunks"] > 5 and rows[LONG_TITLE]["summaries"] > 0
    assert run_q(db, "documents", limit=3) == [rows[t] for t in sorted(rows)[:3]]


def check_document_outline(db: Database, gs: GraphStrata) -> None:
    (row,) = run_q(db, "document_outline", document=LELAND_DOC)
    assert row["ordinal"] == 0 and row["text"].startswith("Leland is a town") and row["entities"] >= 10
    rows = run_q(db, "document_outline", document=LONG_TITLE)
    assert [r["ordinal"] for r in rows] == list(range(len(rows))) and len(rows) > 5


def check_core_chunks(db: Database, gs: GraphStrata) -> None:
    rows = run_q(db, "core_chunks")
    assert len(rows) == 10
    pr = [r["pagerank"] for r in rows]
    assert pr == sorted(pr, reverse=True)
    top = one(db, "MATCH (c:Chunk) RETURN c.id AS id ORDER BY c.pagerank DESC, c.id LIMIT 1")["id"]
    assert rows[0]["chunk"] == top
    core = run_q(db, "core_chunks", limit=1000, core_only=True)
    assert core and all(r["is_core"] for r in core)
    assert len(core) == one(db, "MATCH (c:Chunk {is_core: true}) RETURN count(c) AS n")["n"]


def _leland_chunk(db: Database) -> str:
    return one(db, "MATCH (:Document {title: $t})-[:HAS_CHUNK]->(c) RETURN c.id AS c", t=LELAND_DOC)["c"]


def check_chunk_detail(db: Database, gs: GraphStrata) -> None:
    (row,) = run_q(db, "chunk_detail", chunk=_leland_chunk(db))
    assert row["document"] == LELAND_DOC and row["previous"] == [] and row["next"] == []
    assert any(e.startswith("Leland (") for e in row["entities"])
    assert any("Maximum Overdrive" in u for u in row["units"]) and row["sub_chunks"] >= 1
    assert row["similar"]  # KNN chunk graph
    long_rows = run_q(db, "document_outline", document=LONG_TITLE)
    (mid,) = run_q(db, "chunk_detail", chunk=long_rows[1]["chunk"])
    assert mid["previous"] == [long_rows[0]["chunk"]] and mid["next"] == [long_rows[2]["chunk"]]


def check_chunk_keywords(db: Database, gs: GraphStrata) -> None:
    rows = run_q(db, "chunk_keywords", chunk=_leland_chunk(db), limit=100)
    kw = {r["keyword"]: r for r in rows}
    assert "town" in kw and "leland" in kw and kw["leland"]["count"] >= 2


def check_keyword_chunks(db: Database, gs: GraphStrata) -> None:
    rows = run_q(db, "keyword_chunks", term="Town")
    assert _leland_chunk(db) in {r["chunk"] for r in rows} and all(r["keyword"] == "town" for r in rows)


def check_summary_tree(db: Database, gs: GraphStrata) -> None:
    assert run_q(db, "summary_tree", document=LELAND_DOC) == []  # one chunk: no tree
    rows = run_q(db, "summary_tree", document=LONG_TITLE)
    assert rows and all(r["current"] for r in rows)
    top = max(r["level"] for r in rows)
    n_chunks = len(run_q(db, "document_outline", document=LONG_TITLE))
    assert sum(r["chunks_below"] for r in rows if r["level"] == top) == n_chunks
    assert [r["level"] for r in rows] == sorted((r["level"] for r in rows), reverse=True)


CHECKS = {name[len("check_") :]: fn for name, fn in dict(globals()).items() if name.startswith("check_")}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_library_query(corpus: GraphStrata, name: str) -> None:
    CHECKS[name](corpus.db, corpus)


# --- read-only ---------------------------------------------------------------------------------------
def test_writes_are_refused(corpus: GraphStrata) -> None:
    db = corpus.db
    for stmt in (
        "CREATE (n:Oops) RETURN n",
        "MATCH (e:Entity {normalized: 'leland'}) SET e.name = 'x'",
        "MATCH (n:Keyword) DETACH DELETE n",
        "CREATE INDEX oops IF NOT EXISTS FOR (n:Oops) ON (n.x)",
    ):
        with pytest.raises(lib.WriteRefused):
            lib.run(db, stmt)
    # and the server itself refuses a write in the READ transaction that `run` uses
    from neo4j import READ_ACCESS
    from neo4j.exceptions import ClientError

    with db.driver.session(database=db.database, default_access_mode=READ_ACCESS) as s, pytest.raises(ClientError):
        s.execute_read(lambda tx: tx.run("CREATE (n:Oops)").consume())
    assert one(db, "MATCH (n:Oops) RETURN count(n) AS n")["n"] == 0
    assert one(db, "MATCH (e:Entity {normalized: 'leland'}) RETURN e.name AS n")["n"] == "Leland"


def graphstrata(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("graphstrata")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "graphstrata.cli"]
    return subprocess.run([*cmd, *args], env=env, capture_output=True, text=True, timeout=180, cwd=ROOT)


def test_cli_runs_library_queries(corpus: GraphStrata, cli_env: dict[str, str]) -> None:
    p = graphstrata(cli_env, "cypher", "entity_provenance", "--param", "entity=leland", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert LELAND_DOC in {r["document"] for r in rows}
    p = graphstrata(cli_env, "cypher", "shortest_paths", "-p", "source=Stephen King", "-p", "target=leland")
    assert p.returncode == 0, p.stderr
    assert "Maximum Overdrive" in p.stdout and "row(s)" in p.stdout  # a table
    p = graphstrata(cli_env, "cypher", "--list")
    assert p.returncode == 0 and all(name in p.stdout for name in lib.library())
    p = graphstrata(cli_env, "cypher", "entity_provenance", "-p", "entity=leland", "--show")
    assert p.returncode == 0 and ':params {"entity": "leland", "limit": 100}' in p.stdout
    assert lib.get("entity_provenance").text in p.stdout
    p = graphstrata(cli_env, "cypher", "-q", "MATCH (d:Document) RETURN count(d) AS n", "--json")
    assert p.returncode == 0 and json.loads(p.stdout) == [{"n": 51}]


def test_cli_refuses_writes_and_bad_input(corpus: GraphStrata, cli_env: dict[str, str]) -> None:
    p = graphstrata(cli_env, "cypher", "-q", "CREATE (n:Oops) RETURN n")
    assert p.returncode == 5 and "refused" in p.stderr
    p = graphstrata(cli_env, "cypher", "-q", "MATCH (d:Document) DETACH DELETE d")
    assert p.returncode == 5
    assert one(corpus.db, "MATCH (d:Document) RETURN count(d) AS n")["n"] == 51
    p = graphstrata(cli_env, "cypher", "entity_provenance")
    assert p.returncode == 1 and "entity" in p.stderr
    p = graphstrata(cli_env, "cypher", "no_such_query")
    assert p.returncode == 1 and "no library query" in p.stderr


# --- Browser assets -----------------------------------------------------------------------------------
def test_grass_parses_and_styles_every_label() -> None:
    rules = assets.parse_grass(assets.grass_text())
    for label in LABELS:
        props = rules[f"node.{label}"]
        assert re.fullmatch(r"#[0-9A-Fa-f]{6}", props["color"]) and props["caption"], label
    for typ in REL_TYPES:
        assert f"relationship.{typ}" in rules, typ
    colours = [rules[f"node.{lb}"]["color"].upper() for lb in LABELS]
    assert len(set(colours)) == len(colours)  # one colour per label
    # the `:style` one-liner parses to the same rules, and the model's labels match the schema constraints
    assert assets.parse_grass(assets.style_command().removeprefix(":style ")) == rules
    constrained = {re.search(r"FOR \(n:(\w+)\)", q).group(1) for q in load("schema").values() if "CONSTRAINT" in q}
    assert constrained == LABELS
    for bad in ("node { color: #fff", "node.X { caption: a:b; }", "/* c */ node { color: #fff; }", "nod { x: y; }"):
        with pytest.raises(ValueError):
            assets.parse_grass(bad)


def starter_queries() -> list[tuple[str, str]]:
    """(title, statement) of each numbered query in starter-queries.cypher."""
    out, title, body = [], None, []
    for line in assets.STARTER_QUERIES.read_text().splitlines():
        m = re.match(r"//\s*(\d+\.\s.*)", line)
        if m:
            title, body = m.group(1), []
        elif title and not line.startswith("//") and line.strip():
            body.append(line)
            if line.rstrip().endswith(";"):
                out.append((title, "\n".join(body).rstrip().rstrip(";")))
                title = None
    return out


def test_starter_queries_run_read_only(corpus: GraphStrata) -> None:
    queries = starter_queries()
    assert len(queries) >= 10
    for title, q in queries:
        if "summary tree" in title:
            q = q.replace(f"'{LELAND_DOC}'", f"'{LONG_TITLE}'")
        if "retrieval result" in title:
            ids = [i.node_id for i in corpus.retrieve(QUESTION, "vector").items]
            q = q.replace("['paste', 'node', 'ids']", json.dumps(ids))
        rows = lib.run(corpus.db, q).rows
        assert rows, title


def test_browser_command(corpus: GraphStrata, cli_env: dict[str, str]) -> None:
    p = graphstrata(cli_env, "browser", "--style")
    assert p.returncode == 0 and p.stdout.startswith(":style node {")
    assert assets.parse_grass(p.stdout.strip().removeprefix(":style ")) == assets.parse_grass(assets.grass_text())
    p = graphstrata(cli_env, "browser")
    assert p.returncode == 0 and ":style node {" in p.stdout and "starter-queries.cypher" in p.stdout
    assert cli_env["NEO4J_PASSWORD"] not in p.stdout  # a hint where the password is, never the password
    # the local launcher's server: URL with the connection pre-filled, and the password file's path
    local = {k: v for k, v in cli_env.items() if not k.startswith("NEO4J_")}
    local.update(GRAPHSTRATA_INSTANCE="nowhere", GRAPHSTRATA_BOLT_PORT="1", GRAPHSTRATA_HTTP_PORT="2")
    p = graphstrata(local, "browser")
    assert "http://127.0.0.1:2/browser/?dbms=neo4j://neo4j@127.0.0.1:1&db=neo4j" in p.stdout
    assert "nowhere/password" in p.stdout
    # Community Edition has no roles: a read-only user is refused with the alternatives
    if assets.edition(corpus.db) == "community":
        p = graphstrata(cli_env, "browser", "--create-reader", "analyst")
        assert p.returncode == 2 and "no roles" in p.stderr and "useReadTransactions" in p.stderr
        users = corpus.db.driver.execute_query(
            "SHOW USERS YIELD user WHERE user = 'analyst' RETURN user", database_="system"
        )
        assert users.records == []


# --- the data-model docs -------------------------------------------------------------------------------
def test_data_model_doc_covers_the_live_schema(corpus: GraphStrata) -> None:
    doc = (ROOT / "docs" / "data-model.md").read_text()
    for name in LABELS | REL_TYPES:
        assert f"`{name}`" in doc, name
    db = corpus.db
    node_props = db.read(
        "CALL db.schema.nodeTypeProperties() YIELD nodeLabels, propertyName "
        "WHERE propertyName IS NOT NULL RETURN DISTINCT nodeLabels[0] AS label, propertyName AS p"
    )
    rel_props = db.read(
        "CALL db.schema.relTypeProperties() YIELD relType, propertyName "
        "WHERE propertyName IS NOT NULL RETURN DISTINCT relType AS type, propertyName AS p"
    )
    sections = _doc_sections(doc)
    for r in node_props:
        assert r["label"] in LABELS, r
        assert f"`{r['p']}`" in sections[r["label"]], r
    for r in rel_props:
        typ = r["type"].strip(":`")
        assert typ in REL_TYPES, r
        assert re.search(rf"`{typ}`[^\n]*`{r['p']}`", doc), r  # on the type's own table row
    # (db.labels() would also list label tokens of nodes other tests created and deleted)
    labels = {r["label"] for r in db.read("MATCH (n) UNWIND labels(n) AS label RETURN DISTINCT label")}
    types = {r["t"] for r in db.read("MATCH ()-[r]->() RETURN DISTINCT type(r) AS t")}
    assert labels <= LABELS and types <= REL_TYPES


def _doc_sections(doc: str) -> dict[str, str]:
    """`### `Label`` sections of docs/data-model.md."""
    parts = re.split(r"^### `(\w+)`", doc, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_schema_diagram_script(corpus: GraphStrata, cli_env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "model.svg"
    p = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "schema_diagram.py"),
            "--out",
            str(out),
            "--dot",
            str(tmp_path / "m.dot"),
        ],
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    svg = out.read_text()
    assert svg.lstrip().startswith(("<?xml", "<svg")) and "</svg>" in svg
    for label in LABELS:
        assert f">{label}<" in svg, label
    dot = (tmp_path / "m.dot").read_text()
    n = one(corpus.db, "MATCH (:Document)-[r:HAS_CHUNK]->(:Chunk) RETURN count(r) AS n")["n"]
    assert f'"Document" -> "Chunk" [label="HAS_CHUNK ({n})' in dot  # live counts
    committed = (ROOT / "docs" / "data-model.svg").read_text()
    assert all(f">{label}<" in committed for label in LABELS)
