"""Two test runs on one machine never share a Neo4j instance or a port, overrides win, and the
processes a run spawns die with it even when the run is killed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.reaper import start_time
from tests.run_instance import choose, free_ports

ROOT = Path(__file__).resolve().parents[1]


def bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_two_runs_of_one_checkout_get_their_own_instance_and_ports(tmp_path: Path) -> None:
    first = choose(ROOT, tmp_path, env={})
    try:
        assert first.name.startswith("pytest-") and not first.ephemeral
        assert first.bolt_port != first.http_port and bindable(first.bolt_port) and bindable(first.http_port)
        # the same checkout again while the first run holds its lock: another name, other ports
        second = choose(ROOT, tmp_path, env={}, pid=424242)
        try:
            assert second.name == f"{first.name}-424242" and second.ephemeral
            assert {second.bolt_port, second.http_port}.isdisjoint({first.bolt_port, first.http_port}) or (
                # free ports may repeat once released; what matters is that both are free now
                bindable(second.bolt_port) and bindable(second.http_port)
            )
        finally:
            second.release()
    finally:
        first.release()
    # released: the next run takes the checkout's instance again
    again = choose(ROOT, tmp_path, env={})
    assert again.name == first.name and not again.ephemeral
    again.release()
    # another checkout: another instance
    other = choose(tmp_path / "clone", tmp_path, env={})
    assert other.name != first.name and other.name.startswith("pytest-")
    other.release()


def test_overrides_win(tmp_path: Path) -> None:
    env = {
        "GRAPHSTRATA_TEST_INSTANCE": "mine",
        "GRAPHSTRATA_TEST_BOLT_PORT": "17001",
        "GRAPHSTRATA_TEST_HTTP_PORT": "17002",
    }
    run = choose(ROOT, tmp_path, env=env)
    assert (run.name, run.bolt_port, run.http_port, run.ephemeral) == ("mine", 17001, 17002, False)
    only_name = choose(ROOT, tmp_path, env={"GRAPHSTRATA_TEST_INSTANCE": "mine2"})
    assert only_name.name == "mine2" and bindable(only_name.bolt_port)


def test_free_ports_are_distinct_and_free() -> None:
    ports = free_ports(4)
    assert len(set(ports)) == 4 and all(bindable(p) for p in ports)


def test_a_killed_run_takes_its_servers_with_it(tmp_path: Path) -> None:
    """A stand-in run spawns a long-lived 'server', reports it, and is killed with SIGKILL (no teardown,
    no atexit): the reaper still stops the server. A process it withdrew (a kept server) survives."""
    pids = tmp_path / "pids"
    script = (
        "import subprocess, sys, time\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from tests.reaper import Reaper\n"
        "r = Reaper()\n"
        "server = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "kept = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True)\n"
        "r.watch(server.pid); r.watch(kept.pid); r.forget(kept.pid)\n"
        "open(sys.argv[2], 'w').write(f'{server.pid} {kept.pid}')\n"
        "time.sleep(600)\n"
    )
    run = subprocess.Popen([sys.executable, "-c", script, str(ROOT), str(pids)])
    try:
        deadline = time.monotonic() + 60
        while not (pids.exists() and pids.read_text()):
            assert run.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        server, kept = map(int, pids.read_text().split())
        assert start_time(server) is not None and start_time(kept) is not None
        run.send_signal(signal.SIGKILL)
        run.wait(30)
        deadline = time.monotonic() + 30
        while start_time(server) is not None:
            assert time.monotonic() < deadline, "the reaper left the killed run's server running"
            time.sleep(0.05)
        assert start_time(kept) is not None, "the reaper stopped a process it had been told to leave"
    finally:
        for pid in map(int, pids.read_text().split() if pids.exists() else ()):
            if start_time(pid) is not None:
                os.kill(pid, signal.SIGKILL)
        if run.poll() is None:
            run.kill()
