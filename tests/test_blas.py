"""numpy's BLAS at one thread in a process that opens a graph (graphstrata/blas.py).

Each case runs in a fresh interpreter: the limit is process-wide and applied once, and numpy's
OpenBLAS starts with OPENBLAS_NUM_THREADS=2 there, so "limited" and "left alone" differ on any
machine."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from graphstrata.config import Settings

PROBE = """
import json, sys
from threadpoolctl import threadpool_info
{body}
print(json.dumps([lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]))
"""


def blas_threads(body: str, env: dict[str, str]) -> list[int]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(body=body)],
        env={**env, "OPENBLAS_NUM_THREADS": "2"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def env(neo4j_settings: Settings) -> dict[str, str]:
    return neo4j_settings.subprocess_env()


def test_blas_starts_at_two_threads_in_the_probe(env: dict[str, str]) -> None:
    assert blas_threads("import numpy", env) == [2]


def test_opening_a_graph_sets_numpy_blas_to_one_thread(env: dict[str, str]) -> None:
    body = "from graphstrata import GraphStrata\nGraphStrata().close()"
    assert blas_threads(body, env) == [1]


def test_blas_threads_zero_leaves_blas_alone(env: dict[str, str]) -> None:
    body = "from graphstrata import GraphStrata\nGraphStrata().close()"
    assert blas_threads(body, {**env, "GRAPHSTRATA_BLAS_THREADS": "0"}) == [2]


def test_the_first_limit_holds(env: dict[str, str]) -> None:
    """Set once, before questions run: a later call (another GraphStrata) does not change it."""
    body = "from graphstrata.blas import limit_blas_threads\nlimit_blas_threads(2)\nlimit_blas_threads(1)"
    assert blas_threads(body, env) == [2]
