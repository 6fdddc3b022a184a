"""load → chunk → spaCy → extract → embed → write: documents into the chunk, entity, keyword and
knowledge-extraction layers (design: "The graph").

Writes are grouped in transactions of whole documents: a document lands completely or not at
all. Ids are content-derived, so a re-ingest of unchanged text is a no-op; a changed document is
replaced (its old contributions subtracted) in the same transaction that writes the new one.

Extraction (one :class:`ChunkExtraction` per chunk, from the LLM, spaCy or the user) adds, per
chunk: a title and description (DA-RAG §4.1 chunk layer), entities merged by normalised name into
the same ``Entity`` nodes the spaCy pass makes, relations as both ``RELATED`` edges and nodalized
``Relation`` nodes (NodeRAG R), and ``SemanticUnit`` nodes (NodeRAG S). What several chunks share
(an entity's type and descriptions, a ``RELATED`` edge's weight and descriptions) is recomputed
from the per-chunk records in the graph after every write or removal that touches it, so any
history of ingests, replacements and deletions ends in the graph a fresh ingest would build.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from neo4j import ManagedTransaction
from neo4j.exceptions import (
    ClientError,
    DriverError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)
from pydantic import BaseModel, Field, model_validator

from graphstrata.config import get_settings
from graphstrata.cypher import query
from graphstrata.db import Database, TransactionTooLarge, tx_write_batches
from graphstrata.embed import Embedder
from graphstrata.ingest.chunk import Piece, semantic_chunks, split_subchunks, token_chunks
from graphstrata.ingest.convert import chunk_provenance
from graphstrata.ingest.extract import (
    ChunkExtraction,
    ExtractionSchema,
    UserDocument,
    attach_user_extractions,
    extract_many_with_spacy,
    extract_with_llm,
    occurrences,
)
from graphstrata.ingest.identity import Candidate, resolve_identities
from graphstrata.ingest.load import LoadError, SourceDocument, load_paths
from graphstrata.llm import ExtractionFailed, LLMClient, LLMNotConfigured
from graphstrata.schema import apply_schema
from graphstrata.text.names import entity_id, hid, keyword_id, normalize_name, predicate_key, term_id
from graphstrata.text.nlp import Analysis, analyse_texts

#: Fault-injection point for tests: called with each statement's name inside write transactions.
FAULT_HOOK: Callable[[str], None] | None = None


class IngestOptions(BaseModel):
    """Ingest parameters; the defaults are the papers'."""

    chunk_size: int = Field(1200, ge=1, le=100_000, description="tokens per chunk (cl100k), E2GraphRAG/KET-RAG default")
    chunk_overlap: int = Field(100, ge=0, description="tokens shared by consecutive chunks (less than chunk_size)")
    chunking: Literal["tokens", "semantic"] = Field("tokens", description="`semantic`: semchunk (DA-RAG)")
    splits: int = Field(3, ge=0, le=6, description="KET-RAG m: sub-chunks by halving a chunk m times")
    min_subchunk_tokens: int = Field(
        100, ge=10, le=100_000, description="a piece is not halved into halves under this size"
    )
    batch_documents: int = Field(
        256, ge=1, le=100_000, description="documents prepared (chunked, parsed, embedded) at once"
    )
    group_chunks: int = Field(256, ge=1, le=100_000, description="chunks per write transaction (whole documents only)")
    max_document_bytes: int = Field(
        default_factory=lambda: get_settings().max_document_bytes,
        ge=1,
        description="largest document in UTF-8 bytes (default GRAPHSTRATA_MAX_DOCUMENT_BYTES)",
    )
    extractor: Literal["auto", "llm", "spacy", "none"] = Field(
        "auto",
        description="knowledge extraction per chunk: `auto` is the LLM when one is configured, else spaCy "
        "(the no-LLM extractor); `none` writes no extraction layer",
    )
    extract_core_only: bool = Field(
        False, description="KET-RAG: extract only the core chunks (passed as `core_chunk_ids`), the rest is skipped"
    )
    max_descriptions: int = Field(
        20,
        ge=1,
        le=10_000,
        description="distinct descriptions kept on an entity or RELATED edge (the most asserted first)",
    )
    extraction_schema: ExtractionSchema | None = Field(
        None, description="entity/relation types and prompt of LLM extraction (None: the built-in ones)"
    )
    allow_schema_change: bool = Field(
        False, description="LLM-extract with another schema than the one recorded on the graph (mixing them)"
    )

    @model_validator(mode="after")
    def _overlap_below_size(self) -> IngestOptions:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be less than chunk_size ({self.chunk_size})")
        return self


class IngestReport(BaseModel):
    documents_new: int = 0
    documents_replaced: int = 0
    documents_unchanged: int = 0
    chunks: int = 0
    subchunks: int = 0
    entities_new: int = 0
    mentions: int = 0
    term_mentions: int = 0
    cooccurrence_pairs: int = 0
    keywords: int = 0
    sentences: int = 0
    extracted_chunks: int = 0
    relations: int = 0
    semantic_units: int = 0
    rows_written: int = 0
    errors: list[str] = Field(default_factory=list)
    #: Invalid triples, entities or lines of an extractions file left out by ``--skip-invalid``.
    skipped_invalid: list[str] = Field(default_factory=list)
    #: Input records merged, replaced by a later one, or given a derived identity (ingest/identity.py).
    identity_notes: list[str] = Field(default_factory=list)
    #: Documents whose stored version this ingest replaced (their text changed since the last ingest).
    replaced: list[str] = Field(default_factory=list)
    #: Chunks whose extraction failed: ``{doc, title, chunk (ordinal), error}``. Their documents are
    #: written without that chunk's extraction and retried by the next ingest.
    failed_chunks: list[dict] = Field(default_factory=list)
    #: LLM cost of this ingest per stage: calls, prompt/completion tokens, cache hits, retries, failures.
    llm: dict[str, dict[str, int]] = Field(default_factory=dict)
    seconds: dict[str, float] = Field(default_factory=dict)
    #: The KET-RAG profile's choice of core chunks and the extraction cost it saved.
    ketrag: dict[str, float] = Field(default_factory=dict)

    @property
    def rows_per_second(self) -> float:
        return self.rows_written / max(self.seconds.get("write", 0.0), 1e-9)

    def add(self, other: IngestReport) -> None:
        for name, value in other:
            if isinstance(value, int):
                setattr(self, name, getattr(self, name) + value)
        self.errors += other.errors
        self.skipped_invalid += other.skipped_invalid
        self.identity_notes += other.identity_notes
        self.replaced += other.replaced
        self.failed_chunks += other.failed_chunks
        self.ketrag = other.ketrag or self.ketrag
        for stage, counts in other.llm.items():
            mine = self.llm.setdefault(stage, {})
            for k, v in counts.items():
                mine[k] = mine.get(k, 0) + v
        for k, v in other.seconds.items():
            self.seconds[k] = self.seconds.get(k, 0.0) + v


class ConcurrentChange(RuntimeError):
    """A document changed between planning and writing (another ingest); the batch is re-planned."""


class IngestWriteError(RuntimeError):
    """The transaction that writes (or deletes) some documents failed.

    Either Neo4j refused it before committing (:attr:`rolled_back`: the per-transaction memory limit,
    a constraint, a timeout …) and nothing of ``documents`` was written; or the outcome is unknown
    until Neo4j is back (the connection was lost, or Neo4j failed inside its commit, as on a full
    disk) and then each document is whole in the graph or absent, never in part: running the same
    ingest again completes it. ``report`` holds what this ingest committed before (whole documents).
    """

    def __init__(self, action: str, documents: list[str], cause: BaseException) -> None:
        super().__init__(action, documents, cause)
        self.action = action  # "write", "delete", or "read" (a read before the writes failed)
        self.documents = documents
        self.cause = cause
        self.report: IngestReport | None = None
        #: ids of documents of the same write group committed before it (a group split into single documents)
        self.committed: set[str] = set()

    @property
    def unavailable(self) -> bool:
        """The connection was lost (the server died or went away) rather than the write refused."""
        return isinstance(self.cause, ServiceUnavailable | SessionExpired)

    @property
    def rolled_back(self) -> bool:
        """Neo4j refused the transaction before its commit, so nothing of it was written. (A DatabaseError
        may come from inside the commit, after the transaction reached the log: then it is not known.)"""
        return self.action == "read" or isinstance(self.cause, TransactionTooLarge | ClientError | TransientError)

    def __str__(self) -> str:
        shown = ", ".join(repr(d) for d in self.documents[:5])
        names = shown + (f" and {len(self.documents) - 5} more" if len(self.documents) > 5 else "")
        noun = "document" if len(self.documents) == 1 else "documents"
        it = "it" if len(self.documents) == 1 else "each"
        what = {"delete": "could not delete", "read": "failed before writing"}.get(self.action, "could not write")
        text = f"Neo4j {what} {noun} {names}: {_neo4j_reason(self.cause)}."
        if self.action == "read":
            text += f" Nothing of {'it' if len(self.documents) == 1 else 'them'} was written."
        elif self.rolled_back:
            text += " The transaction was rolled back: " + (
                "nothing was changed." if self.action == "delete" else "nothing of it was written."
            )
        else:
            why = "the connection was lost" if self.unavailable else "Neo4j failed inside the commit"
            state = "deleted or still whole" if self.action == "delete" else "whole in the graph or absent"
            text += (
                f" Neo4j did not confirm the transaction ({why}): once Neo4j is back, {it} is {state}, "
                "never in part; running the same command again completes it."
            )
        if self.report is not None and (done := self.report.documents_new + self.report.documents_replaced):
            text += f" {done} document(s) of this ingest were committed before, whole; a re-run skips them."
        if isinstance(self.cause, TransactionTooLarge):
            text += (
                " The document is too large for one transaction under Neo4j's db.memory.transaction.max: raise "
                "it (local server: `graphstrata neo4j start --conf db.memory.transaction.max=…`, or "
                "GRAPHSTRATA_NEO4J_CONF) or split the document."
            )
        elif _needs_restart(self.cause):
            text += (
                " Neo4j stopped after failing to write its transaction log or store, which usually means the disk "
                "holding its data is full (its debug.log says); it refuses every transaction until it is "
                "restarted: free disk space, restart it (`graphstrata neo4j stop` and `start` for the local "
                "server), then run the same command again."
            )
        return text


def _neo4j_reason(error: BaseException) -> str:
    if isinstance(error, Neo4jError):
        return f"{error.code}: {error.message}" if error.code else str(error.message or error)
    return f"{type(error).__name__}: {error}"


def _needs_restart(error: BaseException) -> bool:
    """Neo4j's answer to a full disk: appending the commit to the transaction log (TransactionLogError) or
    applying it to the store (TransactionCommitFailed) fails and the database stops ("panics"), so every
    later transaction fails to start; the OS error ("No space left on device") is only in Neo4j's log."""
    code = getattr(error, "code", None) or ""
    text = str(error).lower()
    return code.endswith(("TransactionLogError", "TransactionCommitFailed")) or "needs to be restarted" in text


@contextmanager
def _before_writes(docs: Sequence[SourceDocument]) -> Iterator[None]:
    """A read that plans a batch failed: nothing of the batch was written, say which documents."""
    try:
        yield
    except (Neo4jError, DriverError) as e:
        raise IngestWriteError("read", [_doc_name(d) for d in docs], e) from e


def _doc_name(doc: SourceDocument) -> str:
    return doc.source if doc.title == doc.source else f"{doc.title} ({doc.source})"


@dataclass(frozen=True, eq=False)
class UserExtractedDocument(SourceDocument):
    """A document of a bring-your-own extractions file: its text plus the user's entities and triples.

    The content hash covers the extractions too, so a changed triple re-ingests the document.
    """

    extraction: UserDocument | None = None

    @property
    def sha256(self) -> str:
        data = self.extraction.model_dump(mode="json", include={"entities", "relations"}) if self.extraction else {}
        blob = json.dumps(data, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(f"{self.title}\n{self.text}\n{blob}".encode()).hexdigest()

    @classmethod
    def from_user(cls, doc: UserDocument) -> UserExtractedDocument:
        """Identity: the line's ``id``, else its ``source``, else its title (a repeated title with another
        text then gets a derived identity: :func:`graphstrata.ingest.identity.resolve_identities`)."""
        return cls(source=doc.id or doc.source or doc.title, title=doc.title, text=doc.text, extraction=doc)


@dataclass
class Contribution:
    """What a set of sub-chunks adds to the shared layers (co-occurrence weights, keyword sums)."""

    cooc: Counter = field(default_factory=Counter)  # (term id a < b) -> sentences
    kw_n: Counter = field(default_factory=Counter)  # term -> sentences
    kw_sum: dict[str, np.ndarray] = field(default_factory=dict)  # term -> sum of sentence vectors

    def add_analysis(self, a: Analysis, sentence_vecs: np.ndarray) -> None:
        for (x, y), w in a.cooccurrence().items():
            ex, ey = term_id(x), term_id(y)
            self.cooc[(min(ex, ey), max(ex, ey))] += w
        for term, idx in a.keyword_sentences().items():
            self.kw_n[term] += len(idx)
            s = sentence_vecs[idx].sum(0)
            self.kw_sum[term] = self.kw_sum[term] + s if term in self.kw_sum else s

    # Rows sorted by id: concurrent ingests then lock shared edges and keywords in one order.
    def cooc_rows(self) -> list[dict]:
        return [{"a": a, "b": b, "w": w} for (a, b), w in sorted(self.cooc.items())]

    def keyword_rows(self) -> list[dict]:
        rows = [
            {"id": keyword_id(t), "term": t, "n": n, "sum": self.kw_sum[t].astype(float).tolist()}
            for t, n in self.kw_n.items()
        ]
        return sorted(rows, key=lambda r: r["id"])


@dataclass
class PreparedDoc:
    doc: SourceDocument
    old_sha: str | None  # committed hash seen while planning (None: new document)
    force: bool = False  # rewrite even when the committed version has the same hash
    chunks: list[dict] = field(default_factory=list)
    subchunks: list[dict] = field(default_factory=list)
    mentions: list[dict] = field(default_factory=list)  # Chunk -MENTIONS-> Entity (the knowledge graph)
    entities: dict[str, dict] = field(default_factory=dict)
    term_links: list[dict] = field(default_factory=list)  # Chunk -HAS_TERM-> Term (E2GraphRAG's layer)
    terms: dict[str, dict] = field(default_factory=dict)
    keyword_links: list[dict] = field(default_factory=list)
    adds: Contribution = field(default_factory=Contribution)
    removes: Contribution = field(default_factory=Contribution)
    sentences: int = 0
    extractions: dict[str, ChunkExtraction] = field(default_factory=dict)  # chunk id -> its extraction
    failed: list[dict] = field(default_factory=list)  # report rows of chunks whose extraction failed
    units: list[dict] = field(default_factory=list)
    unit_links: list[dict] = field(default_factory=list)
    relations: list[dict] = field(default_factory=list)


@dataclass
class Touched:
    """Shared aggregates a transaction changed, to recompute from the per-chunk records at its end."""

    entities: set[str] = field(default_factory=set)
    related: set[tuple[str, str, str]] = field(default_factory=set)  # (subject id, predicate, object id)
    terms: set[str] = field(default_factory=set)

    def update(self, other: Touched) -> None:
        self.entities |= other.entities
        self.related |= other.related
        self.terms |= other.terms


class Stages:
    """Seconds per stage and optional rich progress bars."""

    def __init__(self, show: bool, on_progress: Callable[[str, int, int], None] | None = None) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        #: optional ``on_progress(stage, done, total)`` (e.g. the HTTP server's job progress)
        self.on_progress = on_progress
        self.counts: dict[str, list[int]] = {}  # stage -> [done, total]
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
        if self.on_progress is not None and total:
            counts = self.counts.setdefault(name, [0, 0])
            counts[1] += total
            self.on_progress(name, counts[0], counts[1])
            bar = advance

            def advance(n: int, name: str = name, counts: list[int] = counts, bar: Callable[[int], None] = bar) -> None:
                bar(n)
                counts[0] += n
                self.on_progress(name, counts[0], counts[1])

        t = time.perf_counter()
        try:
            yield advance
        finally:
            self.seconds[name] += time.perf_counter() - t

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


class Ingestor:
    """Ingests documents into one graph. ``llm``: the client for ``extractor="llm"`` (and ``"auto"``)."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        options: IngestOptions | None = None,
        progress: bool = False,
        llm: LLMClient | None = None,
        on_progress: Callable[[str, int, int], None] | None = None,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.options = options or IngestOptions()
        self.show_progress = progress
        self.on_progress = on_progress  # optional on_progress(stage, done, total), called as work advances
        self.llm = llm
        apply_schema(db, embedder.name, embedder.dim)

    @property
    def extractor(self) -> str:
        """The extractor in effect for ordinary documents: llm, spacy or none."""
        x = self.options.extractor
        if x == "auto":
            return "llm" if self.llm is not None else "spacy"
        if x == "llm" and self.llm is None:
            raise LLMNotConfigured(
                "extractor 'llm' needs an LLM endpoint (OPENAI_BASE_URL/OPENAI_API_KEY and GRAPHSTRATA_CHAT_MODEL)"
            )
        return x

    # --- public ---------------------------------------------------------------------------
    def ingest(
        self, paths: Iterable[str | Path], core_chunk_ids: set[str] | None = None, force: bool = False
    ) -> IngestReport:
        t = time.perf_counter()
        docs, errors, notes = load_paths(paths, self.options.max_document_bytes)
        load_s = time.perf_counter() - t
        report = self.ingest_documents(docs, core_chunk_ids, force)
        report.errors = [str(e) for e in errors] + report.errors
        report.identity_notes = notes + report.identity_notes
        report.seconds["load"] = load_s
        return report

    def ingest_documents(
        self, docs: Sequence[SourceDocument], core_chunk_ids: set[str] | None = None, force: bool = False
    ) -> IngestReport:
        """Ingest documents; :class:`UserExtractedDocument` ones carry their own extraction.

        ``core_chunk_ids``: with ``extract_core_only`` (KET-RAG §4.1), the ids of the chunks to
        extract; every other chunk is written with ``extraction_status='skipped'``.
        """
        if self.options.extract_core_only and core_chunk_ids is None:
            raise ValueError("extract_core_only needs core_chunk_ids (the KET-RAG core chunks)")
        if self.extractor == "llm" and self.llm is not None:  # (raises when the LLM is asked for but not configured)
            self.llm.check_cache()  # an unwritable reply cache fails now, before any paid call
        report = IngestReport()
        # one Document per identity: two versions of one document in one ingest would both be written
        # under it (a Document holding both versions' chunks); the later wins, and the report says so
        docs, report.identity_notes = resolve_identities(Candidate(d, True, _doc_name(d)) for d in docs)
        stages = Stages(self.show_progress, self.on_progress)
        before = self.llm.usage() if self.llm is not None else {}
        try:
            for start in range(0, len(docs), self.options.batch_documents):
                batch = docs[start : start + self.options.batch_documents]
                for attempt in range(5):
                    try:
                        report.add(self._ingest_batch(batch, stages, core_chunk_ids, force))
                        break
                    except ConcurrentChange:
                        if attempt == 4:
                            raise
                    except IngestWriteError as e:
                        if e.report is not None:
                            report.add(e.report)
                        e.report = report  # everything this ingest committed before the failure
                        raise
        finally:
            stages.close()
        if self.llm is not None:
            report.llm = _usage_delta(before, self.llm.usage())
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
                except (Neo4jError, DriverError, TransactionTooLarge) as e:
                    name = d["source"] if d["title"] == d["source"] else f"{d['title']} ({d['source']})"
                    raise IngestWriteError("delete", [name], e) from e
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

    def _extract(self, todo: list[PreparedDoc], st: Stages, core: set[str] | None) -> None:
        """One :class:`ChunkExtraction` per chunk into ``p.extractions``; failures into ``p.failed``.

        Identical chunk texts are extracted once. LLM calls run ``llm_concurrency`` at a time through
        :meth:`LLMClient.map`, and its cache makes a re-ingest free. A chunk whose extraction fails
        (:class:`ExtractionFailed`: invalid output after re-asks, or an endpoint that stays down) is
        reported and written without extraction; any other error (bad credentials, …) aborts.
        """
        mode = self.extractor
        jobs: dict[str, list[tuple[PreparedDoc, dict]]] = defaultdict(list)
        for p in todo:
            if isinstance(p.doc, UserExtractedDocument) and p.doc.extraction is not None:
                found = attach_user_extractions(p.doc.extraction, [c["text"] for c in p.chunks])
                p.extractions = {c["id"]: x for c, x in zip(p.chunks, found, strict=True)}
                continue
            for c in p.chunks:
                if mode != "none" and (core is None or not self.options.extract_core_only or c["id"] in core):
                    jobs[c["text"]].append((p, c))
        texts = list(jobs)
        if not texts:
            return
        with st.stage("extract", len(texts)) as advance:
            if mode == "llm":
                llm = self.llm
                assert llm is not None
                results = llm.map(
                    lambda text: extract_with_llm(llm, text, schema=self.options.extraction_schema),
                    texts,
                    progress=lambda done, total: advance(1),
                    return_exceptions=True,
                )
            else:
                results = extract_many_with_spacy(texts, advance)
        for text, result in zip(texts, results, strict=True):
            if isinstance(result, BaseException) and not isinstance(result, ExtractionFailed):
                raise result
            for p, c in jobs[text]:
                if isinstance(result, ExtractionFailed):
                    failure = {"doc": p.doc.source, "title": p.doc.title, "chunk": c["ordinal"], "error": str(result)}
                    p.failed.append(failure)
                else:
                    p.extractions[c["id"]] = result

    @staticmethod
    def _extraction_rows(p: PreparedDoc) -> None:
        """Chunk title/description/status, semantic units and relations of one document (no vectors yet)."""
        failed = {f["chunk"] for f in p.failed}
        for c in p.chunks:
            x = p.extractions.get(c["id"])
            c["extraction_status"] = "ok" if x else "failed" if c["ordinal"] in failed else "skipped"
            c["extractor"] = x.extractor if x else None
            c["title"] = (x.title or None) if x else None
            c["description"] = (x.description or None) if x else None
            if x is None:
                continue
            for i, u in enumerate(x.semantic_units):
                uid = hid("unit", c["id"], i, u.text)
                p.units.append({"id": uid, "chunk": c["id"], "ordinal": i, "text": u.text, "extractor": u.extractor})
                p.unit_links += [{"unit": uid, "entity": entity_id(normalize_name(n))} for n in u.entities]
            seen: set[str] = set()
            for r in x.relations:
                a, b = entity_id(normalize_name(r.subject)), entity_id(normalize_name(r.object))
                pred = predicate_key(r.predicate)
                rid = hid("relation", c["id"], a, pred, b)
                if rid in seen:
                    continue
                seen.add(rid)
                text = f"{r.subject} {r.predicate} {r.object}" + (f" — {r.description}" if r.description else "")
                p.relations.append(
                    {
                        "id": rid,
                        "chunk": c["id"],
                        "a": a,
                        "b": b,
                        "subject": r.subject,
                        "predicate": pred,
                        "object": r.object,
                        "description": r.description or None,
                        "text": text,
                        "extractor": r.extractor,
                    }
                )

    def _ingest_batch(
        self, docs: Sequence[SourceDocument], st: Stages, core: set[str] | None, force: bool = False
    ) -> IngestReport:
        o, report = self.options, IngestReport()
        with _before_writes(docs):
            state = {r["id"]: r for r in self.db.read(query("ingest.document_state"), ids=[d.id for d in docs])}
        todo: list[PreparedDoc] = []
        for d in docs:
            s = state.get(d.id)
            # A document with a failed chunk is never "unchanged": the next ingest retries it.
            # `force` rewrites unchanged documents too (e.g. to extract with another profile).
            if s is not None and s["sha256"] == d.sha256 and not s["failed"] and not force:
                report.documents_unchanged += 1
            else:
                todo.append(PreparedDoc(d, s["sha256"] if s else None, force=force))
        if not todo:
            return report
        with _before_writes(docs):
            for p in todo:
                if p.old_sha is not None:
                    p.removes = self._old_contribution(p.doc.id)

        # chunk
        subtexts: list[str] = []
        with st.stage("chunk", len(todo)) as advance:
            for p in todo:
                pieces = self._pieces(p.doc)
                where = chunk_provenance(p.doc.text, p.doc.sections, [x.text for x in pieces])
                for ordinal, piece in enumerate(pieces):
                    cid = hid("chunk", p.doc.id, ordinal, piece.text)
                    p.chunks.append(
                        {
                            "id": cid,
                            "doc": p.doc.id,
                            "text": piece.text,
                            "tokens": piece.tokens,
                            "ordinal": ordinal,
                            "doc_title": p.doc.title,
                            "provenance": where[ordinal],
                        }
                    )
                    subs = split_subchunks(piece.text, o.splits, o.min_subchunk_tokens)
                    for j, s in enumerate(subs):
                        p.subchunks.append(
                            {
                                "id": hid("sub", cid, j),
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
        # extract (LLM, spaCy or the user's), then the rows it adds
        self._extract(todo, st, core)
        for p in todo:
            self._extraction_rows(p)
        # knowledge-graph entities new to the graph get a name embedding. An entity that only documents
        # being replaced mention is deleted and re-created by the replacement, so it counts as new.
        # (E2GraphRAG's terms are matched by name and get none.)
        all_keys: dict[str, str] = {}
        for p in todo:
            for x in p.extractions.values():
                for e in x.entities:
                    all_keys.setdefault(normalize_name(e.name), e.name)
        replacing = [p.doc.id for p in todo if p.old_sha is not None]
        with _before_writes(docs):
            rows = self.db.read(
                query("ingest.existing_entities"), ids=[entity_id(k) for k in all_keys], replacing=replacing
            )
        known = {r["id"] for r in rows}
        new_keys = [k for k in all_keys if entity_id(k) not in known]
        # embed, in one pass: chunks (with their document title), split sub-chunks, sentences, new
        # entity names, semantic units and relations (NodeRAG embeds S and R nodes)
        chunk_in = [f"{c['doc_title']}\n{c['text']}" for p in todo for c in p.chunks]
        split_subs = [s for p in todo for s in p.subchunks if not s["whole"]]
        sub_in = [f"{s['text']}" for s in split_subs]
        sent_in = [s.text for a in analyses for s in a.sentences]
        name_in = [all_keys[k] for k in new_keys]
        unit_in = [u["text"] for p in todo for u in p.units]
        rel_in = [r["text"] for p in todo for r in p.relations]
        inputs = chunk_in + sub_in + sent_in + name_in + unit_in + rel_in
        uniq, inverse = np.unique(np.array(inputs, dtype=object), return_inverse=True) if inputs else ([], [])
        with st.stage("embed", len(uniq)) as advance:
            vecs_u = self.embedder.embed(list(uniq), advance)
        vecs = vecs_u[inverse] if len(inputs) else np.zeros((0, self.embedder.dim), np.float32)
        chunk_v, sub_v, sent_v, name_v, unit_v, rel_v = np.split(
            vecs, np.cumsum([len(chunk_in), len(sub_in), len(sent_in), len(name_in), len(unit_in)])
        )
        name_vec = dict(zip(new_keys, name_v, strict=True))
        for row, v in zip((u for p in todo for u in p.units), unit_v, strict=True):
            row["embedding"] = v.tolist()
        for row, v in zip((r for p in todo for r in p.relations), rel_v, strict=True):
            row["embedding"] = v.tolist()

        # assemble rows
        with st.stage("assemble", len(todo)) as advance:
            ci = si = 0
            a_i = sent_i = 0
            for p in todo:
                chunk_vec = {}
                for c in p.chunks:
                    c["embedding"] = chunk_v[ci].tolist()
                    chunk_vec[c["id"]] = c["embedding"]
                    ci += 1
                # E2GraphRAG's layer: one HAS_TERM row per (chunk, term) with the spaCy pass's count
                terms: dict[str, dict[str, dict]] = defaultdict(dict)
                seen: dict[str, dict[str, tuple[int, str]]] = defaultdict(dict)  # chunk -> key -> (count, label)
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
                    for key, n in a.mentions.items():
                        tid = term_id(key)
                        name, label = a.names[key]
                        link = terms[s["chunk"]].setdefault(
                            tid, {"chunk": s["chunk"], "term": tid, "count": 0, "name": name, "type": label}
                        )
                        link["count"] += n
                        count, _ = seen[s["chunk"]].get(key, (0, label))
                        seen[s["chunk"]][key] = (count + n, label)
                        if tid not in p.terms:
                            p.terms[tid] = {"id": tid, "name": name, "normalized": key, "type": label}
                    for term, idx in a.keyword_sentences().items():
                        p.keyword_links.append({"keyword": keyword_id(term), "sub": s["id"], "count": len(idx)})
                # the knowledge graph: one MENTIONS row per (chunk, extracted entity) with what the
                # chunk's extraction says of it, and the spaCy pass's count and NER label when it saw
                # the same name (refresh_entities aggregates them)
                mentions: dict[str, dict[str, dict]] = defaultdict(dict)
                for c in p.chunks:
                    x = p.extractions.get(c["id"])
                    for e in x.entities if x else ():
                        key = normalize_name(e.name)
                        eid = entity_id(key)
                        row = mentions[c["id"]].get(eid)
                        if row is None:
                            count, label = seen[c["id"]].get(key, (0, None))
                            label = None if label == "NOUN" else label
                            # an entity the spaCy pass did not see: count its name
                            count = count or max(1, occurrences(e.name, c["text"]))
                            row = mentions[c["id"]][eid] = _mention(c["id"], eid, count, e.name, label)
                        row.update(
                            name=e.name,
                            extractor=e.extractor,
                            type=e.type,
                            description=e.description or None,
                        )
                        self._entity_row(p, key, e.name, e.type, e.extractor, name_vec)
                p.mentions = [m for rows in mentions.values() for m in rows.values()]
                p.term_links = [t for rows in terms.values() for t in rows.values()]
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
                try:
                    written = self._commit_group(g)
                except IngestWriteError as e:
                    # what this batch committed (whole groups, and the documents of a split group that
                    # landed before the failure); ingest_documents adds the earlier batches
                    g = [p for p in g if p.doc.id in e.committed]
                    written = e.committed
                    e.report = report
                    failure: IngestWriteError | None = e
                else:
                    failure = None
                for p in g:
                    if p.doc.id in written:
                        report.documents_new += p.old_sha is None
                        report.documents_replaced += p.old_sha is not None
                        if p.old_sha is not None:
                            report.replaced.append(_doc_name(p.doc))
                        report.chunks += len(p.chunks)
                        report.subchunks += len(p.subchunks)
                        report.mentions += len(p.mentions)
                        report.term_mentions += len(p.term_links)
                        report.sentences += p.sentences
                        report.cooccurrence_pairs += len(p.adds.cooc)
                        report.extracted_chunks += len(p.extractions)
                        report.relations += len(p.relations)
                        report.semantic_units += len(p.units)
                        report.failed_chunks += p.failed
                        keywords.update(p.adds.kw_n)
                        new_entities.update(e for e, v in p.entities.items() if v["embedding"] is not None)
                        report.rows_written += _row_count(p)
                    else:
                        report.documents_unchanged += 1
                if failure is not None:
                    report.keywords, report.entities_new = len(keywords), len(new_entities)
                    raise failure
                advance(len(g))
            self.db.write(query("meta.touch"))
        report.keywords, report.entities_new = len(keywords), len(new_entities)
        return report

    @staticmethod
    def _entity_row(p: PreparedDoc, key: str, name: str, typ: str, source: str, name_vec: dict) -> None:
        """The row that creates an entity if it is new (type, source and name are refreshed after)."""
        eid = entity_id(key)
        if eid not in p.entities:
            emb = name_vec.get(key)
            p.entities[eid] = {
                "id": eid,
                "name": name,
                "normalized": key,
                "type": typ,
                "source": source,
                "embedding": None if emb is None else emb.tolist(),
            }

    # --- transactions ---------------------------------------------------------------------
    def _commit_group(self, group: list[PreparedDoc]) -> set[str]:
        """Write a group of whole documents in one transaction; the ids written.

        A group over Neo4j's per-transaction memory limit is written one document at a time (each
        still in one transaction), so only a document that alone exceeds it fails; a failure is an
        :class:`IngestWriteError` naming the documents of the rolled-back transaction.
        """
        try:
            return self.db.write_tx(lambda tx: self._write_group(tx, group))
        except TransactionTooLarge as e:
            if len(group) == 1:
                raise IngestWriteError("write", [_doc_name(group[0].doc)], e) from e
            written: set[str] = set()
            for p in group:
                try:
                    written |= self._commit_group([p])
                except IngestWriteError as failure:
                    failure.committed |= written  # those landed, whole, before this one failed
                    raise
            return written
        except (Neo4jError, DriverError) as e:
            raise IngestWriteError("write", [_doc_name(p.doc) for p in group], e) from e

    @staticmethod
    def _run(tx: ManagedTransaction, name: str, rows: list[dict], **params) -> None:
        if FAULT_HOOK is not None:
            FAULT_HOOK(name)
        if rows:
            tx_write_batches(tx, query(f"ingest.{name}"), rows, **params)

    def _write_group(self, tx: ManagedTransaction, group: list[PreparedDoc]) -> set[str]:
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

    def _delete_tx(self, tx: ManagedTransaction, doc_id: str, sha: str, removes: Contribution) -> None:
        committed = {r["id"]: r["sha256"] for r in tx.run(query("ingest.lock_documents"), ids=[doc_id])}
        if committed.get(doc_id) != sha:
            raise ConcurrentChange(doc_id)
        self._refresh(tx, self._remove_document(tx, doc_id, removes))


def _mention(chunk: str, entity: str, count: int, name: str, label: str | None) -> dict:
    """A MENTIONS row: ``label`` is the spaCy pass's (None if it did not see the entity); the
    extraction fills ``extractor``, ``type`` and ``description`` when the chunk's extraction has it."""
    return {
        "chunk": chunk,
        "entity": entity,
        "count": count,
        "name": name,
        "label": label,
        "extractor": None,
        "type": None,
        "description": None,
    }


def _usage_delta(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """What one ingest cost, from the client's running totals (its ledger may be shared)."""
    out = {}
    for stage, counts in after.items():
        delta = {k: v - before.get(stage, {}).get(k, 0) for k, v in counts.items()}
        if any(delta.values()):
            out[stage] = delta
    return out


def _row_count(p: PreparedDoc) -> int:
    return (
        1
        + len(p.chunks) * 2
        + len(p.subchunks)
        + len(p.entities)
        + len(p.mentions)
        + len(p.terms)
        + len(p.term_links)
        + len(p.adds.cooc)
        + len(p.adds.kw_n)
        + len(p.keyword_links)
        + len(p.units)
        + len(p.unit_links)
        + len(p.relations)
    )


__all__ = [
    "IngestOptions",
    "IngestReport",
    "IngestWriteError",
    "Ingestor",
    "LoadError",
    "UserExtractedDocument",
]
