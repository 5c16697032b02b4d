"""Reads of append tables (no primary key): every row of every live file, no merge.

Scan planning (``read/scan.py``) gives splits of files read one after the other (``merge=False``),
pruned by partition and by the files' value statistics (:func:`~stratalake.read.value_stats.file_may_match`); this module reads
them file by file and batch by batch, applies deletion vectors by row position when a snapshot
has them, and filters rows. :class:`AppendTableRead` has :class:`~stratalake.read.merge_read.TableRead`'s
interface, so Spark's data source, system tables and streaming use either.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from stratalake.exceptions import SchemaError, UnsupportedError
from stratalake.expressions import FilterLike, Predicate, to_predicate
from stratalake.lsm.data_file import DEFAULT_BATCH_ROWS, bucket_dir
from stratalake.lsm.deletion_vector import read_deletion_vector
from stratalake.lsm.merge_reader import dv_keep_mask
from stratalake.read.fallback import BranchReaders
from stratalake.read.scan import Split
from stratalake.spec.manifest import DataFileMeta
from stratalake.store.append_file import iter_append_file, with_kv_columns
from stratalake.store.files import data_file_path

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore


# Metadata columns of append-table scans that Spark's row-level plan uses as the row id.
FILE_COLUMN = "__stratalake_file"
POS_COLUMN = "__stratalake_pos"
SNAPSHOT_COLUMN = "__stratalake_snapshot"
ROW_ID_COLUMNS = (FILE_COLUMN, POS_COLUMN, SNAPSHOT_COLUMN)


def with_row_ids(rows: pa.Table, file_name: str, snapshot_id: int) -> pa.Table:
    """``rows`` (already holding :data:`POS_COLUMN`) followed by the data file's name and the
    snapshot read: the row id of Spark's row-level plans by position."""
    n = rows.num_rows
    rows = rows.append_column(FILE_COLUMN, pa.array([file_name] * n, pa.string()))
    return rows.append_column(SNAPSHOT_COLUMN, pa.array(np.full(n, snapshot_id, dtype=np.int64)))


class AppendTableRead:
    """Reads splits of an append table into Arrow batches of the requested columns."""

    def __init__(
        self, table: TableStore, columns: Sequence[str] | None = None, filter: FilterLike = None
    ) -> None:
        self.table = table
        names = [f.name for f in table.schema().fields]
        if columns is not None:
            unknown = [c for c in columns if c not in names]
            if unknown:
                raise SchemaError(
                    f"table {table.identifier}: unknown column(s) {unknown}; columns are {names}"
                )
        self.columns: list[str] = list(columns) if columns is not None else names
        self.predicate: Predicate | None = to_predicate(filter)
        if self.predicate is not None:
            unknown = sorted(self.predicate.columns() - set(names))
            if unknown:
                raise SchemaError(f"table {table.identifier}: filter uses unknown column(s) {unknown}")
        wanted = set(self.columns) | (self.predicate.columns() if self.predicate is not None else set())
        self._read_columns: list[str] | None = (
            None if wanted >= set(names) else [n for n in names if n in wanted]
        )
        self.batch_rows = DEFAULT_BATCH_ROWS
        self._branches = BranchReaders(table, self.columns, self.predicate)

    @property
    def read_columns(self) -> list[str] | None:
        """The columns read from data files (None: all of them)."""
        return self._read_columns

    def output_schema(self) -> pa.Schema:
        full = self.table.arrow_schema()
        return pa.schema([full.field(c) for c in self.columns])

    def _file_rows(
        self, split: Split, f: DataFileMeta, columns: Sequence[str] | None, positions: str | None = None
    ) -> Iterator[pa.Table]:
        """A file's live rows batch by batch (deletion vector applied by position); with
        ``positions``, a column of that name holds each row's position in the file."""
        table = self.table
        directory = bucket_dir(
            table.location, table.partition_codec.path(split.partition_values), split.bucket
        )
        deletion_file = split.deletion_file(f.file_name)
        dv = (
            read_deletion_vector(table.file_io, deletion_file, f.row_count)
            if deletion_file is not None
            else None
        )
        offset = 0
        path = data_file_path(directory, f)
        for rows in iter_append_file(
            table.file_io,
            path,
            table.file_schema(f.schema_id),
            table.schema(),
            columns,
            self.batch_rows,
            expected_rows=f.row_count,
        ):
            n = rows.num_rows
            if positions is not None:
                rows = rows.append_column(positions, pa.array(np.arange(offset, offset + n, dtype=np.int64)))
            if dv is not None:
                keep = dv_keep_mask(dv.positions, offset, n)
                if keep is not None:
                    rows = rows.filter(pa.array(keep))
            offset += n
            yield rows

    def read_split(self, split: Split) -> Iterator[pa.RecordBatch]:
        """Filtered rows of one split as record batches of :meth:`output_schema`, file by file."""
        schema = self.output_schema()
        other = self._branches.reader(split, self.batch_rows)
        if other is not None:  # a fallback branch's partition: read with that branch's schemas
            yield from (batch.cast(schema) for batch in other.read_split(split))
            return
        expr = self.predicate.to_arrow() if self.predicate is not None else None
        for f in split.files:
            for rows in self._file_rows(split, f, self._read_columns):
                if expr is not None:
                    rows = rows.filter(expr)
                if rows.num_rows:
                    yield from (
                        rows.select(self.columns).cast(schema).to_batches(max_chunksize=self.batch_rows)
                    )

    def read_split_with_row_ids(self, split: Split) -> Iterator[pa.Table]:
        """As :meth:`read_split`, each row followed by its row id for row-level DML: data file
        name, position in the file and the split's snapshot (``append/dml.py``)."""
        if split.branch is not None and split.branch != self.table.current_branch:
            raise UnsupportedError(
                f"table {self.table.identifier}: rows of branch '{split.branch}' (its "
                "'scan.fallback-branch') have no row ids in this table; row-level commands change "
                "the branch they run on only"
            )
        expr = self.predicate.to_arrow() if self.predicate is not None else None
        wanted = [*self.columns, POS_COLUMN]
        for f in split.files:
            for rows in self._file_rows(split, f, self._read_columns, POS_COLUMN):
                if expr is not None:
                    rows = rows.filter(expr)
                if rows.num_rows:
                    yield with_row_ids(rows.select(wanted), f.file_name, split.snapshot_id)

    def read_split_table(self, split: Split) -> pa.Table:
        return pa.Table.from_batches(list(self.read_split(split)), schema=self.output_schema())

    def iter_kv_split(self, split: Split) -> Iterator[pa.Table]:
        """A split's rows (every column, no filter) as KV tables: all inserts (+I), numbered by
        each file's sequence range (for the audit log and changelog readers)."""
        other = self._branches.reader(split, self.batch_rows)
        if other is not None:
            yield from other.iter_kv_split(split)
            return
        for f in split.files:
            seq = f.min_sequence_number
            for rows in self._file_rows(split, f, None):
                yield with_kv_columns(rows, seq)
                seq += rows.num_rows

    def read_kv_split(self, split: Split) -> pa.Table:
        chunks = list(self.iter_kv_split(split))
        if not chunks:
            return with_kv_columns(self.table.arrow_schema().empty_table(), 0)
        return pa.concat_tables(chunks) if len(chunks) > 1 else chunks[0]

    def read_splits(self, splits: Sequence[Split]) -> pa.Table:
        """Read splits concurrently (Parquet decoding releases the GIL)."""
        workers = min(len(splits), os.cpu_count() or 1)
        if workers > 1:
            with ThreadPoolExecutor(workers) as pool:
                tables = list(pool.map(self.read_split_table, splits))
        else:
            tables = [self.read_split_table(s) for s in splits]
        if not tables:
            return self.output_schema().empty_table()
        return pa.concat_tables(tables)
