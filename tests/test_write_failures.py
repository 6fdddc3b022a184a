"""Write failures are clear errors and never half-written documents: a real Neo4j that refuses a
transaction (its per-transaction memory limit), runs out of disk (a size-limited tmpfs under its
data folder), and our own local writes (LLM reply cache, the launcher's instance folder) on a
read-only or full file system.

The Neo4j tests use a dedicated server (instance ``<test instance>-limits``, its own ports, data in
pytest's temporary folder) with ``db.memory.transaction.max=2m`` and 1 MiB transaction-log files, so
that a 60-chunk document exceeds the limit and a full disk is hit within a few documents. Mounting a
tmpfs needs root (or CAP_SYS_ADMIN); without it only the disk-full tests skip, saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database, TransactionTooLarge
from graphstrata.ingest.chunk import token_chunks
from graphstrata.ingest.load import SourceDocument
from graphstrata.ingest.pipeline import IngestOptions, IngestWriteError
from graphstrata.ingest.write import GraphWriter
from graphstrata.llm_cache import CacheWriteError
from graphstrata.neo4j_local import Instance, LauncherError
from tests.conftest import TEST_INSTANCE
from tests.fake_openai import CHAT_MODEL, FakeOpenAI
from tests.run_instance import free_ports

pytest_plugins = ["tests.conftest_llm"]

# the dedicated servers' bolt/http ports: four consecutive from the override, else free ones
_LIMITS = os.environ.get("GRAPHSTRATA_TEST_LIMITS_BOLT_PORT")
LIMITS_PORTS = [int(_LIMITS) + i for i in range(4)] if _LIMITS else free_ports(4)
TX_MEMORY = "2m"  # Neo4j's per-transaction memory cap on the dedicated server
OPTS = IngestOptions(extractor="spacy", chunk_size=60, chunk_overlap=0, splits=0)
SENTENCE = "Ada Lovelace wrote notes about the Analytical Engine in London. "


def doc(title: str, repeats: int) -> tuple[str, str]:
    """A document of `repeats` sentences: ~1 chunk of 60 tokens per 5; identical sentences embed once."""
    return title, f"{title} is a report. " + SENTENCE * repeats


def chunks_of(text: str) -> int:
    return len(token_chunks(text, OPTS.chunk_size, OPTS.chunk_overlap))


# --- mounts --------------------------------------------------------------------------------------------


def mount_tmpfs(path: Path, size: str, readonly: bool = False) -> str | None:
    """Mount a tmpfs of `size` at `path`; None on success, else why it cannot be done here."""
    if not shutil.which("mount"):
        return "no `mount` command"
    opts = f"size={size},mode=0755" + (",ro" if readonly else "")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        return f"cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): {proc.stderr.strip() or proc.returncode}"
    return None


def unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(path: Path, leave: int = 0) -> Path:
    """Fill the file system under `path` up to `leave` free bytes with a ballast file."""
    ballast = path / "ballast"
    st = os.statvfs(path)
    with open(ballast, "wb") as f:
        f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - leave))
    return ballast


@contextmanager
def unwritable_dir(tmp_path: Path, kind: str) -> Iterator[Path]:
    """A folder writes fail in: `readonly` (a read-only mount; chmod 0555 when we cannot mount and are
    not root, for whom permissions mean nothing) or `full` (a tiny tmpfs filled up)."""
    path = tmp_path / kind
    path.mkdir()
    why = mount_tmpfs(path, "256k", readonly=kind == "readonly")
    if why is not None:
        if kind == "readonly" and os.geteuid() != 0:
            path.chmod(0o555)
            try:
                yield path
            finally:
                path.chmod(0o755)
            return
        pytest.skip(why)
    try:
        if kind == "full":
            fill(path)
        yield path
    finally:
        unmount(path)


# --- the dedicated server -----------------------------------------------------------------------------


@dataclass
class Limited:
    instance: Instance
    on_tmpfs: str | None  # None: the data folder is a 64 MiB tmpfs; else why it is not

    def connect(self) -> GraphStrata:
        return GraphStrata(Settings(), db=Database(self.instance.bolt_uri, ("neo4j", self.instance.password() or "")))

    def restart(self, **extra: str) -> None:
        self.instance.stop()
        self.instance.extra_conf = {**base_conf(), **extra}
        self.instance.start(timeout=300)


def base_conf() -> dict[str, str]:
    # small log files (the default 256 MiB would not fit the tmpfs); preallocation stays on, as by default
    return {"db.memory.transaction.max": TX_MEMORY, "db.tx_log.rotation.size": "1m"}


@pytest.fixture(scope="module")
def limited(neo4j_mode: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Limited]:
    if neo4j_mode != "local":
        pytest.skip("needs the local launcher to run a dedicated server with its own settings")
    root = tmp_path_factory.mktemp("limits")
    data = root / "data"
    data.mkdir()
    why = mount_tmpfs(data, "64m")
    inst = Instance(f"{TEST_INSTANCE}-limits", root, LIMITS_PORTS[0], LIMITS_PORTS[1], "1g", "64m", base_conf())
    try:
        inst.start(timeout=300)
        yield Limited(inst, why)
    finally:
        inst.stop()
        if why is None:
            unmount(data)


def wipe(db: Database) -> None:
    # small transactions: one big delete (even the outer one of CALL … IN TRANSACTIONS) would itself
    # exceed the 2 MiB transaction limit
    while db.write("MATCH (n) WITH n LIMIT 10 DETACH DELETE n RETURN count(*) AS n")[0]["n"]:
        pass


def half_documents(db: Database, docs: list[tuple[str, str]]) -> list[str]:
    """Which of `docs` are in the graph but not whole (another content, or not exactly their chunks);
    plus chunks without a document anywhere."""
    versions = {SourceDocument(source=t, title=t, text=x).sha256: chunks_of(x) for t, x in docs}
    bad = []
    rows = db.read(
        "MATCH (d:Document) WHERE d.title IN $titles "
        "RETURN d.title AS t, d.sha256 AS sha, COUNT { (d)-[:HAS_CHUNK]->() } AS n",
        titles=[t for t, _ in docs],
    )
    for r in rows:
        if versions.get(r["sha"]) != r["n"]:
            bad.append(f"{r['t']}: {r['n']} chunks (sha {r['sha']})")
    orphans = db.read_one("MATCH (c:Chunk) WHERE NOT EXISTS { (:Document)-[:HAS_CHUNK]->(c) } RETURN count(c) AS n")
    return bad + ([f"{orphans['n']} orphan chunks"] if orphans["n"] else [])


# --- Neo4j refuses a transaction: the per-transaction memory limit ------------------------------------


def test_document_over_the_transaction_memory_limit_fails_alone_clearly_and_at_once(
    limited: Limited, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []
    original = GraphWriter.write_group

    def spy(self, tx, group):  # which documents each write transaction attempt carried
        calls.append([p.doc.title for p in group])
        return original(self, tx, group)

    monkeypatch.setattr(GraphWriter, "write_group", spy)
    small = [doc(f"small-{i}", 20) for i in range(6)]  # ~5 chunks each
    huge = doc("huge", 300)  # ~60 chunks: over the limit on its own
    assert all(chunks_of(x) <= 6 for _, x in small) and chunks_of(huge[1]) >= 50
    with limited.connect() as gs:
        wipe(gs.db)
        gs.ingest_texts(small[:1], OPTS)

        # 1. a group of documents over the limit together is written one document at a time
        calls.clear()
        report = gs.ingest_texts(small[1:], OPTS)  # 5 documents, one write group (group_chunks=256)
        assert report.documents_new == 5
        assert calls[0] == [t for t, _ in small[1:]] and calls[1:] == [[t] for t, _ in small[1:]], calls
        assert half_documents(gs.db, small) == []

        # 2. a document over the limit on its own: a clear error naming it, raised without retrying,
        #    after the documents before it were committed; nothing of it is written
        calls.clear()
        with pytest.raises(IngestWriteError) as err:
            gs.ingest_texts([doc("before", 20), huge, doc("after", 20)], OPTS)  # one write group, split
        e = err.value
        assert e.documents == ["huge"] and isinstance(e.cause, TransactionTooLarge) and e.rolled_back
        assert "'huge'" in str(e) and "db.memory.transaction.max" in str(e) and "nothing of it was written" in str(e)
        assert e.report is not None and e.report.documents_new == 1  # 'before' landed whole
        # the group, then its documents one by one up to the one that alone is too large: one attempt at
        # it (the driver would have retried it for 30 s)
        assert calls == [["before", "huge", "after"], ["before"], ["huge"]], calls
        titles = {r["t"] for r in gs.db.read("MATCH (d:Document) RETURN d.title AS t")}
        assert "huge" not in titles and "before" in titles and "after" not in titles
        assert gs.db.read_one("MATCH (c:Chunk {doc_title: 'huge'}) RETURN count(c) AS n")["n"] == 0
        assert half_documents(gs.db, [*small, doc("before", 20)]) == []

        # 3. the next documents, and a re-run without the culprit, work
        report = gs.ingest_texts([doc("before", 20), doc("after", 20)], OPTS)
        assert (report.documents_new, report.documents_unchanged) == (1, 1)


# --- the disk fills up under Neo4j ---------------------------------------------------------------------


@pytest.mark.slow
def test_disk_full_mid_ingest_is_a_clear_error_and_never_a_half_document(limited: Limited) -> None:
    if limited.on_tmpfs is not None:
        pytest.skip(f"needs a size-limited data folder: {limited.on_tmpfs}")
    data = limited.instance.data
    docs = [doc(f"disk-{i:02d}", 30) for i in range(12)]  # ~7 chunks, ~0.3 MiB of transaction log each
    count = "MATCH (d:Document) WHERE d.title STARTS WITH 'disk-' RETURN count(d) AS n"
    with limited.connect() as gs:
        gs.ingest_texts(docs[:2], OPTS)
        ballast = fill(data, leave=256 * 1024)
        try:
            # one document per transaction: the disk runs out a few documents in
            with pytest.raises(IngestWriteError) as err:
                gs.ingest_texts(docs[2:], OPTS.model_copy(update={"group_chunks": 1, "batch_documents": 2}))
        finally:
            ballast.unlink()
    e = err.value
    # the write that hit the full disk (log append or store apply failed), or the next batch's first read
    # once Neo4j has stopped: either way the error names the documents and says what to do
    assert e.documents and all(d.startswith("disk-") and d in str(e) for d in e.documents)
    assert getattr(e.cause, "code", "").startswith("Neo.DatabaseError.Transaction."), e.cause
    assert "disk" in str(e) and "restart" in str(e)
    assert e.action == "read" or "never in part" in str(e)

    # Neo4j stops taking transactions after this; a restart recovers. If the failed append left a torn
    # tail in the transaction log, the launcher says so and how to drop it (a transaction never confirmed)
    limited.instance.stop()
    try:
        limited.instance.start(timeout=300)
        print(f"disk full ({e.cause.code}): Neo4j recovered on restart")
    except LauncherError as start_error:
        assert "transaction log ends in an unfinished write" in str(start_error), start_error
        limited.restart(**{"internal.dbms.tx_log.fail_on_corrupted_log_files": "false"})
        limited.restart()  # and later starts need no flag
        print(f"disk full ({e.cause.code}): torn transaction-log tail dropped, then recovered")
    with limited.connect() as gs:
        assert half_documents(gs.db, docs) == []  # each document whole or absent
        landed = gs.db.read_one(count)["n"]
        assert 2 <= landed < len(docs)
        report = gs.ingest_texts(docs, OPTS)  # the same ingest again completes the rest
        assert report.documents_new == len(docs) - landed and report.documents_unchanged == landed
        assert half_documents(gs.db, docs) == []
        assert gs.db.read_one(count)["n"] == len(docs)
        constraints = {r["name"] for r in gs.db.read("SHOW CONSTRAINTS YIELD name RETURN name")}
        assert {"document_id", "chunk_id", "entity_id"} <= constraints


# --- our own disk writes: the LLM reply cache and the launcher's instance folder -----------------------


@pytest.mark.parametrize("kind", ["readonly", "full"])
def test_unwritable_llm_cache_fails_before_any_call_or_write(
    kind: str, graph: Database, neo4j_settings: Settings, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    with unwritable_dir(tmp_path, kind) as cache:
        settings = neo4j_settings.model_copy(
            update={
                "openai_base_url": fake_openai.base_url,
                "openai_api_key": fake_openai.api_key,
                "chat_model": CHAT_MODEL,
                "cache_dir": cache / "graphstrata",
                "llm_timeout": 10.0,
            }
        )
        with GraphStrata(settings, db=graph) as gs, pytest.raises(CacheWriteError) as err:
            gs.ingest_texts([("Curie", "Marie Curie was born in Warsaw.")], IngestOptions(extractor="llm"))
        assert str(cache / "graphstrata" / "llm") in str(err.value) and "GRAPHSTRATA_CACHE_DIR" in str(err.value)
        assert fake_openai.calls_by_path["/v1/chat/completions"] == 0  # nothing paid for and then lost
        assert graph.read_one("MATCH (n) WHERE NOT n:GraphStrata RETURN count(n) AS n")["n"] == 0


def test_cache_filling_up_mid_run_is_a_clear_error_without_partial_files(
    llm_client_factory, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    with unwritable_dir(tmp_path, "full") as full:
        client = llm_client_factory(cache_dir=full)
        with pytest.raises(CacheWriteError, match="No space left on device"):
            client.chat([{"role": "user", "content": "hello"}])  # the reply arrives, caching it fails
        leftovers = [p.name for p in full.rglob("*") if p.is_file() and p.name != "ballast"]
        assert leftovers == []  # no half-written cache entry (a later run must not read a torn file)


def test_launcher_on_a_read_only_data_folder_is_a_clear_error(neo4j_mode: str, tmp_path: Path) -> None:
    if neo4j_mode != "local":
        pytest.skip("the launcher is only used with the local server")
    with unwritable_dir(tmp_path, "readonly") as ro:
        inst = Instance(f"{TEST_INSTANCE}-ro", ro / "inst", LIMITS_PORTS[2], LIMITS_PORTS[3], "512m", "64m")
        start = time.monotonic()
        with pytest.raises(LauncherError, match="cannot write the instance folder") as err:
            inst.start(timeout=60)
        assert str(ro / "inst") in str(err.value) and "GRAPHSTRATA_DATA_DIR" in str(err.value)
        assert not inst.is_running() and time.monotonic() - start < 60


def test_extra_neo4j_settings_cannot_override_the_launchers(tmp_path: Path) -> None:
    from graphstrata.neo4j_local import Distribution, parse_conf_items

    inst = Instance("x", tmp_path / "x", 1, 2, "1g", "64m", {"db.memory.transaction.max": "64m"})
    dist = Distribution(tmp_path / "dist")
    inst.write_conf(dist)
    assert "db.memory.transaction.max=64m\n" in (inst.conf_dir / "neo4j.conf").read_text()
    for bad, message in [
        ({"server.default_listen_address": "0.0.0.0"}, "managed by the launcher"),
        ({"dbms.security.auth_enabled": "false"}, "managed by the launcher"),
        ({"db.memory.transaction.max": "1m\nserver.default_listen_address=0.0.0.0"}, "one line"),
        ({"Not A Setting": "1"}, "not a setting name"),
    ]:
        inst.extra_conf = bad
        with pytest.raises(LauncherError, match=message):
            inst.write_conf(dist)
    assert parse_conf_items(["a.b=1", "c.d = x=y"]) == {"a.b": "1", "c.d": "x=y"}
    with pytest.raises(LauncherError, match="KEY=VALUE"):
        parse_conf_items(["novalue"])


def test_write_error_messages_say_what_is_known_and_map_to_api_codes() -> None:
    from neo4j.exceptions import ServiceUnavailable

    from graphstrata.server.state import classify_error

    refused = IngestWriteError("write", ["big.txt"], TransactionTooLarge("over db.memory.transaction.max"))
    assert refused.rolled_back and "nothing of it was written" in str(refused) and "'big.txt'" in str(refused)
    assert classify_error(refused) == ("write_failed", str(refused))
    lost = IngestWriteError("write", ["a", "b"], ServiceUnavailable("connection lost"))
    assert not lost.rolled_back and "whole in the graph or absent, never in part" in str(lost)
    assert classify_error(lost)[0] == "neo4j_unavailable"
    gone = IngestWriteError("delete", ["a"], ServiceUnavailable("connection lost"))
    assert "deleted or still whole" in str(gone)
    full = CacheWriteError(Path("/cache/llm"), OSError(28, "No space left on device"))
    assert classify_error(full) == ("write_failed", str(full)) and "/cache/llm" in str(full)
