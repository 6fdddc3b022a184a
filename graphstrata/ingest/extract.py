"""Knowledge extraction from one chunk: entities, relations, semantic units, title and description.

Three extractors share one schema (:class:`ChunkExtraction`), and every object records which one
made it (``extractor``), so the graph never hides where a fact came from:

* ``llm`` — one chat call per chunk (:func:`extract_with_llm`). NodeRAG §2.2 / App. E decomposes a
  chunk into semantic units S, entities N and relationships R; DA-RAG §4.1 adds a title and a
  concise description per chunk for its chunk layer.
* ``spacy`` — the offline substitute (:mod:`graphstrata.ingest.extract_spacy`): spaCy NER + proper-noun chunks,
  dependency subject–verb–object triples, sentences as semantic units, an extractive title.
* ``user`` — bring-your-own extractions from a JSON-lines file (:mod:`graphstrata.ingest.user_extractions`).

Entities are merged across chunks by :func:`graphstrata.text.names.normalize_name`.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from graphstrata.text.names import normalize_name

if TYPE_CHECKING:
    from graphstrata.db import Database
    from graphstrata.llm import LLMClient

Extractor = Literal["llm", "spacy", "user"]

#: Entity types the prompt offers; spaCy labels are mapped onto the same vocabulary.
ENTITY_TYPES = (
    "PERSON",
    "ORGANIZATION",
    "LOCATION",
    "DATE",
    "EVENT",
    "WORK",
    "PRODUCT",
    "GROUP",
    "LAW",
    "LANGUAGE",
    "QUANTITY",
    "CONCEPT",
    "OTHER",
)
UNKNOWN_TYPE = "UNKNOWN"  # an entity only referred to by a relation or unit, never typed


# --------------------------------------------------------------------------------------------
# schema
# --------------------------------------------------------------------------------------------


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)
    #: Default "llm" because a model's JSON does not say who made it; other extractors set it.
    extractor: Extractor = "llm"


class Entity(_Item):
    """NodeRAG N / DA-RAG KG-layer node."""

    name: str = Field(min_length=1)
    type: str = UNKNOWN_TYPE
    description: str = ""

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> str:
        text = re.sub(r"[^A-Za-z0-9]+", "_", str(v or "")).strip("_").upper()
        return text or UNKNOWN_TYPE

    @field_validator("description", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v


class Relation(_Item):
    """An edge subject -predicate-> object; NodeRAG nodalizes it as an R node (§2.2)."""

    subject: str = Field(min_length=1, validation_alias=AliasChoices("subject", "source", "head"))
    predicate: str = Field(min_length=1, validation_alias=AliasChoices("predicate", "relation", "relationship"))
    object: str = Field(min_length=1, validation_alias=AliasChoices("object", "target", "tail"))
    description: str = ""

    @field_validator("description", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v


class SemanticUnit(_Item):
    """NodeRAG S: one self-contained event statement and the entities it mentions (§2.2)."""

    text: str = Field(min_length=1)
    entities: list[str] = Field(default_factory=list)


def _coerce_entities(v: Any) -> Any:
    """Models sometimes list entity names as bare strings."""
    return [{"name": e} if isinstance(e, str) else e for e in v] if isinstance(v, list) else v


def _coerce_relations(v: Any) -> Any:
    """Accept ``[subject, predicate, object]`` or ``[s, p, o, description]`` as well as objects."""
    if not isinstance(v, list):
        return v
    out = []
    for r in v:
        if isinstance(r, list | tuple) and len(r) in (3, 4):
            out.append(dict(zip(("subject", "predicate", "object", "description"), r, strict=False)))
        else:
            out.append(r)
    return out


def _reconcile(
    entities: list[Entity], relations: list[Relation], units: list[SemanticUnit]
) -> tuple[list[Entity], list[Relation], list[SemanticUnit]]:
    """Make one extraction self-consistent, whatever produced it.

    Duplicate entities (same normalised name) are merged, descriptions combined; relation ends and
    unit mentions are rewritten to the canonical entity name, and names that no entity declares are
    added as ``UNKNOWN`` entities, so every edge written to the graph has both ends. Relations
    without distinct ends and duplicate relations are dropped.
    """
    by_key: dict[str, Entity] = {}
    for e in entities:
        key = normalize_name(e.name)
        if not key:
            continue
        seen = by_key.get(key)
        if seen is None:
            by_key[key] = e.model_copy()
            continue
        if seen.type == UNKNOWN_TYPE and e.type != UNKNOWN_TYPE:
            seen.type = e.type
        if e.description and e.description not in seen.description:
            seen.description = f"{seen.description} {e.description}".strip()

    def canonical(name: str, extractor: Extractor) -> str | None:
        key = normalize_name(name)
        if not key:
            return None
        if key not in by_key:
            by_key[key] = Entity(name=name, extractor=extractor)
        return by_key[key].name

    rels: list[Relation] = []
    seen_rels: set[tuple[str, str, str]] = set()
    for r in relations:
        s, o = canonical(r.subject, r.extractor), canonical(r.object, r.extractor)
        if s is None or o is None or normalize_name(s) == normalize_name(o):
            continue
        sig = (normalize_name(s), r.predicate.casefold(), normalize_name(o))
        if sig in seen_rels:
            continue
        seen_rels.add(sig)
        rels.append(r.model_copy(update={"subject": s, "object": o}))

    out_units: list[SemanticUnit] = []
    for u in units:
        names = [n for n in (canonical(m, u.extractor) for m in u.entities) if n is not None]
        out_units.append(u.model_copy(update={"entities": list(dict.fromkeys(names))}))
    return list(by_key.values()), rels, out_units


class ChunkExtraction(_Item):
    """Everything extracted from one chunk; the JSON an extraction prompt asks for."""

    title: str
    description: str
    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    semantic_units: list[SemanticUnit] = Field(default_factory=list)

    @field_validator("entities", mode="before")
    @classmethod
    def _entities(cls, v: Any) -> Any:
        return _coerce_entities(v)

    @field_validator("relations", mode="before")
    @classmethod
    def _relations(cls, v: Any) -> Any:
        return _coerce_relations(v)

    @field_validator("semantic_units", mode="before")
    @classmethod
    def _units(cls, v: Any) -> Any:
        return [{"text": u} if isinstance(u, str) else u for u in v] if isinstance(v, list) else v

    @model_validator(mode="after")
    def _consistent(self) -> ChunkExtraction:
        self.entities, self.relations, self.semantic_units = _reconcile(
            self.entities, self.relations, self.semantic_units
        )
        return self

    def stamped(self, extractor: Extractor) -> ChunkExtraction:
        """A copy in which this object and everything in it records ``extractor``."""
        return self.model_copy(
            update={
                "extractor": extractor,
                "entities": [e.model_copy(update={"extractor": extractor}) for e in self.entities],
                "relations": [r.model_copy(update={"extractor": extractor}) for r in self.relations],
                "semantic_units": [u.model_copy(update={"extractor": extractor}) for u in self.semantic_units],
            }
        )

    def llm_json(self) -> dict[str, Any]:
        """The JSON a model is asked to return (no ``extractor`` fields)."""
        return _drop_key(self.model_dump(mode="json"), "extractor")


def _drop_key(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return {k: _drop_key(v, key) for k, v in value.items() if k != key}
    if isinstance(value, list):
        return [_drop_key(v, key) for v in value]
    return value


# --------------------------------------------------------------------------------------------
# LLM extraction
# --------------------------------------------------------------------------------------------

TEXT_BEGIN = "-----BEGIN TEXT-----"
TEXT_END = "-----END TEXT-----"

EXTRACTION_SYSTEM = (
    "You are an information extraction system that turns text into a knowledge graph. "
    "You reply with one JSON object and nothing else."
)

# After NodeRAG's text-decomposition prompt (App. E: semantic units, entities, relationships) and
# DA-RAG's chunk layer (§4.1: a title and a concise description per chunk).
EXTRACTION_PROMPT = """\
-Goal-
Decompose the text below into a small knowledge graph.

-Steps-
1. Give the text a short "title" (at most 12 words) and a concise "description" (1-3 sentences)
   of what it is about.
2. Extract all "entities" from the original text: people, organizations, locations, dates and
   times, events, works, products, groups and the important concepts. Use each entity's full name
   as written in the text. "type" is one of: {types}. "description" is one sentence on the entity
   as the text presents it.
3. From the entities of step 2, list the "relations" stated in the text: "subject" and "object"
   are entity names from step 2, "predicate" is a short verb phrase, "description" is one sentence
   stating the relation as the text does.
4. Segment the text into "semantic_units": independent events or facts, each paraphrased as one
   self-contained statement that keeps all crucial details (replace pronouns by names), with the
   names of the step-2 entities it mentions.

Use only information in the text. Reply with one JSON object in exactly this format:
{{
  "title": "...",
  "description": "...",
  "entities": [{{"name": "...", "type": "PERSON", "description": "..."}}],
  "relations": [{{"subject": "...", "predicate": "...", "object": "...", "description": "..."}}],
  "semantic_units": [{{"text": "...", "entities": ["...", "..."]}}]
}}

{begin}
{text}
{end}
"""


# The part of the prompt a schema's `prompt` replaces (the goal and steps); the reply format and the
# text markers always follow, so every prompt is parsed the same way.
_STEPS_END = "Use only information in the text."
EXTRACTION_INSTRUCTIONS = EXTRACTION_PROMPT[: EXTRACTION_PROMPT.index(_STEPS_END)]
_REPLY_FORMAT = EXTRACTION_PROMPT[EXTRACTION_PROMPT.index(_STEPS_END) :]


def _type_name(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", value).strip("_").upper()


class ExtractionSchema(BaseModel):
    """What LLM extraction looks for (GraphRAG's entity types / neo4j-graphrag's schema): a JSON file
    given to ``graphstrata ingest --schema`` or drafted by ``graphstrata prompt-tune``.

    ``entity_types`` replace the built-in 13 (an entity the model types otherwise is stored as
    ``OTHER``); ``relation_types``, when given, are the only predicates kept; ``prompt`` replaces the
    goal and steps of the extraction prompt (the reply format and the text always follow it). The
    schema's fingerprint is recorded on the graph, so a later ingest with another schema is refused.
    """

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    domain: str = Field("", description="what the corpus is about (informative; recorded with the schema)")
    entity_types: list[str] = Field(default_factory=lambda: list(ENTITY_TYPES), min_length=1, max_length=50)
    relation_types: list[str] = Field(default_factory=list, max_length=100)
    prompt: str | None = Field(
        None, description="instructions replacing the default goal and steps; `{types}` is replaced by the types"
    )

    @field_validator("entity_types")
    @classmethod
    def _entity_types(cls, v: list[str]) -> list[str]:
        names = [_type_name(t) for t in v]
        if not all(names):
            raise ValueError("entity types must contain letters or digits")
        return list(dict.fromkeys([*names, "OTHER"]))

    @field_validator("relation_types")
    @classmethod
    def _relation_types(cls, v: list[str]) -> list[str]:
        names = [" ".join(t.casefold().split()) for t in v]
        if not all(names):
            raise ValueError("relation types must not be empty")
        return list(dict.fromkeys(names))

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, v: str | None) -> str | None:
        if v is not None and (TEXT_BEGIN in v or TEXT_END in v):
            raise ValueError("the prompt must not contain the text markers: the text is appended to it")
        return v or None

    @classmethod
    def from_file(cls, path: str | Path) -> ExtractionSchema:
        """Read and validate a schema file (JSON); :class:`ValueError` names what is wrong."""
        try:
            return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))
        except OSError as e:
            raise ValueError(f"{path}: cannot read the schema file: {e}") from e
        except ValidationError as e:
            detail = "; ".join(f"{'.'.join(map(str, x['loc'])) or '(file)'}: {x['msg']}" for x in e.errors())
            raise ValueError(f"{path}: not a valid extraction schema: {detail}") from e

    def fingerprint(self) -> str:
        """A short hash of what changes extraction (not the informative ``domain``)."""
        data = self.model_dump(mode="json", exclude={"domain"})
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]

    def summary(self) -> str:
        rels = f"; relation types {', '.join(self.relation_types)}" if self.relation_types else ""
        prompt = "; own prompt" if self.prompt else ""
        return f"entity types {', '.join(self.entity_types)}{rels}{prompt} [{self.fingerprint()}]"

    def apply(self, x: ChunkExtraction) -> ChunkExtraction:
        """``x`` within the schema: other entity types become OTHER, other predicates are dropped."""
        allowed = set(self.entity_types)
        entities = [
            e if e.type in allowed | {UNKNOWN_TYPE} else e.model_copy(update={"type": "OTHER"}) for e in x.entities
        ]
        relations = x.relations
        if self.relation_types:
            keep = set(self.relation_types)
            relations = [r for r in relations if " ".join(r.predicate.casefold().split()) in keep]
        return x.model_copy(update={"entities": entities, "relations": relations})


DEFAULT_SCHEMA = ExtractionSchema()


class ExtractionSchemaMismatch(ValueError):
    """An LLM ingest would extract with another schema than the one recorded on the graph."""


def record_schema(db: Database, schema: ExtractionSchema | None, allow_change: bool = False) -> None:
    """Record ``schema`` (None: the built-in one) on the graph before an LLM extraction, or refuse it
    when the graph's documents were extracted under another one: unchanged documents are never
    re-extracted, so mixing schemas would leave a graph typed two ways."""
    from graphstrata.cypher import query

    schema = schema or DEFAULT_SCHEMA
    row = db.read_one(query("meta.get_extraction_schema"))
    recorded = row["fingerprint"] if row else None
    if recorded and recorded != schema.fingerprint() and not allow_change:
        before = ExtractionSchema.model_validate_json(row["schema"])
        raise ExtractionSchemaMismatch(
            f"this graph was extracted with another schema ({before.summary()}); this ingest asks for "
            f"{schema.summary()}. Use the same schema, ingest into another database, or allow the change "
            "(--allow-schema-change) to mix them deliberately"
        )
    if recorded != schema.fingerprint():
        db.write(query("meta.set_extraction_schema"), schema=schema.model_dump_json(), fingerprint=schema.fingerprint())


def extraction_messages(chunk_text: str, schema: ExtractionSchema | None = None) -> list[dict[str, str]]:
    """The chat messages of one extraction call (NodeRAG-style: one call per chunk)."""
    schema = schema or DEFAULT_SCHEMA
    steps = schema.prompt if schema.prompt is not None else EXTRACTION_INSTRUCTIONS
    if schema.relation_types:
        steps += f'\n"predicate" is one of: {", ".join(schema.relation_types)}.\n'
    template = steps.rstrip("\n") + "\n\n" + _REPLY_FORMAT
    prompt = template.replace("{types}", ", ".join(schema.entity_types))
    prompt = prompt.replace("{{", "{").replace("}}", "}").replace("{begin}", TEXT_BEGIN).replace("{end}", TEXT_END)
    prompt = prompt.replace("{text}", chunk_text)
    return [{"role": "system", "content": EXTRACTION_SYSTEM}, {"role": "user", "content": prompt}]


def text_from_extraction_prompt(prompt: str) -> str | None:
    """The chunk text inside an extraction prompt (None if ``prompt`` is not one); for fakes and logs."""
    start = prompt.find(TEXT_BEGIN)
    end = prompt.rfind(TEXT_END)
    if start < 0 or end < start:
        return None
    return prompt[start + len(TEXT_BEGIN) : end].strip("\n")


def extract_with_llm(
    client: LLMClient,
    chunk_text: str,
    *,
    stage: str = "extract",
    schema: ExtractionSchema | None = None,
    **params: Any,
) -> ChunkExtraction:
    """One validated extraction per chunk; raises ``ExtractionFailed`` (never returns half data).

    ``schema`` steers the prompt and bounds the result (:class:`ExtractionSchema`); the reply is
    constrained to :func:`~graphstrata.ingest.extract_grounding.reply_schema` where the endpoint
    supports JSON schemas, and grounded in the text (:mod:`graphstrata.ingest.extract_grounding`).
    ``params`` go to the chat call (e.g. ``response_format={"type": "json_object"}`` for endpoints that support JSON
    mode, ``max_tokens``); they are part of the cache key.
    """
    from graphstrata.ingest.extract_grounding import ground, reply_schema

    types = (schema or DEFAULT_SCHEMA).entity_types
    messages = extraction_messages(chunk_text, schema)
    result = client.chat_json(messages, ChunkExtraction, stage=stage, json_schema=reply_schema(types), **params)
    result, _dropped = ground(result, chunk_text)  # entities the text does not mention are the model's own
    if schema is not None:
        result = schema.apply(result)
    return result.stamped("llm")
