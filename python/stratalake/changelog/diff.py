"""Changelog between an old and a new value per key, vectorized (shared by the producers).

For each key group the producer knows the *before* record (the old merged value, or none) and the
*after* record (the new merged value, or none). Like Paimon's changelog wrappers:

- no live before, live after: ``+I after``
- live before, no live after: ``-D before``
- live before, live after: ``-U before, +U after`` (skipped when equal and
  ``changelog-producer.row-deduplicate`` is set)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.lsm.lookup import without_level
from stratalake.merge import SEQUENCE_NUMBER, VALUE_KIND, RowKind

_GROUP = "__group"
_ROW = "__row"


def live_mask(kv: pa.Table, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Whether row ``idx[i]`` of ``kv`` exists (>= 0) and is +I/+U."""
    out = np.zeros(len(idx), dtype=bool)
    has = idx >= 0
    if has.any():
        kinds = kv.column(VALUE_KIND).to_numpy()[idx[has]]
        out[has] = (kinds == RowKind.INSERT) | (kinds == RowKind.UPDATE_AFTER)
    return out


def align_results(
    sorted_kv: pa.Table, starts: npt.NDArray[np.int64], result: pa.Table, key_names: Sequence[str]
) -> npt.NDArray[np.int64]:
    """Row of ``result`` (one per key, key order, some keys possibly omitted) for every group."""
    if result.num_rows == len(starts):
        return np.arange(len(starts), dtype=np.int64)
    names = list(key_names)
    groups = sorted_kv.take(pa.array(starts)).select(names)
    groups = groups.append_column(_GROUP, pa.array(np.arange(len(starts), dtype=np.int64)))
    rows = result.select(names).append_column(_ROW, pa.array(np.arange(result.num_rows, dtype=np.int64)))
    joined = groups.join(rows, keys=names, join_type="inner")
    out = np.full(len(starts), -1, dtype=np.int64)
    out[joined.column(_GROUP).to_numpy()] = joined.column(_ROW).to_numpy()
    return out


def equal_rows(
    a: pa.Table,
    a_idx: npt.NDArray[np.int64],
    b: pa.Table,
    b_idx: npt.NDArray[np.int64],
    columns: Sequence[str],
) -> npt.NDArray[np.bool_]:
    """Row-wise equality of ``a[a_idx]`` and ``b[b_idx]`` over ``columns`` (null equals null)."""
    eq = np.ones(len(a_idx), dtype=bool)
    if len(a_idx) == 0:
        return eq
    ta, tb = a.select(list(columns)).take(pa.array(a_idx)), b.select(list(columns)).take(pa.array(b_idx))
    for name in columns:
        x, y = ta.column(name).combine_chunks(), tb.column(name).combine_chunks()
        try:
            same = pc.fill_null(pc.equal(x, y), False)
            both_null = pc.and_(pc.is_null(x), pc.is_null(y))
            col_eq = pc.or_(same, both_null).to_numpy(zero_copy_only=False)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            # Nested types have no comparison kernel; compare their Python values instead.
            col_eq = np.array([p == q for p, q in zip(x.to_pylist(), y.to_pylist(), strict=True)], dtype=bool)
        eq &= col_eq.astype(bool)
    return eq


def diff_changelog(
    before: pa.Table,
    before_idx: npt.NDArray[np.int64],
    after: pa.Table,
    after_idx: npt.NDArray[np.int64],
    active: npt.NDArray[np.bool_],
    value_columns: Sequence[str],
    row_deduplicate: bool,
    inserts_only: bool = False,
) -> pa.Table | None:
    """Changelog records for the ``active`` groups, in group order (-U before +U).

    ``before_idx``/``after_idx`` give, per group, a row of ``before``/``after`` or -1. Both tables
    are KV tables (an extra ``_LEVEL`` column is dropped). None when nothing changed.
    """
    before, after = without_level(before), without_level(after)
    b_live = live_mask(before, before_idx) & active
    a_live = live_mask(after, after_idx) & active
    inserts = a_live & ~b_live
    deletes = b_live & ~a_live
    updates = b_live & a_live
    if inserts_only:
        deletes[:] = False
        updates[:] = False
    if row_deduplicate and updates.any():
        g = np.flatnonzero(updates)
        same = equal_rows(before, before_idx[g], after, after_idx[g], value_columns)
        updates[g[same]] = False
    b_groups = np.flatnonzero(deletes | updates)
    a_groups = np.flatnonzero(inserts | updates)
    if len(b_groups) + len(a_groups) == 0:
        return None
    b_kinds = np.where(deletes[b_groups], RowKind.DELETE, RowKind.UPDATE_BEFORE).astype(np.int8)
    a_kinds = np.where(inserts[a_groups], RowKind.INSERT, RowKind.UPDATE_AFTER).astype(np.int8)
    b_rows = _with_kinds(before.take(pa.array(before_idx[b_groups])), b_kinds)
    a_rows = _with_kinds(after.take(pa.array(after_idx[a_groups])), a_kinds)
    rows = pa.concat_tables([b_rows, a_rows.cast(b_rows.schema)])
    group = np.concatenate([b_groups, a_groups])
    second = np.concatenate([np.zeros(len(b_groups), np.int8), np.ones(len(a_groups), np.int8)])
    order = np.lexsort((second, group))
    return rows.take(pa.array(order))


def _with_kinds(kv: pa.Table, kinds: npt.NDArray[np.int8]) -> pa.Table:
    i = kv.schema.get_field_index(VALUE_KIND)
    return kv.set_column(i, pa.field(VALUE_KIND, pa.int8(), nullable=False), pa.array(kinds, pa.int8()))


__all__ = ["SEQUENCE_NUMBER", "align_results", "diff_changelog", "equal_rows", "live_mask"]
