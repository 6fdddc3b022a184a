"""What several chunks share, kept as counts: an entity's names, types, descriptions and extractors
(from its MENTIONS records), a term's name and type (HAS_TERM records), a RELATED edge's weight,
descriptions and extractors (its Relation nodes).

Each aggregate node or edge stores its tally (``_tally``, JSON: field -> value -> number of records)
beside the properties derived from it. A write adds the records it writes and subtracts those of the
documents it removes, so its cost follows the batch, not the number of chunks that already mention a
hub entity (re-reading every MENTIONS record of a hub per batch made ingest slower with every
passage). An aggregate without a tally (new in this transaction, or written before tallies) is
counted once from its records. Counts commute, and the derived values break every tie by text, so
any history of ingests, replacements and deletions ends with the values and tallies a fresh ingest
of the end state writes.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: A tally: field -> value -> number of records that give it.
Tally = dict[str, Counter]

#: Extractors whose entity types come first (the spaCy NER label next, the no-LLM extractor's last).
TYPED_BY = ("llm", "user")
UNKNOWN = "UNKNOWN"


def mention_facts(m: Mapping[str, Any]) -> dict[str, list[str]]:
    """What one MENTIONS record (keys name, label, extractor, type, description) says of its entity.

    Types are ranked: ``0:`` an LLM's or the user's type, ``1:`` the spaCy NER label, ``2:`` the no-LLM
    extractor's type; extractors count the spaCy pass as ``spacy`` when it saw the name (a label)."""
    x, t = m["extractor"], m["type"]
    ranked = ((0, t if x in TYPED_BY else None), (1, m["label"]), (2, t if x == "spacy" else None))
    return {
        "names": [m["name"]] if m["name"] is not None else [],
        "types": [f"{rank}:{v}" for rank, v in ranked if v is not None and v != UNKNOWN],
        "extractors": sorted({v for v in (x, "spacy" if m["label"] is not None else None) if v is not None}),
        "descriptions": [m["description"]] if m["description"] is not None else [],
    }


def term_facts(h: Mapping[str, Any]) -> dict[str, list[str]]:
    """What one HAS_TERM record (keys name, type) says of its term: the (name, type) pair it gives."""
    return {"forms": [json.dumps([h["name"], h["type"]], ensure_ascii=False)]}


def relation_facts(x: Mapping[str, Any]) -> dict[str, list[str]]:
    """What one Relation node (keys description, extractor) adds to its RELATED edge: one count under
    its extractor (``""`` for none), so the edge's weight is the sum of ``extractors``."""
    return {
        "extractors": [x["extractor"] if x["extractor"] is not None else ""],
        "descriptions": [x["description"]] if x["description"] is not None else [],
    }


def _counts() -> Tally:
    return defaultdict(Counter)


@dataclass
class Delta:
    """The records a transaction writes (``adds``) and removes, per aggregate key."""

    adds: dict[Any, Tally] = field(default_factory=lambda: defaultdict(_counts))
    removes: dict[Any, Tally] = field(default_factory=lambda: defaultdict(_counts))

    def add(self, key: Any, facts: Mapping[str, Iterable[str]], removed: bool = False) -> None:
        t = (self.removes if removed else self.adds)[key]
        for f, values in facts.items():
            t[f].update(values)  # an empty field still marks the key as touched

    def keys(self) -> list:
        return sorted(self.adds.keys() | self.removes.keys())

    def applied(self, key: Any, base: Tally, removes: bool = True) -> Tally:
        """The committed tally with this transaction's records added and (``removes``) removed."""
        out: Tally = _counts()
        for f, c in base.items():
            out[f].update(c)
        for f, c in self.adds.get(key, {}).items():
            out[f].update(c)
        for f, c in self.removes.get(key, {}).items() if removes else ():
            out[f].subtract(c)
        for c in out.values():
            for v in [v for v, k in c.items() if k <= 0]:
                del c[v]
        return out


@dataclass
class Changes:
    """What a transaction changes in the shared aggregates: entities (by id), terms (by id) and
    RELATED edges (by subject id, predicate, object id)."""

    entities: Delta = field(default_factory=Delta)
    terms: Delta = field(default_factory=Delta)
    related: Delta = field(default_factory=Delta)


def load(text: str) -> Tally:
    out = _counts()
    for f, vs in json.loads(text).items():
        out[f].update(vs)
    return out


def dump(t: Tally) -> str:
    """Sorted and without zeros: equal tallies are equal strings, whatever the history."""
    return json.dumps(
        {f: dict(sorted((v, k) for v, k in c.items() if k > 0)) for f, c in sorted(t.items())},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def from_records(records: Iterable[Mapping[str, Any]], facts: Callable[[Mapping[str, Any]], dict]) -> Tally:
    """A tally counted from an aggregate's records in the graph."""
    out: Tally = _counts()
    for r in records:
        for f, values in facts(r).items():
            out[f].update(values)
    return out


def _most(c: Counter, limit: int) -> list[str]:
    """The most counted values, ties by text."""
    return [v for v, _ in sorted(c.items(), key=lambda vk: (-vk[1], vk[0]))[:limit]]


def _joined(ds: list[str]) -> dict[str, Any]:
    return {"descriptions": ds or None, "description": " ".join(ds) if ds else None}


def entity_properties(t: Tally, max_descriptions: int) -> dict[str, Any]:
    """name (the surface form most chunks use; None: keep the current one), type (the best-ranked,
    then the most frequent), descriptions (most asserted first) and description, extractors, source."""
    names = _most(t["names"], 1)
    types = sorted(t["types"].items(), key=lambda vk: (vk[0].split(":", 1)[0], -vk[1], vk[0]))
    xs = sorted(t["extractors"])
    return {
        "name": names[0] if names else None,
        "type": types[0][0].split(":", 1)[1] if types else UNKNOWN,
        "extractors": xs,
        "source": "llm" if "llm" in xs else "user" if "user" in xs else "spacy",
        **_joined(_most(t["descriptions"], max_descriptions)),
    }


def term_properties(t: Tally) -> dict[str, Any]:
    """The (name, type) pair most chunks give, ties by name then type (a missing type last)."""
    counts = {tuple(json.loads(f)): k for f, k in t["forms"].items()}
    if not counts:
        return {"name": None, "type": None}
    name, typ = min(counts, key=lambda nt: (-counts[nt], nt[0], nt[1] is None, nt[1] or ""))
    return {"name": name, "type": typ}


def related_properties(t: Tally, max_descriptions: int) -> dict[str, Any]:
    """weight (the number of chunks asserting it; 0: the edge goes), extractors, descriptions."""
    return {
        "weight": sum(t["extractors"].values()),
        "extractors": sorted(x for x in t["extractors"] if x),
        **_joined(_most(t["descriptions"], max_descriptions)),
    }
