"""Data files of a bucket in Paimon's KV layout, written and read columnar.

A file's format (Parquet, ORC or Avro: ``lsm/file_format.py``) is its name's extension on read and
the table's ``file.format`` options on write. Physical layout (docs/format.md section 6.1):
``_KEY_<k>`` per trimmed-key column, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, then every table column.
A second layout (pypaimon's Rust writer, Paimon's thin mode) has no ``_KEY_`` columns; the reader
accepts both because it only ever reads the value columns.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from stratalake.exceptions import CorruptFileError
from stratalake.io import FileIO
from stratalake.lsm.file_format import PARQUET, file_format, format_of_file, open_data_file
from stratalake.merge import SEQUENCE_NUMBER, VALUE_KIND
from stratalake.options import CoreOptions
from stratalake.spec.binary_row import encode_row
from stratalake.spec.manifest import DataFileMeta, FileSource, SimpleStats
from stratalake.spec.schema import TableSchema
from stratalake.spec.stats import compute_stats
from stratalake.types import ArrayType, DataField, DataType, MapType, MultisetType, RowType, to_arrow

KEY_PREFIX = "_KEY_"
SYSTEM_COLUMNS = (SEQUENCE_NUMBER, VALUE_KIND)


class FileNamer:
    """``<prefix>-<uuid>-<n>.<format>`` names (``data-...``), unique per writer.

    A writer's other kinds of file (``changelog-<uuid>-<n>``, ``index-<uuid>-<n>``) come from its
    :meth:`sibling` namers, which share the uuid: every file one task attempt writes carries it, so
    the attempt's files can be found by name (``spark/job_attempts.py``)."""

    def __init__(self, prefix: str = "data", uuid_: str | None = None) -> None:
        self._uuid = uuid_ or str(uuid.uuid4())
        self._counter = itertools.count()  # atomic under the GIL: buckets flush in parallel
        self._prefix = prefix
        self._siblings: dict[str, FileNamer] = {prefix: self}

    def next(self, extension: str | None = "parquet") -> str:
        name = f"{self._prefix}-{self._uuid}-{next(self._counter)}"
        return name if extension is None else f"{name}.{extension}"

    def sibling(self, prefix: str) -> FileNamer:
        """The namer of ``prefix`` files with this namer's uuid (one per prefix: names never repeat)."""
        namer = self._siblings.get(prefix)
        if namer is None:
            namer = self._siblings.setdefault(prefix, FileNamer(prefix, self._uuid))
            namer._siblings = self._siblings
        return namer

    @property
    def uuid(self) -> str:
        """The part of every name this namer gives that no other namer's has."""
        return self._uuid

    def owns(self, file_name: str) -> bool:
        return file_name.startswith(f"{self._prefix}-{self._uuid}-")


def bucket_dir(table_path: str, partition_path: str, bucket: int) -> str:
    base = table_path.rstrip("/")
    return f"{base}/{partition_path}/bucket-{bucket}" if partition_path else f"{base}/bucket-{bucket}"


@dataclass
class DataFileWriter:
    """Writes sorted KV tables as data files of one bucket, rolling at ``target-file-size``."""

    file_io: FileIO
    schema: TableSchema
    options: CoreOptions
    directory: str
    namer: FileNamer

    def write(
        self,
        kv: pa.Table,
        level: int,
        file_source: FileSource = FileSource.APPEND,
        is_changelog: bool = False,
    ) -> list[DataFileMeta]:
        """Write ``kv`` (sorted by key unless ``is_changelog``) into one or more files."""
        if kv.num_rows == 0:
            return []
        rows_per_file = self._rows_per_file(kv)
        metas = []
        for offset in range(0, kv.num_rows, rows_per_file):
            metas.append(self._write_one(kv.slice(offset, rows_per_file), level, file_source, is_changelog))
        return metas

    def _rows_per_file(self, kv: pa.Table) -> int:
        # Parquet compresses well below Arrow's in-memory size; 4x is a conservative middle ground
        # so files land near (not far above) the target.
        bytes_per_row = max(kv.nbytes / max(kv.num_rows, 1) / 4.0, 1.0)
        return max(int(self.options.target_file_size / bytes_per_row), 1024)

    def _write_one(
        self, kv: pa.Table, level: int, file_source: FileSource, is_changelog: bool
    ) -> DataFileMeta:
        schema = self.schema
        key_names = schema.trimmed_primary_keys
        physical = self._physical_table(kv)
        fmt = self.options.format_for_level(level, is_changelog)
        name = self.namer.next(fmt)
        path = f"{self.directory}/{name}"
        self.file_io.mkdirs(self.directory)
        compression = self.options.compression_for_level(level, is_changelog)
        file_format(fmt).write(
            self.file_io,
            path,
            physical,
            compression,
            self.options.zstd_level,
            self.options.parquet_delta_keys,
            self.options.parquet_page_size,
        )
        size = self.file_io.file_size(path)
        key_types = [schema.field(k).type for k in key_names]
        field_types = [f.type for f in schema.fields]
        first = [kv.column(k)[0].as_py() for k in key_names]
        last = [kv.column(k)[kv.num_rows - 1].as_py() for k in key_names]
        # First and last rows, as Java's KeyValueDataFileWriter records them (for a changelog
        # file these are in changelog order, not key order).
        kinds = kv.column(VALUE_KIND)
        retracts = pc.sum(pc.cast(pc.or_(pc.equal(kinds, 1), pc.equal(kinds, 3)), pa.int64())).as_py() or 0
        seq = pc.min_max(kv.column(SEQUENCE_NUMBER))
        mode = self.options.stats_mode
        key_stats = compute_stats(kv, key_names, key_types, "full" if mode != "none" else mode)
        value_stats = compute_stats(kv, [f.name for f in schema.fields], field_types, mode)
        return DataFileMeta(
            file_name=name,
            file_size=size,
            row_count=kv.num_rows,
            min_key=encode_row(first, key_types),
            max_key=encode_row(last, key_types),
            key_stats=key_stats,
            value_stats=value_stats,
            min_sequence_number=int(seq["min"].as_py()),
            max_sequence_number=int(seq["max"].as_py()),
            schema_id=schema.id,
            level=level,
            extra_files=(),
            creation_time=int(time.time() * 1000),
            delete_row_count=int(retracts),
            embedded_file_index=None,
            file_source=int(file_source),
            value_stats_cols=() if mode == "none" else None,
        )

    def _physical_table(self, kv: pa.Table) -> pa.Table:
        schema = self.schema
        arrays: list[pa.ChunkedArray | pa.Array] = []
        fields: list[pa.Field] = []
        for k in schema.trimmed_primary_keys:
            f = schema.field(k)
            arrays.append(kv.column(k))
            fields.append(pa.field(KEY_PREFIX + k, to_arrow(f.type), nullable=False))
        arrays.append(kv.column(SEQUENCE_NUMBER))
        fields.append(pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False))
        arrays.append(kv.column(VALUE_KIND))
        fields.append(pa.field(VALUE_KIND, pa.int8(), nullable=False))
        for f in schema.fields:
            arrays.append(kv.column(f.name))
            fields.append(pa.field(f.name, to_arrow(f.type), nullable=f.type.nullable))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def read_kv_file(
    file_io: FileIO,
    path: str,
    file_schema: TableSchema,
    read_schema: TableSchema,
    columns: Sequence[str] | None = None,
    expected_rows: int | None = None,
) -> pa.Table:
    """Read a data file as a KV table in ``read_schema`` (columns mapped by field id).
    ``expected_rows``: the manifest's row count, checked where the format cannot detect truncation.

    ``columns`` (names in ``read_schema``) limits the value columns read; the result keeps
    ``read_schema`` column order for them, then ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``. A column
    the file does not have (added later) reads as nulls; a widened type is cast.
    """
    wanted = [f for f in read_schema.fields if columns is None or f.name in columns]
    by_id = {f.id: f for f in file_schema.fields}
    try:
        reader = open_data_file(file_io, path, expected_rows)
        present = set(reader.schema.names)
        physical = [by_id[f.id].name for f in wanted if f.id in by_id and by_id[f.id].name in present]
        system = [c for c in SYSTEM_COLUMNS if c in present]
        raw = reader.read(list(dict.fromkeys(physical + system)))
    except FileNotFoundError:
        raise CorruptFileError(
            f"data file {path} is missing (the table's metadata references it); if it is lost for good, "
            "CALL sys.remove_unexisting_files (Table.remove_unexisting_files) removes its entry and its rows"
        ) from None
    except (OSError, pa.ArrowInvalid) as e:
        raise CorruptFileError(f"data file {path} cannot be read: {e}") from None
    n = raw.num_rows
    arrays = []
    fields = []
    for f in wanted:
        target = to_arrow(f.type)
        old = by_id.get(f.id)
        if old is not None and old.name in present:
            col = raw.column(old.name)
            if col.type != target:
                col = col.cast(target)
        else:
            col = pa.nulls(n, type=target)
        arrays.append(col)
        fields.append(pa.field(f.name, target, nullable=f.type.nullable))
    if SEQUENCE_NUMBER not in present or VALUE_KIND not in present:
        raise CorruptFileError(
            f"data file {path} lacks {SEQUENCE_NUMBER}/{VALUE_KIND}: not a primary-key data file"
        )
    arrays.append(raw.column(SEQUENCE_NUMBER).cast(pa.int64()))
    fields.append(pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False))
    arrays.append(raw.column(VALUE_KIND).cast(pa.int8()))
    fields.append(pa.field(VALUE_KIND, pa.int8(), nullable=False))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def kv_schema(schema: TableSchema, columns: Sequence[str] | None = None) -> pa.Schema:
    """Arrow schema of a KV table of ``schema`` (optionally limited to ``columns``)."""
    fields = [
        pa.field(f.name, to_arrow(f.type), nullable=f.type.nullable)
        for f in schema.fields
        if columns is None or f.name in columns
    ]
    fields.append(pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False))
    fields.append(pa.field(VALUE_KIND, pa.int8(), nullable=False))
    return pa.schema(fields)


def pending_meta(kv: pa.Table, schema: TableSchema, estimated_size: int) -> DataFileMeta:
    """Metadata of a level-0 file ``kv`` (sorted by key) would become, without writing it: what a
    compaction strategy needs (level, size, key and sequence ranges) to plan around it."""
    key_names = schema.trimmed_primary_keys
    key_types = [schema.field(k).type for k in key_names]
    seq = pc.min_max(kv.column(SEQUENCE_NUMBER))
    return DataFileMeta(
        file_name=f"pending-{uuid.uuid4()}",
        file_size=estimated_size,
        row_count=kv.num_rows,
        min_key=encode_row([kv.column(k)[0].as_py() for k in key_names], key_types),
        max_key=encode_row([kv.column(k)[kv.num_rows - 1].as_py() for k in key_names], key_types),
        key_stats=SimpleStats.empty(),
        value_stats=SimpleStats.empty(),
        min_sequence_number=int(seq["min"].as_py()),
        max_sequence_number=int(seq["max"].as_py()),
        schema_id=schema.id,
        level=0,
    )


def written_slices(metas: Sequence[DataFileMeta], kv: pa.Table, schema: TableSchema) -> list[pa.Table]:
    """The rows of each of ``metas``, written in order from ``kv``, as :func:`read_kv_file` would
    read them back (``schema``'s KV layout, one chunk per column)."""
    read_schema = kv_schema(schema)
    out, offset = [], 0
    for m in metas:
        out.append(kv.slice(offset, m.row_count).select(read_schema.names).cast(read_schema).combine_chunks())
        offset += m.row_count
    return out


# -- streaming: batch-wise reads and a rolling writer ---------------------------------------------
DEFAULT_BATCH_ROWS = 128 * 1024
"""Rows per batch of a streaming read: large enough that per-batch overhead stays small."""


def iter_kv_file(
    file_io: FileIO,
    path: str,
    file_schema: TableSchema,
    read_schema: TableSchema,
    columns: Sequence[str] | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    expected_rows: int | None = None,
    system_columns: bool = True,
    sequence_numbers: bool = True,
) -> Iterator[pa.Table]:
    """:func:`read_kv_file`, batch by batch (at most ``batch_rows`` rows each, file order), any
    format; only one batch is decoded at a time. Without ``system_columns`` the batches hold the
    requested columns only (no sequence numbers or row kinds are decoded); without
    ``sequence_numbers``, they lack ``_SEQUENCE_NUMBER`` only (for a merge that knows the order of
    its records from the files' sequence number ranges)."""
    wanted = [f for f in read_schema.fields if columns is None or f.name in columns]
    by_id = {f.id: f for f in file_schema.fields}
    try:
        reader = (
            _ParquetStream(file_io, path)
            if format_of_file(path) == PARQUET
            else open_data_file(file_io, path, expected_rows)
        )
        present = set(reader.schema.names)
    except FileNotFoundError:
        raise CorruptFileError(
            f"data file {path} is missing (the table's metadata references it); if it is lost for good, "
            "CALL sys.remove_unexisting_files (Table.remove_unexisting_files) removes its entry and its rows"
        ) from None
    except (OSError, pa.ArrowInvalid) as e:
        raise CorruptFileError(f"data file {path} cannot be read: {e}") from None
    if SEQUENCE_NUMBER not in present or VALUE_KIND not in present:
        raise CorruptFileError(
            f"data file {path} lacks {SEQUENCE_NUMBER}/{VALUE_KIND}: not a primary-key data file"
        )
    physical = [by_id[f.id].name for f in wanted if f.id in by_id and by_id[f.id].name in present]
    system = [c for c in SYSTEM_COLUMNS if system_columns and (sequence_numbers or c != SEQUENCE_NUMBER)]
    names = list(dict.fromkeys(physical + system))
    try:
        for batch in reader.iter_batches(names, batch_rows):
            yield _conform_kv(pa.Table.from_batches([batch]), wanted, by_id, present, system)
    except (OSError, pa.ArrowInvalid) as e:
        raise CorruptFileError(f"data file {path} cannot be read: {e}") from None


class _ParquetStream:
    """A Parquet file read batch by batch with buffered column-chunk reads: without a buffer,
    Arrow loads a whole column chunk (a row group's column, up to a whole file written in one
    piece) before decoding its first batch; with one, memory follows the batch, not the row group.
    """

    BUFFER_BYTES = 1 << 20

    def __init__(self, file_io: FileIO, path: str) -> None:
        self.path = path
        self._file = pq.ParquetFile(file_io.open_input_file(path), buffer_size=self.BUFFER_BYTES)

    @property
    def schema(self) -> pa.Schema:
        return self._file.schema_arrow

    def iter_batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        yield from self._file.iter_batches(batch_size=batch_rows, columns=list(columns), use_threads=False)


def _conform_kv(
    raw: pa.Table,
    wanted: Sequence[DataField],
    by_id: dict[int, DataField],
    present: set[str],
    system: Sequence[str] = SYSTEM_COLUMNS,
) -> pa.Table:
    """Raw file columns as a KV table of ``wanted`` fields (mapped by field id, cast, or nulls),
    followed by the ``system`` columns read."""
    n = raw.num_rows
    arrays = []
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
    if SEQUENCE_NUMBER in system:
        arrays.append(raw.column(SEQUENCE_NUMBER).cast(pa.int64()))
        fields.append(pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False))
    if VALUE_KIND in system:
        arrays.append(raw.column(VALUE_KIND).cast(pa.int8()))
        fields.append(pa.field(VALUE_KIND, pa.int8(), nullable=False))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


class _StatsSummary:
    """Per-column statistics of a file written chunk by chunk: each chunk adds its min and max (two
    rows) and null counts, and :meth:`stats` folds them as :func:`compute_stats` would the file."""

    def __init__(self, names: Sequence[str], types: Sequence[DataType]) -> None:
        self.names = list(names)
        self.types = list(types)
        self.parts: list[pa.Table] = []
        self.null_counts = [0] * len(self.names)

    def add(self, kv: pa.Table) -> None:
        arrays = []
        for i, (name, dt) in enumerate(zip(self.names, self.types, strict=True)):
            col = kv.column(name)
            self.null_counts[i] += col.null_count
            arrays.append(_min_max_pair(col, dt))
        self.parts.append(pa.Table.from_arrays(arrays, names=self.names))

    def stats(self, mode: str) -> SimpleStats:
        summary = pa.concat_tables(self.parts) if len(self.parts) > 1 else self.parts[0]
        # Fold accumulated summaries as they come: a file of many chunks keeps few rows.
        self.parts = [summary]
        out = compute_stats(summary, self.names, self.types, mode)
        if out.null_counts is None or len(out.null_counts) != len(self.names):
            return out  # mode none
        counts = tuple(None if c is None else self.null_counts[i] for i, c in enumerate(out.null_counts))
        return SimpleStats(out.min_values, out.max_values, counts)


def _min_max_pair(col: pa.ChunkedArray, dt: DataType) -> pa.Array:
    """``[min, max]`` of ``col`` as a two-row array of its type (nulls when there is none)."""
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
        return pa.nulls(2, type=t)  # only NaNs: min_max skips them
    return pa.array([lo, hi], type=t)


class RollingDataFileWriter:
    """Writes a stream of KV chunks (in key order unless ``is_changelog``) as data files of one
    bucket, starting a new file once the current one reaches ``target-file-size``.

    Holds at most ``row_group_rows`` pending rows plus a few summary rows per chunk, never a
    whole file. Usable as a context manager: an exception deletes the files written so far.
    """

    def __init__(
        self,
        base: DataFileWriter,
        level: int,
        file_source: FileSource = FileSource.APPEND,
        is_changelog: bool = False,
        row_group_rows: int = DEFAULT_BATCH_ROWS,
    ) -> None:
        self.base = base
        self.level = level
        self.file_source = file_source
        self.is_changelog = is_changelog
        self.row_group_rows = max(row_group_rows, 1)
        self.metas: list[DataFileMeta] = []
        self.paths: list[str] = []  # every file started, for cleanup
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._file: _OpenFile | None = None

    def write(self, kv: pa.Table) -> None:
        if kv.num_rows == 0:
            return
        self._pending.append(kv)
        self._pending_rows += kv.num_rows
        if self._pending_rows >= self.row_group_rows:
            self._flush_pending()

    def close(self) -> list[DataFileMeta]:
        """Write what is pending and finish the current file; the metadata of every file."""
        self._flush_pending()
        if self._file is not None:
            self.metas.append(self._file.finish())
            self._file = None
        return self.metas

    def abort(self) -> None:
        if self._file is not None:
            self._file.discard()
            self._file = None
        for path in self.paths:
            self.base.file_io.delete_quietly(path)
        self._pending, self._pending_rows = [], 0

    def __enter__(self) -> RollingDataFileWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def _flush_pending(self) -> None:
        if not self._pending:
            return
        kv = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        self._pending, self._pending_rows = [], 0
        if self._file is None:
            self._file = _OpenFile(self, kv)
            self.paths.append(self._file.path)
        self._file.write(kv)
        if self._file.position() >= self.base.options.target_file_size:
            self.metas.append(self._file.finish())
            self._file = None


class _OpenFile:
    """One data file being written by a :class:`RollingDataFileWriter`."""

    def __init__(self, owner: RollingDataFileWriter, first: pa.Table) -> None:
        base = owner.base
        self.owner = owner
        self.schema = base.schema
        self.key_names = list(base.schema.trimmed_primary_keys)
        self.key_types = [base.schema.field(k).type for k in self.key_names]
        fmt = base.options.format_for_level(owner.level, owner.is_changelog)
        self.name = base.namer.next(fmt)
        self.path = f"{base.directory}/{self.name}"
        base.file_io.mkdirs(base.directory)
        compression = base.options.compression_for_level(owner.level, owner.is_changelog)
        physical = base._physical_table(first.slice(0, 0))
        self.writer = file_format(fmt).open_writer(
            base.file_io,
            self.path,
            physical.schema,
            compression,
            base.options.zstd_level,
            base.options.parquet_delta_keys,
            base.options.parquet_page_size,
        )
        self.rows = 0
        self.retracts = 0
        self.min_seq: int | None = None
        self.max_seq: int | None = None
        self.first_key = [first.column(k)[0].as_py() for k in self.key_names]
        self.last_key = self.first_key
        self.key_stats = _StatsSummary(self.key_names, self.key_types)
        self.value_stats = _StatsSummary(
            [f.name for f in base.schema.fields], [f.type for f in base.schema.fields]
        )

    def position(self) -> int:
        return self.writer.position()

    def write(self, kv: pa.Table) -> None:
        base = self.owner.base
        self.writer.write(base._physical_table(kv))
        n = kv.num_rows
        self.rows += n
        self.last_key = [kv.column(k)[n - 1].as_py() for k in self.key_names]
        kinds = kv.column(VALUE_KIND)
        retracts = pc.sum(pc.cast(pc.or_(pc.equal(kinds, 1), pc.equal(kinds, 3)), pa.int64())).as_py()
        self.retracts += int(retracts or 0)
        seq = pc.min_max(kv.column(SEQUENCE_NUMBER))
        lo, hi = int(seq["min"].as_py()), int(seq["max"].as_py())
        self.min_seq = lo if self.min_seq is None else min(self.min_seq, lo)
        self.max_seq = hi if self.max_seq is None else max(self.max_seq, hi)
        if base.options.stats_mode != "none":
            self.key_stats.add(kv)
            self.value_stats.add(kv)

    def discard(self) -> None:
        self.writer.abort()

    def finish(self) -> DataFileMeta:
        base = self.owner.base
        self.writer.close()
        size = base.file_io.file_size(self.path)
        mode = base.options.stats_mode
        if mode == "none":
            key_stats = value_stats = compute_stats(pa.table({}), [], [], "none")
        else:
            key_stats = self.key_stats.stats("full")
            value_stats = self.value_stats.stats(mode)
        assert self.min_seq is not None and self.max_seq is not None
        return DataFileMeta(
            file_name=self.name,
            file_size=size,
            row_count=self.rows,
            min_key=encode_row(self.first_key, self.key_types),
            max_key=encode_row(self.last_key, self.key_types),
            key_stats=key_stats,
            value_stats=value_stats,
            min_sequence_number=self.min_seq,
            max_sequence_number=self.max_seq,
            schema_id=self.schema.id,
            level=self.owner.level,
            extra_files=(),
            creation_time=int(time.time() * 1000),
            delete_row_count=self.retracts,
            embedded_file_index=None,
            file_source=int(self.owner.file_source),
            value_stats_cols=() if mode == "none" else None,
        )
