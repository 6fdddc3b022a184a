"""The scale benchmark's corpora (bench/scale.py): hotpotqa_dev100's 994 passages (its questions stay
answerable at every size) plus synthetic distractors drawn with a fixed seed — lengths sampled from the
dev passages', sentences built around named entities drawn from a Zipf-like (s = 1.1) vocabulary of
invented names (people, places, organisations, works), so the extracted graph has hubs and a long tail
as a real one does."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import numpy as np
from common import ROOT

# the shared data beside the checkout (a worktree sits one level deeper)
DEV = (
    Path(os.environ.get("GRAPHSTRATA_BENCH_DATA", ""))
    if os.environ.get("GRAPHSTRATA_BENCH_DATA")
    else next(
        (
            p / "shared" / "data" / "hotpotqa_dev100"
            for p in (ROOT.parent, ROOT.parent.parent)
            if (p / "shared").is_dir()
        ),
        ROOT.parent / "shared" / "data" / "hotpotqa_dev100",
    )
)
SEED = 43

FIRST = "Al Bel Cor Dar Ef Gal Hen Ir Jo Kas Lum Mor Nel Or Pas Quin Ros Sal Tor Ul Val Wen Yor Zan".split()  # noqa: SIM905
MID = "an ber cia do el fer go ha in ka lo mi na or pe ri sa to u ve".split()  # noqa: SIM905
LAST = "son ton ley berg ford wick ham ridge ova ini ez ard".split()  # noqa: SIM905
SPACE = len(FIRST) * len(MID) * len(LAST)  # distinct invented words
KINDS = ["person", "place", "org", "work"]
TEMPLATES = {
    "person": ["{a} was born in {p} and worked with {b}.", "{a} married {b} in {p}.", "{a} studied under {b}."],
    "place": ["{p} lies near {q}.", "{p} is a town in the region of {q}.", "The river passes {p} before {q}."],
    "org": ["{o} was founded in {p} by {a}.", "{a} led {o} from {y}.", "{o} merged with {r} in {y}."],
    "work": ['"{w}" is a {y} novel by {a}.', '"{w}" was filmed in {p} by {o}.', '{a} wrote "{w}" in {y}.'],
}
FILLER = [
    "It is known for its annual festival.",
    "The population grew steadily during the following decades.",
    "Critics received it warmly at the time.",
    "Several of its early records were lost.",
    "The building was restored after a fire.",
    "Its archives are held at the national library.",
]


def vocabulary(rng: np.random.Generator, n: int) -> dict[str, list[str]]:
    """Invented names per kind, most frequent first (drawn later with Zipf weights)."""

    def word() -> str:
        return rng.choice(FIRST) + rng.choice(MID) + rng.choice(LAST)

    out: dict[str, list[str]] = {}
    for kind in KINDS:
        names: set[str] = set()
        # one invented word gives 5,760 places and 23,040 organisations or works: past 80% of that
        # (above ~10,000 passages) a second word, as drawing ever-rarer unused names would not end
        # (the corpora up to 10,000 passages are the same either way)
        two = n > 0.8 * SPACE * (1 if kind == "place" else 4)
        stem = (lambda: f"{word()} {word()}") if two else word
        while len(names) < n:
            if kind == "person":
                names.add(f"{word()} {word()}")
            elif kind == "place":
                names.add(stem())
            elif kind == "org":
                names.add(f"{stem()} {rng.choice(['Company', 'Institute', 'Records', 'University'])}")
            else:
                names.add(f"The {stem()} {rng.choice(['Affair', 'Garden', 'Letters', 'Road'])}")
        out[kind] = [str(x) for x in rng.permutation(sorted(names))]  # rank unrelated to spelling
    return out


def distractors(n: int, lengths: list[int], seed: int = SEED, start: int = 0) -> list[dict]:
    """``n`` synthetic passages (title, text), seeded; ``start`` numbers their titles."""
    rng = np.random.default_rng(seed)
    vocab = vocabulary(rng, max(200, n // 2))
    ranks = np.arange(1, len(vocab["person"]) + 1)
    weights = ranks**-1.1 / (ranks**-1.1).sum()

    pool = itertools.cycle(
        rng.choice(ranks.size, size=n * 100 + 1000, p=weights).tolist()
    )  # one draw, not one per name

    def pick(kind: str) -> str:
        return vocab[kind][next(pool)]

    out = []
    for i in range(n):
        want = int(rng.choice(lengths))
        topic = rng.choice(KINDS)
        sentences, words = [], 0
        while words < want:
            kind = topic if rng.random() < 0.6 else rng.choice(KINDS)
            t = rng.choice(TEMPLATES[kind]) if rng.random() < 0.8 else rng.choice(FILLER)
            s = t.format(
                a=pick("person"),
                b=pick("person"),
                p=pick("place"),
                q=pick("place"),
                o=pick("org"),
                r=pick("org"),
                w=pick("work"),
                y=int(rng.integers(1820, 2020)),
            )
            sentences.append(s)
            words += len(s.split())
        out.append({"title": f"{pick(topic)} ({start + i})", "text": " ".join(sentences)})
    return out


def corpus(n: int) -> tuple[list[dict], list[int]]:
    dev = [json.loads(line) for line in (DEV / "corpus.jsonl").read_text().splitlines() if line.strip()]
    lengths = [len(r["text"].split()) for r in dev]
    return dev + distractors(max(0, n - len(dev)), lengths), lengths


def questions(limit: int) -> list[dict]:
    rows = [json.loads(line) for line in (DEV / "questions.jsonl").read_text().splitlines() if line.strip()]
    return [{"question": q["question"], "gold": set(q["supporting_titles"])} for q in rows[:limit]]
