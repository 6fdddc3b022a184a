"""The benchmarks' paired bootstrap (bench/common.py) against hand-computed bootstrap distributions
and the plug-in standard error of a mean."""

from __future__ import annotations

import sys
from math import sqrt
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def paired_bootstrap():
    sys.path.insert(0, str(BENCH))  # the benchmark scripts import their siblings by name
    try:
        from common import paired_bootstrap
    finally:
        sys.path.remove(str(BENCH))
    return paired_bootstrap


def test_two_questions_by_hand(paired_bootstrap):
    # differences (0, 1): a resample's mean is 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4, so the
    # 2.5th percentile is 0 and the 97.5th is 1
    r = paired_bootstrap([0.0, 1.0], [0.0, 0.0])
    assert r["diff"] == 0.5
    assert (r["lo"], r["hi"]) == (0.0, 1.0)


def test_four_questions_by_hand(paired_bootstrap):
    # differences (0, 0, 0, 1): P(mean = 0) = (3/4)^4 = 0.316, so the lower end is 0;
    # P(mean >= 0.75) = 4 (1/4)^3 (3/4) + (1/4)^4 = 0.051 > 0.025 > P(mean = 1) = 0.004, so the upper end is 0.75
    r = paired_bootstrap([0.5, 0.5, 1.0, 1.0], [0.5, 0.5, 1.0, 0.0])
    assert r["diff"] == 0.25
    assert (r["lo"], r["hi"]) == (0.0, 0.75)


def test_identical_methods_give_a_zero_width_interval(paired_bootstrap):
    r = paired_bootstrap([0.2, 0.7, 1.0], [0.2, 0.7, 1.0])
    assert (r["diff"], r["lo"], r["hi"]) == (0.0, 0.0, 0.0)


def test_width_matches_the_plug_in_standard_error(paired_bootstrap):
    # 100 questions, differences alternating -1/0/+1: the bootstrap distribution of the mean is close
    # to normal with sd = population sd / sqrt(n); the 95% interval is about ±1.96 sd
    diffs = [(-1.0, 0.0, 1.0)[i % 3] for i in range(99)] + [1.0]
    n = len(diffs)
    mean = sum(diffs) / n
    se = sqrt(sum((d - mean) ** 2 for d in diffs) / n) / sqrt(n)
    r = paired_bootstrap(diffs, [0.0] * n, resamples=10_000, seed=7)
    assert r["diff"] == pytest.approx(mean)
    assert r["hi"] - r["lo"] == pytest.approx(2 * 1.96 * se, rel=0.05)
    assert (r["lo"] + r["hi"]) / 2 == pytest.approx(mean, abs=0.2 * se)


def test_seeded_and_repeatable(paired_bootstrap):
    a, b = [1.0, 0.0, 0.5, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0, 0.5]
    assert paired_bootstrap(a, b, seed=3) == paired_bootstrap(a, b, seed=3)
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], [1.0, 0.0])
