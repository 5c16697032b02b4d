"""The Arrow allocator of Spark's Python workers (see :func:`use_worker_allocator`)."""

from __future__ import annotations

import os

import pyarrow as pa

#: Arrow's own setting of its default pool; a user's choice there is kept.
POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"

_chosen = False


def use_worker_allocator() -> None:
    """Makes jemalloc the default Arrow memory pool of this Python worker, once, unless the
    process's environment names a pool (``ARROW_DEFAULT_MEMORY_POOL``) or pyarrow lacks jemalloc.

    Called where a Spark task enters stratalake (reads, writes, compactions, DML jobs), never in
    the user's own process. Why: a write task buffers up to ``write-buffer-size`` of rows, then a
    flush sorts and folds them, allocating and freeing about twice that. pyarrow's default pool,
    mimalloc, kept much of what was freed (a worker's RSS reached twice the pool's peak
    allocation), and Spark keeps the worker alive between tasks. Arrow configures jemalloc to
    return freed pages to the system after a second. Measured on the bench's 20M-row load and
    upsert (BENCHMARKS.md, 2026-11-30): the Python workers' peak RSS fell by a fifth on the load
    and by a third on the upsert; the returned pages are faulted in again by the next flush, which
    made the load ~8% slower (medians of 7), the upsert no slower. Memory that Spark's workers
    keep is what fails executors (their memory overhead), so memory wins here.
    """
    global _chosen
    if _chosen:
        return
    _chosen = True
    if os.environ.get(POOL_ENV):
        return
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc keeps its default
        return
    pa.set_memory_pool(pool)
