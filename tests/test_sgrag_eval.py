"""bench/sgrag_eval.py's scoring: what a method's context is credited with must not depend on where
in the context a name stands (SG-RAG puts "Answer: <name>" first, other methods do not)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def score():
    environ = dict(os.environ)  # bench/graphs.py turns the vector cache off for its own process
    sys.path.insert(0, str(BENCH))  # the benchmark scripts import their siblings by name
    try:
        import sgrag_eval
    finally:
        sys.path.remove(str(BENCH))
        os.environ.clear()
        os.environ.update(environ)
    return sgrag_eval.score


QUESTION = {"constraint_names": ["Paris"], "gold": ["Seine"], "candidates": ["Loire", "Seine", "Rhone"]}


def test_score_ignores_the_layout(score) -> None:
    answer_first = score("Answer: Loire. The Seine flows through Paris.", QUESTION)
    answer_last = score("The Seine flows through Paris. Answer: Loire.", QUESTION)
    # the gold answer is in both contexts, beside one wrong candidate: found, precision 1/2, recall 1
    assert answer_first == answer_last == (1.0, 0.5, 1.0)


def test_score_of_a_context_without_the_answer(score) -> None:
    assert score("Answer: Loire. The Rhone flows through Lyon.", QUESTION) == (0.0, 0.0, 0.0)
    # a constraint entity is not an answer, and names match as whole words only
    assert score("Paris; Seinez", QUESTION) == (0.0, 0.0, 0.0)
