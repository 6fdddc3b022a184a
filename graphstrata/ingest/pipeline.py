"""load → chunk → spaCy → embed → write: documents into the chunk, entity and keyword layers.

Writes are grouped in transactions of whole documents: a document lands completely or not at
all. Ids are content-derived, so a re-ingest of unchanged text is a no-op; a changed document is
replaced (its old contributions subtracted) in the same transaction that writes the new one.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from neo4j import ManagedTransaction
from pydantic import BaseModel, Field

from graphstrata.cypher import query
from graphstrata.db import Database, tx_write_batches
from graphstrata.embed import Embedder
from graphstrata.ingest.analyze import Analysis, analyse_texts
from graphstrata.ingest.chunk import Piece, semantic_chunks, split_subchunks, token_chunks
from graphstrata.ingest.load import DEFAULT_MAX_BYTES, LoadError, SourceDocument, load_paths
from graphstrata.schema import apply_schema

#: Fault-injection point for tests: called with each statement's name inside write transactions.
FAULT_HOOK: Callable[[str], None] | None = None


class IngestOptions(BaseModel):
    """Ingest parameters; the defaults are the papers'."""

    chunk_size: int = Field(1200, description="tokens per chunk (cl100k), E2GraphRAG/KET-RAG default")
    chunk_overlap: int = Field(100, description="tokens shared by consecutive chunks")
    chunking: Literal["tokens", "semantic"] = Field("tokens", description="`semantic`: semchunk (DA-RAG)")
    splits: int = Field(3, description="KET-RAG m: sub-chunks by halving a chunk m times")
    min_subchunk_tokens: int = Field(100, description="a piece is not halved into halves under this size")
    batch_documents: int = Field(256, description="documents prepared (chunked, parsed, embedded) at once")
    group_chunks: int = Field(256, description="chunks per write transaction (whole documents only)")
    max_document_bytes: int = DEFAULT_MAX_BYTES


class IngestReport(BaseModel):
    documents_new: int = 0
    documents_replaced: int = 0
    documents_unchanged: int = 0
    chunks: int = 0
    subchunks: int = 0
    entities_new: int = 0
    mentions: int = 0
    cooccurrence_pairs: int = 0
    keywords: int = 0
    sentences: int = 0
    rows_written: int = 0
    errors: list[str] = Field(default_factory=list)
    seconds: dict[str, float] = Field(default_factory=dict)

    @property
    def rows_per_second(self) -> float:
        return self.rows_written / max(self.seconds.get("write", 0.0), 1e-9)

    def add(self, other: IngestReport) -> None:
        for name, value in other:
            if isinstance(value, int):
                setattr(self, name, getattr(self, name) + value)
        self.errors += other.errors
        for k, v in other.seconds.items():
            self.seconds[k] = self.seconds.get(k, 0.0) + v


class ConcurrentChange(RuntimeError):
    """A document changed between planning and writing (another ingest); the batch is re-planned."""


def _hid(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:32]


def entity_id(normalized: str) -> str:
    return _hid("entity", normalized)


def keyword_id(term: str) -> str:
    return _hid("keyword", term)


@dataclass
class Contribution:
    """What a set of sub-chunks adds to the shared layers (co-occurrence weights, keyword sums)."""

    cooc: Counter = field(default_factory=Counter)  # (entity id a < b) -> sentences
    kw_n: Counter = field(default_factory=Counter)  # term -> sentences
    kw_sum: dict[str, np.ndarray] = field(default_factory=dict)  # term -> sum of sentence vectors

    def add_analysis(self, a: Analysis, sentence_vecs: np.ndarray) -> None:
        for (x, y), w in a.cooccurrence().items():
            ex, ey = entity_id(x), entity_id(y)
            self.cooc[(min(ex, ey), max(ex, ey))] += w
        for term, idx in a.keyword_sentences().items():
            self.kw_n[term] += len(idx)
            s = sentence_vecs[idx].sum(0)
            self.kw_sum[term] = self.kw_sum[term] + s if term in self.kw_sum else s

    def cooc_rows(self) -> list[dict]:
        return [{"a": a, "b": b, "w": w} for (a, b), w in self.cooc.items()]

    def keyword_rows(self) -> list[dict]:
        return [
            {"id": keyword_id(t), "term": t, "n": n, "sum": self.kw_sum[t].astype(float).tolist()}
            for t, n in self.kw_n.items()
        ]


@dataclass
class PreparedDoc:
    doc: SourceDocument
    old_sha: str | None  # committed hash seen while planning (None: new document)
    chunks: list[dict] = field(default_factory=list)
    subchunks: list[dict] = field(default_factory=list)
    mentions: list[dict] = field(default_factory=list)
    entities: dict[str, dict] = field(default_factory=dict)
    keyword_links: list[dict] = field(default_factory=list)
    adds: Contribution = field(default_factory=Contribution)
    removes: Contribution = field(default_factory=Contribution)
    sentences: int = 0


class Stages:
    """Seconds per stage and optional rich progress bars."""

    def __init__(self, show: bool) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.progress = None
        if show:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn("{task.description:>10}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                transient=False,
            )
            self.progress.start()
        self.tasks: dict[str, object] = {}

    @contextmanager
    def stage(self, name: str, total: int | None = None):
        advance: Callable[[int], None] = lambda n: None  # noqa: E731
        if self.progress is not None and total:
            if name not in self.tasks:
                self.tasks[name] = self.progress.add_task(name, total=total)
            else:
                self.progress.update(self.tasks[name], total=self.progress.tasks[self.tasks[name]].total + total)
            task = self.tasks[name]
            advance = lambda n: self.progress.advance(task, n)  # noqa: E731
        t = time.perf_counter()
        try:
            yield advance
        finally:
            self.seconds[name] += time.perf_counter() - t

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


class Ingestor:
    def __init__(
        self, db: Database, embedder: Embedder, options: IngestOptions | None = None, progress: bool = False
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.options = options or IngestOptions()
        self.show_progress = progress
        apply_schema(db, embedder.name, embedder.dim)

    # --- public ---------------------------------------------------------------------------
    def ingest(self, paths: Iterable[str | Path]) -> IngestReport:
        t = time.perf_counter()
        docs, errors = load_paths(paths, self.options.max_document_bytes)
        load_s = time.perf_counter() - t
        report = self.ingest_documents(docs)
        report.errors = [str(e) for e in errors] + report.errors
        report.seconds["load"] = load_s
        return report

    def ingest_documents(self, docs: Sequence[SourceDocument]) -> IngestReport:
        report = IngestReport()
        stages = Stages(self.show_progress)
        try:
            for start in range(0, len(docs), self.options.batch_documents):
                batch = docs[start : start + self.options.batch_documents]
                for attempt in range(5):
                    try:
                        report.add(self._ingest_batch(batch, stages))
                        break
                    except ConcurrentChange:
                        if attempt == 4:
                            raise
        finally:
            stages.close()
        report.seconds.update({k: round(v, 3) for k, v in stages.seconds.items()})
        return report

    def delete(self, ref: str) -> list[dict]:
        """Delete documents by id, source or title, and whatever only they supported."""
        found = self.db.read(query("ingest.find_documents"), ref=ref)
        for d in found:
            for _ in range(5):
                state = self.db.read_one(query("ingest.document_state"), ids=[d["id"]])
                if state is None:
                    break
                removes = self._old_contribution(d["id"])
                try:
                    self.db.write_tx(lambda tx, d=d, s=state, r=removes: self._delete_tx(tx, d["id"], s["sha256"], r))
                    break
                except ConcurrentChange:
                    continue
        if found:
            self.db.write(query("meta.touch"))
        return found

    # --- planning -------------------------------------------------------------------------
    def _pieces(self, doc: SourceDocument) -> list[Piece]:
        o = self.options
        if o.chunking == "semantic":
            return semantic_chunks(doc.text, o.chunk_size)
        return token_chunks(doc.text, o.chunk_size, o.chunk_overlap)

    def _old_contribution(self, doc_id: str) -> Contribution:
        """Re-derive what the stored version of a document added, to subtract it exactly."""
        rows = self.db.read(query("ingest.document_chunks"), id=doc_id)
        texts = [s["text"] for r in rows for s in r["subs"] if s["id"] is not None]
        analyses = analyse_texts(texts)
        sents = [s.text for a in analyses for s in a.sentences]
        vecs = self.embedder.embed(sents)
        contrib, i = Contribution(), 0
        for a in analyses:
            contrib.add_analysis(a, vecs[i : i + len(a.sentences)])
            i += len(a.sentences)
        return contrib

    def _ingest_batch(self, docs: Sequence[SourceDocument], st: Stages) -> IngestReport:
        o, report = self.options, IngestReport()
        state = {r["id"]: r["sha256"] for r in self.db.read(query("ingest.document_state"), ids=[d.id for d in docs])}
        todo: list[PreparedDoc] = []
        for d in docs:
            if state.get(d.id) == d.sha256:
                report.documents_unchanged += 1
            else:
                todo.append(PreparedDoc(d, state.get(d.id)))
        if not todo:
            return report
        for p in todo:
            if p.old_sha is not None:
                p.removes = self._old_contribution(p.doc.id)

        # chunk
        subtexts: list[str] = []
        with st.stage("chunk", len(todo)) as advance:
            for p in todo:
                pieces = self._pieces(p.doc)
                for ordinal, piece in enumerate(pieces):
                    cid = _hid("chunk", p.doc.id, ordinal, piece.text)
                    p.chunks.append(
                        {
                            "id": cid,
                            "doc": p.doc.id,
                            "text": piece.text,
                            "tokens": piece.tokens,
                            "ordinal": ordinal,
                            "doc_title": p.doc.title,
                        }
                    )
                    subs = split_subchunks(piece.text, o.splits, o.min_subchunk_tokens)
                    for j, s in enumerate(subs):
                        p.subchunks.append(
                            {
                                "id": _hid("sub", cid, j),
                                "chunk": cid,
                                "text": s.text,
                                "tokens": s.tokens,
                                "ordinal": j,
                                "whole": len(subs) == 1,
                            }
                        )
                        subtexts.append(s.text)
                advance(1)
        # spaCy
        with st.stage("spacy", len(subtexts)) as advance:
            analyses = analyse_texts(subtexts, advance)
        # entities new to the graph get a name embedding
        all_keys: dict[str, tuple[str, str]] = {}
        for a in analyses:
            for k, v in a.names.items():
                all_keys.setdefault(k, v)
        known = {r["id"] for r in self.db.read(query("ingest.existing_entities"), ids=[entity_id(k) for k in all_keys])}
        new_keys = [k for k in all_keys if entity_id(k) not in known]
        # embed: chunks (with their document title), split sub-chunks, sentences, new entity names
        chunk_in = [f"{c['doc_title']}\n{c['text']}" for p in todo for c in p.chunks]
        split_subs = [s for p in todo for s in p.subchunks if not s["whole"]]
        sub_in = [f"{s['text']}" for s in split_subs]
        sent_in = [s.text for a in analyses for s in a.sentences]
        name_in = [all_keys[k][0] for k in new_keys]
        inputs = chunk_in + sub_in + sent_in + name_in
        uniq, inverse = np.unique(np.array(inputs, dtype=object), return_inverse=True) if inputs else ([], [])
        with st.stage("embed", len(uniq)) as advance:
            vecs_u = self.embedder.embed(list(uniq), advance)
        vecs = vecs_u[inverse] if len(inputs) else np.zeros((0, self.embedder.dim), np.float32)
        chunk_v, sub_v, sent_v, name_v = np.split(vecs, np.cumsum([len(chunk_in), len(sub_in), len(sent_in)]))
        name_vec = dict(zip(new_keys, name_v, strict=True))

        # assemble rows
        with st.stage("keywords", len(todo)) as advance:
            ci = si = 0
            a_i = sent_i = 0
            for p in todo:
                chunk_vec = {}
                for c in p.chunks:
                    c["embedding"] = chunk_v[ci].tolist()
                    chunk_vec[c["id"]] = c["embedding"]
                    ci += 1
                mention_counts: dict[str, Counter] = defaultdict(Counter)
                for s in p.subchunks:
                    if s["whole"]:
                        s["embedding"] = chunk_vec[s["chunk"]]
                    else:
                        s["embedding"] = sub_v[si].tolist()
                        si += 1
                    a = analyses[a_i]
                    a_i += 1
                    sv = sent_v[sent_i : sent_i + len(a.sentences)]
                    sent_i += len(a.sentences)
                    p.sentences += len(a.sentences)
                    p.adds.add_analysis(a, sv)
                    mention_counts[s["chunk"]].update(a.mentions)
                    for key, (name, typ) in a.names.items():
                        eid = entity_id(key)
                        if eid not in p.entities:
                            emb = name_vec.get(key)
                            p.entities[eid] = {
                                "id": eid,
                                "name": name,
                                "normalized": key,
                                "type": typ,
                                "source": "spacy",
                                "embedding": None if emb is None else emb.tolist(),
                            }
                    for term, idx in a.keyword_sentences().items():
                        p.keyword_links.append({"keyword": keyword_id(term), "sub": s["id"], "count": len(idx)})
                for cid, counts in mention_counts.items():
                    p.mentions += [{"chunk": cid, "entity": entity_id(k), "count": n} for k, n in counts.items()]
                advance(1)

        # write, in groups of whole documents
        groups: list[list[PreparedDoc]] = [[]]
        for p in todo:
            if groups[-1] and sum(len(q.chunks) for q in groups[-1]) + len(p.chunks) > o.group_chunks:
                groups.append([])
            groups[-1].append(p)
        keywords: set[str] = set()
        new_entities: set[str] = set()
        with st.stage("write", len(todo)) as advance:
            for g in groups:
                written = self.db.write_tx(lambda tx, g=g: self._write_group(tx, g))
                for p in g:
                    if p.doc.id in written:
                        report.documents_new += p.old_sha is None
                        report.documents_replaced += p.old_sha is not None
                        report.chunks += len(p.chunks)
                        report.subchunks += len(p.subchunks)
                        report.mentions += len(p.mentions)
                        report.sentences += p.sentences
                        report.cooccurrence_pairs += len(p.adds.cooc)
                        keywords.update(p.adds.kw_n)
                        new_entities.update(e for e, v in p.entities.items() if v["embedding"] is not None)
                        report.rows_written += _row_count(p)
                    else:
                        report.documents_unchanged += 1
                advance(len(g))
            self.db.write(query("meta.touch"))
        report.keywords, report.entities_new = len(keywords), len(new_entities)
        return report

    # --- transactions ---------------------------------------------------------------------
    @staticmethod
    def _run(tx: ManagedTransaction, name: str, rows: list[dict], **params) -> None:
        if FAULT_HOOK is not None:
            FAULT_HOOK(name)
        if rows:
            tx_write_batches(tx, query(f"ingest.{name}"), rows, **params)

    def _write_group(self, tx: ManagedTransaction, group: list[PreparedDoc]) -> set[str]:
        committed = {
            r["id"]: r["sha256"] for r in tx.run(query("ingest.lock_documents"), ids=[p.doc.id for p in group])
        }
        todo = []
        for p in group:
            now = committed.get(p.doc.id)
            if now == p.doc.sha256:
                continue  # another ingest wrote this very version meanwhile
            if now != p.old_sha:
                raise ConcurrentChange(p.doc.source)
            todo.append(p)
        for p in todo:
            if p.old_sha is not None:
                self._remove_document(tx, p.doc.id, p.removes)
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
        self._run(tx, "write_mentions", [m for p in todo for m in p.mentions])
        self._run(tx, "add_cooccurrence", adds.cooc_rows())
        self._run(tx, "add_keywords", adds.keyword_rows(), batch_size=200)
        self._run(tx, "link_keywords", [k for p in todo for k in p.keyword_links])
        self._run(tx, "set_documents", doc_rows)
        return {p.doc.id for p in todo}

    def _remove_document(self, tx: ManagedTransaction, doc_id: str, removes: Contribution) -> None:
        self._run(tx, "subtract_cooccurrence", removes.cooc_rows())
        self._run(tx, "subtract_keywords", removes.keyword_rows(), batch_size=200)
        if FAULT_HOOK is not None:
            FAULT_HOOK("delete_document_nodes")
        tx.run(query("ingest.delete_document_nodes"), id=doc_id).consume()

    def _delete_tx(self, tx: ManagedTransaction, doc_id: str, sha: str, removes: Contribution) -> None:
        committed = {r["id"]: r["sha256"] for r in tx.run(query("ingest.lock_documents"), ids=[doc_id])}
        if committed.get(doc_id) != sha:
            raise ConcurrentChange(doc_id)
        self._remove_document(tx, doc_id, removes)


def _row_count(p: PreparedDoc) -> int:
    return (
        1
        + len(p.chunks) * 2
        + len(p.subchunks)
        + len(p.entities)
        + len(p.mentions)
        + len(p.adds.cooc)
        + len(p.adds.kw_n)
        + len(p.keyword_links)
    )


__all__ = ["IngestOptions", "IngestReport", "Ingestor", "LoadError"]
