"""Tokens: the cl100k_base tokenizer every budget is counted in, cutting a text to a budget, the one
greedy packer that keeps ranked texts while they fit, and joining overlapping chunks.

Tokens come from `bpe-openai`, which embeds the cl100k_base table and gives tiktoken's token ids;
tiktoken itself downloads its table on first use, which an offline machine cannot do.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache

import bpe_openai

ENCODING = "cl100k_base"


@cache
def encoder() -> bpe_openai.Encoding:
    return bpe_openai.get_encoding(ENCODING)


#: The tokenizer refuses long inputs ("Input too long to encode safely", somewhere under a million
#: characters), so longer texts are encoded in pieces of at most this many characters.
PIECE_CHARS = 100_000


def encode(text: str) -> list[int]:
    """cl100k token ids of `text`, of any length. A long text is cut before a white-space character
    (where cl100k starts a token anyway), so the ids are those of the whole text but for the rare
    token that would have spanned a cut."""
    enc = encoder()
    if len(text) <= PIECE_CHARS:
        return enc.encode_ordinary(text)
    ids: list[int] = []
    start = 0
    while start < len(text):
        end = min(start + PIECE_CHARS, len(text))
        if end < len(text):
            cut = max(text.rfind(" ", start + 1, end), text.rfind("\n", start + 1, end))
            end = cut if cut > start else end  # no white space at all: cut anywhere
        ids += enc.encode_ordinary(text[start:end])
        start = end
    return ids


#: texts up to this many characters have their counts kept (passages, sub-chunks, items; not documents)
KEPT_CHARS = 10_000


def count_tokens(text: str) -> int:
    """cl100k tokens of `text`. The counts of recent short texts are kept: the methods fused on one
    question return many of the same passages, and a popular passage comes back question after
    question (the encoder holds the interpreter while it runs: a count costs about as much as a
    query's decoding)."""
    return _kept_count(text) if len(text) <= KEPT_CHARS else len(encode(text))


@lru_cache(maxsize=4096)
def _kept_count(text: str) -> int:
    return len(encode(text))


def truncate(text: str, max_tokens: int) -> str:
    """`text` cut to its first `max_tokens` tokens (unchanged when it fits)."""
    ids = encode(text)
    return text if len(ids) <= max_tokens else encoder().decode(ids[:max_tokens])


def fit(
    lengths: Sequence[int],
    budget: int,
    *,
    stop_at_overflow: bool = False,
    first_always: bool = False,
    max_items: int | None = None,
) -> list[int]:
    """The one greedy packer: indexes of the items, taken in the given (rank) order, whose lengths
    still fit `budget`. An item that does not fit is skipped (later, shorter ones may still fit), or
    ends the packing with `stop_at_overflow`; `first_always` takes the first item whatever its length;
    `max_items` caps how many are taken."""
    chosen: list[int] = []
    used = 0
    for i, n in enumerate(lengths):
        if max_items is not None and len(chosen) >= max_items:
            break
        if used + n <= budget or (first_always and not chosen):
            chosen.append(i)
            used += n
        elif stop_at_overflow:
            break
    return chosen


def join_overlapping(texts: Sequence[str], overlap_tokens: int) -> str:
    """Consecutive chunks as one text, the overlap they share written once (the authors'
    ``sequential_merge``). The shared part is found as the longest suffix of the text so far that
    begins the next chunk, which is exact whatever the tokenizer did at the window edges."""
    if not texts:
        return ""
    out = texts[0]
    for nxt in texts[1:]:
        k = 0
        if overlap_tokens > 0:
            limit = min(len(out), len(nxt), 8 * overlap_tokens + 64)  # a token is < 8 chars here
            for n in range(limit, 0, -1):
                if out.endswith(nxt[:n]):
                    k = n
                    break
        if k == 0 and overlap_tokens > 0:
            # the tokenizer's overlap is known in tokens: drop that many from the next chunk
            ids = encode(nxt)
            out = out + encoder().decode(ids[overlap_tokens:])
        else:
            out = out + nxt[k:] if k else out + ("" if out.endswith((" ", "\n")) else " ") + nxt
    return out
