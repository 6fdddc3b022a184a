"""Names and ids: the normalised name that merges mentions across chunks and extractors, the
content-addressed ids of graph nodes, and the key that merges relation predicates."""

from __future__ import annotations

import hashlib
import re
import string
import unicodedata
from functools import lru_cache

_ARTICLE = re.compile(r"^(the|a|an)\s+")
_PUNCT_JOIN = str.maketrans("", "", ".'’`")  # "U.S." -> "us", "O'Brien" -> "obrien"
_PUNCT_SPACE = str.maketrans({c: " " for c in string.punctuation + "“”‘«»–—…"})
#: names and terms recur across a corpus's sentences: their keys and ids are kept, not recomputed
_NAMES = 1 << 16


@lru_cache(maxsize=_NAMES)
def normalize_name(name: str) -> str:
    """The key that merges entity mentions across chunks and extractors.

    Unicode-normalised, casefolded, possessive and leading article removed, punctuation removed
    (dots and apostrophes joined, other marks split words), whitespace collapsed:
    ``"The  U.S. Army's"`` → ``"us army"``.
    """
    s = unicodedata.normalize("NFKC", name).casefold().strip()
    s = re.sub(r"['’]s$", "", s)
    s = s.translate(_PUNCT_JOIN).translate(_PUNCT_SPACE)
    s = " ".join(s.split())
    return _ARTICLE.sub("", s)


def hid(*parts: object) -> str:
    """The id of a node made of `parts` (its kind first): the same parts give the same id in every
    ingest, so re-running work merges into what is there instead of duplicating it."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:32]


@lru_cache(maxsize=_NAMES)
def entity_id(normalized: str) -> str:
    return hid("entity", normalized)


@lru_cache(maxsize=_NAMES)
def term_id(normalized: str) -> str:
    """A ``Term`` of E2GraphRAG's spaCy layer (named entities and common nouns), apart from the KG's ``Entity``."""
    return hid("term", normalized)


@lru_cache(maxsize=_NAMES)
def keyword_id(term: str) -> str:
    return hid("keyword", term)


def predicate_key(predicate: str) -> str:
    """Relations from several chunks merge into one RELATED edge when their predicates agree up to case."""
    return " ".join(predicate.casefold().split())
