"""numpy's BLAS threads in this process (``GRAPHSTRATA_BLAS_THREADS``, default 1).

graphstrata's numpy products are small (a question's vector against a few thousand rows, a
community's pairwise similarities), too small for a second BLAS thread to pay. And OpenBLAS's
worker threads busy-wait after each call: on a machine with few cores they take the CPU that
Neo4j, the embedding pool and a question's other threads (fusion's members) need. Measured in
bench/results/latency.md (run ``session13``).

The embedding model runs on onnxruntime's own pool (``GRAPHSTRATA_EMBED_THREADS``) and is not
affected. spaCy's matrix products do run on this BLAS (:func:`graphstrata.text.nlp.matmul_ops`), one
thread each, as spaCy runs in ingest and for a question.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_applied = False


def limit_blas_threads(threads: int) -> None:
    """Lower the thread count of the BLAS libraries loaded in this process to ``threads`` (0: leave
    them as they are). Applied by the first caller only: OpenBLAS's thread count is process-wide, and
    changing it while another thread is inside a product is not safe, so it is set once, when the
    first :class:`~graphstrata.GraphStrata` opens, before any question runs."""
    global _applied
    if threads <= 0:
        return
    with _lock:
        if _applied:
            return
        import numpy  # noqa: F401  (loads numpy's BLAS, the one to limit)
        from threadpoolctl import ThreadpoolController

        for lib in ThreadpoolController().select(user_api="blas").lib_controllers:
            if lib.num_threads > threads:
                lib.set_num_threads(threads)
        _applied = True
