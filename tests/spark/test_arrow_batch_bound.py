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


def test_writes_of_key_tables_lift_the_check_and_other_writes_keep_it(
    four_tasks: Any, db: str, warehouse: Path
) -> None:
    spark, bound = four_tasks, _bound(four_tasks)
    options = "PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2', 'changelog-producer' = 'lookup')"
    spark.sql(f"CREATE TABLE {db}.nums (id BIGINT, v DOUBLE, {options}")
    spark.sql(f"CREATE TABLE {db}.strs (id BIGINT, v STRING, {options}")
    spark.sql(f"CREATE TABLE {db}.lists (id BIGINT, v ARRAY<INT>, {options}")
    session_value = spark.conf.get(MAX_BYTES)
    before, padding = bound.liftedWriters(), bound.paddingRows()
    spark.range(50_000).selectExpr("id", "id * 0.5 AS v").writeTo(f"{db}.nums").append()
    lifted = bound.liftedWriters() - before
    assert lifted >= 1  # one per task writing the table's two buckets
    spark.range(50_000).selectExpr("id", "cast(id AS string) AS v").writeTo(f"{db}.strs").append()
    assert bound.liftedWriters() - before > lifted  # strings too: no batch nears the cap, no padding
    assert bound.paddingRows() == padding
    lifted = bound.liftedWriters() - before
    spark.range(1_000).selectExpr("id", "array(cast(id AS int)) AS v").writeTo(f"{db}.lists").append()
    assert bound.liftedWriters() - before == lifted  # nested columns keep Spark's check
    with conf(spark, stratalake__write__native__enabled="false"):
        spark.sql(f"CREATE TABLE {db}.log (id BIGINT, v STRING)")  # no key to mark padding by
        spark.range(1_000).selectExpr("id", "cast(id AS string) AS v").writeTo(f"{db}.log").append()
    assert bound.liftedWriters() - before == lifted
    assert spark.conf.get(MAX_BYTES) == session_value
    assert spark.sql(f"SELECT count(*), sum(v) FROM {db}.nums").collect()[0] == (
        50_000,
        0.5 * 49_999 * 50_000 / 2,
    )
    assert spark.sql(f"SELECT count(*), max(v) FROM {db}.strs").collect()[0] == (50_000, "9999")
    assert spark.sql(f"SELECT count(*), sum(v[0]) FROM {db}.lists").collect()[0] == (1_000, 499_500)
    assert spark.sql(f"SELECT count(*), max(v) FROM {db}.log").collect()[0] == (1_000, "999")
    # Into the table that now holds data: every other key again (its lookup changelog reads the
    # old rows), in 4 tasks; pypaimon reads what the lifted writers wrote.
    before = bound.liftedWriters()
    spark.range(0, 50_000, 2).selectExpr("id", "-1.0 AS v").writeTo(f"{db}.nums").append()
    assert bound.liftedWriters() - before >= 1
    rows = paimon_read(warehouse, f"{db.split('.')[1]}.nums").sort_by("id")
    assert rows.num_rows == 50_000
    expected = [-1.0 if i % 2 == 0 else i * 0.5 for i in range(50_000)]
    assert rows.column("v").to_pylist() == expected


# Rows of 1-31 KB (a string's length varies with the key), batches of at most 1,000 rows and 1 MiB:
# without Spark's check a batch of these rows would hold ~16 MB.
_WIDE = {
    "spark__sql__execution__arrow__maxRecordsPerBatch": "1000",
    "spark__sql__execution__arrow__maxBytesPerBatch": str(2**20),
}
_WIDE_ROWS = ("id", "repeat(char(65 + id % 26), 1000 + (id * 7919) % 30000) AS s", "cast(id % 7 AS int) AS n")


def test_batches_that_would_pass_the_byte_cap_end_early_and_python_drops_the_padding(
    four_tasks: Any, db: str, warehouse: Path
) -> None:
    spark, bound = four_tasks, _bound(four_tasks)
    spark.sql(
        f"CREATE TABLE {db}.wide (id BIGINT, s STRING, n INT, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('bucket' = '2', 'changelog-producer' = 'lookup', 'deletion-vectors.enabled' = 'true')"
    )
    src = spark.range(2_000).selectExpr(*_WIDE_ROWS)
    summary = ("count(*)", "sum(length(s))", "sum(crc32(s))", "sum(n)")
    expected = src.selectExpr(*summary).collect()[0]
    with conf(spark, **_WIDE):
        before, padding = bound.liftedWriters(), bound.paddingRows()
        src.writeTo(f"{db}.wide").append()
        assert bound.liftedWriters() - before >= 1
        assert bound.paddingRows() - padding > 10_000  # ~32 MB in batches of at most 1 MiB
        assert spark.sql(f"SELECT {', '.join(summary)} FROM {db}.wide").collect()[0] == expected
        # Into the table that holds data: every third key again, shorter (its lookup changelog and
        # deletion vectors read the old rows).
        again = spark.range(0, 2_000, 3).selectExpr("id", "repeat('z', 20000 - id) AS s", "-1 AS n")
        again.writeTo(f"{db}.wide").append()

    def wanted(i: int) -> tuple[int, str, int]:
        return (i, "z" * (20000 - i), -1) if i % 3 == 0 else (i, chr(65 + i % 26) * (1000 + (i * 7919) % 30000), i % 7)

    model = [wanted(i) for i in range(2_000)]
    assert [tuple(r) for r in spark.sql(f"SELECT id, s, n FROM {db}.wide ORDER BY id").collect()] == model
    rows = paimon_read(warehouse, f"{db.split('.')[1]}.wide").sort_by("id")
    assert list(zip(*(rows.column(c).to_pylist() for c in ("id", "s", "n")), strict=True)) == model


def test_padded_batches_hold_the_byte_cap_by_sparks_own_measure(spark: Any) -> None:
    """The rows of the padded iterator written with Spark's own ArrowWriter in batches of the row
    cap, as Spark's runner cuts them without its check: each batch's size by the measure of Spark's
    check stays within the byte cap, the real rows come in order, and a batch is cut only when the
    next row would not fit."""
    jvm, bound = spark._jvm, _bound(spark)
    max_records, max_bytes = 100, 64 * 1024
    df = spark.range(600).selectExpr("id", "repeat('q', 100 + (id * 7919) % 3000) AS s")
    schema = df._jdf.schema()
    with conf(
        spark,
        spark__sql__execution__arrow__maxRecordsPerBatch=str(max_records),
        spark__sql__execution__arrow__maxBytesPerBatch=str(max_bytes),
    ):
        plan = bound.plan(schema, _sql_conf(spark), 0, "t")
    assert plan.padded()
    rows = jvm.scala.jdk.javaapi.CollectionConverters.asJava(
        df._jdf.queryExecution().executedPlan().executeToIterator()
    )
    padded = bound.padded(rows, plan, max_records, max_bytes)
    writer = jvm.org.apache.spark.sql.execution.arrow.ArrowWriter.create(schema, "UTC", False, False)
    sizes, ids, in_batch, real = [], [], 0, 0
    while padded.hasNext():
        row = padded.next()
        writer.write(row)
        in_batch += 1
        if not row.isNullAt(0):
            ids.append(row.getLong(0))
            real += 1
        if in_batch == max_records or not padded.hasNext():
            sizes.append((writer.sizeInBytes(), real))
            writer.reset()
            in_batch = real = 0
    assert ids == list(range(600))
    assert all(size <= max_bytes for size, _ in sizes), sizes
    # Cut only where the next row would not fit: each full batch but the last is over half full.
    assert all(size > max_bytes // 2 for size, _ in sizes[:-1]), sizes
    assert bound.plan(schema, _sql_conf(spark), -1, "t") is None  # no marker column: Spark's check


def test_a_null_in_the_marker_column_is_refused_not_dropped(spark: Any) -> None:
    jvm, bound = spark._jvm, _bound(spark)
    df = spark.sql("SELECT CAST(NULL AS BIGINT) AS id, 'x' AS s")
    plan = bound.plan(df._jdf.schema(), _sql_conf(spark), 0, "db.t")
    rows = jvm.scala.jdk.javaapi.CollectionConverters.asJava(
        df._jdf.queryExecution().executedPlan().executeToIterator()
    )
    with pytest.raises(Exception, match=r"table db\.t: primary-key column 'id' has a null value"):
        bound.padded(rows, plan, 10_000, 64 * 2**20).next()


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
