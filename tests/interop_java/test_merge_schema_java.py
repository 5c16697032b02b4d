"""Apache Paimon's Java readers read a table whose schema a Spark write evolved
(``write.merge-schema``): the added column, NULL in the rows written before, and the old snapshot
in its own columns.

Run by ``make test-paimon-java``; needs a Spark session (``conftest.py``'s).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.interop_java.paimon_java import RELEASES, read_tables

pytestmark = [pytest.mark.paimon_java, pytest.mark.spark]


@pytest.mark.parametrize("release", [RELEASES[0], RELEASES[-1]])
def test_paimon_java_reads_a_table_a_spark_write_evolved(spark: Any, warehouse: Any, release: str) -> None:
    database = "merge_schema_" + release.replace(".", "_")
    t = f"lake.{database}.t"
    spark.sql(f"CREATE DATABASE lake.{database}")
    spark.sql(
        f"CREATE TABLE {t} (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) TBLPROPERTIES ('bucket' = '2')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    df = spark.sql("SELECT 2L AS k, 20 AS n, 'B' AS v UNION ALL SELECT 3L, 30, 'c'")
    df.writeTo(t).option("write.merge-schema", "true").append()
    assert spark.table(t).columns == ["k", "v", "n"]
    got = read_tables(release, str(warehouse), [f"{database}.t", f"{database}.t@scan.snapshot-id=1"])
    assert got[f"{database}.t"] == [("1", "a", "null"), ("2", "B", "20"), ("3", "c", "30")]
    assert got[f"{database}.t@scan.snapshot-id=1"] == [("1", "a"), ("2", "b")]
