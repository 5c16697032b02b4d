"""Data files of a bucket: Parquet in Paimon's KV layout, written and read columnar.

Physical layout (FORMAT.md section 6): ``_KEY_<k>`` per trimmed-key column, ``_SEQUENCE_NUMBER``,
``_VALUE_KIND``, then every table column. A second layout (pypaimon's Rust writer) has no ``_KEY_``
columns; the reader accepts both because it only ever reads the value columns.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from stratalake.exceptions import CorruptFileError
from stratalake.io import FileIO
from stratalake.merge import SEQUENCE_NUMBER, VALUE_KIND, RowKind
from stratalake.options import CoreOptions
from stratalake.spec.binary_row import encode_row
from stratalake.spec.manifest import DataFileMeta, FileSource, SimpleStats
from stratalake.spec.schema import TableSchema
from stratalake.spec.stats import compute_stats
from stratalake.types import to_arrow

KEY_PREFIX = "_KEY_"
SYSTEM_COLUMNS = (SEQUENCE_NUMBER, VALUE_KIND)


class FileNamer:
    """``data-<uuid>-<n>.parquet`` names, unique per writer."""

    def __init__(self, prefix: str = "data") -> None:
        self._uuid = str(uuid.uuid4())
        self._counter = itertools.count()  # atomic under the GIL: buckets flush in parallel
        self._prefix = prefix

    def next(self) -> str:
        return f"{self._prefix}-{self._uuid}-{next(self._counter)}.parquet"


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
        name = self.namer.next()
        path = f"{self.directory}/{name}"
        self.file_io.mkdirs(self.directory)
        with self.file_io.open_output_stream(path) as sink:
            pq.write_table(
                physical,
                sink,
                compression=self.options.file_compression,
                use_dictionary=_dictionary_columns(physical),
                write_statistics=False,
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


def _dictionary_columns(table: pa.Table) -> list[str]:
    """Columns worth dictionary-encoding: few distinct values in a sample.

    Dictionary-encoding a high-cardinality column costs twice the write time and makes the file
    larger; for low-cardinality columns (row kinds, partition-like strings) it is a big win.
    """
    out = [VALUE_KIND]
    n = table.num_rows
    sample = table.slice(0, 4096) if n > 4096 else table
    for name in table.column_names:
        col = sample.column(name)
        t = col.type
        if name == VALUE_KIND or not (
            pa.types.is_string(t)
            or pa.types.is_large_string(t)
            or pa.types.is_binary(t)
            or pa.types.is_boolean(t)
        ):
            continue
        distinct = pc.count_distinct(col).as_py() or 0
        if distinct <= max(sample.num_rows // 4, 1):
            out.append(name)
    return out


def read_kv_file(
    file_io: FileIO,
    path: str,
    file_schema: TableSchema,
    read_schema: TableSchema,
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """Read a data file as a KV table in ``read_schema`` (columns mapped by field id).

    ``columns`` (names in ``read_schema``) limits the value columns read; the result keeps
    ``read_schema`` column order for them, then ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``. A column
    the file does not have (added later) reads as nulls; a widened type is cast.
    """
    wanted = [f for f in read_schema.fields if columns is None or f.name in columns]
    by_id = {f.id: f for f in file_schema.fields}
    try:
        pf = pq.ParquetFile(file_io.open_input_file(path))
        present = set(pf.schema_arrow.names)
        physical = [by_id[f.id].name for f in wanted if f.id in by_id and by_id[f.id].name in present]
        system = [c for c in SYSTEM_COLUMNS if c in present]
        raw = pf.read(columns=list(dict.fromkeys(physical + system)), use_threads=False)
    except FileNotFoundError:
        raise CorruptFileError(f"data file {path} is missing (the table's metadata references it)") from None
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


def live_kinds_mask(kinds: pa.ChunkedArray | pa.Array) -> pa.Array:
    return pc.or_(pc.equal(kinds, int(RowKind.INSERT)), pc.equal(kinds, int(RowKind.UPDATE_AFTER)))
