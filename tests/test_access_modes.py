"""Every read path runs in read transactions, every write in write transactions.

With a ``neo4j://`` routing driver the access mode decides where a query goes: reads to a cluster's
secondaries, writes to the primary. A driver that records the mode of every transaction it opens
(wrapped around the real one, so the queries still run on the test server) shows which mode each
path uses: retrieval by every method, the analysts' library, and the HTTP server's read endpoints.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from neo4j import READ_ACCESS, WRITE_ACCESS, GraphDatabase, RoutingControl
from pydantic import SecretStr

import graphstrata.db
from graphstrata import analysts as lib
from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database, connection_params

DOCS = [
    ("Seine", "The Seine is a river that flows through Paris and reaches the English Channel at Le Havre."),
    ("Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889."),
    ("Danube", "The Danube flows through Vienna, Budapest and Belgrade into the Black Sea."),
    ("Zanzibar", "Zanzibar is an archipelago off the coast of Tanzania, known for cloves and nutmeg."),
]
QUESTION = "Which river flows through Paris?"


class Recorder:
    def __init__(self) -> None:
        self.modes: list[tuple[str, str]] = []  # (READ|WRITE, what)

    def writes(self) -> list[str]:
        return [what for mode, what in self.modes if mode == WRITE_ACCESS]


def _text(q: Any) -> str:
    return str(getattr(q, "text", q))[:120]


class RecordingSession:
    def __init__(self, session: Any, mode: str, rec: Recorder) -> None:
        self._s, self._mode, self._rec = session, mode, rec

    def __getattr__(self, name: str) -> Any:
        return getattr(self._s, name)

    def __enter__(self) -> RecordingSession:
        self._s.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._s.__exit__(*exc)

    def run(self, query: Any, *args: Any, **kw: Any) -> Any:
        self._rec.modes.append((self._mode, _text(query)))
        return self._s.run(query, *args, **kw)

    def begin_transaction(self, *args: Any, **kw: Any) -> Any:
        self._rec.modes.append((self._mode, "explicit transaction"))
        return self._s.begin_transaction(*args, **kw)

    def execute_read(self, work: Any, *args: Any, **kw: Any) -> Any:
        self._rec.modes.append((READ_ACCESS, getattr(work, "__name__", "work")))
        return self._s.execute_read(work, *args, **kw)

    def execute_write(self, work: Any, *args: Any, **kw: Any) -> Any:
        self._rec.modes.append((WRITE_ACCESS, getattr(work, "__name__", "work")))
        return self._s.execute_write(work, *args, **kw)


class RecordingDriver:
    def __init__(self, driver: Any, rec: Recorder) -> None:
        self._d, self._rec = driver, rec

    def __getattr__(self, name: str) -> Any:
        return getattr(self._d, name)

    def session(self, **config: Any) -> RecordingSession:
        mode = config.get("default_access_mode", WRITE_ACCESS)
        return RecordingSession(self._d.session(**config), mode, self._rec)

    def execute_query(self, query: Any, parameters: Any = None, routing_: Any = RoutingControl.WRITE, **kw: Any):
        read = routing_ in (RoutingControl.READ, "r")
        self._rec.modes.append((READ_ACCESS if read else WRITE_ACCESS, _text(query)))
        return self._d.execute_query(query, parameters, routing_=routing_, **kw)


@pytest.fixture(scope="module")
def rec() -> Iterator[Recorder]:
    """Every driver graphstrata opens from here on records its transactions' access modes."""
    recorder = Recorder()
    real = GraphDatabase.driver

    class Factory:
        bookmark_manager = staticmethod(GraphDatabase.bookmark_manager)

        @staticmethod
        def driver(*args: Any, **kw: Any) -> RecordingDriver:
            return RecordingDriver(real(*args, **kw), recorder)

    mp = pytest.MonkeyPatch()
    mp.setattr(graphstrata.db, "GraphDatabase", Factory)
    yield recorder
    mp.undo()


@pytest.fixture(scope="module")
def gs(rec: Recorder, neo4j_settings: Settings) -> Iterator[GraphStrata]:
    from graphstrata.embed import get_embedder
    from graphstrata.schema import apply_schema
    from tests.conftest import wipe

    with Database.from_settings(neo4j_settings) as db:
        wipe(db)
        emb = get_embedder()
        apply_schema(db, emb.name, emb.dim)
        g = GraphStrata(neo4j_settings, db=db, embedder=emb)
        rec.modes.clear()
        g.ingest_texts(DOCS)
        g.augment()
        # the recorder sees what it must: ingest and augment write
        assert rec.writes(), "the recording driver saw no write transaction"
        yield g


@pytest.fixture
def recorded(rec: Recorder) -> Recorder:
    rec.modes.clear()
    return rec


def test_the_recorder_sees_both_modes(gs: GraphStrata, recorded: Recorder) -> None:
    gs.db.read("RETURN 1 AS x")
    gs.db.write("RETURN 1 AS x")
    assert [m for m, _ in recorded.modes] == [READ_ACCESS, WRITE_ACCESS]


def test_every_retrieval_method_only_reads(gs: GraphStrata, recorded: Recorder) -> None:
    methods = sorted(gs.methods())
    assert {"vector", "noderag", "ketrag", "e2graphrag", "darag", "fusion", "auto"} <= set(methods)
    for method in methods:
        recorded.modes.clear()
        result = gs.retrieve(QUESTION, method=method)
        assert result.items, f"{method} retrieved nothing: its paths were not exercised"
        assert recorded.modes and recorded.writes() == [], f"{method} wrote: {recorded.writes()}"


SAMPLE = {"string": "Paris", "list": ["Paris"], "int": 5, "float": 0.5, "bool": True, "map": {}, "any": "Paris"}


def test_the_analysts_library_only_reads(gs: GraphStrata, recorded: Recorder) -> None:
    queries = lib.library()
    assert queries
    for name, q in sorted(queries.items()):
        lib.run_library(gs.db, name, {p.name: SAMPLE[p.type] for p in q.params if p.required})
    assert len(recorded.modes) >= len(queries) and recorded.writes() == []


def test_server_read_endpoints_only_read(gs: GraphStrata, rec: Recorder, neo4j_settings: Settings) -> None:
    from fastapi.testclient import TestClient

    from graphstrata.server.app import create_app

    uri, (user, password) = connection_params(neo4j_settings)
    settings = neo4j_settings.model_copy(
        update={"neo4j_uri": uri, "neo4j_user": user, "neo4j_password": password, "api_key": SecretStr("k")}
    )
    with TestClient(create_app(settings), headers={"Authorization": "Bearer k"}) as client:
        assert client.get("/stats").status_code == 200  # connects (and applies the schema: writes)
        rec.modes.clear()
        assert client.get("/health").json()["neo4j"]["reachable"]
        assert client.get("/stats").json()
        assert client.post("/retrieve", json={"question": QUESTION, "method": "noderag"}).json()["items"]
        assert client.get("/jobs").status_code == 200
    assert rec.modes and rec.writes() == []
