"""Small-file compaction of append tables (Paimon's ``BucketedAppendCompactManager`` pick).

Append files are never merged by key: compaction concatenates consecutive small files of one
(partition, bucket) in sequence order into files of about ``target-file-size``, keeping each row's
sequence number, and writes them at level 0 (``_FILE_SOURCE`` COMPACT) as Paimon does. A file is
small below ``target-file-size``; files are picked, oldest first, in a sliding window that
compacts once it holds ``compaction.min.file-num`` (default 5) files adding up to the target size,
or ``compaction.max.file-num`` (default 50) files. ``full`` rewrites every file of the bucket
(when it holds more than one file, or a single small one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from stratalake.lsm.data_file import FileNamer, bucket_dir
from stratalake.spec.manifest import DataFileMeta, FileSource
from stratalake.table.append_file import AppendFileWriter, iter_append_file
from stratalake.table.commit import CommitMessage

if TYPE_CHECKING:
    from stratalake.table.compact import CompactTask
    from stratalake.table.table import Table


def pick_files(table: Table, files: Sequence[DataFileMeta], full: bool = False) -> list[DataFileMeta] | None:
    """The files of one bucket to rewrite together, or None when nothing needs compacting."""
    opts = table.core_options
    target = opts.target_file_size
    ordered = sorted(files, key=lambda f: (f.min_sequence_number, f.creation_time or 0, f.file_name))
    if full:
        if len(ordered) > 1 or (ordered and ordered[0].file_size < target):
            return ordered
        return None
    min_num = opts.get_int("compaction.min.file-num") or 5
    max_num = opts.get_int("compaction.max.file-num") or 50
    window: list[DataFileMeta] = []
    total = 0
    for f in ordered:
        if f.file_size >= target:  # a big file ends the run of small ones
            window, total = [], 0
            continue
        window.append(f)
        total += f.file_size
        if (total >= target and len(window) >= min_num) or len(window) >= max_num:
            return window
        if total >= target:  # slide: drop the oldest
            total -= window.pop(0).file_size
    return None


def rewrite(
    table: Table,
    partition_values: tuple[Any, ...],
    bucket: int,
    files: Sequence[DataFileMeta],
    namer: FileNamer,
) -> list[DataFileMeta]:
    """``files`` (sequence order) concatenated into new level-0 files, read file by file and batch
    by batch (bounded memory); their rows keep their sequence numbers' order."""
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
            path = f"{directory}/{f.file_name}"
            for rows in iter_append_file(table.file_io, path, table.file_schema(f.schema_id), table.schema()):
                writer.write(rows)
        return writer.close()
    except BaseException:
        writer.abort()
        raise


def compact_bucket(
    table: Table,
    partition_values: tuple[Any, ...],
    bucket: int,
    files: Sequence[DataFileMeta],
    namer: FileNamer,
    full: bool = False,
) -> tuple[list[DataFileMeta], list[DataFileMeta]] | None:
    """Compact ``files`` of one bucket: (files replaced, files written), or None."""
    picked = pick_files(table, files, full)
    if not picked:
        return None
    return picked, rewrite(table, partition_values, bucket, picked, namer)


def run_task(table: Table, task: CompactTask, full: bool = False) -> CommitMessage | None:
    """The dedicated compaction of one bucket of an append table (see ``table/compact.py``)."""
    result = compact_bucket(table, task.partition_values, task.bucket, task.files, FileNamer("data"), full)
    if result is None:
        return None
    before, after = result
    return CommitMessage(
        partition=task.partition,
        bucket=task.bucket,
        total_buckets=task.total_buckets,
        compact_before=tuple(before),
        compact_after=tuple(after),
    )
