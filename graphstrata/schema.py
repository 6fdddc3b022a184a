"""Apply `cypher/schema.cypher` idempotently and refuse a graph built with another embedding model."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

from graphstrata.cypher import load, query
from graphstrata.db import Database
from graphstrata.embed import Embedder

# 2: E2GraphRAG's spaCy terms (named entities and common nouns) moved from Entity to their own
#    Term layer (HAS_TERM, CO_OCCURS between terms); Entity holds the knowledge graph only.
SCHEMA_VERSION = 2
#: The vector index over each embedded label's ``embedding`` (cypher/schema.cypher).
VECTOR_INDEXES = {
    "Chunk": "chunk_embedding",
    "SubChunk": "sub_chunk_embedding",
    "Entity": "entity_embedding",
    "SemanticUnit": "semantic_unit_embedding",
    "Attribute": "attribute_embedding",
    "HighLevel": "high_level_embedding",
    "Keyword": "keyword_embedding",
    "Summary": "summary_embedding",
}


class SchemaError(RuntimeError):
    """The database holds a schema that does not fit the configured embedding model."""


def check_compatible(db: Database, embed_model: str, dim: int) -> None:
    """Raise SchemaError if existing vector indexes or the meta node disagree with (model, dim)."""
    wrong = [r for r in db.read(query("meta.vector_indexes")) if r["dim"] is not None and r["dim"] != dim]
    if wrong:
        names = ", ".join(f"{r['name']} ({r['dim']})" for r in wrong)
        raise SchemaError(
            f"The database has vector indexes of another size than the embedding model {embed_model!r} "
            f"({dim}): {names}. Use the model the graph was built with, or another database/instance."
        )
    meta = db.read_one(query("meta.get_meta"))
    if meta and (meta["schema_version"] or 1) < SCHEMA_VERSION and db.read_one(query("meta.old_entity_layer"))["old"]:
        raise SchemaError(
            f"This graph was built by an older graphstrata (schema {meta['schema_version'] or 1}, now "
            f"{SCHEMA_VERSION}): its Entity nodes still hold E2GraphRAG's spaCy nouns, which now live in their own "
            "Term layer. Rebuild it from your documents: `graphstrata reset --yes`, then `graphstrata ingest ...` "
            "and `graphstrata augment` (or use another database/instance)."
        )
    if meta and meta["embed_model"] and (meta["embed_model"], meta["embed_dim"]) != (embed_model, dim):
        raise SchemaError(
            f"This graph was embedded with {meta['embed_model']!r} ({meta['embed_dim']} dims); the configured "
            f"model is {embed_model!r} ({dim}). Mixing them would make vector search meaningless."
        )


def apply_schema(
    db: Database, embed_model: str, dim: int, wait_seconds: int = 300, precision: str | None = None
) -> int:
    """Create constraints and indexes (no-op when present); returns the number of statements run.
    An index it adds marks the graph as changed (meta ``updated_at``), so that connections holding
    its indexes (:func:`graph_indexes`) read them again. ``precision``: of the stored texts' vectors
    of a graph begun now (default: the configured embedder's ``default_precision``)."""
    check_compatible(db, embed_model, dim)
    before = _online_indexes(db)
    statements = load("schema")
    for stmt in statements.values():
        db.write(stmt, dim=dim)
    if precision is None:  # the configured embedder's: it knows when int8 is not to be had
        from graphstrata.embed import get_embedder

        precision = get_embedder().default_precision
    db.write(
        query("meta.init_meta"), embed_model=embed_model, dim=dim, schema_version=SCHEMA_VERSION, precision=precision
    )
    db.write(query("meta.set_schema_version"), schema_version=SCHEMA_VERSION)
    db.write(query("meta.await_indexes"), seconds=wait_seconds)
    if _online_indexes(db) - before:
        db.write(query("meta.touch"))
    return len(statements)


# --- the indexes a graph opened for questions has -------------------------------------------------


@dataclass(frozen=True)
class GraphIndexes:
    """The online indexes of a graph, and the graph's version (meta ``updated_at``) when read."""

    version: Any
    names: frozenset[str]


_INDEXES: weakref.WeakKeyDictionary[Database, GraphIndexes] = weakref.WeakKeyDictionary()
_INDEXES_LOCK = threading.Lock()
_UNKNOWN = object()


def _online_indexes(db: Database) -> frozenset[str]:
    return frozenset(r["name"] for r in db.read_plain(query("meta.online_indexes")))


def graph_indexes(db: Database, version: Any = _UNKNOWN) -> GraphIndexes:
    """The indexes of the graph behind `db`, checked once per connection and graph version: read the
    first time the connection asks (when the graph is opened for questions), then kept. Without
    `version` the kept ones are returned; with it (a version a query just read) they are read again
    if the graph has moved on since, e.g. to a build that added an index.

    Retrievers that need an index a graph built by an older graphstrata lacks ask here instead of
    catching the error of a query against it."""
    with _INDEXES_LOCK:
        have = _INDEXES.get(db)
        if have is not None and (version is _UNKNOWN or have.version == version):
            return have
        if version is _UNKNOWN:
            version = db.read_plain(query("meta.version"))[0]["version"]
        # the version first: a change while the indexes are read makes the next check read again
        have = _INDEXES[db] = GraphIndexes(version, _online_indexes(db))
        return have


def stored_precision(db: Database, default: str) -> str:
    """The precision of the graph's stored-text vectors: as it records (a graph from before
    precisions were recorded is float32), or ``default`` for a graph not begun."""
    meta = db.read_one(query("meta.get_meta"))
    if meta is None or meta["embed_model"] is None:
        return default
    return meta["embed_precision"] or "float32"


def document_embedder(db: Database, embedder: Embedder) -> Embedder:
    """The embedder of the graph's stored texts (:func:`stored_precision`)."""
    return embedder.documents(stored_precision(db, embedder.default_precision))
