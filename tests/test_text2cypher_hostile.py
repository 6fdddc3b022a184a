"""Model-written Cypher is untrusted input: the fake OpenAI server plays a model that writes a hostile
query (a command, a GDS projection, LOAD CSV from a loopback URL, a transaction batch, an endless or a
huge read), and only a plain read of the graph runs — bounded in time and rows. The validator is
also checked directly, against the analysts' library (every query of it must pass) and hostile text."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from neo4j import READ_ACCESS

from graphstrata import analysts as lib
from graphstrata import text2cypher
from graphstrata.config import Settings
from graphstrata.cypher_guard import (
    ALLOWED_PROCEDURES,
    CypherRefused,
    check_plan,
    check_text,
)
from graphstrata.db import Database

try:
    from tests.conftest_llm import make_llm_client
    from tests.test_text2cypher import CypherModel, cli, docs, model
except ModuleNotFoundError:  # tests/ is no package
    from conftest_llm import make_llm_client  # type: ignore[no-redef]
    from test_text2cypher import CypherModel, cli, docs, model  # type: ignore[no-redef]

__all__ = ["docs", "model"]  # fixtures

HOSTILE = [
    ("TERMINATE TRANSACTIONS 'neo4j-transaction-1'", "TERMINATE"),
    ("SHOW TRANSACTIONS", "SHOW"),
    ("CALL gds.graph.project('g', '*', '*')", "gds.graph.project"),
    ("CALL `gds`.`graph`.`drop`('g')", "gds.graph.drop"),
    ("LOAD CSV FROM 'http://127.0.0.1:1/stats' AS r RETURN r", "LOAD"),
    ("load csv from 'file:///etc/passwd' as r return r", "LOAD"),
    ("CALL { MATCH (n) RETURN n } IN TRANSACTIONS RETURN 1", "TRANSACTIONS"),
    ("MATCH (n) CALL (n) { SET n.x = 1 } RETURN n", "writes data"),
    ("MATCH (n) DETACH DELETE n", "writes data"),
    ("RETURN 1CREATE (n)", "writes data"),
    ("RETURN 1; MATCH (n) DETACH DELETE n", "one statement"),
    ("RETURN apoc.cypher.runFirstColumn('MATCH (n) DETACH DELETE n', {})", "apoc.cypher.runFirstColumn"),
    ("RETURN `apoc.cypher.runFirstColumn`('x', {})", "apoc.cypher.runFirstColumn"),
    ("CALL apoc.load.json('http://127.0.0.1:1/')", "apoc.load.json"),
    ("CALL apoc.util.sleep(100000)", "apoc.util.sleep"),
    ("CALL dbms.components()", "dbms.components"),
    ("CALL db.createLabel('X')", "db.createLabel"),
    ("USE system SHOW USERS", "USE"),
    ("FOREACH (x IN [1] | CREATE ())", "writes data"),
    ("MATCH (n) RETURN n /* unterminated", "unterminated"),
    ("RETURN 'abc", "unterminated"),
]

READS = [
    "MATCH (d:Document) RETURN d.title AS title ORDER BY title",
    "CALL db.labels() YIELD label RETURN label",
    "MATCH p = shortestPath((a:Entity)-[*..3]-(b:Entity)) RETURN length(p) AS n LIMIT 1",
    "MATCH (e:Entity) WHERE EXISTS { MATCH (e)--(:Chunk) } RETURN e.name AS name, COUNT { (e)--() } AS degree",
    "MATCH (n) RETURN apoc.meta.cypher.type(n.name) AS t, date.truncate('day', datetime()) AS d LIMIT 1",
    "MATCH (e:Entity) WITH e ORDER BY e.name SKIP 1 LIMIT 5 RETURN e.name AS x UNION ALL MATCH (d:Document) "
    "RETURN d.title AS x",
    "RETURN {load: 1, delete: 2}.load AS v, 'LOAD CSV FROM x' AS text // TERMINATE TRANSACTIONS",
    "CALL { MATCH (n) RETURN n } RETURN count(n) AS n",
]


def explain(db: Database, text: str, params: dict | None = None) -> tuple[str | None, dict | None]:
    with db.driver.session(database=db.database, default_access_mode=READ_ACCESS) as s:
        summary = s.run(f"EXPLAIN {text}", params or {}).consume()
    return summary.query_type, summary.plan


@pytest.mark.parametrize(("cypher", "why"), HOSTILE)
def test_validator_refuses_hostile_text(cypher: str, why: str) -> None:
    with pytest.raises(CypherRefused, match=why.replace("(", r"\(")):
        check_text(cypher)


def test_validator_allows_reads_and_the_library(docs: Database) -> None:
    """Every read above and every query of the analysts' library passes both checks: the allow-lists
    hold what a read of this graph needs."""
    for cypher in READS:
        check_text(cypher)
        check_plan(*explain(docs, cypher))
    for q in lib.library().values():
        check_text(q.text)
        check_plan(*explain(docs, q.text, q.bind({p.name: p.default for p in q.params if p.required})))


def test_plan_check_catches_what_the_planner_calls_a_read(docs: Database) -> None:
    """TERMINATE TRANSACTIONS, SHOW and LOAD CSV are query type `r` to the planner: the operator allow-list
    refuses them even if the text check were fooled."""
    for cypher, op in (
        ("TERMINATE TRANSACTIONS 'neo4j-transaction-1'", "TerminateTransactions"),
        ("SHOW TRANSACTIONS", "ShowTransactions"),
        ("LOAD CSV FROM 'http://127.0.0.1:1/x' AS r RETURN r", "LoadCSV"),
        ("CALL { MATCH (n) RETURN n } IN TRANSACTIONS RETURN 1", "TransactionApply"),
    ):
        kind, plan = explain(docs, cypher)
        assert kind == "r"
        with pytest.raises(CypherRefused, match=op):
            check_plan(kind, plan)
    with pytest.raises(CypherRefused, match=r"gds\.graph\.project"):
        check_plan(*explain(docs, "CALL gds.graph.project('g', '*', '*')"))
    assert "db.labels" in ALLOWED_PROCEDURES


def ask(model: CypherModel, db: Database, tmp_path: Path, cypher: str, **bounds: float) -> text2cypher.CypherAnswer:
    model.cypher = cypher
    with make_llm_client(model, tmp_path / "c") as llm:
        # one question per query: the model's answers are cached by prompt
        return text2cypher.ask(db, llm, f"a question for {cypher}", **bounds)  # type: ignore[arg-type]


def test_terminate_transactions_leaves_another_session_alone(
    docs: Database, model: CypherModel, tmp_path: Path
) -> None:
    with (
        docs.driver.session(database=docs.database) as victim,
        victim.begin_transaction(metadata={"graphstrata_test": "victim"}) as tx,
    ):
        tx.run("MATCH (d:Document {title: 'Kur'}) SET d.survived = true").consume()
        row = docs.read_one(
            "SHOW TRANSACTIONS YIELD transactionId, metaData WHERE metaData.graphstrata_test = 'victim' "
            "RETURN transactionId"
        )
        assert row is not None
        with pytest.raises(CypherRefused, match="TERMINATE"):
            ask(model, docs, tmp_path, f"TERMINATE TRANSACTIONS '{row['transactionId']}'")
        tx.commit()  # the transaction was not terminated: it commits
    assert docs.read_one("MATCH (d:Document {title: 'Kur'}) RETURN d.survived AS s")["s"] is True


def test_gds_projection_and_drop_are_refused(docs: Database, model: CypherModel, tmp_path: Path) -> None:
    with pytest.raises(CypherRefused, match=r"gds\.graph\.project"):
        ask(model, docs, tmp_path, "CALL gds.graph.project('t2c-hostile', 'Document', '*')")
    assert docs.read_one("RETURN gds.graph.exists('t2c-hostile') AS e")["e"] is False
    docs.auto("CALL gds.graph.project('t2c-in-use', 'Document', '*')")
    try:
        with pytest.raises(CypherRefused, match=r"gds\.graph\.drop"):
            ask(model, docs, tmp_path, "CALL gds.graph.drop('t2c-in-use') YIELD graphName RETURN graphName")
        assert docs.read_one("RETURN gds.graph.exists('t2c-in-use') AS e")["e"] is True
    finally:
        docs.auto("CALL gds.graph.drop('t2c-in-use', false)")


@pytest.fixture
def loopback() -> Iterator[tuple[str, list[str]]]:
    """A small HTTP server on loopback whose answer is a secret; yields (url, paths requested)."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"secret-token-7f3a,stats\n")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/stats", hits
    finally:
        server.shutdown()
        server.server_close()


def test_load_csv_fetches_nothing(
    docs: Database, model: CypherModel, tmp_path: Path, neo4j_settings: Settings, loopback: tuple[str, list[str]]
) -> None:
    url, hits = loopback
    for cypher in (f"LOAD CSV FROM '{url}' AS row RETURN row", f"LOAD CSV WITH HEADERS FROM '{url}' AS r RETURN r"):
        with pytest.raises(CypherRefused) as info:
            ask(model, docs, tmp_path, cypher)
        assert "secret-token" not in str(info.value)
    result = cli(neo4j_settings, tmp_path, "cypher", "--ask", "Stats?", fake=model)
    assert result.exit_code == 5, result.output
    assert "refused: this statement uses LOAD" in result.stderr and "secret-token" not in result.output
    assert hits == []  # Neo4j never made the request


def test_endless_read_stops_at_the_timeout(docs: Database, model: CypherModel, tmp_path: Path) -> None:
    """`db.transaction.timeout` is 0 (none): the driver's transaction timeout stops it."""
    endless = "UNWIND range(1, 2000000000) AS x WITH x WHERE x = -1 RETURN count(*) AS n"
    with pytest.raises(text2cypher.CypherTimeout, match="GRAPHSTRATA_CYPHER_TIMEOUT"):
        ask(model, docs, tmp_path, endless, timeout=1.0)
    deadline = time.monotonic() + 30  # the server's transaction is gone too, not only our wait
    while docs.read_one(
        "SHOW TRANSACTIONS YIELD currentQuery WHERE currentQuery CONTAINS $q RETURN 1", q="range(1, 2000000000)"
    ):
        assert time.monotonic() < deadline, "the timed-out query still runs in Neo4j"
        time.sleep(0.2)


def test_huge_result_is_capped(
    docs: Database, model: CypherModel, tmp_path: Path, neo4j_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = ask(model, docs, tmp_path, "UNWIND range(1, 2000000) AS x RETURN x", max_rows=100)
    assert answer.capped and answer.max_rows == 100
    assert [r["x"] for r in answer.rows] == list(range(1, 101))
    exact = ask(model, docs, tmp_path, "UNWIND range(1, 5) AS x RETURN x", max_rows=5)
    assert not exact.capped and len(exact.rows) == 5

    model.cypher = "UNWIND range(1, 2000000) AS x RETURN x"
    monkeypatch.setenv("GRAPHSTRATA_CYPHER_MAX_ROWS", "3")  # the CLI's environment keeps it
    result = cli(neo4j_settings, tmp_path, "cypher", "--ask", "Numbers?", fake=model)
    assert result.exit_code == 0, result.output
    assert "3 row(s), capped at 3 (GRAPHSTRATA_CYPHER_MAX_ROWS)" in result.stdout


def test_api_route_refuses_and_caps(
    docs: Database, model: CypherModel, tmp_path: Path, neo4j_settings: Settings, loopback: tuple[str, list[str]]
) -> None:
    from fastapi.testclient import TestClient
    from pydantic import SecretStr

    from graphstrata.server import create_app

    try:
        from tests.fake_openai import CHAT_MODEL
    except ModuleNotFoundError:
        from fake_openai import CHAT_MODEL  # type: ignore[no-redef]

    url, hits = loopback
    settings = neo4j_settings.model_copy(
        update={
            "openai_api_key": model.api_key,
            "openai_base_url": model.base_url,
            "chat_model": CHAT_MODEL,
            "cache_dir": tmp_path / "cache",
            "api_key": SecretStr("k"),
            "cypher_max_rows": 10,
        }
    )
    with TestClient(create_app(settings, host="127.0.0.1"), headers={"Authorization": "Bearer k"}) as http:
        model.cypher = f"LOAD CSV FROM '{url}' AS row RETURN row"
        r = http.post("/cypher/ask", json={"question": "Stats?"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "cypher_refused", r.text
        model.cypher = "CALL gds.graph.project('t2c-api', 'Document', '*')"
        r = http.post("/cypher/ask", json={"question": "Project?"})
        assert r.status_code == 403 and "gds.graph.project" in r.json()["error"]["message"]
        model.cypher = "UNWIND range(1, 2000000) AS x RETURN x"
        r = http.post("/cypher/ask", json={"question": "Numbers?"})
        assert r.status_code == 200 and r.json()["capped"] is True and len(r.json()["rows"]) == 10
        r = http.post("/cypher/ask", json={"question": "x" * (settings.max_question_chars + 1)})
        assert r.status_code == 400 and "GRAPHSTRATA_MAX_QUESTION_CHARS" in r.json()["error"]["message"]
    assert hits == []
    assert docs.read_one("RETURN gds.graph.exists('t2c-api') AS e")["e"] is False


def test_analysts_own_cypher_is_bounded_too(
    docs: Database, tmp_path: Path, neo4j_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`graphstrata cypher --query` and the library (the MCP `cypher` tool's path) run under the same
    transaction timeout and row cap as a model's query."""
    endless = "UNWIND range(1, 2000000000) AS x WITH x WHERE x = -1 RETURN count(*) AS n"
    with pytest.raises(lib.QueryTimeout, match="GRAPHSTRATA_CYPHER_TIMEOUT"):
        lib.run(docs, endless, timeout=1.0)
    deadline = time.monotonic() + 30
    while docs.read_one(
        "SHOW TRANSACTIONS YIELD currentQuery WHERE currentQuery CONTAINS $q RETURN 1", q="range(1, 2000000000)"
    ):
        assert time.monotonic() < deadline, "the timed-out query still runs in Neo4j"
        time.sleep(0.2)
    capped = lib.run(docs, "UNWIND range(1, 2000000) AS x RETURN x", max_rows=7)
    assert capped.capped and [r["x"] for r in capped.rows] == list(range(1, 8))
    whole = lib.run_library(docs, "documents", {}, max_rows=1000)
    assert not whole.capped and whole.rows

    monkeypatch.setenv("GRAPHSTRATA_CYPHER_MAX_ROWS", "4")
    result = cli(neo4j_settings, tmp_path, "cypher", "--query", "UNWIND range(1, 2000000) AS x RETURN x")
    assert result.exit_code == 0, result.output
    assert "4 row(s), capped at 4 (GRAPHSTRATA_CYPHER_MAX_ROWS)" in result.stdout
    monkeypatch.setenv("GRAPHSTRATA_CYPHER_TIMEOUT", "1")
    result = cli(neo4j_settings, tmp_path, "cypher", "--query", endless)
    assert result.exit_code == 1 and "GRAPHSTRATA_CYPHER_TIMEOUT" in result.output, result.output
