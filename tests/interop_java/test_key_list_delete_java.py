"""A DELETE by a key list (``table/key_delete.py``: the table checks the listed keys, Spark does
not scan it) on a key table Paimon's Java writer created and filled with its defaults but 4 fixed
buckets, and on one with Paimon's lookup changelog and deletion vectors; Spark and Paimon's Java
reader read the same rows.

Run by ``make test-paimon-java`` (marker ``paimon_java``); the jars are fetched by Maven on first use.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.interop_java.paimon_java import RELEASES, read_tables, write_table

pytestmark = pytest.mark.paimon_java

DB = "java_key_list_delete"


def _spark_rows(spark: Any, t: str) -> list[tuple[str, ...]]:
    return sorted(tuple("null" if x is None else str(x) for x in r) for r in spark.sql(f"SELECT * FROM {t}").collect())


@pytest.mark.parametrize(
    "options",
    [{"bucket": "4"}, {"bucket": "4", "changelog-producer": "lookup", "deletion-vectors.enabled": "true"}],
    ids=["defaults", "lookup-dv"],
)
def test_a_key_list_delete_on_a_table_paimon_java_wrote(spark_lake: tuple[Any, str], options: dict[str, str]) -> None:
    spark, wh = spark_lake
    spark.sql(f"CREATE DATABASE IF NOT EXISTS lake.{DB}")
    name = f"{DB}.t_{len(options)}"
    write_table(RELEASES[-1], wh, name, True, range(0, 3000), "j", options)
    # Every fifth id up to 4995: half of them are not in the table.
    delete = f"DELETE FROM lake.{name} WHERE id IN (SELECT id * 5 FROM range(1000))"
    assert "BatchScan" not in spark.sql(f"EXPLAIN {delete}").collect()[0][0]
    spark.sql(delete)
    expected = sorted((str(i), "null" if i % 7 == 0 else f"j{i}") for i in range(3000) if i % 5)
    assert _spark_rows(spark, f"lake.{name}") == expected
    assert read_tables(RELEASES[-1], wh, [name])[name] == expected
