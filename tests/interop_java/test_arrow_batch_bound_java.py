"""Paimon's Java reader reads tables that Spark tasks wrote with Spark's per-row Arrow byte check
lifted for stratalake's writers (the shim's ``write/ArrowBatchBound``): one of fixed-width columns,
and one of long strings whose batches the shim ended early with padding rows. Each first into the
empty table, then into the table that holds data (the lookup changelog reads the old rows, deletion
vectors mask them).

Run by ``make test-paimon-java`` (marker ``paimon_java``); the jars are fetched by Maven on first use.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.interop_java.paimon_java import RELEASES, read_tables

pytestmark = pytest.mark.paimon_java


def test_paimon_java_reads_what_the_lifted_writers_wrote(spark_lake: tuple[Any, str]) -> None:
    spark, wh = spark_lake
    bound = spark._jvm.org.stratalake.spark.write.ArrowBatchBound
    name, t = "java_arrow_bound.nums", "lake.java_arrow_bound.nums"
    spark.sql("CREATE DATABASE IF NOT EXISTS lake.java_arrow_bound")
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, n INT, v DOUBLE, PRIMARY KEY (id) NOT ENFORCED) WITH "
        "('bucket' = '2', 'changelog-producer' = 'lookup', 'deletion-vectors.enabled' = 'true')"
    )
    before = bound.liftedWriters()
    spark.sql(f"INSERT INTO {t} SELECT id, CAST(id % 7 AS INT), id * 0.5 FROM range(0, 6000, 1, 4)")
    spark.sql(f"INSERT INTO {t} SELECT id, -1, -1.0 FROM range(0, 6000, 3, 4)")
    assert bound.liftedWriters() - before >= 2  # both statements' writers built without the check
    expected = sorted(
        (str(i), "-1", "-1.0") if i % 3 == 0 else (str(i), str(i % 7), str(i * 0.5)) for i in range(6000)
    )
    ours = sorted((str(i), str(n), str(v)) for i, n, v in spark.sql(f"SELECT id, n, v FROM {t}").collect())
    assert ours == expected
    assert read_tables(RELEASES[-1], wh, [name])[name] == expected


def test_paimon_java_reads_what_the_padded_writers_wrote(spark_lake: tuple[Any, str]) -> None:
    """Strings of 1-12 KB in batches of at most 256 KiB: the writers' batches end early with rows of
    nulls, which they drop; Paimon's reader sees only the real rows."""
    spark, wh = spark_lake
    bound = spark._jvm.org.stratalake.spark.write.ArrowBatchBound
    name, t = "java_arrow_bound.wide", "lake.java_arrow_bound.wide"
    spark.sql("CREATE DATABASE IF NOT EXISTS lake.java_arrow_bound")
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, s STRING, n INT, PRIMARY KEY (id) NOT ENFORCED) WITH "
        "('bucket' = '2', 'changelog-producer' = 'lookup', 'deletion-vectors.enabled' = 'true')"
    )
    caps = {
        "spark.sql.execution.arrow.maxRecordsPerBatch": "1000",
        "spark.sql.execution.arrow.maxBytesPerBatch": str(256 * 1024),
    }
    saved = {k: spark.conf.get(k) for k in caps}
    for k, v in caps.items():
        spark.conf.set(k, v)
    try:
        before = bound.paddingRows()
        spark.sql(
            f"INSERT INTO {t} SELECT id, repeat(char(65 + id % 26), 1000 + (id * 7919) % 11000), "
            "CAST(id % 7 AS INT) FROM range(0, 3000, 1, 4)"
        )
        spark.sql(f"INSERT INTO {t} SELECT id, repeat('z', 5000 - id), -1 FROM range(0, 3000, 3, 4)")
        assert bound.paddingRows() - before > 1000  # both statements' batches were ended early
    finally:
        for k, v in saved.items():
            spark.conf.set(k, v)

    def wanted(i: int) -> tuple[str, str, str]:
        if i % 3 == 0:
            return (str(i), "z" * (5000 - i), "-1")
        return (str(i), chr(65 + i % 26) * (1000 + (i * 7919) % 11000), str(i % 7))

    expected = sorted(wanted(i) for i in range(3000))
    ours = sorted((str(i), s, str(n)) for i, s, n in spark.sql(f"SELECT id, s, n FROM {t}").collect())
    assert ours == expected
    assert read_tables(RELEASES[-1], wh, [name])[name] == expected
