"""Hostile input against a real keyless server on loopback (`graphstrata serve`, no API key, the
test session's Neo4j): cross-site requests and DNS rebinding, unbounded questions and options,
huge and malformed documents, and an error that must not cost the client its connection."""

from __future__ import annotations

import contextlib
import http.client
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error, positive_data_acceptance

from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest.parts import PART_TEXT_CHARS

try:
    from tests.test_server import DOCS, ROOT, STARTUP_S, free_port, serve_cmd, server_env
except ModuleNotFoundError:  # tests/ is no package
    from test_server import DOCS, ROOT, STARTUP_S, free_port, serve_cmd, server_env  # type: ignore[no-redef]

DEADLINE_S = 5.0  # GRAPHSTRATA_REQUEST_TIMEOUT of the server under test
EVIL = "https://evil.example"


class Keyless:
    def __init__(self, proc: subprocess.Popen, port: int, log: Path) -> None:
        self.proc = proc
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.http = httpx.Client(base_url=self.url, timeout=120)

    def wait_job(self, job_id: str, timeout: float = 900) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                job = self.http.get(f"/jobs/{job_id}").json()
            except httpx.ReadTimeout:  # a large ingest can keep a busy 2-core machine from answering a poll
                continue
            if job["state"] in ("succeeded", "failed"):
                return job
            time.sleep(0.2)
        raise AssertionError(f"job {job_id} did not finish")

    def ingest(self, docs: list[dict], **options: object) -> dict:
        r = self.http.post("/documents", json={"documents": docs, "options": options})
        assert r.status_code == 202, r.text
        return self.wait_job(r.json()["id"])

    def running(self) -> int:
        return self.http.get("/health").json()["questions"]["running"]


@pytest.fixture(scope="module")
def keyless(neo4j_settings: Settings, db: Database, tmp_path_factory) -> Iterator[Keyless]:
    from graphstrata.embed import get_embedder
    from graphstrata.gds import GDS
    from graphstrata.schema import apply_schema

    db.wipe()
    GDS(db).drop_all()
    emb = get_embedder()
    apply_schema(db, emb.name, emb.dim)
    port = free_port()
    log = tmp_path_factory.mktemp("keyless") / "server.log"
    env = server_env(
        neo4j_settings,
        GRAPHSTRATA_REQUEST_TIMEOUT=str(DEADLINE_S),
        GRAPHSTRATA_CACHE_DIR=str(tmp_path_factory.mktemp("cache")),
        GRAPHSTRATA_MAX_BODY_BYTES=str(8 * 1024 * 1024),
    )
    with open(log, "wb") as out:
        proc = subprocess.Popen(serve_cmd("127.0.0.1", port), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"server exited with {proc.returncode}:\n{log.read_text()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                    break
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        srv = Keyless(proc, port, log)
        job = srv.ingest(DOCS, extractor="spacy")
        assert job["state"] == "succeeded", job
        yield srv
        srv.http.close()
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def count_documents(db: Database, title: str) -> int:
    return db.read_one("MATCH (d:Document {title: $t}) RETURN count(d) AS n", t=title)["n"]


# ------------------------------------------------------------------------------------------------
# item 2: cross-site requests and DNS rebinding
# ------------------------------------------------------------------------------------------------


def test_cross_origin_form_post_is_refused(keyless: Keyless, db: Database) -> None:
    """A page on another site submits a simple multipart form: refused, nothing ingested."""
    files = {"files": ("csrf.txt", b"Planted by a web page: the CSRF document.", "text/plain")}
    for headers in (
        {"Origin": EVIL},
        {"Origin": "null"},  # a sandboxed frame or a file: page
        {"Referer": f"{EVIL}/page.html"},
        {"Sec-Fetch-Site": "cross-site"},
    ):
        r = keyless.http.post("/documents", files=files, headers=headers)
        assert r.status_code == 403, (headers, r.text)
        assert r.json()["error"]["code"] == "forbidden"
    r = keyless.http.delete("/documents/Alû", headers={"Origin": EVIL})
    assert r.status_code == 403
    assert count_documents(db, "csrf") == 0 and count_documents(db, "Alû") == 1
    # the server's own pages (Swagger UI) and clients that are not browsers are served
    r = keyless.http.post(
        "/retrieve", json={"question": "Who is Alû?"}, headers={"Origin": keyless.url, "Sec-Fetch-Site": "same-origin"}
    )
    assert r.status_code == 200, r.text
    assert keyless.http.post("/retrieve", json={"question": "Who is Alû?"}).status_code == 200


def test_foreign_host_header_is_refused(keyless: Keyless, db: Database) -> None:
    """DNS rebinding: the attacker's name resolves to 127.0.0.1, the browser sends it as Host."""
    rebind = {"Host": f"rebind.evil.example:{keyless.port}"}
    r = keyless.http.get("/stats", headers=rebind)
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    assert keyless.http.delete("/documents/Alû", headers=rebind).status_code == 403
    assert keyless.http.get("/openapi.json", headers=rebind).status_code == 403
    assert count_documents(db, "Alû") == 1
    for host in (f"localhost:{keyless.port}", f"127.0.0.1:{keyless.port}", f"[::1]:{keyless.port}"):
        assert keyless.http.get("/stats", headers={"Host": host}).status_code == 200, host


def test_openapi_declares_the_key_and_400(keyless: Keyless) -> None:
    doc = keyless.http.get("/openapi.json").json()
    schemes = doc["components"]["securitySchemes"]
    assert schemes["bearer"]["scheme"] == "bearer"
    assert schemes["apiKey"] == {**schemes["apiKey"], "in": "header", "name": "X-API-Key"}
    text = json.dumps(doc)
    assert '"422"' not in text and "HTTPValidationError" not in text
    assert "400" in doc["paths"]["/retrieve"]["post"]["responses"]
    # what the document promises is what the API does
    assert keyless.http.post("/retrieve", json={"question": 3}).status_code == 400


# ------------------------------------------------------------------------------------------------
# items 3, 4, 6: documents and options
# ------------------------------------------------------------------------------------------------


def test_tokenising_has_no_length_limit() -> None:
    """The tokenizer refuses inputs near a million characters; ours encodes them in pieces."""
    from graphstrata.ingest.chunk import token_chunks
    from graphstrata.text.tokens import encode, encoder

    sentence = "The archive of Leland records a mill, a river crossing and a courthouse built in 1843. "
    text = sentence * (2 * 1024 * 1024 // len(sentence) + 1)
    assert encoder().decode(encode(text)) == text
    chunks = token_chunks(text, 1200, 100)
    assert len(chunks) > 300 and chunks[-1].text.endswith("1843. ")


@pytest.mark.timeout(1200)
def test_two_megabyte_document_ingests(keyless: Keyless, db: Database) -> None:
    """Over HTTP, end to end. Long, repeated words keep spaCy's share (per word: minutes for 2 MB of
    prose on a shared test machine) small; the tokenizer's limit is on characters, which this has."""
    sentence = "Lelandcountyarchiverecordsthemillandtherivercrossing ofthevalleyandthecourthousebuiltin1843. "
    text = sentence * (2 * 1024 * 1024 // len(sentence) + 1)
    assert len(text) > 2_000_000
    job = keyless.ingest([{"title": "Big archive", "text": text}], extractor="none", splits=0)
    assert job["state"] == "succeeded", job
    report = job["result"]["report"]
    # a text over PART_TEXT_CHARS is ingested as parts, each a document of its own (docs/limits.md)
    assert report["documents_new"] >= len(text) // PART_TEXT_CHARS and report["chunks"] > 300
    row = db.read_one(
        "MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk) WHERE d.title STARTS WITH 'Big archive' "
        "RETURN count(c) AS n, sum(size(c.text)) AS chars"
    )
    assert row["n"] == report["chunks"] and row["chars"] >= len(text)


@pytest.mark.parametrize(
    "options",
    [
        {"batch_documents": -1},
        {"chunk_size": 0},
        {"chunk_size": 100, "chunk_overlap": 100},
        {"chunk_overlap": -5},
        {"splits": 40, "min_subchunk_tokens": 1},
        {"group_chunks": 0},
        {"max_document_bytes": 0},
        {"max_descriptions": -1},
    ],
)
def test_bad_ingest_options_are_refused_before_queueing(keyless: Keyless, options: dict) -> None:
    before = len(keyless.http.get("/jobs").json()["jobs"])
    body = {"documents": [{"title": "Opt", "text": "Some text."}], "options": options}
    r = keyless.http.post("/documents", json=body)
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_parameters", r.text
    assert len(keyless.http.get("/jobs").json()["jobs"]) == before


def test_deeply_nested_json_is_a_clear_error(keyless: Keyless, db: Database) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    r = keyless.http.post("/documents", files=[("files", ("deep.json", deep, "application/json"))])
    assert r.status_code == 400 and "deep.json" in r.json()["error"]["message"], r.text
    r = keyless.http.post("/documents", content=deep, headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    r = keyless.http.post("/retrieve", content=deep, headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text


def test_bad_file_in_a_folder_does_not_stop_the_good_ones(tmp_path: Path) -> None:
    from graphstrata.ingest.load import load_paths

    (tmp_path / "a_deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "b_good.txt").write_text("A good document about Vienna.")
    docs, errors, _ = load_paths([tmp_path])
    assert [d.title for d in docs] == ["b_good"]
    assert len(errors) == 1 and "nested too deeply" in str(errors[0])


# ------------------------------------------------------------------------------------------------
# items 5 and 7: questions
# ------------------------------------------------------------------------------------------------


def long_question(words: int) -> str:
    names = ["Alû", "Lilu", "Nolan", "Kalathil", "Memento", "Inception", "Kur", "Utukku", "Akkadian", "Malayalam"]
    return " ".join(f"{names[i % len(names)]} met the director number {i} in city {i * 7}" for i in range(words // 9))


def test_long_sgrag_question_stops_at_the_deadline(keyless: Keyless) -> None:
    question = long_question(1_100)
    assert len(question.split()) >= 1_000
    start = time.monotonic()
    r = keyless.http.post("/retrieve", json={"question": question, "method": "sgrag"}, timeout=DEADLINE_S + 60)
    elapsed = time.monotonic() - start
    assert r.status_code in (200, 504), r.text
    if r.status_code == 504:
        assert r.json()["error"]["code"] == "deadline_exceeded"
    assert elapsed < DEADLINE_S + 30, elapsed  # bounded by the deadline, not by the question
    wait_until_idle(keyless)


def test_openai_compatible_route_stops_at_the_deadline(keyless: Keyless) -> None:
    """/v1/chat/completions is bounded like /retrieve and /ask: the same long question stops at the
    server's deadline instead of running on."""
    messages = [{"role": "user", "content": long_question(1_100)}]
    start = time.monotonic()
    r = keyless.http.post(
        "/v1/chat/completions", json={"model": "graphstrata-sgrag", "messages": messages}, timeout=DEADLINE_S + 60
    )
    elapsed = time.monotonic() - start
    assert r.status_code in (200, 504), r.text
    if r.status_code == 504:
        assert r.json()["error"]["code"] == "deadline_exceeded"
    assert elapsed < DEADLINE_S + 30, elapsed
    wait_until_idle(keyless)


def test_client_disconnect_stops_the_work(keyless: Keyless) -> None:
    question = long_question(1_100)
    with contextlib.suppress(httpx.TimeoutException):
        keyless.http.post("/retrieve", json={"question": question, "method": "sgrag"}, timeout=1.0)
    wait_until_idle(keyless)


def wait_until_idle(keyless: Keyless, timeout: float = 30) -> None:
    """The server's question work has stopped (nothing still running in its threads)."""
    deadline = time.monotonic() + timeout
    while keyless.running() != 0:
        assert time.monotonic() < deadline, "the question's work kept running after its answer"
        time.sleep(0.2)


def test_question_length_is_capped_and_blank_refused(keyless: Keyless) -> None:
    r = keyless.http.post("/retrieve", json={"question": "why " * 30_000, "method": "noderag"})
    assert r.status_code == 400 and "GRAPHSTRATA_MAX_QUESTION_CHARS" in r.json()["error"]["message"]
    for blank in ("   ", "\u200b\u200b", "\ufeff\u200d \u2060"):
        r = keyless.http.post("/retrieve", json={"question": blank})
        assert r.status_code == 400 and r.json()["error"]["code"] == "empty_question", blank


def test_fulltext_with_many_distinct_words(keyless: Keyless) -> None:
    question = "Alû " + " ".join(f"w{i}" for i in range(1_200))  # 1,201 distinct words
    r = keyless.http.post("/retrieve", json={"question": question, "method": "fulltext"})
    assert r.status_code == 200, r.text
    assert any(it["doc_titles"] == ["Alû"] for it in r.json()["items"])


def test_job_lost_in_a_restart_says_so(keyless: Keyless, neo4j_settings: Settings, tmp_path: Path) -> None:
    """A job id of an earlier server run answers `lost` from the next run, not 404."""
    job = keyless.ingest([{"title": "Before the restart", "text": "Written before the server restarted."}])
    port = free_port()
    env = server_env(neo4j_settings, GRAPHSTRATA_CACHE_DIR=str(tmp_path / "cache"))
    with open(tmp_path / "second.log", "wb") as out:
        proc = subprocess.Popen(serve_cmd("127.0.0.1", port), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            assert proc.poll() is None, (tmp_path / "second.log").read_text()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                    break
            assert time.monotonic() < deadline
            time.sleep(0.5)
        r = httpx.get(f"http://127.0.0.1:{port}/jobs/{job['id']}", timeout=30)
        assert r.status_code == 200 and r.json()["state"] == "lost" and r.json()["error"]["code"] == "lost"
        assert httpx.get(f"http://127.0.0.1:{port}/jobs/{'0' * 32}", timeout=30).status_code == 404
    finally:
        proc.terminate()
        proc.wait(30)


# ------------------------------------------------------------------------------------------------
# item 8: a 500 keeps the connection
# ------------------------------------------------------------------------------------------------


def test_request_after_a_500_on_the_same_connection_succeeds(keyless: Keyless, db: Database) -> None:
    """An internal error (here: a dropped full-text index) answers 500 and the connection lives on."""
    from graphstrata.embed import get_embedder
    from graphstrata.schema import apply_schema

    db.write("DROP INDEX chunk_text_fulltext IF EXISTS")
    conn = http.client.HTTPConnection("127.0.0.1", keyless.port, timeout=60)
    try:
        body = json.dumps({"question": "Who is Alû?", "method": "fulltext"})
        conn.request("POST", "/retrieve", body=body, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 500 and json.loads(r.read())["error"]["code"] == "internal"
        assert (r.getheader("connection") or "").lower() != "close"
        local = conn.sock.getsockname()
        conn.request("GET", "/stats")
        r = conn.getresponse()
        assert r.status == 200 and "labels" in json.loads(r.read())
        assert conn.sock.getsockname() == local  # the same connection, not a new one
    finally:
        conn.close()
        emb = get_embedder()
        apply_schema(db, emb.name, emb.dim)


# ------------------------------------------------------------------------------------------------
# the published schema against the real server, fuzzed (last: it ingests and deletes at random)
# ------------------------------------------------------------------------------------------------


def test_fuzzed_requests_get_no_5xx_and_conform(keyless: Keyless) -> None:
    """schemathesis over every operation of the published schema — /v1 and the uploads included —
    bounded and derandomized: no 5xx (504 `deadline_exceeded` is the bound working) and every
    response as the schema says. Every body media type of an operation is fuzzed (POST /documents:
    JSON and the multipart upload), and the question, upload and /v1 routes also get data that breaks
    the schema (wrong types, missing fields), which must be a 4xx. (Not "every schema-valid request
    is accepted": a blank text or a method's parameters are checked beyond what the schema can say,
    and answered 400.)"""
    schema = schemathesis.openapi.from_url(f"{keyless.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    labels = {op.label for op in operations}
    required = {"POST /v1/chat/completions", "GET /v1/models", "GET /v1/models/{model}", "POST /documents"}
    assert required <= labels, labels
    hostile = ("/v1", "/documents", "/retrieve", "/ask", "/cypher")
    for operation in operations:
        runs: list[tuple[GenerationMode, str | None]] = [
            (GenerationMode.POSITIVE, media) for media in operation.get_request_payload_content_types() or [None]
        ]
        if operation.path.startswith(hostile) and operation.method.upper() == "POST":
            runs += [(GenerationMode.NEGATIVE, media) for media, _ in runs]
        for mode, media in runs:

            @given(case=operation.as_strategy(mode, media_type=media))
            @settings(
                max_examples=15, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
            )
            def fuzz(case: schemathesis.Case) -> None:
                response = case.call_and_validate(
                    timeout=DEADLINE_S + 60, excluded_checks=[not_a_server_error, positive_data_acceptance]
                )
                assert response.status_code < 500 or response.status_code == 504, (
                    case.path,
                    case.media_type,
                    response.text,
                )

            fuzz()


def test_non_ascii_api_key_matches() -> None:
    """A key with non-ASCII characters, sent as UTF-8 (as clients encode it), is accepted."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from graphstrata.server.middleware import AuthMiddleware

    key = "clé-Schlüssel-🔑"
    inner = Starlette(routes=[Route("/stats", lambda request: PlainTextResponse("ok"))])
    with TestClient(AuthMiddleware(inner, api_key=key)) as client:
        assert client.get("/stats", headers={"X-API-Key": key.encode()}).status_code == 200
        assert client.get("/stats", headers={"Authorization": b"Bearer " + key.encode()}).status_code == 200
        assert client.get("/stats", headers={"X-API-Key": "cle-Schlussel"}).status_code == 401
