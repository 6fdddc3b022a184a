"""Ingestion on a real Neo4j: what lands, idempotence, replacement, deletion, bad input, faults.

The strongest checks compare an incremental history (ingest, change, delete) with a fresh ingest
of the end state: the two graphs must be identical, counts and weights included.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from graphstrata.client import GraphStrata
from graphstrata.db import Database
from graphstrata.ingest import write
from graphstrata.ingest.chunk import split_subchunks, token_chunks
from graphstrata.ingest.load import LoadError, load_file
from graphstrata.ingest.pipeline import IngestOptions
from graphstrata.schema import document_embedder
from graphstrata.text.names import entity_id
from graphstrata.text.tokens import encoder

CURIE = "Marie Curie was born in Warsaw. Marie Curie moved to Paris in 1891."
PIERRE = "Pierre Curie lived in Paris with Marie Curie."
OPTS = IngestOptions(chunk_size=1200, chunk_overlap=100)


def snapshot(db: Database) -> dict:
    """Everything but vectors (a keyword's sum among them) and timestamps, in a comparable form."""
    nodes = db.read(
        "MATCH (n) WHERE NOT n:GraphStrata RETURN labels(n)[0] AS label, n.id AS id, "
        "properties(n) AS p ORDER BY label, id"
    )
    for n in nodes:
        for k in ("embedding", "sum", "ingested_at", "_lock"):
            n["p"].pop(k, None)
    rels = db.read("MATCH (a)-[r]->(b) RETURN type(r) AS t, a.id AS a, b.id AS b, properties(r) AS p")
    # sorted by all of a relationship: two of one type between one pair (a chunk pair's semantic and
    # lexical SIMILAR) come back in store order, which the order of the writes decides
    rels.sort(key=lambda r: (r["t"], str(r["a"]), str(r["b"]), json.dumps(r["p"], sort_keys=True, default=str)))
    return {"nodes": nodes, "rels": rels}


def entity(db: Database, name: str) -> dict | None:
    return db.read_one("MATCH (e:Entity {normalized: $n}) RETURN e.id AS id, e.type AS type", n=name)


def cooc(db: Database, a: str, b: str) -> int | None:
    row = db.read_one(
        "MATCH (x:Term {normalized: $a})-[r:CO_OCCURS]-(y:Term {normalized: $b}) RETURN r.weight AS w", a=a, b=b
    )
    return row["w"] if row else None


# --- chunking ---------------------------------------------------------------------------------


def test_token_windows_cover_the_text_with_exact_overlap() -> None:
    text = " ".join(f"word{i}" for i in range(3000))
    ids = encoder().encode_ordinary(text)
    pieces = token_chunks(text, 1200, 100)
    assert len(pieces) == int(np.ceil((len(ids) - 100) / 1100))
    for a, b in itertools.pairwise(pieces):
        assert b.start - a.start == 1100
        assert encoder().encode_ordinary(a.text)[-100:] == encoder().encode_ordinary(b.text)[:100]
    assert all(p.tokens <= 1200 for p in pieces) and pieces[-1].start + pieces[-1].tokens == len(ids)


def test_subchunks_halve_m_times_and_partition_the_chunk() -> None:
    text = " ".join(f"w{i}" for i in range(2000))
    ids = encoder().encode_ordinary(text)[:1200]
    chunk = encoder().decode(ids)
    subs = split_subchunks(chunk, splits=3, min_tokens=100)
    assert [s.tokens for s in subs] == [150] * 8
    assert [t for s in subs for t in encoder().encode_ordinary(s.text)] == ids
    assert len(split_subchunks(chunk, splits=3, min_tokens=400)) == 2  # 600-token halves only
    assert len(split_subchunks("short text", splits=3)) == 1


# A 2-sub-chunk passage whose halving falls inside the name "Pierre Curie"
LONG = (
    " ".join(["Marie Curie moved to Paris in 1891 with Pierre Curie."] * 12)
    + " word "
    + " ".join(["The Royal Swedish Academy of Sciences awarded Marie Curie the Nobel Prize."] * 6)
)


def test_subchunks_cut_from_the_chunk_parse_add_up_to_it() -> None:
    from collections import Counter

    from graphstrata.text.nlp import analyse, cut, parse_texts

    subs = [s.text for s in split_subchunks(LONG, splits=3, min_tokens=100)]
    assert len(subs) == 2 and subs[0].endswith("Pierre")  # the halving cuts the name
    doc = parse_texts([LONG])[0]
    pieces = cut(doc, subs)
    assert pieces is not None and sum(len(d) for d in pieces) == len(doc)  # every token once
    whole = analyse(doc)
    cuts = [analyse(d) for d in pieces]
    # the sub-chunks' mentions and keyword sentences add up to the chunk's own analysis ...
    assert sum((a.mentions for a in cuts), Counter()) == whole.mentions
    assert "pierre curie" in cuts[0].mentions
    # ... which sub-chunks parsed on their own do not: the name is broken at the edge
    alone = [analyse(d) for d in parse_texts(subs)]
    assert sum((a.mentions for a in alone), Counter()) != whole.mentions
    assert cut(doc, [subs[0], subs[1][1:]]) is None  # pieces that do not make up the text
    assert cut(doc, [LONG]) == [doc]


# --- loading ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("empty.txt", b"", "empty"),
        ("blank.md", b"  \n\n ", "empty"),
        ("binary.txt", bytes(range(256)) * 4, "binary"),
        ("latin1.txt", "caf\xe9 cr\xe8me".encode("latin-1"), "not UTF-8"),
        ("image.png", b"\x89PNG\r\n", "unsupported"),
        ("bad.jsonl", b'{"title": "a", "text": "x"}\n{not json\n', "invalid JSON"),
        ("notext.jsonl", b'{"title": "a"}\n', "missing or empty 'text'"),
    ],
)
def test_unreadable_input_is_a_clear_error_naming_the_file(tmp_path: Path, name: str, content: bytes, reason: str):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(LoadError, match=reason) as err:
        load_file(path)
    assert name in str(err.value)


def test_bad_files_leave_the_graph_unchanged(gs: GraphStrata, tmp_path: Path) -> None:
    (tmp_path / "good.txt").write_text(CURIE)
    gs.ingest([tmp_path / "good.txt"], OPTS)
    before = snapshot(gs.db)
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "junk.txt").write_bytes(b"\x00\x01\x02" * 100)
    report = gs.ingest([tmp_path / "empty.txt", tmp_path / "junk.txt"], OPTS)
    assert len(report.errors) == 2 and report.documents_new == 0
    assert snapshot(gs.db) == before


# --- what lands -------------------------------------------------------------------------------


def test_known_texts_give_known_layers(gs: GraphStrata) -> None:
    report = gs.ingest_texts([("curie", CURIE), ("pierre", PIERRE)], OPTS)
    assert (report.documents_new, report.chunks, report.subchunks) == (2, 2, 2)
    db = gs.db
    for name, typ in (("marie curie", "PERSON"), ("warsaw", "GPE"), ("paris", "GPE"), ("pierre curie", "PERSON")):
        assert entity(db, name) == {"id": entity_id(name), "type": typ}
    # one Paris node, mentioned by both chunks; Marie Curie twice in the first chunk
    rows = db.read(
        "MATCH (c:Chunk)-[m:MENTIONS]->(:Entity {normalized: 'paris'}) RETURN c.doc_title AS d, m.count AS n"
    )
    assert sorted((r["d"], r["n"]) for r in rows) == [("curie", 1), ("pierre", 1)]
    assert db.read_one(
        "MATCH (:Chunk {doc_title: 'curie'})-[m:MENTIONS]->(:Entity {normalized: 'marie curie'}) RETURN m.count AS n"
    ) == {"n": 2}
    # sentence co-occurrence, summed over documents; none across sentences
    assert cooc(db, "marie curie", "warsaw") == 1
    assert cooc(db, "marie curie", "paris") == 2
    assert cooc(db, "warsaw", "paris") is None
    # keywords: non-stop words linked to the sub-chunks holding them, embedding = sum of sentence vectors
    kw = db.read_one("MATCH (k:Keyword {term: 'paris'}) RETURN k.n_sentences AS n, k.sum AS e")
    assert kw["n"] == 2
    sentences = ["Marie Curie moved to Paris in 1891.", PIERRE]
    expected = document_embedder(db, gs.embedder).embed(sentences).sum(0)
    got = np.asarray(kw["e"])
    assert float(got @ expected / np.linalg.norm(got) / np.linalg.norm(expected)) > 0.9999
    assert db.read_one("MATCH (k:Keyword {term: 'the'}) RETURN k") is None  # stop word
    assert db.read("MATCH (k:Keyword {term: 'warsaw'})-[:OCCURS_IN]->(s:SubChunk) RETURN s.text AS t") == [{"t": CURIE}]
    # vectors on every embedded layer, of the model's size, served by the vector index
    for label in ("Chunk", "SubChunk", "Entity", "Keyword"):
        row = db.read_one(
            f"MATCH (n:{label}) RETURN count(n) AS n, count(n.embedding) AS e, min(size(n.embedding)) AS d"
        )
        assert row["n"] == row["e"] and row["d"] == 384, label
    hit = db.read_one(
        "CALL db.index.vector.queryNodes('chunk_embedding', 1, $v) YIELD node RETURN node.doc_title AS t",
        v=gs.embedder.embed(["Where was Marie Curie born?"])[0].tolist(),
    )
    assert hit == {"t": "curie"}


@pytest.mark.parametrize("recorded", ["int8", "float32", None])
def test_sentences_take_the_graph_precision_passages_and_names_stay_float32(
    gs: GraphStrata, recorded: str | None
) -> None:
    """A graph's sentence-level texts (here a semantic unit) are embedded at the precision it records
    (None: a graph from before precisions were recorded, float32); passages and entity names, which
    questions are compared with, always in float32."""
    from graphstrata.embed import MiniLMEmbedder

    gs.db.write("MATCH (m:GraphStrata {id: 'meta'}) SET m.embed_precision = $p", p=recorded)
    gs.ingest_texts([("curie", CURIE)], OPTS)

    def stored(q: str) -> np.ndarray:
        return np.asarray(gs.db.read_one(q)["e"], np.float32)

    unit = stored("MATCH (u:SemanticUnit {text: 'Marie Curie was born in Warsaw.'}) RETURN u.embedding AS e")
    chunk = stored("MATCH (c:Chunk) RETURN c.embedding AS e")
    name = stored("MATCH (e:Entity {normalized: 'warsaw'}) RETURN e.embedding AS e")
    reference = {p: MiniLMEmbedder(precision=p) for p in ("float32", "int8")}  # no cache: computed here
    want, other = recorded or "float32", "float32" if recorded == "int8" else "int8"
    for vector, text, precision, not_precision in (
        (unit, "Marie Curie was born in Warsaw.", want, other),
        (chunk, f"curie\n{CURIE}", "float32", "int8"),
        (name, "Warsaw", "float32", "int8"),
    ):
        np.testing.assert_allclose(vector, reference[precision].compute([text])[0], atol=1e-5)
        assert np.abs(vector - reference[not_precision].compute([text])[0]).max() > 1e-3  # told apart
    meta = gs.db.read_one("MATCH (m:GraphStrata {id: 'meta'}) RETURN m.embed_precision AS p")
    assert meta["p"] == recorded  # kept: a graph's vectors do not change precision under it


def test_a_new_graph_records_the_configured_precision(empty_db: Database, neo4j_settings) -> None:
    for precision in ("float32", "int8"):
        from tests.conftest import wipe

        wipe(empty_db)
        settings = neo4j_settings.model_copy(update={"embed_precision": precision})
        with GraphStrata(settings, db=empty_db) as g:
            g.ingest_texts([("pierre", PIERRE)], OPTS)
        assert empty_db.read_one("MATCH (m:GraphStrata {id: 'meta'}) RETURN m.embed_precision AS p") == {"p": precision}


NOUNS = (
    "The astronomer Vera Rubin studied galaxy rotation at the observatory in Arizona. "
    "Her telescope data about the galaxy showed dark matter."
)


def test_common_nouns_stay_out_of_the_knowledge_graph(gs: GraphStrata) -> None:
    """The KG layer holds the extractor's entities only; E2GraphRAG's term layer keeps its nouns."""
    gs.ingest_texts([("rubin", NOUNS)], OPTS)
    db = gs.db
    kg = {r["n"] for r in db.read("MATCH (e:Entity) RETURN e.normalized AS n")}
    terms = {r["n"]: r["t"] for r in db.read("MATCH (t:Term) RETURN t.normalized AS n, t.type AS t")}
    nouns = {"astronomer", "galaxy", "rotation", "observatory", "telescope", "datum", "matter"}
    # an independent reading of the text: spaCy's own NOUN tags (lemmas), not our analysis
    from graphstrata.text.nlp import get_nlp

    tagged = {t.lemma_.lower() for t in get_nlp()(NOUNS) if t.pos_ == "NOUN"}
    assert nouns & tagged, "spaCy no longer tags the test's nouns: pick others"
    assert not kg & tagged, f"common nouns in the KG layer: {kg & tagged}"
    assert "arizona" in kg and any("rubin" in n for n in kg)
    assert tagged <= set(terms), "E2GraphRAG lost nouns"
    assert {terms[n] for n in tagged} == {"NOUN"}
    assert db.read_one("MATCH (:Entity)-[r:CO_OCCURS]-() RETURN count(r) AS n") == {"n": 0}
    assert cooc(db, "galaxy", "rotation") == 1 and cooc(db, "observatory", "arizona") == 1
    assert db.read_one("MATCH (t:Term) RETURN count(t.embedding) AS n") == {"n": 0}  # matched by name
    # E2GraphRAG's index mapping finds the chunk holding two nouns
    res = gs.retrieve("What did the telescope show about the galaxy?", "e2graphrag")
    assert res.notes["branch"] == "local" and res.items and "dark matter" in res.items[0].text
    # deleting the document takes its terms with it
    gs.delete("rubin")
    assert db.read_one("MATCH (t:Term) RETURN count(t) AS n") == {"n": 0}


def test_next_links_keep_document_order(gs: GraphStrata) -> None:
    text = " ".join(f"Sentence number {i} talks about topic {i % 7}." for i in range(120))
    gs.ingest_texts([("long", text)], IngestOptions(chunk_size=200, chunk_overlap=20))
    chain = gs.db.read(
        "MATCH p = (first:Chunk)-[:NEXT*0..]->(c:Chunk) WHERE NOT ()-[:NEXT]->(first) "
        "RETURN c.ordinal AS o ORDER BY length(p)"
    )
    n = gs.db.read_one("MATCH (c:Chunk) RETURN count(c) AS n")["n"]
    assert n == len(token_chunks(text, 200, 20)) > 5
    assert [r["o"] for r in chain] == list(range(n))


# --- idempotence, replacement, deletion -------------------------------------------------------


def test_reingest_is_a_noop(gs: GraphStrata, tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"title": t, "text": x}) for t, x in [("curie", CURIE), ("pierre", PIERRE)]))
    gs.ingest([corpus], OPTS)
    before = snapshot(gs.db)
    report = gs.ingest([corpus], OPTS)
    assert (report.documents_unchanged, report.documents_new, report.rows_written) == (2, 0, 0)
    assert snapshot(gs.db) == before


def test_changed_document_is_replaced_exactly(gs: GraphStrata, graph: Database) -> None:
    changed = CURIE.replace("Warsaw", "Krakow")
    gs.ingest_texts([("curie", CURIE), ("pierre", PIERRE)], OPTS)
    report = gs.ingest_texts([("curie", changed), ("pierre", PIERRE)], OPTS)
    assert (report.documents_replaced, report.documents_unchanged) == (1, 1)
    incremental = snapshot(gs.db)
    kw = gs.db.read_one("MATCH (k:Keyword {term: 'paris'}) RETURN k.sum AS e, k.n_sentences AS n")
    assert entity(gs.db, "warsaw") is None and entity(gs.db, "krakow") is not None
    # the same graph as a fresh ingest of the end state
    from tests.conftest import wipe

    wipe(graph)
    gs.ingest_texts([("curie", changed), ("pierre", PIERRE)], OPTS)
    assert snapshot(gs.db) == incremental
    fresh = gs.db.read_one("MATCH (k:Keyword {term: 'paris'}) RETURN k.sum AS e, k.n_sentences AS n")
    assert fresh["n"] == kw["n"]
    np.testing.assert_allclose(kw["e"], fresh["e"], atol=1e-5)


def test_a_keywords_indexed_vector_follows_its_sum_once_per_ingest(gs: GraphStrata) -> None:
    """add_keywords keeps the exact sum (k.sum); the indexed copy (k.embedding, each rewrite a deleted
    entry in the HNSW index) is written when the keyword is new and at the end of an ingest (or in a
    delete) only where the sum has turned past cosine 0.9999 from it."""

    def paris() -> tuple[np.ndarray, np.ndarray]:
        row = gs.db.read_one("MATCH (k:Keyword {term: 'paris'}) RETURN k.sum AS s, k.embedding AS e")
        return np.asarray(row["s"]), np.asarray(row["e"])

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))

    gs.ingest_texts([("one", PIERRE)], OPTS)
    # 300 more sentences, in several batches and write transactions: the copy is the end state's sum
    many = [
        (f"many {j}", " ".join(f"Traveller {i} reached Paris on day {i + j}." for i in range(30))) for j in range(10)
    ]
    gs.ingest_texts(many, IngestOptions(chunk_size=1200, chunk_overlap=100, batch_documents=2, group_chunks=1))
    s0, e0 = paris()
    assert cos(e0, s0) >= 0.9999
    gs.ingest_texts([("two", "Marie Curie moved to Paris in 1891.")], OPTS)  # one more among 302
    s1, e1 = paris()
    assert not np.allclose(s1, s0)  # the sum took the sentence
    np.testing.assert_array_equal(e1, e0)  # the index was left alone
    assert cos(e1, s1) >= 0.9999
    for j in range(10):
        gs.delete(f"many {j}")  # 300 of 302 sentences gone: the sum turns far
    s2, e2 = paris()
    want = document_embedder(gs.db, gs.embedder).embed([PIERRE, "Marie Curie moved to Paris in 1891."]).sum(0)
    assert cos(s2, want) > 0.9999
    assert cos(e2, s2) >= 0.9999 and not np.allclose(e2, e1)  # written again


def test_delete_removes_what_only_that_document_supported(gs: GraphStrata, graph: Database) -> None:
    gs.ingest_texts([("curie", CURIE), ("pierre", PIERRE)], OPTS)
    deleted = gs.delete("curie")
    assert [d["title"] for d in deleted] == ["curie"]
    after = snapshot(gs.db)
    assert entity(gs.db, "warsaw") is None  # only 'curie' mentioned it
    assert entity(gs.db, "paris") is not None and cooc(gs.db, "marie curie", "paris") == 1
    from tests.conftest import wipe

    wipe(graph)
    gs.ingest_texts([("pierre", PIERRE)], OPTS)
    assert snapshot(gs.db) == after
    assert gs.delete("no such document") == []


def test_delete_undoes_split_chunks_as_they_were_analysed(
    gs: GraphStrata, graph: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphstrata.ingest import flow
    from tests.conftest import wipe

    gs.ingest_texts([("pierre", PIERRE)], OPTS)
    fresh = snapshot(gs.db)
    paris = gs.db.read_one("MATCH (k:Keyword {term: 'paris'}) RETURN k.sum AS e")["e"]

    def undone() -> None:
        assert snapshot(gs.db) == fresh
        after = gs.db.read_one("MATCH (k:Keyword {term: 'paris'}) RETURN k.sum AS e")["e"]
        np.testing.assert_allclose(after, paris, atol=1e-5)

    gs.ingest_texts([("long", LONG)], OPTS)
    assert graph.read("MATCH (c:Chunk {doc_title: 'long'}) RETURN c.subs_cut AS cut") == [{"cut": True}]
    assert graph.read_one("MATCH (:Chunk {doc_title: 'long'})-[:HAS_PART]->(s) RETURN count(s) AS n")["n"] == 2
    gs.delete("long")
    undone()
    # a graph written before sub-chunks were cut from their chunk's parse: they were parsed alone
    # (`subs_cut` absent), and the delete subtracts that analysis, not today's
    monkeypatch.setattr(flow, "cut", lambda doc, pieces: None)
    gs.ingest_texts([("long", LONG)], OPTS)
    monkeypatch.undo()
    graph.write("MATCH (c:Chunk {doc_title: 'long'}) REMOVE c.subs_cut")
    gs.delete("long")
    undone()
    wipe(graph)


# --- faults -----------------------------------------------------------------------------------


class Boom(RuntimeError):
    pass


@pytest.fixture
def fault(monkeypatch: pytest.MonkeyPatch):
    def arm(at: str) -> None:
        def hook(name: str) -> None:
            if name == at:
                raise Boom(f"injected failure before {name}")

        monkeypatch.setattr(write, "FAULT_HOOK", hook)

    return arm


@pytest.mark.parametrize("at", ["write_subchunks", "add_keywords", "set_documents"])
def test_failure_mid_document_leaves_no_partial_document(gs: GraphStrata, fault, at: str) -> None:
    gs.ingest_texts([("pierre", PIERRE)], OPTS)
    before = snapshot(gs.db)
    fault(at)
    with pytest.raises(Boom):
        gs.ingest_texts([("curie", CURIE)], OPTS)
    assert snapshot(gs.db) == before


@pytest.mark.parametrize("at", ["delete_document_nodes", "write_chunks", "link_keywords"])
def test_failure_mid_replacement_keeps_the_old_version(gs: GraphStrata, fault, at: str) -> None:
    gs.ingest_texts([("curie", CURIE), ("pierre", PIERRE)], OPTS)
    before = snapshot(gs.db)
    fault(at)
    with pytest.raises(Boom):
        gs.ingest_texts([("curie", CURIE.replace("Warsaw", "Krakow"))], OPTS)
    assert snapshot(gs.db) == before


# --- batches: the next one is prepared while Neo4j writes the last -----------------------------------

SHARED = [
    (f"doc-{i}", f"Marie Curie met Albert Einstein in Brussels in {1900 + i}. Paul Langevin {i} joined them.")
    for i in range(5)
]


def test_batches_of_any_size_build_the_same_graph_and_embed_each_name_once(
    gs: GraphStrata, graph: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = gs.ingest_texts(SHARED, OPTS)
    whole = snapshot(graph)
    keywords = graph.read_one("MATCH (k:Keyword) RETURN count(k) AS n")["n"]
    from tests.conftest import wipe

    wipe(graph)
    embedded: list[str] = []
    embed = gs.embedder.embed

    def recording(texts, *args, **kwargs):
        embedded.extend(texts)
        return embed(texts, *args, **kwargs)

    monkeypatch.setattr(gs.embedder, "embed", recording)
    # one document per batch: each batch's entities are read after the previous batch's write
    many = gs.ingest_texts(SHARED, OPTS.model_copy(update={"batch_documents": 1}))
    assert snapshot(graph) == whole
    # the report counts distinct keywords, however many batches share them
    assert one.keywords == many.keywords == keywords and one.entities_new == many.entities_new
    names = [r["name"] for r in graph.read("MATCH (e:Entity) RETURN e.name AS name")]
    assert "Marie Curie" in names and "Albert Einstein" in names
    assert all(embedded.count(n) == 1 for n in names), [n for n in names if embedded.count(n) != 1]
    missing = graph.read_one("MATCH (e:Entity) WHERE e.embedding IS NULL RETURN count(e) AS n")["n"]
    assert missing == 0


def test_batches_are_short_at_both_ends_and_cover_every_document_once() -> None:
    from graphstrata.ingest.flow import _counted

    def sizes(n: int, size: int) -> list[int]:
        docs = list(range(n))
        batches = list(_counted(docs, size))
        assert [d for b in batches for d in b] == docs  # in order, each once
        return [len(b) for b in batches]

    # hotpotqa_dev100's 994 documents at the default 256: an eighth first, the last 256 as 128, 64, 32, 32
    assert sizes(994, 256) == [32, 256, 256, 194, 128, 64, 32, 32]
    assert sizes(32 + 256, 256) == [32, 128, 64, 32, 32]
    assert sizes(100, 256) == [32, 34, 34]  # halves of the 68 left would be under an eighth
    assert sizes(20, 256) == [20]
    assert sizes(3, 1) == [1, 1, 1]
    assert sizes(5, 2) == [1, 2, 1, 1]
    assert sizes(0, 256) == []


def test_next_batch_is_parsed_while_the_last_is_written(gs: GraphStrata, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from graphstrata.ingest import flow

    parses = []
    second_parse = threading.Event()
    parse = flow.parse_texts

    def counting(texts, *args, **kwargs):
        parses.append(len(texts))
        if len(parses) == 2:
            second_parse.set()
        return parse(texts, *args, **kwargs)

    def hook(name: str) -> None:
        # the first batch's write holds its transaction until the second batch is being parsed
        if name == "set_documents" and not second_parse.is_set() and len(parses) == 1:
            assert second_parse.wait(120), "the second batch was not parsed while the first was written"

    monkeypatch.setattr(flow, "parse_texts", counting)
    monkeypatch.setattr(write, "FAULT_HOOK", hook)
    report = gs.ingest_texts(SHARED[:2], OPTS.model_copy(update={"batch_documents": 1}))
    assert report.documents_new == 2 and len(parses) == 2


def test_a_failure_preparing_a_batch_lets_the_write_under_way_end_whole(
    gs: GraphStrata, graph: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphstrata.ingest import flow

    parse, calls = flow.parse_texts, []

    def failing(texts, *args, **kwargs):
        calls.append(texts)
        if len(calls) == 2:
            raise Boom("the second batch's parse fails")
        return parse(texts, *args, **kwargs)

    monkeypatch.setattr(flow, "parse_texts", failing)
    with pytest.raises(Boom):
        gs.ingest_texts(SHARED[:3], OPTS.model_copy(update={"batch_documents": 1}))
    docs = graph.read("MATCH (d:Document) OPTIONAL MATCH (d)-[:HAS_CHUNK]->(c) RETURN d.title AS t, count(c) AS n")
    assert [(d["t"], d["n"]) for d in docs] == [("doc-0", 1)]  # the first batch, whole; nothing of the rest
