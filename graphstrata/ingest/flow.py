"""The ingest pipeline's plumbing: batches of documents, the spaCy pass over a batch's chunks, and
the accounting of batches written (graphstrata/ingest/pipeline.py runs them)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING

from graphstrata.ingest.document import SourceDocument
from graphstrata.ingest.errors import IngestWriteError
from graphstrata.ingest.options import IngestReport
from graphstrata.ingest.parts import by_text
from graphstrata.text.nlp import Analysis, analyse, cut, parse_texts

if TYPE_CHECKING:
    from spacy.tokens import Doc


def analyse_chunks(
    chunks: Sequence[tuple[str, Sequence[str]]],
    cut_from_chunk: Sequence[bool] | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[dict[str, Doc], list[Analysis], list[bool]]:
    """spaCy's pass over chunks given as (text, sub-chunk texts): each chunk parsed once, its
    sub-chunks' parses cut from that parse (:func:`graphstrata.text.nlp.cut`) and analysed.

    ``cut_from_chunk``: per chunk, whether to cut (default: all); a chunk not cut, or whose sub-chunks
    do not make up its text, has them parsed on their own. Returns (chunk text -> its parse; one
    analysis per sub-chunk, in order; per chunk whether its sub-chunks were cut from it)."""
    want = [True] * len(chunks) if cut_from_chunk is None else list(cut_from_chunk)
    whole = list(dict.fromkeys(text for (text, _), w in zip(chunks, want, strict=True) if w))
    parsed = dict(zip(whole, parse_texts(whole, progress) if whole else [], strict=True))
    pieces = [cut(parsed[text], subs) if w else None for (text, subs), w in zip(chunks, want, strict=True)]
    rest = [s for (_, subs), got in zip(chunks, pieces, strict=True) if got is None for s in subs]
    alone = iter(parse_texts(rest) if rest else [])
    analyses = []
    for (_, subs), got in zip(chunks, pieces, strict=True):
        analyses += [analyse(d) for d in (got if got is not None else [next(alone) for _ in subs])]
    return parsed, analyses, [got is not None for got in pieces]


def batches(docs: Sequence[SourceDocument], size: int, text_chars: int) -> Iterator[Sequence[SourceDocument]]:
    """:func:`_counted` batches, cut further to hold at most ``text_chars`` characters of text each
    (a batch's parses, vectors and rows grow with its text: this bounds them)."""
    return by_text(_counted(docs, size), text_chars)


def _counted(docs: Sequence[SourceDocument], size: int) -> Iterator[Sequence[SourceDocument]]:
    """Batches of ``size`` documents, short at both ends: the first an eighth of ``size``, so that the
    embedding and writing threads get their first work after a short parse; the last ``size``
    documents in batches halving down to an eighth, so that little is left once the last text is
    embedded (that batch's entity names and its write, on the writing thread alone)."""
    least = max(1, size // 8)
    head = min(len(docs), least)
    tail = min(len(docs) - head, size)
    body = len(docs) - head - tail
    sizes = [head, *[size] * (body // size), body % size]
    while tail:
        part = tail // 2 if tail // 2 >= least else tail
        sizes.append(part)
        tail -= part
    start = 0
    for n in sizes:
        if n:
            yield docs[start : start + n]
            start += n


class Abandoned(Exception):
    """A batch not written because an earlier one failed (that failure is the one raised)."""


def count_write(write: Future[IngestReport], report: IngestReport) -> None:
    """Wait for a batch's write and add what it wrote to ``report``."""
    try:
        report.add(write.result())
    except IngestWriteError as e:
        if e.report is not None:
            report.add(e.report)
        e.report = report  # everything this ingest committed before the failure
        raise


def usage_delta(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """What one ingest cost, from the client's running totals (its ledger may be shared)."""
    out = {}
    for stage, counts in after.items():
        delta = {k: v - before.get(stage, {}).get(k, 0) for k, v in counts.items()}
        if any(delta.values()):
            out[stage] = delta
    return out
