"""`graphstrata mcp` as an MCP client meets it: the official SDK's client starts the server over
stdio (a subprocess, as Claude Desktop or an IDE does), lists its tools and resources, ingests
through `ingest_text` into the test Neo4j, and calls `retrieve`, `cypher`, `list_documents` and
`delete_document`; over streamable HTTP the API key is required."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import httpx2  # the mcp SDK's HTTP client
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from graphstrata.config import Settings
from graphstrata.db import Database

try:
    from tests.test_server import free_port
except ModuleNotFoundError:  # tests/ is no package
    from test_server import free_port  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 300.0  # the first call loads spaCy and the embedding model on a busy 2-core machine

TOOLS = {"retrieve", "ask", "methods", "list_documents", "ingest_text", "delete_document", "cypher"}


def payload(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def session(settings: Settings) -> dict[str, Any]:
    env = settings.subprocess_env(PYTHONPATH=str(ROOT))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GRAPHSTRATA_CHAT_MODEL", "GRAPHSTRATA_API_KEY"):
        env.pop(name, None)  # no model: extraction by spaCy, `ask` answers with the evidence
    params = StdioServerParameters(
        command=sys.executable, args=["-c", "from graphstrata.cli import app; app()", "mcp"], env=env, cwd=ROOT
    )
    seen: dict[str, Any] = {}
    async with Client(params, read_timeout_seconds=TIMEOUT_S) as client:
        seen["server_info"] = client.server_info
        seen["tools"] = {t.name: t for t in (await client.list_tools()).tools}
        seen["resources"] = {str(r.uri) for r in (await client.list_resources()).resources}
        model = await client.read_resource("graphstrata://data-model")
        seen["data_model"] = model.contents[0].text
        method = await client.read_resource("graphstrata://methods/noderag")
        seen["noderag"] = method.contents[0].text
        for title, text in (
            ("Alû", "In Akkadian mythology, Alû is a vengeful demon. The demon has no mouth, lips or ears."),
            ("Kur", "Kur is the Sumerian underworld, ruled by the goddess Ereshkigal."),
        ):
            seen.setdefault("ingests", []).append(
                payload(await client.call_tool("ingest_text", {"title": title, "text": text}))
            )
        seen["retrieve"] = payload(
            await client.call_tool("retrieve", {"question": "Which demon has no mouth?", "method": "vector"})
        )
        seen["ask"] = payload(await client.call_tool("ask", {"question": "Who rules Kur?", "method": "fulltext"}))
        seen["cypher"] = payload(await client.call_tool("cypher", {"name": "documents", "params": {"limit": 10}}))
        seen["cypher_unknown"] = await client.call_tool("cypher", {"name": "MATCH (n) DETACH DELETE n"})
        seen["documents"] = payload(await client.call_tool("list_documents", {}))
        seen["deleted"] = payload(await client.call_tool("delete_document", {"ref": "Kur"}))
        seen["documents_after"] = payload(await client.call_tool("list_documents", {"status": "processed"}))
    return seen


def test_mcp_over_stdio(graph: Database, neo4j_settings: Settings) -> None:
    seen = asyncio.run(session(neo4j_settings))
    from graphstrata import __version__

    assert seen["server_info"].name == "graphstrata" and seen["server_info"].version == __version__ != ""
    assert set(seen["tools"]) == TOOLS
    assert "documents" in seen["tools"]["cypher"].description  # the library's queries are listed
    assert {"graphstrata://data-model", "graphstrata://methods/noderag", "graphstrata://methods/auto"} <= set(
        seen["resources"]
    )
    assert "### `Document`" in seen["data_model"]
    assert seen["noderag"].startswith("# noderag") and "| alpha |" in seen["noderag"]

    assert [i["documents_new"] for i in seen["ingests"]] == [1, 1]
    items = seen["retrieve"]["items"]
    assert seen["retrieve"]["method"] == "vector" and items[0]["documents"] == ["Alû"]
    assert "no mouth" in items[0]["text"] and items[0]["node_id"]
    assert seen["ask"]["answer"] is None and "No language model" in seen["ask"]["note"]
    assert seen["ask"]["evidence"][0]["documents"] == ["Kur"]

    rows = seen["cypher"]["rows"]
    assert seen["cypher"]["columns"][0] == "title" and {r["title"] for r in rows} == {"Alû", "Kur"}
    assert all(r["chunks"] == 1 for r in rows)
    # only named library queries run: a Cypher statement as a name is refused, nothing is deleted
    assert seen["cypher_unknown"].is_error and "no library query" in seen["cypher_unknown"].content[0].text

    docs = seen["documents"]
    assert docs["total"] == 2 and {d["status"] for d in docs["documents"]} == {"processed"}
    assert seen["deleted"]["deleted"][0]["title"] == "Kur"
    assert [d["title"] for d in seen["documents_after"]["documents"]] == ["Alû"]
    assert graph.read_one("MATCH (d:Document) RETURN count(d) AS n")["n"] == 1


def test_mcp_over_http_needs_the_key(graph: Database, neo4j_settings: Settings, tmp_path: Path) -> None:
    """`graphstrata mcp --http`: the same API-key check as `serve`, then the SDK's client works."""
    key = "mcp-test-key-5d2e"
    port = free_port()
    env = neo4j_settings.subprocess_env(PYTHONPATH=str(ROOT), GRAPHSTRATA_API_KEY=key)
    log = tmp_path / "mcp.log"
    cmd = [sys.executable, "-c", "from graphstrata.cli import app; app()", "mcp", "--http", "--port", str(port)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + TIMEOUT_S
        status = None
        while status is None:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            with contextlib.suppress(httpx.HTTPError):
                status = httpx.post(url, json={}, timeout=5).status_code
            time.sleep(0.3)
        assert status == 401
        wrong = httpx.post(url, json={}, headers={"Authorization": "Bearer nope"}, timeout=5)
        assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "unauthorized"

        async def tools() -> set[str]:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=TIMEOUT_S)
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                return {t.name for t in (await client.list_tools()).tools}

        assert asyncio.run(tools()) == TOOLS
    finally:
        proc.terminate()
        proc.wait(30)
