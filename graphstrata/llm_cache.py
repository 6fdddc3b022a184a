"""The LLM reply cache: one JSON file per reply under ``settings.cache_dir / "llm"``, addressed by the
sha256 of what determines the reply (kind, model, messages, parameters), written atomically."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

CACHE_VERSION = "1"  # bump to invalidate every cached reply after a change of cache format


class CacheWriteError(RuntimeError):
    """The on-disk reply cache cannot be written (read-only or full file system, no permission)."""

    def __init__(self, folder: Path, error: OSError) -> None:
        reason = error.strerror or str(error)
        super().__init__(
            f"cannot write the LLM reply cache in {folder}: {reason}. Free disk space there or point "
            "GRAPHSTRATA_CACHE_DIR at a writable folder."
        )
        self.folder = folder
        self.errno = error.errno


class ReplyCache:
    """Content-addressed replies on disk; ``enabled=False`` makes every lookup a miss and stores nothing."""

    def __init__(self, folder: Path, enabled: bool = True) -> None:
        self.folder = folder
        self.enabled = enabled

    @staticmethod
    def key(kind: str, model: str, payload: Any) -> str:
        """sha256 over a canonical JSON of what determines the reply (kind, model, messages, params)."""
        blob = json.dumps(
            {"v": CACHE_VERSION, "kind": kind, "model": model, "payload": payload},
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        try:
            return json.loads(self.path(key).read_text("utf-8"))
        except (OSError, ValueError):
            return None  # missing or unreadable: a miss, the reply is simply fetched again

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Temp file + ``os.replace``: a crash or a concurrent writer never leaves half a file.

        A cache that cannot be written (full or read-only disk) raises :class:`CacheWriteError` naming
        the folder, rather than a bare OSError from deep inside an extraction."""
        if not self.enabled:
            return
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        except OSError as e:
            raise CacheWriteError(self.folder, e) from e
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(value, f, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)  # a full disk must not keep half a file either
            if isinstance(e, OSError):
                raise CacheWriteError(self.folder, e) from e
            raise

    def check(self) -> None:
        """Raise :class:`CacheWriteError` now if the folder cannot be written, before any paid call (an
        ingest checks this first: a reply that cannot be cached would be paid for and then lost)."""
        if not self.enabled:
            return
        probe: str | None = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=self.folder, prefix=".probe-")
            try:
                os.write(fd, b"{}" * 2048)  # a few KiB, so a disk that is already full fails here too
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            raise CacheWriteError(self.folder, e) from e
        finally:
            if probe is not None:
                with contextlib.suppress(OSError):
                    os.unlink(probe)
