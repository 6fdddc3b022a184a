"""Query linking: from a question to the knowledge graph's ``Entity`` nodes.

1. Query entities (:func:`question_entities`): the LLM's list when one is configured (one call per
   question, cached on disk by the LLM client and in memory here, so every method asking for the
   same question shares it), else spaCy's named entities plus runs of proper nouns — the names the
   spaCy extractor puts in the KG. Common nouns are not query entities: they are not in the KG.
2. Linking (:func:`link_entities`, one round trip): a query entity links to the entity with the
   same normalised name; failing that, to the entities whose names contain all of its words
   (full-text, word level: "Nolan" → "Christopher Nolan"), best three by Lucene score; then to the
   ``SYNONYM`` neighbours of those (entity resolution, augment stage ``entity_synonyms``).
3. Node specificity (HippoRAG's s_i = 1/|P_i|): each linked entity carries ``1 / chunks mentioning
   it``, so a rare entity seeds more than one that every passage names.
4. The same round trip matches the names on overview titles (NodeRAG's O, the accurate search's
   other half): fused, HippoRAG and NodeRAG then share one read, and NodeRAG's accurate search is
   one round trip after the parse, not two.

References: HippoRAG 2 (arXiv:2502.14802) §3 (query-to-triple/entity linking, synonym edges, node
specificity); NodeRAG (arXiv:2504.11544) §2.5 (accurate search of the query entities on N and O).
"""

from __future__ import annotations

import contextlib
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from pydantic import BaseModel, Field

from graphstrata.cypher import query
from graphstrata.retrieval.baselines import MAX_CLAUSE_WORDS
from graphstrata.retrieval.shared import single_flight
from graphstrata.text.names import normalize_name
from graphstrata.text.nlp import SKIP_ENTITY_LABELS, query_doc

if TYPE_CHECKING:
    from graphstrata.config import Settings
    from graphstrata.db import Database
    from graphstrata.llm import LLMClient

LLM_STAGE = "query_entities"
QUERY_ENTITIES_PROMPT = (
    "List the named entities (people, places, organisations, works, events, products, dates) that the "
    "question mentions, exactly as written in it. Do not answer the question and do not add entities it "
    'does not name. Reply as JSON: {"entities": ["..."]}.'
)


class QueryEntities(BaseModel):
    entities: list[str] = Field(default_factory=list, max_length=50)


#: overview titles the accurate search keeps (best full-text matches of the query's names)
OVERVIEW_K = 5


class LinkedEntity(BaseModel):
    id: str
    name: str
    query_name: str = Field(description="the query entity it was linked from")
    via: str = Field(description="exact | words | synonym")
    score: float = Field(description="1 for an exact match; the normalised full-text or synonym score")
    chunks: int = Field(description="chunks mentioning it")

    @property
    def specificity(self) -> float:
        return 1.0 / max(1, self.chunks)


class Linked(NamedTuple):
    """What the query's names match: KG entities (N), and overview titles (O) as rows ``{id, label,
    via: 'exact', score}`` (NodeRAG's entry points; other methods ignore them)."""

    entities: list[LinkedEntity]
    overviews: list[dict]


def spacy_query_entities(question: str) -> list[str]:
    """Named entities and runs of proper nouns (tagger only; no parser for a one-sentence question)."""
    return list(single_flight(("spacy_names", question), lambda: _spacy_names(question)))


def clear_cache() -> None:
    """Forget the questions' entities and parses (benchmarks time each method without the others' work)."""
    from graphstrata.text import nlp

    _spacy_names.cache_clear()
    _CACHE.clear()
    nlp.clear_cache()


@lru_cache(maxsize=1024)  # methods fused on one question share the parse
def _spacy_names(question: str) -> tuple[str, ...]:
    doc = query_doc(question)
    names: list[str] = []
    covered: set[int] = set()
    for ent in doc.ents:
        if ent.label_ not in SKIP_ENTITY_LABELS:
            names.append(ent.text.strip())
            covered.update(range(ent.start, ent.end))
    run: list[str] = []
    for tok in [*doc, None]:
        if tok is not None and tok.pos_ == "PROPN" and tok.i not in covered:
            run.append(tok.text)
            continue
        if run:
            names.append(" ".join(run))
            run = []
    return tuple(n for n in dict.fromkeys(names) if normalize_name(n))


# question + endpoint + model -> entities; failures are not kept (the next call retries)
_CACHE: dict[tuple[str, str, str], list[str]] = {}


def _llm_entities(question: str, settings: Settings, client: LLMClient | None = None) -> list[str] | None:
    from graphstrata.llm import LLMClient, LLMError

    key = (question, settings.openai_base_url or "", settings.chat_model or "")
    if key in _CACHE:
        return _CACHE[key]
    with contextlib.nullcontext(client) if client is not None else LLMClient.from_settings(settings) as llm:
        try:
            reply = llm.chat_json(
                [
                    {"role": "system", "content": QUERY_ENTITIES_PROMPT},
                    {"role": "user", "content": f"Question: {question}"},
                ],
                QueryEntities,
                stage=LLM_STAGE,
            )
        except LLMError:
            return None
    if len(_CACHE) >= 4096:
        _CACHE.clear()
    _CACHE[key] = [e.strip() for e in reply.entities if e.strip() and normalize_name(e)]
    return _CACHE[key]


def question_entities(question: str, settings: Settings, client: LLMClient | None = None) -> tuple[list[str], str]:
    """The question's entities and where they came from (``llm`` or ``spacy``; ``spacy`` also when
    the LLM call fails). ``client``: the caller's shared LLM client (else one is opened for the call)."""
    if settings.llm_enabled:
        found = _llm_entities(question, settings, client)
        if found is not None:
            return list(found), "llm"
    return spacy_query_entities(question), "spacy"


def _lucene_words(name: str) -> str:
    """All words of a name, each quoted (so Lucene syntax in a question is only text)."""
    words = [w for w in normalize_name(name).split() if w]
    return " AND ".join(f'"{w}"' for w in words[:8])


def mentioned_entities(db: Database, question: str, settings: Settings, client: LLMClient | None = None) -> list[str]:
    """The ids of the graph entities the question names: :func:`question_entities`, then
    :func:`link_entities` (what KET-RAG's mention seeds and SG-RAG's widened fallback start from)."""
    names, _ = question_entities(question, settings, client)
    return [e.id for e in link_entities(db, names).entities]


def link_entities(db: Database, names: list[str], per_name: int = 3) -> Linked:
    """Query entity names → KG entities (exact, else word-level full-text), plus their synonyms, and the
    overview titles that match them. Methods linking the same names at the same time (fusion's
    HippoRAG and NodeRAG) share one read. A very long question links its first MAX_CLAUSE_WORDS names
    (Lucene's clause limit), whoever asks."""
    names = names[:MAX_CLAUSE_WORDS]
    if not names:
        return Linked([], [])
    key = ("link_entities", id(db), tuple(names), per_name)
    return single_flight(key, lambda: _link_entities(db, names, per_name))


def _phrases(names: list[str]) -> str:
    """Lucene: any of the names as a phrase (quotes and escapes in a name are only spaces)."""
    return " OR ".join('"' + n.replace('"', " ").replace("\\", " ") + '"' for n in names)


def _link_entities(db: Database, names: list[str], per_name: int) -> Linked:
    (row,) = db.read_plain(
        query("retrieval.link_entities"),
        names=[{"name": n, "normalized": normalize_name(n), "words": _lucene_words(n)} for n in names],
        per_name=per_name,
        terms=_phrases(names),
        overview_k=OVERVIEW_K,
    )
    out: dict[str, LinkedEntity] = {}
    for r in row["linked"]:
        e = LinkedEntity(**r)
        if e.id not in out or out[e.id].score < e.score:
            out[e.id] = e
    return Linked(sorted(out.values(), key=lambda e: (-e.score, e.name)), row["overviews"])
