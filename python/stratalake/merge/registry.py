"""The engine registry behind :func:`stratalake.merge.create_merge_function`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stratalake.merge.aggregation import AggregateMergeFunction
from stratalake.merge.context import MergeContext
from stratalake.merge.deduplicate import DeduplicateMergeFunction
from stratalake.merge.first_row import FirstRowMergeFunction
from stratalake.merge.partial_update import PartialUpdateMergeFunction
from stratalake.options import MergeEngine

if TYPE_CHECKING:
    from stratalake.merge import MergeFunction


def create(ctx: MergeContext) -> MergeFunction:
    engine = ctx.options.merge_engine
    if engine is MergeEngine.PARTIAL_UPDATE:
        return PartialUpdateMergeFunction(ctx)
    if engine is MergeEngine.AGGREGATE:
        return AggregateMergeFunction(ctx)
    if engine is MergeEngine.FIRST_ROW:
        return FirstRowMergeFunction(ctx)
    return DeduplicateMergeFunction(ctx)
