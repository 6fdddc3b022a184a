"""What an ingest is asked to do (:class:`IngestOptions`) and what it did (:class:`IngestReport`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from graphstrata.config import get_settings
from graphstrata.ingest.document import doc_name
from graphstrata.ingest.extract import ExtractionSchema
from graphstrata.ingest.parts import PART_TEXT_CHARS

if TYPE_CHECKING:
    from graphstrata.ingest.rows import PreparedDoc


#: Smallest chunk: a short sentence. Smaller chunks multiply a document's chunks (and its rows,
#: vectors and extraction calls) without adding anything retrievable (docs/limits.md).
MIN_CHUNK_TOKENS = 5


class IngestOptions(BaseModel):
    """Ingest parameters; the defaults are the papers'."""

    chunk_size: int = Field(
        1200,
        ge=MIN_CHUNK_TOKENS,
        le=100_000,
        description=f"tokens per chunk (cl100k), E2GraphRAG/KET-RAG default; at least {MIN_CHUNK_TOKENS}",
    )
    chunk_overlap: int = Field(
        100, ge=0, description="tokens shared by consecutive chunks (at most half of chunk_size)"
    )
    chunking: Literal["tokens", "semantic"] = Field("tokens", description="`semantic`: semchunk (DA-RAG)")
    splits: int = Field(3, ge=0, le=6, description="KET-RAG m: sub-chunks by halving a chunk m times")
    min_subchunk_tokens: int = Field(
        100, ge=10, le=100_000, description="a piece is not halved into halves under this size"
    )
    batch_documents: int = Field(
        256,
        ge=1,
        le=100_000,
        description="documents prepared (chunked, parsed, embedded) at once; the first batch is an eighth of that, "
        "the last ones halve down to it",
    )
    group_chunks: int = Field(256, ge=1, le=100_000, description="chunks per write transaction (whole documents only)")
    max_document_bytes: int = Field(
        default_factory=lambda: get_settings().max_document_bytes,
        ge=1,
        description="largest document (its text, after conversion) in UTF-8 bytes: at most, and by default, "
        "GRAPHSTRATA_MAX_DOCUMENT_BYTES (a request cannot raise the server's limit)",
    )
    part_chars: int = Field(
        PART_TEXT_CHARS,
        ge=1000,
        le=PART_TEXT_CHARS,
        description="a text longer than this (characters) is ingested as parts, each its own Document; a batch "
        "holds at most twice this much text (what bounds an ingest's memory: docs/limits.md)",
    )
    extractor: Literal["auto", "llm", "spacy", "none"] = Field(
        "auto",
        description="knowledge extraction per chunk: `auto` is the LLM when one is configured, else spaCy "
        "(the no-LLM extractor); `none` writes no extraction layer",
    )
    profile: Literal["full", "ketrag"] = Field(
        "full",
        description="`ketrag`: KET-RAG's index (§5.1) — extract only the PageRank core chunks of the chunk "
        "KNN graph (`ketrag_beta`, `ketrag_knn_k`); every chunk still gets text, vectors and keywords",
    )
    ketrag_beta: float = Field(0.8, gt=0, le=1, description="KET-RAG β: the share of chunks that are core")
    ketrag_knn_k: int = Field(3, ge=1, le=100, description="KET-RAG: neighbours per chunk in the chunk KNN graph")
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
        # consecutive chunks advance by chunk_size - chunk_overlap tokens: an overlap near the size would
        # store (and embed, and extract) every token up to chunk_size times
        if self.chunk_overlap > self.chunk_size // 2:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be at most half of chunk_size ({self.chunk_size})"
            )
        return self

    @field_validator("max_document_bytes")
    @classmethod
    def _within_the_configured_limit(cls, value: int) -> int:
        limit = get_settings().max_document_bytes
        if value > limit:
            raise ValueError(
                f"max_document_bytes ({value}) is over the configured limit of {limit} bytes "
                "(GRAPHSTRATA_MAX_DOCUMENT_BYTES); a smaller limit may be asked for, not a larger one"
            )
        return value


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
    keywords: int = 0  # distinct keywords the written documents contain
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
    #: The terms behind ``keywords`` (batches share keywords: their counts do not add up).
    keyword_terms: set[str] = Field(default_factory=set, exclude=True, repr=False)

    @property
    def rows_per_second(self) -> float:
        return self.rows_written / max(self.seconds.get("write", 0.0), 1e-9)

    def count_written(self, p: PreparedDoc) -> None:
        """Count a document the write stage committed."""
        from graphstrata.ingest.rows import row_count  # (numpy and spaCy types: loaded with the pipeline only)

        self.documents_new += p.old_sha is None
        self.documents_replaced += p.old_sha is not None
        if p.old_sha is not None:
            self.replaced.append(doc_name(p.doc))
        self.chunks += len(p.chunks)
        self.subchunks += len(p.subchunks)
        self.mentions += len(p.mentions)
        self.term_mentions += len(p.term_links)
        self.sentences += p.sentences
        self.cooccurrence_pairs += len(p.adds.cooc)
        self.extracted_chunks += len(p.extractions)
        self.relations += len(p.relations)
        self.semantic_units += len(p.units)
        self.failed_chunks += p.failed
        self.rows_written += row_count(p)

    def add(self, other: IngestReport) -> None:
        for name, value in other:
            if isinstance(value, int) and name != "keywords":
                setattr(self, name, getattr(self, name) + value)
        self.keyword_terms |= other.keyword_terms
        self.keywords = len(self.keyword_terms)
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
