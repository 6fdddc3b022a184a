"""Chunk provenance by position: which pages or headed sections each chunk of a converted document
(PDF, DOCX, HTML) covers.

A section is (character offset, label). A chunk's character span comes from where the chunker cut
it, never from searching the document for the chunk's text: with repeated boilerplate (a running
header on every page) or two identical openings, a search finds the first occurrence and a later
chunk would get the first section's label.

* Token windows (``token_chunks``): a window starts at a token offset of the whole text's cl100k
  ids; the character offset is the length of the text those ids decode to, counted in bytes per
  token and mapped back to characters (a character split across two tokens counts where it starts).
* Semantic chunks do not overlap and come in order: each is found at or after the end of the
  previous one, so a repeated text is found at its own place, not an earlier one.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Protocol


class _Piece(Protocol):
    text: str
    tokens: int
    start: int


def token_char_offsets(text: str) -> list[int]:
    """Character offset of each token boundary of ``text``'s cl100k ids (len = tokens + 1)."""
    from graphstrata.text.tokens import encode, encoder

    enc = encoder()
    ids = encode(text)
    # the character at each byte offset of the UTF-8 text (a byte inside a character maps to it)
    char_at: list[int] = []
    for i, ch in enumerate(text):
        char_at.extend([i] * len(ch.encode()))
    char_at.append(len(text))
    offsets, byte = [0], 0
    for token in ids:
        byte += len(enc.decode_single_token_bytes(token))
        offsets.append(char_at[min(byte, len(char_at) - 1)])
    return offsets


def token_window_spans(text: str, pieces: Sequence[_Piece]) -> list[tuple[int, int]]:
    """(start, end) characters of each token window, from its token offset and length."""
    offsets = token_char_offsets(text)
    last = len(offsets) - 1
    return [(offsets[min(p.start, last)], offsets[min(p.start + p.tokens, last)]) for p in pieces]


def sequential_spans(text: str, pieces: Sequence[_Piece]) -> list[tuple[int, int]]:
    """(start, end) of non-overlapping chunks in order, each looked for from the previous one's end."""
    spans, pos = [], 0
    for p in pieces:
        at = text.find(p.text, pos)
        if at < 0:  # the chunker normalised something: the chunk starts where the previous ended
            at = pos
        spans.append((at, at + len(p.text)))
        pos = max(pos, at + len(p.text))
    return spans


def labels(sections: Sequence[tuple[int, str]], spans: Sequence[tuple[int, int]]) -> list[list[str] | None]:
    """For each span, the labels of the sections it overlaps (in order, each once); None without sections."""
    if not sections:
        return [None] * len(spans)
    starts = [offset for offset, _ in sections]
    out: list[list[str] | None] = []
    for start, end in spans:
        first = max(0, bisect.bisect_right(starts, start) - 1)  # the section the span starts in
        found = [label for offset, label in sections[first:] if offset < max(end, start + 1)]
        out.append(list(dict.fromkeys(found)) or None)
    return out


def piece_provenance(
    text: str, sections: Sequence[tuple[int, str]], pieces: Sequence[_Piece], windows: bool
) -> list[list[str] | None]:
    """Each chunk's section labels; ``windows``: the pieces are token windows (else semantic chunks)."""
    if not sections:
        return [None] * len(pieces)
    spans = token_window_spans(text, pieces) if windows else sequential_spans(text, pieces)
    return labels(sections, spans)
