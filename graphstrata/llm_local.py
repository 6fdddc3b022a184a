"""`graphstrata llm start | stop | status`: a local OpenAI-compatible chat server (llama.cpp's
``llama-server`` with SmolLM2-135M-Instruct, see :mod:`graphstrata.llm_local_dist`) on 127.0.0.1.

The launcher follows :mod:`graphstrata.neo4j_local`: a pid file checked against the process's
command line, a log file, and a readiness wait with a deadline (``GET /health`` answers 200 once
the model is loaded). :meth:`LocalLLM.environment` gives the three variables that point graphstrata
at the server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from graphstrata.config import Settings, get_settings
from graphstrata.llm_local_dist import (
    MODEL_ALIAS,
    MODEL_FILE,
    LocalLLMError,
    LocalLLMFiles,
    ensure_installed,
)
from graphstrata.neo4j_local import terminate

DEFAULT_PORT = 8079
#: Context window of the server (tokens); SmolLM2 was trained to 8k.
DEFAULT_CTX = 8192
#: The server's cap on a reply's tokens (a request's max_tokens cannot exceed it): a tiny model that
#: repeats itself is stopped here, and the client reports the cut-off reply.
DEFAULT_MAX_TOKENS = 1024
#: What ``OPENAI_API_KEY`` is set to: llama-server is started without a key (loopback only), but the
#: openai package insists on one.
API_KEY = "local"

__all__ = ["DEFAULT_CTX", "DEFAULT_PORT", "LocalLLM", "LocalLLMError"]


@dataclass
class LocalLLM:
    """One local model server: its cache folder, port, context window and threads."""

    root: Path
    port: int = DEFAULT_PORT
    ctx: int = DEFAULT_CTX
    threads: int | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS

    @classmethod
    def from_settings(
        cls,
        settings: Settings | None = None,
        *,
        port: int | None = None,
        ctx: int | None = None,
        max_tokens: int | None = None,
    ) -> LocalLLM:
        s = settings or get_settings()
        env_port = os.environ.get("GRAPHSTRATA_LLM_PORT")
        env_ctx = os.environ.get("GRAPHSTRATA_LLM_CTX")
        return cls(
            Path(s.cache_dir) / "local-llm",  # beside the reply cache (cache_dir/llm), not in it
            port=port or (int(env_port) if env_port else DEFAULT_PORT),
            ctx=ctx or (int(env_ctx) if env_ctx else DEFAULT_CTX),
            max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
        )

    @property
    def files(self) -> LocalLLMFiles:
        return LocalLLMFiles(self.root)

    @property
    def run_dir(self) -> Path:
        return self.root / "run" / str(self.port)

    @property
    def pid_file(self) -> Path:
        return self.run_dir / "llama-server.pid"

    @property
    def log_file(self) -> Path:
        return self.run_dir / "llama-server.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def environment(self) -> dict[str, str]:
        """The variables that point graphstrata (or any OpenAI client) at this server."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": API_KEY, "GRAPHSTRATA_CHAT_MODEL": MODEL_ALIAS}

    # ---- processes ---------------------------------------------------------------------------

    def pid(self) -> int | None:
        """PID of this server if it runs (the pid file's process must be our llama-server on our port)."""
        try:
            pid = int(self.pid_file.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            return None
        words = [w.decode(errors="replace") for w in cmdline]
        ours = words and words[0] == str(self.files.server) and "--port" in words
        return pid if ours and words[words.index("--port") + 1] == str(self.port) else None

    def is_running(self) -> bool:
        return self.pid() is not None

    def healthy(self) -> bool:
        """The server answers and its model is loaded."""
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def start(self, timeout: float = 120.0, log: Callable[[str], None] = print) -> bool:
        """Install (first time), start and wait until the model answers; False if it already ran."""
        if self.is_running():
            if not self.wait_ready(timeout):
                raise LocalLLMError(f"the local LLM (pid {self.pid()}) runs but does not answer.\n{self.log_tail()}")
            return False
        if _port_answers(self.port):
            raise LocalLLMError(
                f"port {self.port} on 127.0.0.1 is taken by another process; choose another "
                "(--port or GRAPHSTRATA_LLM_PORT)"
            )
        ensure_installed(self.files, log)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        # One thread by default: llama.cpp's threads meet at a barrier per layer, and on a machine whose
        # cores are busy (Neo4j, ingest, a test run) a descheduled thread stalls every token — measured
        # here with a 135M model beside a two-process load: 2 threads 1.6-4 tokens/s, 1 thread 50-90.
        threads = self.threads or 1
        cmd = [
            str(self.files.server),
            "--model",
            str(self.files.model),
            "--alias",
            MODEL_ALIAS,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--ctx-size",
            str(self.ctx),
            "--n-predict",
            str(self.max_tokens),
            "--parallel",
            "1",  # one slot: the whole window for each request; graphstrata's requests queue
            "--threads",
            str(threads),
            "--threads-batch",
            str(threads),
            "--jinja",  # the chat template the model file carries
            "--no-webui",
        ]
        log(f"Starting {MODEL_ALIAS} ({MODEL_FILE}) on {self.base_url} …")
        with self.log_file.open("ab") as out:
            proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        self.pid_file.write_text(str(proc.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise LocalLLMError(f"llama-server exited with code {proc.returncode}.\n{self.log_tail()}")
            if self.healthy():
                return True
            time.sleep(0.2)
        self.stop()
        raise LocalLLMError(
            f"the local LLM did not answer on {self.base_url} within {timeout:.0f}s.\n{self.log_tail()}"
        )

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.healthy():
                return True
            time.sleep(0.2)
        return False

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout``); False if it was not running."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        terminate(pid, timeout)
        self.pid_file.unlink(missing_ok=True)
        return True

    def status(self) -> dict[str, object]:
        running = self.is_running()
        return {
            "model": MODEL_ALIAS,
            "installed": self.files.installed(),
            "running": running,
            "pid": self.pid(),
            "base_url": self.base_url,
            "context": self.ctx,
            "max_tokens": self.max_tokens,
            "answering": running and self.healthy(),
            "cache": str(self.root),
        }

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_file.exists():
            return f"(no log at {self.log_file})"
        tail = self.log_file.read_text(errors="replace").splitlines()[-lines:]
        return f"--- {self.log_file} (last {len(tail)} lines)\n" + "\n".join(tail)


def _port_answers(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0
