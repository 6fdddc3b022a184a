"""The MCP tools hold the HTTP API's limits, as the official SDK's client meets them (in-process, over
the SDK's own transport, against the test Neo4j): question length and blank questions, a deadline
that stops the work, a cancelled call whose work stops too, blank ingests refused, an ambiguous
delete refused, negative paging refused."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from graphstrata import limits
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.mcp_server import WORK, build
from graphstrata.retrieval.base import METHODS, Retriever, Subgraph, _load_methods

SPIN = "spin-test"
STOP_S = 30.0  # how long abandoned work may take to reach its next check and stop (a busy machine)


class Spin(Retriever):
    """A method that works until its deadline or cancellation stops it (or 120 s pass): a question
    whose work outlasts any client's patience, with no dependence on the graph's size."""

    name = SPIN
    summary = "spins (tests only)"
    started = threading.Event()

    def _retrieve(self, question: str, p: Any, t: Any) -> Any:
        Spin.started.set()
        end = time.monotonic() + 120
        pause = threading.Event()
        while time.monotonic() < end:
            limits.check()
            pause.wait(0.01)
        return [], Subgraph(), {"spun": "out"}


@pytest.fixture
def spin() -> Iterator[None]:
    _load_methods()
    METHODS[SPIN] = Spin
    Spin.started.clear()
    try:
        yield
    finally:
        METHODS.pop(SPIN, None)


def settings_for(neo4j_settings: Settings, **update: Any) -> Settings:
    return neo4j_settings.model_copy(
        update={"openai_api_key": None, "openai_base_url": None, "chat_model": None, **update}
    )


async def calls(settings: Settings, *steps: tuple[str, dict[str, Any]], timeout: float | None = None) -> list[Any]:
    server, graph = build(settings)
    out = []
    try:
        async with Client(server) as client:
            for name, args in steps:
                try:
                    out.append(await client.call_tool(name, args, read_timeout_seconds=timeout))
                except Exception as e:  # the client gave up (its read timeout)
                    out.append(e)
    finally:
        graph.close()
    return out


def error_text(result: Any) -> str:
    assert getattr(result, "is_error", False), result
    return result.content[0].text


def wait_idle() -> None:
    deadline = time.monotonic() + STOP_S
    while WORK.running:
        assert time.monotonic() < deadline, "the tool's work ran on after the call ended"
        time.sleep(0.05)


def test_question_length_and_blank(graph: Database, neo4j_settings: Settings) -> None:
    settings = settings_for(neo4j_settings, max_question_chars=50)
    long = "Which demon has no mouth? " * 3
    results = asyncio.run(
        calls(
            settings,
            ("retrieve", {"question": long, "method": "vector"}),
            ("ask", {"question": long, "method": "vector"}),
            ("retrieve", {"question": "\u200b\u200d \ufeff"}),
            ("ask", {"question": "   "}),
        )
    )
    for r in results[:2]:
        assert "GRAPHSTRATA_MAX_QUESTION_CHARS" in error_text(r) and "78 characters" in error_text(r)
    for r in results[2:]:
        assert "the question is empty" in error_text(r)


def test_deadline_stops_the_work(graph: Database, neo4j_settings: Settings, spin: None) -> None:
    settings = settings_for(neo4j_settings, request_timeout=2.0)
    start = time.monotonic()
    [r] = asyncio.run(calls(settings, ("retrieve", {"question": "Anything?", "method": SPIN})))
    assert "GRAPHSTRATA_REQUEST_TIMEOUT" in error_text(r)
    assert time.monotonic() - start < 60  # answered at the deadline, not after the 120 s of work
    wait_idle()


def test_cancelled_call_stops_the_work(graph: Database, neo4j_settings: Settings, spin: None) -> None:
    """The client gives up after 1 s (its read timeout; the SDK sends `notifications/cancelled`): the
    server's thread stops too, long before the 600 s deadline."""
    settings = settings_for(neo4j_settings, request_timeout=600.0)
    [r] = asyncio.run(calls(settings, ("retrieve", {"question": "Anything?", "method": SPIN}), timeout=1.0))
    assert isinstance(r, Exception) and Spin.started.is_set()
    wait_idle()


def count(db: Database) -> int:
    return db.read_one("MATCH (d:Document) RETURN count(d) AS n")["n"]


def test_ingest_delete_and_paging_limits(graph: Database, neo4j_settings: Settings) -> None:
    settings = settings_for(neo4j_settings)
    blank_ingests = [
        ("ingest_text", {"title": "", "text": "Kur is the underworld."}),
        ("ingest_text", {"title": "\u200b", "text": "Kur is the underworld."}),
        ("ingest_text", {"title": "Empty", "text": ""}),
        ("ingest_text", {"title": "Spaces", "text": "   \n\t "}),
        ("ingest_text", {"title": "Invisible", "text": "\u200b\u200c\u200d\u2060\ufeff"}),
    ]
    results = asyncio.run(
        calls(
            settings,
            *blank_ingests,
            ("ingest_text", {"title": "Kur", "text": "Kur is the Sumerian underworld.", "source": "a.txt"}),
            ("ingest_text", {"title": "Kur", "text": "Kur is also a mountain.", "source": "b.txt"}),
            ("delete_document", {"ref": "Kur"}),
            ("list_documents", {"offset": -1}),
            ("list_documents", {"limit": -1}),
            ("list_documents", {"limit": 0}),
            ("list_documents", {"offset": 1, "limit": 1}),
            ("delete_document", {"ref": "Kur", "all": True}),
        )
    )
    assert ["empty" in error_text(r) for r in results[:5]] == [True] * 5
    ambiguous = error_text(results[7])
    assert "2 documents match 'Kur'" in ambiguous and "a.txt" in ambiguous and "b.txt" in ambiguous
    for r in results[8:11]:
        assert "offset must be 0 or more and limit from 1 to 500" in error_text(r)
    page = results[11].structured_content
    assert page["total"] == 2 and len(page["documents"]) == 1
    assert len(results[12].structured_content["deleted"]) == 2
    assert count(graph) == 0  # no blank Document was ever written; the two were deleted only with all=true
