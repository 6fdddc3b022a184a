"""Knowledge extraction from one chunk: entities, relations, semantic units, title and description.

Three extractors share one schema (:class:`ChunkExtraction`), and every object records which one
made it (``extractor``), so the graph never hides where a fact came from:

* ``llm`` — one chat call per chunk (:func:`extract_with_llm`). NodeRAG §2.2 / App. E decomposes a
  chunk into semantic units S, entities N and relationships R; DA-RAG §4.1 adds a title and a
  concise description per chunk for its chunk layer.
* ``spacy`` — the offline substitute (:func:`extract_with_spacy`): spaCy NER + proper-noun chunks,
  dependency subject–verb–object triples, sentences as semantic units, an extractive title.
* ``user`` — bring-your-own extractions from a JSON-lines file (:func:`parse_user_extractions`).

Entities are merged across chunks by :func:`graphstrata.text.names.normalize_name`.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
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
from graphstrata.text.nlp import get_nlp

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

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

    ``schema`` steers the prompt and bounds the result (:class:`ExtractionSchema`). ``params`` go to
    the chat call (e.g. ``response_format={"type": "json_object"}`` for endpoints that support JSON
    mode, ``max_tokens``); they are part of the cache key.
    """
    result = client.chat_json(extraction_messages(chunk_text, schema), ChunkExtraction, stage=stage, **params)
    if schema is not None:
        result = schema.apply(result)
    return result.stamped("llm")


# --------------------------------------------------------------------------------------------
# prompt tuning (after GraphRAG's auto prompt tuning: the domain, its types and a prompt from samples)
# --------------------------------------------------------------------------------------------

TUNE_SYSTEM = "You design the knowledge-graph extraction for a corpus. You reply with one JSON object and nothing else."
TUNE_PROMPT = """\
Below are sample passages of a corpus. Design how an extractor should turn passages of this corpus into
a knowledge graph. Reply with one JSON object with exactly these keys:
- "domain": one sentence saying what the corpus is about;
- "entity_types": 5 to 15 entity types that matter in this domain, UPPER_SNAKE_CASE;
- "relation_types": 5 to 25 short verb phrases for the relations these passages state, lower case
  (or [] to let the extractor use any predicate);
- "prompt": the extractor's instructions for this domain, in the structure of the default below
  (goal, then numbered steps for the title and description, entities, relations, semantic units),
  using the placeholder {{types}} where the entity types go. Do not include the reply format or the text.

Default instructions:
{default}

Sample passages:
{samples}
"""


def tune_messages(samples: Sequence[str]) -> list[dict[str, str]]:
    passages = "\n\n".join(f"[{i}] {t.strip()}" for i, t in enumerate(samples, 1))
    prompt = TUNE_PROMPT.format(default=EXTRACTION_INSTRUCTIONS.strip(), samples=passages)
    return [{"role": "system", "content": TUNE_SYSTEM}, {"role": "user", "content": prompt}]


def tune_schema(client: LLMClient, samples: Sequence[str]) -> ExtractionSchema:
    """A domain schema (types and prompt) drafted by the model from sample chunks, validated."""
    if not samples:
        raise ValueError("no sample text to tune the prompt on")
    return client.chat_json(tune_messages(samples), ExtractionSchema, stage="prompt_tune")


def sample_evenly(items: Sequence[str], n: int) -> list[str]:
    """``n`` items spread over ``items`` (first and last included), in order."""
    if len(items) <= n:
        return list(items)
    step = (len(items) - 1) / max(n - 1, 1)
    return [items[round(i * step)] for i in range(n)]


# --------------------------------------------------------------------------------------------
# no-LLM extraction (spaCy)
# --------------------------------------------------------------------------------------------

_SPACY_TYPES = {
    "PERSON": "PERSON",
    "ORG": "ORGANIZATION",
    "GPE": "LOCATION",
    "LOC": "LOCATION",
    "FAC": "LOCATION",
    "DATE": "DATE",
    "TIME": "DATE",
    "EVENT": "EVENT",
    "WORK_OF_ART": "WORK",
    "PRODUCT": "PRODUCT",
    "NORP": "GROUP",
    "LAW": "LAW",
    "LANGUAGE": "LANGUAGE",
    "MONEY": "QUANTITY",
    "PERCENT": "QUANTITY",
    "QUANTITY": "QUANTITY",
}  # CARDINAL and ORDINAL are left out: bare numbers make noisy graph nodes
_SUBJECT_DEPS = {"nsubj", "nsubjpass", "csubj"}
_OBJECT_DEPS = {"dobj", "attr", "oprd", "dative", "acomp"}
_TITLE_WORDS = 12
_DESCRIPTION_WORDS = 60

_nlp_lock = threading.Lock()


def _span_name(tokens: Iterable[Token]) -> str:
    """Surface name of a span without leading determiners/possessives and trailing ``'s``/punctuation."""
    toks = list(tokens)
    while toks and (toks[0].pos_ in ("DET", "PRON") or toks[0].dep_ in ("det", "poss", "case")):
        toks = toks[1:]
    while toks and (toks[-1].pos_ in ("PART", "PUNCT") or toks[-1].dep_ == "case"):
        toks = toks[:-1]
    if not toks:
        return ""
    return toks[0].doc[toks[0].i : toks[-1].i + 1].text.strip()


class _Mentions:
    """Entity mentions of one doc: token index → (name, type), first-seen order, first sentence."""

    def __init__(self) -> None:
        self.by_token: dict[int, tuple[str, str]] = {}
        self.entities: dict[str, Entity] = {}
        self.counts: Counter[str] = Counter()

    def add(self, span: Span, name: str, type_: str) -> tuple[str, str] | None:
        key = normalize_name(name)
        if not key:
            return None
        if key not in self.entities:
            self.entities[key] = Entity(name=name, type=type_, description=span.sent.text.strip(), extractor="spacy")
        entry = (self.entities[key].name, self.entities[key].type)
        for t in span:
            self.by_token.setdefault(t.i, entry)
        self.counts[key] += 1
        return entry


def _phrase(token: Token, mentions: _Mentions, chunks: dict[int, Span]) -> str | None:
    """The entity a subject/object token stands for: a named entity, or a proper-noun phrase NER
    missed (registered as OTHER). Common nouns ("the town", "a film") and bare numbers name no
    entity: as knowledge-graph nodes they become hubs that join unrelated passages, so a triple
    with such an end is not kept (its sentence stays a semantic unit)."""
    if token.i in mentions.by_token:
        return mentions.by_token[token.i][0]
    if token.pos_ != "PROPN":
        return None  # pronouns, common nouns, numbers
    span = chunks.get(token.i)
    if span is None:
        left = [c for c in token.lefts if c.dep_ in ("compound", "amod", "nmod")]
        span = token.doc[(left[0].i if left else token.i) : token.i + 1]
    name = _span_name(span)
    entry = mentions.add(span, name, "OTHER") if name else None
    return entry[0] if entry else None


def _with_conjuncts(tokens: Iterable[Token]) -> list[Token]:
    out: list[Token] = []
    for t in tokens:
        out += [t, *t.conjuncts]
    return list(dict.fromkeys(out))


def _verb_relations(verb: Token, mentions: _Mentions, chunks: dict[int, Span]) -> list[Relation]:
    """Subject–verb–object triples of one verb, plus ``verb + preposition`` triples (OpenIE-style)."""
    children = list(verb.children)
    subjects = [c for c in children if c.dep_ in _SUBJECT_DEPS]
    if not subjects and verb.dep_ in ("conj", "xcomp") and verb.head.pos_ in ("VERB", "AUX"):
        subjects = [c for c in verb.head.children if c.dep_ in _SUBJECT_DEPS]  # "X founded A and ran B"
    if not subjects:
        return []
    passive = any(c.dep_ in ("nsubjpass", "auxpass") for c in children)
    agents = [g for c in children if c.dep_ == "agent" for g in c.children if g.dep_ == "pobj"]
    objects = [c for c in children if c.dep_ in _OBJECT_DEPS]
    lemma = verb.lemma_.lower()
    particle = " ".join(c.text.lower() for c in children if c.dep_ == "prt")
    if passive and agents:  # "P was discovered by C" -> (C, discover, P)
        subjects, objects, predicate = agents, objects + subjects, lemma
    elif passive:  # "O was born in H" -> (O, born in, H)
        predicate = verb.text.lower()
    else:
        predicate = lemma
    if particle:
        predicate = f"{predicate} {particle}"
    if any(c.dep_ == "neg" for c in children):
        predicate = f"not {predicate}"
    preps = [
        (f"{predicate} {p.text.lower()}", o)
        for p in children
        if p.dep_ == "prep"
        for o in p.children
        if o.dep_ == "pobj"
    ]
    pairs = [(predicate, o) for o in objects] + preps
    sentence = verb.sent.text.strip()
    out: list[Relation] = []
    for s_tok in _with_conjuncts(subjects):
        subject = _phrase(s_tok, mentions, chunks)
        if subject is None:
            continue
        for pred, o_head in pairs:
            for o_tok in _with_conjuncts([o_head]):
                obj = _phrase(o_tok, mentions, chunks)
                if obj is not None:
                    out.append(
                        Relation(
                            subject=subject,
                            predicate=pred,
                            object=obj,
                            description=sentence,
                            extractor="spacy",
                        )
                    )
    return out


def _truncate_words(text: str, n: int) -> str:
    words = text.split()
    return text if len(words) <= n else " ".join(words[:n]) + " …"


def extract_with_spacy(text: str) -> ChunkExtraction:
    """The no-LLM extraction of one chunk, in the LLM's schema (see module docstring)."""
    nlp = get_nlp()
    with _nlp_lock:  # spaCy pipelines are not documented as thread-safe
        doc = nlp(text)
    return _extract_doc(doc)


def extract_many_with_spacy(
    texts: Sequence[str], progress: Callable[[int], None] | None = None, batch_size: int = 32
) -> list[ChunkExtraction]:
    """:func:`extract_with_spacy` of many chunks through one ``nlp.pipe`` (batched: faster at ingest)."""
    out: list[ChunkExtraction] = []
    with _nlp_lock:
        for doc in get_nlp().pipe(texts, batch_size=batch_size):
            out.append(_extract_doc(doc))
            if progress:
                progress(1)
    return out


def _extract_doc(doc: Doc) -> ChunkExtraction:
    mentions = _Mentions()
    for ent in doc.ents:
        if ent.label_ in _SPACY_TYPES:
            name = _span_name(ent)
            if name:
                mentions.add(ent, name, _SPACY_TYPES[ent.label_])
    chunks: dict[int, Span] = {}
    for nc in doc.noun_chunks:
        for t in nc:
            chunks[t.i] = nc
        covered = any(t.i in mentions.by_token for t in nc)
        if nc.root.pos_ == "PROPN" and not covered:  # a proper name NER missed
            name = _span_name(nc)
            if name:
                mentions.add(nc, name, "OTHER")

    relations: list[Relation] = []
    for token in doc:
        if token.pos_ in ("VERB", "AUX"):
            relations += _verb_relations(token, mentions, chunks)

    units: list[SemanticUnit] = []
    for sent in doc.sents:
        sentence = sent.text.strip()
        if not any(t.is_alpha for t in sent):
            continue
        names = [mentions.by_token[t.i][0] for t in sent if t.i in mentions.by_token]
        units.append(SemanticUnit(text=sentence, entities=list(dict.fromkeys(names)), extractor="spacy"))

    sentences = [u.text for u in units]
    title = _truncate_words(sentences[0], _TITLE_WORDS) if sentences else ""
    lead = _truncate_words(" ".join(sentences[:3]), _DESCRIPTION_WORDS)
    key_phrases = [mentions.entities[k].name for k, _ in mentions.counts.most_common(5)]
    description = f"{lead} Key phrases: {', '.join(key_phrases)}." if key_phrases else lead
    return ChunkExtraction(
        title=title,
        description=description.strip(),
        entities=list(mentions.entities.values()),
        relations=relations,
        semantic_units=units,
        extractor="spacy",
    )


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
