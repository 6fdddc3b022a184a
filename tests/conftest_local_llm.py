"""pytest plugin: the real local model (``graphstrata llm start``'s server) for the tests that need
it, started once per session through the product's own launcher (which installs it on first use).

The server listens on ``GRAPHSTRATA_TEST_LLM_PORT`` (default: a free port, so that two test runs on
one machine never share a server; its pid and log live under a folder of that port). Replies are capped at
``TEST_MAX_TOKENS`` so a rambling answer costs seconds, not minutes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphstrata.config import Settings
from graphstrata.llm import LLMClient
from graphstrata.llm_local import LocalLLM
from tests.run_instance import free_ports

TEST_PORT = int(os.environ.get("GRAPHSTRATA_TEST_LLM_PORT") or free_ports(1)[0])
TEST_MAX_TOKENS = 640
TEST_CTX = 8192


@pytest.fixture(scope="session")
def local_llm() -> Iterator[LocalLLM]:
    """The running local model server (installed and started by the product's launcher)."""
    server = LocalLLM.from_settings(Settings(), port=TEST_PORT, ctx=TEST_CTX, max_tokens=TEST_MAX_TOKENS)
    started_at = time.monotonic()
    started = server.start(timeout=600, log=lambda m: print(m, flush=True))
    print(f"local LLM ready in {time.monotonic() - started_at:.1f}s on {server.base_url}", flush=True)
    yield server
    if started:
        server.stop()


def local_llm_settings(base: Settings, server: LocalLLM, cache_dir: Path) -> Settings:
    """``base`` (the test database) pointed at the local model, with its own reply cache."""
    env = server.environment()
    return base.model_copy(
        update={
            "openai_base_url": env["OPENAI_BASE_URL"],
            "openai_api_key": env["OPENAI_API_KEY"],
            "chat_model": env["GRAPHSTRATA_CHAT_MODEL"],
            "cache_dir": cache_dir,
            "llm_timeout": 300.0,
            "llm_concurrency": 1,  # the server has one slot; queued requests would only wait there
        }
    )


@pytest.fixture(scope="session")
def real_llm_settings(
    neo4j_settings: Settings, local_llm: LocalLLM, tmp_path_factory: pytest.TempPathFactory
) -> Settings:
    return local_llm_settings(neo4j_settings, local_llm, tmp_path_factory.mktemp("real-llm-cache"))


@pytest.fixture
def real_llm(real_llm_settings: Settings, tmp_path: Path) -> Iterator[LLMClient]:
    """A client of the local model with a per-test cache (every call reaches the model)."""
    client = LLMClient(real_llm_settings, cache_dir=tmp_path / "cache", max_attempts=2, backoff_initial=0.1)
    yield client
    client.close()
