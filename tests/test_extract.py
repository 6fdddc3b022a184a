"""Extraction schema, the no-LLM (spaCy) extractor and bring-your-own extraction files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pydantic import ValidationError

from graphstrata.ingest.extract import (
    ENTITY_TYPES,
    ChunkExtraction,
    Entity,
    extract_with_llm,
    extraction_messages,
    text_from_extraction_prompt,
)
from graphstrata.ingest.extract_spacy import extract_with_spacy
from graphstrata.ingest.user_extractions import UserExtractionError, parse_user_extractions
from graphstrata.text.names import normalize_name

if TYPE_CHECKING:
    from graphstrata.llm import LLMClient
    from tests.fake_openai import FakeOpenAI

pytest_plugins = ["tests.conftest_llm" if __package__ else "conftest_llm"]  # see tests/test_llm.py


def triples(x: ChunkExtraction) -> set[tuple[str, str, str]]:
    return {(r.subject, r.predicate, r.object) for r in x.relations}


def entity_types(x: ChunkExtraction) -> dict[str, str]:
    return {e.name: e.type for e in x.entities}


# ---- normalize_name ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Marie Curie", "marie curie"),
        ("  MARIE   curie ", "marie curie"),
        ("The Beatles", "beatles"),
        ("the U.S. Army's", "us army"),
        ("Jean-Paul Sartre", "jean paul sartre"),
        ("A Tale of Two Cities!", "tale of two cities"),
        ("Théâtre du Châtelet", "théâtre du châtelet"),
        ("Anthem", "anthem"),  # an article is only a whole leading word
        ("...", ""),
    ],
)
def test_normalize_name(name: str, key: str):
    assert normalize_name(name) == key


# ---- spaCy extractor --------------------------------------------------------------------------


def test_spacy_svo_between_named_entities_only():
    """A common-noun end ("polonium") names no KG entity, so its triple is not kept; the sentence
    stays a semantic unit."""
    x = extract_with_spacy("Marie Curie discovered polonium in Paris.")

    assert entity_types(x) == {"Marie Curie": "PERSON", "Paris": "LOCATION"}
    assert triples(x) == {("Marie Curie", "discover in", "Paris")}
    [unit] = x.semantic_units
    assert unit.text == "Marie Curie discovered polonium in Paris."
    assert unit.entities == ["Marie Curie", "Paris"]
    assert x.relations[0].description == unit.text  # the evidence sentence
    assert x.extractor == "spacy"
    assert {o.extractor for o in [*x.entities, *x.relations, *x.semantic_units]} == {"spacy"}


def test_spacy_passive_with_agent_is_turned_active():
    x = extract_with_spacy("Radium was discovered by Pierre Curie.")
    assert ("Pierre Curie", "discover", "Radium") in triples(x)


def test_spacy_passive_without_agent_keeps_the_participle():
    x = extract_with_spacy("Barack Obama was born in Hawaii.")
    assert triples(x) == {("Barack Obama", "born in", "Hawaii")}


def test_spacy_conjoined_subjects_objects_and_verbs():
    x = extract_with_spacy("Marie and Pierre Curie visited Warsaw and Paris.")
    assert triples(x) == {(s, "visit", o) for s in ("Marie", "Pierre Curie") for o in ("Warsaw", "Paris")}
    y = extract_with_spacy("Albert Einstein developed relativity and won the Nobel Prize.")
    assert triples(y) == {("Albert Einstein", "win", "Nobel Prize")}  # the second verb inherits the subject


def test_spacy_negation_particles_and_copula():
    assert triples(extract_with_spacy("The U.S. Army did not attack Canada.")) == {
        ("U.S. Army", "not attack", "Canada")
    }
    assert triples(extract_with_spacy("The U.S. Army set up Fort Bragg.")) == {("U.S. Army", "set up", "Fort Bragg")}
    # common-noun ends name no entity
    assert triples(extract_with_spacy("The committee set up a new fund.")) == set()
    assert triples(extract_with_spacy("Isaac Newton is a physicist.")) == set()


def test_spacy_pronoun_subjects_give_no_relation_but_a_unit():
    x = extract_with_spacy("Barack Obama was born in Hawaii. He was elected president in 2008.")
    assert all(r.subject != "He" for r in x.relations)
    assert [u.text for u in x.semantic_units] == [
        "Barack Obama was born in Hawaii.",
        "He was elected president in 2008.",
    ]
    assert x.semantic_units[1].entities == ["2008"]
    assert entity_types(x)["2008"] == "DATE"


def test_spacy_skips_bare_numbers_and_maps_types_to_the_prompt_vocabulary():
    x = extract_with_spacy("Google acquired YouTube for 1.65 billion dollars in 2006. Three engineers founded it.")
    names = entity_types(x)
    assert names["Google"] == names["YouTube"] == "ORGANIZATION"
    assert "Three" not in names  # CARDINAL
    assert set(names.values()) <= set(ENTITY_TYPES)
    assert ("Google", "acquire", "YouTube") in triples(x)


def test_spacy_entities_are_merged_within_a_chunk_and_described_by_their_first_sentence():
    x = extract_with_spacy("Marie Curie was a physicist. Later, Marie Curie won the Nobel Prize.")
    curie = [e for e in x.entities if normalize_name(e.name) == "marie curie"]
    assert len(curie) == 1 and curie[0].description == "Marie Curie was a physicist."


def test_spacy_title_and_description_are_extractive():
    text = (
        "Marie Curie discovered polonium in Paris. She named it after Poland. "
        "Pierre Curie worked with Marie Curie. The element is highly radioactive."
    )
    x = extract_with_spacy(text)
    assert x.title == "Marie Curie discovered polonium in Paris."
    assert x.description.startswith("Marie Curie discovered polonium in Paris. She named it after Poland.")
    assert "Key phrases: Marie Curie" in x.description
    assert "radioactive" not in x.description  # only the lead sentences


def test_spacy_long_first_sentence_is_cut_for_the_title():
    x = extract_with_spacy(
        "The quick brown fox that lived in the old forest near the river jumped over the lazy dog today."
    )
    assert x.title.endswith("…") and len(x.title.split()) == 13


def test_spacy_on_empty_text():
    x = extract_with_spacy("   ")
    assert (x.title, x.entities, x.relations, x.semantic_units) == ("", [], [], [])


# ---- the shared schema --------------------------------------------------------------------------


def test_schema_accepts_common_llm_shapes_and_makes_them_consistent():
    x = ChunkExtraction.model_validate(
        {
            "title": " Curie ",
            "description": "About Curie.",
            "entities": [
                "Marie Curie",
                {"name": "marie curie", "type": "person", "description": "A physicist."},
            ],
            "relations": [
                ["Marie Curie", "discovered", "Polonium"],
                {"source": "MARIE CURIE", "relation": "born in", "target": "Warsaw", "description": None},
                ["Marie Curie", "is", "marie curie"],  # a self-loop says nothing
                ["Marie Curie", "discovered", "polonium"],  # a duplicate
            ],
            "semantic_units": [
                "Curie discovered polonium.",
                {"text": "Curie was born in Warsaw.", "entities": ["Warsaw"]},
            ],
        }
    )
    assert x.title == "Curie"
    assert [(e.name, e.type, e.description) for e in x.entities] == [
        ("Marie Curie", "PERSON", "A physicist."),  # merged by normalised name, typed by the second mention
        ("Polonium", "UNKNOWN", ""),  # relation ends become entities
        ("Warsaw", "UNKNOWN", ""),
    ]
    assert triples(x) == {("Marie Curie", "discovered", "Polonium"), ("Marie Curie", "born in", "Warsaw")}
    assert [u.entities for u in x.semantic_units] == [[], ["Warsaw"]]
    assert {e.extractor for e in x.entities} == {"llm"}


def test_schema_requires_title_and_names():
    with pytest.raises(ValidationError, match="title"):
        ChunkExtraction.model_validate({"description": "d"})
    with pytest.raises(ValidationError, match="name"):
        ChunkExtraction.model_validate({"title": "t", "description": "d", "entities": [{"name": " "}]})
    with pytest.raises(ValidationError, match="extractor"):
        Entity(name="x", extractor="magic")


def test_stamped_marks_every_object():
    x = extract_with_spacy("Marie Curie discovered polonium in Paris.").stamped("user")
    assert {o.extractor for o in [x, *x.entities, *x.relations, *x.semantic_units]} == {"user"}


def test_extraction_prompt_carries_the_chunk_text():
    text = "Marie Curie discovered polonium.\n\nSecond paragraph {with braces}."
    messages = extraction_messages(text)
    assert messages[0]["role"] == "system" and messages[1]["role"] == "user"
    assert text_from_extraction_prompt(messages[1]["content"]) == text
    assert '"semantic_units"' in messages[1]["content"]
    assert text_from_extraction_prompt("just a question") is None


def test_llm_and_spacy_extractions_agree_through_the_fake_server(llm_client: LLMClient, fake_openai: FakeOpenAI):
    text = "Marie Curie discovered polonium in Paris. Pierre Curie worked with Marie Curie."
    via_llm = extract_with_llm(llm_client, text)
    assert via_llm.stamped("spacy") == extract_with_spacy(text)
    assert fake_openai.calls == 1


# ---- bring-your-own extractions ------------------------------------------------------------------


def write_lines(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n", "utf-8")
    return path


GOOD = [
    {
        "title": "Curie",
        "text": "Marie Curie discovered polonium. She was born in Warsaw.",
        "entities": [
            {"name": "Marie Curie", "type": "PERSON", "description": "Physicist."},
            {"name": "polonium", "type": "element"},
        ],
        "triples": [
            ["Marie Curie", "discovered", "polonium"],
            {
                "subject": "Marie Curie",
                "predicate": "born in",
                "object": "Warsaw",
                "description": "Birthplace.",
            },
        ],
    },
    "",
    {
        "title": "Einstein",
        "text": "Einstein developed relativity.",
        "entities": [],
        "triples": [],
        "id": "e1",
    },
]


def test_parse_user_extractions(tmp_path: Path):
    docs = parse_user_extractions(write_lines(tmp_path / "x.jsonl", GOOD))

    assert [(d.line, d.title) for d in docs] == [(1, "Curie"), (3, "Einstein")]
    curie = docs[0]
    assert [(e.name, e.type) for e in curie.entities] == [
        ("Marie Curie", "PERSON"),
        ("polonium", "ELEMENT"),
        ("Warsaw", "UNKNOWN"),  # a triple end nobody declared
    ]
    assert [(r.subject, r.predicate, r.object, r.description) for r in curie.relations] == [
        ("Marie Curie", "discovered", "polonium", ""),
        ("Marie Curie", "born in", "Warsaw", "Birthplace."),
    ]
    assert {o.extractor for o in [*curie.entities, *curie.relations]} == {"user"}
    assert docs[1].id == "e1" and docs[1].entities == [] and docs[1].relations == []


def test_parse_user_extractions_reports_every_bad_line(tmp_path: Path):
    lines = [
        GOOD[0],
        '{"title": "broken", "text": ',  # not JSON
        GOOD[2],
        {"title": "no text"},
        {"title": "t", "text": "x", "triples": [["only", "two"]]},
        {"title": "t", "text": "x", "tripels": []},  # a typo must not silently drop the triples
        ["a", "list"],
    ]
    with pytest.raises(UserExtractionError) as info:
        parse_user_extractions(write_lines(tmp_path / "bad.jsonl", lines))
    message = str(info.value)
    assert "5 invalid line(s)" in message
    assert "line 2: not valid JSON" in message
    assert "line 4: text" in message
    assert "line 5: " in message and "[subject, predicate, object]" in message
    assert "line 6: tripels" in message
    assert "line 7: expected a JSON object" in message
    assert "line 1:" not in message and "line 3:" not in message


def test_parse_user_extractions_missing_or_empty_file(tmp_path: Path):
    with pytest.raises(UserExtractionError, match="cannot read"):
        parse_user_extractions(tmp_path / "nope.jsonl")
    with pytest.raises(UserExtractionError, match="no documents"):
        parse_user_extractions(write_lines(tmp_path / "empty.jsonl", ["", "  "]))
