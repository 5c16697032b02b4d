"""Aggregators that pick one row's value: last/first (non-null) value and the key columns."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from stratalake.merge.aggregators.base import FieldAggregator
from stratalake.merge.kernels import Groups, first_where, last_where, take_or_null, valid_mask


class LastValue(FieldAggregator):
    """The newest value, null included; a newer retraction leaves null."""

    name = "last_value"
    retractable = True

    def aggregate(self, values: pa.Array, groups: Groups, use: np.ndarray, retract: np.ndarray) -> pa.Array:
        pick = last_where(use, groups)
        # A retraction sets the accumulator to null (Paimon's FieldLastValueAgg.retract).
        pick[(pick >= 0) & retract[np.maximum(pick, 0)]] = -1
        return take_or_null(values, pick)


class LastNonNullValue(FieldAggregator):
    """The newest non-null value; retracting a non-null value leaves null."""

    name = "last_non_null_value"
    retractable = True

    def aggregate(self, values: pa.Array, groups: Groups, use: np.ndarray, retract: np.ndarray) -> pa.Array:
        # Null inputs change nothing, for adds and retractions alike, so only the newest non-null
        # row matters: its value if it adds, null if it retracts.
        pick = last_where(use & valid_mask(values), groups)
        pick[(pick >= 0) & retract[np.maximum(pick, 0)]] = -1
        return take_or_null(values, pick)


class FirstValue(FieldAggregator):
    """The oldest value, null included."""

    name = "first_value"

    def aggregate(self, values: pa.Array, groups: Groups, use: np.ndarray, retract: np.ndarray) -> pa.Array:
        return take_or_null(values, first_where(use, groups))


class FirstNonNullValue(FieldAggregator):
    """The oldest non-null value."""

    name = "first_non_null_value"

    def aggregate(self, values: pa.Array, groups: Groups, use: np.ndarray, retract: np.ndarray) -> pa.Array:
        return take_or_null(values, first_where(use & valid_mask(values), groups))


class PrimaryKeyValue(FieldAggregator):
    """Key columns are equal within a group; any row's value will do (the first)."""

    name = "primary-key"
    retractable = True

    def aggregate(self, values: pa.Array, groups: Groups, use: np.ndarray, retract: np.ndarray) -> pa.Array:
        return take_or_null(values, groups.starts)
