"""Chunking: token windows (the papers' 1200/100 with cl100k tokens), semantic chunks
(semchunk, for DA-RAG) and KET-RAG's sub-chunks by recursive halving; tokens are
:mod:`graphstrata.text.tokens`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphstrata.text.tokens import count_tokens, encode, encoder

if TYPE_CHECKING:
    from graphstrata.ingest.options import IngestOptions


@dataclass(frozen=True)
class Piece:
    text: str
    tokens: int
    start: int  # token offset in the parent text


def token_chunks(text: str, size: int = 1200, overlap: int = 100) -> list[Piece]:
    """Windows of `size` tokens, consecutive windows sharing `overlap` tokens (E2GraphRAG §3.1)."""
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError(f"need size > 0 and 0 <= overlap < size, got {size}/{overlap}")
    enc = encoder()
    ids = encode(text)
    if not ids:
        return []
    pieces, step = [], size - overlap
    for start in range(0, len(ids), step):
        window = ids[start : start + size]
        pieces.append(Piece(enc.decode(window), len(window), start))
        if start + size >= len(ids):
            break
    return pieces


def semantic_chunks(text: str, size: int = 1200) -> list[Piece]:
    """Chunks that end at semantic boundaries (paragraphs, sentences, clauses), at most `size` tokens."""
    import semchunk

    chunker = semchunk.chunkerify(lambda t: count_tokens(t), chunk_size=size)
    pieces, offset = [], 0
    for part in chunker(text):
        n = count_tokens(part)
        pieces.append(Piece(part, n, offset))
        offset += n
    return pieces


def split_subchunks(text: str, splits: int = 3, min_tokens: int = 100) -> list[Piece]:
    """KET-RAG §5.1: halve a chunk `splits` times into up to 2**splits equal token pieces.

    A piece is not halved again once its halves would fall under `min_tokens` (a 150-token passage
    stays whole rather than becoming twenty-token shards).
    """
    enc = encoder()
    ids = encode(text)
    spans = [(0, len(ids))]
    for _ in range(splits):
        nxt = []
        for a, b in spans:
            if (b - a) // 2 >= min_tokens:
                mid = (a + b) // 2
                nxt += [(a, mid), (mid, b)]
            else:
                nxt.append((a, b))
        spans = nxt
    return [Piece(enc.decode(ids[a:b]), b - a, a) for a, b in spans if b > a]


def split_text(text: str, options: IngestOptions) -> list[Piece]:
    """A document's chunks as the ingest's options ask: semantic, else fixed token windows."""
    if options.chunking == "semantic":
        return semantic_chunks(text, options.chunk_size)
    return token_chunks(text, options.chunk_size, options.chunk_overlap)
