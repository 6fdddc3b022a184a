"""pytest plugin with the LLM fixtures; load it with ``pytest_plugins = ["tests.conftest_llm"]``
(or ``["conftest_llm"]`` while tests/ is not a package, see the import fallback in tests/test_llm.py).

(A plugin module rather than ``tests/conftest.py``, which is owned by the database fixtures.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from graphstrata.config import Settings
from graphstrata.llm import LLMClient

try:
    from tests.fake_openai import CHAT_MODEL, EMBED_MODEL, FakeOpenAI
except ModuleNotFoundError:  # tests/ is no package: pytest put tests/ itself on sys.path
    from fake_openai import CHAT_MODEL, EMBED_MODEL, FakeOpenAI  # type: ignore[no-redef]

__all__ = ["FakeOpenAI", "fake_openai", "llm_client", "llm_client_factory", "make_llm_client"]


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running fake OpenAI-compatible server with fresh counters (one per test)."""
    with FakeOpenAI(api_key="test-key", embed_dim=16) as fake:
        yield fake


def make_llm_client(fake: FakeOpenAI, cache_dir: Path, **overrides: object) -> LLMClient:
    """A client for ``fake`` with millisecond backoff and a short timeout, so failure tests are quick."""
    settings = Settings(
        OPENAI_API_KEY=fake.api_key,
        OPENAI_BASE_URL=fake.base_url,
        GRAPHSTRATA_CHAT_MODEL=CHAT_MODEL,
        GRAPHSTRATA_EMBED_MODEL=EMBED_MODEL,
        GRAPHSTRATA_EMBED_DIM=fake.embed_dim,
        GRAPHSTRATA_CACHE_DIR=str(cache_dir),
        GRAPHSTRATA_LLM_TIMEOUT=2.0,
        GRAPHSTRATA_LLM_CONCURRENCY=4,
    )
    options: dict[str, object] = {"backoff_initial": 0.01, "backoff_max": 0.05, "max_attempts": 4}
    options.update(overrides)
    return LLMClient(settings, **options)  # type: ignore[arg-type]


@pytest.fixture
def llm_client_factory(fake_openai: FakeOpenAI, tmp_path: Path) -> Iterator[Callable[..., LLMClient]]:
    """``factory(cache_dir=tmp_path / "cache", **overrides)``: more clients on the same fake server."""
    clients: list[LLMClient] = []

    def factory(cache_dir: Path | None = None, **overrides: object) -> LLMClient:
        clients.append(make_llm_client(fake_openai, cache_dir or tmp_path / "cache", **overrides))
        return clients[-1]

    yield factory
    for client in clients:
        client.close()


@pytest.fixture
def llm_client(fake_openai: FakeOpenAI, tmp_path: Path) -> Iterator[LLMClient]:
    """An :class:`LLMClient` talking to ``fake_openai`` with a per-test cache directory."""
    client = make_llm_client(fake_openai, tmp_path / "cache")
    yield client
    client.close()
