"""Grouped kernels shared by the engines and aggregators.

Every kernel works on rows already sorted into key groups (``starts`` = first row of each group,
every group non-empty) and selects rows with boolean masks instead of filtering, so group
boundaries never move. Results have one entry per group. All of it is numpy/pyarrow; no kernel
loops over rows in Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.merge.context import VALUE_KIND, RowKind

NONE = -1  # "no such row" in index results


@dataclass(frozen=True)
class Groups:
    """Key groups of a sorted table: ``starts`` (int64, first row of each group) and ``n_rows``."""

    starts: np.ndarray
    n_rows: int
    _gid: list[np.ndarray] = field(default_factory=list, repr=False, compare=False)

    @property
    def count(self) -> int:
        return len(self.starts)

    @property
    def ends(self) -> np.ndarray:
        """Exclusive end of every group."""
        return np.append(self.starts[1:], self.n_rows).astype(np.int64)

    @property
    def sizes(self) -> np.ndarray:
        sizes: np.ndarray = self.ends - self.starts
        return sizes

    @property
    def gid(self) -> np.ndarray:
        """Group number of every row (computed once)."""
        if not self._gid:
            self._gid.append(np.repeat(np.arange(self.count, dtype=np.int64), self.sizes))
        return self._gid[0]


def row_index(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int64)


def last_where(mask: np.ndarray, groups: Groups) -> np.ndarray:
    """Index of the last row of each group where ``mask`` holds, else ``NONE``."""
    if groups.n_rows == 0:
        return np.zeros(0, dtype=np.int64)
    cand = np.where(mask, row_index(groups.n_rows), NONE)
    return np.maximum.reduceat(cand, groups.starts)


def first_where(mask: np.ndarray, groups: Groups) -> np.ndarray:
    """Index of the first row of each group where ``mask`` holds, else ``NONE``."""
    if groups.n_rows == 0:
        return np.zeros(0, dtype=np.int64)
    n = groups.n_rows
    cand = np.where(mask, row_index(n), n)
    first = np.minimum.reduceat(cand, groups.starts)
    first[first == n] = NONE
    return first


def count_where(mask: np.ndarray, groups: Groups) -> np.ndarray:
    if groups.n_rows == 0:
        return np.zeros(0, dtype=np.int64)
    return np.add.reduceat(mask.astype(np.int64), groups.starts)


def any_where(mask: np.ndarray, groups: Groups) -> np.ndarray:
    if groups.n_rows == 0:
        return np.zeros(0, dtype=bool)
    return np.logical_or.reduceat(mask, groups.starts)


def segment_cummax(values: np.ndarray, groups: Groups) -> np.ndarray:
    """Inclusive running maximum of non-negative-or-minus-one int64 ``values`` within each group.

    Offsetting each group above the previous one lets one global ``maximum.accumulate`` restart at
    every group boundary.
    """
    if len(values) == 0:
        return values.astype(np.int64)
    span = int(values.max()) + 2
    offset = groups.gid * span
    running: np.ndarray = np.maximum.accumulate(values.astype(np.int64) + 1 + offset) - offset - 1
    return running


def take_or_null(arr: pa.Array | pa.ChunkedArray, idx: np.ndarray) -> pa.Array:
    """``arr.take(idx)`` with null wherever ``idx`` is ``NONE``."""
    missing = idx < 0
    indices = pa.array(np.where(missing, 0, idx), mask=missing) if missing.any() else pa.array(idx)
    out = arr.take(indices)
    if isinstance(out, pa.ChunkedArray):
        out = out.combine_chunks()
    return out


def null_where(arr: pa.Array, mask: np.ndarray) -> pa.Array:
    """``arr`` with the positions in ``mask`` set to null."""
    if not mask.any():
        return arr
    return pc.if_else(pa.array(mask), pa.nulls(len(arr), arr.type), arr)


def valid_mask(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def as_array(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def kinds_of(kv: pa.Table) -> np.ndarray:
    return np.asarray(kv.column(VALUE_KIND).to_numpy(), dtype=np.int8)


def retract_mask(kinds: np.ndarray) -> np.ndarray:
    mask: np.ndarray = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
    return mask


def scatter_groups(values: pa.Array, present: np.ndarray, n_groups: int) -> pa.Array:
    """Spread ``values`` (one per present group, ascending) over ``n_groups``; absent -> null."""
    if len(present) == n_groups:
        return values
    pos = np.full(n_groups, NONE, dtype=np.int64)
    pos[present] = np.arange(len(present), dtype=np.int64)
    return take_or_null(values, pos)


def dense_rank(columns: list[pa.Array], descending: bool = False) -> np.ndarray:
    """Lexicographic dense rank (0-based) of the rows of ``columns``; nulls rank lowest."""
    n = len(columns[0])
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    ranks = []
    for col in columns:
        order = "descending" if descending else "ascending"
        r = pc.rank(col, sort_keys=order, null_placement="at_start", tiebreaker="dense")
        ranks.append(np.asarray(r.to_numpy(), dtype=np.int64))
    if len(ranks) == 1:
        return ranks[0] - 1
    order_idx = np.lexsort(ranks[::-1])
    sorted_ranks = np.stack([r[order_idx] for r in ranks])
    change = np.any(sorted_ranks[:, 1:] != sorted_ranks[:, :-1], axis=0)
    tuple_rank = np.concatenate(([0], np.cumsum(change)))
    out = np.empty(n, dtype=np.int64)
    out[order_idx] = tuple_rank
    return out


def element_codes(values: pa.Array) -> np.ndarray:
    """An int64 code per element such that equal values (and all nulls) share a code."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    encoded = pc.dictionary_encode(values, null_encoding="encode")
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    return np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
