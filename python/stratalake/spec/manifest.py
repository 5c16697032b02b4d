"""Manifest metadata objects (docs/format.md sections 4, 5, 10).

Frozen value objects with the on-disk field names documented next to each attribute. They do no
I/O; :mod:`stratalake.spec.avro` encodes and decodes them.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, TypeVar

from stratalake.exceptions import CorruptFileError
from stratalake.spec.binary_row import EMPTY_ROW

C = TypeVar("C", bound=type)


def _pickled_by_fields(cls: C) -> C:
    """Pickles instances of the slotted dataclass ``cls`` as its constructor's arguments. The
    dataclass default for slots (``_dataclass_getstate``) calls ``fields()`` per object, which
    made pickling a plan's splits (tens of thousands of files) several times slower."""
    values: Callable[[Any], tuple[Any, ...]] = operator.attrgetter(*(f.name for f in dataclasses.fields(cls)))

    def __reduce__(self: Any) -> tuple[type, tuple[Any, ...]]:
        return cls, values(self)

    cls.__reduce__ = __reduce__  # type: ignore[assignment]
    return cls


class FileKind(IntEnum):
    """``_KIND`` of a manifest entry."""

    ADD = 0
    DELETE = 1


class FileSource(IntEnum):
    """``_FILE_SOURCE`` of a data file."""

    APPEND = 0
    COMPACT = 1


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class SimpleStats:
    """``_KEY_STATS`` / ``_VALUE_STATS`` / ``_PARTITION_STATS``: serialized BinaryRows + null counts."""

    min_values: bytes  # _MIN_VALUES (BinaryRow with 4-byte arity prefix)
    max_values: bytes  # _MAX_VALUES
    null_counts: tuple[int | None, ...] | None  # _NULL_COUNTS

    @staticmethod
    def empty() -> SimpleStats:
        return SimpleStats(EMPTY_ROW, EMPTY_ROW, ())


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class DataFileMeta:
    """``_FILE``: one data or changelog file of a bucket."""

    file_name: str  # _FILE_NAME
    file_size: int  # _FILE_SIZE
    row_count: int  # _ROW_COUNT
    min_key: bytes  # _MIN_KEY (BinaryRow of the trimmed primary key, with arity prefix)
    max_key: bytes  # _MAX_KEY
    key_stats: SimpleStats  # _KEY_STATS
    value_stats: SimpleStats  # _VALUE_STATS
    min_sequence_number: int  # _MIN_SEQUENCE_NUMBER
    max_sequence_number: int  # _MAX_SEQUENCE_NUMBER
    schema_id: int  # _SCHEMA_ID
    level: int  # _LEVEL
    extra_files: tuple[str, ...] = ()  # _EXTRA_FILES
    creation_time: int | None = None  # _CREATION_TIME (epoch millis)
    delete_row_count: int | None = None  # _DELETE_ROW_COUNT (-U and -D rows)
    embedded_file_index: bytes | None = None  # _EMBEDDED_FILE_INDEX
    file_source: int | None = None  # _FILE_SOURCE (FileSource)
    value_stats_cols: tuple[str, ...] | None = None  # _VALUE_STATS_COLS (None = all columns)
    external_path: str | None = None  # _EXTERNAL_PATH
    first_row_id: int | None = None  # _FIRST_ROW_ID
    write_cols: tuple[str, ...] | None = None  # _WRITE_COLS
    write_cols_sequences: tuple[int, ...] | None = None  # _WRITE_COLS_SEQUENCES

    def __post_init__(self) -> None:
        if self.row_count < 0 or self.min_sequence_number > self.max_sequence_number:
            raise CorruptFileError(
                f"data file {self.file_name}: row count {self.row_count} and sequence range "
                f"[{self.min_sequence_number}, {self.max_sequence_number}] are inconsistent"
            )


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One ``ManifestEntry`` record: a file added to or deleted from (partition, bucket)."""

    kind: FileKind  # _KIND
    partition: bytes  # _PARTITION (BinaryRow with arity prefix)
    bucket: int  # _BUCKET
    total_buckets: int  # _TOTAL_BUCKETS
    file: DataFileMeta  # _FILE
    version: int = 2  # _VERSION

    def identifier(self) -> tuple[bytes, int, str]:
        """What ADD and DELETE entries of the same file share."""
        return (self.partition, self.bucket, self.file.file_name)


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    """One ``ManifestFileMeta`` record of a manifest list."""

    file_name: str  # _FILE_NAME
    file_size: int  # _FILE_SIZE
    num_added_files: int  # _NUM_ADDED_FILES
    num_deleted_files: int  # _NUM_DELETED_FILES
    partition_stats: SimpleStats  # _PARTITION_STATS
    schema_id: int  # _SCHEMA_ID
    min_bucket: int | None = None  # _MIN_BUCKET
    max_bucket: int | None = None  # _MAX_BUCKET
    min_level: int | None = None  # _MIN_LEVEL
    max_level: int | None = None  # _MAX_LEVEL
    min_row_id: int | None = None  # _MIN_ROW_ID
    max_row_id: int | None = None  # _MAX_ROW_ID
    total_buckets: int | None = None  # _TOTAL_BUCKETS
    extra_files: tuple[str, ...] | None = None  # _EXTRA_FILES
    version: int = 2  # _VERSION


@dataclass(frozen=True, slots=True)
class DeletionVectorRange:
    """One element of ``_DELETIONS_VECTORS_RANGES``."""

    data_file: str  # f0
    offset: int  # f1
    length: int  # f2
    cardinality: int | None = None  # _CARDINALITY


@dataclass(frozen=True, slots=True)
class GlobalIndexMeta:
    """``_GLOBAL_INDEX``: row range and field of a global index file (Java ``GlobalIndexMeta``)."""

    row_range_start: int  # _ROW_RANGE_START
    row_range_end: int  # _ROW_RANGE_END
    index_field_id: int  # _INDEX_FIELD_ID
    extra_field_ids: tuple[int, ...] | None = None  # _EXTRA_FIELD_IDS
    index_meta: bytes | None = None  # _INDEX_META
    source_meta: bytes | None = None  # _SOURCE_META


@dataclass(frozen=True, slots=True)
class IndexManifestEntry:
    """One record of an index manifest (deletion vectors or hash index)."""

    kind: FileKind  # _KIND
    partition: bytes  # _PARTITION
    bucket: int  # _BUCKET
    index_type: str  # _INDEX_TYPE: "DELETION_VECTORS" | "HASH"
    file_name: str  # _FILE_NAME
    file_size: int  # _FILE_SIZE
    row_count: int  # _ROW_COUNT
    dv_ranges: tuple[DeletionVectorRange, ...] | None = None  # _DELETIONS_VECTORS_RANGES
    external_path: str | None = None  # _EXTERNAL_PATH
    global_index: GlobalIndexMeta | None = None  # _GLOBAL_INDEX
    version: int = 1  # _VERSION
    extra: dict[str, object] = field(default_factory=dict, compare=False, hash=False)
