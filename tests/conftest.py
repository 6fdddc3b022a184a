"""Test fixtures: a real Neo4j with GDS, found in this order:

1. ``NEO4J_URI`` (+ ``NEO4J_PASSWORD``) set → that server.
2. A Docker engine answers → docker/docker-compose.yml through pytest-docker.
3. Otherwise the local launcher starts its own instance ``pytest`` (ports 17687/17474, so a
   developer's own server and data are never touched) and stops it afterwards, unless
   ``GRAPHSTRATA_KEEP_NEO4J=1`` (then the next run starts in seconds).

Tests that need a graph take ``graph`` (a wiped database with the schema applied).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from graphstrata.config import Settings
from graphstrata.db import Database

if TYPE_CHECKING:
    from graphstrata.client import GraphStrata

ROOT = Path(__file__).resolve().parents[1]
TEST_INSTANCE = os.environ.get("GRAPHSTRATA_TEST_INSTANCE", "pytest")
TEST_BOLT = int(os.environ.get("GRAPHSTRATA_TEST_BOLT_PORT", "17687"))
TEST_HTTP = int(os.environ.get("GRAPHSTRATA_TEST_HTTP_PORT", "17474"))
#: Stress mode (`make test-stress`): the concurrency and soak tests run longer (they read STRESS), with
#: GRAPHSTRATA_STRESS_HOGS busy-looping processes (default 2) holding the cores for the whole session.
STRESS = os.environ.get("GRAPHSTRATA_STRESS") == "1"


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
    yield settings
    if started and os.environ.get("GRAPHSTRATA_KEEP_NEO4J") != "1":
        inst.stop()


@pytest.fixture(scope="session")
def db(neo4j_settings: Settings) -> Iterator[Database]:
    with Database.from_settings(neo4j_settings) as database:
        yield database


def wipe(db: Database) -> None:
    from graphstrata.cypher import query
    from graphstrata.gds import GDS

    db.auto(query("meta.wipe"))
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
