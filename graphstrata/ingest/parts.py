"""Large documents in parts, and batches bounded in text: what keeps an ingest's memory bounded
whatever the size of one document (docs/limits.md).

Every stage before the write holds a batch's chunks, parses, vectors and rows at once, and a
document is written in one transaction; so a document's memory grows with its text. A text over
:data:`PART_TEXT_CHARS` characters is ingested as parts of at most that size, cut at a paragraph
(else a sentence, else a space) boundary, each its own ``Document`` — source ``<source>#part<k>``,
title ``<title> (part <k>)`` — written whole or not at all like any document; and a batch holds at
most twice that (``IngestOptions.part_chars`` may lower both). Re-ingesting the same text gives the same parts
(no-op); parts a new version no longer has, or the unsplit version, are deleted after the write.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from typing import Any

from graphstrata.cypher import query
from graphstrata.ingest.convert import Section
from graphstrata.ingest.document import SourceDocument

#: Largest text ingested as one Document (characters): ~60 chunks of 1200 tokens.
PART_TEXT_CHARS = 250_000
PART_MARK = "#part"
_BREAKS = (re.compile(r"\n\s*\n"), re.compile(r"[.!?]\s"), re.compile(r"\s"))


def part_source(source: str, k: int) -> str:
    return f"{source}{PART_MARK}{k}"


def split_document(doc: SourceDocument, part_chars: int = PART_TEXT_CHARS) -> list[SourceDocument]:
    """``doc`` itself when its text fits in ``part_chars``; else its parts, in order."""
    text = doc.text
    if len(text) <= part_chars:
        return [doc]
    cuts = [0]
    while len(text) - cuts[-1] > part_chars:
        start, end = cuts[-1], cuts[-1] + part_chars
        cuts.append(_boundary(text, start + part_chars // 2, end))
    cuts.append(len(text))
    return [
        SourceDocument(
            source=part_source(doc.source, k),
            title=f"{doc.title} (part {k})",
            text=text[a:b],
            sections=_sections_within(doc.sections, a, b),
        )
        for k, (a, b) in enumerate(itertools.pairwise(cuts), 1)
    ]


def _boundary(text: str, lo: int, hi: int) -> int:
    """The last paragraph break in text[lo:hi] (else sentence end, else space; else hi): where to cut."""
    for pattern in _BREAKS:
        last = None
        for last in pattern.finditer(text, lo, hi):  # noqa: B007 (the last match is the one wanted)
            pass
        if last is not None:
            return last.end()
    return hi


def _sections_within(sections: tuple[Section, ...], a: int, b: int) -> tuple[Section, ...]:
    """The sections of text[a:b], offsets from ``a``; the section under way at ``a`` starts it."""
    before = [label for offset, label in sections if offset <= a]
    inside = [(offset - a, label) for offset, label in sections if a < offset < b]
    return tuple(([(0, before[-1])] if before else []) + inside)


def split_large(docs: Sequence[SourceDocument], part_chars: int = PART_TEXT_CHARS) -> list[SourceDocument]:
    return [p for d in docs for p in split_document(d, part_chars)]


def whole_source(source: str) -> str:
    """The source of the document a part belongs to (a document's own source otherwise)."""
    head, mark, tail = source.rpartition(PART_MARK)
    return head if mark and tail.isdigit() else source


def whole_title(title: str) -> str:
    """The title of the document a part belongs to (a document's own title otherwise)."""
    m = _PART_TITLE.fullmatch(title)
    return m.group(1) if m else title


_PART_TITLE = re.compile(r"(.*) \(part \d+\)", re.S)


def find_documents(db: Any, ref: str) -> list[dict[str, Any]]:
    """The stored documents ``ref`` names: by id, source or title; a document in parts by its whole
    source or title (all its parts). Rows ``{id, title, source}``, by source."""
    rows = db.read(query("ingest.find_documents"), ref=ref)
    return [
        r
        for r in rows
        if ref in (r["id"], r["source"], r["title"], whole_source(r["source"]), whole_title(r["title"] or ""))
    ]


def ambiguity(found: Sequence[dict[str, Any]], ref: str) -> str | None:
    """Why deleting ``found`` (what ``ref`` names) needs a confirmation: it is several documents (the
    parts of one document count as one); ``None`` when it is one."""
    wholes = {whole_source(d["source"]) for d in found}
    if len(wholes) <= 1:
        return None
    ids = ", ".join(f"{d['id']} ({d['source']})" for d in found[:20])
    return f"{len(wholes)} documents match {ref!r}: {ids}; delete one by id, or all"


def by_text(batches: Iterator[Sequence[SourceDocument]], most: int) -> Iterator[Sequence[SourceDocument]]:
    """``batches`` cut further so that none holds more than ``most`` characters (unless one document does)."""
    for batch in batches:
        start, size = 0, 0
        for i, d in enumerate(batch):
            if i > start and size + len(d.text) > most:
                yield batch[start:i]
                start, size = i, 0
            size += len(d.text)
        if start < len(batch):
            yield batch[start:]
