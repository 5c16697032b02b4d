"""``merge-engine = aggregation``: every value column folds with its aggregate function."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from stratalake.exceptions import MergeError
from stratalake.merge.aggregators import FieldAggregator, PrimaryKeyValue, canonical_name, create_aggregator
from stratalake.merge.context import SEQUENCE_NUMBER, VALUE_KIND, MergeContext, RowKind
from stratalake.merge.field_options import bool_option, explicit_agg_function, field_bool
from stratalake.merge.kernels import (
    Groups,
    as_array,
    kinds_of,
    last_where,
    retract_mask,
    row_index,
    valid_mask,
)
from stratalake.options import MergeEngine

DEFAULT_FUNCTION = "last_non_null_value"
REMOVE_ON_DELETE = "aggregation.remove-record-on-delete"


def aggregate_function_name(ctx: MergeContext, column: str) -> str:
    """The function aggregating ``column``, as Paimon resolves it."""
    if column in ctx.sequence_fields:
        return "last_value"  # sequence fields follow the newest record
    if column in ctx.schema.primary_keys:
        return PrimaryKeyValue.name
    return canonical_name(explicit_agg_function(ctx, column) or DEFAULT_FUNCTION)


def retract_error(ctx: MergeContext, column: str, function: str) -> MergeError:
    return MergeError(
        f"table {ctx.table_name}: aggregate function '{function}' of column '{column}' cannot "
        f"retract -U/-D records; set 'fields.{column}.ignore-retract'='true' to skip them, or use "
        "a function that supports retraction (sum, product, count, collect, merge_map, last_value, "
        "last_non_null_value)"
    )


class AggregateMergeFunction:
    """Aggregates each value column per key; ``aggregation.remove-record-on-delete`` lets a -D
    remove the key (its values become the start of any later aggregation, as in Paimon)."""

    def __init__(self, ctx: MergeContext) -> None:
        self._ctx = ctx
        self._remove_on_delete = bool_option(ctx, REMOVE_ON_DELETE)
        self._aggs: list[tuple[FieldAggregator, bool]] = []
        for name in ctx.value_names:
            function = aggregate_function_name(ctx, name)
            agg = (
                PrimaryKeyValue(name, ctx)
                if function == PrimaryKeyValue.name
                else create_aggregator(function, name, ctx)
            )
            self._aggs.append((agg, field_bool(ctx, name, "ignore-retract")))

    def merge(self, sorted_kv: pa.Table, starts: np.ndarray) -> pa.Table:
        n = sorted_kv.num_rows
        if n == 0:
            return sorted_kv
        groups = Groups(starts, n)
        kinds = kinds_of(sorted_kv)
        retract = retract_mask(kinds)
        use = np.ones(n, dtype=bool)
        out_kind = np.full(groups.count, RowKind.INSERT, dtype=np.int8)
        if self._remove_on_delete:
            last_delete = last_where(kinds == RowKind.DELETE, groups)
            base = last_delete[groups.gid]
            idx = row_index(n)
            use = idx >= base
            # The newest -D restarts the key: its values seed the aggregation, it retracts nothing.
            retract &= idx != base
            out_kind[last_delete == groups.ends - 1] = RowKind.DELETE
        columns = []
        for agg, ignore_retract in self._aggs:
            values = as_array(sorted_kv.column(agg.column))
            col_use = use
            if ignore_retract:
                col_use = use & ~retract
            elif not agg.retractable and (retract & use).any():
                raise retract_error(self._ctx, agg.column, agg.name)
            columns.append(agg.aggregate(values, groups, col_use, retract & col_use))
        seq = np.maximum.reduceat(np.asarray(sorted_kv.column(SEQUENCE_NUMBER).to_numpy()), starts)
        columns.append(pa.array(seq, pa.int64()))
        columns.append(pa.array(out_kind, pa.int8()))
        schema = sorted_kv.schema
        assert schema.names[-1] == VALUE_KIND
        return pa.Table.from_arrays(columns, schema=schema)


def count_columns(ctx: MergeContext) -> list[str]:
    """Columns aggregated with ``count`` (by the aggregation engine or a sequence group)."""
    engine = ctx.options.merge_engine
    if engine is MergeEngine.AGGREGATE:
        return [c for c in ctx.value_names if aggregate_function_name(ctx, c) == "count"]
    if engine is MergeEngine.PARTIAL_UPDATE:
        keys = set(ctx.schema.primary_keys)
        return [
            c
            for c in ctx.value_names
            if c not in keys and canonical_name(explicit_agg_function(ctx, c) or "") == "count"
        ]
    return []


def prepare_input(kv: pa.Table, ctx: MergeContext) -> pa.Table:
    """Turn raw input rows into mergeable partial results: a ``count`` column becomes 1 for a
    non-null input value and 0 for null. Call once on rows entering the write buffer, never on
    rows read back from files (they already hold counts)."""
    for name in count_columns(ctx):
        i = kv.schema.get_field_index(name)
        col = kv.column(i)
        ones = pa.array(valid_mask(col).astype(np.int64)).cast(col.type)
        kv = kv.set_column(i, kv.schema.field(i), ones)
    return kv
