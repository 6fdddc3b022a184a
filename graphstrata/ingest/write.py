"""Writing prepared documents: one transaction per group of whole documents, shared aggregates
locked in id order and brought up to the records written and removed (:mod:`graphstrata.ingest.tally`),
a replaced document's contribution subtracted in the same transaction (see
:mod:`graphstrata.ingest.pipeline`)."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from neo4j import ManagedTransaction
from neo4j.exceptions import DriverError, Neo4jError

from graphstrata.cypher import query
from graphstrata.db import Database, TransactionTooLarge, tx_write_batches
from graphstrata.ingest.errors import ConcurrentChange, IngestWriteError, doc_name
from graphstrata.ingest.options import IngestOptions
from graphstrata.ingest.rows import Contribution, PreparedDoc
from graphstrata.ingest.tally import (
    Changes,
    Delta,
    Tally,
    dump,
    entity_properties,
    from_records,
    load,
    mention_facts,
    related_properties,
    relation_facts,
    term_facts,
    term_properties,
)
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
        changes = Changes()
        for p in todo:
            if p.old_sha is not None:
                self._remove_document(tx, p.doc.id, p.removes, changes)
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
            for m in p.mentions:
                changes.entities.add(m["entity"], mention_facts(m))
            for t in p.term_links:
                changes.terms.add(t["term"], term_facts(t))
            for r in p.relations:
                changes.related.add((r["a"], r["predicate"], r["b"]), relation_facts(r))
        self._refresh(tx, changes)
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

    def _refresh(self, tx: ManagedTransaction, changes: Changes) -> None:
        """Bring entity, term and RELATED aggregates up to this transaction's records (see
        :mod:`graphstrata.ingest.tally`)."""
        limit = self.options.max_descriptions
        self._aggregate(tx, "related", changes.related, relation_facts, lambda t: related_properties(t, limit))
        self._aggregate(tx, "entities", changes.entities, mention_facts, lambda t: entity_properties(t, limit))
        self._aggregate(tx, "terms", changes.terms, term_facts, term_properties)

    def _aggregate(
        self,
        tx: ManagedTransaction,
        kind: str,
        delta: Delta,
        facts: Callable[[dict], dict],
        derive: Callable[[Tally], dict[str, Any]],
    ) -> None:
        """The committed tally of each changed aggregate plus the records added, minus those removed.

        An aggregate without a tally is counted from its records (which then already hold this
        transaction's); one that does not exist (yet) gets what this transaction adds: a RELATED
        edge is gone only with an entity no chunk mentions any more, whose relations are all gone too.
        """
        keys = delta.keys()
        if not keys:
            return
        key_rows = [_key_row(kind, k) for k in keys]
        committed = {_key(kind, r): r["tally"] for r in tx.run(query(f"ingest.{kind}_tallies"), rows=key_rows)}
        untallied = [_key_row(kind, k) for k in keys if k in committed and committed[k] is None]
        records: dict[Any, list[dict]] = defaultdict(list)
        for r in tx.run(query(f"ingest.{kind}_records"), rows=untallied) if untallied else ():
            records[_key(kind, r)].append(dict(r))
        rows = []
        for k in keys:
            if k not in committed:
                tally = delta.applied(k, {}, removes=False)
            elif committed[k] is None:
                tally = from_records(records[k], facts)
            else:
                tally = delta.applied(k, load(committed[k]))
            rows.append({**_key_row(kind, k), **derive(tally), "tally": dump(tally)})
        self._run(tx, f"set_{kind}", rows)

    def _remove_document(self, tx: ManagedTransaction, doc_id: str, removes: Contribution, changes: Changes) -> None:
        """Delete a document's nodes and subtract its counts and records (into ``changes``)."""
        refs = tx.run(query("ingest.document_refs"), id=doc_id).single()
        mentions, terms, relations = (refs["mentions"], refs["terms"], refs["relations"]) if refs else ([], [], [])
        for m in mentions:
            changes.entities.add(m["id"], mention_facts(m), removed=True)
        for t in terms:
            changes.terms.add(t["id"], term_facts(t), removed=True)
        for r in relations:
            changes.related.add((r["a"], r["p"], r["b"]), relation_facts(r), removed=True)
        # this document's own (an earlier removal in the group may have deleted another's)
        self._lock_entities(tx, {m["id"] for m in mentions} | {e for r in relations for e in (r["a"], r["b"])})
        self._lock(tx, "terms", {t["id"] for t in terms})
        self._run(tx, "subtract_cooccurrence", removes.cooc_rows())
        self._run(tx, "subtract_keywords", removes.keyword_rows(), batch_size=200)
        if FAULT_HOOK is not None:
            FAULT_HOOK("delete_document_nodes")
        tx.run(query("ingest.delete_document_nodes"), id=doc_id).consume()

    def delete_tx(self, tx: ManagedTransaction, doc_id: str, sha: str, removes: Contribution) -> None:
        committed = {r["id"]: r["sha256"] for r in tx.run(query("ingest.lock_documents"), ids=[doc_id])}
        if committed.get(doc_id) != sha:
            raise ConcurrentChange(doc_id)
        changes = Changes()
        self._remove_document(tx, doc_id, removes, changes)
        self._refresh(tx, changes)


def _key_row(kind: str, key: Any) -> dict:
    """An aggregate's key as the parameters of its statements: (subject, predicate, object) for RELATED."""
    return {"a": key[0], "p": key[1], "b": key[2]} if kind == "related" else {"id": key}


def _key(kind: str, row: Any) -> Any:
    return (row["a"], row["p"], row["b"]) if kind == "related" else row["id"]
