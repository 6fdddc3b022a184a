"""The spaCy pass: per sub-chunk sentences, entities (E2GraphRAG §3.1: named entities and common
nouns), sentence-level entity co-occurrence, and KET-RAG §5.1 keywords (non-stop words).

Sub-chunks partition their chunk, so spaCy reads each token once and the chunk-level view
(mentions, co-occurrence) is the sum of its sub-chunks'. The analysis is a pure function of the
text: ingest adds its counts to the graph, and deleting a document subtracts the counts of the
same analysis of its stored text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from graphstrata.ingest.extract import get_nlp, normalize_name

# Numeric entity kinds make hubs, not knowledge: "two" co-occurs with everything.
SKIP_ENTITY_LABELS = {"CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY"}
MIN_KEYWORD_LEN = 3


@dataclass
class Sentence:
    text: str
    entities: list[str]  # normalised names, distinct, in order of appearance
    keywords: list[str]  # distinct lower-cased non-stop words


@dataclass
class Analysis:
    """What spaCy saw in one text (a sub-chunk)."""

    sentences: list[Sentence]
    mentions: Counter  # normalised entity name -> occurrences
    names: dict[str, tuple[str, str]] = field(default_factory=dict)  # normalised -> (surface name, type)

    def cooccurrence(self) -> Counter:
        """Unordered entity pairs → number of sentences they share (E2GraphRAG edge weights)."""
        pairs: Counter = Counter()
        for s in self.sentences:
            for a, b in combinations(sorted(set(s.entities)), 2):
                pairs[(a, b)] += 1
        return pairs

    def keyword_sentences(self) -> dict[str, list[int]]:
        """keyword → indexes of the sentences that contain it."""
        out: dict[str, list[int]] = {}
        for i, s in enumerate(self.sentences):
            for k in s.keywords:
                out.setdefault(k, []).append(i)
        return out


def _analyse(doc) -> Analysis:
    mentions: Counter = Counter()
    names: dict[str, tuple[str, str]] = {}
    sentences: list[Sentence] = []
    for sent in doc.sents:
        ents: list[str] = []
        covered: set[int] = set()
        for ent in sent.ents:
            if ent.label_ in SKIP_ENTITY_LABELS:
                continue
            key = normalize_name(ent.text)
            if not key:
                continue
            covered.update(range(ent.start, ent.end))
            mentions[key] += 1
            names.setdefault(key, (ent.text.strip(), ent.label_))
            if key not in ents:
                ents.append(key)
        keywords: list[str] = []
        for tok in sent:
            if tok.pos_ == "NOUN" and tok.i not in covered and not tok.is_stop and tok.is_alpha and len(tok) > 2:
                key = normalize_name(tok.lemma_)
                if key:
                    mentions[key] += 1
                    names.setdefault(key, (tok.lemma_.lower(), "NOUN"))
                    if key not in ents:
                        ents.append(key)
            if tok.is_alpha and not tok.is_stop and len(tok) >= MIN_KEYWORD_LEN:
                word = tok.lower_
                if word not in keywords:
                    keywords.append(word)
        text = sent.text.strip()
        if text:
            sentences.append(Sentence(text, ents, keywords))
    return Analysis(sentences, mentions, names)


def analyse_texts(
    texts: Sequence[str], progress: Callable[[int], None] | None = None, batch_size: int = 64
) -> list[Analysis]:
    """spaCy over many texts (one pipe; the lemmatiser, tagger, parser and NER are all needed)."""
    out = []
    for doc in get_nlp().pipe(texts, batch_size=batch_size):
        out.append(_analyse(doc))
        if progress:
            progress(1)
    return out


def query_entities(text: str) -> list[str]:
    """Normalised entities of a question, found exactly as at ingest (E2GraphRAG §3.2)."""
    a = _analyse(get_nlp()(text))
    return list(a.mentions)
