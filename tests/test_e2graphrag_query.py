"""E2GraphRAG's query entities (§3.2: "SpaCy, as in the indexing stage") are the full ingest
pipeline's, although a one-sentence question skips the dependency parser (`query_doc`).

No Neo4j needed. The questions are hotpotqa_dev100's (a sample here; all 100 when the data set is
on disk, see bench/common.py), chosen to include several sentences, inner marks ("U.S.", "D.P.",
";"), quotes, possessives, numbers, odd spacing, and the same texts lower-cased or without their
question mark.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from graphstrata.text.nlp import analyse, get_nlp, one_sentence, query_doc, query_entities

pytestmark = pytest.mark.slow  # checks the parser shortcut on every question and passage sample

QUESTIONS = [
    "If Gallu is a demon Lilu is what?",
    "Are Christopher Nolan and Sathish Kalathil both film directors?",
    "What language were books being translated into during the era of Haymo of Faversham?",
    "Who directed the film that was shot in or around Leland, North Carolina in 1986",
    "Are Watertown International Airport and Alexandria International Airport both airports in the same state ?",
    "Who wrote a song  after attending a luau in the Koolauloa District on the island of Oahu in Honolulu County?",
    "The manuscript for Flute Sonata in C major, BWV 1033 is in the hand of a German musician whose godfather is whom?",
    "Grace Krilanovich's first novel was published by an independent mom-and-pop publishing house that was founded "
    "in 2005, and is based where?",
    "Are both magazines, the Woman's Viewpoint and Pick Me Up, British publications?",
    "The runner-up in the 1999 World Drivers' Championship appears on the front cover of a racing video game "
    "developed by what company?",
    "Which band was formed first The Exies or Circus Diablo ?",
    "Indian film photographer Jagdish Mali, known for taking images of various celebrities including Shabana Azmi, "
    "is father to which Bollywood actress? ",
    'Homer\'s Odyssey is the third episode of the first season of "The Simpsons". What recurring character makes '
    "his first appearance in this episode?",
    "The director Armando Iannucci has an OBE. Does the director Puneet Sira also have one?",
    'What genre is the author of the story behind "Act of War; Direct Action" associated with?',
    "What do E. B. White and Dan Masterson have in common?",
    "Jon L. Luther was the chairman and CEO of a restaurant holding company headquartered in what city?",
    "Which 1988 Telugu comedy produced by D.P. Varma had music composed by the only female music director in the "
    "Telugu film industry?",
    "Little Caesars and Pizza Hut were founded in the 1950s within a year of each other. Which was the first to "
    "serve pizza?",
    'Who was Audrey Williams pregnant with during the recording of "Dear Brother"?',
    "Who performed in both Welcome to the Show and the band f(x)?",
    "Simon & Simon starred which television and movie actor from the US?",
    "From 1945-1949 Dick Humbert played for an NFL team based in what state?",
    'What is the abbreviation to the magazine that called Qvwm  "an unusually impressive impostor"?',
    "Which city was the band which was formed in 1981 in Los Angeles when vocalist/guitarist James Hetfield "
    "responded to an advertisement posted by drummer Lars Ulrich in a local newspaper, from?",
    "Who was the father of the man\nwho wrote Hamlet?",  # a line break: the parser decides
]


def dataset(name: str) -> list[dict]:
    """Rows of hotpotqa_dev100's `name`.jsonl where the benchmarks find it (bench/common.py's DATA)."""
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "hotpotqa_dev100"
    path = Path(os.environ.get("GRAPHSTRATA_BENCH_DATA", default)) / f"{name}.jsonl"
    if not path.exists():
        pytest.skip("hotpotqa_dev100 is not on disk")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def full_pipeline_entities(text: str) -> list[str]:
    """What ingest's analysis finds in the text: every component, the parser included."""
    return list(analyse(get_nlp()(text)).mentions)


def variants(questions: list[str]) -> list[str]:
    return [v for q in questions for v in (q, q.lower(), q.rstrip(" ?"))]


@pytest.mark.parametrize("question", variants(QUESTIONS))
def test_query_entities_are_the_full_pipelines(question: str) -> None:
    assert query_entities(question) == full_pipeline_entities(question)


def test_query_entities_on_the_whole_dataset() -> None:
    questions = [q["question"] for q in dataset("questions")]
    differ = [q for q in variants(questions) if query_entities(q) != full_pipeline_entities(q)]
    assert differ == []


def test_query_entities_on_passage_sentences_and_titles() -> None:
    """Statements rather than questions, each alone: a sample of the corpus's sentences (as the
    full pipeline splits its passages) and titles (short, capitalised, often no verb)."""
    corpus = dataset("corpus")[::10]
    sentences = [s.text.strip() for doc in get_nlp().pipe(c["text"] for c in corpus) for s in doc.sents]
    texts = [t for t in sentences + [c["title"] for c in corpus] if t]
    assert len(texts) > 400
    differ = [t for t in texts if query_entities(t) != full_pipeline_entities(t)]
    assert differ == []


def test_one_sentence_questions_skip_the_parser_and_others_do_not() -> None:
    from graphstrata.text.nlp import clear_cache, parsed_question

    clear_cache()
    one = "Are Christopher Nolan and Sathish Kalathil both film directors?"
    doc = query_doc(one)
    assert not doc.has_annotation("DEP")  # the parser did not run
    assert query_doc(one) is doc  # kept: parsed once
    assert len(list(doc.sents)) == 1
    assert [(e.text, e.label_) for e in doc.ents] == [(e.text, e.label_) for e in get_nlp()(one).ents]
    # two sentences: the order of the entities is sentence by sentence, as the parser splits them
    two = "The director Armando Iannucci has an OBE. Does the director Puneet Sira also have one?"
    assert not one_sentence(get_nlp().make_doc(two))
    assert query_doc(two).has_annotation("DEP")
    assert query_entities(two) == ["armando iannucci", "obe", "director", "puneet sira"]
    # an inner mark that need not end a sentence still takes the full pipeline (conservative)
    assert not one_sentence(get_nlp().make_doc("What do E. B. White and Dan Masterson have in common?"))
    assert one_sentence(get_nlp().make_doc('Who wrote "Hello."?'))  # closing marks only
    # auto's full parse (dependencies too) serves query_doc when it found the one sentence query_doc marks
    full = parsed_question(one)
    assert full.has_annotation("DEP") and query_doc(one) is full
    assert query_entities(one) == [e for e in analyse(get_nlp()(one)).mentions]
    assert query_entities("") == []
