"""Arithmetic and ordering aggregators: sum, count, product, min, max, bool_and, bool_or."""

from __future__ import annotations

from decimal import Decimal
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import MergeError, UnsupportedError
from stratalake.merge.aggregators.base import FieldAggregator
from stratalake.merge.kernels import (
    Groups,
    count_where,
    first_where,
    row_index,
    scatter_groups,
    valid_mask,
)
from stratalake.types import (
    ArrayType,
    BigIntType,
    BooleanType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    MapType,
    MultisetType,
    RowType,
    SmallIntType,
    TinyIntType,
)

_INTEGERS = (TinyIntType, SmallIntType, IntType, BigIntType)
_NUMERIC = (*_INTEGERS, FloatType, DoubleType, DecimalType)


def _numeric_error(dtype: DataType) -> str | None:
    if isinstance(dtype, _NUMERIC):
        return None
    return "it needs a numeric column (TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE or DECIMAL)"


def _grouped_pyarrow(values: pa.Array, groups: Groups, rows: np.ndarray, aggregation: str) -> pa.Array:
    """Hash-aggregate the selected rows by group with pyarrow and spread over all groups."""
    idx = row_index(groups.n_rows)[rows]
    table = pa.table({"g": pa.array(groups.gid[idx]), "v": values.take(pa.array(idx))})
    out = table.group_by("g", use_threads=False).aggregate([("v", aggregation)])
    present = np.asarray(out.column("g").to_numpy(), dtype=np.int64)
    result = out.column(f"v_{aggregation}").combine_chunks().cast(values.type)
    return scatter_groups(result, present, groups.count)


def _to_array(result: np.ndarray, nulls: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
    return pa.array(result, mask=nulls if nulls.any() else None).cast(arrow_type)


def _numbers(values: pa.Array) -> np.ndarray:
    """Values as numpy (nulls as 0); the caller masks nulls separately."""
    filled = values.fill_null(0) if values.null_count else values
    return np.asarray(filled.to_numpy(zero_copy_only=False))


def _check_int_range(column: str, table: str, exact: np.ndarray, approx: np.ndarray, t: pa.DataType) -> None:
    info = np.iinfo(t.to_pandas_dtype())
    # int64 arithmetic wraps silently; a float64 shadow of the same computation spots overflow.
    if (np.abs(approx) >= 2.0**63).any() or (exact > info.max).any() or (exact < info.min).any():
        raise MergeError(
            f"table {table}: aggregating column '{column}' overflows {t}; "
            "use a wider column type (e.g. BIGINT or DECIMAL)"
        )


class Sum(FieldAggregator):
    """Sum of non-null values; a retraction subtracts."""

    name = "sum"
    retractable = True

    @classmethod
    def type_error(cls, dtype: DataType) -> str | None:
        return _numeric_error(dtype)

    def aggregate(self, values: pa.Array, groups: Groups, use: np.ndarray, retract: np.ndarray) -> pa.Array:
        rows = use & valid_mask(values)
        nulls = count_where(rows, groups) == 0
        t = values.type
        if pa.types.is_decimal(t):
            return self._decimal(values, groups, rows, retract)
        v = _numbers(values)
        if pa.types.is_integer(t):
            contrib = np.where(rows, np.where(retract, -v.astype(np.int64), v.astype(np.int64)), 0)
            total = np.add.reduceat(contrib, groups.starts)
            approx = np.add.reduceat(contrib.astype(np.float64), groups.starts)
            _check_int_range(self.column, self.ctx.table_name, total, approx, t)
            return _to_array(total, nulls, t)
        contrib_f = np.where(rows, np.where(retract, -v, v), 0)
        return _to_array(np.add.reduceat(contrib_f, groups.starts), nulls, t)

    def _decimal(self, values: pa.Array, groups: Groups, rows: np.ndarray, retract: np.ndarray) -> pa.Array:
        signed = pc.if_else(pa.array(retract), pc.negate(values), values)
        out = _grouped_pyarrow(signed, groups, rows, "sum")
        t = values.type
        bound = pa.scalar(Decimal(10) ** (t.precision - t.scale), pa.decimal128(38, t.scale))
        too_big = pc.greater_equal(pc.abs(out.cast(pa.decimal128(38, t.scale))), bound)
        if pc.any(too_big).as_py():
            raise MergeError(
                f"table {self.ctx.table_name}: the sum of column '{self.column}' exceeds {t}; "
                "use a DECIMAL with more precision"
            )
        return out


class Count(Sum):
    """Counts rows. Each raw input row contributes 1 (0 for null) through
    :func:`stratalake.merge.prepare_input`; merges then add the partial counts up, so merging
    merged rows again stays exact (Paimon dropped its ``count`` for lacking this)."""

    name = "count"

    @classmethod
    def type_error(cls, dtype: DataType) -> str | None:
        if isinstance(dtype, _INTEGERS):
            return None
        return "it needs an integer column (TINYINT, SMALLINT, INT or BIGINT)"


class Product(FieldAggregator):
    """Product of non-null values; a retraction divides (ignored before the first value)."""

    name = "product"
    retractable = True

    @classmethod
    def type_error(cls, dtype: DataType) -> str | None:
        if isinstance(dtype, DecimalType):
            return "DECIMAL products are not supported yet; use DOUBLE or BIGINT"
        return _numeric_error(dtype)

    def aggregate(self, values: pa.Array, groups: Groups, use: np.ndarray, retract: np.ndarray) -> pa.Array:
        t = values.type
        if pa.types.is_decimal(t):
            raise UnsupportedError(
                f"table {self.ctx.table_name}: 'product' on DECIMAL column '{self.column}' is not "
                "supported yet; use DOUBLE or BIGINT"
            )
        valid = use & valid_mask(values)
        adds = valid & ~retract
        first_add = first_where(adds, groups)
        nulls = first_add < 0
        # Paimon leaves a null accumulator alone on retraction: retractions before the first
        # value do nothing.
        after_first = row_index(groups.n_rows) > np.where(nulls, groups.n_rows, first_add)[groups.gid]
        divs = valid & retract & after_first
        v = _numbers(values)
        if pa.types.is_integer(t):
            v64 = v.astype(np.int64)
            num = np.multiply.reduceat(np.where(adds, v64, 1), groups.starts)
            den = np.multiply.reduceat(np.where(divs, v64, 1), groups.starts)
            approx = np.multiply.reduceat(np.where(adds, v64.astype(np.float64), 1.0), groups.starts)
            if (den == 0).any():
                raise MergeError(
                    f"table {self.ctx.table_name}: retracting 0 from the product of column "
                    f"'{self.column}' divides by zero"
                )
            # Java's integer division truncates toward zero.
            quot = np.abs(num) // np.abs(den) * np.sign(num) * np.sign(den)
            _check_int_range(self.column, self.ctx.table_name, quot, approx, t)
            return _to_array(quot, nulls, t)
        num_f = np.multiply.reduceat(np.where(adds, v, 1), groups.starts)
        den_f = np.multiply.reduceat(np.where(divs, v, 1), groups.starts)
        with np.errstate(divide="ignore", invalid="ignore"):
            return _to_array(num_f / den_f, nulls, t)


def _comparable_error(dtype: DataType) -> str | None:
    if isinstance(dtype, ArrayType | MapType | MultisetType | RowType):
        return "it needs a comparable column (not ARRAY, MAP, MULTISET or ROW)"
    return None


class _Extreme(FieldAggregator):
    largest: ClassVar[bool]

    @classmethod
    def type_error(cls, dtype: DataType) -> str | None:
        return _comparable_error(dtype)

    def aggregate(self, values: pa.Array, groups: Groups, use: np.ndarray, retract: np.ndarray) -> pa.Array:
        rows = use & valid_mask(values)
        t = values.type
        if pa.types.is_integer(t) or pa.types.is_floating(t):
            nulls = count_where(rows, groups) == 0
            v = _numbers(values)
            if pa.types.is_integer(t):
                info = np.iinfo(v.dtype)
                fill: float = info.min if self.largest else info.max
                ufunc: np.ufunc = np.maximum if self.largest else np.minimum
            else:
                fill = -np.inf if self.largest else np.inf
                # Java orders NaN above every number: max keeps it, min skips it.
                ufunc = np.maximum if self.largest else np.fmin
            return _to_array(ufunc.reduceat(np.where(rows, v, fill), groups.starts), nulls, t)
        return _grouped_pyarrow(values, groups, rows, "max" if self.largest else "min")


class Max(_Extreme):
    name = "max"
    largest = True


class Min(_Extreme):
    name = "min"
    largest = False


class _BoolAgg(FieldAggregator):
    is_and: ClassVar[bool]

    @classmethod
    def type_error(cls, dtype: DataType) -> str | None:
        return None if isinstance(dtype, BooleanType) else "it needs a BOOLEAN column"

    def aggregate(self, values: pa.Array, groups: Groups, use: np.ndarray, retract: np.ndarray) -> pa.Array:
        rows = use & valid_mask(values)
        nulls = count_where(rows, groups) == 0
        v = np.asarray(values.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
        result = count_where(rows & ~v, groups) == 0 if self.is_and else count_where(rows & v, groups) > 0
        return _to_array(result, nulls, values.type)


class BoolAnd(_BoolAgg):
    name = "bool_and"
    is_and = True


class BoolOr(_BoolAgg):
    name = "bool_or"
    is_and = False
