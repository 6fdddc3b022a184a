"""The schema applies idempotently and refuses vectors of another model or size."""

from __future__ import annotations

import pytest

from graphstrata.cypher import load
from graphstrata.db import Database
from graphstrata.schema import SchemaError, apply_schema

MODEL, DIM = "local:all-MiniLM-L6-v2", 384


def schema_objects(db: Database) -> set[tuple]:
    cons = {("constraint", r["name"]) for r in db.read("SHOW CONSTRAINTS YIELD name")}
    idx = {(r["type"], r["name"], r["state"]) for r in db.read("SHOW INDEXES YIELD name, type, state")}
    return cons | idx


def test_schema_is_idempotent(empty_db: Database) -> None:
    apply_schema(empty_db, MODEL, DIM)
    first = schema_objects(empty_db)
    n_statements = len(load("schema"))
    assert n_statements >= 25
    assert apply_schema(empty_db, MODEL, DIM) == n_statements
    assert schema_objects(empty_db) == first
    names = {name for _, name, *_ in first}
    for expected in (
        "chunk_id",
        "entity_id",
        "chunk_embedding",
        "entity_embedding",
        "entity_name_fulltext",
        "chunk_text_fulltext",
        "overview_title_fulltext",
        "keyword_term_fulltext",
    ):
        assert expected in names
    assert all(state == "ONLINE" for kind, _, *rest in first if kind != "constraint" for state in rest)
    assert empty_db.read("MATCH (m:GraphStrata) RETURN count(m) AS n")[0]["n"] == 1


def test_dimension_mismatch_is_refused_and_changes_nothing(empty_db: Database) -> None:
    apply_schema(empty_db, MODEL, DIM)
    before = schema_objects(empty_db)
    empty_db.write("MATCH (m:GraphStrata) DELETE m")  # even without the meta node, the index sizes tell
    with pytest.raises(SchemaError, match="another size"):
        apply_schema(empty_db, "openai-like", 16)
    assert schema_objects(empty_db) == before
    dims = {
        r["dim"]
        for r in empty_db.read(
            "SHOW VECTOR INDEXES YIELD options RETURN options.indexConfig.`vector.dimensions` AS dim"
        )
    }
    assert dims == {DIM}


def test_other_model_of_same_size_is_refused(empty_db: Database) -> None:
    apply_schema(empty_db, MODEL, DIM)
    with pytest.raises(SchemaError, match="was embedded with"):
        apply_schema(empty_db, "some-other-384-model", DIM)


def test_a_schema_1_graph_is_refused_with_the_way_to_rebuild_it(empty_db: Database) -> None:
    """Schema 1 kept spaCy nouns among the entities (CO_OCCURS between Entity nodes)."""
    empty_db.write(
        "CREATE (:GraphStrata {id: 'meta', embed_model: $m, embed_dim: $d, schema_version: 1}) "
        "CREATE (:Entity {id: 'a', normalized: 'film'})-[:CO_OCCURS {weight: 1}]->(:Entity {id: 'b', normalized: 'x'})",
        m=MODEL,
        d=DIM,
    )
    with pytest.raises(SchemaError, match=r"graphstrata reset --yes"):
        apply_schema(empty_db, MODEL, DIM)
    # a schema-1 graph without that layout (e.g. empty of entities) is simply upgraded
    empty_db.write("MATCH (e:Entity) DETACH DELETE e")
    apply_schema(empty_db, MODEL, DIM)
    assert empty_db.read_one("MATCH (m:GraphStrata {id: 'meta'}) RETURN m.schema_version AS v") == {"v": 2}


def test_new_graph_records_the_precision_its_embedder_can_give(empty_db: Database, monkeypatch) -> None:
    """Unasked, a new graph records the configured embedder's default: the numpy runtime has no int8
    encoder, so its graph is float32 whatever GRAPHSTRATA_EMBED_PRECISION says."""
    from graphstrata import embed

    numpy_runtime = embed._local(64, "numpy", None, "int8", None)
    assert numpy_runtime.default_precision == "float32"
    monkeypatch.setattr(embed, "get_embedder", lambda settings=None: numpy_runtime)
    apply_schema(empty_db, MODEL, DIM)
    assert empty_db.read_one("MATCH (m:GraphStrata {id: 'meta'}) RETURN m.embed_precision AS p") == {"p": "float32"}
    empty_db.write("MATCH (m:GraphStrata {id: 'meta'}) DETACH DELETE m")
    apply_schema(empty_db, MODEL, DIM, precision="int8")  # asked: recorded as asked
    assert empty_db.read_one("MATCH (m:GraphStrata {id: 'meta'}) RETURN m.embed_precision AS p") == {"p": "int8"}
