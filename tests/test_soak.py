"""bench/soak.py's logic for a few seconds against the test database: concurrent ingest, replace,
delete and queries end in a graph identical to a sequential ingest of the end state."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from graphstrata.config import Settings
from graphstrata.db import Database

try:
    from tests.conftest import STRESS
except ImportError:  # tests/ on sys.path instead of the repository root
    from conftest import STRESS  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]


def load_soak() -> ModuleType:
    spec = importlib.util.spec_from_file_location("graphstrata_bench_soak", ROOT / "bench" / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module's annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_short_soak_keeps_the_graph_exact(graph: Database, neo4j_settings: Settings) -> None:
    soak = load_soak()
    corpus = soak.load_corpus(ROOT / "samples" / "corpus" / "hotpotqa_sample.jsonl")[:24]
    questions = [json.loads(x)["question"] for x in (ROOT / "samples" / "questions.jsonl").read_text().splitlines()]
    # every kind of write early, whatever the machine's speed: new, replace, delete, back again, no-op
    schedule = ["new", "replace", "delete", "restore", "unchanged", "new"]
    # each writer does the whole schedule at least once, however long a busy machine makes that take
    result = soak.run_soak(
        neo4j_settings,
        corpus,
        questions,
        seconds=90 if STRESS else 8,
        writers=2,
        readers=1,
        batch=2,
        schedule=schedule,
        log=print,
        min_actions=len(schedule),
    )
    assert not result["writer_errors"], result["writer_errors"]
    done = result["actions"]
    assert done.get("new", 0) and done.get("replaced", 0) and done.get("deleted", 0), done
    assert result["queries_total"] > 0
    assert set(result["queries"]) == {"vector", "fulltext", "ketrag"}
    # no query may fail: an index hit that a committing deletion just emptied is skipped (README, Reliability)
    assert not result["query_errors"], result["query_error_samples"]
    assert result["integrity_ok"], json.dumps({k: result[k] for k in ("checks", "comparison", "actions")}, indent=1)
