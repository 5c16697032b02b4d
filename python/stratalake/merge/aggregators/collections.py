"""Aggregators over strings, arrays and maps: listagg, collect, merge_map.

They explode the selected rows' elements (keeping row order), decide per (group, element) which
elements survive with sorted segment kernels, and rebuild one list/map per group from offsets.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import UnsupportedError
from stratalake.merge.aggregators.base import FieldAggregator
from stratalake.merge.context import MergeContext
from stratalake.merge.field_options import field_bool, list_agg_delimiter
from stratalake.merge.kernels import Groups, element_codes, first_where, row_index, valid_mask
from stratalake.types import MAX_LENGTH, ArrayType, DataType, MapType, MultisetType, RowType, VarCharType


def _lists(flat: pa.Array, g: np.ndarray, null_groups: np.ndarray) -> pa.Array:
    """One list per group from elements ``flat`` whose (non-decreasing) group numbers are ``g``."""
    counts = np.bincount(g, minlength=len(null_groups)) if len(g) else np.zeros(len(null_groups), np.int64)
    offsets = pa.array(np.concatenate(([0], np.cumsum(counts))).astype(np.int32))
    mask = pa.array(null_groups) if null_groups.any() else None
    return pa.ListArray.from_arrays(offsets, flat, mask=mask)


def _explode(values: pa.Array, groups: Groups, rows: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Elements of the selected list rows, in row order, with the row each came from."""
    idx = row_index(groups.n_rows)[rows]
    sub = values.take(pa.array(idx))
    flat = pc.list_flatten(sub)
    parent = np.asarray(pc.list_parent_indices(sub).to_numpy(), dtype=np.int64)
    return flat, idx[parent]


def _segments(g: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order elements by (group, element code, position); return the order and segment starts."""
    order = np.lexsort((np.arange(len(g)), codes, g))
    key_g, key_c = g[order], codes[order]
    change = (key_g[1:] != key_g[:-1]) | (key_c[1:] != key_c[:-1])
    starts = np.concatenate(([0], np.flatnonzero(change) + 1)).astype(np.int64)
    return order, starts


def _last_op_adds(g: np.ndarray, codes: np.ndarray, retracted: np.ndarray) -> np.ndarray:
    """Set semantics: positions of elements whose last operation adds them, placed at the first
    add after their last retraction."""
    n = len(g)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order, starts = _segments(g, codes)
    pos = order  # element positions in segment order
    r = retracted[order]
    last_retract = np.maximum.reduceat(np.where(r, pos, -1), starts)
    seg_of = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
    after = ~r & (pos > last_retract[seg_of])
    first_after = np.minimum.reduceat(np.where(after, pos, n), starts)
    return np.sort(first_after[first_after < n])


class ListAgg(FieldAggregator):
    """Joins non-blank strings with ``fields.<col>.list-agg-delimiter`` (``distinct``: once each)."""

    name = "listagg"

    def __init__(self, column: str, ctx: MergeContext) -> None:
        super().__init__(column, ctx)
        self.delimiter = list_agg_delimiter(ctx, column)
        self.distinct = field_bool(ctx, column, "distinct")

    @classmethod
    def type_error(cls, dtype: DataType) -> str | None:
        if isinstance(dtype, VarCharType) and dtype.length == MAX_LENGTH:
            return None
        return "it needs a STRING column"

    def aggregate(self, values: pa.Array, groups: Groups, use: np.ndarray, retract: np.ndarray) -> pa.Array:
        nonblank = pc.fill_null(pc.not_equal(pc.utf8_trim_whitespace(values), ""), False)
        rows = use & valid_mask(values) & np.asarray(nonblank.to_numpy(zero_copy_only=False), dtype=bool)
        null_groups = first_where(rows, groups) < 0
        idx = row_index(groups.n_rows)[rows]
        if not self.distinct:
            lists = _lists(values.take(pa.array(idx)), groups.gid[idx], null_groups)
        else:
            tokens = pc.split_pattern(values.take(pa.array(idx)), self.delimiter)
            flat = pc.list_flatten(tokens)
            g = groups.gid[idx[np.asarray(pc.list_parent_indices(tokens).to_numpy(), dtype=np.int64)]]
            keep_tok = pc.fill_null(pc.not_equal(pc.utf8_trim_whitespace(flat), ""), False)
            sel = np.flatnonzero(np.asarray(keep_tok.to_numpy(zero_copy_only=False), dtype=bool))
            flat, g = flat.take(pa.array(sel)), g[sel]
            first = _last_op_adds(g, element_codes(flat), np.zeros(len(g), dtype=bool))
            lists = _lists(flat.take(pa.array(first)), g[first], null_groups)
        return pc.binary_join(lists, self.delimiter).cast(values.type)


def _hashable_error(kind: str, element: DataType) -> str | None:
    if isinstance(element, ArrayType | MapType | MultisetType | RowType):
        return f"{kind} of nested {element} elements are not supported yet"
    return None


class Collect(FieldAggregator):
    """Concatenates arrays (``distinct``: a set); a retraction removes one matching element each."""

    name = "collect"
    retractable = True

    def __init__(self, column: str, ctx: MergeContext) -> None:
        super().__init__(column, ctx)
        self.distinct = field_bool(ctx, column, "distinct")

    @classmethod
    def type_error(cls, dtype: DataType) -> str | None:
        return None if isinstance(dtype, ArrayType) else "it needs an ARRAY column"

    def aggregate(self, values: pa.Array, groups: Groups, use: np.ndarray, retract: np.ndarray) -> pa.Array:
        valid = use & valid_mask(values)
        # The accumulator stays null until a non-null array is added.
        null_groups = first_where(valid & ~retract, groups) < 0
        flat, row = _explode(values, groups, valid)
        g, retracted = groups.gid[row], retract[row]
        if not self.distinct and not retracted.any():
            return _lists(flat, g, null_groups).cast(values.type)
        if pa.types.is_nested(flat.type):
            raise UnsupportedError(
                f"table {self.ctx.table_name}: 'collect' on column '{self.column}' cannot "
                f"{'deduplicate' if self.distinct else 'retract'} nested elements ({flat.type}) yet"
            )
        codes = element_codes(flat)
        keep = (
            _last_op_adds(g, codes, retracted) if self.distinct else _multiset_survivors(g, codes, retracted)
        )
        return _lists(flat.take(pa.array(keep)), g[keep], null_groups).cast(values.type)


def _multiset_survivors(g: np.ndarray, codes: np.ndarray, retracted: np.ndarray) -> np.ndarray:
    """Multiset semantics: each retraction removes the oldest remaining equal element, if any."""
    n = len(g)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order, starts = _segments(g, codes)
    r = retracted[order]
    steps = np.where(r, -1, 1).astype(np.int64)
    seg_len = np.diff(np.append(starts, n))
    seg_of = np.repeat(np.arange(len(starts)), seg_len)
    csum = np.cumsum(steps)
    before = np.concatenate(([0], csum))[starts]  # running sum before each segment
    prefix = csum - before[seg_of]
    # A walk that cannot go below zero ends at S_n - min(0, min_j S_j).
    survivors = prefix[starts + seg_len - 1] - np.minimum(0, np.minimum.reduceat(prefix, starts))
    adds = ~r
    add_cum = np.cumsum(adds)
    adds_before = np.concatenate(([0], add_cum))[starts]
    adds_total = np.add.reduceat(adds.astype(np.int64), starts)
    # FIFO removal: the newest `survivors` adds of each segment remain.
    rank_from_end = adds_total[seg_of] - (add_cum - adds_before[seg_of])
    keep = adds & (rank_from_end < survivors[seg_of])
    return np.sort(order[keep])


class MergeMap(FieldAggregator):
    """Unions maps, newer values winning per key; a retraction removes its keys."""

    name = "merge_map"
    retractable = True

    @classmethod
    def type_error(cls, dtype: DataType) -> str | None:
        if not isinstance(dtype, MapType):
            return "it needs a MAP column"
        return _hashable_error("MAP keys", dtype.key)

    def aggregate(self, values: pa.Array, groups: Groups, use: np.ndarray, retract: np.ndarray) -> pa.Array:
        valid = use & valid_mask(values)
        null_groups = first_where(valid & ~retract, groups) < 0
        mtype = values.type
        entries = pa.list_(pa.struct([mtype.key_field, mtype.item_field]))
        flat, row = _explode(values.cast(entries), groups, valid)
        g, retracted = groups.gid[row], retract[row]
        keys, items = flat.field(0), flat.field(1)
        keep = _last_op_positions(g, element_codes(keys), retracted)
        counts = (
            np.bincount(g[keep], minlength=groups.count) if len(keep) else np.zeros(groups.count, np.int64)
        )
        offsets = pa.array(np.concatenate(([0], np.cumsum(counts))).astype(np.int32))
        sel = pa.array(keep)
        mask = pa.array(null_groups) if null_groups.any() else None
        return pa.MapArray.from_arrays(offsets, keys.take(sel), items.take(sel), mask=mask).cast(mtype)


def _last_op_positions(g: np.ndarray, codes: np.ndarray, retracted: np.ndarray) -> np.ndarray:
    """Map semantics: for each (group, key) the position of its last operation, if that adds."""
    n = len(g)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order, starts = _segments(g, codes)
    last = order[np.append(starts[1:], n) - 1]
    return np.sort(last[~retracted[last]])
