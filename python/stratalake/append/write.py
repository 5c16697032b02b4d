"""Writes of append tables (no primary key), Paimon's ``AppendOnlyFileStoreWrite``.

Rows are only ever inserted: no merge, no row kinds. Each (partition, bucket) buffers its rows and
writes them as level-0 files in arrival order (``store/append_file.py``). ``bucket = -1``
(bucket-unaware) puts every row in ``bucket-0`` and any number of writers may write a partition at
once; a fixed ``bucket`` hashes rows by ``bucket-key`` with Paimon's bucket function
(``spec/bucket.py``, docs/format.md section 8), and a bucket's writer numbers its rows after the
highest sequence number of the bucket's live files, so files keep the order they were written in.
Commits go through the common committer (``operation/commit/``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.append.compact import compact_bucket
from stratalake.exceptions import InvalidDataError, SchemaError
from stratalake.lsm.data_file import FileNamer, bucket_dir
from stratalake.operation.commit import CommitMessage
from stratalake.operation.conform import conform, input_table
from stratalake.operation.write_base import BaseTableWrite
from stratalake.spec.bucket import bucket_ids
from stratalake.spec.default_value import column_defaults
from stratalake.spec.manifest import DataFileMeta
from stratalake.store.append_file import AppendFileWriter
from stratalake.store.partition import group_rows

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

UNAWARE_BUCKET = -1


# The buffered chunks are Spark's Arrow batches (10k rows, fewer per partition): written one by
# one they made row groups of a few thousand rows, which Parquet readers pay for per group and
# compress badly. Chunks are joined (without copying) into groups of about this size.
_ROW_GROUP_BYTES = 64 * 1024 * 1024


def _row_groups(tables: list[pa.Table], group_bytes: int) -> Iterator[pa.Table]:
    """Consecutive ``tables`` joined into tables of at least ``group_bytes`` (the last may be
    smaller); zero-copy: the result's chunks are the inputs'."""
    group: list[pa.Table] = []
    size = 0
    for t in tables:
        group.append(t)
        size += t.nbytes
        if size >= group_bytes:
            yield pa.concat_tables(group)
            group, size = [], 0
    if group:
        yield pa.concat_tables(group)


@dataclass
class _Buffer:
    partition: bytes
    partition_values: tuple[Any, ...]
    bucket: int
    next_sequence: int
    tables: list[pa.Table] = field(default_factory=list)
    nbytes: int = 0
    new_files: list[DataFileMeta] = field(default_factory=list)
    compact_before: list[DataFileMeta] = field(default_factory=list)
    compact_after: list[DataFileMeta] = field(default_factory=list)


class AppendTableWrite(BaseTableWrite):
    """The writer of an append table, with :class:`~stratalake.operation.write.TableWrite`'s interface
    (``write``, ``prepare_commit``, ``commit``, ``abort``; a context manager)."""

    def __init__(self, table: TableStore, commit_user: str | None = None) -> None:
        self.table = table
        self.commit_user = commit_user
        self._schema = table.schema()
        self._options = table.core_options
        self._arrow_schema = table.arrow_schema()
        self._defaults = column_defaults(table.identifier, self._schema.fields)
        self._num_buckets = self._options.bucket
        self._bucket_keys = self._schema.bucket_keys
        self._bucket_types = [self._schema.field(k).type for k in self._bucket_keys]
        self._buffers: dict[tuple[bytes, int], _Buffer] = {}
        self._restored: dict[tuple[bytes, int], list[DataFileMeta]] | None = None
        # Set for an overwrite: the old files are about to go, nothing continues from them.
        self.ignore_previous_files = False
        # Whether flushed buckets' small files are compacted (off for row-level DML's new rows).
        self.compact = True
        self._namer = FileNamer("data")
        self._buffered_bytes = 0
        self._written: list[str] = []
        self._committed = False
        self._lock = threading.Lock()

    @property
    def total_buckets(self) -> int:
        return self._num_buckets if self._num_buckets > 0 else UNAWARE_BUCKET

    # -- input ----------------------------------------------------------------------------------
    def write(self, data: pa.TableStore | pa.RecordBatch, row_kind: str | None = None) -> None:
        """Buffer ``data``. Append tables only take inserts: a ``row_kind`` column may hold only '+I'."""
        data = input_table(data, self.table.identifier)
        if data.num_rows == 0:
            return
        if row_kind is not None:
            self._check_inserts(data, row_kind)
        rows = conform(
            data, self._arrow_schema, self.table.identifier, row_kind=row_kind, defaults=self._defaults
        )
        codes = self._bucket_codes(rows)
        card = max(self._num_buckets, 1)
        for indices, bucket in group_rows(rows, self._schema.partition_keys, codes, card):
            self._add(rows.take(indices), bucket)
        if self._buffered_bytes > self._options.write_buffer_size:
            while self._buffered_bytes > self._options.write_buffer_size // 2:
                buf = max(self._buffers.values(), key=lambda b: b.nbytes)
                if buf.nbytes == 0:
                    break
                self._flush(buf)

    def _check_inserts(self, data: pa.Table, row_kind: str) -> None:
        if row_kind not in data.column_names:
            raise SchemaError(
                f"table {self.table.identifier}: row kind column '{row_kind}' is missing from the input"
            )
        values = data.column(row_kind)
        bad = pc.filter(values, pc.invert(pc.fill_null(pc.equal(values, "+I"), False)))
        if len(bad):
            raise InvalidDataError(
                f"table {self.table.identifier} is an append table (no primary key): it only takes "
                f"inserts ('+I'), not {bad.unique().to_pylist()[:5]}; use a primary-key table for "
                "updates and deletes"
            )

    def _bucket_codes(self, rows: pa.Table) -> np.ndarray:
        if self._num_buckets <= 1:
            return np.zeros(rows.num_rows, dtype=np.int64)
        cols = [rows.column(k) for k in self._bucket_keys]
        return bucket_ids(cols, self._bucket_types, self._num_buckets).astype(np.int64)

    def _add(self, part: pa.Table, bucket: int) -> None:
        codec = self.table.partition_codec
        values = tuple(part.column(k)[0].as_py() for k in codec.keys)
        partition = codec.to_bytes(values)
        key = (partition, bucket)
        buf = self._buffers.get(key)
        if buf is None:
            buf = _Buffer(partition, values, bucket, self._restored_max_sequence(partition, bucket) + 1)
            self._buffers[key] = buf
        buf.tables.append(part)
        buf.nbytes += part.nbytes
        self._buffered_bytes += part.nbytes

    def restored_files(self, partition: bytes, bucket: int) -> list[DataFileMeta]:
        """The live files of (partition, bucket) at the latest snapshot when first asked."""
        if self.ignore_previous_files:
            return []
        if self._restored is None:
            snap = self.table.latest_snapshot()
            self._restored = {}
            for e in self.table.live_entries(snap) if snap is not None else []:
                self._restored.setdefault((e.partition, e.bucket), []).append(e.file)
        return self._restored.get((partition, bucket), [])

    def _restored_max_sequence(self, partition: bytes, bucket: int) -> int:
        # Bucket-unaware writers do not restore (any number write a partition at once, as in
        # Paimon); a fixed bucket's single writer numbers its rows after the live files'.
        if self._num_buckets <= 0:
            return -1
        return max((f.max_sequence_number for f in self.restored_files(partition, bucket)), default=-1)

    # -- flushing ---------------------------------------------------------------------------------
    def _directory(self, buf: _Buffer) -> str:
        return bucket_dir(
            self.table.location, self.table.partition_codec.path(buf.partition_values), buf.bucket
        )

    def _flush(self, buf: _Buffer) -> None:
        if not buf.tables:
            return
        tables, buf.tables = buf.tables, []
        with self._lock:
            self._buffered_bytes -= buf.nbytes
        buf.nbytes = 0
        writer = AppendFileWriter(
            self.table.file_io,
            self._schema,
            self._options,
            self._directory(buf),
            self._namer,
            buf.next_sequence,
        )
        try:
            for group in _row_groups(tables, min(_ROW_GROUP_BYTES, self._options.target_file_size)):
                writer.write(group)
            files = writer.close()
        except BaseException:
            writer.abort()
            raise
        buf.next_sequence = writer.next_sequence
        buf.new_files += files
        with self._lock:
            self._written += writer.paths

    def _finish(self, buf: _Buffer) -> None:
        self._flush(buf)
        if self._options.get_bool("write-only") or not self.compact or not buf.new_files:
            return
        # As Paimon's append writers: small files of the bucket are merged once there are enough.
        result = compact_bucket(
            self.table, buf.partition_values, buf.bucket, self._candidates(buf), self._namer
        )
        if result is not None:
            # As Paimon's CommitMessage: the new files go in the APPEND snapshot, the compaction
            # (which may include them) in the COMPACT one that follows.
            buf.compact_before, buf.compact_after = list(result[0]), list(result[1])
            with self._lock:
                self._written += [f"{self._directory(buf)}/{f.file_name}" for f in result[1]]

    def _candidates(self, buf: _Buffer) -> list[DataFileMeta]:
        """Files a writer's compaction may merge: with fixed buckets, the bucket's live files and
        this writer's; bucket-unaware writers only merge their own new files (other writers may
        be compacting the partition's older ones). With deletion vectors, only this writer's own
        files: live files may have vectors, which the dedicated compaction applies."""
        if self._num_buckets <= 0 or self._options.deletion_vectors_enabled:
            return list(buf.new_files)
        return [*self.restored_files(buf.partition, buf.bucket), *buf.new_files]

    def prepare_commit(self) -> list[CommitMessage]:
        """Flush every buffer and describe the new files; nothing is visible until committed."""
        buffers = list(self._buffers.values())
        if len(buffers) > 1:
            with ThreadPoolExecutor(min(len(buffers), os.cpu_count() or 1)) as pool:
                list(pool.map(self._finish, buffers))
        else:
            for buf in buffers:
                self._finish(buf)
        messages = []
        for buf in buffers:
            if buf.new_files or buf.compact_before or buf.compact_after:
                messages.append(
                    CommitMessage(
                        partition=buf.partition,
                        bucket=buf.bucket,
                        total_buckets=self.total_buckets,
                        new_files=tuple(buf.new_files),
                        compact_before=tuple(buf.compact_before),
                        compact_after=tuple(buf.compact_after),
                    )
                )
            # The next commit continues from what this one adds (and no longer from what it compacted).
            if self._restored is not None and (buf.new_files or buf.compact_before):
                gone = {f.file_name for f in buf.compact_before}
                kept = [
                    f for f in self._restored.get((buf.partition, buf.bucket), []) if f.file_name not in gone
                ]
                self._restored[(buf.partition, buf.bucket)] = [
                    *(f for f in kept + buf.new_files if f.file_name not in gone),
                    *buf.compact_after,
                ]
            buf.new_files, buf.compact_before, buf.compact_after = [], [], []
        self._written = []
        return messages

    def abort(self) -> None:
        """Delete every file this writer wrote that was not committed."""
        for path in self._written:
            self.table.file_io.delete_quietly(path)
        self._written = []
        self._buffers.clear()
        self._buffered_bytes = 0
