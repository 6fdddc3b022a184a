"""The no-LLM extractor: spaCy NER and proper-noun chunks as entities, dependency subject–verb–object
triples as relations, sentences as semantic units, an extractive title (extractor ``spacy``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from graphstrata.ingest.extract import (
    ChunkExtraction,
    Entity,
    Relation,
    SemanticUnit,
)
from graphstrata.text.names import normalize_name
from graphstrata.text.nlp import PIPE_LOCK, get_nlp

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token


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
    with PIPE_LOCK:  # spaCy pipelines are not documented as thread-safe
        doc = nlp(text)
    return _extract_doc(doc)


def extract_many_with_spacy(
    texts: Sequence[str],
    progress: Callable[[int], None] | None = None,
    batch_size: int = 32,
    parsed: Mapping[str, Doc] | None = None,
) -> list[ChunkExtraction]:
    """:func:`extract_with_spacy` of many chunks through one ``nlp.pipe`` (batched: faster at ingest).

    ``parsed``: texts already through the same pipeline (ingest's parse of every chunk, which its
    sub-chunks' analyses are cut from), read instead of parsed again; spaCy's output for a text does
    not depend on the batch it was parsed in, so the extraction is the same."""
    parsed = parsed or {}
    out: dict[int, ChunkExtraction] = {}
    todo = []
    for i, text in enumerate(texts):
        if text in parsed:
            out[i] = _extract_doc(parsed[text])
            if progress:
                progress(1)
        else:
            todo.append(i)
    with PIPE_LOCK:
        for i, doc in zip(todo, get_nlp().pipe((texts[i] for i in todo), batch_size=batch_size), strict=True):
            out[i] = _extract_doc(doc)
            if progress:
                progress(1)
    return [out[i] for i in range(len(texts))]


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
