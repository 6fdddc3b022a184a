"""Entity resolution by synonym links (HippoRAG 2, arXiv:2502.14802 §3: synonym edges between
entities whose name embeddings are close), with string rules for what embeddings of short names
miss. Pure functions: the augment stage ``entity_synonyms`` reads the entities and writes the links.

Rules, each giving a link ``(a, b, score, rule)`` with ``a < b`` by id:

- ``qualifier``: "X (film)" and "X": a name equal to another once a trailing parenthesised qualifier
  is removed (score 1).
- ``acronym``: a one-word name equal to the initials of a name of three or more words ("BBC",
  "British Broadcasting Corporation"); words like "of"/"the" are skipped in the initials (score 1).
- ``embedding``: name embeddings with cosine >= ``threshold`` (score = the cosine).

Two entities whose types are both known and differ are never linked: "Leland" the town (GPE) and a
person "Leland" stay apart however close their names.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

UNTYPED = {"", "UNKNOWN", "OTHER", "CONCEPT", None}
_QUALIFIER = re.compile(r"^(.*\S)\s*\([^()]*\)\s*$")
_MINOR = {"of", "the", "and", "for", "in", "on", "at", "a", "an", "de", "la"}


@dataclass(frozen=True)
class Named:
    id: str
    name: str  # surface name
    normalized: str
    type: str | None = None


def compatible(a: Named, b: Named) -> bool:
    return a.type in UNTYPED or b.type in UNTYPED or a.type == b.type


def without_qualifier(name: str) -> str | None:
    m = _QUALIFIER.match(name.strip())
    return m.group(1).strip() if m else None


def initials(normalized: str) -> str | None:
    words = [w for w in normalized.split() if w not in _MINOR]
    return "".join(w[0] for w in words) if len(words) >= 3 else None


def _pair(a: Named, b: Named, score: float, rule: str) -> tuple[str, str, float, str]:
    x, y = sorted((a.id, b.id))
    return x, y, score, rule


def string_links(entities: Iterable[Named], normalize) -> list[tuple[str, str, float, str]]:
    """Links by the qualifier and acronym rules; ``normalize`` is the ingest's name normaliser."""
    ents = list(entities)
    by_norm: dict[str, list[Named]] = defaultdict(list)
    for e in ents:
        by_norm[e.normalized].append(e)
    out = []
    for e in ents:
        base = without_qualifier(e.name)
        if base:
            for other in by_norm.get(normalize(base), []):
                if other.id != e.id and compatible(e, other):
                    out.append(_pair(e, other, 1.0, "qualifier"))
        ini = initials(e.normalized)
        if ini:
            for other in by_norm.get(ini, []):
                if other.id != e.id and compatible(e, other):
                    out.append(_pair(e, other, 1.0, "acronym"))
    return out


def embedding_links(
    entities: list[Named], vectors: np.ndarray, threshold: float, block: int = 2048
) -> list[tuple[str, str, float, str]]:
    """Pairs with cosine >= threshold (exact, blocked matrix products; vectors need not be unit)."""
    if len(entities) < 2:
        return []
    v = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    out = []
    for start in range(0, len(v), block):
        sims = v[start : start + block] @ v[start:].T  # the pairs i < j only: the block and what follows
        rows, cols = np.nonzero(sims >= threshold)
        for i, j in zip(rows + start, cols + start, strict=True):
            if i < j and compatible(entities[i], entities[j]):
                out.append(_pair(entities[i], entities[j], float(sims[i - start, j - start]), "embedding"))
    return out


def ivf_links(
    entities: list[Named], vectors: np.ndarray, threshold: float, cell_size: int, nprobe: int
) -> list[tuple[str, str, float, str]]:
    """:func:`embedding_links` by the inverted file of :mod:`graphstrata.algorithms.ann`: the pairs of
    cosine >= threshold that share a probed cell (near-linear; a pair of cosine 0.9 almost always does)."""
    from graphstrata.algorithms.ann import ivf_pairs

    out = []
    for i, j, s in zip(*(a.tolist() for a in ivf_pairs(vectors, threshold, cell_size, nprobe)), strict=True):
        if compatible(entities[i], entities[j]):
            out.append(_pair(entities[i], entities[j], float(s), "embedding"))
    return out


def merge_links(*groups: list[tuple[str, str, float, str]]) -> list[dict]:
    """One link per pair: the best score, the rules that found it."""
    best: dict[tuple[str, str], dict] = {}
    for group in groups:
        for a, b, score, rule in group:
            row = best.setdefault((a, b), {"a": a, "b": b, "score": score, "rules": []})
            row["score"] = max(row["score"], score)
            if rule not in row["rules"]:
                row["rules"].append(rule)
    return sorted(best.values(), key=lambda r: (r["a"], r["b"]))
