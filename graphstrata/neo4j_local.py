"""A local Neo4j instance (configuration, data, logs, password; start, stop, status) run from the
distribution :mod:`graphstrata.neo4j_dist` assembles from Maven Central, without Docker."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from graphstrata.config import Settings, get_settings
from graphstrata.neo4j_dist import (  # noqa: F401  (public names of the launcher)
    ADMIN_CLASS,
    APOC_VERSION,
    BROWSER_VERSION,
    GDS_VERSION,
    MAIN_CLASS,
    NEO4J_VERSION,
    PROCEDURES_ALLOWLIST,
    PROCEDURES_UNRESTRICTED,
    Distribution,
    LauncherError,
    ensure_distribution,
    find_java,
    jvm_flags,
)

# ---------------------------------------------------------------------------------------------
# An instance: configuration, data, logs and password of one local server
# ---------------------------------------------------------------------------------------------


def parse_conf_items(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``["db.memory.transaction.max=64m", …]`` (the CLI's ``--conf``) as a dict; a clear error otherwise."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise LauncherError(f"--conf takes KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


@dataclass
class Instance:
    name: str
    root: Path
    bolt_port: int
    http_port: int
    heap: str
    pagecache: str
    #: Additional neo4j.conf settings (e.g. ``db.memory.transaction.max``). They may add settings but
    #: never replace one the launcher writes: loopback, auth and the folders stay as documented.
    extra_conf: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> Instance:
        s = settings or get_settings()
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", s.instance):
            raise LauncherError(f"instance name {s.instance!r} may only hold letters, digits, '.', '_' and '-'")
        return cls(
            s.instance,
            s.data_dir / "neo4j" / s.instance,
            s.bolt_port,
            s.http_port,
            s.heap,
            s.pagecache,
            dict(s.neo4j_conf),
        )

    # paths
    @property
    def conf_dir(self) -> Path:
        return self.root / "conf"

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def pid_file(self) -> Path:
        return self.root / "run" / "neo4j.pid"

    @property
    def password_file(self) -> Path:
        return self.root / "password"

    @property
    def console_log(self) -> Path:
        return self.logs / "console.log"

    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def password(self) -> str | None:
        return self.password_file.read_text().strip() if self.password_file.exists() else None

    # safety: never touch a folder that another user owns
    def _check_owner(self) -> None:
        for path in (self.root, *self.root.parents):
            if path.exists():
                if path == self.root and path.stat().st_uid != os.getuid():
                    raise LauncherError(f"{path} belongs to another user; refusing to touch it")
                break

    def _recorded(self) -> tuple[int, bytes] | None:
        """The process the pid file names and its command line, if that process still exists."""
        try:
            pid = int(self.pid_file.read_text().strip())
            return pid, Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return None

    def pid(self) -> int | None:
        """PID of this instance's server if it is running (checked against the process's command line)."""
        recorded = self._recorded()
        if recorded is None:
            return None
        pid, cmdline = recorded
        return pid if f"--home-dir={self.root}" in cmdline.replace(b"\0", b" ").decode(errors="replace") else None

    def is_running(self) -> bool:
        return self.pid() is not None

    def exiting(self) -> int | None:
        """PID of this instance's last server while it is still exiting: killed, its command line
        already gone (so :meth:`pid` no longer sees it), its ports not yet released."""
        recorded = self._recorded()
        if recorded is None:
            return None
        pid, cmdline = recorded
        return pid if not cmdline and alive(pid) else None

    def write_conf(self, dist: Distribution) -> None:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        conf = {
            "server.default_listen_address": "127.0.0.1",
            "server.default_advertised_address": "127.0.0.1",
            "server.bolt.listen_address": f"127.0.0.1:{self.bolt_port}",
            "server.http.listen_address": f"127.0.0.1:{self.http_port}",
            # what Browser's discovery tells it to connect to (the default would be port 7687)
            "server.bolt.advertised_address": f"127.0.0.1:{self.bolt_port}",
            "server.http.advertised_address": f"127.0.0.1:{self.http_port}",
            "server.https.enabled": "false",
            "server.directories.lib": str(dist.lib),
            "server.directories.plugins": str(dist.plugins),
            "server.directories.data": str(self.data),
            "server.directories.logs": str(self.logs),
            "server.directories.run": str(self.root / "run"),
            "server.directories.import": str(self.root / "import"),
            "dbms.security.auth_enabled": "true",
            "dbms.security.procedures.unrestricted": PROCEDURES_UNRESTRICTED,
            "dbms.security.procedures.allowlist": PROCEDURES_ALLOWLIST,
            "dbms.usage_report.enabled": "false",
            "server.memory.heap.initial_size": self.heap,
            "server.memory.heap.max_size": self.heap,
            "server.memory.pagecache.size": self.pagecache,
            "db.transaction.timeout": "0",
        }
        for key, value in self.extra_conf.items():
            # A setting name and a one-line value: a newline in either would smuggle in other settings.
            if not re.fullmatch(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)+", key):
                raise LauncherError(
                    f"extra Neo4j setting {key!r} is not a setting name (e.g. db.memory.transaction.max)"
                )
            if any(ch in value for ch in "\r\n\0"):
                raise LauncherError(f"the value of extra Neo4j setting {key!r} must be one line")
            if key in conf:
                raise LauncherError(
                    f"{key} is managed by the launcher and cannot be overridden "
                    "(heap and page cache have their own options)"
                )
        conf.update(self.extra_conf)
        text = "# Written by `graphstrata neo4j start`; regenerated on every start.\n"
        text += "".join(f"{k}={v}\n" for k, v in conf.items())
        (self.conf_dir / "neo4j.conf").write_text(text)

    def _env(self) -> dict[str, str]:
        return {**os.environ, "NEO4J_HOME": str(self.root), "NEO4J_CONF": str(self.conf_dir)}

    def _ensure_password(self, java: Path, dist: Distribution) -> None:
        if (self.data / "dbms" / "auth.ini").exists() or (self.data / "databases" / "system").exists():
            if not self.password_file.exists():
                raise LauncherError(f"{self.root} has a database but no password file; cannot log in")
            return
        # The admin tool's parser reads an argument starting with "-" as an option (1 password in 64
        # from token_urlsafe), so the password always starts with a letter or digit.
        password = secrets.token_urlsafe(18)
        while not password[0].isalnum():
            password = secrets.token_urlsafe(18)
        fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(password + "\n")
        # The arguments go in a 0600 argument file (`java @file`), so the password never appears in
        # the process list (`ps`) while the admin tool runs.
        args = ["-cp", f"{dist.lib}/*", ADMIN_CLASS, "dbms", "set-initial-password", password]
        argfile = self.root / "set-password.args"
        fd = os.open(argfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("".join('"' + a.replace("\\", "\\\\").replace('"', '\\"') + '"\n' for a in args))
        try:
            cmd = [str(java), f"@{argfile}"]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=self._env(), timeout=120)
        finally:
            argfile.unlink(missing_ok=True)
        if proc.returncode != 0:
            raise LauncherError(f"setting the initial password failed:\n{proc.stdout}{proc.stderr}")

    def start(self, timeout: float = 180.0, log=print) -> bool:
        """Start the server in the background; False if it was already running."""
        self._check_owner()
        if self.is_running():
            return False
        # a server killed a moment ago (a crash, `kill -9`) holds its ports until its exit completes
        gone = time.monotonic() + 60
        while self.exiting() is not None and time.monotonic() < gone:
            time.sleep(0.05)
        for port in (self.bolt_port, self.http_port):
            if _port_answers(port):
                raise LauncherError(
                    f"port {port} on 127.0.0.1 is taken by another process; stop it or choose other ports "
                    "(GRAPHSTRATA_BOLT_PORT / GRAPHSTRATA_HTTP_PORT, or --bolt-port / --http-port)"
                )
        java, major = find_java()
        dist = ensure_distribution(log=log)
        dist.verify()
        with self._folder_writes():
            for d in (self.root, self.data, self.logs, self.root / "run", self.root / "import"):
                d.mkdir(parents=True, exist_ok=True)
            os.chmod(self.root, 0o700)
            self.write_conf(dist)
            self._ensure_password(java, dist)
        cmd = [
            str(java),
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            *jvm_flags(java),
            "-cp",
            f"{dist.lib}/*:{dist.plugins}/*",
            MAIN_CLASS,
            f"--home-dir={self.root}",
            f"--config-dir={self.conf_dir}",
            "--console-mode",
        ]
        log(f"Starting Neo4j {NEO4J_VERSION} (Java {major}) on {self.bolt_uri} …")
        debug_log = self.logs / "debug.log"
        log_offset = debug_log.stat().st_size if debug_log.exists() else 0  # only this start's messages count
        with self._folder_writes(), self.console_log.open("ab") as out:
            proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._env(),
                cwd=self.root,
                start_new_session=True,
            )
        try:
            with self._folder_writes():
                self.pid_file.write_text(str(proc.pid))
        except LauncherError:
            proc.kill()  # a server we could not record would be one `stop` cannot find
            proc.wait()
            raise
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise LauncherError(f"Neo4j exited with code {proc.returncode}.\n{self.log_tail()}")
            if self._bolt_ready():
                return True
            failure = self.database_failure(since=log_offset)  # the server is up, its database will not come
            if failure is not None:
                self.stop()
                raise LauncherError(failure)
            time.sleep(0.5)
        self.stop()
        raise LauncherError(f"Neo4j did not answer on {self.bolt_uri} within {timeout:.0f}s.\n{self.log_tail()}")

    @contextlib.contextmanager
    def _folder_writes(self) -> Iterator[None]:
        """A read-only or full disk under the instance folder: one clear error instead of a bare OSError."""
        try:
            yield
        except OSError as e:
            where = e.filename or self.root
            raise LauncherError(
                f"cannot write the instance folder {self.root} ({where}: {e.strerror or e}). Free disk space "
                "there or set GRAPHSTRATA_DATA_DIR to a writable folder."
            ) from e

    def _bolt_ready(self) -> bool:
        if not _port_answers(self.bolt_port):
            return False
        from neo4j import GraphDatabase
        from neo4j.exceptions import DriverError, Neo4jError

        try:
            with GraphDatabase.driver(self.bolt_uri, auth=("neo4j", self.password() or "")) as driver:
                driver.verify_connectivity()
                # an auto-commit query: no driver retries, so a database still starting is one quick "no"
                with driver.session(database="neo4j") as session:
                    session.run("RETURN 1").consume()
            return True
        except (DriverError, Neo4jError, OSError):
            return False

    def database_failure(self, since: int = 0) -> str | None:
        """Why the server answers but its database ``neo4j`` failed to start (None while it is fine or
        still starting): Neo4j's status message, and the cause and remedy we recognise in its debug log
        (read from byte `since`, so an old failure is not blamed)."""
        if not _port_answers(self.bolt_port):
            return None
        from neo4j import GraphDatabase
        from neo4j.exceptions import DriverError, Neo4jError

        try:
            with (
                GraphDatabase.driver(self.bolt_uri, auth=("neo4j", self.password() or "")) as driver,
                driver.session(database="system") as session,
            ):
                row = session.run("SHOW DATABASE neo4j YIELD currentStatus, requestedStatus, statusMessage").single()
        except (DriverError, Neo4jError, OSError):
            return None
        if row is None or row["requestedStatus"] != "online" or row["currentStatus"] != "offline":
            return None
        if not row["statusMessage"]:
            return None  # offline without an error: not started yet
        text = f"Neo4j is up but its database 'neo4j' failed to start: {row['statusMessage']}"
        debug = self.logs / "debug.log"
        tail = ""
        with contextlib.suppress(OSError), debug.open("rb") as f:
            size = debug.stat().st_size
            f.seek(max(since if since <= size else 0, size - 2_000_000))  # (a rotated log starts again at 0)
            tail = f.read().decode(errors="replace")
        if "recovery not possible" in tail:
            text += (
                "\nIts transaction log ends in an unfinished write, typically left when the disk filled up during "
                "a commit (that transaction was never confirmed to the client). Free disk space, back up "
                f"{self.data}, then start once with `--conf internal.dbms.tx_log.fail_on_corrupted_log_files=false` "
                "(or GRAPHSTRATA_NEO4J_CONF) so that Neo4j truncates the unfinished tail; later starts need no flag."
            )
        else:
            text += f"\nSee {debug}."
        return text

    def stop(self, timeout: float = 60.0) -> bool:
        """Stop the server; False if it was not running."""
        self._check_owner()
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        terminate(pid, timeout)
        self.pid_file.unlink(missing_ok=True)
        return True

    def status(self) -> dict:
        info: dict = {
            "instance": self.name,
            "home": str(self.root),
            "running": self.is_running(),
            "pid": self.pid(),
            "bolt": self.bolt_uri,
            "browser": f"{self.http_url}/browser/",
        }
        if info["running"] and self._bolt_ready():
            from neo4j import GraphDatabase

            with GraphDatabase.driver(self.bolt_uri, auth=("neo4j", self.password() or "")) as driver:
                rec = driver.execute_query(
                    "CALL dbms.components() YIELD name, versions, edition "
                    "RETURN versions[0] AS neo4j, edition, gds.version() AS gds"
                ).records[0]
            info.update(neo4j=rec["neo4j"], edition=rec["edition"], gds=rec["gds"], answering=True)
        else:
            info["answering"] = False
        return info

    def log_tail(self, lines: int = 40) -> str:
        parts = []
        for path in (self.logs / "neo4j.log", self.console_log):
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {path} (last {len(tail)} lines)\n" + "\n".join(tail))
        return "\n".join(parts) or f"(no log in {self.logs})"


def terminate(pid: int, timeout: float) -> None:
    """SIGTERM, then SIGKILL if the process is still alive after ``timeout`` seconds; returns once it is gone."""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.1)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)
        while alive(pid):
            time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of ours counts as gone
    with contextlib.suppress(ChildProcessError, OSError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _port_answers(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0
