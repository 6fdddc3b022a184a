"""Which local Neo4j a test run uses, so two runs on one machine never share a database.

A run takes the instance ``pytest-<hash of the checkout path>`` (its data folder is reused by the next
run from the same checkout, and ``GRAPHSTRATA_KEEP_NEO4J=1`` can leave it running) and holds an
exclusive lock on it for the whole run. A second run from the same checkout finds the lock taken and
uses ``pytest-<hash>-<pid>`` instead (its folder is removed at the end). Ports are free ones the
kernel hands out (a bind to port 0), except when the kept instance is already running: then its own.
``GRAPHSTRATA_TEST_INSTANCE`` / ``GRAPHSTRATA_TEST_BOLT_PORT`` / ``GRAPHSTRATA_TEST_HTTP_PORT`` override.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports nobody listens on now (all sockets held open together, so no repeats)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(n):
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
        return ports


def configured_ports(root: Path) -> tuple[int, int] | None:
    """The bolt and http ports in an instance folder's neo4j.conf (as the launcher wrote them)."""
    conf = root / "conf" / "neo4j.conf"
    if not conf.exists():
        return None
    text = conf.read_text()
    bolt = re.search(r"^server\.bolt\.listen_address=.*:(\d+)$", text, re.M)
    http = re.search(r"^server\.http\.listen_address=.*:(\d+)$", text, re.M)
    return (int(bolt.group(1)), int(http.group(1))) if bolt and http else None


def _running(root: Path) -> bool:
    from graphstrata.neo4j_local import Instance

    return Instance(root.name, root, 0, 0, "1g", "64m").is_running()


def _try_lock(path: Path) -> IO[str] | None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


@dataclass
class RunInstance:
    name: str
    bolt_port: int
    http_port: int
    #: a per-run instance whose folder is removed when the run ends
    ephemeral: bool = False
    #: the lock held for the run's lifetime (the kernel releases it when the process ends, however it ends)
    lock: IO[str] | None = field(default=None, repr=False)

    def release(self) -> None:
        if self.lock is not None:
            self.lock.close()
            self.lock = None


def choose(checkout: Path, data_dir: Path, env: Mapping[str, str] = os.environ, pid: int | None = None) -> RunInstance:
    """The instance and ports of this test run (see the module's docstring)."""
    instances = data_dir / "neo4j"
    name = env.get("GRAPHSTRATA_TEST_INSTANCE")
    ephemeral = False
    lock = None
    if not name:
        name = "pytest-" + hashlib.sha256(str(checkout.resolve()).encode()).hexdigest()[:8]
        lock = _try_lock(instances / f".{name}.lock")
        if lock is None:  # another run of this checkout holds it
            name = f"{name}-{pid or os.getpid()}"
            lock = _try_lock(instances / f".{name}.lock")
            ephemeral = True
    bolt, http = env.get("GRAPHSTRATA_TEST_BOLT_PORT"), env.get("GRAPHSTRATA_TEST_HTTP_PORT")
    if bolt and http:
        return RunInstance(name, int(bolt), int(http), ephemeral, lock)
    kept = configured_ports(instances / name) if _running(instances / name) else None
    fresh = free_ports(2)
    chosen = kept or (fresh[0], fresh[1])
    return RunInstance(name, int(bolt) if bolt else chosen[0], int(http) if http else chosen[1], ephemeral, lock)
