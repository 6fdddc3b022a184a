"""The rows ingest prepares for a document before writing it: chunks, mentions, extraction rows, and
what it adds to (or, replaced, takes from) the layers documents share. Their keys are the parameters
of the statements in ``ingest.cypher``."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from graphstrata.ingest.extract import ChunkExtraction
from graphstrata.ingest.load import SourceDocument
from graphstrata.ingest.user_extractions import UserDocument
from graphstrata.text.names import entity_id, hid, keyword_id, normalize_name, predicate_key, term_id
from graphstrata.text.nlp import Analysis


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


def extraction_rows(p: PreparedDoc) -> None:
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


def entity_row(p: PreparedDoc, key: str, name: str, typ: str, source: str, name_vec: dict) -> None:
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


def mention_row(chunk: str, entity: str, count: int, name: str, label: str | None) -> dict:
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


def row_count(p: PreparedDoc) -> int:
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
