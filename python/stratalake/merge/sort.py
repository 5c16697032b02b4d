"""Sorting a KV table into merge order and finding its key groups, vectorized."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.merge.context import SEQUENCE_NUMBER, MergeContext


def sort_kv(kv: pa.Table, ctx: MergeContext) -> pa.Table:
    """Sort by trimmed key, then ``sequence.field`` values, then ``_SEQUENCE_NUMBER``.

    The sort is stable, so equal sequence values keep input order. Null sequence-field values sort
    first (they are the oldest); keys are never null.
    """
    indices, _ = merge_order(kv, ctx)
    return kv if indices is None else kv.take(indices)


def merge_order(
    kv: pa.Table, ctx: MergeContext, arrival_ordered: bool = False
) -> tuple[np.ndarray | pa.Array | None, np.ndarray]:
    """The row order :func:`sort_kv` produces, and the key groups in that order.

    Returns ``(indices, starts)``: ``indices`` puts ``kv`` into merge order (None when it already
    is), ``starts`` is :func:`key_group_starts` of the sorted table. Only the key and sequence
    columns are looked at, so a caller that picks rows (deduplicate) can take the other columns
    once, for the picked rows only. ``arrival_ordered`` (for tables without ``sequence.field``):
    the caller knows every key's rows arrive oldest first (sorted runs with ascending, disjoint
    sequence number ranges), so a stable sort by the key alone is merge order and
    ``_SEQUENCE_NUMBER`` is neither checked nor needed.
    """
    if kv.num_rows == 0:
        return None, np.zeros(0, dtype=np.int64)
    if not ctx.sequence_fields:
        # Rows usually arrive oldest first per key (a write buffer's input; sorted runs read
        # oldest level first). Then a stable sort by the key alone is merge order, and sorting
        # sequence numbers too would cost a second sort column. Verified unless known.
        int_key = _int_key(kv, ctx.key_names)
        if int_key is not None:
            indices = None if _non_decreasing(int_key) else np.argsort(int_key, kind="stable")
            sorted_keys = int_key if indices is None else int_key[indices]
            starts = _starts_of(sorted_keys)
            if arrival_ordered:
                return indices, starts
            seq = np.asarray(kv.column(SEQUENCE_NUMBER).to_numpy())
            if _ascending_within_groups(seq if indices is None else seq[indices], starts):
                return indices, starts
        else:
            narrow = kv.select(list(ctx.key_names) if arrival_ordered else [*ctx.key_names, SEQUENCE_NUMBER])
            key_only: list[tuple[str, str]] = [(k, "ascending") for k in ctx.key_names]
            indices = _sort_indices(narrow, key_only)
            out = narrow if indices is None else narrow.take(indices)
            starts = key_group_starts(out, ctx.key_names)
            if arrival_ordered or _sequence_ascending_within_keys(out, starts):
                return indices, starts
    order_columns = [*ctx.key_names, *ctx.sequence_fields, SEQUENCE_NUMBER]
    narrow = kv.select(list(dict.fromkeys(order_columns)))
    order = "descending" if ctx.sequence_descending else "ascending"
    keys = [(k, "ascending") for k in ctx.key_names]
    keys += [(f, order) for f in ctx.sequence_fields] + [(SEQUENCE_NUMBER, "ascending")]
    indices = _sort_indices(narrow, keys)
    out = narrow if indices is None else narrow.take(indices)
    return indices, key_group_starts(out, ctx.key_names)


def _int_key(kv: pa.Table, key_names: tuple[str, ...]) -> np.ndarray | None:
    """The key as a numpy array when it is one non-null integer column, else None."""
    if len(key_names) != 1:
        return None
    col = kv.column(key_names[0])
    if not pa.types.is_integer(col.type) or col.null_count:
        return None
    return np.asarray(col.to_numpy())


def _non_decreasing(values: np.ndarray) -> bool:
    return bool(np.all(values[1:] >= values[:-1]))


def _starts_of(sorted_keys: np.ndarray) -> np.ndarray:
    """:func:`key_group_starts` of a sorted numpy key (non-empty)."""
    change = np.empty(len(sorted_keys), dtype=bool)
    change[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=change[1:])
    return np.flatnonzero(change).astype(np.int64, copy=False)


def _ascending_within_groups(seq: np.ndarray, starts: np.ndarray) -> bool:
    """Whether ``seq`` never decreases inside a group (it may fall at group starts)."""
    if len(seq) < 2:
        return True
    later = seq[1:] < seq[:-1]
    if not later.any():
        return True
    same_key = np.ones(len(seq) - 1, dtype=bool)
    same_key[starts[1:] - 1] = False
    return not bool(np.any(same_key & later))


def _sequence_ascending_within_keys(sorted_kv: pa.Table, starts: np.ndarray) -> bool:
    return _ascending_within_groups(np.asarray(sorted_kv.column(SEQUENCE_NUMBER).to_numpy()), starts)


def _sort_indices(kv: pa.Table, keys: list[tuple[str, str]]) -> pa.Array | np.ndarray | None:
    # Fast path: all sort columns are non-null integers -> numpy lexsort (much faster than Arrow's
    # generic multi-key sort for the common BIGINT-key table).
    cols: list[np.ndarray] = []
    for name, order in keys:
        col = kv.column(name)
        if not pa.types.is_integer(col.type) or col.null_count:
            break
        arr = col.to_numpy()
        cols.append(-arr.astype(np.int64) if order == "descending" else arr)
    if len(cols) == len(keys):
        # A single column: a stable argsort (timsort) exploits the presorted runs of files.
        idx = np.argsort(cols[0], kind="stable") if len(cols) == 1 else np.lexsort(cols[::-1])
        if np.all(idx[1:] > idx[:-1]):
            return None  # already sorted
        return idx
    return pc.sort_indices(kv, sort_keys=keys, null_placement="at_start")


def key_group_starts(sorted_kv: pa.Table, key_names: tuple[str, ...] | list[str]) -> np.ndarray:
    """Index of the first row of every key group of a key-sorted table (int64)."""
    n = sorted_kv.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if not key_names:
        return np.zeros(1, dtype=np.int64)
    change = np.zeros(n - 1, dtype=bool)
    for name in key_names:
        col = sorted_kv.column(name)
        if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
            arr = col.to_numpy()
            change |= arr[1:] != arr[:-1]
        else:
            if isinstance(col, pa.ChunkedArray):
                col = col.combine_chunks()
            neq = pc.not_equal(col.slice(1), col.slice(0, n - 1))
            change |= neq.to_numpy(zero_copy_only=False).astype(bool)
    starts = np.flatnonzero(change) + 1
    return np.concatenate(([0], starts)).astype(np.int64)


def count_distinct_keys(kv: pa.Table, key_names: tuple[str, ...] | list[str]) -> int:
    """Number of distinct keys of ``kv`` (any row order; keys are never null)."""
    if kv.num_rows == 0 or not key_names:
        return int(min(kv.num_rows, 1))
    if len(key_names) == 1 and pa.types.is_integer(kv.schema.field(key_names[0]).type):
        # Stable (timsort): a chunk is a few key-sorted runs end to end, which it merges in
        # linear time; the default introsort sorts them from scratch (2-3x slower, measured).
        keys = np.sort(kv.column(key_names[0]).to_numpy(), kind="stable")
        return int(np.count_nonzero(keys[1:] != keys[:-1])) + 1
    narrow = kv.select(list(key_names))
    indices = _sort_indices(narrow, [(k, "ascending") for k in key_names])
    ordered = narrow if indices is None else narrow.take(indices)
    return len(key_group_starts(ordered, key_names))


def group_ends(starts: np.ndarray, n: int) -> np.ndarray:
    """Exclusive end index of every group."""
    ends = np.empty(len(starts), dtype=np.int64)
    if len(starts):
        ends[:-1] = starts[1:]
        ends[-1] = n
    return ends
