"""The in-memory walk graph: rankings that do not depend on the order the store returned the nodes in."""

from __future__ import annotations

import numpy as np

from graphstrata.walkgraph import WalkGraph


def graph(ids: list[str]) -> WalkGraph:
    return WalkGraph(
        ids=ids,
        labels=np.array(["Chunk"] * len(ids), dtype=object),
        own_text=np.zeros(len(ids), dtype=bool),
        src=np.zeros(0, dtype=np.int64),
        dst=np.zeros(0, dtype=np.int64),
        types=np.zeros(0, dtype=object),
        version=None,
        index={i: n for n, i in enumerate(ids)},
    )


def test_top_breaks_ties_by_id_whatever_the_node_order() -> None:
    score = {"a": 0.5, "b": 0.25, "c": 0.25 + 1e-17, "d": 0.25 - 1e-16, "e": 0.1, "f": 0.0}
    rankings = set()
    rng = np.random.default_rng(3)
    for _ in range(20):
        ids = list(rng.permutation(list(score)))
        g = graph(ids)
        top = g.top(np.array([score[i] for i in ids]), 3)
        rankings.add(tuple(i for i, _, _ in top))
    # b, c and d tie (their sums differ only in the last bits): the smallest ids win, in id order
    assert rankings == {("a", "b", "c")}


def test_top_keeps_only_positive_scores_and_filters_labels() -> None:
    g = graph(["x", "y", "z"])
    g.labels[1] = "Entity"
    assert [i for i, _, _ in g.top(np.array([0.2, 0.9, 0.0]), 5)] == ["y", "x"]
    assert [i for i, _, _ in g.top(np.array([0.2, 0.9, 0.0]), 5, ("Chunk",))] == ["x"]


def test_top_equals_a_brute_force_sort() -> None:
    """Against Python's sort of every node: score above 0, of the labels asked, best rounded score
    first, ties by id; many ties (scores from a few values plus last-bit noise), every k."""
    rng = np.random.default_rng(11)
    ids = [f"n{int(i):04d}" for i in rng.permutation(600)]
    g = graph(ids)
    g.labels[:] = rng.choice(["Chunk", "Entity", "SemanticUnit"], len(ids))
    scores = rng.choice([0.0, 0.1, 0.25, 0.5, 1 / 3], len(ids)) + rng.choice([0.0, 1e-17, -1e-16], len(ids))
    scores[scores < 0] = 0.0
    for labels in (None, ("Chunk",), ("Entity", "SemanticUnit")):
        for k in (1, 7, 50, 299, 1000):
            want = sorted(
                (i for n, i in enumerate(ids) if scores[n] > 0 and (labels is None or g.labels[n] in labels)),
                key=lambda i: (-round(float(scores[g.index[i]]), 12), i),
            )[:k]
            got = g.top(scores, k, labels)
            assert [i for i, _, _ in got] == want
            assert all(label == g.labels[g.index[i]] and s == scores[g.index[i]] for i, label, s in got)
