"""``merge-engine = first-row``: the oldest record of a key is kept, later ones are ignored."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from stratalake.exceptions import MergeError
from stratalake.merge.context import MergeContext
from stratalake.merge.field_options import ignore_delete
from stratalake.merge.kernels import Groups, first_where, kinds_of, retract_mask


class FirstRowMergeFunction:
    """Keeps each key's first +I/+U row, with its own sequence number, so a later merge of the
    result still sees it first. -U/-D rows are an error unless ``ignore-delete`` skips them."""

    def __init__(self, ctx: MergeContext) -> None:
        self._ctx = ctx
        self._ignore_delete = ignore_delete(ctx)

    def merge(self, sorted_kv: pa.Table, starts: np.ndarray) -> pa.Table:
        n = sorted_kv.num_rows
        if n == 0:
            return sorted_kv
        retract = retract_mask(kinds_of(sorted_kv))
        if retract.any() and not self._ignore_delete:
            raise MergeError(
                f"table {self._ctx.table_name}: the first-row merge engine cannot accept -U/-D "
                "records; set 'ignore-delete'='true' to skip them"
            )
        if len(starts) == n and not retract.any():
            return sorted_kv
        pick = first_where(~retract, Groups(starts, n))
        return sorted_kv.take(pa.array(pick[pick >= 0]))
