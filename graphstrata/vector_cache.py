"""Content-addressed embedding cache: the same string is embedded once per model, across ingests
and processes, as the LLM's reply cache makes a re-run free of calls.

One SQLite file per model under ``settings.cache_dir / "vectors"``, keyed by sha256(model, text),
the vector stored as float32 bytes. SQLite (WAL journal, a busy timeout) is what makes it safe
for several processes at once: readers never block, writers queue, and a crash mid-write leaves
the last committed state. A cache that cannot be opened or written (read-only or full disk, a
lock held too long) is a cache miss, never an error: embedding again is always correct.

A bounded in-process map in front of it serves repeats within a process (the fusion method
embeds its question once for all the methods it runs) without touching the file.
"""

from __future__ import annotations

import hashlib
import logging
import re
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

VERSION = "1"  # bump to ignore every stored vector after a change of key or format
MEMORY_ITEMS = 200_000  # vectors kept in process (~300 MB at 384 dims); dropped whole when full


def cache_key(model: str, text: str) -> bytes:
    return hashlib.sha256(f"{VERSION}\x1f{model}\x1f{text}".encode()).digest()


class VectorCache:
    """``embed(texts, compute, progress)``: stored vectors for known texts, ``compute`` for the rest."""

    def __init__(self, folder: Path | None, model: str, dim: int) -> None:
        self.model = model
        self.dim = dim
        self.memory: dict[str, np.ndarray] = {}
        self.path = (
            None if folder is None else Path(folder) / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', model)}-{dim}.sqlite3"
        )
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    # --- the file ------------------------------------------------------------------------------
    def _db(self) -> sqlite3.Connection | None:
        if self.path is None:
            return None
        if self._conn is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(
                    "PRAGMA synchronous=NORMAL"
                )  # WAL + NORMAL: a power loss may drop the last commits, never corrupt
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vec BLOB NOT NULL) WITHOUT ROWID"
                )
                self._conn = conn
            except (OSError, sqlite3.Error) as e:
                log.warning("embedding cache %s unavailable (%s): vectors are computed, not cached", self.path, e)
                self.path = None
                return None
        return self._conn

    def _load(self, texts: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            conn = self._db()
            if conn is None:
                return found
            by_key = {cache_key(self.model, t): t for t in texts}
            keys = list(by_key)
            try:
                for start in range(0, len(keys), 500):  # SQLite caps the number of bound parameters
                    part = keys[start : start + 500]
                    marks = ",".join("?" * len(part))
                    for key, blob in conn.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", part):
                        vec = np.frombuffer(blob, dtype=np.float32)
                        if vec.shape == (self.dim,):
                            found[by_key[key]] = vec
            except sqlite3.Error as e:
                log.warning("embedding cache %s unreadable (%s): computing instead", self.path, e)
        return found

    def _save(self, texts: Sequence[str], vecs: np.ndarray) -> None:
        with self._lock:
            conn = self._db()
            if conn is None:
                return
            rows = [
                (cache_key(self.model, t), np.ascontiguousarray(v, np.float32).tobytes())
                for t, v in zip(texts, vecs, strict=True)
            ]
            try:
                with conn:
                    conn.execute("BEGIN IMMEDIATE")
                    conn.executemany("INSERT OR IGNORE INTO vectors (key, vec) VALUES (?, ?)", rows)
            except sqlite3.Error as e:
                log.warning("embedding cache %s not written (%s)", self.path, e)

    # --- the one entry point -------------------------------------------------------------------
    def embed(
        self,
        texts: Sequence[str],
        compute: Callable[[list[str], Callable[[int], None] | None], np.ndarray],
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Vectors of ``texts`` (row i for texts[i]); each distinct missing text is computed once."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not len(texts):
            return out
        # one lookup per text: another thread may clear the memory between a check and a read
        known = {t: v for t in set(texts) if (v := self.memory.get(t)) is not None}
        todo = [t for t in dict.fromkeys(texts) if t not in known]
        if todo:
            stored = self._load(todo)
            known.update(stored)
            todo = [t for t in todo if t not in stored]
        self.hits += len(known)
        self.misses += len(todo)
        if progress and len(texts) > len(todo):
            progress(len(texts) - len(todo))  # cached and repeated texts are done already
        if todo:
            fresh = compute(todo, progress)
            self._save(todo, fresh)
            known.update(zip(todo, fresh, strict=True))
        if len(self.memory) + len(known) > MEMORY_ITEMS:
            self.memory.clear()
        self.memory.update(known)
        for i, t in enumerate(texts):
            out[i] = known[t]
        return out

    def clear_memory(self) -> None:
        self.memory.clear()
