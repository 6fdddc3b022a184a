"""HNSW's bottom layer (algorithms/hnsw.py) on hand-made point sets whose graph is known."""

from __future__ import annotations

import numpy as np

from graphstrata.algorithms.hnsw import base_layer, select_neighbours


def arc(n: int) -> np.ndarray:
    angles = np.radians(np.arange(n) * 0.5)  # points along a short arc: a line, as far as ranking goes
    return np.stack([np.cos(angles), np.sin(angles)], axis=1)


def test_heuristic_keeps_one_neighbour_per_direction() -> None:
    v = arc(9)
    cands = np.array([0, 1, 2, 3, 5, 6, 7, 8])
    # from point 4, the nearest on each side covers every point beyond it
    assert sorted(select_neighbours(4, cands, v[cands] @ v[4], v, m=5)) == [3, 5]


def test_heuristic_keeps_every_direction_of_a_star() -> None:
    # a centre, 4 near spokes around it (each nearer the centre than its neighbours), 4 far ones beyond
    near = np.array([[0.5, 0, 1], [0, 0.5, 1], [-0.5, 0, 1], [0, -0.5, 1]])
    far = near * [2, 2, 1]
    v = np.vstack([[0.0, 0.0, 1.0], near, far])
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    cands = np.arange(1, 9)
    kept = select_neighbours(0, cands, v[cands] @ v[0], v, m=10)
    assert sorted(kept) == [1, 2, 3, 4]  # each far spoke hides behind its near one


def test_points_on_a_line_give_the_path_graph() -> None:
    n = 60
    edges = set(base_layer(arc(n), m=5, ef=200, seed=7))
    path = {(i, i + 1) for i in range(n - 1)}
    assert path <= edges  # when the later of two neighbours arrives, the earlier is its nearest on that side
    # every other edge joined two points that were adjacent among the points inserted by then
    assert all(b - a >= 1 for a, b in edges)


def test_degrees_stay_within_m0_and_every_node_is_linked() -> None:
    rng = np.random.default_rng(0)
    v = rng.normal(size=(400, 16))
    edges = base_layer(v, m=5, m0=10, ef=50, seed=1)
    out_degree = np.zeros(400, dtype=int)
    for a, b in edges:
        out_degree[a] += 1
        out_degree[b] += 1
    assert out_degree.min() >= 1
    # a node's own list holds at most m0 links; links others hold to it add to its undirected degree
    assert len(edges) <= 400 * 10
    assert base_layer(v, m=5, m0=10, ef=50, seed=1) == edges  # seeded: the same graph every time
