"""Knowledge extraction written into Neo4j: the LLM path (real ``openai`` client against the fake
OpenAI-compatible server), the no-LLM spaCy path and bring-your-own extractions.

The fake server answers an extraction prompt with the spaCy extractor's JSON for the chunk, so the
expected graph of the LLM path is computed here with :func:`extract_with_spacy`, stamped "llm".
As in tests/test_ingest.py, the strongest checks compare an incremental history with a fresh
ingest of its end state (:func:`snapshot`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest import pipeline, write
from graphstrata.ingest.chunk import token_chunks
from graphstrata.ingest.extract_spacy import extract_with_spacy
from graphstrata.ingest.pipeline import IngestOptions, Ingestor, IngestReport
from graphstrata.ingest.user_extractions import UserExtractionError
from graphstrata.text.names import hid, normalize_name, predicate_key
from tests.conftest import wipe
from tests.fake_openai import CHAT_MODEL, FakeOpenAI, fake_llm_settings
from tests.test_ingest import snapshot

pytest_plugins = ["tests.conftest_llm"]

CURIE = "Marie Curie was born in Warsaw. Marie Curie moved to Paris in 1891."
PIERRE = "Pierre Curie lived in Paris with Marie Curie."
NOBEL = "Marie Curie was born in Warsaw. She won the Nobel Prize in 1911."
CORPUS = [("curie", CURIE), ("pierre", PIERRE), ("nobel", NOBEL)]
OPTS = IngestOptions(chunk_size=1200, chunk_overlap=100)
CHAT = "/v1/chat/completions"
ROOT = Path(__file__).resolve().parents[1]


# --- fixtures and helpers ------------------------------------------------------------------------


@pytest.fixture
def llm_settings(neo4j_settings: Settings, fake_openai: FakeOpenAI, tmp_path: Path) -> Settings:
    """The test database, an LLM endpoint at the fake server and a per-test LLM cache."""
    return fake_llm_settings(neo4j_settings, fake_openai, tmp_path / "cache", llm_timeout=10.0)


@pytest.fixture
def gs(graph: Database, llm_settings: Settings):
    with GraphStrata(llm_settings, db=graph) as client:
        yield client


@pytest.fixture
def gs_offline(graph: Database, neo4j_settings: Settings) -> GraphStrata:
    assert not neo4j_settings.llm_enabled
    return GraphStrata(neo4j_settings, db=graph)


def triples(text: str) -> set[tuple[str, str, str]]:
    """(subject, predicate, object) keys the extractor finds in ``text``."""
    x = extract_with_spacy(text)
    return {(normalize_name(r.subject), predicate_key(r.predicate), normalize_name(r.object)) for r in x.relations}


def related(db: Database) -> dict[tuple[str, str, str], int]:
    rows = db.read(
        "MATCH (a:Entity)-[r:RELATED]->(b:Entity) RETURN a.normalized AS a, r.predicate AS p, b.normalized AS b, "
        "r.weight AS w"
    )
    return {(r["a"], r["p"], r["b"]): r["w"] for r in rows}


def entity(db: Database, key: str) -> dict | None:
    return db.read_one(
        "MATCH (e:Entity {normalized: $k}) RETURN e.name AS name, e.type AS type, e.source AS source, "
        "e.extractors AS extractors, e.descriptions AS descriptions, e.description AS description",
        k=key,
    )


def chunk_of(db: Database, title: str) -> dict:
    return db.read_one(
        "MATCH (c:Chunk {doc_title: $t}) RETURN c.id AS id, c.title AS title, c.description AS description, "
        "c.extractor AS extractor, c.extraction_status AS status",
        t=title,
    )


def chat_calls(fake: FakeOpenAI) -> int:
    return fake.calls_by_path[CHAT]


# --- the LLM path -----------------------------------------------------------------------------------


def test_llm_ingest_writes_entities_relations_and_units(gs: GraphStrata, fake_openai: FakeOpenAI) -> None:
    report = gs.ingest_texts(CORPUS, OPTS)
    db = gs.db
    # one extraction call per chunk, accounted in the report
    assert (report.documents_new, report.chunks, report.extracted_chunks, report.failed_chunks) == (3, 3, 3, [])
    assert chat_calls(fake_openai) == 3
    extract = report.llm["extract"]
    assert (extract["calls"], extract["cache_hits"], extract["failures"]) == (3, 0, 0)
    assert extract["prompt_tokens"] > 0 and extract["completion_tokens"] > 0

    # RELATED: one edge per (subject, predicate, object), weight = chunks asserting it
    expected = Counter(t for _, text in CORPUS for t in triples(text))
    assert related(db) == dict(expected)
    assert related(db)[("marie curie", "born in", "warsaw")] == 2  # curie and nobel both say so
    # nodalized relations: one per chunk assertion, between the same entities, linked to their chunk
    rows = db.read(
        "MATCH (c:Chunk)-[:HAS_RELATION]->(x:Relation), (a:Entity)-[:SUBJECT_OF]->(x)-[:OBJECT]->(b:Entity) "
        "RETURN c.doc_title AS doc, a.normalized AS a, x.predicate AS p, b.normalized AS b, x.extractor AS ex, "
        "x.text AS text, x.chunk_id = c.id AS linked"
    )
    assert Counter((r["a"], r["p"], r["b"]) for r in rows) == expected
    assert {r["ex"] for r in rows} == {"llm"} and all(r["linked"] for r in rows)
    born = next(r for r in rows if r["doc"] == "curie" and r["p"] == "born in")
    assert born["text"].startswith("Marie Curie born in Warsaw")
    assert db.read_one("MATCH (x:Relation) RETURN count(x) AS n")["n"] == report.relations == sum(expected.values())

    # semantic units, in chunk order, mentioning their entities
    for title, text in CORPUS:
        want = extract_with_spacy(text)
        units = db.read(
            "MATCH (:Chunk {doc_title: $t})-[h:HAS_UNIT]->(u:SemanticUnit) "
            "RETURN u.text AS text, u.extractor AS ex, "
            "COLLECT { MATCH (u)-[:MENTIONS]->(e:Entity) RETURN e.normalized ORDER BY e.normalized } AS ents "
            "ORDER BY h.ordinal",
            t=title,
        )
        assert [u["text"] for u in units] == [u.text for u in want.semantic_units]
        assert [u["ents"] for u in units] == [sorted(map(normalize_name, u.entities)) for u in want.semantic_units]
        assert {u["ex"] for u in units} == {"llm"}
        # DA-RAG chunk layer: the extraction's title and description on the chunk
        c = chunk_of(db, title)
        assert (c["title"], c["description"], c["extractor"], c["status"]) == (
            want.title,
            want.description,
            "llm",
            "ok",
        )

    # entities: merged with the spaCy pass's by normalised name, typed and described by the LLM
    marie = entity(db, "marie curie")
    assert marie["type"] == "PERSON" and marie["source"] == "llm" and marie["extractors"] == ["llm", "spacy"]
    assert set(marie["descriptions"]) == {"Marie Curie was born in Warsaw.", PIERRE}  # combined over chunks
    assert marie["description"] == " ".join(marie["descriptions"])
    assert marie["descriptions"][0] == "Marie Curie was born in Warsaw."  # said by two chunks: first
    assert entity(db, "warsaw")["type"] == "LOCATION"  # the LLM's type wins over spaCy's GPE
    assert entity(db, "nobel prize")["extractors"] == ["llm", "spacy"]
    mention = db.read_one(
        "MATCH (:Chunk {doc_title: 'curie'})-[m:MENTIONS]->(:Entity {normalized: 'marie curie'}) "
        "RETURN m.count AS n, m.extractor AS ex, m.label AS label"
    )
    assert mention == {"n": 2, "ex": "llm", "label": "PERSON"}
    assert db.read_one("MATCH (e:Entity) WHERE e.source IS NULL OR e.embedding IS NULL RETURN e") is None

    # S and R are embedded and served by their vector indexes
    question = gs.embedder.embed(["Where did Pierre Curie live?"])[0].tolist()
    for label, index in (("SemanticUnit", "semantic_unit_embedding"), ("Relation", "relation_embedding")):
        row = db.read_one(
            f"MATCH (n:{label}) RETURN count(n) AS n, count(n.embedding) AS e, min(size(n.embedding)) AS d"
        )
        assert row["n"] == row["e"] > 0 and row["d"] == gs.embedder.dim, label
        hits = db.read(
            "CALL db.index.vector.queryNodes($index, 3, $v) YIELD node RETURN node.text AS t", index=index, v=question
        )
        assert any(h["t"].startswith("Pierre Curie live") for h in hits), (label, hits)


def test_rate_limits_and_server_errors_are_retried(gs: GraphStrata, fake_openai: FakeOpenAI, graph: Database) -> None:
    fake_openai.fail_next("429")
    fake_openai.fail_next("500")
    report = gs.ingest_texts(CORPUS, OPTS)
    assert report.failed_chunks == [] and report.extracted_chunks == 3
    assert report.llm["extract"]["retries"] == 2 and report.llm["extract"]["calls"] == 3
    assert fake_openai.failures_served == Counter({"429": 1, "500": 1})
    assert chat_calls(fake_openai) == 5
    faulty = snapshot(graph)
    # the graph is complete: the same as a run that met no errors
    wipe(graph)
    fake_openai.reset()
    gs.ingest_texts(CORPUS, OPTS)
    assert snapshot(graph) == faulty


def _refuse_chunk(monkeypatch: pytest.MonkeyPatch, fake: FakeOpenAI, marker: str) -> None:
    """The fake model answers garbage for every extraction prompt containing ``marker``."""
    reply = fake.chat_reply

    def patched(messages, failure):
        if any(marker in str(m.get("content", "")) for m in messages):
            return "I am sorry, I cannot produce that format today."
        return reply(messages, failure)

    monkeypatch.setattr(fake, "chat_reply", patched)


def test_malformed_output_fails_one_chunk_and_the_next_ingest_retries_it(
    gs: GraphStrata, fake_openai: FakeOpenAI, graph: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    _refuse_chunk(monkeypatch, fake_openai, "Pierre Curie lived")
    report = gs.ingest_texts(CORPUS, OPTS)
    # reported, never silently dropped; the document is still written
    assert report.documents_new == 3 and report.extracted_chunks == 2
    assert [(f["doc"], f["chunk"]) for f in report.failed_chunks] == [("pierre", 0)]
    assert "no valid ChunkExtraction" in report.failed_chunks[0]["error"]
    assert report.llm["extract"]["failures"] == 1
    assert chat_calls(fake_openai) == 2 + 3  # two good chunks; one first reply + two re-asks
    db = gs.db
    c = chunk_of(db, "pierre")
    assert (c["status"], c["title"], c["description"], c["extractor"]) == ("failed", None, None, None)
    # nothing of its extraction: no units or relations; its mentions are the spaCy pass's only
    assert db.read_one("MATCH (:Chunk {id: $id})-[:HAS_UNIT|HAS_RELATION]->(n) RETURN n", id=c["id"]) is None
    assert db.read_one("MATCH (x:Relation {chunk_id: $id}) RETURN x", id=c["id"]) is None
    assert (
        db.read_one("MATCH (:Chunk {id: $id})-[m:MENTIONS]->() WHERE m.extractor IS NOT NULL RETURN m", id=c["id"])
        is None
    )
    # the spaCy pass's names are E2GraphRAG's terms, not KG entities: the failed chunk adds none
    assert entity(db, "pierre curie") is None
    assert db.read_one(
        "MATCH (:Chunk {id: $id})-[:HAS_TERM]->(t:Term {normalized: 'pierre curie'}) RETURN t.id AS t", id=c["id"]
    )
    assert ("pierre curie", "live in", "paris") not in related(db)
    # the chunk, entity and keyword layers of the document are there; the other documents are whole
    assert db.read_one("MATCH (:Chunk {id: $id})-[:HAS_PART]->(s:SubChunk) RETURN count(s) AS n", id=c["id"]) == {
        "n": 1
    }
    assert db.read_one("MATCH (k:Keyword {term: 'lived'}) RETURN k.n_sentences AS n") == {"n": 1}
    assert chunk_of(db, "curie")["status"] == chunk_of(db, "nobel")["status"] == "ok"
    assert related(db)[("marie curie", "born in", "warsaw")] == 2

    # the model behaves again: the next ingest retries the failed document only (the others are
    # unchanged), and the graph is the one a clean run builds
    monkeypatch.undo()
    fake_openai.reset()
    again = gs.ingest_texts(CORPUS, OPTS)
    assert (again.documents_replaced, again.documents_unchanged, again.failed_chunks) == (1, 2, [])
    assert chat_calls(fake_openai) == 1
    retried = snapshot(graph)
    assert gs.ingest_texts(CORPUS, OPTS).documents_unchanged == 3  # now settled
    wipe(graph)
    gs.ingest_texts(CORPUS, OPTS)
    assert snapshot(graph) == retried


def test_reingest_costs_no_calls_and_changes_nothing(
    gs: GraphStrata, fake_openai: FakeOpenAI, graph: Database, llm_settings: Settings
) -> None:
    gs.ingest_texts(CORPUS, OPTS)
    before = snapshot(graph)
    fake_openai.reset()
    report = gs.ingest_texts(CORPUS, OPTS)
    assert (report.documents_unchanged, report.rows_written, report.llm) == (3, 0, {})
    assert fake_openai.calls == 0 and snapshot(graph) == before
    # even an empty graph is rebuilt from the LLM cache alone, by a new client
    wipe(graph)
    with GraphStrata(llm_settings, db=graph) as other:
        report = other.ingest_texts(CORPUS, OPTS)
    assert fake_openai.calls == 0
    assert (report.llm["extract"]["cache_hits"], report.llm["extract"]["calls"]) == (3, 0)
    assert snapshot(graph) == before


def test_replace_and_delete_of_llm_documents_equal_a_fresh_ingest(gs: GraphStrata, graph: Database) -> None:
    changed = CURIE.replace("Warsaw", "Krakow")
    gs.ingest_texts(CORPUS, OPTS)
    report = gs.ingest_texts([("curie", changed), ("pierre", PIERRE), ("nobel", NOBEL)], OPTS)
    assert (report.documents_replaced, report.documents_unchanged) == (1, 2)
    assert related(graph)[("marie curie", "born in", "warsaw")] == 1  # decremented
    assert related(graph)[("marie curie", "born in", "krakow")] == 1
    incremental = snapshot(graph)
    wipe(graph)
    gs.ingest_texts([("curie", changed), ("pierre", PIERRE), ("nobel", NOBEL)], OPTS)
    assert snapshot(graph) == incremental

    # deletion: the relation's last chunk goes, so does the edge; entities only 'nobel' had go too
    assert [d["title"] for d in gs.delete("nobel")] == ["nobel"]
    assert ("marie curie", "born in", "warsaw") not in related(graph)
    assert entity(graph, "warsaw") is None and entity(graph, "nobel prize") is None
    assert set(entity(graph, "marie curie")["descriptions"]) == {"Marie Curie was born in Krakow.", PIERRE}
    assert graph.read_one("MATCH (u:SemanticUnit {text: 'She won the Nobel Prize in 1911.'}) RETURN u") is None
    after = snapshot(graph)
    wipe(graph)
    gs.ingest_texts([("curie", changed), ("pierre", PIERRE)], OPTS)
    assert snapshot(graph) == after


@pytest.mark.parametrize("at", ["write_units", "write_relations", "set_entities"])
def test_failure_while_writing_extractions_leaves_no_partial_document(
    gs: GraphStrata, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    gs.ingest_texts([("pierre", PIERRE)], OPTS)
    before = snapshot(gs.db)

    def hook(name: str) -> None:
        if name == at:
            raise RuntimeError(f"injected failure before {name}")

    monkeypatch.setattr(write, "FAULT_HOOK", hook)
    with pytest.raises(RuntimeError, match="injected"):
        gs.ingest_texts([("curie", CURIE), ("pierre", PIERRE.replace("Paris", "Lyon"))], OPTS)
    assert snapshot(gs.db) == before


def test_core_only_extracts_the_core_chunks(gs: GraphStrata, fake_openai: FakeOpenAI) -> None:
    text = " ".join(f"Marie Curie met Pierre Curie in city number {i}." for i in range(60))
    opts = IngestOptions(chunk_size=200, chunk_overlap=0, extract_core_only=True)
    ingestor = Ingestor(gs.db, gs.embedder, opts, llm=gs.llm)
    with pytest.raises(ValueError, match="core_chunk_ids"):
        ingestor.ingest_documents([pipeline.SourceDocument("long", "long", text)])
    # chunk ids are content hashes: the same document always has the same ones
    doc = pipeline.SourceDocument("long", "long", text)
    first = hid("chunk", doc.id, 0, token_chunks(text, 200, 0)[0].text)
    report = ingestor.ingest_documents([doc], core_chunk_ids={first})
    assert report.chunks > 1 and report.extracted_chunks == 1 and chat_calls(fake_openai) == 1
    rows = gs.db.read("MATCH (c:Chunk) RETURN c.id AS id, c.extraction_status AS s")
    assert {r["id"]: r["s"] for r in rows} == {r["id"]: "ok" if r["id"] == first else "skipped" for r in rows}


# --- the no-LLM path --------------------------------------------------------------------------------


def test_no_llm_extractor_writes_units_and_relations_from_spacy(gs_offline: GraphStrata) -> None:
    report = gs_offline.ingest_texts(CORPUS, OPTS)
    db = gs_offline.db
    assert report.llm == {} and report.extracted_chunks == 3
    assert related(db) == dict(Counter(t for _, text in CORPUS for t in triples(text)))
    extractors = db.read("MATCH (n) WHERE n:Relation OR n:SemanticUnit OR n:Chunk RETURN DISTINCT n.extractor AS ex")
    assert extractors == [{"ex": "spacy"}]
    units = db.read("MATCH (u:SemanticUnit) RETURN u.text AS t ORDER BY t")
    assert [u["t"] for u in units] == sorted(u.text for _, t in CORPUS for u in extract_with_spacy(t).semantic_units)
    marie = entity(db, "marie curie")
    assert marie["source"] == "spacy" and marie["extractors"] == ["spacy"]
    assert entity(db, "warsaw")["type"] == "GPE"  # spaCy's NER label before the extractor's LOCATION
    # units are embedded (NodeRAG's S); spaCy's relations, whose description is their sentence, are not
    vectors = db.read("MATCH (n) WHERE n:Relation OR n:SemanticUnit RETURN labels(n)[0] AS l, count(n.embedding) AS e")
    assert {r["l"]: r["e"] for r in vectors} == {"SemanticUnit": len(units), "Relation": 0}


def test_extractor_none_and_spacy_with_an_llm_configured(gs: GraphStrata, fake_openai: FakeOpenAI) -> None:
    report = gs.ingest_texts([("curie", CURIE)], OPTS.model_copy(update={"extractor": "none"}))
    assert report.extracted_chunks == 0 and report.llm == {}
    assert chunk_of(gs.db, "curie")["status"] == "skipped"
    assert gs.db.read_one("MATCH (n) WHERE n:Relation OR n:SemanticUnit RETURN n") is None
    assert gs.db.read_one("MATCH ()-[r:RELATED]->() RETURN r") is None
    gs.ingest_texts([("pierre", PIERRE)], OPTS.model_copy(update={"extractor": "spacy"}))
    assert fake_openai.calls == 0 and chunk_of(gs.db, "pierre")["extractor"] == "spacy"


def test_llm_extractor_without_an_endpoint_is_a_clear_error(gs_offline: GraphStrata) -> None:
    from graphstrata.llm import LLMNotConfigured

    with pytest.raises(LLMNotConfigured, match="extractor 'llm'"):
        gs_offline.ingest_texts([("curie", CURIE)], OPTS.model_copy(update={"extractor": "llm"}))
    assert gs_offline.db.read_one("MATCH (d:Document) RETURN d") is None


# --- bring-your-own extractions -----------------------------------------------------------------------

# Three chunks at 15 tokens, one sentence each: Warsaw only in the second, Polonium in the third.
BYO_TEXT = (
    "Marie Curie was a physicist and chemist who worked in France. "
    "Marie Curie was born in Warsaw, then part of the Russian Empire. "
    "In 1898 Marie Curie discovered Polonium with Pierre Curie."
)
BYO_LINES = [
    {
        "title": "Curie bio",
        "text": BYO_TEXT,
        "entities": [
            {"name": "Marie Curie", "type": "PERSON", "description": "Physicist and chemist."},
            {"name": "Warsaw", "type": "LOCATION", "description": "Capital of Poland."},
            "Polonium",
        ],
        "triples": [
            ["Marie Curie", "born in", "Warsaw"],
            {"subject": "Marie Curie", "predicate": "discovered", "object": "Polonium", "description": "In 1898."},
            ["Ada Lovelace", "wrote", "Notes"],  # in no chunk: goes to the first one
        ],
    },
    {"title": "Pierre", "text": PIERRE, "triples": [["Pierre Curie", "lived in", "Paris"]]},
]
BYO_OPTS = IngestOptions(chunk_size=15, chunk_overlap=0)


def write_jsonl(path: Path, lines: list) -> Path:
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def check_byo_graph(db: Database) -> None:
    chunks = db.read(
        "MATCH (c:Chunk {doc_title: 'Curie bio'}) RETURN c.ordinal AS o, c.text AS text, c.extractor AS ex, "
        "c.title AS title, "
        "COLLECT { MATCH (c)-[:HAS_RELATION]->(x:Relation) RETURN x.subject + '|' + x.predicate + '|' + x.object "
        "ORDER BY x.predicate } AS rels ORDER BY o"
    )
    assert len(chunks) == 3 and "Warsaw" in chunks[1]["text"] and "Polonium" in chunks[2]["text"]
    assert {c["ex"] for c in chunks} == {"user"} and {c["title"] for c in chunks} == {"Curie bio"}
    assert [c["rels"] for c in chunks] == [
        ["Ada Lovelace|wrote|Notes"],
        ["Marie Curie|born in|Warsaw"],
        ["Marie Curie|discovered|Polonium"],
    ]
    assert related(db) == {
        ("ada lovelace", "wrote", "notes"): 1,
        ("marie curie", "born in", "warsaw"): 1,
        ("marie curie", "discovered", "polonium"): 1,
        ("pierre curie", "lived in", "paris"): 1,
    }
    assert db.read_one("MATCH ()-[r:RELATED {predicate: 'discovered'}]->() RETURN r.description AS d") == {
        "d": "In 1898."
    }
    warsaw = entity(db, "warsaw")
    assert (
        warsaw["type"] == "LOCATION" and warsaw["source"] == "user" and warsaw["descriptions"] == ["Capital of Poland."]
    )
    assert "user" in entity(db, "marie curie")["extractors"]
    # user entities are mentioned where their names occur, those in no chunk in the first
    where = db.read(
        "MATCH (c:Chunk {doc_title: 'Curie bio'})-[m:MENTIONS]->(e:Entity) WHERE m.extractor = 'user' "
        "RETURN e.normalized AS e, collect(c.ordinal) AS chunks ORDER BY e"
    )
    assert {r["e"]: sorted(r["chunks"]) for r in where} == {
        "ada lovelace": [0],
        "marie curie": [0, 1, 2],
        "notes": [0],
        "polonium": [2],
        "warsaw": [1],
    }
    assert db.read_one("MATCH (u:SemanticUnit) RETURN u") is None  # the format has none


def test_ingest_extractions_python_api(gs_offline: GraphStrata, tmp_path: Path, graph: Database) -> None:
    path = write_jsonl(tmp_path / "byo.jsonl", BYO_LINES)
    report = gs_offline.ingest_extractions(path, BYO_OPTS)
    assert (report.documents_new, report.chunks, report.relations, report.llm) == (2, 4, 4, {})
    check_byo_graph(graph)
    # unchanged file: a no-op; a changed triple alone: the document is replaced, exactly
    assert gs_offline.ingest_extractions(path, BYO_OPTS).documents_unchanged == 2
    lines = json.loads(json.dumps(BYO_LINES))
    lines[1]["triples"] = [["Pierre Curie", "lived with", "Marie Curie"]]
    report = gs_offline.ingest_extractions(write_jsonl(path, lines), BYO_OPTS)
    assert (report.documents_replaced, report.documents_unchanged) == (1, 1)
    assert ("pierre curie", "lived in", "paris") not in related(graph)
    incremental = snapshot(graph)
    wipe(graph)
    gs_offline.ingest_extractions(path, BYO_OPTS)
    assert snapshot(graph) == incremental
    # an invalid file is refused whole, naming the line
    bad = write_jsonl(tmp_path / "bad.jsonl", [BYO_LINES[0], {"title": "x", "text": "y", "triples": [["a", "b"]]}])
    with pytest.raises(UserExtractionError, match="line 2"):
        gs_offline.ingest_extractions(bad, BYO_OPTS)
    assert snapshot(graph) == incremental


def _cli_env(settings: Settings, **extra: str) -> dict[str, str]:
    """The environment for a `graphstrata` subprocess on the test database (no LLM unless given)."""
    return settings.subprocess_env(**extra)


def _cli(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("graphstrata")
    return subprocess.run([str(exe), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_ingest_extractions_cli(graph: Database, neo4j_settings: Settings, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "byo.jsonl", BYO_LINES)
    env = _cli_env(neo4j_settings, GRAPHSTRATA_CACHE_DIR=str(tmp_path / "cache"))
    done = _cli(env, "ingest", "--extractions", str(path), "--chunk-size", "15", "--chunk-overlap", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ingest summary" in done.stdout and "LLM: no calls" in done.stdout
    check_byo_graph(graph)
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"title": "x", "text": "y", "entities": 3}])
    done = _cli(env, "ingest", "--extractions", str(bad), cwd=tmp_path)
    assert done.returncode == 1 and "line 1" in done.stderr
    done = _cli(env, "ingest", cwd=tmp_path)
    assert done.returncode == 1 and "nothing to ingest" in done.stderr


def test_cli_summary_reports_llm_cost_per_stage(
    graph: Database, neo4j_settings: Settings, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"title": t, "text": x} for t, x in CORPUS])
    env = _cli_env(
        neo4j_settings,
        OPENAI_BASE_URL=fake_openai.base_url,
        OPENAI_API_KEY=fake_openai.api_key,
        GRAPHSTRATA_CHAT_MODEL=CHAT_MODEL,
        GRAPHSTRATA_CACHE_DIR=str(tmp_path / "cache"),
    )
    done = _cli(env, "ingest", str(corpus), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert chat_calls(fake_openai) == 3
    # not a terminal: the cost table is printed as one record per stage
    lines = done.stdout.splitlines()
    record = lines[lines.index("  extract:") + 1 :][:6]
    fields = {k.strip(): v for k, v in (x.strip().rsplit(maxsplit=1) for x in record)}
    assert fields["calls"] == "3" and fields["cache hits"] == "0"
    assert graph.read_one("MATCH (x:Relation) RETURN collect(DISTINCT x.extractor) AS ex") == {"ex": ["llm"]}


def test_print_report_lists_failed_chunks(capsys: pytest.CaptureFixture[str]) -> None:
    from graphstrata.cli import print_report

    report = IngestReport(
        documents_new=1,
        chunks=2,
        failed_chunks=[{"doc": "notes.txt", "title": "notes", "chunk": 1, "error": "extract: no valid reply"}],
        llm={"extract": {"calls": 4, "prompt_tokens": 900, "completion_tokens": 300, "cache_hits": 1}},
    )
    print_report(report)
    out = capsys.readouterr()
    assert "900" in out.out and "300" in out.out
    assert "extraction failed" in out.err and "notes.txt chunk 1" in out.err
