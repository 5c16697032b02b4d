"""Field aggregators of the ``aggregation`` engine (and of partial-update sequence groups).

``fields.<col>.aggregate-function`` names one of :data:`AGGREGATORS`; each is a vectorized
:class:`FieldAggregator` over all key groups of a sorted KV table at once.
"""

from __future__ import annotations

from stratalake.exceptions import InvalidOptionError
from stratalake.merge.aggregators.base import FieldAggregator
from stratalake.merge.aggregators.collections import Collect, ListAgg, MergeMap
from stratalake.merge.aggregators.numeric import BoolAnd, BoolOr, Count, Max, Min, Product, Sum
from stratalake.merge.aggregators.values import (
    FirstNonNullValue,
    FirstValue,
    LastNonNullValue,
    LastValue,
    PrimaryKeyValue,
)
from stratalake.merge.context import MergeContext

AGGREGATORS: dict[str, type[FieldAggregator]] = {
    cls.name: cls
    for cls in (
        Sum,
        Product,
        Count,
        Min,
        Max,
        LastValue,
        LastNonNullValue,
        FirstValue,
        FirstNonNullValue,
        ListAgg,
        BoolAnd,
        BoolOr,
        Collect,
        MergeMap,
    )
}
ALIASES = {"first_not_null_value": "first_non_null_value"}


def canonical_name(name: str) -> str:
    low = name.strip().lower()
    return ALIASES.get(low, low)


def aggregator_class(name: str) -> type[FieldAggregator] | None:
    return AGGREGATORS.get(canonical_name(name))


def create_aggregator(name: str, column: str, ctx: MergeContext) -> FieldAggregator:
    """The aggregator called ``name`` for ``column`` (names are checked by validation first)."""
    cls = aggregator_class(name)
    if cls is None:
        raise InvalidOptionError(
            f"table {ctx.table_name}: column '{column}' has unknown aggregate function '{name}'; "
            f"use one of {', '.join(sorted(AGGREGATORS))}"
        )
    return cls(column, ctx)


__all__ = [
    "AGGREGATORS",
    "FieldAggregator",
    "PrimaryKeyValue",
    "aggregator_class",
    "canonical_name",
    "create_aggregator",
]
