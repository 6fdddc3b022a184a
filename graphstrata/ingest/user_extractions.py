"""Bring-your-own extractions: a JSON-lines file of documents with their entities and triples (the
OpenIE output HippoRAG writes is one such file), validated line by line, attached to the chunks."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from graphstrata.ingest.extract import (
    ChunkExtraction,
    Entity,
    Relation,
    _coerce_entities,
    _reconcile,
)
from graphstrata.text.names import normalize_name

if TYPE_CHECKING:
    pass


# --------------------------------------------------------------------------------------------
# bring-your-own extractions
# --------------------------------------------------------------------------------------------


class UserExtractionError(ValueError):
    """A ``--extractions`` file is unreadable or has invalid lines; the message names each line."""


#: Keys of a line that hold its triples / entities (HippoRAG's OpenIE output uses the ``extracted_`` ones).
TRIPLE_KEYS = ("triples", "relations", "extracted_triples")
ENTITY_KEYS = ("entities", "extracted_entities")
#: What the optional 4th element of a list triple may hold.
TRIPLE_PROPERTIES = frozenset({"description"})


def triple_problem(value: Any) -> str | None:
    """Why ``value`` is not a triple of the extractions format, or None when it is one.

    A triple is ``[subject, predicate, object]`` of non-empty strings, optionally with a 4th element
    that is an object of the relation's properties (only ``{"description": "a sentence"}``), or an
    object ``{"subject", "predicate", "object", "description"?}``. A 4th *string* is refused: it is
    ambiguous (HippoRAG's 4-element entries hold a split predicate or a qualifier, not a
    description), so it would be stored as the wrong thing.
    """
    if isinstance(value, dict):
        parts = [value.get(k) for k in ("subject", "predicate", "object")]
        extra = {k: v for k, v in value.items() if k not in ("subject", "predicate", "object")}
    elif isinstance(value, list):
        if len(value) not in (3, 4):
            return (
                "a triple has 3 elements [subject, predicate, object] (+ optional {description}), "
                f"got {len(value)} elements"
            )
        parts = value[:3]
        extra = value[3] if len(value) == 4 else {}
        if not isinstance(extra, dict):
            return (
                'the 4th element of a triple must be an object such as {"description": "…"}, '
                f"got {type(extra).__name__} {extra!r} (a qualifier belongs in the predicate or the object)"
            )
    else:
        return f"a triple is a list [subject, predicate, object] or an object, got {type(value).__name__}"
    if any(not isinstance(p, str) or not p.strip() for p in parts):
        return "subject, predicate and object must be non-empty strings"
    unknown = set(extra) - TRIPLE_PROPERTIES
    if unknown:
        return f"unknown triple properties {sorted(unknown)}; allowed: {sorted(TRIPLE_PROPERTIES)}"
    if not isinstance(extra.get("description", ""), str | None):
        return "a triple's description must be a string"
    return None


def entity_problem(value: Any) -> str | None:
    """Why ``value`` is not an entity of the extractions format (a name, or ``{name, type?, description?}``)."""
    name = value.get("name") if isinstance(value, dict) else value
    if not isinstance(value, str | dict):
        return f"an entity is a name or an object with a name, got {type(value).__name__}"
    if not isinstance(name, str) or not name.strip():
        return "an entity needs a non-empty name"
    return None


def _as_relation(value: Any) -> Any:
    if isinstance(value, list):
        subject, predicate, object_, *rest = value
        return {"subject": subject, "predicate": predicate, "object": object_, **(rest[0] if rest else {})}
    return value


class UserDocument(BaseModel):
    """One line of a ``--extractions`` JSON-lines file (format in :func:`read_user_extractions`)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    line: int = Field(description="1-based line number in the file, for reports")
    title: str = Field(min_length=1)
    text: str = Field(min_length=1)
    id: str | None = None
    source: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    entities: list[Entity] = Field(default_factory=list, validation_alias=AliasChoices(*ENTITY_KEYS))
    relations: list[Relation] = Field(default_factory=list, validation_alias=AliasChoices(*TRIPLE_KEYS))

    @field_validator("entities", mode="before")
    @classmethod
    def _entities(cls, v: Any) -> Any:
        if not isinstance(v, list):
            return v  # not a list: pydantic reports it against the line
        problems = [f"[{i}] {p}" for i, e in enumerate(v) if (p := entity_problem(e))]
        if problems:
            raise ValueError("; ".join(problems))
        return [{**e, "extractor": "user"} for e in _coerce_entities(v)]

    @field_validator("relations", mode="before")
    @classmethod
    def _triples(cls, v: Any) -> Any:
        if not isinstance(v, list):
            return v
        problems = [f"[{i}] {p}: {r!r}" for i, r in enumerate(v) if (p := triple_problem(r))]
        if problems:
            raise ValueError("; ".join(problems))
        return [{**_as_relation(r), "extractor": "user"} for r in v]

    @model_validator(mode="after")
    def _consistent(self) -> UserDocument:
        self.entities, self.relations, _ = _reconcile(self.entities, self.relations, [])
        return self


class UserExtractions(BaseModel):
    """A parsed extractions file: its documents and, with ``skip_invalid``, what was left out."""

    documents: list[UserDocument]
    skipped: list[str] = Field(
        default_factory=list, description="one line per skipped triple, entity or document, with its line number"
    )


def _drop_invalid(number: int, data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``data`` without the triples and entities that would fail validation, and a note for each."""
    notes: list[str] = []
    data = dict(data)
    for keys, problem in ((TRIPLE_KEYS, triple_problem), (ENTITY_KEYS, entity_problem)):
        for key in keys:
            items = data.get(key)
            if not isinstance(items, list):
                continue
            kept = []
            for i, item in enumerate(items):
                why = problem(item)
                if why is None:
                    kept.append(item)
                else:
                    notes.append(f"line {number}: {key}[{i}] {json.dumps(item, ensure_ascii=False)}: {why}")
            data[key] = kept
    return data, notes


def read_user_extractions(path: str | Path, *, skip_invalid: bool = False) -> UserExtractions:
    """Read pre-computed extractions, one JSON document per line (blank lines are skipped)::

        {"title": "Marie Curie", "text": "Marie Curie discovered polonium ...",
         "entities": [{"name": "Marie Curie", "type": "PERSON", "description": "physicist"}],
         "triples": [["Marie Curie", "discovered", "polonium"],
                     ["Marie Curie", "won", "Nobel Prize", {"description": "in 1903, with Pierre"}],
                     {"subject": "Marie Curie", "predicate": "born in", "object": "Warsaw",
                      "description": "..."}]}

    Triples follow :func:`triple_problem` (a 4th element is an object of properties, never a bare
    string); entities are names or objects; ``entities[].description`` and a triple's
    ``description`` are optional; triple ends missing from ``entities`` become entities of type
    UNKNOWN; optional ``id``, ``source``, ``metadata``. HippoRAG's OpenIE keys
    ``extracted_entities``/``extracted_triples`` are read as ``entities``/``triples``.

    Strict by default: every line is checked before anything is returned and all invalid lines are
    reported together (:class:`UserExtractionError`), so a bad file never half-ingests. With
    ``skip_invalid`` a bad triple or entity is left out (its document kept), a line that is no valid
    document is left out whole, and each is listed in ``skipped`` with its line number.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserExtractionError(f"{path}: cannot read extractions file: {exc}") from exc
    docs: list[UserDocument] = []
    errors: list[str] = []
    skipped: list[str] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except ValueError as exc:
            errors.append(f"line {number}: not valid JSON ({exc})")
            continue
        if not isinstance(data, dict):
            errors.append(f"line {number}: expected a JSON object, got {type(data).__name__}")
            continue
        if skip_invalid:
            data, notes = _drop_invalid(number, data)
            skipped += notes
        try:
            docs.append(UserDocument.model_validate({**data, "line": number}))
        except ValidationError as exc:
            detail = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)
            )
            errors.append(f"line {number}: {detail}")
    if skip_invalid:
        skipped += [f"{e} (document skipped)" for e in errors]
    elif errors:
        shown = "\n  ".join(errors[:20])
        more = f"\n  … and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise UserExtractionError(
            f"{path}: {len(errors)} invalid line(s):\n  {shown}{more}\n"
            "(--skip-invalid ingests the rest and lists what it left out)"
        )
    if not docs:
        raise UserExtractionError(f"{path}: no documents in file")
    return UserExtractions(documents=docs, skipped=skipped)


def parse_user_extractions(path: str | Path) -> list[UserDocument]:
    """The documents of a valid extractions file (strict :func:`read_user_extractions`)."""
    return read_user_extractions(path).documents


_WORD_EDGE = r"(?<!\w){}(?!\w)"


def occurrences(name: str, text: str) -> int:
    """How often ``name`` occurs in ``text`` as whole words, ignoring case."""
    needle = " ".join(name.split())
    if not needle:
        return 0
    pattern = _WORD_EDGE.format(r"\s+".join(re.escape(w) for w in needle.split(" ")))
    return len(re.findall(pattern, text, flags=re.IGNORECASE))


def attach_user_extractions(doc: UserDocument, chunk_texts: Sequence[str]) -> list[ChunkExtraction]:
    """Spread one bring-your-own document's entities and triples over its chunks.

    An entity goes to every chunk whose text contains its name (whole words, any case); a triple to
    every chunk that contains both its subject and its object, together with those two entities
    (so each chunk's extraction is self-contained). A triple whose ends no single chunk holds goes
    to the first chunk holding either end; what no chunk contains goes to the first chunk: nothing
    the user supplied is dropped. Chunks get the document title as title (the format has no chunk
    titles) and no semantic units.
    """
    if not chunk_texts:
        return []
    by_key = {normalize_name(e.name): e for e in doc.entities}
    entities: list[dict[str, Entity]] = [{} for _ in chunk_texts]
    relations: list[list[Relation]] = [[] for _ in chunk_texts]

    def found(name: str) -> set[int]:
        return {i for i, text in enumerate(chunk_texts) if occurrences(name, text)}

    placed: set[str] = set()
    for r in doc.relations:
        subject, object_ = found(r.subject), found(r.object)
        where = (subject & object_) or {min(subject | object_, default=0)}
        for i in where:
            relations[i].append(r)
            for end in (r.subject, r.object):
                key = normalize_name(end)
                entities[i].setdefault(key, by_key[key])
                placed.add(key)
    for key, e in by_key.items():
        where = found(e.name) or ({0} if key not in placed else set())
        for i in where:
            entities[i].setdefault(key, e)
    return [
        ChunkExtraction(
            title=doc.title,
            description="",
            entities=list(entities[i].values()),
            relations=relations[i],
            extractor="user",
        )
        for i in range(len(chunk_texts))
    ]
