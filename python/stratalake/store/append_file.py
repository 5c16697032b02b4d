"""Data files of append tables (no primary key): written and read in the table's own layout.

An append table's data file holds exactly the table's columns (no ``_KEY_*``, ``_SEQUENCE_NUMBER``
or ``_VALUE_KIND``; docs/format.md section 13). Its manifest entry is a level-0 file with the
sequence range of its rows, empty ``_MIN_KEY``/``_MAX_KEY`` rows and key statistics, and value
statistics computed from the rows (docs/format.md section 6.6). The format is the file name's
extension on read and the table's ``file.format`` options on write (``lsm/file_format.py``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from stratalake.exceptions import CorruptFileError
from stratalake.io import FileIO
from stratalake.lsm.data_file import DEFAULT_BATCH_ROWS, FileNamer
from stratalake.lsm.file_format import PARQUET, FormatWriter, file_format, format_of_file, open_data_file
from stratalake.merge import SEQUENCE_NUMBER, VALUE_KIND
from stratalake.options import CoreOptions
from stratalake.spec.binary_row import EMPTY_ROW
from stratalake.spec.manifest import DataFileMeta, FileSource, SimpleStats
from stratalake.spec.schema import TableSchema
from stratalake.spec.stats import compute_stats
from stratalake.types import (
    ArrayType,
    DataField,
    DataType,
    DecimalType,
    MapType,
    MultisetType,
    RowType,
    to_arrow,
)

_PARQUET_BUFFER = 1 << 20

# Append files have no key: Paimon writes empty rows for the key range and key statistics.
EMPTY_KEY_STATS = SimpleStats(EMPTY_ROW, EMPTY_ROW, ())


def physical_schema(schema: TableSchema) -> pa.Schema:
    """The Arrow schema of an append data file: the table's columns."""
    return pa.schema([pa.field(f.name, to_arrow(f.type), nullable=f.type.nullable) for f in schema.fields])


class AppendFileWriter:
    """Writes a stream of row chunks of one (partition, bucket) as level-0 data files, starting a
    new file once the current one reaches ``target-file-size``. Rows are numbered with sequence
    numbers from ``next_sequence`` on. Holds one chunk and a few summary rows per chunk, never a
    whole file. :meth:`abort` deletes every file started."""

    def __init__(
        self,
        file_io: FileIO,
        schema: TableSchema,
        options: CoreOptions,
        directory: str,
        namer: FileNamer,
        next_sequence: int,
        file_source: FileSource = FileSource.APPEND,
    ) -> None:
        self.file_io = file_io
        self.schema = schema
        self.options = options
        self.directory = directory
        self.namer = namer
        self.next_sequence = next_sequence
        self.file_source = file_source
        self.metas: list[DataFileMeta] = []
        self.paths: list[str] = []
        self._physical = physical_schema(schema)
        self._names = [f.name for f in schema.fields]
        self._types = [f.type for f in schema.fields]
        self._writer: FormatWriter | None = None
        self._name = ""
        self._rows = 0
        self._min_seq = 0
        self._stats: _StatsSummary | None = None

    def write(self, rows: pa.Table) -> None:
        """Append ``rows`` (the table's columns, in schema order)."""
        if rows.num_rows == 0:
            return
        rows = rows.select(self._names).cast(self._physical)
        if self._writer is None:
            self._open()
        assert self._writer is not None and self._stats is not None
        self._writer.write(rows)
        self._rows += rows.num_rows
        self.next_sequence += rows.num_rows
        if self.options.stats_mode != "none":
            self._stats.add(rows)
        if self._writer.position() >= self.options.target_file_size:
            self._finish()

    def close(self) -> list[DataFileMeta]:
        """Finish the current file; the metadata of every file written."""
        if self._writer is not None:
            self._finish()
        return self.metas

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.abort()
            self._writer = None
        for path in self.paths:
            self.file_io.delete_quietly(path)

    def _open(self) -> None:
        fmt = self.options.format_for_level(0, False)
        self._name = self.namer.next(fmt)
        path = f"{self.directory}/{self._name}"
        self.paths.append(path)
        self.file_io.mkdirs(self.directory)
        compression = self.options.compression_for_level(0, False)
        self._writer = file_format(fmt).open_writer(
            self.file_io,
            path,
            self._physical,
            compression,
            self.options.zstd_level,
            page_size=self.options.parquet_page_size,
        )
        self._rows = 0
        self._min_seq = self.next_sequence
        self._stats = _StatsSummary(self._names, self._types)

    def _finish(self) -> None:
        assert self._writer is not None and self._stats is not None
        self._writer.close()
        self._writer = None
        path = f"{self.directory}/{self._name}"
        mode = self.options.stats_mode
        value_stats = None if mode == "none" else self._stats.stats(mode)
        size = self.file_io.file_size(path)
        self.metas.append(
            _level0_meta(
                self._name, size, self._rows, value_stats, self._min_seq, self.schema.id, self.file_source
            )
        )


def iter_append_file(
    file_io: FileIO,
    path: str,
    file_schema: TableSchema,
    read_schema: TableSchema,
    columns: Sequence[str] | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    expected_rows: int | None = None,
) -> Iterator[pa.Table]:
    """An append data file's rows batch by batch in ``read_schema`` (columns mapped by field id:
    renamed columns keep their data, added columns read as nulls, widened types are cast);
    ``columns`` limits the columns read (``read_schema`` order). One batch is decoded at a time.
    ``expected_rows`` (the manifest's row count) catches an Avro file cut between two blocks,
    which the format itself cannot tell from a shorter file."""
    wanted = [f for f in read_schema.fields if columns is None or f.name in columns]
    by_id = {f.id: f for f in file_schema.fields}
    try:
        if format_of_file(path) == PARQUET:
            # Buffered column-chunk reads: memory follows the batch, not the row group (a file
            # written in one piece may be one row group).
            parquet = pq.ParquetFile(file_io.open_input_file(path), buffer_size=_PARQUET_BUFFER)
            names = parquet.schema_arrow.names
        else:
            reader = open_data_file(file_io, path, expected_rows)
            names = reader.schema.names
        present = set(names)
        physical = [by_id[f.id].name for f in wanted if f.id in by_id and by_id[f.id].name in present]
        if not physical:  # no column of the file is wanted (e.g. COUNT(*)): still count its rows
            physical = names[:1]
        columns_read = list(dict.fromkeys(physical))
        batches = (
            parquet.iter_batches(batch_size=batch_rows, columns=columns_read, use_threads=False)
            if format_of_file(path) == PARQUET
            else reader.iter_batches(columns_read, batch_rows)
        )
        for batch in batches:
            yield _conform(pa.Table.from_batches([batch]), wanted, by_id, present)
    except FileNotFoundError:
        raise CorruptFileError(
            f"data file {path} is missing (the table's metadata references it); if it is lost for good, "
            "CALL sys.remove_unexisting_files (Table.remove_unexisting_files) removes its entry and its rows"
        ) from None
    except (OSError, pa.ArrowInvalid) as e:
        raise CorruptFileError(f"data file {path} cannot be read: {e}") from None


def with_kv_columns(rows: pa.Table, first_sequence: int) -> pa.Table:
    """``rows`` as a KV table (section "KV tables" of ARCHITECTURE.md): every row an insert (+I),
    numbered from ``first_sequence``; what changelog and audit-log readers expect."""
    n = rows.num_rows
    seq = pa.array(np.arange(first_sequence, first_sequence + n, dtype=np.int64))
    return rows.append_column(pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False), seq).append_column(
        pa.field(VALUE_KIND, pa.int8(), nullable=False), pa.array(np.zeros(n, dtype=np.int8))
    )


def _conform(
    raw: pa.Table, wanted: Sequence[DataField], by_id: dict[int, DataField], present: set[str]
) -> pa.Table:
    n = raw.num_rows
    arrays: list[pa.ChunkedArray] = []
    fields = []
    for f in wanted:
        target = to_arrow(f.type)
        old = by_id.get(f.id)
        if old is not None and old.name in present:
            col = raw.column(old.name)
            if col.type != target:
                col = col.cast(target)
        else:
            col = pa.chunked_array([pa.nulls(n, type=target)])
        arrays.append(col)
        fields.append(pa.field(f.name, target, nullable=f.type.nullable))
    if not wanted:
        return pa.table({"__rows__": pa.nulls(n)}).select([])
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


class _StatsSummary:
    """Per-column statistics of a file written chunk by chunk: each chunk adds its min and max (two
    rows) and null counts, folded as :func:`compute_stats` would fold the whole file."""

    def __init__(self, names: Sequence[str], types: Sequence[DataType]) -> None:
        self.names = list(names)
        self.types = list(types)
        self.parts: list[pa.Table] = []
        self.null_counts = [0] * len(self.names)

    def add(self, rows: pa.Table) -> None:
        arrays = []
        for i, (name, dt) in enumerate(zip(self.names, self.types, strict=True)):
            col = rows.column(name)
            self.null_counts[i] += col.null_count
            arrays.append(_min_max_pair(col, dt))
        summary = pa.Table.from_arrays(arrays, names=self.names)
        self.parts = [pa.concat_tables([*self.parts, summary])] if self.parts else [summary]

    def stats(self, mode: str) -> SimpleStats:
        out = compute_stats(self.parts[0], self.names, self.types, mode)
        if out.null_counts is None or len(out.null_counts) != len(self.names):
            return out
        counts = tuple(None if c is None else self.null_counts[i] for i, c in enumerate(out.null_counts))
        return SimpleStats(out.min_values, out.max_values, counts)


def _min_max_pair(col: pa.ChunkedArray, dt: DataType) -> pa.Array:
    t = col.type
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
        t = col.type
    nested = pa.types.is_nested(t) or isinstance(dt, ArrayType | MapType | MultisetType | RowType)
    if nested or col.null_count == len(col):
        return pa.nulls(2, type=t)
    result = pc.min_max(col)
    lo, hi = result["min"], result["max"]
    if pa.types.is_floating(t) and lo.is_valid and hi.is_valid and lo.as_py() > hi.as_py():
        return pa.nulls(2, type=t)
    return pa.array([lo, hi], type=t)


def meta_of_parquet_file(
    file_io: FileIO,
    directory: str,
    name: str,
    schema: TableSchema,
    options: CoreOptions,
    first_sequence: int,
    file_source: FileSource = FileSource.APPEND,
) -> DataFileMeta:
    """The level-0 manifest entry of an append data file another writer (Spark's Parquet writer)
    made: its row count from the footer and its value statistics from the row groups' min, max
    and null counts, folded as :class:`AppendFileWriter` folds chunks. A column whose row groups
    lack min/max (parquet-mr omits values over 4 KiB, and a float column may hold NaN) is read
    back batch by batch instead; nothing holds more than one batch."""
    path = f"{directory}/{name}"
    try:
        parquet = pq.ParquetFile(file_io.open_input_file(path), buffer_size=_PARQUET_BUFFER)
    except FileNotFoundError:
        raise CorruptFileError(f"data file {path} is missing: its writer reported it") from None
    except (OSError, pa.ArrowInvalid) as e:
        raise CorruptFileError(f"data file {path} cannot be read: {e}") from None
    metadata = parquet.metadata
    mode = options.stats_mode
    value_stats = None if mode == "none" else _footer_stats(parquet, schema, mode)
    size = file_io.file_size(path)
    return _level0_meta(name, size, metadata.num_rows, value_stats, first_sequence, schema.id, file_source)


def _level0_meta(
    name: str,
    size: int,
    rows: int,
    value_stats: SimpleStats | None,
    first_sequence: int,
    schema_id: int,
    file_source: FileSource,
) -> DataFileMeta:
    """An append file's level-0 entry; ``value_stats`` None: stats mode ``none`` (no columns)."""
    return DataFileMeta(
        file_name=name,
        file_size=size,
        row_count=rows,
        min_key=EMPTY_ROW,
        max_key=EMPTY_ROW,
        key_stats=EMPTY_KEY_STATS,
        value_stats=SimpleStats(EMPTY_ROW, EMPTY_ROW, ()) if value_stats is None else value_stats,
        min_sequence_number=first_sequence,
        max_sequence_number=first_sequence + rows - 1,
        schema_id=schema_id,
        level=0,
        extra_files=(),
        creation_time=int(time.time() * 1000),
        delete_row_count=0,
        embedded_file_index=None,
        file_source=int(file_source),
        value_stats_cols=() if value_stats is None else None,
    )


def _footer_stats(parquet: pq.ParquetFile, schema: TableSchema, mode: str) -> SimpleStats:
    physical = physical_schema(schema)
    metadata = parquet.metadata
    index = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    arrays: list[pa.Array] = []
    null_counts: list[int] = []
    rescan: list[int] = []
    for i, f in enumerate(schema.fields):
        target = physical.field(i).type
        column = index.get(f.name)
        lo: Any = None
        hi: Any = None
        nulls = 0
        known = column is not None
        for g in range(metadata.num_row_groups) if known else ():
            chunk = metadata.row_group(g).column(column)
            stats = chunk.statistics
            if stats is None or not stats.has_null_count:
                known = False
                break
            nulls += stats.null_count
            if stats.null_count == chunk.num_values:
                continue  # all null: no min/max to fold
            group_lo, group_hi = _min_max_of(stats, f.type)
            if group_lo is None or group_hi is None:
                known = False
                break
            lo = group_lo if lo is None or group_lo < lo else lo
            hi = group_hi if hi is None or group_hi > hi else hi
        if isinstance(lo, float) and lo == 0.0:
            lo = 0.0  # Parquet writes a zero minimum as -0.0; the rows' min_max gives 0.0
        if isinstance(hi, float) and hi == 0.0:
            hi = 0.0
        if not known:
            rescan.append(i)
            arrays.append(pa.nulls(2, type=target))
            null_counts.append(0)
            continue
        null_counts.append(nulls)
        arrays.append(pa.array([lo, hi], type=target))
    if rescan:
        _rescan(parquet, schema, rescan, arrays, null_counts)
    names = [f.name for f in schema.fields]
    summary = _StatsSummary(names, [f.type for f in schema.fields])
    summary.parts = [pa.Table.from_arrays(arrays, names=names)]
    summary.null_counts = null_counts
    return summary.stats(mode)


def _min_max_of(stats: Any, dt: DataType) -> tuple[Any, Any]:
    """A row group's min and max as Python values of ``dt``; (None, None) when unknown (no
    min/max, NaN, or a physical form pyarrow does not convert)."""
    if not stats.has_min_max:
        return None, None
    if isinstance(dt, DecimalType):
        # Spark stores DECIMAL(p <= 18) as INT32/INT64 unscaled values, which pyarrow's
        # statistics do not convert; wider ones are big-endian two's complement bytes.
        def decimal(raw: Any) -> Decimal:
            unscaled = raw if isinstance(raw, int) else int.from_bytes(raw, "big", signed=True)
            return Decimal(unscaled).scaleb(-dt.scale)

        return decimal(stats.min_raw), decimal(stats.max_raw)
    try:
        lo, hi = stats.min, stats.max
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return None, None
    if (isinstance(lo, float) and lo != lo) or (isinstance(hi, float) and hi != hi):
        return None, None
    return lo, hi


def _rescan(
    parquet: pq.ParquetFile,
    schema: TableSchema,
    columns: list[int],
    arrays: list[pa.Array],
    null_counts: list[int],
) -> None:
    """Min, max and null count of ``columns`` from the rows, one batch at a time."""
    fields = [schema.fields[i] for i in columns]
    summary = _StatsSummary([f.name for f in fields], [f.type for f in fields])
    for batch in parquet.iter_batches(
        batch_size=DEFAULT_BATCH_ROWS, columns=[f.name for f in fields], use_threads=False
    ):
        summary.add(pa.Table.from_batches([batch]))
    if not summary.parts:  # no rows
        return
    for j, i in enumerate(columns):
        arrays[i] = _min_max_pair(summary.parts[0].column(j), fields[j].type)
        null_counts[i] = summary.null_counts[j]
