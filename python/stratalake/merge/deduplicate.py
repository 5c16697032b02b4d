"""``merge-engine = deduplicate`` (default): the last record of a key wins; a delete removes it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from stratalake.merge.context import VALUE_KIND, MergeContext, RowKind
from stratalake.merge.field_options import ignore_delete
from stratalake.merge.sort import group_ends


class DeduplicateMergeFunction:
    """Keeps the newest row per key; with ``ignore-delete``, retractions are skipped."""

    def __init__(self, ctx: MergeContext) -> None:
        self._ignore_delete = ignore_delete(ctx)

    def merge(self, sorted_kv: pa.Table, starts: np.ndarray) -> pa.Table:
        n = sorted_kv.num_rows
        if n == 0:
            return sorted_kv
        ends = group_ends(starts, n)
        if not self._ignore_delete:
            pick = ends - 1
        else:
            kinds = sorted_kv.column(VALUE_KIND).to_numpy()
            adds = (kinds == RowKind.INSERT) | (kinds == RowKind.UPDATE_AFTER)
            candidates = np.where(adds, np.arange(n, dtype=np.int64), -1)
            pick = np.maximum.reduceat(candidates, starts)
            pick = pick[pick >= 0]
        if len(pick) == n:
            return sorted_kv
        return sorted_kv.take(pick)
