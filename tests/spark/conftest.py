"""One SparkSession for every Spark test (starting one costs ~6 s), via stratalake.spark.configure."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
JAR = ROOT / "python" / "stratalake" / "jars" / "stratalake-spark-shim.jar"


def _build_jar_if_missing() -> None:
    if not JAR.exists():
        subprocess.run(["bash", str(ROOT / "jvm-shim" / "build.sh"), sys.executable], check=True)


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="session")
def spark(warehouse: Path) -> Iterator[object]:
    _build_jar_if_missing()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from stratalake.spark import configure

    builder = SparkSession.builder.master("local[2]").appName("stratalake-tests")
    session = configure(builder, str(warehouse)).getOrCreate()
    session.sparkContext.setLogLevel("OFF")
    yield session
    session.stop()


_counter = itertools.count()


@pytest.fixture
def db(spark: object) -> str:
    """A fresh database per test, so tests never see each other's tables."""
    name = f"t{next(_counter)}"
    spark.sql(f"CREATE DATABASE lake.{name}")  # type: ignore[attr-defined]
    return f"lake.{name}"


#: shuffle partitions of ``four_tasks``: Spark's number of assigner slices for dynamic-bucket writes
ASSIGNERS = 4


@pytest.fixture
def four_tasks(spark: Any) -> Iterator[Any]:
    """4 shuffle partitions, AQE on but kept from merging a test-sized write's tasks into one."""
    settings = {
        "spark.sql.shuffle.partitions": str(ASSIGNERS),
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.minPartitionSize": "1k",
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": "16k",
    }
    saved = {k: spark.conf.get(k) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    yield spark
    for k, v in saved.items():
        spark.conf.set(k, v)
