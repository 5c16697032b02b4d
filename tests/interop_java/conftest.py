"""Fixtures of the Paimon Java interop tests.

Every Spark test here shares tests/spark's session (``spark``, over the session-scoped
``warehouse``): ``SparkSession.builder.getOrCreate()`` returns a running session as it is, so a
second session with its own warehouse would silently get the first one's catalog.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.spark import conftest as spark_fixtures

warehouse = spark_fixtures.warehouse
spark = spark_fixtures.spark


@pytest.fixture
def spark_lake(spark: Any, warehouse: Path) -> tuple[Any, str]:
    """The shared SparkSession and the warehouse of its catalog ``lake``; tests name their own
    databases, since the warehouse holds every Spark test's tables of this run."""
    return spark, str(warehouse)
