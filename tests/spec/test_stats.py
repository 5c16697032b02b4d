"""Column statistics (``metadata.stats-mode``) as Java Paimon computes them."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratalake.exceptions import CorruptFileError, InvalidOptionError
from stratalake.spec.binary_row import EMPTY_ROW, encode_row
from stratalake.spec.manifest import SimpleStats
from stratalake.spec.stats import compute_stats, parse_stats_mode, stats_to_values
from stratalake.types import (
    ArrayType,
    BigIntType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    IntType,
    LocalZonedTimestampType,
    RowType,
    TimestampType,
    VarBinaryType,
    VarCharType,
    to_arrow,
)

UTC = dt.UTC


def _stats(table: pa.Table, types: list[DataType], mode: str) -> tuple[tuple[object, ...], ...]:
    return stats_to_values(compute_stats(table, table.column_names, types, mode), types)


def test_none_mode_is_an_empty_row() -> None:
    t = pa.table({"a": [1, 2]})
    s = compute_stats(t, ["a"], [BigIntType()], "none")
    assert s == SimpleStats(EMPTY_ROW, EMPTY_ROW, ())
    assert stats_to_values(s, [BigIntType()]) == ((None,), (None,), (None,))


def test_counts_mode() -> None:
    t = pa.table({"a": [1, None, None], "b": ["x", "y", None]})
    s = compute_stats(t, ["a", "b"], [BigIntType(), VarCharType()], "COUNTS")
    assert s.null_counts == (2, 1)
    assert stats_to_values(s, [BigIntType(), VarCharType()]) == ((None, None), (None, None), (2, 1))


def test_full_mode_on_many_types() -> None:
    types: list[DataType] = [
        IntType(nullable=False),
        DoubleType(),
        BooleanType(),
        VarCharType(),
        VarBinaryType(),
        DecimalType(20, 2),
        DateType(),
        TimestampType(6),
        LocalZonedTimestampType(3),
    ]
    rows: list[list[object]] = [
        [3, 1.5, True, "pear", b"\x02", decimal.Decimal("10.25"), dt.date(2024, 1, 2),
         dt.datetime(2024, 1, 1, 0, 0, 0, 5), dt.datetime(2024, 1, 1, tzinfo=UTC)],
        [-7, None, False, "apple", b"\x01\xff", decimal.Decimal("-3.00"), dt.date(1969, 1, 1),
         dt.datetime(1960, 1, 1), dt.datetime(2025, 1, 1, tzinfo=UTC)],
    ]  # fmt: skip
    table = pa.table({f"c{i}": pa.array([r[i] for r in rows], to_arrow(t)) for i, t in enumerate(types)})
    mins, maxs, nulls = _stats(table, types, "full")
    assert mins == (-7, 1.5, False, "apple", b"\x01\xff", decimal.Decimal("-3.00"), dt.date(1969, 1, 1),
                    dt.datetime(1960, 1, 1), dt.datetime(2024, 1, 1, tzinfo=UTC))  # fmt: skip
    assert maxs == (3, 1.5, True, "pear", b"\x02", decimal.Decimal("10.25"), dt.date(2024, 1, 2),
                    dt.datetime(2024, 1, 1, 0, 0, 0, 5), dt.datetime(2025, 1, 1, tzinfo=UTC))  # fmt: skip
    assert nulls == (0, 1, 0, 0, 0, 0, 0, 0, 0)


def test_stats_rows_use_nullable_types_and_all_null_columns() -> None:
    table = pa.table({"a": pa.array([None, None], pa.int64())})
    s = compute_stats(table, ["a"], [BigIntType(nullable=False)], "full")
    assert s.min_values == encode_row([None], [BigIntType()])
    assert s.null_counts == (2,)


def test_truncate_cuts_strings_and_increments_the_max() -> None:
    table = pa.table({"s": ["abcdefgh", "abcdzzzzz", "ab"]})
    assert _stats(table, [VarCharType()], "truncate(4)") == (("ab",), ("abce",), (0,))
    # no cut needed: values stay exact
    assert _stats(table, [VarCharType()], "truncate(16)") == (("ab",), ("abcdzzzzz",), (0,))


def test_truncate_counts_code_points_not_bytes() -> None:
    table = pa.table({"s": ["ééééé", "é"]})
    assert _stats(table, [VarCharType()], "truncate(2)") == (("é",), ("éê",), (0,))


def test_truncate_max_carries_past_the_largest_code_point() -> None:
    top = chr(0x10FFFF)
    table = pa.table({"s": ["a" + top + top + "z"]})
    assert _stats(table, [VarCharType()], "truncate(3)") == (("a" + top + top,), ("b",), (0,))
    # nothing can be incremented: Java gives up on the column's min and max
    table = pa.table({"s": [top * 4, "a"]})
    assert _stats(table, [VarCharType()], "truncate(2)") == ((None,), (None,), (0,))


def test_truncate_bytes() -> None:
    table = pa.table({"b": [b"\x01\x02\xff\xff\x05", b"\x00"]})
    assert _stats(table, [VarBinaryType()], "truncate(4)") == ((b"\x00",), (b"\x01\x03",), (0,))


def test_nested_columns_have_no_stats_like_java_parquet() -> None:
    row_type = RowType(())
    table = pa.table({"l": pa.array([[1], None]), "k": [1, 2], "r": pa.array([{}, {}], pa.struct([]))})
    types: list[DataType] = [ArrayType(BigIntType()), BigIntType(), row_type]
    assert _stats(table, types, "full") == ((None, 1, None), (None, 2, None), (None, 0, None))


def test_nan_is_ignored_and_all_nan_gives_no_bounds() -> None:
    table = pa.table({"d": [1.0, float("nan"), -2.0], "e": [float("nan")] * 3})
    assert _stats(table, [DoubleType(), DoubleType()], "full") == ((-2.0, None), (1.0, None), (0, 0))


def test_nanosecond_timestamps_are_exact() -> None:
    values = np.array(
        ["2024-01-01T00:00:00.000000001", "2024-01-01T00:00:00.000000999"], dtype="datetime64[ns]"
    )
    s = compute_stats(pa.table({"t": pa.array(values)}), ["t"], [TimestampType(9)], "full")
    assert s.min_values == encode_row([values[0]], [TimestampType(9)])
    assert s.max_values == encode_row([values[1]], [TimestampType(9)])


def test_chunked_and_dictionary_columns() -> None:
    table = pa.concat_tables([pa.table({"s": ["b", "c"]}), pa.table({"s": ["a", None]})])
    assert _stats(table, [VarCharType()], "full") == (("a",), ("c",), (1,))
    table = pa.table({"s": pa.array(["b", "a", "b"]).dictionary_encode()})
    assert _stats(table, [VarCharType()], "full") == (("a",), ("b",), (0,))


@pytest.mark.parametrize("bad", ["truncate(0)", "truncate", "all", "truncate(-1)"])
def test_invalid_mode(bad: str) -> None:
    with pytest.raises(InvalidOptionError, match=r"metadata\.stats-mode"):
        parse_stats_mode(bad)


def test_stats_to_values_checks_null_count_length() -> None:
    s = SimpleStats(encode_row([1], [BigIntType()]), encode_row([2], [BigIntType()]), (0, 1))
    with pytest.raises(CorruptFileError):
        stats_to_values(s, [BigIntType()])


@given(st.lists(st.none() | st.text(max_size=30), min_size=1, max_size=30), st.integers(1, 20))
@settings(max_examples=200)
def test_truncated_bounds_enclose_every_value(values: list[str | None], n: int) -> None:
    (lo,), (hi,), (nulls,) = _stats(
        pa.table({"s": pa.array(values, pa.string())}), [VarCharType()], f"truncate({n})"
    )
    present = [v for v in values if v is not None]
    assert nulls == len(values) - len(present)
    if not present:
        assert lo is None and hi is None
        return
    if hi is None:  # only when the max cannot be incremented
        return
    assert isinstance(lo, str) and isinstance(hi, str)
    assert len(lo) <= n and len(hi) <= n
    # Paimon compares strings as UTF-8 bytes
    assert all(lo.encode() <= v.encode() <= hi.encode() for v in present)
