"""The dedicated compaction job of a table: planned on the driver, one task per bucket.

The job is planned on the driver (one picklable :class:`~stratalake.operation.compact.CompactTask`
per bucket with files, :func:`~stratalake.operation.compact.plan`) and run per bucket anywhere (e.g.
one Spark task per bucket); the commit messages it returns commit as one COMPACT snapshot, which
fails with :class:`~stratalake.exceptions.CommitConflictError` if another compaction removed any of
the same files first. It lives above both table kinds' compactions: primary-key buckets merge
(:mod:`stratalake.operation.compact`), append buckets merge small files (:mod:`stratalake.append.compact`).

Example::

    msgs = compact(t, full=True)                    # or: [run_task(t, task, True) for task in plan(t)]
    t.new_commit().commit(msgs)                     # what t.compact(full=True) does
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from stratalake.append import compact as append_compact
from stratalake.expressions import Predicate
from stratalake.lsm.data_file import FileNamer
from stratalake.operation.commit import CommitMessage
from stratalake.operation.compact import CompactTask, plan, run_primary_key_task
from stratalake.store.table_store import TableStore


def run_task(
    table: TableStore, task: CompactTask, full: bool = False, namer: FileNamer | None = None
) -> CommitMessage | None:
    """Compact one bucket; the message describes the files to swap (nothing is visible yet).
    Every file it writes is named by ``namer`` or its siblings (None: new namers)."""
    if not table.schema().primary_keys:  # append table: small-file compaction, no merge
        return append_compact.run_task(table, task, full, namer)
    return run_primary_key_task(table, task, full, namer)


def compact(
    table: TableStore,
    full: bool = False,
    partitions: Sequence[dict[str, Any]] | None = None,
    partition_filter: Predicate | None = None,
) -> list[CommitMessage]:
    """Compact every bucket (of ``partitions`` / the partitions ``partition_filter`` accepts) of
    the latest snapshot; returns commit messages."""
    tasks = plan(table, partitions, partition_filter)
    workers = min(len(tasks), os.cpu_count() or 1)
    if workers > 1:
        # Parquet decoding/encoding, sorting and takes release the GIL: buckets run in parallel.
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(lambda task: run_task(table, task, full), tasks))
    else:
        results = [run_task(table, task, full) for task in tasks]
    return [m for m in results if m is not None]
