"""``ANALYZE TABLE ... COMPUTE STATISTICS`` and ``$statistics`` through Spark SQL, with the answers
of Paimon's Spark tests (``AnalyzeTableTestBase``); the table read by pypaimon afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stratalake.catalog import Catalog
from stratalake.spec.snapshot import CommitKind
from stratalake.spec.statistics import ColStats
from tests.interop.paimon_oracle import paimon_read

pytestmark = pytest.mark.spark


def _table(spark: Any, db: str, name: str = "T") -> str:
    t = f"{db}.{name}"
    spark.sql(f"CREATE TABLE {t} (id STRING, name STRING, i INT, l BIGINT, PRIMARY KEY (id) NOT ENFORCED)")
    spark.sql(f"INSERT INTO {t} VALUES ('1', 'a', 1, 1)")
    spark.sql(f"INSERT INTO {t} VALUES ('2', 'aaa', 1, 2)")
    return t


def _statistics(spark: Any, t: str) -> list[tuple[Any, ...]]:
    return [
        tuple(r)
        for r in spark.sql(
            f"SELECT snapshot_id, schema_id, mergedRecordCount, colstat FROM {t.rsplit('.', 1)[0]}.`{t.rsplit('.', 1)[1]}$statistics`"
        ).collect()
    ]


def test_analyze_table_and_statistics_system_table(spark: Any, db: str, warehouse: Path) -> None:
    """Paimon's "test statistic system table" and "analyze specialized cols"; the ANALYZE
    snapshot is read by pypaimon."""
    t = _table(spark, db)
    assert _statistics(spark, t) == []
    out = spark.sql(f"ANALYZE TABLE {t} COMPUTE STATISTICS")
    assert out.collect() == []
    assert _statistics(spark, t) == [(2, 0, 2, "{ }")]
    table = Catalog(str(warehouse)).get_table(t.removeprefix("lake."))
    snap = table.latest_snapshot()
    assert snap is not None and snap.id == 3 and snap.commit_kind is CommitKind.ANALYZE

    spark.sql(f"ANALYZE TABLE {t} COMPUTE STATISTICS FOR COLUMNS name, i")
    stats = table.statistics()
    assert stats is not None and stats.snapshot_id == 3
    assert dict(stats.col_stats) == {
        "name": ColStats(1, 2, None, None, 0, 2, 3),
        "i": ColStats(2, 1, "1", "1", 0, 4, 4),
    }
    assert sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect()) == [
        ("1", "a", 1, 1),
        ("2", "aaa", 1, 2),
    ]
    # Time travel: each snapshot's $statistics is what it carries.
    assert [
        tuple(r)[:3] for r in spark.sql(f"SELECT * FROM {db}.`T$statistics` VERSION AS OF 3").collect()
    ] == [(2, 0, 2)]
    read = paimon_read(str(warehouse), t.removeprefix("lake."))
    assert sorted(read.column("id").to_pylist()) == ["1", "2"]


def test_analyze_all_columns_and_session_table_names(spark: Any, db: str, warehouse: Path) -> None:
    """``FOR ALL COLUMNS`` (Paimon's "spark use col stats": every column analyzed) on a table
    named without a catalog in the current database."""
    t = _table(spark, db)
    spark.sql(f"USE {db}")
    try:
        spark.sql("ANALYZE TABLE T COMPUTE STATISTICS FOR ALL COLUMNS")
    finally:
        spark.sql("USE spark_catalog.default")
    stats = Catalog(str(warehouse)).get_table(t.removeprefix("lake.")).statistics()
    assert stats is not None and set(stats.col_stats) == {"id", "name", "i", "l"}
    assert stats.col_stats["l"] == ColStats(3, 2, "1", "2", 0, 8, 8)


def test_bad_statements_are_refused_by_name(spark: Any, db: str, warehouse: Path) -> None:
    """Paimon's refusals (NOSCAN, PARTITION, unknown and unsupported columns), each naming the
    table and what to do; nothing is committed."""
    t = f"{db}.P"
    spark.sql(
        f"CREATE TABLE {t} (id STRING, m MAP<INT, STRING>, pt STRING, PRIMARY KEY (id, pt) NOT ENFORCED) "
        "PARTITIONED BY (pt)"
    )
    spark.sql(f"INSERT INTO {t} VALUES ('1', map(1, 'a'), 'x')")
    cases = [
        (f"ANALYZE TABLE {t} COMPUTE STATISTICS NOSCAN", "NOSCAN is ineffective with paimon"),
        (
            f"ANALYZE TABLE {t} PARTITION (pt = 'x') COMPUTE STATISTICS",
            "Analyze table partition is not supported",
        ),
        (f"ANALYZE TABLE {t} COMPUTE STATISTICS FOR COLUMNS fake_col", "column 'fake_col' not found"),
        (f"ANALYZE TABLE {t} COMPUTE STATISTICS FOR COLUMNS m", "is not supported"),
    ]
    for sql, message in cases:
        with pytest.raises(Exception, match=message) as info:
            spark.sql(sql)
        assert "P" in str(info.value)
    table = Catalog(str(warehouse)).get_table(t.removeprefix("lake."))
    assert [s.id for s in table.snapshots()] == [1]
    assert not (Path(table.location) / "statistics").exists()


def _n(value: Any) -> int:
    """A Scala BigInt (or the int py4j made of it) as an int."""
    return value if isinstance(value, int) else int(value.toString())


def _scan_stats(spark: Any, sql: str) -> Any:
    """Spark's statistics of the optimized plan of ``sql`` (a scan alone: the scan's own)."""
    return spark.sql(sql)._jdf.queryExecution().optimizedPlan().stats()


def test_planner_uses_the_statistics(spark: Any, db: str) -> None:
    """Paimon's "spark use table stats" / "spark use col stats" / "reported statistics does column
    pruning": the scan reports each read column's statistics, and a size of rows x the read
    columns' average lengths. Spark 4.3 keeps the row count and column statistics of a V2 scan
    only with ``spark.sql.cbo.enabled`` (or ``spark.sql.cbo.planStats.enabled``); the size counts
    either way."""
    t = _table(spark, db)
    before = _scan_stats(spark, f"SELECT * FROM {t}")
    spark.sql(f"ANALYZE TABLE {t} COMPUTE STATISTICS FOR ALL COLUMNS")
    plain = _scan_stats(spark, f"SELECT * FROM {t}")
    assert _n(plain.sizeInBytes()) == 2 * (1 + 2 + 4 + 8)  # avgLen of id, name, i, l
    assert _n(before.sizeInBytes()) != _n(plain.sizeInBytes())
    spark.conf.set("spark.sql.cbo.enabled", "true")
    try:
        stats = _scan_stats(spark, f"SELECT * FROM {t}")
        assert _n(stats.rowCount().get()) == 2
        assert stats.attributeStats().size() == 4
        plan = spark.sql(f"SELECT * FROM {t}")._jdf.queryExecution().optimizedPlan()
        i_stat = plan.stats().attributeStats().get(plan.output().apply(2)).get()
        assert (i_stat.min().get(), i_stat.max().get()) == (1, 1)
        assert _n(i_stat.distinctCount().get()) == 1
        pruned = _scan_stats(spark, f"SELECT l FROM {t}")
        assert _n(pruned.sizeInBytes()) == 2 * 8 and pruned.attributeStats().size() == 1
        explained = "\n".join(r[0] for r in spark.sql(f"EXPLAIN COST SELECT * FROM {t}").collect())
        assert "rowCount=2" in explained
    finally:
        spark.conf.unset("spark.sql.cbo.enabled")
