"""The vectorized field-aggregator interface (Paimon's ``FieldAggregator``, one call per column)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import pyarrow as pa

from stratalake.merge.context import MergeContext
from stratalake.merge.kernels import Groups
from stratalake.types import DataType


class FieldAggregator(ABC):
    """Aggregates one column over every key group at once.

    ``aggregate`` sees the whole sorted column; ``use`` selects the rows that take part (in row
    order, the merge order) and ``retract`` marks -U/-D rows among them, which only retractable
    functions receive. It returns one value per group, null for a group with no usable value.
    """

    name: ClassVar[str]
    retractable: ClassVar[bool] = False

    def __init__(self, column: str, ctx: MergeContext) -> None:
        self.column = column
        self.ctx = ctx

    @classmethod
    def type_error(cls, dtype: DataType) -> str | None:
        """Why ``dtype`` cannot be aggregated by this function, or None if it can."""
        return None

    @abstractmethod
    def aggregate(self, values: pa.Array, groups: Groups, use: np.ndarray, retract: np.ndarray) -> pa.Array:
        """One aggregated value per group, of ``values.type``."""
