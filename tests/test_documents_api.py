"""Uploads of PDF, HTML and DOCX files, and the document list through the API (a real
`graphstrata serve`, the one of tests/test_server.py) and the CLI: queued / processing documents
while their jobs wait and run, a document whose extraction failed (the fake model answers garbage
for it) with the reason, paging and filtering."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest

from graphstrata.config import Settings
from graphstrata.db import Database

try:
    from tests.test_convert import HTML, PAGES, image_only_pdf, make_docx, make_pdf
    from tests.test_server import ROOT, Server, count_documents, fake, server, server_env
except ModuleNotFoundError:  # tests/ is no package
    from test_convert import HTML, PAGES, image_only_pdf, make_docx, make_pdf  # type: ignore[no-redef]
    from test_server import ROOT, Server, count_documents, fake, server, server_env  # type: ignore[no-redef]

__all__ = ["fake", "server"]  # pytest fixtures (`fake` is one `server` depends on)

BAD = {"title": "Pierre", "text": "Pierre Curie lived in Paris and shared the Nobel Prize in Physics."}
GOOD = {"title": "Marie", "text": "Marie Curie discovered polonium and radium with Pierre Curie."}


def refuse(monkeypatch: pytest.MonkeyPatch, fake: Any, marker: str) -> None:
    """The fake model answers garbage to every extraction prompt containing ``marker``."""
    reply = fake.chat_reply

    def patched(messages: list[dict[str, Any]], failure: str | None) -> str:
        if any(marker in str(m.get("content", "")) for m in messages):
            return "I am sorry, I cannot produce that format today."
        return reply(messages, failure)

    monkeypatch.setattr(fake, "chat_reply", patched)


def by_title(server: Server, **params: Any) -> dict[str, dict]:
    r = server.http.get("/documents", params=params)
    assert r.status_code == 200, r.text
    return {d["title"]: d for d in r.json()["documents"]}


def test_status_through_the_api_and_the_cli(
    server: Server, monkeypatch: pytest.MonkeyPatch, neo4j_settings: Settings
) -> None:
    fake = server.fake
    refuse(monkeypatch, fake, "Pierre Curie lived")
    monkeypatch.setattr(fake, "delay", 0.5)  # every model call takes a while: the jobs can be watched
    first = server.http.post("/documents", json={"documents": [BAD], "options": {"extractor": "llm"}})
    second = server.http.post("/documents", json={"documents": [GOOD], "options": {"extractor": "llm"}})
    assert first.status_code == second.status_code == 202

    # one job runs while the other waits (one worker): both states are visible in the list
    seen: set[tuple[str, str]] = set()
    deadline = time.monotonic() + 120
    while not {("Pierre", "processing"), ("Marie", "queued")} <= seen and time.monotonic() < deadline:
        seen |= {(t, d["status"]) for t, d in by_title(server).items()}
        time.sleep(0.1)
    assert {("Pierre", "processing"), ("Marie", "queued")} <= seen, seen
    queued = by_title(server, status="queued")
    assert set(queued) <= {"Marie"} and all(d["job"] == second.json()["id"] for d in queued.values())

    for job in (first, second):
        final, _ = server.wait_job(job.json()["id"])
        assert final["state"] == "succeeded", final
    monkeypatch.setattr(fake, "delay", 0.0)

    docs = by_title(server)
    assert docs["Marie"]["status"] == "processed" and docs["Marie"]["failed_chunks"] == 0
    assert docs["Marie"]["chunks"] == 1 and docs["Marie"]["ingested_at"]
    pierre = docs["Pierre"]
    assert (pierre["status"], pierre["chunks"], pierre["failed_chunks"]) == ("failed", 1, 1)
    assert "extraction failed for 1 of 1 chunks" in pierre["reason"]
    assert "no valid ChunkExtraction" in pierre["reason"]  # the job report's error
    assert set(by_title(server, status="failed")) == {"Pierre"}

    one = server.http.get("/documents/Pierre").json()
    assert one["id"] == pierre["id"] and one["source"] == "Pierre" and one["status"] == "failed"
    assert [c["ordinal"] for c in one["failed_chunk_list"]] == [0]
    assert server.http.get(f"/documents/{pierre['id']}").json()["title"] == "Pierre"
    r = server.http.get("/documents/nothing-like-this")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"

    everything = server.http.get("/documents").json()
    page = server.http.get("/documents", params={"offset": 1, "limit": 1}).json()
    assert page["total"] == everything["total"] >= 2 and page["documents"] == everything["documents"][1:2]
    r = server.http.get("/documents", params={"status": "lost"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_parameters"
    assert server.anon.get("/documents").status_code == 401

    # the CLI reads the same from the graph
    cmd = [sys.executable, "-c", "from graphstrata.cli import app; app()", "documents"]
    env = server_env(neo4j_settings)
    out = subprocess.run([*cmd, "--status", "failed", "--json"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    listed = json.loads(out.stdout)
    assert [(d["title"], d["failed_chunks"]) for d in listed] == [("Pierre", 1)]
    assert "extraction failed" in listed[0]["reason"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = {line.split("│")[1].strip(): line for line in out.stdout.splitlines() if line.count("│") > 3}
    assert "processed" in lines["Marie"] and "failed" in lines["Pierre"]


def test_upload_pdf_html_docx_and_a_corrupt_pdf_is_a_failed_document(
    server: Server, db: Database, neo4j_settings: Settings
) -> None:
    files = [
        ("files", ("notes.pdf", make_pdf(PAGES), "application/pdf")),
        ("files", ("demons.html", HTML, "text/html")),
        ("files", ("gods.docx", make_docx(), "application/octet-stream")),
    ]
    r = server.http.post("/documents", files=files, data={"options": json.dumps({"extractor": "spacy"})})
    assert r.status_code == 202, r.text
    job, _ = server.wait_job(r.json()["id"])
    assert job["state"] == "succeeded" and job["result"]["report"]["documents_new"] == 3, job
    one = server.http.get("/documents/upload:notes.pdf").json()
    assert one["title"] == "Underworld notes" and one["status"] == "processed" and one["chunks"] == 1
    provenance = db.read_one(
        "MATCH (:Document {source: 'upload:notes.pdf'})-[:HAS_CHUNK]->(c:Chunk) RETURN c.provenance AS p"
    )["p"]
    assert provenance == ["p. 1", "p. 2", "p. 3"]
    assert server.http.get("/documents/upload:gods.docx").json()["title"] == "Gods of Sumer"

    # a mixed upload: the unreadable files (corrupt, a scan with no text) become `failed` documents with
    # their reasons, the good file is ingested
    mixed = [
        ("files", ("fine.pdf", make_pdf(["Nergal is a god of war and plague."], "Nergal"), "application/pdf")),
        ("files", ("broken.pdf", make_pdf(PAGES)[:400], "application/pdf")),
        ("files", ("scanned.pdf", image_only_pdf(), "application/pdf")),
    ]
    r = server.http.post("/documents", files=mixed, data={"options": json.dumps({"extractor": "spacy"})})
    assert r.status_code == 202, r.text
    assert [f["file"] for f in r.json()["summary"]["failed_files"]] == ["broken.pdf", "scanned.pdf"]
    job, _ = server.wait_job(r.json()["id"])
    assert job["state"] == "succeeded" and job["result"]["report"]["documents_new"] == 1, job
    assert count_documents(db, "Nergal") == 1
    listed = server.http.get("/documents", params={"status": "failed"}).json()["documents"]
    failed = {d["source"]: d for d in listed if d["source"].startswith("upload:")}
    assert set(failed) == {"upload:broken.pdf", "upload:scanned.pdf"}
    assert "corrupt" in failed["upload:broken.pdf"]["reason"]
    assert "text" in failed["upload:scanned.pdf"]["reason"]  # no text layer
    one = server.http.get("/documents/upload:broken.pdf").json()
    assert one["status"] == "failed" and one["title"] == "broken.pdf" and one["chunks"] == 0
    # the failures are the graph's, not the server's memory: another process lists them, a delete forgets one
    cmd = [sys.executable, "-c", "from graphstrata.cli import app; app()", "documents", "--status", "failed", "--json"]
    out = subprocess.run(cmd, cwd=ROOT, env=server_env(neo4j_settings), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert {d["source"] for d in json.loads(out.stdout)} >= {"upload:broken.pdf", "upload:scanned.pdf"}
    assert db.read_one("MATCH (f:FailedFile {source: 'upload:scanned.pdf'}) RETURN f.reason AS r")["r"]
    r = server.http.delete("/documents/upload:scanned.pdf")
    assert r.status_code == 200 and [d["source"] for d in r.json()["deleted"]] == ["upload:scanned.pdf"], r.text
    assert server.http.get("/documents/upload:scanned.pdf").status_code == 404
    # nothing readable at all: the request fails with the reasons, nothing is queued
    jobs_before = len(server.http.get("/jobs").json()["jobs"])
    r = server.http.post("/documents", files=[("files", ("broken2.pdf", make_pdf(PAGES)[:400], "application/pdf"))])
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_document"
    assert "broken2.pdf" in r.json()["error"]["message"] and "corrupt" in r.json()["error"]["message"]
    assert len(server.http.get("/jobs").json()["jobs"]) == jobs_before
    # the same file name uploaded readable later: the failure is gone, the document processed
    r = server.http.post(
        "/documents",
        files=[("files", ("broken.pdf", make_pdf(["Ereshkigal rules Kur."], "Ereshkigal"), "application/pdf"))],
        data={"options": json.dumps({"extractor": "spacy"})},
    )
    job, _ = server.wait_job(r.json()["id"])
    assert job["state"] == "succeeded"
    assert server.http.get("/documents/upload:broken.pdf").json()["status"] == "processed"
