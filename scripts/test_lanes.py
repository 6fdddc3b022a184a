"""Run the test suite as two pytest processes side by side (`make test`).

Half of the suite's wall time is spent waiting rather than computing: on the local model (one
llama.cpp thread), on Neo4j servers starting and stopping, on injected failures. A second lane runs
those files beside the rest, so the two cores are used together; each lane is an ordinary pytest
run with its own Neo4j instance and ports (tests/conftest.py), as two runs on one machine always are.

The main lane prints as it goes; the side lane's output is kept in a file and printed whole once the
main lane ends (so the two never interleave), then one line per lane says how it ended. The exit
status is non-zero when either lane fails.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the side lane: the real-model tests and the tests that mostly wait on Neo4j restarts
SIDE = (
    "tests/test_local_llm.py",
    "tests/test_small_model_handling.py",
    "tests/test_launcher.py",
    "tests/test_write_failures.py",
    "tests/test_hostile_files.py",
    "tests/test_reliability.py",
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Run the test suite in two pytest lanes side by side; extra arguments go to both lanes.",
        epilog="Example: python scripts/test_lanes.py -x  (stop each lane at its first failure)",
    )
    ap.add_argument("--serial", action="store_true", help="run the lanes one after the other")
    ap.add_argument("pytest_args", nargs=argparse.REMAINDER, help="passed to pytest in both lanes")
    a = ap.parse_args(argv)
    # two processes must not write one .pytest_cache at the same time
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *a.pytest_args]
    side_cmd = [*base, *SIDE]
    main_cmd = [*base, *(f"--ignore={f}" for f in SIDE)]
    t0 = time.monotonic()
    with tempfile.NamedTemporaryFile("w+", prefix="graphstrata-side-lane-", suffix=".log") as log:
        print(f"side lane ({', '.join(Path(f).stem for f in SIDE)}) runs beside; its output follows the main lane's")
        sys.stdout.flush()
        side = subprocess.Popen(side_cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            if a.serial:
                side.wait()
            main_rc = subprocess.call(main_cmd, cwd=ROOT)
            main_s = time.monotonic() - t0
            while side.poll() is None:  # a line a minute, so that a log shows the run is alive
                print(f"waiting for the side lane ({time.monotonic() - t0:.0f} s since the start)", flush=True)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    side.wait(timeout=60)
        except BaseException:
            side.terminate()
            side.wait()
            raise
        side_s = time.monotonic() - t0
        log.flush()
        log.seek(0)
        print("\n" + "=" * 30 + " side lane " + "=" * 30)
        sys.stdout.write(log.read())
    print(f"main lane: {'passed' if main_rc == 0 else f'FAILED (exit {main_rc})'} in {main_s:.0f} s")
    print(f"side lane: {'passed' if side.returncode == 0 else f'FAILED (exit {side.returncode})'} in {side_s:.0f} s")
    return 0 if main_rc == 0 and side.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
