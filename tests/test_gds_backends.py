"""graphstrata/gds.py's two backends and its memory check, against the test server's GDS.

- ``plugin``: the graphdatascience client over graphstrata's Database; a projection whose memory
  estimate exceeds what is available is refused with a clear error before anything is projected.
- ``aura_sessions``: no Aura is reachable from here, so ``graphdatascience.session.GdsSessions`` — the
  class graphstrata asks for a session — is replaced by a fake that records how it is called and
  hands out a session *emulated on the test server's GDS plugin*: a remote projection's query runs
  on the database as it would for a session, with ``gds.graph.project.remote(…)`` made the plugin's
  ``gds.graph.project($name, …)``. The database itself is never faked. What this cannot show is how a
  real session behaves (Arrow transport, its node numbering): README "Clusters and Aura".
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, ClassVar

import pytest
from pydantic import SecretStr

import graphstrata.gds as gds_module
from graphstrata.client import GraphStrata
from graphstrata.config import ConfigError, Settings
from graphstrata.db import Database, connection_params
from graphstrata.gds import GDS, NotOnAuraSessions, ProjectionTooLarge
from graphstrata.retrieval.base import RetrievalError

DOCS = [
    ("Seine", "The Seine is a river that flows through Paris and reaches the English Channel at Le Havre."),
    ("Loire", "The Loire is the longest river in France and flows into the Atlantic at Saint-Nazaire."),
    ("Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889."),
    ("Danube", "The Danube flows through Vienna, Budapest and Belgrade into the Black Sea."),
    ("Vienna", "Vienna is the capital of Austria; the Danube flows through Vienna."),
    ("Zanzibar", "Zanzibar is an archipelago off the coast of Tanzania, known for cloves and nutmeg."),
    ("Photosynthesis", "Photosynthesis converts light energy into chemical energy in plants and algae."),
]


# --- the plugin backend: memory check ---------------------------------------------------------
@pytest.fixture(scope="module")
def augmented(db: Database, neo4j_settings: Settings) -> GraphStrata:
    from graphstrata.embed import get_embedder
    from tests.conftest import fresh_graph

    gs = GraphStrata(neo4j_settings, db=fresh_graph(db), embedder=get_embedder())
    gs.ingest_texts(DOCS)
    gs.augment(knn_exact_max_nodes=0, knn_approximate="gds")  # every similarity layer through GDS KNN
    return gs


def test_the_plugin_backend_is_the_client_over_our_database(augmented: GraphStrata) -> None:
    from graphdatascience import GraphDataScience

    gds = GDS(augmented.db, augmented.settings)
    assert not gds.remote and isinstance(gds.client, GraphDataScience)
    assert gds.client is GDS(augmented.db, augmented.settings).client  # one client per Database
    assert gds.version().startswith("2.")


def test_a_projection_above_the_memory_limit_is_refused_before_it_is_built(augmented: GraphStrata) -> None:
    # a real knob: the most memory graphstrata lets a projection take, here far below what it needs
    tight = augmented.settings.model_copy(update={"gds_max_memory": "1k", "gds_estimate_min_nodes": 0})
    gds = GDS(augmented.db, tight)
    with pytest.raises(ProjectionTooLarge) as e:
        gds.project_ordered("too_large", ["Chunk"], embedding=True)
    message = str(e.value)
    assert "'gs_too_large'" in message and f"{len(DOCS)} nodes" in message
    assert "by GDS's estimate, but 1.0 KiB is available (GRAPHSTRATA_GDS_MAX_MEMORY=1k)" in message
    assert "server.memory.heap.max_size" in message
    assert not gds.exists("gs_too_large")
    with pytest.raises(ProjectionTooLarge):  # native projections too
        gds.project("too_large", "Chunk", "SIMILAR")
    assert not gds.exists("gs_too_large")
    # in augment, before the stage writes anything, with the stage named
    similar = augmented.db.read_one("MATCH ()-[s:SIMILAR]->() RETURN count(s) AS n")["n"]
    with pytest.raises(ProjectionTooLarge, match=r"^augment stage chunk_knn: the GDS projection 'gs_chunk_knn'"):
        GraphStrata(tight, db=augmented.db, embedder=augmented.embedder).augment(
            ["chunk_knn"], knn_exact_max_nodes=0, knn_approximate="gds"
        )
    assert augmented.db.read_one("MATCH ()-[s:SIMILAR]->() RETURN count(s) AS n")["n"] == similar


def test_small_projections_skip_the_check_and_a_sufficient_limit_passes(augmented: GraphStrata) -> None:
    below = augmented.settings.model_copy(update={"gds_max_memory": "1k", "gds_estimate_min_nodes": 1000})
    gds = GDS(augmented.db, below)
    with gds.temporary(gds.project_ordered("small", ["Chunk"], embedding=True)) as p:
        assert p.nodes == len(DOCS)
    ample = augmented.settings.model_copy(update={"gds_max_memory": "512m", "gds_estimate_min_nodes": 0})
    gds = GDS(augmented.db, ample)
    with gds.temporary(gds.project_ordered("ample", ["Chunk"], embedding=True)) as p:
        assert p.nodes == len(DOCS)


def test_ordered_projection_of_no_nodes_is_empty_not_an_error(augmented: GraphStrata) -> None:
    """A graph without nodes of a layer (an LLM-built graph with no Attribute yet, or none with a vector):
    the stage sees an empty projection, as with a native one, instead of the client's error."""
    gds = GDS(augmented.db, augmented.settings)
    with gds.temporary(gds.project_ordered("none", ["NoSuchLabel"], ["NO_SUCH_TYPE"], embedding=True)) as p:
        assert (p.nodes, p.rels) == (0, 0)
    assert not gds.exists("gs_none")


# --- the aura_sessions backend ------------------------------------------------------------------
class EmulatedSession:
    """What graphstrata uses of an ``AuraGraphDataScience`` session, on the local plugin: algorithms,
    catalogue, ``set_bookmarks`` and the remote Cypher projection (``graph.project.cypher``)."""

    def __init__(self, plugin: Any) -> None:
        self._plugin = plugin
        self.remote_projections: list[dict[str, Any]] = []
        self.bookmarks: list[Any] = []

    def __getattr__(self, name: str) -> Any:  # algorithm endpoints: the plugin's
        return getattr(self._plugin, name)

    def set_bookmarks(self, bookmarks: Any) -> None:
        self.bookmarks.append(bookmarks)
        self._plugin.set_bookmarks(bookmarks)

    @property
    def graph(self) -> Any:
        session = self

        class Project:
            def cypher(
                self,
                graph_name: str,
                query: str,
                *,
                query_parameters: dict | None = None,
                undirected_relationship_types: list[str] | None = None,
            ) -> Any:
                session.remote_projections.append(
                    {"name": graph_name, "query": query, "undirected": undirected_relationship_types}
                )
                assert query.count("gds.graph.project.remote(") == 1 and query.rstrip().endswith(")")
                local = query.replace("gds.graph.project.remote(", "gds.graph.project($graph_name, ").rstrip()
                local = local[:-1] + ", $graph_config)"
                config = {"undirectedRelationshipTypes": undirected_relationship_types or []}
                return session._plugin.graph.project.cypher(
                    local, graph_name=graph_name, graph_config=config, **(query_parameters or {})
                )

            def native(self, *args: Any, **kw: Any) -> Any:
                raise AssertionError("graphstrata projects remotely with Cypher only")

        class Catalog:
            project = Project()

            def __getattr__(self, name: str) -> Any:  # list, get, exists, drop
                return getattr(session._plugin.graph, name)

        return Catalog()


class FakeGdsSessions:
    """Stands in for ``graphdatascience.session.GdsSessions`` (Aura is unreachable): records its calls;
    a session connects to the database with the DbmsConnectionInfo it was given."""

    instances: ClassVar[list[FakeGdsSessions]] = []

    def __init__(self, api_credentials: Any) -> None:
        self.api_credentials = api_credentials
        self.calls: list[dict[str, Any]] = []
        self.session: EmulatedSession | None = None
        FakeGdsSessions.instances.append(self)

    def get_or_create(self, session_name: str, memory: Any, db_connection: Any = None, **kw: Any) -> Any:
        from graphdatascience import GraphDataScience

        self.calls.append({"session_name": session_name, "memory": memory, "db_connection": db_connection, **kw})
        if db_connection.uri is None:  # attached to an AuraDB instance: not reachable either
            return object()
        plugin = GraphDataScience(
            db_connection.uri,
            auth=(db_connection.username, db_connection.password),
            database=db_connection.database,
            arrow=False,
            show_progress=False,
        )
        self.session = EmulatedSession(plugin)
        return self.session


@pytest.fixture
def sessions(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FakeGdsSessions]]:
    import graphdatascience.session

    FakeGdsSessions.instances = []
    monkeypatch.setattr(graphdatascience.session, "GdsSessions", FakeGdsSessions)
    yield FakeGdsSessions
    for s in FakeGdsSessions.instances:
        if s.session is not None:
            s.session._plugin.close()


def aura_settings(neo4j_settings: Settings, **update: Any) -> Settings:
    uri, (user, password) = connection_params(neo4j_settings)
    return neo4j_settings.model_copy(
        update={
            "neo4j_uri": uri,
            "neo4j_user": user,
            "neo4j_password": password,
            "gds_backend": "aura_sessions",
            "aura_client_id": "client-id",
            "aura_client_secret": SecretStr("client-secret"),
            "aura_project_id": "project-id",
            "aura_cloud_location": "gcp/europe-west1",
            "aura_session_name": "graphstrata-test",
            "aura_session_memory": "4GB",
            "aura_session_ttl_minutes": 30,
            **update,
        }
    )


def layers(db: Database) -> dict[str, list[dict]]:
    """What augment's GDS stages wrote."""
    return {
        "important": db.read(
            "MATCH (e:Entity) WHERE e.important "
            "RETURN e.id AS id, e.core_number AS core, e.betweenness AS b ORDER BY id"
        ),
        "communities": db.read(
            "MATCH (n)-[:IN_COMMUNITY]->(c:Community) WITH c, n ORDER BY n.id "
            "RETURN c.id AS c, collect(n.id) AS members ORDER BY c"
        ),
        "groups": db.read("MATCH (h:HighLevel)-[:GROUPS]->(n) RETURN h.id AS h, n.id AS n ORDER BY h, n"),
        "similar": db.read(
            "MATCH (a)-[s:SIMILAR]->(b) RETURN s.kind AS kind, a.id AS a, b.id AS b, s.score AS score "
            "ORDER BY kind, a, b"
        ),
        "semantic": db.read("MATCH (a)-[s:SEMANTIC]->(b) RETURN a.id AS a, b.id AS b, s.score AS score ORDER BY a, b"),
        "pagerank": db.read("MATCH (c:Chunk) RETURN c.id AS id, c.pagerank AS pr, c.is_core AS core ORDER BY id"),
    }


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=0, abs_tol=1e-9)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_augment_on_aura_sessions_projects_remotely_and_writes_what_the_plugin_writes(
    augmented: GraphStrata, neo4j_settings: Settings, sessions: type[FakeGdsSessions]
) -> None:
    from graphdatascience.session import AuraAPICredentials, CloudLocation, DbmsConnectionInfo, SessionMemory

    by_plugin = layers(augmented.db)
    settings = aura_settings(neo4j_settings)
    with Database.from_settings(settings) as db:
        gs = GraphStrata(settings, db=db, embedder=augmented.embedder)
        # every layer computed again in the session (not updated in place from the plugin's)
        gs.augment(knn_exact_max_nodes=0, knn_approximate="gds", knn_incremental=False, defer_share=0)
        by_session = layers(db)
        assert GDS(db, settings).remote
        with pytest.raises(RetrievalError, match="graph_filter='gds' runs GDS at query time"):
            gs.retrieve("Which river flows through Paris and Le Havre?", "e2graphrag", graph_filter="gds")
    assert all(by_plugin.values()) and same(by_session, by_plugin)

    # one session, asked for as configured
    (made,) = sessions.instances
    assert made.api_credentials == AuraAPICredentials("client-id", "client-secret", "project-id")
    uri, (user, password) = connection_params(neo4j_settings)
    assert made.calls == [
        {
            "session_name": "graphstrata-test",
            "memory": SessionMemory.m_4GB,
            "db_connection": DbmsConnectionInfo(uri=uri, username=user, password=password, database="neo4j"),
            "ttl": timedelta(minutes=30),
            "cloud_location": CloudLocation("gcp", "europe-west1"),
            "show_progress": False,
        }
    ]
    # every projection a remote one, after our writes (bookmarks), and dropped afterwards
    projections = made.session.remote_projections
    assert {p["name"] for p in projections} == {
        "gs_chunk_knn",
        "gs_entity_knn",
        "gs_chunk_pagerank",
        "gs_noderag_g1",
        "gs_noderag_g2",
        "gs_noderag_kmeans",
        "gs_semantic_knn",
    }
    pagerank = next(p for p in projections if p["name"] == "gs_chunk_pagerank")
    assert pagerank["undirected"] == ["SIMILAR"]
    assert len(made.session.bookmarks) == len(projections) and all(b.raw_values for b in made.session.bookmarks)
    assert not [g for g in made.session.graph.list() if g.graph_name.startswith("gs_")]


def test_a_session_attached_to_an_auradb_instance(neo4j_settings: Settings, sessions: type[FakeGdsSessions]) -> None:
    from graphdatascience.session import DbmsConnectionInfo

    settings = aura_settings(neo4j_settings, aura_instance_id="abcd1234", aura_cloud_location=None)
    with Database.from_settings(neo4j_settings) as db:
        GDS(db, settings).client  # noqa: B018 (the session is made on first use)
    (call,) = sessions.instances[0].calls
    _, (user, password) = connection_params(neo4j_settings)
    assert call["db_connection"] == DbmsConnectionInfo(
        username=user, password=password, database="neo4j", aura_instance_id="abcd1234"
    )
    assert call["cloud_location"] is None


def test_what_has_no_remote_form_is_refused_by_name(neo4j_settings: Settings, sessions: type[FakeGdsSessions]) -> None:
    settings = aura_settings(neo4j_settings)
    with Database.from_settings(settings) as db:
        gds = GDS(db, settings)
        with pytest.raises(NotOnAuraSessions, match=r"'gs_weighted'.*run it with GRAPHSTRATA_GDS_BACKEND=plugin"):
            gds.project("weighted", "Chunk", {"SIMILAR": {"properties": "score"}})
        with pytest.raises(NotOnAuraSessions, match="'gs_directed_single'"):
            gds.project("directed_single", "Chunk", {"SIMILAR": {"aggregation": "SINGLE"}})
    assert sessions.instances == []  # refused before a session is asked for


def test_missing_aura_settings_are_named_before_any_work(
    augmented: GraphStrata, neo4j_settings: Settings, sessions: type[FakeGdsSessions]
) -> None:
    settings = neo4j_settings.model_copy(update={"gds_backend": "aura_sessions"})
    problems = settings.gds_backend_problems()
    assert [p.split(":")[0] for p in problems] == [
        "Aura API credentials",
        "a database the session can reach",
        "the database password the session connects with",
        "where the session runs for a self-managed database",
    ]
    before = augmented.db.read_one("MATCH (m:GraphStrata {id: 'meta'}) RETURN m.updated_at AS t")["t"]
    with pytest.raises(ConfigError, match=r"^GRAPHSTRATA_GDS_BACKEND=aura_sessions needs: Aura API credentials"):
        GraphStrata(settings, db=augmented.db, embedder=augmented.embedder).augment()
    assert augmented.db.read_one("MATCH (m:GraphStrata {id: 'meta'}) RETURN m.updated_at AS t")["t"] == before
    with pytest.raises(ConfigError):
        GDS(augmented.db, settings)
    bad_size = aura_settings(neo4j_settings, aura_session_memory="3GB")
    assert bad_size.gds_backend_problems() == [
        "a valid session size: GRAPHSTRATA_AURA_SESSION_MEMORY=3GB is not one of 2GB, 4GB, 8GB, 16GB, 24GB, 32GB, "
        "48GB, 64GB, 96GB, 128GB, 192GB, 256GB, 384GB, 512GB"
    ]
    assert aura_settings(neo4j_settings).gds_backend_problems() == []
    assert sessions.instances == []


def test_the_backend_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().gds_backend == "plugin"
    monkeypatch.setenv("GRAPHSTRATA_GDS_BACKEND", "aura_sessions")
    monkeypatch.setenv("AURA_CLIENT_ID", "id-from-env")
    monkeypatch.setenv("GRAPHSTRATA_AURA_CLIENT_SECRET", "secret-from-env")
    s = Settings()
    assert (s.gds_backend, s.aura_client_id, s.aura_client_secret.get_secret_value()) == (
        "aura_sessions",
        "id-from-env",
        "secret-from-env",
    )
    monkeypatch.setenv("GRAPHSTRATA_GDS_BACKEND", "serverless")
    with pytest.raises(ValueError, match=r"plugin.*aura_sessions"):
        Settings()


def test_cached_clients_are_per_backend(augmented: GraphStrata) -> None:
    assert set(gds_module._CLIENTS.get(augmented.db, {})) == {"plugin"}
