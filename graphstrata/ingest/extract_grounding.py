"""What keeps a small model's extraction honest: the JSON schema its reply is constrained to (bounded
lists and strings, so a model that repeats itself stops before the token limit), and grounding —
an entity whose name is not in the chunk's text is dropped, with the relations that need it."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from graphstrata.text.names import normalize_name

if TYPE_CHECKING:
    from graphstrata.ingest.extract import ChunkExtraction

log = logging.getLogger(__name__)

#: Bounds of one chunk's reply: generous for a 1-2k character chunk, small enough that a model
#: looping on one entity is stopped by the grammar, not by max_tokens.
MAX_ENTITIES = 24
MAX_RELATIONS = 24
MAX_UNITS = 12
NAME_CHARS = 100
TEXT_CHARS = 300


def _string(max_length: int, min_length: int = 0) -> dict[str, Any]:
    return {"type": "string", "minLength": min_length, "maxLength": max_length}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def reply_schema(entity_types: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of an extraction reply (the prompt's format, with bounds and the type list)."""
    entity = _object(
        {
            "name": _string(NAME_CHARS, 1),
            "type": {"type": "string", "enum": list(entity_types)},
            "description": _string(TEXT_CHARS),
        }
    )
    relation = _object(
        {
            "subject": _string(NAME_CHARS, 1),
            "predicate": _string(60, 1),
            "object": _string(NAME_CHARS, 1),
            "description": _string(TEXT_CHARS),
        }
    )
    unit = _object(
        {"text": _string(TEXT_CHARS, 1), "entities": {"type": "array", "items": _string(NAME_CHARS, 1), "maxItems": 8}}
    )
    return _object(
        {
            "title": _string(120, 1),
            "description": _string(TEXT_CHARS, 1),
            "entities": {"type": "array", "items": entity, "maxItems": MAX_ENTITIES},
            "relations": {"type": "array", "items": relation, "maxItems": MAX_RELATIONS},
            "semantic_units": {"type": "array", "items": unit, "maxItems": MAX_UNITS},
        }
    )


class Grounding(BaseModel):
    """What grounding removed from one chunk's extraction."""

    entities: list[str] = []
    relations: int = 0


def in_text(name: str, text_key: str) -> bool:
    """``name`` occurs in the text (both normalised as entity names are, compared word-aligned)."""
    key = normalize_name(name)
    return bool(key) and f" {key} " in f" {text_key} "


def ground(x: ChunkExtraction, text: str) -> tuple[ChunkExtraction, Grounding]:
    """``x`` without the entities its text does not mention, nor the relations and unit mentions that
    name them. A model invents entities (a tiny one often does); an invented node would link facts
    the text never states."""
    text_key = normalize_name(text)
    dropped = [e.name for e in x.entities if not in_text(e.name, text_key)]
    if not dropped:
        return x, Grounding()
    gone = {normalize_name(n) for n in dropped}
    relations = [
        r for r in x.relations if normalize_name(r.subject) not in gone and normalize_name(r.object) not in gone
    ]
    units = [
        u.model_copy(update={"entities": [m for m in u.entities if normalize_name(m) not in gone]})
        for u in x.semantic_units
    ]
    kept = x.model_copy(
        update={
            "entities": [e for e in x.entities if normalize_name(e.name) not in gone],
            "relations": relations,
            "semantic_units": units,
        }
    )
    report = Grounding(entities=dropped, relations=len(x.relations) - len(relations))
    log.info("extraction: dropped %d entities not in the text (%s)", len(dropped), ", ".join(dropped[:5]))
    return kept, report
