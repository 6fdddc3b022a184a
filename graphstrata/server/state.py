"""What the request handlers share: one GraphStrata, the job queue, health checks; and how a failed job's
error is named."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from graphstrata.config import Settings
from graphstrata.server.bounded import Bounded
from graphstrata.server.errors import ApiError
from graphstrata.server.jobs import JobQueue
from graphstrata.server.journal import JobJournal

log = logging.getLogger("graphstrata.server")

#: how long closing the server waits for the warm-up's current step (projections of a large graph)
WARM_JOIN_SECONDS = 120.0

# ------------------------------------------------------------------------------------------------
# state shared by the handlers
# ------------------------------------------------------------------------------------------------


class ServerState:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._gs: Any = None
        self._lock = threading.Lock()
        self._llm_health: tuple[float, dict[str, Any]] | None = None
        self.jobs = JobQueue(classify=classify_error)
        self.bounded = Bounded()
        self.journal = JobJournal(settings.data_dir / "server" / "jobs.txt")
        self._warmer: threading.Thread | None = None
        self._stopping = threading.Event()

    def start(self) -> None:
        from graphstrata.blas import limit_blas_threads
        from graphstrata.embed import get_embedder
        from graphstrata.text.nlp import get_nlp

        limit_blas_threads(self.settings.blas_threads)  # before any thread multiplies
        self.embedder = get_embedder(self.settings)
        get_nlp()  # spaCy (query entities) loads once, not inside the first question
        self.jobs.start()
        try:
            gs = self.gs()
        except Exception as e:  # serve anyway: /health says what is wrong, requests get 503
            log.warning("not connected to Neo4j yet: %s", e)
        else:
            self._warmer = threading.Thread(target=self._warm, args=(gs,), name="warm-questions", daemon=True)
            self._warmer.start()

    def _warm(self, gs: Any) -> None:
        """The PPR methods' projections and DA-RAG's layers, made in the background at start: the
        first question finds them."""
        from graphstrata.retrieval import darag
        from graphstrata.retrieval.warmup import warm

        if self._stopping.is_set():
            return
        try:
            warm(gs.db, self.settings.gds_concurrency)
        except Exception as e:  # a question builds it on demand as before
            log.warning("PPR projections not prepared at start: %s", e)
        if self._stopping.is_set():  # the server is closing: close() waits for this thread
            return
        try:
            darag.warm(gs.db)
        except Exception as e:
            log.warning("DA-RAG's layers not read at start: %s", e)

    def gs(self) -> Any:
        """The shared GraphStrata, connected on first use (and again after a failed attempt)."""
        with self._lock:
            if self._gs is None:
                from graphstrata.client import GraphStrata
                from graphstrata.db import Database
                from graphstrata.llm import LLMClient
                from graphstrata.schema import apply_schema

                db = Database.from_settings(self.settings)
                try:
                    apply_schema(db, self.embedder.name, self.embedder.dim, precision=self.embedder.default_precision)
                except Exception:
                    db.close()
                    raise
                llm = LLMClient.from_settings(self.settings) if self.settings.llm_enabled else None
                self._gs = GraphStrata(self.settings, db=db, embedder=self.embedder, llm=llm)
            return self._gs

    def close(self) -> None:
        self.jobs.stop()
        # the warm-up thread reads through the shared driver: closing the driver under a running
        # query breaks it mid-message, so its current step ends first (it starts no other)
        self._stopping.set()
        if self._warmer is not None:
            self._warmer.join(timeout=WARM_JOIN_SECONDS)
            if self._warmer.is_alive():
                log.warning("the warm-up still runs after %s s; closing the connection under it", WARM_JOIN_SECONDS)
        with self._lock:
            if self._gs is not None:
                if self._gs._llm is not None:
                    self._gs._llm.close()
                self._gs.db.close()
                self._gs = None

    # --- health -------------------------------------------------------------------------------
    def neo4j_health(self) -> dict[str, Any]:
        from graphstrata.gds import GDS

        try:
            gs = self.gs()
            info = gs.db.driver.get_server_info()
            return {
                "reachable": True,
                "version": info.agent.partition("/")[2] or info.agent,
                # a session's GDS is not asked: asking would start one
                "gds_backend": self.settings.gds_backend,
                "gds_version": GDS(gs.db, self.settings).version() if self.settings.gds_backend == "plugin" else None,
                # the store was found older than this server's last write (a restored backup):
                # the connection went on from the store as it is
                "store_rewound": gs.db.bookmark_resets[-5:],
            }
        except Exception as e:
            return {"reachable": False, "error": f"{type(e).__name__}: {e}"}

    def llm_health(self) -> dict[str, Any]:
        """Configured? Does the endpoint answer `GET /models`? (cached for 15 s)"""
        s = self.settings
        if not s.llm_enabled:
            return {"configured": False, "reachable": None}
        now = time.monotonic()
        if self._llm_health and now - self._llm_health[0] < 15:
            return self._llm_health[1]
        import httpx

        base = (s.openai_base_url or "https://api.openai.com/v1").rstrip("/")
        out: dict[str, Any] = {"configured": True, "model": s.chat_model}
        try:
            headers = {"Authorization": f"Bearer {s.openai_api_key}"} if s.openai_api_key else {}
            r = httpx.get(f"{base}/models", headers=headers, timeout=3.0)
            out["reachable"] = r.status_code < 500
            if r.status_code >= 400:
                out["error"] = f"GET /models answered {r.status_code}"
        except httpx.HTTPError as e:
            out.update(reachable=False, error=f"{type(e).__name__}: {e}")
        self._llm_health = (now, out)
        return out


def classify_error(exc: BaseException) -> tuple[str, str]:
    """A failed job's error as (stable code, message)."""
    from neo4j.exceptions import ServiceUnavailable, SessionExpired

    from graphstrata.db import ConnectionError_
    from graphstrata.ingest.pipeline import IngestWriteError
    from graphstrata.llm import LLMError
    from graphstrata.llm_cache import CacheWriteError
    from graphstrata.schema import SchemaError

    if isinstance(exc, ConnectionError_ | ServiceUnavailable | SessionExpired):
        return "neo4j_unavailable", str(exc)
    if isinstance(exc, IngestWriteError):  # the message names the documents and says what was written
        return ("neo4j_unavailable" if exc.unavailable else "write_failed"), str(exc)
    if isinstance(exc, CacheWriteError):
        return "write_failed", str(exc)
    if isinstance(exc, LLMError):
        return "llm_unavailable", str(exc)
    if isinstance(exc, SchemaError):
        return "schema_mismatch", str(exc)
    if isinstance(exc, ApiError):
        return exc.code, exc.message
    return "internal", "internal error (details are in the server log)"
