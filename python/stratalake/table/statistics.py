"""ANALYZE: statistics of a table's merged rows, committed as an ANALYZE snapshot.

What is computed follows Paimon's Spark ``ANALYZE TABLE`` (``PaimonAnalyzeTableColumnCommand``,
which runs Spark's ``CommandUtils.computeColumnStats`` over the merged read of the latest
snapshot): the merged row count; ``mergedRecordSize`` = live data file bytes x merged rows /
the snapshot's ``totalRecordCount``; and per analyzed column the distinct and null counts, min/max
(numbers, booleans, dates, timestamps), and average/maximum length (strings and binaries: the
ceiling of the mean length and the longest of the non-null values, characters for strings;
other types: Spark's default size of the type for both). One difference: Spark estimates the
distinct count with HyperLogLog++ (relative error 5%), this counts exactly (the two agree on
small columns).

Rows are read batch by batch; only the distinct values of each analyzed column are held.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import SchemaError, UnsupportedError
from stratalake.read.fallback import refuse_fallback
from stratalake.spec.schema import DataField
from stratalake.spec.statistics import ColStats, Statistics, has_min_max, serialize_value
from stratalake.store.stats_file import write_stats
from stratalake.types import (
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
)

if TYPE_CHECKING:
    from stratalake.table.table import Table

_DISTINCT_COMPACT = 1 << 16  # re-deduplicate the held distinct values past this many


def spark_default_size(dt: DataType) -> int | None:
    """Spark's ``DataType.defaultSize`` of the Spark type ``dt`` maps to; None: not analyzable
    (Spark's ``ANALYZE`` takes integral, decimal, floating, boolean, date/timestamp, string and
    binary columns only)."""
    if isinstance(dt, BooleanType | TinyIntType):
        return 1
    if isinstance(dt, SmallIntType):
        return 2
    if isinstance(dt, IntType | FloatType | DateType):
        return 4
    if isinstance(dt, BigIntType | DoubleType | TimestampType | LocalZonedTimestampType):
        return 8
    if isinstance(dt, DecimalType):
        return 8 if dt.precision <= 18 else 16
    if isinstance(dt, CharType | VarCharType):
        return 20
    if isinstance(dt, BinaryType | VarBinaryType):
        return 100
    return None


def _is_var_length(dt: DataType) -> bool:
    return isinstance(dt, CharType | VarCharType | BinaryType | VarBinaryType)


@dataclass
class _ColumnAccumulator:
    """One column's statistics so far, merged batch by batch."""

    column: DataField
    nulls: int = 0
    non_nulls: int = 0
    min: Any = None
    max: Any = None
    length_sum: int = 0
    length_max: int | None = None
    distinct: list[pa.Array] = field(default_factory=list)
    distinct_held: int = 0

    def add(self, column: pa.ChunkedArray | pa.Array) -> None:
        values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        self.nulls += values.null_count
        present = values.drop_null()
        if len(present) == 0:
            return
        self.non_nulls += len(present)
        dt = self.column.type
        if has_min_max(dt):
            comparable = present
            if isinstance(dt, TimestampType | LocalZonedTimestampType):
                # Epoch nanoseconds: exact for every unit and free of time zones.
                comparable = present.cast(pa.timestamp("ns", tz=present.type.tz)).cast(pa.int64())
            bounds = pc.min_max(comparable)
            low, high = bounds["min"].as_py(), bounds["max"].as_py()
            if low is not None:
                self.min = low if self.min is None else min(self.min, low)
                self.max = high if self.max is None else max(self.max, high)
        if _is_var_length(dt):
            lengths = (
                pc.utf8_length(present) if pa.types.is_string(present.type) else pc.binary_length(present)
            )
            self.length_sum += pc.sum(lengths).as_py() or 0
            longest = pc.max(lengths).as_py()
            self.length_max = longest if self.length_max is None else max(self.length_max, longest)
        unique = pc.unique(present)
        self.distinct.append(unique)
        self.distinct_held += len(unique)
        if self.distinct_held > _DISTINCT_COMPACT:
            merged = pc.unique(pa.concat_arrays(self.distinct))
            self.distinct, self.distinct_held = [merged], len(merged)

    def result(self) -> ColStats:
        dt = self.column.type
        default = spark_default_size(dt)
        distinct = len(pc.unique(pa.concat_arrays(self.distinct))) if self.distinct else 0
        if _is_var_length(dt):
            # Spark: Coalesce(Ceil(Average(Length(col))), defaultSize) and the same for Max.
            avg_len = -(-self.length_sum // self.non_nulls) if self.non_nulls else default
            max_len = self.length_max if self.length_max is not None else default
        else:
            avg_len = max_len = default  # fixed width: Spark reports its default size for both
        return ColStats(
            col_id=self.column.id,
            distinct_count=distinct,
            min=serialize_value(dt, self.min) if self.min is not None else None,
            max=serialize_value(dt, self.max) if self.max is not None else None,
            null_count=self.nulls,
            avg_len=avg_len,
            max_len=max_len,
        )


def _resolve(table: Table, columns: Sequence[str]) -> list[DataField]:
    """The fields ``columns`` name (exact name, else the one field equal ignoring case, as Spark's
    default resolver), refusing unknown and unanalyzable columns by name."""
    schema = table.schema()
    out: list[DataField] = []
    for name in columns:
        matches = [f for f in schema.fields if f.name == name] or [
            f for f in schema.fields if f.name.lower() == str(name).lower()
        ]
        if len(matches) != 1:
            raise SchemaError(
                f"table {table.identifier}: column '{name}' not found for ANALYZE; the table's "
                f"columns are {list(schema.field_names)}"
            )
        f = matches[0]
        if spark_default_size(f.type) is None:
            raise UnsupportedError(
                f"table {table.identifier}: ANALYZE of column '{f.name}' (type {f.type}) is not "
                "supported: only numeric, boolean, date, timestamp, string and binary columns are "
                "analyzed; leave it out of the column list"
            )
        if f not in out:
            out.append(f)
    return out


def compute(
    table: Table, columns: Sequence[str] | None = None, all_columns: bool = False
) -> Statistics | None:
    """The statistics of ``table``'s latest snapshot (None: the table has no snapshot)."""
    if columns is not None and all_columns:
        raise ValueError(
            f"table {table.identifier}: give either columns or all_columns=True, not both "
            "(they are mutually exclusive)"
        )
    fields = _resolve(table, table.schema().field_names if all_columns else (columns or ()))
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return None
    refuse_fallback(table, "ANALYZE")
    at = table.as_of(snapshot)
    splits = at.new_scan(snapshot_id=snapshot.id).plan()
    read_columns = [f.name for f in fields] or [at.schema().fields[0].name]
    reader = at.new_read(read_columns)
    accumulators = [_ColumnAccumulator(f) for f in fields]
    merged_rows = 0
    for split in splits:
        for batch in reader.read_split(split):
            merged_rows += batch.num_rows
            for acc in accumulators:
                acc.add(batch.column(acc.column.name))
    total_rows = snapshot.total_record_count or 0
    if total_rows < merged_rows:
        raise AssertionError(
            f"table {table.identifier}: snapshot {snapshot.id} counts {total_rows} records but its "
            f"merged read gave {merged_rows}; this is a bug"
        )
    total_size = sum(e.file.file_size for e in at.live_entries(snapshot))
    # Paimon: (totalSize.toDouble * mergedRecordCount / totalRecordCount).toLong
    merged_size = int(total_size * merged_rows / total_rows) if total_rows else 0
    return Statistics(
        snapshot_id=snapshot.id,
        schema_id=snapshot.schema_id,
        merged_record_count=merged_rows,
        merged_record_size=merged_size,
        col_stats={acc.column.name: acc.result() for acc in accumulators},
    )


def analyze(table: Table, columns: Sequence[str] | None = None, all_columns: bool = False) -> int | None:
    """Compute the statistics of ``table`` and commit them as an ANALYZE snapshot; returns its id
    (None, with nothing written, when the table has no snapshot)."""
    table.check_supported("write")
    stats = compute(table, columns, all_columns)
    if stats is None:
        return None
    name = write_stats(table, stats)
    commit = table.new_commit()
    try:
        return commit.commit_statistics(name)
    except BaseException:
        if commit.abort([]):  # known not committed: the file is referenced by nothing
            table.file_io.delete_quietly(f"{table.location}/statistics/{name}")
        raise
