"""The row-building stages of ingest, free of the database: a document's chunk and sub-chunk rows,
the texts a batch embeds, and the rows that carry the vectors and the spaCy pass's counts.

:mod:`graphstrata.ingest.pipeline` runs them in order; the rows' keys are the parameters of the
statements in ``ingest.cypher`` (see :class:`graphstrata.ingest.rows.PreparedDoc`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from graphstrata.ingest.chunk import Piece, split_subchunks
from graphstrata.ingest.options import IngestOptions
from graphstrata.ingest.rows import PreparedDoc, entity_row, mention_row
from graphstrata.ingest.user_extractions import occurrences
from graphstrata.text.names import entity_id, hid, keyword_id, normalize_name, term_id
from graphstrata.text.nlp import EXTRACTIVE, Analysis


def chunk_rows(
    p: PreparedDoc, pieces: list[Piece], where: list[dict], options: IngestOptions
) -> list[tuple[str, list[str]]]:
    """Fill ``p.chunks`` and ``p.subchunks`` (KET-RAG's m halvings); return each chunk's text with its
    sub-chunks' texts, in order."""
    texts: list[tuple[str, list[str]]] = []
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
        subs = split_subchunks(piece.text, options.splits, options.min_subchunk_tokens)
        texts.append((piece.text, [s.text for s in subs]))
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
    return texts


def embedding_inputs(todo: list[PreparedDoc], analyses: list[Analysis]) -> list[list[str]]:
    """The batch's texts to embed (but new entity names), in the order :meth:`BatchVectors.split` expects.

    A chunk is embedded with its document's title; a sub-chunk that is the whole chunk shares the
    chunk's vector and is not embedded again; spaCy's relations are not embedded (see
    :func:`_embedded_relations`).
    """
    return [
        [f"{c['doc_title']}\n{c['text']}" for p in todo for c in p.chunks],
        [s["text"] for p in todo for s in p.subchunks if not s["whole"]],
        [s.text for a in analyses for s in a.sentences],
        [u["text"] for p in todo for u in p.units],
        [r["text"] for r in _embedded_relations(todo)],
    ]


def _embedded_relations(todo: list[PreparedDoc]) -> Iterator[dict]:
    """The relations that get a vector (NodeRAG's R, for the optional ``fact_k`` entry points): those a
    model or the user extracted, not spaCy's (:data:`EXTRACTIVE`)."""
    return (r for p in todo for r in p.relations if r["extractor"] not in EXTRACTIVE)


@dataclass
class BatchVectors:
    """A batch's vectors, handed out in the order the documents are assembled."""

    chunks: Iterator[np.ndarray]
    subchunks: Iterator[np.ndarray]
    analyses: Iterator[Analysis]
    sentences: np.ndarray
    names: dict[str, np.ndarray]  # normalised key of a new entity -> its name's vector
    units: np.ndarray
    relations: np.ndarray
    _sentence_at: int = field(default=0)

    @classmethod
    def split(cls, parts: list[np.ndarray], analyses: list[Analysis], names: dict[str, np.ndarray]) -> BatchVectors:
        """``parts``: the vectors of :func:`embedding_inputs`' parts; ``names``: of the new entities."""
        chunk_v, sub_v, sent_v, unit_v, rel_v = parts
        return cls(iter(chunk_v), iter(sub_v), iter(analyses), sent_v, names, unit_v, rel_v)

    def take_sentences(self, n: int) -> np.ndarray:
        out = self.sentences[self._sentence_at : self._sentence_at + n]
        self._sentence_at += n
        return out


def attach_unit_and_relation_vectors(todo: list[PreparedDoc], units: np.ndarray, relations: np.ndarray) -> None:
    """NodeRAG's S and R nodes get their vectors."""
    for row, v in zip((u for p in todo for u in p.units), units, strict=True):
        row["embedding"] = v.tolist()
    for row, v in zip(_embedded_relations(todo), relations, strict=True):
        row["embedding"] = v.tolist()


def assemble_rows(p: PreparedDoc, vectors: BatchVectors) -> None:
    """Vectors onto a document's chunk and sub-chunk rows; its share of the shared layers (sentence
    vectors, co-occurrences, keywords: ``p.adds``); E2GraphRAG's HAS_TERM rows; the MENTIONS rows of
    the knowledge graph and the entity rows."""
    chunk_vec = {}
    for c in p.chunks:
        c["embedding"] = next(vectors.chunks).tolist()
        chunk_vec[c["id"]] = c["embedding"]
    # E2GraphRAG's layer: one HAS_TERM row per (chunk, term) with the spaCy pass's count
    terms: dict[str, dict[str, dict]] = defaultdict(dict)
    seen: dict[str, dict[str, tuple[int, str]]] = defaultdict(dict)  # chunk -> key -> (count, label)
    for s in p.subchunks:
        s["embedding"] = chunk_vec[s["chunk"]] if s["whole"] else next(vectors.subchunks).tolist()
        a = next(vectors.analyses)
        p.sentences += len(a.sentences)
        p.adds.add_analysis(a, vectors.take_sentences(len(a.sentences)))
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
    # the knowledge graph: one MENTIONS row per (chunk, extracted entity) with what the chunk's
    # extraction says of it, and the spaCy pass's count and NER label when it saw the same name
    # (set_entities aggregates them)
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
                row = mentions[c["id"]][eid] = mention_row(c["id"], eid, count, e.name, label)
            row.update(name=e.name, extractor=e.extractor, type=e.type, description=e.description or None)
            entity_row(p, key, e.name, e.type, e.extractor, vectors.names)
    p.mentions = [m for rows in mentions.values() for m in rows.values()]
    p.term_links = [t for rows in terms.values() for t in rows.values()]
