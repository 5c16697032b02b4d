"""The engine registry behind :func:`stratalake.merge.create_merge_function`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stratalake.exceptions import UnsupportedError
from stratalake.merge.context import MergeContext
from stratalake.merge.deduplicate import DeduplicateMergeFunction
from stratalake.options import MergeEngine

if TYPE_CHECKING:
    from stratalake.merge import MergeFunction


def create(ctx: MergeContext) -> MergeFunction:
    engine = ctx.options.merge_engine
    if engine is MergeEngine.DEDUPLICATE:
        return DeduplicateMergeFunction(ctx)
    raise UnsupportedError(f"table {ctx.table_name}: merge-engine '{engine.value}' is not available yet")
