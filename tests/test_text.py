"""graphstrata.text: the one home of tokens, budgets, names and the spaCy pass — and the layering rule
that retrieval, augment and summarize never reach into ingest for them."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphstrata.summarize import central_texts
from graphstrata.text.names import entity_id, hid, normalize_name, predicate_key, term_id
from graphstrata.text.tokens import count_tokens, encode, encoder, fit, join_overlapping, truncate

PACKAGE = Path(__file__).resolve().parents[1] / "graphstrata"


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


@pytest.mark.parametrize("layer", ["retrieval", "augment", "algorithms", "text", "summarize.py"])
def test_question_and_augment_paths_do_not_import_ingest(layer: str) -> None:
    root = PACKAGE / layer
    files = [root] if root.is_file() else sorted(root.rglob("*.py"))
    offenders = {
        str(f.relative_to(PACKAGE)): sorted(m for m in _imports(f) if m.startswith("graphstrata.ingest")) for f in files
    }
    assert not {f: m for f, m in offenders.items() if m}


def test_helpers_are_defined_once() -> None:
    """One node-id hash, one packer, one tokenizer: no module keeps a private copy."""
    copies = []
    for f in PACKAGE.rglob("*.py"):
        for node in ast.parse(f.read_text()).body:  # module-level functions (a model's encode is another thing)
            if isinstance(node, ast.FunctionDef) and node.name in {"_hid", "hid", "fit", "encode", "count_tokens"}:
                copies.append(f"{f.relative_to(PACKAGE)}:{node.name}")
    expected = ["text/names.py:hid", "text/tokens.py:count_tokens", "text/tokens.py:encode", "text/tokens.py:fit"]
    assert sorted(copies) == expected


def test_fit_hand_cases() -> None:
    # skip what does not fit, keep trying shorter ones
    assert fit([3, 5, 2, 1], 6) == [0, 2, 3]
    # stop at the first that does not fit
    assert fit([3, 5, 2, 1], 6, stop_at_overflow=True) == [0]
    # the first always taken, even when it alone is over
    assert fit([9, 1, 1], 5, first_always=True) == [0]
    assert fit([9, 1, 1], 5) == [1, 2]
    assert fit([1, 1, 1, 1], 10, max_items=2) == [0, 1]
    assert fit([], 10) == []
    assert fit([0, 0], 0) == [0, 1]


def test_fit_is_the_greedy_prefix_rule_on_random_cases() -> None:
    """Independent statement of the rule: item i is taken iff it fits what the taken items before it
    left (checked on the output, not by re-running a loop)."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        lengths = rng.integers(0, 20, size=rng.integers(0, 12)).tolist()
        budget = int(rng.integers(0, 60))
        taken = fit(lengths, budget)
        assert sum(lengths[i] for i in taken) <= budget
        for i in range(len(lengths)):
            before = sum(lengths[j] for j in taken if j < i)
            assert (i in taken) == (before + lengths[i] <= budget)


def test_truncate_and_count() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 20
    assert count_tokens(text) == len(encoder().encode_ordinary(text))
    cut = truncate(text, 7)
    assert count_tokens(cut) == 7 and text.startswith(cut)
    assert truncate("short", 7) == "short"
    assert encode(cut) == encode(text)[:7]


def test_join_overlapping_writes_the_shared_part_once() -> None:
    assert join_overlapping(["alpha beta gamma", "beta gamma delta"], 2) == "alpha beta gamma delta"
    assert join_overlapping(["one", "two"], 0) == "one two"


def test_names_and_ids() -> None:
    assert normalize_name("The  U.S. Army's") == "us army"
    assert entity_id("us army") == hid("entity", "us army") != term_id("us army")
    assert len(hid("x")) == 32 and hid("a", "b") != hid("ab")
    assert predicate_key("  Was  Born In ") == "was born in"


def test_central_texts_keeps_the_most_central_in_input_order() -> None:
    texts = ["outlier text here", "cats purr", "cats meow", "cats sleep"]
    vecs = np.array([[0.0, 1.0], [1.0, 0.1], [1.0, 0.0], [1.0, -0.1]])
    # the centroid (0.75, 0.25) leans to the cat texts: "cats purr" then "cats meow" are nearest it
    assert central_texts(texts, vecs, max_tokens=100, max_items=2) == ["cats purr", "cats meow"]
    # over the cap: kept whole by default, cut with cut=True
    long = ["word " * 50]
    one = np.array([[1.0, 0.0]])
    assert central_texts(long, one, max_tokens=5) == long
    assert count_tokens(central_texts(long, one, max_tokens=5, cut=True)[0]) == 5


def test_spacy_in_a_new_thread_reuses_the_loaded_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """thinc makes a backend in every thread or context that has none, scanning the installed packages'
    entry points (milliseconds of CPU): a question parsed in a fresh thread (fusion's methods, a
    server request) must not pay it, and gets the same parse."""
    import threading

    import thinc.backends

    from graphstrata.text import nlp

    question = "Who directed the film that was shot in Leland, North Carolina?"
    nlp.clear_cache()
    expected = [(t.text, t.pos_, t.ent_type_) for t in nlp.query_doc(question)]
    calls: list[str] = []
    real = thinc.backends.get_ops
    monkeypatch.setattr(thinc.backends, "get_ops", lambda name, **kw: calls.append(name) or real(name, **kw))
    got: list[Any] = []

    def parse() -> None:
        nlp.clear_cache()
        got.append([(t.text, t.pos_, t.ent_type_) for t in nlp.query_doc(question)])

    worker = threading.Thread(target=parse)
    worker.start()
    worker.join()
    assert got == [expected] and calls == []
