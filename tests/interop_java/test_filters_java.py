"""Spark filters over a table Paimon Java wrote with its defaults: whichever filters the shim asks
Python to classify (partition and key columns) or keeps in Spark's plan without asking (value
columns), the rows are those Paimon Java reads, filtered.

Run by ``make test-paimon-java`` (marker ``paimon_java``); the jars are fetched by Maven on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.interop_java.paimon_java import RELEASES, read_tables, write_table

pytestmark = [pytest.mark.paimon_java, pytest.mark.spark]

Row = tuple[str, ...]  # id, v, dt, h as Paimon Java prints them

FILTERS: list[tuple[str, Callable[[Row], bool]]] = [
    ("id = 13", lambda r: r[0] == "13"),
    ("dt = '2026-11-01'", lambda r: r[2] == "2026-11-01"),
    ("v = 'k25'", lambda r: r[1] == "k25"),
    ("dt = '2026-11-02' OR id = 5", lambda r: r[2] == "2026-11-02" or r[0] == "5"),
    ("h = 1 AND v LIKE 'k3%'", lambda r: r[3] == "1" and r[1].startswith("k3")),
]


@pytest.mark.parametrize("native", ["true", "false"])
@pytest.mark.parametrize("vectors", [False, True])
def test_filters_over_a_table_paimon_java_wrote(spark_lake: tuple[Any, str], native: str, vectors: bool) -> None:
    """With deletion vectors, Paimon Java's updates mask the old rows in its vectors: the native
    reader reads those files with the filters pushed (row indexes from Spark's Parquet reader), and
    a key lookup is read on the driver."""
    spark, wh = spark_lake
    release = RELEASES[-1]
    name = f"java_filters.t_{native}{'_dv' if vectors else ''}"
    options = {"bucket": "2", "test.partitions": "3"}
    if vectors:
        options["deletion-vectors.enabled"] = "true"
    write_table(release, wh, name, True, range(0, 60), "j", options)
    write_table(release, wh, name, True, range(20, 50), "k", options)  # updates: splits to merge
    java = read_tables(release, wh, [name])[name]
    assert isinstance(java, list) and len(java) == 60
    if vectors:  # the updates left deletion vectors in Paimon Java's index files
        assert list((Path(wh) / "java_filters.db" / name.split(".")[1] / "index").glob("index-*"))
    spark.conf.set("stratalake.read.native.enabled", native)
    try:
        for sql, keep in FILTERS:
            got = spark.sql(
                f"SELECT CAST(id AS STRING), coalesce(v, 'null'), dt, CAST(h AS STRING) "
                f"FROM lake.{name} WHERE {sql}"
            ).collect()
            want = sorted(r for r in java if keep(r))
            assert want, sql
            assert sorted(tuple(r) for r in got) == want, sql
    finally:
        spark.conf.unset("stratalake.read.native.enabled")
