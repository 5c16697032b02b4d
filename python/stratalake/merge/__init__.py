"""Merge functions: how rows with the same primary key combine.

One protocol, one module per engine, and one factory (:func:`create_merge_function`) used by the
write buffer, the merge-on-read reader and compaction alike, so the three can never disagree.

All engines work on a *KV table* (table columns + ``_SEQUENCE_NUMBER`` + ``_VALUE_KIND``) sorted by
(trimmed key, merge order) with the start index of every key group, and are vectorized: sort, group
boundaries and grouped kernels, never a Python loop per row.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import pyarrow as pa

from stratalake.merge.aggregation import prepare_input as prepare
from stratalake.merge.context import (
    SEQUENCE_NUMBER,
    VALUE_KIND,
    MergeContext,
    RowKind,
)
from stratalake.merge.registry import create
from stratalake.merge.sort import key_group_starts, merge_order, sort_kv
from stratalake.merge.validation import validate_merge_options as validate


class MergeFunction(Protocol):
    """Folds every key group of a sorted KV table into one row."""

    def merge(self, sorted_kv: pa.Table, starts: np.ndarray) -> pa.Table:
        """Return one row per key group, in the KV layout and in key order.

        ``sorted_kv`` is sorted by key, then merge order (oldest first); ``starts`` holds the index
        of each group's first row. The result's ``_VALUE_KIND`` says whether the key is live
        (+I/+U) or retracted (-U/-D); groups that merge to nothing may be omitted.
        """
        ...


def create_merge_function(ctx: MergeContext) -> MergeFunction:
    """The one factory of merge functions, chosen by the table's ``merge-engine`` option."""
    return create(ctx)


def merge_kv(kv: pa.Table, ctx: MergeContext, mf: MergeFunction | None = None) -> pa.Table:
    """Sort ``kv`` into merge order and fold every key to one row with the table's engine."""
    if kv.num_rows == 0:
        return kv
    fn = mf if mf is not None else create_merge_function(ctx)
    picked = picked_rows(kv, ctx, fn)
    if picked is not None:
        # An engine that keeps whole rows (deduplicate) takes every column once, for its picks.
        return take_rows(kv, picked)
    indices, starts = merge_order(kv, ctx)
    sorted_kv = kv if indices is None else kv.take(indices)
    return fn.merge(sorted_kv, starts)


def picked_rows(
    kv: pa.Table, ctx: MergeContext, mf: MergeFunction, arrival_ordered: bool = False, live_only: bool = False
) -> np.ndarray | None:
    """For an engine that keeps whole rows (it has ``pick_rows``, as deduplicate does): the
    positions in ``kv`` of the rows it keeps, one per key, in key order; with ``live_only``, only
    those that are live (+I/+U: what a read returns), else retractions too. None for engines that
    fold rows into new ones (use :func:`merge_kv`). Only the key, sequence and row-kind columns are
    looked at; ``arrival_ordered`` as for :func:`merge_order` (then ``_SEQUENCE_NUMBER`` need not
    be there)."""
    pick_rows = getattr(mf, "pick_rows", None)
    if pick_rows is None:
        return None
    if kv.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    indices, starts = merge_order(kv, ctx, arrival_ordered)
    kinds = np.asarray(kv.column(VALUE_KIND).to_numpy())
    order = None if indices is None else np.asarray(indices)
    sorted_kinds = kinds if order is None else kinds[order]
    picks = np.asarray(pick_rows(sorted_kinds, starts))
    rows = picks if order is None else order[picks]
    if live_only:
        picked_kinds = sorted_kinds[picks]
        live = (picked_kinds == RowKind.INSERT) | (picked_kinds == RowKind.UPDATE_AFTER)
        if not live.all():
            rows = rows[live]
    return rows


def take_rows(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """``table.take(rows)``, zero-copy when ``rows`` is one ascending range (e.g. every key's
    newest record is in the same run, as after an upsert of all of a bucket's keys)."""
    n = len(rows)
    if n == 0:
        return table.slice(0, 0)
    first = int(rows[0])
    if int(rows[-1]) - first == n - 1 and (n == 1 or bool(np.all(np.diff(rows) == 1))):
        return table.slice(first, n)
    return table.take(rows)


def validate_merge_options(ctx: MergeContext) -> None:
    """Check the table's merge options at CREATE/ALTER TABLE (raises InvalidOptionError)."""
    validate(ctx)


def prepare_input(kv: pa.Table, ctx: MergeContext) -> pa.Table:
    """Normalize raw input rows before the write buffer folds them (``count`` columns -> 1/0).

    Rows read back from data files must not pass through here: they already hold partial results.
    """
    return prepare(kv, ctx)


def drop_retracted(kv: pa.Table) -> pa.Table:
    """Keep only live rows (+I/+U): what a batch read returns after the merge."""
    if kv.num_rows == 0:
        return kv
    kinds = kv.column(VALUE_KIND).to_numpy()
    live = (kinds == RowKind.INSERT) | (kinds == RowKind.UPDATE_AFTER)
    if live.all():
        return kv
    return kv.filter(pa.array(live))


__all__ = [
    "SEQUENCE_NUMBER",
    "VALUE_KIND",
    "MergeContext",
    "MergeFunction",
    "RowKind",
    "create_merge_function",
    "drop_retracted",
    "key_group_starts",
    "merge_kv",
    "picked_rows",
    "prepare_input",
    "sort_kv",
    "take_rows",
    "validate_merge_options",
]
