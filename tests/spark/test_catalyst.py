"""What the shim's scan tells Catalyst: pruned columns, statistics, runtime filters, limits,
COUNT(*) from metadata, bucket partitioning for storage-partitioned joins, custom metrics.

Every plan check comes with a result check against the same query with the optimization off.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from stratalake import Catalog

pytestmark = pytest.mark.spark


@contextmanager
def conf(spark: Any, **settings: str) -> Iterator[None]:
    """Temporarily set Spark SQL settings (the session is shared by every Spark test)."""
    keys = {k.replace("__", "."): v for k, v in settings.items()}
    old = {k: spark.conf.get(k, None) for k in keys}
    for k, v in keys.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def plan_of(df: Any) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture(scope="module")
def facts(spark: Any) -> str:
    """A partitioned, bucketed table with several files per bucket (reads must merge).

    Shared by the module's tests (they only read it): creating it costs two Spark jobs.
    """
    db = "lake.catalyst_facts"
    spark.sql(f"CREATE DATABASE {db}")
    spark.sql(
        f"""CREATE TABLE {db}.facts (id BIGINT, dt STRING, a INT, b STRING, c DOUBLE,
            PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) TBLPROPERTIES ('bucket' = '4')"""
    )
    spark.sql(
        f"INSERT INTO {db}.facts SELECT id, concat('d', id % 5), CAST(id AS INT), "
        f"concat('b', id), id * 0.5 FROM range(200)"
    )
    spark.sql(f"INSERT INTO {db}.facts SELECT id, concat('d', id % 5), -1, 'upd', 0.0 FROM range(0, 200, 7)")
    return f"{db}.facts"


def test_column_pruning_reaches_the_reader(spark: Any, facts: str) -> None:
    df = spark.sql(f"SELECT b FROM {facts} WHERE a > 10")
    plan = plan_of(df)
    assert "BatchScan" in plan and "stratalake" in plan
    # Only the selected and filtered columns are read: no c, no dt.
    scan_line = next(line for line in plan.splitlines() if "BatchScan" in line)
    assert "c#" not in scan_line and "dt#" not in scan_line
    assert "b#" in scan_line and "a#" in scan_line
    full = spark.sql(f"SELECT * FROM {facts}").collect()
    expected = sorted((r["b"],) for r in full if r["a"] > 10)
    assert rows(df) == expected
    # Updated rows carry their newest values after pruning too.
    assert rows(spark.sql(f"SELECT b FROM {facts} WHERE id = 7")) == [("upd",)]


def test_key_filters_prune_and_results_match(spark: Any, facts: str) -> None:
    q = f"SELECT id, a FROM {facts} WHERE id IN (3, 7, 150) AND dt = 'd2'"
    df = spark.sql(q)
    assert "pruning filters" in plan_of(df)
    full = spark.sql(f"SELECT id, a, dt FROM {facts}").collect()
    expected = sorted((r["id"], r["a"]) for r in full if r["id"] in (3, 7, 150) and r["dt"] == "d2")
    assert rows(df) == expected == [(7, -1)]


def test_statistics_drive_broadcast_join(spark: Any, db: str, facts: str) -> None:
    spark.sql(f"CREATE TABLE {db}.dim (dt STRING, label STRING, PRIMARY KEY (dt) NOT ENFORCED)")
    spark.sql(f"INSERT INTO {db}.dim VALUES ('d1', 'one'), ('d2', 'two')")
    with conf(spark, spark__sql__cbo__enabled="true"):  # without CBO Spark drops row counts
        stats = spark.sql(f"SELECT * FROM {db}.dim")._jdf.queryExecution().optimizedPlan().stats()
    assert 0 < int(stats.sizeInBytes()) < 100_000
    assert int(stats.rowCount().get()) == 2
    q = f"SELECT f.id, d.label FROM {facts} f JOIN {db}.dim d ON f.dt = d.dt"
    with conf(spark, spark__sql__autoBroadcastJoinThreshold="1000000", spark__sql__adaptive__enabled="false"):
        df = spark.sql(q)
        assert "BroadcastHashJoin" in plan_of(df)
        got = rows(df)
    with conf(spark, spark__sql__autoBroadcastJoinThreshold="-1", spark__sql__adaptive__enabled="false"):
        df = spark.sql(q)
        assert "BroadcastHashJoin" not in plan_of(df)
        assert rows(df) == got
    assert len(got) == 80


def test_explain_cost_shows_real_numbers(spark: Any, facts: str) -> None:
    with conf(spark, spark__sql__cbo__enabled="true"):
        text = spark.sql(f"EXPLAIN COST SELECT * FROM {facts}").collect()[0][0]
    assert "rowCount=" in text
    rel = next(line for line in text.splitlines() if "RelationV2" in line)
    assert "8.0 EiB" not in rel  # Spark's "unknown size" default


def test_dynamic_partition_pruning(spark: Any, db: str, facts: str) -> None:
    spark.sql(f"CREATE TABLE {db}.days (dt STRING, kind STRING, PRIMARY KEY (dt) NOT ENFORCED)")
    spark.sql(f"INSERT INTO {db}.days VALUES ('d1', 'hot'), ('d2', 'cold'), ('d3', 'hot')")
    q = f"SELECT f.id, f.dt FROM {facts} f JOIN {db}.days d ON f.dt = d.dt WHERE d.kind = 'hot'"
    with conf(spark, spark__sql__adaptive__enabled="false", spark__sql__autoBroadcastJoinThreshold="1000000"):
        df = spark.sql(q)
        plan = plan_of(df)
        assert "dynamicpruningexpression" in plan.lower()
        scan = next(line for line in plan.splitlines() if "facts" in line and "BatchScan" in line)
        assert "RuntimeFilters: [dynamicpruningexpression" in scan
        got = rows(df)
    with conf(spark, spark__sql__optimizer__dynamicPartitionPruning__enabled="false"):
        df = spark.sql(q)
        assert "dynamicpruningexpression" not in plan_of(df).lower()
        assert rows(df) == got
    assert {dt for _, dt in got} == {"d1", "d3"} and len(got) == 80


def test_limit_is_pushed_and_still_exact(spark: Any, facts: str) -> None:
    df = spark.sql(f"SELECT id, a FROM {facts} LIMIT 5")
    assert "[limit: 5]" in plan_of(df)
    got = df.collect()
    assert len(got) == 5
    merged = {(r["id"], r["a"]) for r in spark.sql(f"SELECT id, a FROM {facts}").collect()}
    assert {(r["id"], r["a"]) for r in got} <= merged
    # With an exactly-pushed key filter Spark pushes the limit too: still the right row.
    filtered = spark.sql(f"SELECT id, dt FROM {facts} WHERE id = 153 LIMIT 1")
    assert rows(filtered) == [(153, "d3")]


def test_count_star_from_metadata_only_when_exact(spark: Any, warehouse: Any, db: str) -> None:
    spark.sql(
        f"CREATE TABLE {db}.cnt (id BIGINT, a INT, PRIMARY KEY (id) NOT ENFORCED) TBLPROPERTIES ('bucket' = '2')"
    )
    spark.sql(f"INSERT INTO {db}.cnt SELECT id, CAST(id AS INT) FROM range(50)")
    spark.sql(f"INSERT INTO {db}.cnt SELECT id, -1 FROM range(40, 60)")
    q = f"SELECT count(*) FROM {db}.cnt"
    assert "LocalTableScan" not in plan_of(spark.sql(q))  # buckets need a merge
    assert spark.sql(q).collect()[0][0] == 60
    Catalog(str(warehouse)).get_table(f"{db.split('.')[1]}.cnt").compact(full=True)
    df = spark.sql(q)
    plan = plan_of(df)
    assert "LocalTableScan" in plan and "BatchScan" not in plan
    assert df.collect()[0][0] == 60
    # Filters are never answered from metadata.
    filtered = spark.sql(q + " WHERE a > 0")
    assert "BatchScan" in plan_of(filtered)
    assert filtered.collect()[0][0] == 39


def test_storage_partitioned_join_has_no_exchange(spark: Any, db: str, facts: str) -> None:
    spark.sql(
        f"CREATE TABLE {db}.other (id BIGINT, w STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "TBLPROPERTIES ('bucket' = '4')"
    )
    spark.sql(f"INSERT INTO {db}.other SELECT id, concat('w', id) FROM range(0, 300, 3)")
    spark.sql(f"INSERT INTO {db}.other SELECT id, 'again' FROM range(0, 300, 9)")
    q = f"SELECT f.id, f.b, o.w FROM {facts} f JOIN {db}.other o ON f.id = o.id"
    agg = f"SELECT id, count(*) FROM {facts} GROUP BY id"
    off = {"spark__sql__autoBroadcastJoinThreshold": "-1", "spark__sql__adaptive__enabled": "false"}
    with conf(spark, spark__sql__sources__v2__bucketing__enabled="true", **off):
        df = spark.sql(q)
        plan = plan_of(df)
        assert "SortMergeJoin" in plan and "Exchange" not in plan
        joined = rows(df)
        assert "Exchange" not in plan_of(spark.sql(agg))
        counted = rows(spark.sql(agg))
    with conf(spark, spark__sql__sources__v2__bucketing__enabled="false", **off):
        df = spark.sql(q)
        assert "Exchange" in plan_of(df)
        assert rows(df) == joined
        assert rows(spark.sql(agg)) == counted
    assert len(joined) == 67 and all(c == 1 for _, c in counted)


def test_different_bucket_counts_still_shuffle(spark: Any, db: str, facts: str) -> None:
    spark.sql(
        f"CREATE TABLE {db}.b3 (id BIGINT, w STRING, PRIMARY KEY (id) NOT ENFORCED) TBLPROPERTIES ('bucket' = '3')"
    )
    spark.sql(f"INSERT INTO {db}.b3 SELECT id, 'x' FROM range(10)")
    q = f"SELECT f.id, o.w FROM {facts} f JOIN {db}.b3 o ON f.id = o.id"
    with conf(
        spark,
        spark__sql__sources__v2__bucketing__enabled="true",
        spark__sql__autoBroadcastJoinThreshold="-1",
        spark__sql__adaptive__enabled="false",
    ):
        df = spark.sql(q)
        assert "Exchange" in plan_of(df)
        assert len(df.collect()) == 10


def test_custom_metrics(spark: Any, facts: str) -> None:
    df = spark.sql(f"SELECT id, a FROM {facts}")
    df.collect()
    plan = df._jdf.queryExecution().executedPlan()
    scans = plan.collectLeaves()
    metrics: dict[str, int] = {}
    for i in range(scans.size()):
        node = scans.apply(i)
        it = node.metrics().iterator()
        while it.hasNext():
            entry = it.next()
            metrics[entry._1()] = int(entry._2().value())
    assert metrics["stratalakeRowsAfterMerge"] == 200
    assert metrics["stratalakeRowsBeforeMerge"] == 200 + 29
    assert metrics["stratalakeFilesRead"] >= 2 * 5  # two inserts into every partition
    assert metrics["stratalakeSortedRuns"] >= metrics["stratalakeFilesRead"] - 0
    assert metrics["stratalakeBytesRead"] > 0


def test_partial_update_pruned_read(spark: Any, db: str) -> None:
    spark.sql(
        f"""CREATE TABLE {db}.pu (k INT, a INT, b STRING, g INT, x INT, PRIMARY KEY (k) NOT ENFORCED)
            TBLPROPERTIES ('merge-engine' = 'partial-update', 'fields.g.sequence-group' = 'x')"""
    )
    spark.sql(f"INSERT INTO {db}.pu VALUES (1, 1, 'p', 5, 50), (2, 2, 'q', 1, 10)")
    spark.sql(f"INSERT INTO {db}.pu VALUES (1, NULL, 'r', 3, 30), (2, 20, NULL, 2, 20)")
    assert rows(spark.sql(f"SELECT k, x FROM {db}.pu")) == [(1, 50), (2, 20)]
    assert rows(spark.sql(f"SELECT k, a, b FROM {db}.pu")) == [(1, 1, "r"), (2, 20, "q")]
    full = rows(spark.sql(f"SELECT k, a, b, g, x FROM {db}.pu"))
    assert [(k, a, b) for k, a, b, _, _ in full] == [(1, 1, "r"), (2, 20, "q")]
