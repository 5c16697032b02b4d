"""Fixtures of the Paimon Java interop tests."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.spark.conftest import _build_jar_if_missing


@pytest.fixture(scope="module")
def spark_lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    """A SparkSession whose catalog ``lake`` is a fresh warehouse (tests/spark's session is not
    shared with this folder)."""
    _build_jar_if_missing()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    # Deferred: pyspark starts a JVM, which only this test needs.
    from pyspark.sql import SparkSession

    from stratalake.spark import configure

    wh = str(tmp_path_factory.mktemp("wh"))
    session = configure(SparkSession.builder.master("local[2]"), wh).getOrCreate()
    session.sparkContext.setLogLevel("OFF")
    yield session, wh
    session.stop()
