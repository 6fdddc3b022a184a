"""The HTTP API as users meet it: a real server process (`graphstrata serve` on a free loopback
port) against the real Neo4j of the test session, driven through httpx; the LLM is the fake
OpenAI-compatible server (tests/fake_openai.py), here taught to stream."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphstrata.config import Settings
from graphstrata.db import Database

try:
    from tests.fake_openai import CHAT_MODEL, FakeOpenAI, _Handler
except ModuleNotFoundError:  # tests/ is no package
    from fake_openai import CHAT_MODEL, FakeOpenAI, _Handler  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
KEY = "test-api-key-7c1f"
LIMIT = 256 * 1024  # GRAPHSTRATA_MAX_BODY_BYTES of the server under test
STARTUP_S = 240.0  # spaCy + MiniLM + the first Neo4j connection, on a busy 2-core machine

DOCS = [
    {
        "title": "Lilu (mythology)",
        "text": "A lilu or lilû is a masculine Akkadian word for a spirit, related to Alû, demon.",
    },
    {
        "title": "Alû",
        "text": "In Akkadian and Sumerian mythology, Alû is a vengeful spirit of the Utukku that goes down to the "
        "underworld Kur. The demon has no mouth, lips or ears. It roams at night and terrifies people while "
        "they sleep.",
    },
    {
        "title": "Christopher Nolan",
        "text": "Christopher Edward Nolan is a British-American film director, producer, and screenwriter. His "
        "films include Memento, Inception and Interstellar.",
    },
    {
        "title": "Sathish Kalathil",
        "text": "Sathish Kalathil is an Indian film director, cinematographer and writer who works in Malayalam "
        "cinema.",
    },
]


# ------------------------------------------------------------------------------------------------
# a fake LLM that streams
# ------------------------------------------------------------------------------------------------


class _StreamingHandler(_Handler):
    def _chat(self, body: dict[str, Any], failure: str | None) -> None:
        if not body.get("stream"):
            super()._chat(body, failure)
            return
        fake: StreamingFake = self.fake  # type: ignore[assignment]
        text = fake.chat_reply(body.get("messages") or [], failure)
        words = text.split(" ")
        pieces = [w + " " for w in words[:-1]] + [words[-1]]  # "".join(pieces) == text
        if fake.stream_repeat > 1:  # a long answer, for the disconnect test
            pieces = [w + " " for w in words] * fake.stream_repeat
        with fake._lock:
            fake.streams_started += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")  # no length: the body ends when the connection does
        self.end_headers()
        self.close_connection = True

        def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
            chunk = {
                "id": "chatcmpl-stream",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": body.get("model", CHAT_MODEL),
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return f"data: {json.dumps(chunk)}\n\n".encode()

        try:
            self.wfile.write(event({"role": "assistant", "content": ""}))
            for piece in pieces:
                self.wfile.write(event({"content": piece}))
                self.wfile.flush()
                if fake.stream_delay:
                    time.sleep(fake.stream_delay)
            self.wfile.write(event({}, "stop") + b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            with fake._lock:
                fake.streams_aborted += 1
            return
        with fake._lock:
            fake.streams_completed += 1


class StreamingFake(FakeOpenAI):
    """FakeOpenAI whose chat endpoint honours ``stream: true`` (SSE chunks as OpenAI sends them)."""

    def __init__(self, **kw: Any) -> None:
        self.stream_delay = 0.0
        self.stream_repeat = 1
        self.streams_started = self.streams_completed = self.streams_aborted = 0
        super().__init__(**kw)

    def handler_base(self) -> type[BaseHTTPRequestHandler]:
        return _StreamingHandler


# ------------------------------------------------------------------------------------------------
# the server process
# ------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(settings: Settings, **extra: str) -> dict[str, str]:
    return settings.subprocess_env(PYTHONPATH=str(ROOT), **extra)


def serve_cmd(host: str, port: int) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from graphstrata.cli import app; app()",
        "serve",
        "--host",
        host,
        "--port",
        str(port),
    ]


class Server:
    def __init__(self, proc: subprocess.Popen, url: str, fake: StreamingFake) -> None:
        self.proc = proc
        self.url = url
        self.fake = fake
        self.http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=120)
        self.anon = httpx.Client(base_url=url, timeout=60)

    def wait_job(self, job_id: str, timeout: float = 600) -> tuple[dict, list[dict]]:
        """The finished job, and every state seen while polling."""
        seen: list[dict] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = self.http.get(f"/jobs/{job_id}")
            assert r.status_code == 200, r.text
            job = r.json()
            seen.append(job)
            if job["state"] in ("succeeded", "failed"):
                return job, seen
            time.sleep(0.2)
        raise AssertionError(f"job {job_id} did not finish: {seen[-1]}")


@pytest.fixture(scope="module")
def fake() -> Iterator[StreamingFake]:
    with StreamingFake(api_key="fake-llm-key", embed_dim=16) as f:
        yield f


@pytest.fixture(scope="module")
def server(neo4j_settings: Settings, db: Database, fake: StreamingFake, tmp_path_factory) -> Iterator[Server]:
    from graphstrata.embed import get_embedder
    from graphstrata.gds import GDS
    from graphstrata.schema import apply_schema

    db.wipe()  # as the `graph` fixture: an empty graph with the schema
    GDS(db).drop_all()
    emb = get_embedder()
    apply_schema(db, emb.name, emb.dim)
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    env = server_env(
        neo4j_settings,
        GRAPHSTRATA_API_KEY=KEY,
        GRAPHSTRATA_MAX_BODY_BYTES=str(LIMIT),
        OPENAI_BASE_URL=fake.base_url,
        OPENAI_API_KEY=fake.api_key,
        GRAPHSTRATA_CHAT_MODEL=CHAT_MODEL,
        GRAPHSTRATA_CACHE_DIR=str(tmp_path_factory.mktemp("cache")),
        GRAPHSTRATA_LLM_TIMEOUT="20",
    )
    with open(log, "wb") as out:
        proc = subprocess.Popen(serve_cmd("127.0.0.1", port), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"server exited with {proc.returncode}:\n{log.read_text()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise AssertionError(f"server did not come up:\n{log.read_text()}")
            time.sleep(0.5)
        srv = Server(proc, url, fake)
        yield srv
        srv.http.close()
        srv.anon.close()
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    assert "Traceback" not in log.read_text(), log.read_text()


@pytest.fixture(scope="module")
def ingested(server: Server) -> dict:
    """The DOCS ingested through POST /documents (JSON), the job followed to the end."""
    r = server.http.post("/documents", json={"documents": DOCS})
    assert r.status_code == 202, r.text
    job = r.json()
    assert job["state"] in ("queued", "running") and job["summary"]["documents"] == len(DOCS)
    assert r.headers["location"] == f"/jobs/{job['id']}"
    final, seen = server.wait_job(job["id"])
    assert final["state"] == "succeeded", final
    return {"job": final, "seen": seen}


def count_documents(db: Database, title: str) -> int:
    return db.read_one("MATCH (d:Document {title: $t}) RETURN count(d) AS n", t=title)["n"]


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str, dict]]:
    event, data = None, []
    for line in lines:
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and event:
            yield event, json.loads("\n".join(data))
            event, data = None, []


# ------------------------------------------------------------------------------------------------
# service, auth and limits
# ------------------------------------------------------------------------------------------------


def test_health_needs_no_key_and_reports_everything(server: Server) -> None:
    r = server.anon.get("/health")
    assert r.status_code == 200
    h = r.json()
    assert h["status"] == "ok" and h["auth"] is True
    assert h["neo4j"]["reachable"] is True and h["neo4j"]["gds_version"].startswith("2.")
    assert h["neo4j"]["version"] and h["neo4j"]["store_rewound"] == []  # no restored backup under it
    assert h["llm"] == {"configured": True, "model": CHAT_MODEL, "reachable": True}


def test_openapi_docs(server: Server) -> None:
    assert server.anon.get("/docs").status_code == 200
    spec = server.anon.get("/openapi.json").json()
    for path in ("/documents", "/jobs/{job_id}", "/retrieve", "/ask", "/methods", "/health"):
        assert path in spec["paths"], path
    body = spec["paths"]["/documents"]["post"]["requestBody"]["content"]
    assert {"application/json", "multipart/form-data"} <= set(body)


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"X-API-Key": "wrong"}, {"Authorization": f"Basic {KEY}"}],
    ids=["no key", "wrong bearer", "wrong x-api-key", "not bearer"],
)
def test_auth_refusals(server: Server, headers: dict[str, str]) -> None:
    for method, path, kw in (
        ("GET", "/methods", {}),
        ("POST", "/retrieve", {"json": {"question": "q"}}),
        ("POST", "/documents", {"json": {"documents": [{"title": "Sneaky", "text": "should not land"}]}}),
        ("DELETE", "/documents/Alû", {}),
    ):
        r = server.anon.request(method, path, headers=headers, **kw)
        assert r.status_code == 401, (method, path, r.text)
        assert r.json()["error"]["code"] == "unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"


def test_both_key_headers_work(server: Server) -> None:
    assert server.anon.get("/methods", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    assert server.anon.get("/methods", headers={"X-API-Key": KEY}).status_code == 200


def test_refuses_to_listen_beyond_loopback_without_a_key(neo4j_settings: Settings) -> None:
    env = server_env(neo4j_settings)
    r = subprocess.run(
        serve_cmd("0.0.0.0", free_port()), cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2
    assert "GRAPHSTRATA_API_KEY" in r.stderr


def test_closing_waits_for_the_warm_up_reading_through_the_driver(
    neo4j_settings: Settings, db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm-up thread reads through the server's driver: a server closed while it reads must let
    the read end before closing the driver (closing it under a query broke the query mid-message)."""
    from starlette.testclient import TestClient

    from graphstrata.retrieval import warmup
    from graphstrata.server import create_app

    seen: dict[str, Any] = {"reads": 0, "errors": [], "done": False}

    def reading_warm(database: Database, concurrency: int = 2) -> None:
        deadline = time.monotonic() + 5.0  # reads for 5 s: the server below closes long before
        try:
            while time.monotonic() < deadline:
                database.read("RETURN 1 AS one")
                seen["reads"] += 1
        except Exception as e:
            seen["errors"].append(repr(e))
        seen["done"] = True

    monkeypatch.setattr(warmup, "warm", reading_warm)
    from graphstrata.db import connection_params

    uri, (user, password) = connection_params(neo4j_settings)
    settings = neo4j_settings.model_copy(
        update={"neo4j_uri": uri, "neo4j_user": user, "neo4j_password": password, "data_dir": tmp_path / "data"}
    )
    with TestClient(create_app(settings)):  # started; closed as soon as the warm-up reads
        deadline = time.monotonic() + 60
        while seen["reads"] == 0 and not seen["errors"]:
            assert time.monotonic() < deadline, "the warm-up never read"
            time.sleep(0.01)
        assert not seen["done"]
    # closed after the warm-up's read loop ended, never under it
    assert seen["done"] and seen["errors"] == [] and seen["reads"] > 0, seen


def test_neo4j_unavailable(tmp_path: Path) -> None:
    """A server whose Neo4j does not answer still starts, says so on /health (503) and answers
    requests with 503 `neo4j_unavailable` rather than hanging or crashing."""
    port = free_port()
    env = server_env(
        Settings(),
        NEO4J_URI=f"bolt://127.0.0.1:{free_port()}",  # nothing listens there
        NEO4J_PASSWORD="x",
        GRAPHSTRATA_API_KEY=KEY,
    )
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(serve_cmd("127.0.0.1", port), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            assert proc.poll() is None, log.read_text()
            with contextlib.suppress(httpx.HTTPError):
                health = httpx.get(f"{url}/health", timeout=30)
                break
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        assert health.status_code == 503
        h = health.json()
        assert h["status"] == "unavailable" and h["neo4j"]["reachable"] is False and h["neo4j"]["error"]
        headers = {"X-API-Key": KEY}
        r = httpx.post(f"{url}/retrieve", json={"question": "Who is Alû?"}, headers=headers, timeout=60)
        assert r.status_code == 503 and r.json()["error"]["code"] == "neo4j_unavailable"
        r = httpx.post(f"{url}/documents", json={"documents": DOCS[:1]}, headers=headers, timeout=60)
        assert r.status_code == 202  # accepted: the job itself fails, with the same code
        job_id = r.json()["id"]
        for _ in range(600):
            job = httpx.get(f"{url}/jobs/{job_id}", headers=headers, timeout=30).json()
            if job["state"] in ("succeeded", "failed"):
                break
            time.sleep(0.1)
        assert job["state"] == "failed" and job["error"]["code"] == "neo4j_unavailable"
        # the methods list needs no database
        assert httpx.get(f"{url}/methods", headers=headers, timeout=30).status_code == 200
    finally:
        proc.terminate()
        proc.wait(30)


def test_oversized_upload_is_refused_and_nothing_written(server: Server, db: Database) -> None:
    before = server.http.get("/jobs").json()["jobs"]
    big = ("All work and no play makes Jack a dull boy. " * 8000).encode()
    assert len(big) > LIMIT
    # a declared Content-Length: refused before the body is read
    r = server.http.post("/documents", files={"files": ("huge.txt", big, "text/plain")})
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "too_large"
    # a chunked body (no length): refused once the limit is passed
    payload = json.dumps({"documents": [{"title": "Huge", "text": big.decode()}]}).encode()

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(payload), 16384):
            yield payload[i : i + 16384]

    r = server.http.post("/documents", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"
    assert server.http.get("/jobs").json()["jobs"] == before, "no job was queued"
    assert count_documents(db, "huge") == 0 and count_documents(db, "Huge") == 0
    assert server.http.get("/health").status_code == 200


def test_error_shapes(server: Server) -> None:
    cases = [
        ("POST", "/retrieve", {"question": "Who is Alû?", "method": "no-such-method"}, 400, "unknown_method"),
        ("POST", "/ask", {"question": "Who is Alû?", "method": "no-such-method"}, 400, "unknown_method"),
        ("POST", "/retrieve", {"question": "   ", "method": "vector"}, 400, "empty_question"),
        ("POST", "/ask", {"question": "", "stream": True}, 400, "empty_question"),
        ("POST", "/retrieve", {"question": "x", "params": {"top_k": 0}}, 400, "bad_parameters"),
        ("POST", "/retrieve", {"question": "x", "params": {"no_such": 1}}, 400, "bad_parameters"),
        ("POST", "/retrieve", {"method": "vector"}, 400, "bad_parameters"),
        ("POST", "/retrieve", {"question": "x", "surprise": 1}, 400, "bad_parameters"),
        ("POST", "/retrieve", {"question": "x", "method": "fusion", "params": {"methods": ["nope"]}}, 400, None),
        ("POST", "/documents", {"documents": []}, 400, "bad_parameters"),
        ("POST", "/documents", {"documents": [{"title": "t", "text": "x"}], "options": {"chunk_sise": 3}}, 400, None),
        ("POST", "/documents", {"documents": [{"title": "t", "text": "x"}], "augment": ["nope"]}, 400, None),
        ("POST", "/documents", {"documents": [{"title": "t", "text": "x"}], "options": {"ketrag_beta": 2}}, 400, None),
        ("GET", "/jobs/nope", None, 404, "not_found"),
        ("DELETE", "/documents/no-such-document", None, 404, "not_found"),
        ("GET", "/no/such/route", None, 404, "not_found"),
        ("PUT", "/retrieve", None, 405, "method_not_allowed"),
    ]
    for method, path, body, status, code in cases:
        r = server.http.request(method, path, json=body) if body is not None else server.http.request(method, path)
        assert r.status_code == status, (path, body, r.text)
        err = r.json()["error"]
        assert set(err) == {"code", "message"} and err["message"]
        assert err["code"] == (code or "bad_parameters"), (path, body, err)
    r = server.http.post("/retrieve", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_parameters"
    r = server.http.post("/documents", content=b"x", headers={"Content-Type": "text/plain"})
    assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media"
    r = server.http.post("/documents", files={"files": ("image.png", b"\x89PNG\x00\x00", "image/png")})
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_document" and "image.png" in r.text


def test_methods_lists_parameters_with_defaults(server: Server) -> None:
    methods = {m["name"]: m for m in server.http.get("/methods").json()["methods"]}
    assert {"vector", "fulltext", "noderag", "fusion", "auto"} <= set(methods)
    assert methods["vector"]["parameters"]["top_k"]["default"] == 5
    assert methods["vector"]["parameters"]["budget"]["minimum"] == 1
    fusion = methods["fusion"]["parameters"]
    assert fusion["rrf_k"]["default"] == 60 and fusion["methods"]["default"] is None
    assert fusion["method_params"]["default"] == {}
    assert all(m["summary"] for m in methods.values())


# ------------------------------------------------------------------------------------------------
# documents and questions
# ------------------------------------------------------------------------------------------------


def test_ingest_job_reports_progress(server: Server, ingested: dict, db: Database) -> None:
    job = ingested["job"]
    progress = job["progress"]
    for stage in ("chunk", "embed", "write"):
        assert progress[stage]["total"] > 0 and progress[stage]["done"] == progress[stage]["total"], stage
    report = job["result"]["report"]
    assert report["documents_new"] == len(DOCS) and report["chunks"] >= len(DOCS) and not report["errors"]
    assert job["seconds"] > 0 and job["finished_at"] >= job["started_at"]
    states = [s["state"] for s in ingested["seen"]]
    assert states[-1] == "succeeded"
    for d in DOCS:
        assert count_documents(db, d["title"]) == 1


def test_retrieve_and_ask_over_the_ingest(server: Server, ingested: dict) -> None:
    r = server.http.post("/retrieve", json={"question": "Which demon has no mouth?", "method": "vector"})
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["method"] == "vector" and res["items"]
    assert res["items"][0]["doc_titles"] == ["Alû"]
    assert res["tokens"] <= res["budget"]

    r = server.http.post(
        "/retrieve",
        json={
            "question": "Which demon has no mouth?",
            "method": "fusion",
            "params": {"methods": ["vector", "fulltext"]},
        },
    )
    assert r.status_code == 200, r.text
    fused = r.json()
    assert set(fused["notes"]["methods"]) == {"vector", "fulltext"}
    ids = [i["node_id"] for i in fused["items"]]
    assert len(ids) == len(set(ids)) and fused["items"][0]["doc_titles"] == ["Alû"]

    r = server.http.post(
        "/retrieve",
        json={"question": "Are Christopher Nolan and Sathish Kalathil both film directors?", "method": "auto"},
    )
    assert r.status_code == 200, r.text
    auto = r.json()
    # a yes-no question: routed to vector, the best on that kind of dev question (bench/results/routes.md)
    assert auto["notes"]["route"] == "vector" and auto["notes"]["reason"]

    r = server.http.post(
        "/ask", json={"question": "Which demon has no mouth?", "method": "vector", "params": {"top_k": 2}}
    )
    assert r.status_code == 200, r.text
    ans = r.json()
    assert ans["answer"].startswith("Fake answer") and ans["model"] == CHAT_MODEL
    assert ans["citations"] and ans["citations"][0] == ans["retrieval"]["items"][0]["node_id"]


def test_upload_files_then_delete(server: Server, ingested: dict, db: Database) -> None:
    files = [
        ("files", ("kur.txt", b"# Kur\nKur is the Sumerian underworld, ruled by Ereshkigal.", "text/plain")),
        ("files", ("more.jsonl", json.dumps({"title": "Utukku", "text": "The Utukku are spirits."}).encode(), "x")),
    ]
    r = server.http.post("/documents", files=files, data={"options": json.dumps({"extractor": "spacy"})})
    assert r.status_code == 202, r.text
    job, _ = server.wait_job(r.json()["id"])
    assert job["state"] == "succeeded", job
    assert job["result"]["report"]["documents_new"] == 2
    assert count_documents(db, "Kur") == 1 and count_documents(db, "Utukku") == 1
    source = db.read_one("MATCH (d:Document {title: 'Kur'}) RETURN d.source AS s")["s"]
    assert source == "upload:kur.txt"

    r = server.http.delete("/documents/upload:kur.txt")
    assert r.status_code == 200 and [d["title"] for d in r.json()["deleted"]] == ["Kur"]
    r = server.http.delete("/documents/Utukku")
    assert r.status_code == 200
    assert count_documents(db, "Kur") == 0 and count_documents(db, "Utukku") == 0
    r = server.http.delete("/documents/Utukku")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_same_title_documents_in_one_request_stay_two_whole_documents(server: Server, ingested: dict, db: Database):
    first = "Falun copper mine. The first DupTitle text is about the copper mines of Falun."
    second = "Bergen herring boats. The second DupTitle text is about the herring boats of Bergen."
    spacy = {"extractor": "spacy"}

    def ingest(texts: list[str]) -> dict:
        body = {"documents": [{"title": "DupTitle", "text": t} for t in texts], "options": spacy}
        r = server.http.post("/documents", json=body)
        assert r.status_code == 202, r.text
        job, _ = server.wait_job(r.json()["id"])
        assert job["state"] == "succeeded", job
        return job["result"]["report"]

    def stored() -> dict[str, list[str]]:
        rows = db.read(
            "MATCH (d:Document {title: 'DupTitle'}) OPTIONAL MATCH (d)-[:HAS_CHUNK]->(c:Chunk) "
            "RETURN d.source AS source, collect(c.text) AS chunks"
        )
        return {r["source"]: sorted(r["chunks"]) for r in rows}

    def retrieved(question: str) -> set[str]:
        r = server.http.post("/retrieve", json={"question": question, "method": "fulltext", "params": {"top_k": 10}})
        assert r.status_code == 200, r.text
        items = [i for i in r.json()["items"] if i["doc_titles"] == ["DupTitle"]]
        return {i["text"].split("\n", 1)[-1] for i in items}  # a chunk item's text is "title\ntext"

    report = ingest([first, second])
    assert report["documents_new"] == 2
    assert any("'DupTitle [2]'" in n for n in report["identity_notes"]), report["identity_notes"]
    assert stored() == {"DupTitle": [first], "DupTitle [2]": [second]}  # two whole documents, not one with both

    revised = "Bergen herring boats. The revised DupTitle text is about the herring market of Bergen."
    report = ingest([first, revised])
    assert (report["documents_unchanged"], report["documents_replaced"]) == (1, 1)
    assert report["replaced"] == ["DupTitle (DupTitle [2])"]
    assert stored() == {"DupTitle": [first], "DupTitle [2]": [revised]}
    assert retrieved("herring boats Bergen") == {revised}  # the replaced version's chunk is gone
    assert retrieved("copper mines Falun") == {first}

    r = server.http.delete("/documents/DupTitle", params={"all": "true"})  # by title: both (confirmed)
    assert r.status_code == 200 and len(r.json()["deleted"]) == 2
    assert stored() == {}


# ------------------------------------------------------------------------------------------------
# streaming
# ------------------------------------------------------------------------------------------------


def test_streaming_ask(server: Server, ingested: dict) -> None:
    body = {"question": "Who directed Inception and Interstellar?", "method": "vector", "stream": True}
    with server.http.stream("POST", "/ask", json=body) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        events = list(sse_events(r.iter_lines()))
    kinds = [k for k, _ in events]
    assert kinds[0] == "retrieval" and kinds[-1] == "done"
    assert kinds.count("token") > 3, kinds
    retrieval = events[0][1]
    assert retrieval["items"] and retrieval["method"] == "vector"
    done = events[-1][1]
    text = "".join(d["text"] for k, d in events if k == "token")
    assert text == done["answer"] and text.startswith("Fake answer")
    assert done["citations"] and done["citations"][0] == retrieval["items"][0]["node_id"]
    # the same question unstreamed gives the same answer (one prompt format, one cache)
    plain = server.http.post("/ask", json={**body, "stream": False}).json()
    assert plain["answer"] == done["answer"] and plain["citations"] == done["citations"]


def test_llm_chat_stream(fake: StreamingFake, tmp_path: Path) -> None:
    """LLMClient.chat_stream: retries on opening, accounting, the cache shared with chat(), and an
    early close that stops the endpoint's stream and caches nothing."""
    from graphstrata.llm import LLMClient

    settings = Settings(
        OPENAI_API_KEY=fake.api_key,
        OPENAI_BASE_URL=fake.base_url,
        GRAPHSTRATA_CHAT_MODEL=CHAT_MODEL,
        GRAPHSTRATA_CACHE_DIR=str(tmp_path),
    )
    with LLMClient(settings, backoff_initial=0.01, backoff_max=0.05, max_attempts=3) as client:
        fake.fail_next("500")  # the first attempt to open the stream fails; the retry succeeds
        messages = [{"role": "user", "content": "Tell me about the Utukku spirits of Sumer"}]
        pieces = list(client.chat_stream(messages, stage="s"))
        assert len(pieces) > 3
        assert "".join(pieces) == client.chat(messages, stage="s")  # served from the stream's cache entry
        assert list(client.chat_stream(messages, stage="s")) == ["".join(pieces)]  # a hit is one piece
        usage = client.usage()["s"]
        assert usage["calls"] == 1 and usage["cache_hits"] == 2 and usage["retries"] == 1
        assert usage["completion_tokens"] > 0 and usage["prompt_tokens"] > 0

        aborted, started = fake.streams_aborted, fake.streams_started
        fake.stream_delay, fake.stream_repeat = 0.05, 40
        try:
            other = [{"role": "user", "content": "Who rules Kur, the underworld?"}]
            it = client.chat_stream(other, stage="t")
            assert next(it) and next(it)
            it.close()
            deadline = time.monotonic() + 20
            while fake.streams_aborted == aborted and time.monotonic() < deadline:
                time.sleep(0.05)
            assert fake.streams_aborted == aborted + 1
        finally:
            fake.stream_delay, fake.stream_repeat = 0.0, 1
        assert client.usage()["t"]["calls"] == 1  # billed, though cut short
        assert len(list(client.chat_stream(other, stage="t"))) > 3  # not cached: streamed again
        assert fake.streams_started == started + 2


def test_client_disconnect_mid_stream(server: Server, ingested: dict) -> None:
    fake = server.fake
    fake.stream_delay, fake.stream_repeat = 0.1, 40  # ~1000 pieces: minutes if nobody stopped it
    aborted_before = fake.streams_aborted
    try:
        body = {"question": "What terrifies people while they sleep?", "method": "vector", "stream": True}
        tokens = 0
        with server.http.stream("POST", "/ask", json=body) as r:
            assert r.status_code == 200
            for kind, _ in sse_events(r.iter_lines()):
                tokens += kind == "token"
                if tokens == 3:
                    break  # leave mid-answer: the response is closed here
        assert tokens == 3
        # the server notices and stops reading the model: the fake sees its stream cut
        deadline = time.monotonic() + 30
        while fake.streams_aborted == aborted_before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert fake.streams_aborted > aborted_before, "the upstream LLM stream was not closed"
    finally:
        fake.stream_delay, fake.stream_repeat = 0.0, 1
    # the server is healthy and serves the next requests, streamed or not
    assert server.http.get("/health").json()["status"] == "ok"
    r = server.http.post("/retrieve", json={"question": "Which demon has no mouth?"})
    assert r.status_code == 200 and r.json()["items"]
    with server.http.stream("POST", "/ask", json={**body, "question": "Who is Sathish Kalathil?"}) as r:
        events = list(sse_events(r.iter_lines()))
    assert events[-1][0] == "done" and events[-1][1]["answer"]
    assert server.proc.poll() is None
