"""Small-file compaction of append tables (Paimon's ``BucketedAppendCompactManager`` pick).

Append files are never merged by key: compaction concatenates consecutive small files of one
(partition, bucket) in sequence order into files of about ``target-file-size``, keeping each row's
sequence number, and writes them at level 0 (``_FILE_SOURCE`` COMPACT) as Paimon does. A file is
small below ``target-file-size``; files are picked, oldest first, in a sliding window that
compacts once it holds ``compaction.min.file-num`` (default 5) files adding up to the target size,
or ``compaction.max.file-num`` (default 50) files. ``full`` rewrites the bucket's files after
its leading big ones when they are at least three, mostly small (Paimon's rule), or when one has a
deletion vector; a compacted bucket is left alone, so compacting it again commits nothing.

With deletion vectors, compaction applies and drops them: the rows they mark are left out of the
new files, and the bucket's vectors of the rewritten files are dropped (its index files rewritten,
as Paimon does). A bucket whose vectors changed since the task read them conflicts at commit. A
file with a vector counts as small, so compaction also reclaims deleted rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stratalake.lsm.data_file import FileNamer, bucket_dir
from stratalake.lsm.deletion_vector import DeletionVectorsMaintainer
from stratalake.lsm.merge_reader import dv_keep_mask
from stratalake.operation.commit import CommitMessage
from stratalake.spec.manifest import DataFileMeta, FileSource, IndexManifestEntry
from stratalake.store.append_file import AppendFileWriter, iter_append_file
from stratalake.store.files import data_file_path
from stratalake.store.index_manifest import restore_maintainer

if TYPE_CHECKING:
    from stratalake.operation.compact import CompactTask
    from stratalake.store.table_store import TableStore

# Paimon's BucketedAppendCompactManager.FULL_COMPACT_MIN_FILE: fewer files are left as they are.
FULL_COMPACT_MIN_FILES = 3


def pick_files(
    table: TableStore,
    files: Sequence[DataFileMeta],
    full: bool = False,
    dvs: DeletionVectorsMaintainer | None = None,
) -> list[DataFileMeta] | None:
    """The files of one bucket to rewrite together, or None when nothing needs compacting."""
    opts = table.core_options
    target = opts.target_file_size

    def size(f: DataFileMeta) -> int:  # a file with deleted rows is worth rewriting
        return 0 if dvs is not None and dvs.has_deletion_vector(f.file_name) else f.file_size

    ordered = sorted(files, key=lambda f: (f.min_sequence_number, f.creation_time or 0, f.file_name))
    if full:
        return _pick_full(ordered, target, size, dvs)
    min_num = opts.get_int("compaction.min.file-num") or 5
    max_num = opts.get_int("compaction.max.file-num") or 50
    window: list[DataFileMeta] = []
    total = 0
    for f in ordered:
        if size(f) >= target:  # a big file ends the run of small ones
            window, total = [], 0
            continue
        window.append(f)
        total += size(f)
        if (total >= target and len(window) >= min_num) or len(window) >= max_num:
            return window
        if total >= target:  # slide: drop the oldest
            total -= size(window.pop(0))
    return None


def _pick_full(
    ordered: list[DataFileMeta],
    target: int,
    size: Callable[[DataFileMeta], int],
    dvs: DeletionVectorsMaintainer | None,
) -> list[DataFileMeta] | None:
    """Paimon's full-compaction pick: leading big files stay; the rest is rewritten when it holds
    at least ``FULL_COMPACT_MIN_FILES`` files, mostly small ones. Rewriting a bucket that is
    already compacted (one file, or a few big ones) would only copy it into a new COMPACT snapshot
    on every call, so it is nothing to compact. With deletion vectors Paimon rewrites the rest
    unconditionally; here only when a file of it has a vector (rows to reclaim), so a compacted
    deletion-vector bucket is not copied again either."""
    start = 0
    while start < len(ordered) and size(ordered[start]) >= target:
        start += 1
    rest = ordered[start:]
    if dvs is not None and any(dvs.has_deletion_vector(f.file_name) for f in rest):
        return rest
    small = sum(1 for f in rest if size(f) < target)
    if len(rest) >= FULL_COMPACT_MIN_FILES and small > len(rest) - small:
        return rest
    return None


def compaction_due(table: TableStore) -> bool:
    """Whether some (partition, bucket) of the latest snapshot holds files :func:`pick_files`
    would compact (never for ``write-only`` tables). Metadata only."""
    if table.core_options.get_bool("write-only"):
        return False
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return False
    buckets: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for e in table.live_entries(snapshot):
        buckets.setdefault((e.partition, e.bucket), []).append(e.file)
    return any(pick_files(table, files) is not None for files in buckets.values())


def rewrite(
    table: TableStore,
    partition_values: tuple[Any, ...],
    bucket: int,
    files: Sequence[DataFileMeta],
    namer: FileNamer,
    dvs: DeletionVectorsMaintainer | None = None,
) -> list[DataFileMeta]:
    """``files`` (sequence order) concatenated into new level-0 files, read file by file and batch
    by batch (bounded memory); their rows keep their sequence numbers' order. Rows that ``dvs``
    marks deleted are left out."""
    directory = bucket_dir(table.location, table.partition_codec.path(partition_values), bucket)
    writer = AppendFileWriter(
        table.file_io,
        table.schema(),
        table.core_options,
        directory,
        namer,
        files[0].min_sequence_number,
        file_source=FileSource.COMPACT,
    )
    try:
        for f in files:
            path = data_file_path(directory, f)
            dv = dvs.deletion_vector_of(f.file_name) if dvs is not None else None
            offset = 0
            for rows in iter_append_file(
                table.file_io, path, table.file_schema(f.schema_id), table.schema(), expected_rows=f.row_count
            ):
                n = rows.num_rows
                if dv is not None:
                    keep = dv_keep_mask(dv.positions, offset, n)
                    if keep is not None:
                        rows = rows.filter(pa.array(np.asarray(keep)))
                offset += n
                if rows.num_rows:
                    writer.write(rows)
        return writer.close()
    except BaseException:
        writer.abort()
        raise


def compact_bucket(
    table: TableStore,
    partition_values: tuple[Any, ...],
    bucket: int,
    files: Sequence[DataFileMeta],
    namer: FileNamer,
    full: bool = False,
    dvs: DeletionVectorsMaintainer | None = None,
) -> tuple[list[DataFileMeta], list[DataFileMeta]] | None:
    """Compact ``files`` of one bucket: (files replaced, files written), or None. The vectors of
    the replaced files are removed from ``dvs``."""
    picked = pick_files(table, files, full, dvs)
    if not picked:
        return None
    written = rewrite(table, partition_values, bucket, picked, namer, dvs)
    if dvs is not None:
        for f in picked:
            dvs.remove(f.file_name)
    return picked, written


def run_task(
    table: TableStore, task: CompactTask, full: bool = False, namer: FileNamer | None = None
) -> CommitMessage | None:
    """The dedicated compaction of one bucket of an append table (see ``operation/compact.py``);
    its files are named by ``namer`` and its siblings (None: a new namer)."""
    namer = namer or FileNamer("data")
    dvs = restore_maintainer(table, task.partition, task.bucket, task.dv_index) if task.dv_index else None
    if dvs is not None:
        dvs.namer = namer.sibling("index")
    result = compact_bucket(table, task.partition_values, task.bucket, task.files, namer, full, dvs)
    if result is None:
        return None
    before, after = result
    added: tuple[IndexManifestEntry, ...] = ()
    deleted: tuple[IndexManifestEntry, ...] = ()
    base: tuple[str, ...] | None = None
    if dvs is not None:
        base = tuple(e.file_name for e in dvs.base_files)
        added, deleted = dvs.write(table.file_io)
    return CommitMessage(
        partition=task.partition,
        bucket=task.bucket,
        total_buckets=task.total_buckets,
        compact_before=tuple(before),
        compact_after=tuple(after),
        index_files_added=added,
        index_files_deleted=deleted,
        # The vectors this compaction applied must still be the bucket's at commit.
        index_base=base if base is not None else (),
    )
