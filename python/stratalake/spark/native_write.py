"""Append tables written by Spark's own Parquet writer, committed by Python.

A bucket-unaware append table's data file is a plain Parquet file of the table's columns
(docs/format.md section 13): nothing in it needs Python. For those tables the shim
(``NativeAppendWrite``) writes the rows of each task with Spark's Parquet writer into the
partition's ``bucket-0`` directory and reports each file (path, partition values, row count,
first sequence number) as a :class:`NativeFiles` commit message. The commit, on the driver, runs
here: each file's footer gives its row count and column statistics, which become the file's
manifest entry (:func:`stratalake.store.append_file.meta_of_parquet_file`), and the files go
through the same commit as the Python writer's (every overwrite mode, one snapshot).

What the JVM decides is limited to where a file goes: ``<table>/<k>=<v>/.../bucket-0/data-
<uuid>-<n>.parquet``, with the partition directory formatted like
:meth:`stratalake.store.partition.PartitionCodec.path` for the partition types this plan allows
(strings, integers, booleans, dates). The commit recomputes every path from the reported
partition values and refuses a file that is not where Python would put it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import WriterCommitMessage

from stratalake.exceptions import CorruptFileError, StrataLakeError
from stratalake.lsm.data_file import bucket_dir
from stratalake.lsm.file_format import PARQUET
from stratalake.operation.commit import CommitMessage
from stratalake.store.append_file import meta_of_parquet_file
from stratalake.types import (
    ATOMIC_TYPES,
    BigIntType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarCharType,
)

if TYPE_CHECKING:
    from stratalake.table.table import Table

# Column types whose Spark Parquet encoding Paimon's and pyarrow's readers read as the table's
# own: every atomic type but TIME (not in Spark) and timestamps, which are left out since Spark's
# writer picks INT96 or an adjusted-to-UTC INT64 by session settings, where Paimon's files carry
# the type's own precision and zone semantics.
_VALUE_TYPES = tuple(
    type(t) for t in ATOMIC_TYPES if not isinstance(t, TimeType | TimestampType | LocalZonedTimestampType)
)
# Partition types whose directory names the shim formats exactly as PartitionCodec.path does.
_PARTITION_TYPES = (
    BooleanType,
    TinyIntType,
    SmallIntType,
    IntType,
    BigIntType,
    CharType,
    VarCharType,
    DateType,
)
# Paimon's file.compression values that parquet-mr writes with the codecs Spark ships.
_CODECS = {
    "zstd": "ZSTD",
    "snappy": "SNAPPY",
    "gzip": "GZIP",
    "none": "UNCOMPRESSED",
    "uncompressed": "UNCOMPRESSED",
}
# Options whose files carry more than the rows (embedded indexes, row ids): the Python writer.
_PYTHON_ONLY_OPTIONS = ("file-index.", "row-tracking.enabled", "data-evolution.enabled")
_ROW_GROUP_BYTES = 64 * 1024 * 1024


def native_append_plan(table: Table) -> dict[str, Any] | None:
    """What the shim needs to write ``table``'s rows itself, or None when the table's writes go
    through the Python writer (primary-key or fixed-bucket tables, non-Parquet level-0 files,
    remote storage, timestamp or nested columns, column defaults, embedded file indexes, row
    tracking)."""
    schema = table.schema()
    options = table.core_options
    if schema.primary_keys or options.bucket > 0 or not table.file_io.is_local:
        return None
    if options.format_for_level(0, False) != PARQUET:
        return None
    codec = _CODECS.get(options.compression_for_level(0, False))
    if codec is None:
        return None
    raw = table.options()
    if any(k.startswith(_PYTHON_ONLY_OPTIONS) and str(v).lower() != "false" for k, v in raw.items()):
        return None
    if not all(isinstance(f.type, _VALUE_TYPES) for f in schema.fields):
        return None
    if any(f.default_value is not None for f in schema.fields):
        return None  # the Python writer fills column defaults into written nulls, as Paimon's does
    partition_types = [schema.field(k).type for k in schema.partition_keys]
    if not all(isinstance(t, _PARTITION_TYPES) for t in partition_types):
        return None
    return {
        # A plain local path (a file: URI's path): the JVM writes through java.nio.
        "location": table.file_io.to_fs_path(table.location).rstrip("/"),
        "schema_id": schema.id,
        "columns": [{"name": f.name, "nullable": f.type.nullable} for f in schema.fields],
        "partition_keys": list(schema.partition_keys),
        "default_partition": table.partition_codec.default_name,
        "compression": codec,
        "zstd_level": options.zstd_level,
        "target_file_size": options.target_file_size,
        "row_group_size": min(_ROW_GROUP_BYTES, options.target_file_size),
        "page_size": options.parquet_page_size,
    }


@dataclass
class NativeFiles(WriterCommitMessage):
    """One task's files written by the shim (built by the JVM's pickler, never by Python code
    other than tests): per file ``path``, ``partition`` (Catalyst values: dates as epoch days),
    ``rows`` and ``first_sequence``, and the ``schema_id`` they were written with."""

    files: list[dict[str, Any]] = field(default_factory=list)
    schema_id: int = 0


def _partition_values(raw: Sequence[Any], types: Sequence[DataType]) -> tuple[Any, ...]:
    return tuple(
        dt.date(1970, 1, 1) + dt.timedelta(days=int(v)) if v is not None and isinstance(t, DateType) else v
        for v, t in zip(raw, types, strict=True)
    )


def commit_messages(table: Table, messages: Sequence[NativeFiles]) -> list[CommitMessage]:
    """The commit messages of the shim's files: one per partition (bucket 0), each file described
    from its footer. Raises (nothing committed) when a file is not where the table puts it or
    its footer disagrees with what the task reported."""
    schema = table.schema()
    codec = table.partition_codec
    options = table.core_options
    by_partition: dict[bytes, list[Any]] = {}
    for message in messages:
        if message.schema_id != schema.id:
            raise StrataLakeError(
                f"table {table.identifier}: its schema changed while this write ran (written with "
                f"schema {message.schema_id}, now {schema.id}); run the write again"
            )
        for f in message.files:
            values = _partition_values(f["partition"], codec.types)
            path = str(f["path"])
            directory = bucket_dir(table.location, codec.path(values), 0)
            name = path.rsplit("/", 1)[-1]
            if path != table.file_io.to_fs_path(f"{directory}/{name}"):
                raise StrataLakeError(
                    f"table {table.identifier}: Spark wrote {path}, but a file of partition "
                    f"{dict(zip(codec.keys, values, strict=True))} belongs in {directory}; this is a "
                    "bug (set stratalake.write.native.enabled=false to write through Python)"
                )
            meta = meta_of_parquet_file(
                table.file_io, directory, name, schema, options, int(f["first_sequence"])
            )
            if meta.row_count != int(f["rows"]):
                raise CorruptFileError(
                    f"table {table.identifier}: data file {path} holds {meta.row_count} rows, "
                    f"but its writer reported {f['rows']}"
                )
            by_partition.setdefault(codec.to_bytes(values), []).append(meta)
    return [
        CommitMessage(partition=p, bucket=0, total_buckets=-1, new_files=tuple(files))
        for p, files in by_partition.items()
    ]


def delete_files(table: Table, messages: Sequence[NativeFiles]) -> None:
    """Remove the shim's files of a failed or aborted write (never visible; local paths)."""
    for message in messages:
        for f in message.files:
            table.file_io.delete_quietly(str(f["path"]))
