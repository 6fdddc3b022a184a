"""Test fixtures: a real Neo4j with GDS, found in this order:

1. ``NEO4J_URI`` (+ ``NEO4J_PASSWORD``) set → that server.
2. A Docker engine answers → docker/docker-compose.yml through pytest-docker.
3. Otherwise the local launcher starts the run's own instance on free ports (tests/run_instance.py:
   two runs on one machine never share one, and a developer's own server is never touched) and stops
   it afterwards, unless ``GRAPHSTRATA_KEEP_NEO4J=1`` (then the next run starts in seconds).

Every process the run spawns is stopped when the run ends, however it ends (tests/reaper.py), and the
run ends with a line giving the pytest process's peak memory against its bound (``PEAK_RSS_GB``).

Tests that need a graph take ``graph`` (a wiped database with the schema applied).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from graphstrata.config import Settings
from graphstrata.db import Database

if TYPE_CHECKING:
    from graphstrata.client import GraphStrata

ROOT = Path(__file__).resolve().parents[1]
#: The real-model tests (tests/test_local_llm.py, against the local SmolLM2 server that their fixture
#: installs and starts) are part of every run; GRAPHSTRATA_LOCAL_LLM=0 leaves them out (a quick run).
collect_ignore = ["test_local_llm.py"] if os.environ.get("GRAPHSTRATA_LOCAL_LLM") == "0" else []
try:  # as `tests.conftest` (pytest's rootdir import) and as `conftest` (a test module's fallback)
    from tests import reaper, run_instance
except ImportError:  # pragma: no cover
    import reaper  # type: ignore[no-redef]
    import run_instance  # type: ignore[no-redef]

RUN = run_instance.choose(ROOT, Settings().data_dir)
# this file is imported twice (as `conftest` and as `tests.conftest`): the second import must agree
os.environ.update(
    GRAPHSTRATA_TEST_INSTANCE=RUN.name,
    GRAPHSTRATA_TEST_BOLT_PORT=str(RUN.bolt_port),
    GRAPHSTRATA_TEST_HTTP_PORT=str(RUN.http_port),
)
TEST_INSTANCE = RUN.name
TEST_BOLT = RUN.bolt_port
TEST_HTTP = RUN.http_port
#: The bound on the pytest process's peak resident memory for a whole run (reported at the end).
PEAK_RSS_GB = float(os.environ.get("GRAPHSTRATA_TEST_PEAK_RSS_GB", "3"))
#: Stress mode (`make test-stress`): the concurrency and soak tests run longer (they read STRESS), with
#: GRAPHSTRATA_STRESS_HOGS busy-looping processes (default 2) holding the cores for the whole session.
STRESS = os.environ.get("GRAPHSTRATA_STRESS") == "1"


def _watch_spawned_processes() -> reaper.Reaper:
    """Report every process this run spawns to the reaper (once, whichever copy of this file runs first)."""
    existing = getattr(subprocess, "_graphstrata_reaper", None)
    if existing is not None:
        return existing
    watcher = reaper.Reaper()
    owner = os.getpid()
    lock = threading.Lock()
    original_init = subprocess.Popen.__init__

    def init(self: subprocess.Popen, *args, **kwargs) -> None:
        original_init(self, *args, **kwargs)
        if os.getpid() == owner:  # not in a forked child
            with lock:
                watcher.watch(self.pid)

    subprocess.Popen.__init__ = init  # type: ignore[method-assign]
    subprocess._graphstrata_reaper = watcher  # type: ignore[attr-defined]
    return watcher


REAPER = _watch_spawned_processes()


def rss_bytes() -> tuple[int, int]:
    """This process's resident memory now and its peak so far (VmRSS, VmHWM), in bytes."""
    values = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) * 1024
    return values.get("VmRSS", 0), values.get("VmHWM", 0)


#: (RSS growth in bytes, test id) of the tests that grew the process most
_GROWTH: list[tuple[int, str]] = []


def _libc():
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:  # not glibc: nothing to tune
        return None


LIBC = _libc()
if LIBC is not None and hasattr(LIBC, "mallopt"):
    # M_ARENA_MAX: ingest and retrieval run on many short-lived threads; each may get its own malloc
    # arena, and memory freed in an arena stays with the process. Two arenas keep that in check.
    LIBC.mallopt(-8, 2)


def release_memory() -> None:
    """Hand memory the finished test freed back to the system (glibc keeps freed heap otherwise)."""
    import gc

    if rss_bytes()[0] > 1024**3:
        gc.collect()  # cycles (graphs of objects a test built) first, so that their memory is free
    if LIBC is not None and hasattr(LIBC, "malloc_trim"):
        LIBC.malloc_trim(0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    before = rss_bytes()[0]
    yield
    _GROWTH.append((rss_bytes()[0] - before, item.nodeid))
    release_memory()
    _GROWTH.sort(reverse=True)
    del _GROWTH[5:]


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    now, peak = rss_bytes()
    gb = 1024**3
    verdict = "within" if peak <= PEAK_RSS_GB * gb else "OVER"
    terminalreporter.write_sep("-", "memory")
    terminalreporter.write_line(
        f"pytest process peak RSS {peak / gb:.2f} GB ({verdict} the bound of {PEAK_RSS_GB:g} GB), "
        f"{now / gb:.2f} GB at the end; Neo4j instance {TEST_INSTANCE} on bolt {TEST_BOLT} / http {TEST_HTTP}"
    )
    for grew, nodeid in _GROWTH:
        if grew > 50 * 1024**2:
            terminalreporter.write_line(f"  +{grew / 1024**2:.0f} MB during {nodeid}")


def pytest_unconfigure(config: pytest.Config) -> None:
    REAPER.close()


@pytest.fixture(scope="session", autouse=True)
def cpu_hogs() -> Iterator[None]:
    if not STRESS:
        yield
        return
    import sys

    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(int(os.environ.get("GRAPHSTRATA_STRESS_HOGS", "2")))
    ]
    try:
        yield
    finally:
        for hog in hogs:  # ours, by their handles
            hog.kill()
            hog.wait()


def docker_engine_available() -> bool:
    if not shutil.which("docker"):
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="session")
def docker_compose_file() -> str:
    return str(ROOT / "docker" / "docker-compose.yml")


@pytest.fixture(scope="session")
def neo4j_mode() -> str:
    if os.environ.get("NEO4J_URI"):
        return "uri"
    if os.environ.get("GRAPHSTRATA_TEST_DOCKER", "auto") != "0" and docker_engine_available():
        return "docker"
    return "local"


@pytest.fixture(scope="session")
def neo4j_settings(request: pytest.FixtureRequest, neo4j_mode: str, tmp_path_factory) -> Iterator[Settings]:
    """Settings pointing at the test server; the session's one source of connection details."""
    base = Settings()
    if neo4j_mode == "uri":
        yield base
        return
    if neo4j_mode == "docker":
        services = request.getfixturevalue("docker_services")
        password = os.environ.get("NEO4J_PASSWORD", "graphstrata-dev")
        uri = "bolt://127.0.0.1:7687"

        def ready() -> bool:
            try:
                with Database(uri, ("neo4j", password)) as db:
                    return db.read_one("RETURN gds.version() AS v") is not None
            except Exception:
                return False

        services.wait_until_responsive(check=ready, timeout=300, pause=2)
        yield base.model_copy(update={"neo4j_uri": uri, "neo4j_password": password})
        return
    from graphstrata.neo4j_local import Instance

    settings = base.model_copy(
        update={
            "instance": TEST_INSTANCE,
            "bolt_port": TEST_BOLT,
            "http_port": TEST_HTTP,
            "heap": os.environ.get("GRAPHSTRATA_TEST_HEAP", "2g"),
            "pagecache": os.environ.get("GRAPHSTRATA_TEST_PAGECACHE", "512m"),
            "neo4j_password": None,
        }
    )
    inst = Instance.from_settings(settings)
    started = inst.start()
    keep = os.environ.get("GRAPHSTRATA_KEEP_NEO4J") == "1" and not RUN.ephemeral
    pid = inst.pid()
    if started and pid is not None:
        # the server this run started dies with the run (the reaper), unless it is to be kept
        (REAPER.forget if keep else REAPER.watch)(pid)
    yield settings
    if started and not keep:
        inst.stop()
        if RUN.ephemeral:
            shutil.rmtree(inst.root, ignore_errors=True)


@pytest.fixture(scope="session")
def db(neo4j_settings: Settings) -> Iterator[Database]:
    with Database.from_settings(neo4j_settings) as database:
        yield database


def wipe(db: Database) -> None:
    from graphstrata.gds import GDS

    db.wipe()
    GDS(db).drop_all()


@pytest.fixture
def empty_db(db: Database) -> Database:
    """The database with no nodes (schema objects may remain)."""
    wipe(db)
    return db


def fresh_graph(db: Database) -> Database:
    """Wipe ``db`` and apply graphstrata's schema for the local embedding model (for fixtures of any scope)."""
    from graphstrata.embed import get_embedder
    from graphstrata.schema import apply_schema

    wipe(db)
    emb = get_embedder()
    apply_schema(db, emb.name, emb.dim)
    return db


@pytest.fixture
def graph(db: Database) -> Database:
    """A wiped database with graphstrata's schema applied for the local embedding model."""
    return fresh_graph(db)


@pytest.fixture(scope="module")
def corpus(db: Database, neo4j_settings: Settings) -> GraphStrata:
    """samples/corpus ingested with spaCy and augmented, once per test module that asks for it (a
    module that needs another corpus defines its own ``corpus``)."""
    from graphstrata.client import GraphStrata
    from graphstrata.ingest.pipeline import IngestOptions

    wipe(db)
    gs = GraphStrata(neo4j_settings, db=db)
    gs.ingest(["samples/corpus"], IngestOptions(extractor="spacy"))
    gs.augment()
    return gs


@pytest.fixture
def gs(graph: Database, neo4j_settings: Settings) -> GraphStrata:
    """A GraphStrata on `graph` (wiped, schema applied)."""
    from graphstrata.client import GraphStrata

    return GraphStrata(neo4j_settings, db=graph)
