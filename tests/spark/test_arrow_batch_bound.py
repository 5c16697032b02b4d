"""Spark's per-row byte check of the Arrow batches it sends to stratalake's Python writers is
skipped only where the write's rows cannot reach the byte cap (the shim's
``write/ArrowBatchBound.java``); every other Arrow transfer keeps it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.interop.paimon_oracle import paimon_read
from tests.spark.test_catalyst import conf

pytestmark = pytest.mark.spark

MAX_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch"


def _bound(spark: Any) -> Any:
    return spark._jvm.org.stratalake.spark.write.ArrowBatchBound


def _schema(spark: Any, ddl: str) -> Any:
    return spark._jvm.org.apache.spark.sql.types.StructType.fromDDL(ddl)


def _sql_conf(spark: Any) -> Any:
    return spark._jsparkSession.sessionState().conf()


def test_the_widest_row_counts_each_fixed_width_value_and_its_validity(spark: Any) -> None:
    bound = _bound(spark)
    ddl = "id BIGINT, n INT, f DOUBLE, d DATE, t TIMESTAMP, x DECIMAL(20, 2), ok BOOLEAN, s SMALLINT"
    assert bound.rowBytes(_schema(spark, ddl)) == 9 + 5 + 9 + 5 + 9 + 17 + 2 + 3
    for column in ("s STRING", "b BINARY", "a ARRAY<INT>", "m MAP<INT, INT>", "r STRUCT<x: INT>"):
        assert bound.rowBytes(_schema(spark, f"id BIGINT, {column}")) == -1, column


def test_the_check_is_redundant_only_while_the_row_cap_keeps_batches_under_the_byte_cap(spark: Any) -> None:
    bound, numbers = _bound(spark), _schema(spark, "id BIGINT, p INT")  # 9 + 5 bytes a row
    at_cap = str(2 * 14 * 10_000)  # the row cap times the widest row, doubled for the vectors' rounding
    cases = [
        ({"maxRecordsPerBatch": "10000", "maxBytesPerBatch": at_cap}, True),
        ({"maxRecordsPerBatch": "10000", "maxBytesPerBatch": str(int(at_cap) - 1)}, False),
        ({"maxRecordsPerBatch": "0", "maxBytesPerBatch": at_cap}, False),  # no row cap
        ({"maxRecordsPerBatch": "10000", "maxBytesPerBatch": "2147483647"}, False),  # already off
    ]
    for settings, redundant in cases:
        with conf(spark, **{f"spark__sql__execution__arrow__{k}": v for k, v in settings.items()}):
            assert bound.redundant(numbers, _sql_conf(spark)) is redundant, settings
            assert not bound.redundant(_schema(spark, "id BIGINT, s STRING"), _sql_conf(spark))


def test_writes_of_fixed_width_rows_lift_the_check_and_writes_of_strings_keep_it(
    four_tasks: Any, db: str, warehouse: Path
) -> None:
    spark, bound = four_tasks, _bound(four_tasks)
    options = "PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2', 'changelog-producer' = 'lookup')"
    spark.sql(f"CREATE TABLE {db}.nums (id BIGINT, v DOUBLE, {options}")
    spark.sql(f"CREATE TABLE {db}.strs (id BIGINT, v STRING, {options}")
    session_value = spark.conf.get(MAX_BYTES)
    before = bound.liftedWriters()
    spark.range(50_000).selectExpr("id", "id * 0.5 AS v").writeTo(f"{db}.nums").append()
    lifted = bound.liftedWriters() - before
    assert lifted >= 1  # one per task writing the table's two buckets
    spark.range(50_000).selectExpr("id", "cast(id AS string) AS v").writeTo(f"{db}.strs").append()
    assert bound.liftedWriters() - before == lifted
    assert spark.conf.get(MAX_BYTES) == session_value
    assert spark.sql(f"SELECT count(*), sum(v) FROM {db}.nums").collect()[0] == (
        50_000,
        0.5 * 49_999 * 50_000 / 2,
    )
    assert spark.sql(f"SELECT count(*), max(v) FROM {db}.strs").collect()[0] == (50_000, "9999")
    # Into the table that now holds data: every other key again (its lookup changelog reads the
    # old rows), in 4 tasks; pypaimon reads what the lifted writers wrote.
    before = bound.liftedWriters()
    spark.range(0, 50_000, 2).selectExpr("id", "-1.0 AS v").writeTo(f"{db}.nums").append()
    assert bound.liftedWriters() - before >= 1
    rows = paimon_read(warehouse, f"{db.split('.')[1]}.nums").sort_by("id")
    assert rows.num_rows == 50_000
    expected = [-1.0 if i % 2 == 0 else i * 0.5 for i in range(50_000)]
    assert rows.column("v").to_pylist() == expected


def test_an_arrow_udf_feeding_the_writer_in_the_same_task_keeps_the_check(spark: Any, db: str) -> None:
    """An append table written by Python (Spark's Parquet writer off) takes its rows in the task
    that computes them, so the Arrow UDF computing them runs next to the writer. Its batches of
    ~1 KB rows must still be cut at the byte cap (~1,000 rows), not at the row cap (10,000)."""
    bound = _bound(spark)

    def batch_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            sizes = pa.array([b.num_rows] * b.num_rows, pa.int64())
            yield pa.RecordBatch.from_arrays([b.column("id"), sizes], names=["id", "n"])

    settings = {
        "stratalake__write__native__enabled": "false",
        "spark__sql__execution__arrow__maxRecordsPerBatch": "10000",
        "spark__sql__execution__arrow__maxBytesPerBatch": str(2**20),
    }
    with conf(spark, **settings):
        spark.sql(f"CREATE TABLE {db}.sizes (id BIGINT, n BIGINT)")  # 18 bytes a row: lifted
        before = bound.liftedWriters()
        src = spark.range(0, 40_000, 1, 2).selectExpr("id", "repeat('x', 1000) AS s")
        src.mapInArrow(batch_rows, "id BIGINT, n BIGINT").writeTo(f"{db}.sizes").append()
        assert bound.liftedWriters() - before == 2
    count, largest = spark.sql(f"SELECT count(*), max(n) FROM {db}.sizes").collect()[0]
    assert count == 40_000
    assert 500 <= largest <= 1_100, largest
