"""Paimon's Java reader reads a table that Paimon Java wrote and ``CALL sys.compact`` then
compacted as a Spark job (one task per bucket): the files its task attempts wrote, deletion-vector
index files named by the attempt (``spark/job_attempts.py``) among them.

Run by ``make test-paimon-java`` (marker ``paimon_java``); the jars are fetched by Maven on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.interop_java.paimon_java import RELEASES, read_tables, write_table

pytestmark = pytest.mark.paimon_java


@pytest.mark.parametrize("strategy", ["minor", "full"])
def test_paimon_java_reads_a_table_compacted_by_a_spark_job(spark_lake: tuple[Any, str], strategy: str) -> None:
    spark, wh = spark_lake
    release = RELEASES[-1]
    db, table = "java_compact_job", f"t_{strategy}"
    name, t = f"{db}.{table}", f"lake.{db}.{table}"
    options = {"bucket": "2", "changelog-producer": "lookup", "deletion-vectors.enabled": "true"}
    write_table(release, wh, name, True, range(0, 4000), "j", options)  # Paimon Java, its defaults
    # Four Spark tasks update half of those keys and add as many, left at level 0 for the job.
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('write-only' = 'true')")
    spark.sql(f"INSERT INTO {t} SELECT id, concat('s', CAST(id AS STRING)) FROM range(2000, 6000, 1, 4)")
    spark.sql(f"ALTER TABLE {t} UNSET TBLPROPERTIES ('write-only')")
    assert spark.sql(f"CALL lake.sys.compact(table => '{name}', compact_strategy => '{strategy}')").collect() == [
        (True,)
    ]
    expected = sorted(
        [(str(i), "null" if i % 7 == 0 else f"j{i}") for i in range(0, 2000)]
        + [(str(i), f"s{i}") for i in range(2000, 6000)]
    )
    ours = sorted((str(i), "null" if v is None else v) for i, v in spark.sql(f"SELECT id, v FROM {t}").collect())
    assert ours == expected
    assert read_tables(release, wh, [name])[name] == expected
    if strategy == "minor":  # level 0 moved up: the rows it replaced are masked by new vectors
        assert list((Path(wh) / f"{db}.db" / table / "index").glob("index-*"))
    assert not list((Path(wh) / f"{db}.db" / table / ".stratalake-staging").glob("*/*"))
