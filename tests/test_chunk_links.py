"""DA-RAG's chunk-layer edges (graphstrata/algorithms/chunk_links.py) against a brute force over the
(mention, relation, mention) paths the paper's definition counts, on random graphs with hubs."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from graphstrata.algorithms.chunk_links import chunk_links


def brute_force(chunks, mentions, relations, max_mentions):
    """Count, for every chunk pair a < b, the paths a -MENTIONS-> e -RELATED- f <-MENTIONS- b, each
    relation walked in both directions, skipping entities of more than max_mentions chunks."""
    by_entity = Counter(e for _, e in set(mentions))
    ok = lambda e: max_mentions is None or by_entity[e] <= max_mentions  # noqa: E731
    of = {c: {e for cc, e in mentions if cc == c and ok(e)} for c in chunks}
    weights = Counter()
    for (i, a), (j, b) in itertools.combinations(enumerate(chunks), 2):
        for x, y in relations:
            if x == y:
                continue
            weights[(i, j)] += (x in of[a] and y in of[b]) + (y in of[a] and x in of[b])
    return {k: v for k, v in weights.items() if v}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("cap", [None, 1, 3, 8])
def test_weights_are_the_path_counts(seed: int, cap: int | None) -> None:
    rng = random.Random(seed)
    chunks = [f"c{i:02d}" for i in range(rng.randint(2, 25))]
    entities = [f"e{i}" for i in range(rng.randint(1, 15))]
    hubs = entities[:2]  # mentioned almost everywhere, as a corpus's most common names are
    mentions = sorted({(c, e) for c in chunks for e in entities if rng.random() < (0.8 if e in hubs else 0.15)})
    relations = [(rng.choice(entities), rng.choice(entities)) for _ in range(rng.randint(0, 30))]
    a, b, w = chunk_links(chunks, mentions, relations, cap)
    got = {(int(i), int(j)): int(x) for i, j, x in zip(a, b, w, strict=True)}
    assert got == brute_force(chunks, mentions, relations, cap)
    assert all(i < j for i, j in got)


def test_a_hub_links_nothing_and_the_paper_layer_keeps_it() -> None:
    chunks = ["a", "b", "c", "d"]
    mentions = [("a", "usa"), ("b", "usa"), ("c", "usa"), ("a", "x"), ("d", "y")]
    relations = [("usa", "y"), ("x", "y")]
    triples = lambda links: sorted(zip(*(x.tolist() for x in links), strict=True))  # noqa: E731
    assert triples(chunk_links(chunks, mentions, relations, None)) == [(0, 3, 2), (1, 3, 1), (2, 3, 1)]
    assert triples(chunk_links(chunks, mentions, relations, 2)) == [(0, 3, 1)]  # "usa" is in 3 chunks: a hub
    assert [len(x) for x in chunk_links(chunks, [], relations, None)] == [0, 0, 0]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("links", [1, 2, 5])
def test_each_chunk_keeps_its_heaviest_links(seed: int, links: int) -> None:
    """max_links against its definition on the brute-force layer: a pair stays when it is among the
    ``links`` heaviest of either chunk (ties: lower chunk index first), with its full weight."""
    rng = random.Random(100 + seed)
    chunks = [f"c{i:02d}" for i in range(rng.randint(2, 25))]
    entities = [f"e{i}" for i in range(rng.randint(1, 15))]
    mentions = sorted({(c, e) for c in chunks for e in entities if rng.random() < 0.3})
    relations = [(rng.choice(entities), rng.choice(entities)) for _ in range(rng.randint(0, 40))]
    layer = brute_force(chunks, mentions, relations, None)
    kept = set()
    for c in range(len(chunks)):
        mine = sorted(
            ((w, j if i == c else i) for (i, j), w in layer.items() if c in (i, j)), key=lambda x: (-x[0], x[1])
        )
        kept |= {(min(c, o), max(c, o)) for _, o in mine[:links]}
    a, b, w = chunk_links(chunks, mentions, relations, None, links)
    got = {(int(i), int(j)): int(x) for i, j, x in zip(a, b, w, strict=True)}
    assert got == {k: layer[k] for k in kept}
    assert len(got) <= links * len(chunks)  # at most max_links edges per chunk of the corpus
