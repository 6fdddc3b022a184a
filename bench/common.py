"""Shared by the benchmarks: a Neo4j of their own (instance `bench`, ports 17689/17476) unless
NEO4J_URI is given, the hotpotqa_dev100 data, and result writing."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from graphstrata.client import GraphStrata
from graphstrata.config import Settings, get_settings

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
DATA = Path(os.environ.get("GRAPHSTRATA_BENCH_DATA", ROOT.parent / "shared" / "data" / "hotpotqa_dev100"))


def bench_settings() -> Settings:
    base = get_settings()
    if "GRAPHSTRATA_EMBED_CACHE" not in os.environ:  # benchmarks time the model, not the vector cache
        base = base.model_copy(update={"embed_cache": False})
    if base.neo4j_uri:
        return base
    from graphstrata.neo4j_local import Instance

    s = base.model_copy(update={"instance": "bench", "bolt_port": 17689, "http_port": 17476, "heap": "4g"})
    Instance.from_settings(s).start()
    return s


def open_graph() -> GraphStrata:
    return GraphStrata(bench_settings())


def wipe(gs: GraphStrata) -> None:
    if gs.settings.neo4j_uri and os.environ.get("GRAPHSTRATA_BENCH_WIPE") != "1":
        raise SystemExit("refusing to wipe the database at NEO4J_URI; set GRAPHSTRATA_BENCH_WIPE=1 if it is scratch")
    from graphstrata.gds import GDS

    gs.db.auto("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS")
    GDS(gs.db, gs.settings).drop_all()


def machine() -> dict:
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "when": time.strftime("%Y-%m-%d %H:%M")}


def write(name: str, data: dict, markdown: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=2))
    (RESULTS / f"{name}.md").write_text(markdown)
    print(markdown)


def paired_bootstrap(
    a: list[float], b: list[float], resamples: int = 10_000, seed: int = 0, level: float = 0.95
) -> dict[str, float]:
    """Paired bootstrap of mean(a) - mean(b) over the same questions: the questions are resampled
    with replacement `resamples` times (one seeded generator, so a run repeats exactly) and the
    percentile interval of the resampled mean differences is returned with the observed one."""
    if len(a) != len(b) or not a:
        raise ValueError("paired samples must be non-empty and of equal length")
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    # in blocks, so that 10,000 resamples of a few hundred questions stay a few MB
    for start in range(0, resamples, 1000):
        stop = min(start + 1000, resamples)
        idx = rng.integers(0, len(diff), size=(stop - start, len(diff)))
        means[start:stop] = diff[idx].mean(axis=1)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return {"diff": float(diff.mean()), "lo": float(lo), "hi": float(hi), "resamples": resamples, "seed": seed}


def clear_question_caches(gs: GraphStrata) -> None:
    """Forget the questions' embeddings and entities, so that the next call pays for its own."""
    from graphstrata.retrieval.linking import clear_cache as clear_question_entities

    getattr(gs.embedder, "clear_cache", lambda: None)()
    clear_question_entities()
