"""Column statistics of a data file (``_KEY_STATS`` / ``_VALUE_STATS``), as Java Paimon writes them.

Modes follow ``metadata.stats-mode``:

* ``none``: no statistics; an arity-0 row and no null counts (the writer then sets
  ``_VALUE_STATS_COLS`` to ``[]``, Java's dense store);
* ``counts``: null counts only, min/max null;
* ``full``: exact min/max and null counts;
* ``truncate(N)`` (Java's default, N = 16): like ``full`` but string/bytes minimums are cut to N
  characters/bytes and a cut maximum is incremented at its last possible position so that it
  stays an upper bound; when no increment is possible the column's min and max are both null.

Columns of nested types (ARRAY, MAP, MULTISET, ROW) get null min/max and a null null-count, as
Java's Parquet statistics extractor gives (Parquet keeps no statistics for the group itself).
Min/max are computed with ``pyarrow.compute.min_max`` over whole columns.

>>> import pyarrow as pa
>>> from stratalake.types import BigIntType, VarCharType
>>> t = pa.table({"k": [3, 1, None], "s": ["b" * 20, "a", "c"]})
>>> s = compute_stats(t, ["k", "s"], [BigIntType(), VarCharType()], "truncate(4)")
>>> stats_to_values(s, [BigIntType(), VarCharType()])
((1, 'a'), (3, 'c'), (1, 0))
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import CorruptFileError, InvalidDataError, InvalidOptionError
from stratalake.spec.binary_row import EMPTY_ROW, decode_row, encode_row, row_arity
from stratalake.spec.manifest import SimpleStats
from stratalake.types import (
    ArrayType,
    BinaryType,
    CharType,
    DataType,
    DoubleType,
    FloatType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    RowType,
    TimestampType,
    VarBinaryType,
    VarCharType,
)

__all__ = ["DEFAULT_STATS_MODE", "StatsMode", "compute_stats", "parse_stats_mode", "stats_to_values"]

DEFAULT_STATS_MODE = "truncate(16)"

_TRUNCATE = re.compile(r"TRUNCATE\((\d+)\)")
_NESTED = (ArrayType, MapType, MultisetType, RowType)
_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


class StatsMode:
    """A parsed ``metadata.stats-mode``: ``kind`` is none / counts / full / truncate."""

    __slots__ = ("kind", "length")

    def __init__(self, kind: str, length: int | None = None) -> None:
        self.kind = kind
        self.length = length

    def __repr__(self) -> str:
        return f"truncate({self.length})" if self.kind == "truncate" else self.kind

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StatsMode) and (self.kind, self.length) == (other.kind, other.length)

    def __hash__(self) -> int:
        return hash((self.kind, self.length))


def parse_stats_mode(mode: str) -> StatsMode:
    """Parse ``none`` / ``counts`` / ``full`` / ``truncate(N)`` (case-insensitive, N > 0)."""
    upper = mode.strip().upper()
    if upper in ("NONE", "COUNTS", "FULL"):
        return StatsMode(upper.lower())
    m = _TRUNCATE.fullmatch(upper)
    if m and int(m.group(1)) > 0:
        return StatsMode("truncate", int(m.group(1)))
    raise InvalidOptionError(
        f"option 'metadata.stats-mode' has invalid value {mode!r}: use none, counts, full or truncate(N) with N > 0"
    )


def _truncate_max_str(value: str, length: int) -> str | None:
    """Smallest-effort upper bound of ``value`` with at most ``length`` characters, or None.

    As Java's TruncateSimpleColStatsCollector: increment the last code point that can be
    incremented and drop what follows. Surrogates are skipped (they cannot be UTF-8 encoded).
    """
    if len(value) <= length:
        return value
    cut = value[:length]
    for i in range(length - 1, -1, -1):
        nxt = ord(cut[i]) + 1
        if nxt in _SURROGATES:
            nxt = _SURROGATES.stop
        if nxt <= _MAX_CODE_POINT:
            return cut[:i] + chr(nxt)
    return None


def _truncate_max_bytes(value: bytes, length: int) -> bytes | None:
    if len(value) <= length:
        return value
    cut = value[:length]
    for i in range(length - 1, -1, -1):
        if cut[i] != 0xFF:
            return cut[:i] + bytes([cut[i] + 1])
    return None


def _scalar_value(scalar: pa.Scalar, dt: DataType) -> object:
    """Python value of a min/max scalar, keeping timestamp nanoseconds without pandas."""
    if not scalar.is_valid:
        return None
    if isinstance(dt, TimestampType | LocalZonedTimestampType) and pa.types.is_timestamp(scalar.type):
        return np.datetime64(scalar.value, scalar.type.unit)
    return scalar.as_py()


def _column_min_max(col: pa.ChunkedArray | pa.Array, dt: DataType, mode: StatsMode) -> tuple[object, object]:
    if col.null_count == len(col):
        return None, None
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    result = pc.min_max(col)
    lo, hi = _scalar_value(result["min"], dt), _scalar_value(result["max"], dt)
    if isinstance(dt, FloatType | DoubleType) and isinstance(lo, float) and isinstance(hi, float) and lo > hi:
        return None, None  # only NaNs: min_max skips them and reports (inf, -inf)
    if mode.kind == "truncate":
        n = mode.length
        assert n is not None
        if isinstance(dt, CharType | VarCharType) and isinstance(lo, str) and isinstance(hi, str):
            cut_hi = _truncate_max_str(hi, n)
            return (None, None) if cut_hi is None else (lo[:n], cut_hi)
        if isinstance(dt, BinaryType | VarBinaryType) and isinstance(lo, bytes) and isinstance(hi, bytes):
            cut_hi_b = _truncate_max_bytes(hi, n)
            return (None, None) if cut_hi_b is None else (lo[:n], cut_hi_b)
    return lo, hi


def compute_stats(
    table: pa.Table, columns: Sequence[str], types: Sequence[DataType], mode: str = DEFAULT_STATS_MODE
) -> SimpleStats:
    """Statistics of ``columns`` of ``table`` (types in the same order) under ``mode``."""
    if len(columns) != len(types):
        raise InvalidDataError(f"{len(columns)} stats columns but {len(types)} types")
    parsed = parse_stats_mode(mode)
    if parsed.kind == "none":
        return SimpleStats(EMPTY_ROW, EMPTY_ROW, ())
    mins: list[object] = []
    maxs: list[object] = []
    null_counts: list[int | None] = []
    for name, dt in zip(columns, types, strict=True):
        col = table.column(name)
        if isinstance(dt, _NESTED):
            mins.append(None)
            maxs.append(None)
            null_counts.append(None)
            continue
        null_counts.append(col.null_count)
        if parsed.kind == "counts":
            lo, hi = None, None
        else:
            lo, hi = _column_min_max(col, dt, parsed)
        mins.append(lo)
        maxs.append(hi)
    row_types = [dt.copy(True) for dt in types]
    return SimpleStats(encode_row(mins, row_types), encode_row(maxs, row_types), tuple(null_counts))


def stats_to_values(
    stats: SimpleStats, types: Sequence[DataType]
) -> tuple[tuple[object, ...], tuple[object, ...], tuple[int | None, ...]]:
    """Decode stats into (mins, maxs, null counts), one entry per type; unknown = None.

    ``types`` are the types of the stats columns (all columns, or ``_VALUE_STATS_COLS``). Stats
    written in mode ``none`` (arity-0 rows) decode as all None.
    """
    n = len(types)
    if row_arity(stats.min_values) == 0 and row_arity(stats.max_values) == 0:
        mins: tuple[object, ...] = (None,) * n
        maxs: tuple[object, ...] = (None,) * n
    else:
        row_types = [dt.copy(True) for dt in types]
        mins = decode_row(stats.min_values, row_types)
        maxs = decode_row(stats.max_values, row_types)
    counts = tuple(stats.null_counts or ())
    if not counts:
        counts = (None,) * n
    elif len(counts) != n:
        raise CorruptFileError(f"stats hold {len(counts)} null counts for {n} columns")
    return mins, maxs, counts
