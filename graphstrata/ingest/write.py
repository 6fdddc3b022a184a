"""Writing prepared documents: one transaction per group of whole documents, shared aggregates
locked in id order and recomputed from the per-chunk records, a replaced document's contribution
subtracted in the same transaction (see :mod:`graphstrata.ingest.pipeline`)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from neo4j import ManagedTransaction
from neo4j.exceptions import DriverError, Neo4jError

from graphstrata.cypher import query
from graphstrata.db import Database, TransactionTooLarge, tx_write_batches
from graphstrata.ingest.errors import ConcurrentChange, IngestWriteError, doc_name
from graphstrata.ingest.options import IngestOptions
from graphstrata.ingest.rows import Contribution, PreparedDoc, Touched
from graphstrata.text.names import keyword_id

log = logging.getLogger(__name__)

#: Fault-injection point for tests: called with each statement's name inside write transactions.
FAULT_HOOK: Callable[[str], None] | None = None


class GraphWriter:
    """Writes and deletes whole documents in the graph."""

    def __init__(self, db: Database, options: IngestOptions) -> None:
        self.db = db
        self.options = options

    def commit_group(self, group: list[PreparedDoc]) -> set[str]:
        """Write a group of whole documents in one transaction; the ids written.

        A group over Neo4j's per-transaction memory limit is written one document at a time (each
        still in one transaction), so only a document that alone exceeds it fails; a failure is an
        :class:`IngestWriteError` naming the documents of the rolled-back transaction.
        """
        try:
            return self.db.write_tx(lambda tx: self.write_group(tx, group))
        except TransactionTooLarge as e:
            if len(group) == 1:
                raise IngestWriteError("write", [doc_name(group[0].doc)], e) from e
            written: set[str] = set()
            for p in group:
                try:
                    written |= self.commit_group([p])
                except IngestWriteError as failure:
                    failure.committed |= written  # those landed, whole, before this one failed
                    raise
            return written
        except (Neo4jError, DriverError) as e:
            raise IngestWriteError("write", [doc_name(p.doc) for p in group], e) from e

    def refresh_keywords(self, terms: set[str]) -> None:
        """Bring the indexed vectors of the keywords an ingest added to up to their sums (see
        ingest.add_keywords: once per ingest, not per batch), after a failed ingest too, for what it
        committed. A failure here is logged, never raised over the ingest's own outcome: the next
        ingest that adds to a keyword refreshes it."""
        rows = [{"id": i} for i in sorted(keyword_id(t) for t in terms)]
        try:
            self.db.write_batches(query("ingest.refresh_keywords"), rows, batch_size=2000)
        except (Neo4jError, DriverError) as e:
            log.warning("keyword vectors not refreshed after the ingest: %s", e)

    @staticmethod
    def _run(tx: ManagedTransaction, name: str, rows: list[dict], **params) -> None:
        if FAULT_HOOK is not None:
            FAULT_HOOK(name)
        if rows:
            tx_write_batches(tx, query(f"ingest.{name}"), rows, **params)

    def write_group(self, tx: ManagedTransaction, group: list[PreparedDoc]) -> set[str]:
        committed = {r["id"]: r for r in tx.run(query("ingest.lock_documents"), ids=[p.doc.id for p in group])}
        todo = []
        for p in group:
            now = committed[p.doc.id]
            if now["sha256"] == p.doc.sha256 and not now["failed"] and not p.force:
                continue  # another ingest wrote this very version meanwhile
            if now["sha256"] != p.old_sha:
                raise ConcurrentChange(p.doc.source)
            todo.append(p)
        touched = Touched()
        for p in todo:
            if p.old_sha is not None:
                touched.update(self._remove_document(tx, p.doc.id, p.removes))
                tx.run(query("ingest.lock_documents"), ids=[p.doc.id]).consume()
        adds = Contribution()
        for p in todo:
            adds.cooc.update(p.adds.cooc)
            adds.kw_n.update(p.adds.kw_n)
            for t, v in p.adds.kw_sum.items():
                adds.kw_sum[t] = adds.kw_sum[t] + v if t in adds.kw_sum else v
        o = self.options
        doc_rows = [
            {
                "id": p.doc.id,
                "title": p.doc.title,
                "source": p.doc.source,
                "sha256": p.doc.sha256,
                "chars": len(p.doc.text),
                "chunk_size": o.chunk_size,
                "chunk_overlap": o.chunk_overlap,
                "chunking": o.chunking,
                "splits": o.splits,
            }
            for p in todo
        ]
        self._run(tx, "write_chunks", [c for p in todo for c in p.chunks])
        next_rows = [{"a": a["id"], "b": b["id"]} for p in todo for a, b in zip(p.chunks, p.chunks[1:], strict=False)]
        self._run(tx, "link_next", next_rows)
        self._run(tx, "write_subchunks", [s for p in todo for s in p.subchunks])
        entities: dict[str, dict] = {}
        for p in todo:
            for eid, e in p.entities.items():
                if eid not in entities or entities[eid]["embedding"] is None:
                    entities[eid] = e
        self._run(tx, "merge_entities", list(entities.values()))
        mentioned = {m["entity"] for p in todo for m in p.mentions}
        self._lock_entities(tx, mentioned | {e for p in todo for r in p.relations for e in (r["a"], r["b"])})
        self._run(tx, "write_mentions", [m for p in todo for m in p.mentions])
        term_rows: dict[str, dict] = {}
        for p in todo:
            term_rows.update(p.terms)
        self._run(tx, "merge_terms", list(term_rows.values()))
        self._lock(tx, "terms", set(term_rows))
        self._run(tx, "write_term_links", [t for p in todo for t in p.term_links])
        self._run(tx, "add_cooccurrence", adds.cooc_rows())
        keyword_rows = adds.keyword_rows()
        self._run(tx, "add_keywords", keyword_rows, batch_size=200)
        self._check_present(tx, "missing_keywords", [r["id"] for r in keyword_rows])
        self._run(tx, "link_keywords", [k for p in todo for k in p.keyword_links])
        self._run(tx, "write_units", [u for p in todo for u in p.units])
        self._run(tx, "link_unit_entities", [u for p in todo for u in p.unit_links])
        self._run(tx, "write_relations", [r for p in todo for r in p.relations])
        for p in todo:
            touched.entities.update(m["entity"] for m in p.mentions)
            touched.terms.update(t["term"] for t in p.term_links)
            touched.related.update((r["a"], r["predicate"], r["b"]) for r in p.relations)
        self._refresh(tx, touched)
        self._run(tx, "set_documents", doc_rows)
        return {p.doc.id for p in todo}

    def _lock_entities(self, tx: ManagedTransaction, ids: set[str]) -> None:
        """Lock entities before reading what other documents left on them (see ingest.lock_entities)."""
        self._lock(tx, "entities", ids)

    def _lock(self, tx: ManagedTransaction, what: str, ids: set[str]) -> None:
        """Lock ``entities`` or ``terms`` (ids) in id order, and re-plan if one was deleted meanwhile."""
        if ids:
            tx.run(query(f"ingest.lock_{what}"), ids=sorted(ids)).consume()
            self._check_present(tx, f"missing_{what}", sorted(ids))

    @staticmethod
    def _check_present(tx: ManagedTransaction, name: str, ids: list[str]) -> None:
        """A node this transaction writes to was deleted by a concurrent one: plan the batch again."""
        if ids and (gone := [r["id"] for r in tx.run(query(f"ingest.{name}"), ids=ids)]):
            raise ConcurrentChange(f"{len(gone)} node(s) deleted by a concurrent transaction, e.g. {gone[0]}")

    def _refresh(self, tx: ManagedTransaction, touched: Touched) -> None:
        """Recompute entity and RELATED aggregates from what the graph now holds (see module doc)."""
        limit = self.options.max_descriptions
        related = [{"a": a, "p": pred, "b": b} for a, pred, b in sorted(touched.related)]
        self._run(tx, "refresh_related", related, max_descriptions=limit)
        self._run(tx, "refresh_entities", [{"id": e} for e in sorted(touched.entities)], max_descriptions=limit)
        self._run(tx, "refresh_terms", [{"id": t} for t in sorted(touched.terms)])

    def _remove_document(self, tx: ManagedTransaction, doc_id: str, removes: Contribution) -> Touched:
        """Delete a document's nodes and subtract its counts; returns the aggregates to refresh."""
        refs = tx.run(query("ingest.document_refs"), id=doc_id).single()
        touched = Touched()
        if refs is not None:
            touched.entities.update(refs["entities"])
            touched.related.update(tuple(r) for r in refs["related"])
        self._lock_entities(tx, touched.entities | {e for a, _, b in touched.related for e in (a, b)})
        if refs is not None:
            touched.terms.update(refs["terms"])
        self._lock(tx, "terms", touched.terms)
        self._run(tx, "subtract_cooccurrence", removes.cooc_rows())
        self._run(tx, "subtract_keywords", removes.keyword_rows(), batch_size=200)
        if FAULT_HOOK is not None:
            FAULT_HOOK("delete_document_nodes")
        tx.run(query("ingest.delete_document_nodes"), id=doc_id).consume()
        return touched

    def delete_tx(self, tx: ManagedTransaction, doc_id: str, sha: str, removes: Contribution) -> None:
        committed = {r["id"]: r["sha256"] for r in tx.run(query("ingest.lock_documents"), ids=[doc_id])}
        if committed.get(doc_id) != sha:
            raise ConcurrentChange(doc_id)
        self._refresh(tx, self._remove_document(tx, doc_id, removes))
