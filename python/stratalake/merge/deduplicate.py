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
        pick = self.pick_rows(sorted_kv.column(VALUE_KIND).to_numpy(), starts)
        if len(pick) == n:
            return sorted_kv
        return sorted_kv.take(pick)

    def pick_rows(self, sorted_kinds: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """Positions (in merge order) of the row each key keeps, given the sorted row kinds.

        :func:`stratalake.merge.merge_kv` uses it to take every column once, for the kept rows.
        """
        n = len(sorted_kinds)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        if not self._ignore_delete:
            return group_ends(starts, n) - 1
        adds = (sorted_kinds == RowKind.INSERT) | (sorted_kinds == RowKind.UPDATE_AFTER)
        candidates = np.where(adds, np.arange(n, dtype=np.int64), -1)
        pick = np.maximum.reduceat(candidates, starts)
        return pick[pick >= 0]
