"""Servers a test run starts die with the run, however the run ends (a failure, Ctrl-C, the kernel's
OOM killer, `kill -9`).

The run starts one small watcher process (``python tests/reaper.py``) and keeps the write end of its
stdin. Every process the run spawns is reported to it as ``+ PID STARTTIME`` (``- PID`` withdraws
one that must outlive the run, such as a Neo4j kept by ``GRAPHSTRATA_KEEP_NEO4J=1``). When the run
ends the pipe closes — the kernel closes it even for a killed process — and the watcher stops every
reported process that is still alive: SIGTERM to it (to its process group when it leads one, as the
Neo4j launcher's server does), SIGKILL ten seconds later. The start time (from /proc) makes sure a
recycled pid is never hit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else fields[19]


class Reaper:
    """The run's side: spawns the watcher and reports processes to it."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            text=True,
            start_new_session=True,  # a Ctrl-C to the run's terminal must not stop the watcher before it acts
        )
        self._pipe: IO[str] = self._proc.stdin  # type: ignore[assignment]
        self.pid = self._proc.pid

    def watch(self, pid: int) -> None:
        started = start_time(pid)
        if started is not None and pid != self.pid:
            with contextlib.suppress(OSError, ValueError):
                self._pipe.write(f"+ {pid} {started}\n")
                self._pipe.flush()

    def forget(self, pid: int) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._pipe.write(f"- {pid}\n")
            self._pipe.flush()

    def close(self, timeout: float = 30.0) -> None:
        """End of the run: the watcher stops what is left and exits."""
        with contextlib.suppress(OSError):
            self._pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout)


def _stop(targets: dict[int, str], grace: float = 10.0) -> None:
    alive = {pid: st for pid, st in targets.items() if start_time(pid) == st}
    for pid in alive:
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGTERM)
            else:
                os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        alive = {pid: st for pid, st in alive.items() if start_time(pid) == st}
        time.sleep(0.1)
    for pid in alive:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    targets: dict[int, str] = {}
    for line in sys.stdin:  # until the run's end closes the pipe
        parts = line.split()
        if len(parts) == 3 and parts[0] == "+":
            targets[int(parts[1])] = parts[2]
        elif len(parts) == 2 and parts[0] == "-":
            targets.pop(int(parts[1]), None)
        if len(targets) > 256:  # most reported processes are short commands that ended long ago
            targets = {pid: st for pid, st in targets.items() if start_time(pid) == st}
    _stop(targets)


if __name__ == "__main__":
    main()
