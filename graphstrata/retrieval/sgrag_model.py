"""SG-RAG's path-dominance model ``M`` (§4.2, Appendix C) for a stored graph: trained on the corpus
graph's stars on first use, kept in this process and under ``cache_dir/sgrag/`` keyed by database and
graph state, trained again after the graph changes (graphstrata/retrieval/sgrag.py uses it)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from graphstrata.algorithms.sgrag import DominanceConfig, DominanceEmbedder, Star, fit_dominance, from_record, to_record
from graphstrata.algorithms.sgrag.model import RECORD_VERSION
from graphstrata.cypher import query
from graphstrata.db import Database

# (bolt uri, database) → (graph state, model or None, facts about it); one lock: concurrent first queries
# wait for one training run instead of each training its own.
_MODELS: dict[tuple[str, str], tuple[str, DominanceEmbedder | None, dict[str, Any]]] = {}
_MODEL_LOCK = threading.Lock()


def graph_state(db: Database) -> str:
    """The key a trained model is valid for: the meta stamp plus entity and RELATED counts."""
    row = db.read_one(query("sgrag.graph_state")) or {}
    return f"{row.get('updated')}|{row.get('entities')}|{row.get('related')}"


def model_path(cache_dir: Path, db: Database, state: str) -> Path:
    """Where the model trained for this database and graph state is kept (derived data, like the LLM cache;
    kept out of the graph so the stored schema stays what docs/data-model.md describes)."""
    key = hashlib.sha256(f"{db.uri}|{db.database}|{state}|{RECORD_VERSION}".encode()).hexdigest()[:24]
    return Path(cache_dir) / "sgrag" / f"dominance-{key}.json"


def train_dominance_model(
    db: Database, config: DominanceConfig | None = None, *, cache_dir: Path | None = None
) -> tuple[DominanceEmbedder | None, dict[str, Any]]:
    """Fit ``M`` on the stars of the corpus graph (every entity with RELATED neighbours) and keep it under
    ``cache_dir`` (if given); ``None`` when the graph has no RELATED edge to learn from."""
    state = graph_state(db)
    rows = db.read(query("sgrag.corpus_stars"))
    if not rows:
        return None, {"graph_state": state, "source": "none", "reason": "no RELATED edges to train on"}
    cfg = config or DominanceConfig()
    embedder, report = fit_dominance([Star.of(r["label"], r["leaves"]) for r in rows], cfg)
    info: dict[str, Any] = {"graph_state": state, "source": "trained", **asdict(report)}
    if cache_dir is not None:
        path = model_path(cache_dir, db, state)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as f:
                json.dump(to_record(embedder, cfg, report) | {"graph_state": state}, f)
            os.replace(f.name, path)  # atomic: a concurrent reader sees the old file or the whole new one
        except OSError as e:  # e.g. a read-only cache: the model still serves this process
            info["store_error"] = str(e)[:300]
    return embedder, info


def dominance_model(
    db: Database, cache_dir: Path | None = None, *, train: bool = True, state: str | None = None
) -> tuple[DominanceEmbedder | None, dict[str, Any]]:
    """``M`` for the graph as it is now (``state``: its :func:`graph_state`, if already read): from this
    process's cache, else the cache file, else trained (unless ``train`` is false: then None, and the
    exact check alone decides, with the same results)."""
    key = (db.uri, db.database)
    state = state if state is not None else graph_state(db)
    with _MODEL_LOCK:
        hit = _MODELS.get(key)
        if hit is not None and hit[0] == state:
            return hit[1], {**hit[2], "source": "memory"}
        embedder: DominanceEmbedder | None = None
        path = model_path(cache_dir, db, state) if cache_dir is not None else None
        if path is not None and path.exists():
            try:
                record = json.loads(path.read_text())
                if record.get("graph_state") == state:
                    embedder, _, report = from_record(record)
                    info: dict[str, Any] = {"graph_state": state, "source": "stored", **asdict(report)}
            except (OSError, ValueError, KeyError, TypeError):  # unreadable, another version, damaged: train anew
                embedder = None
        if embedder is None:
            if not train:
                return None, {"graph_state": state, "source": "not trained yet"}
            embedder, info = train_dominance_model(db, cache_dir=cache_dir)
        _MODELS[key] = (state, embedder, info)
        return embedder, info
