"""Paimon's Java reader reads tables that Spark tasks wrote with Spark's per-row Arrow byte check
lifted for stratalake's writers (the shim's ``write/ArrowBatchBound``): one of fixed-width columns,
and one of long strings whose batches the shim ended early with padding rows. Each first into the
empty table, then into the table that holds data (the lookup changelog reads the old rows, deletion
vectors mask them). And a table Paimon's Java writer made with its defaults but 4 fixed buckets, into
which the padded writers write.

Run by ``make test-paimon-java`` (marker ``paimon_java``); the jars are fetched by Maven on first use.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.interop_java.paimon_java import RELEASES, read_tables, write_table
from tests.spark.test_catalyst import conf

pytestmark = pytest.mark.paimon_java


DB = "java_arrow_bound"
OPTIONS = "('bucket' = '2', 'changelog-producer' = 'lookup', 'deletion-vectors.enabled' = 'true')"
# Strings of 1-12 KB in batches of at most 256 KiB: the writers' batches end early with padding rows.
WIDE_CAPS = {
    "spark__sql__execution__arrow__maxRecordsPerBatch": "1000",
    "spark__sql__execution__arrow__maxBytesPerBatch": str(256 * 1024),
}
WIDE_S = "repeat(char(65 + id % 26), 1000 + (id * 7919) % 11000)"


def _wide(i: int) -> str:
    return chr(65 + i % 26) * (1000 + (i * 7919) % 11000)


def _key_table(spark: Any, name: str, columns: str) -> str:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS lake.{DB}")
    spark.sql(f"CREATE TABLE lake.{DB}.{name} ({columns}, PRIMARY KEY (id) NOT ENFORCED) WITH {OPTIONS}")
    return f"lake.{DB}.{name}"


def _spark_rows(spark: Any, t: str) -> list[tuple[str, ...]]:
    return sorted(tuple("null" if x is None else str(x) for x in r) for r in spark.sql(f"SELECT * FROM {t}").collect())


def test_paimon_java_reads_what_the_lifted_writers_wrote(spark_lake: tuple[Any, str]) -> None:
    spark, wh = spark_lake
    bound = spark._jvm.org.stratalake.spark.write.ArrowBatchBound
    t = _key_table(spark, "nums", "id BIGINT, n INT, v DOUBLE")
    before = bound.liftedWriters()
    spark.sql(f"INSERT INTO {t} SELECT id, CAST(id % 7 AS INT), id * 0.5 FROM range(0, 6000, 1, 4)")
    spark.sql(f"INSERT INTO {t} SELECT id, -1, -1.0 FROM range(0, 6000, 3, 4)")
    assert bound.liftedWriters() - before >= 2  # both statements' writers built without the check
    expected = sorted(
        (str(i), "-1", "-1.0") if i % 3 == 0 else (str(i), str(i % 7), str(i * 0.5)) for i in range(6000)
    )
    assert _spark_rows(spark, t) == expected
    assert read_tables(RELEASES[-1], wh, [f"{DB}.nums"])[f"{DB}.nums"] == expected


def test_paimon_java_reads_what_the_padded_writers_wrote(spark_lake: tuple[Any, str]) -> None:
    """Paimon's reader sees only the real rows of batches the writers ended early."""
    spark, wh = spark_lake
    bound = spark._jvm.org.stratalake.spark.write.ArrowBatchBound
    t = _key_table(spark, "wide", "id BIGINT, s STRING, n INT")
    with conf(spark, **WIDE_CAPS):
        before = bound.paddingRows()
        spark.sql(f"INSERT INTO {t} SELECT id, {WIDE_S}, CAST(id % 7 AS INT) FROM range(0, 3000, 1, 4)")
        spark.sql(f"INSERT INTO {t} SELECT id, repeat('z', 5000 - id), -1 FROM range(0, 3000, 3, 4)")
        assert bound.paddingRows() - before > 1000  # both statements' batches were ended early

    def wanted(i: int) -> tuple[str, str, str]:
        return (str(i), "z" * (5000 - i), "-1") if i % 3 == 0 else (str(i), _wide(i), str(i % 7))

    expected = sorted(wanted(i) for i in range(3000))
    assert _spark_rows(spark, t) == expected
    assert read_tables(RELEASES[-1], wh, [f"{DB}.wide"])[f"{DB}.wide"] == expected


def test_padded_writers_write_into_a_table_paimon_java_made_with_its_defaults(
    spark_lake: tuple[Any, str],
) -> None:
    """Paimon 1.3.1 creates and fills a key table with its defaults but a fixed bucket count (its
    batch writer takes no dynamic buckets); Spark's tasks write every other key again with long
    strings, their batches ended early; both read the result."""
    spark, wh = spark_lake
    bound = spark._jvm.org.stratalake.spark.write.ArrowBatchBound
    name = f"{DB}.java_defaults"
    write_table(RELEASES[-1], wh, name, True, range(0, 3000), "j", {"bucket": "4"})
    with conf(spark, **WIDE_CAPS):
        before = bound.paddingRows()
        spark.sql(f"INSERT INTO lake.{name} SELECT id, {WIDE_S} FROM range(0, 3000, 2, 4)")
        assert bound.paddingRows() - before > 100

    def wanted(i: int) -> tuple[str, str]:
        return (str(i), _wide(i) if i % 2 == 0 else ("null" if i % 7 == 0 else f"j{i}"))

    expected = sorted(wanted(i) for i in range(3000))
    assert _spark_rows(spark, f"lake.{name}") == expected
    assert read_tables(RELEASES[-1], wh, [name])[name] == expected
