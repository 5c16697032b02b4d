"""What the shim's scan tells Catalyst: pruned columns, statistics, runtime filters, limits,
COUNT(*) from metadata, bucket partitioning for storage-partitioned joins, custom metrics.

Every plan check comes with a result check against the same query with the optimization off.
"""

from __future__ import annotations

import re
import uuid
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


@pytest.mark.parametrize("options", ["", ", 'deletion-vectors.enabled' = 'true'", ", 'merge-engine' = 'first-row'"])
def test_count_star_pushed_partially_when_some_splits_merge(spark: Any, db: str, options: str) -> None:
    """Splits whose live rows metadata knows are summed on the driver, each other split's task
    merges its keys and returns one count; Spark sums them. Checked against count(id) (not
    pushed: rows are read) and a model, with deletes, in a partitioned table."""
    name = f"{db}.pc{abs(hash(options)) % 1000}"
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT, p STRING, v INT, PRIMARY KEY (id, p) NOT ENFORCED) "
        f"PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '4'{options})"
    )
    q = f"SELECT count(*) FROM {name}"
    assert spark.sql(q).collect()[0][0] == 0  # empty table
    spark.sql(f"INSERT INTO {name} SELECT id, IF(id % 2 = 0, 'a', 'b'), 1 FROM range(3000)")
    spark.sql(f"INSERT INTO {name} SELECT id, 'a', 2 FROM range(2000, 5000, 2)")  # partition a only
    if "first-row" not in options:
        spark.sql(f"DELETE FROM {name} WHERE p = 'a' AND id % 10 = 0")
    model = {(i, "a" if i % 2 == 0 else "b") for i in range(3000)} | {(i, "a") for i in range(2000, 5000, 2)}
    if "first-row" not in options:
        model = {(i, p) for i, p in model if not (p == "a" and i % 10 == 0)}
    df = spark.sql(q)
    plan = plan_of(df)
    if options:  # deletion-vector and first-row batch reads skip level 0: metadata may answer alone
        assert "COUNT(*)" in plan or "LocalTableScan" in plan
    else:
        assert "splits from metadata" in plan and "merged in Python" in plan, plan
        # The splits that need a merge are counted in one task per task slot (local[2]: 2), plus
        # one task for the rows counted from metadata; not one per default parallelism (4).
        merged = int(re.search(r"(\d+) merged in Python", plan).group(1))  # type: ignore[union-attr]
        tracker = spark.sparkContext.statusTracker()
        spark.sparkContext.setJobGroup("count-tasks", "count")
        try:
            assert df.collect()[0][0] == len(model)
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        stages = [s for j in tracker.getJobIdsForGroup("count-tasks") for s in tracker.getJobInfo(j).stageIds]
        tasks = [tracker.getStageInfo(s).numTasks for s in stages if tracker.getStageInfo(s) is not None]
        assert merged >= 2 and min(2, merged) + 1 in tasks, (merged, tasks)
    assert df.collect()[0][0] == len(model)
    assert spark.sql(f"SELECT count(id) FROM {name}").collect()[0][0] == len(model)
    grouped = {r[0]: r[1] for r in spark.sql(f"SELECT p, count(*) FROM {name} GROUP BY p").collect()}
    assert grouped == {p: sum(1 for _, q in model if q == p) for p in ("a", "b")}


def _counting_jobs(spark: Any, sql: str, n: int | None = None) -> tuple[list[tuple[Any, ...]], int]:
    """The rows of ``sql`` (``take(n)`` when given, else ``collect()``) and the Spark jobs that ran,
    counted in a job group of their own."""
    group = f"counted-{uuid.uuid4().hex}"
    spark.sparkContext.setJobGroup(group, group)
    try:
        df = spark.sql(sql)
        got = [tuple(r) for r in (df.take(n) if n is not None else df.collect())]
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return got, len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def _collect_counting_jobs(spark: Any, sql: str) -> tuple[list[tuple[Any, ...]], int]:
    """The rows of ``sql`` (sorted) and the number of Spark jobs collecting them ran."""
    got, jobs = _counting_jobs(spark, sql)
    return sorted(got), jobs


def test_answers_the_driver_holds_are_collected_without_a_spark_job(spark: Any, warehouse: Any, db: str) -> None:
    """COUNT(*) and grouped counts from metadata, and metadata system tables, with the query's own
    projection and filter over them: evaluated on the driver (no job; Spark would put a Project
    over the local scan and run one), with the rows of a model. An expression only a task can
    evaluate (a Python UDF) still gets the right answer, from a job."""
    name = f"{db}.driver_rows"
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT, p STRING, v INT, PRIMARY KEY (id, p) NOT ENFORCED) "
        "PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '2')"
    )
    spark.sql(f"INSERT INTO {name} SELECT id, IF(id % 3 = 0, 'a', 'b'), 1 FROM range(300)")
    spark.sql(f"INSERT INTO {name} SELECT id, 'a', 2 FROM range(0, 600, 3)")
    Catalog(str(warehouse)).get_table(f"{db.split('.')[1]}.driver_rows").compact(full=True)
    per_p = {"a": 200, "b": 200}
    snapshots = rows(spark.sql(f"SELECT snapshot_id, commit_kind FROM {db}.`driver_rows$snapshots`"))
    assert [k for _, k in snapshots] == ["APPEND", "APPEND", "COMPACT"]
    expected = {
        f"SELECT count(*) FROM {name}": [(400,)],
        f"SELECT count(*) + 1 AS n, 'x' AS tag FROM {name}": [(401, "x")],
        f"SELECT p, count(*) AS n FROM {name} GROUP BY p": sorted(per_p.items()),
        f"SELECT upper(p), count(*) * 2 FROM {name} GROUP BY p HAVING count(*) > 199 AND max(p) < 'b'": [("A", 400)],
        f"SELECT snapshot_id * 10 FROM {db}.`driver_rows$snapshots` WHERE commit_kind = 'APPEND'": [
            (i * 10,) for i, k in snapshots if k == "APPEND"
        ],
    }
    for sql, want in expected.items():
        plan = plan_of(spark.sql(sql))
        assert "LocalTableScan" in plan and "Project" not in plan and "Filter" not in plan, (sql, plan)
        assert _collect_counting_jobs(spark, sql) == (want, 0), sql
    spark.udf.register("plus_one_py", lambda x: x + 1, "bigint")
    got, jobs = _collect_counting_jobs(spark, f"SELECT plus_one_py(count(*)) FROM {name}")
    assert got == [(401,)] and jobs >= 1


def test_point_lookups_are_read_on_the_driver_without_a_job(spark: Any, warehouse: Any, db: str) -> None:
    """A collected filter that pins a column to values (`k = 5`, `k IN (...)`, a string key), over
    natively read splits (compacted files, deletion vectors): read on the driver, no Spark job,
    the same rows as the job (`stratalake.read.driver-lookup.max-bytes` = 0). A split that needs
    a Python merge, more rows than the driver keeps, or a Python UDF run the job, with the same
    answer; a plan the lookup read stays runnable as a job."""
    dv = f"{db}.lookups_dv"
    spark.sql(
        f"CREATE TABLE {dv} (k BIGINT, s STRING, v INT, p STRING, PRIMARY KEY (k, p) NOT ENFORCED) "
        "PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '2', 'deletion-vectors.enabled' = 'true')"
    )
    spark.sql(f"INSERT INTO {dv} SELECT id, concat('s', id), CAST(id % 7 AS INT), IF(id % 2 = 0, 'a', 'b') FROM range(30000)")
    spark.sql(f"UPDATE {dv} SET v = -1 WHERE k % 10 = 3")
    spark.sql(f"DELETE FROM {dv} WHERE k % 10 = 4")
    merged = f"{db}.lookups_merged"
    spark.sql(f"CREATE TABLE {merged} (k BIGINT, s STRING, PRIMARY KEY (k) NOT ENFORCED) TBLPROPERTIES ('bucket' = '1')")
    spark.sql(f"INSERT INTO {merged} SELECT id, concat('a', id) FROM range(100)")
    spark.sql(f"INSERT INTO {merged} SELECT id, concat('b', id) FROM range(0, 100, 2)")

    def model(k: int) -> tuple[Any, ...] | None:
        if k % 10 == 4 or not 0 <= k < 30000:
            return None
        return (k, f"s{k}", -1 if k % 10 == 3 else k % 7, "a" if k % 2 == 0 else "b")

    queries = {
        f"SELECT k, s, v, p FROM {dv} WHERE k = 12343": [model(12343)],
        f"SELECT k, s, v, p FROM {dv} WHERE k = 12344": [],  # deleted
        f"SELECT k * 2 AS k2, upper(s) FROM {dv} WHERE k IN (5, 14, 29999, 40000) AND v >= 0": [(10, "S5"), (59998, "S29999")],
        f"SELECT k, v FROM {dv} WHERE s = 's777' AND p = 'b'": [(777, 0)],
        f"SELECT k FROM {dv} WHERE k <=> 8 OR k = 9": [(8,), (9,)],  # no pinned conjunct: the job
    }
    for sql, want in queries.items():
        with conf(spark, **{"stratalake__read__driver-lookup__max-bytes": "0"}):
            by_job = _counting_jobs(spark, sql)
        got = _counting_jobs(spark, sql)
        assert sorted(got[0]) == sorted(want) == sorted(by_job[0]), sql
        assert by_job[1] >= 1, sql
        assert got[1] == (1 if " OR " in sql else 0), (sql, got)
    plan = plan_of(spark.sql(f"SELECT s FROM {dv} WHERE k = 12343"))
    assert "DriverLookup" in plan, plan
    # take(n) (and show()) read the same way, the first rows in the job's split order.
    three = f"SELECT k FROM {dv} WHERE v = -1 AND k IN (3, 13, 23)"
    with conf(spark, **{"stratalake__read__driver-lookup__max-bytes": "0"}):
        first_by_job = _counting_jobs(spark, three, 2)[0]
    assert _counting_jobs(spark, three, 2) == (first_by_job, 0)
    assert len(first_by_job) == 2 and {k for (k,) in first_by_job} <= {3, 13, 23}
    # A split merged in Python: the job, right answer.
    assert _counting_jobs(spark, f"SELECT s FROM {merged} WHERE k = 4")[0] == [("b4",)]
    assert _counting_jobs(spark, f"SELECT s FROM {merged} WHERE k = 4")[1] >= 1
    # More rows than the driver keeps (10,000): the job, every row.
    got, jobs = _counting_jobs(spark, f"SELECT k FROM {dv} WHERE v IN (0, 1, 2, 3, 4, 5, 6)")
    assert len(got) == sum(1 for k in range(30000) if k % 10 not in (3, 4)) and jobs >= 1
    # A Python UDF in the filter: the job.
    spark.udf.register("twice_py", lambda x: x * 2, "bigint")
    got, jobs = _counting_jobs(spark, f"SELECT k FROM {dv} WHERE k = 12 AND twice_py(k) = 24")
    assert got == [(12,)] and jobs >= 1
    # The setting takes sizes; a value that is none is refused by name.
    with conf(spark, **{"stratalake__read__driver-lookup__max-bytes": "1k"}):
        assert _counting_jobs(spark, f"SELECT s FROM {dv} WHERE k = 12343")[1] >= 1  # files > 1 KiB
    refused = re.escape("stratalake.read.driver-lookup.max-bytes must be a size")
    with conf(spark, **{"stratalake__read__driver-lookup__max-bytes": "lots"}), pytest.raises(Exception, match=refused):
        spark.sql(f"SELECT s FROM {dv} WHERE k = 12343").collect()
    # The same plan read on the driver, then run as a job (its reader factory left as planned).
    df = spark.sql(f"SELECT k, s FROM {dv} WHERE k IN (1, 2, 3)")
    assert sorted(tuple(r) for r in df.collect()) == [(1, "s1"), (2, "s2"), (3, "s3")]
    assert df.count() == 3 and sorted(tuple(r) for r in df.rdd.collect()) == [(1, "s1"), (2, "s2"), (3, "s3")]


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


_SPJ_OFF = {"spark__sql__autoBroadcastJoinThreshold": "-1", "spark__sql__adaptive__enabled": "false"}


def _plan_and_rows(spark: Any, q: str, bucketing: str, **settings: str) -> tuple[str, list[tuple[Any, ...]]]:
    with conf(spark, spark__sql__sources__v2__bucketing__enabled=bucketing, **_SPJ_OFF, **settings):
        df = spark.sql(q)
        return plan_of(df), rows(df)


def test_sorted_buckets_skip_the_join_sort(spark: Any, db: str) -> None:
    """Merged splits come out in key order: the bucketed sort-merge join needs neither an
    Exchange nor a Sort, and returns what the shuffled join returns."""
    for name, step in (("s1", 1), ("s2", 3)):
        spark.sql(
            f"CREATE TABLE {db}.{name} (id BIGINT, k STRING, v INT, PRIMARY KEY (id) NOT ENFORCED) "
            "TBLPROPERTIES ('bucket' = '4')"
        )
        spark.sql(
            f"INSERT INTO {db}.{name} SELECT id, concat('k', id), CAST(id AS INT) FROM range(0, 600, {step})"
        )
        # Updates in a second file of every bucket: the read merges them.
        spark.sql(f"INSERT INTO {db}.{name} SELECT id, 'upd', -1 FROM range(0, 600, 10)")
    q = f"SELECT a.id, a.k, b.v FROM {db}.s1 a JOIN {db}.s2 b ON a.id = b.id"
    plan, joined = _plan_and_rows(spark, q, "true")
    assert "SortMergeJoin" in plan and "Exchange" not in plan
    assert "Sort [" not in plan, plan
    shuffled_plan, shuffled = _plan_and_rows(spark, q, "false")
    assert "Exchange" in shuffled_plan and "Sort [" in shuffled_plan
    assert joined == shuffled and len(joined) == 200 + 60 - 20  # ids divisible by 3 or by 10
    assert (30, "upd", -1) in joined and (3, "k3", 3) in joined


def test_ordering_only_when_every_split_is_sorted(spark: Any, warehouse: Any, db: str) -> None:
    """The reported order: the leading trimmed key columns the scan outputs, with types that sort
    alike in Spark; none when a split is read file by file without a merge."""
    from types import SimpleNamespace

    from stratalake.spark.planning import _output_ordering, comes_sorted

    def ordering(splits: list[Any], columns: list[str] | None) -> list[str]:
        return _output_ordering(t, all(comes_sorted(s) for s in splits), columns)

    spark.sql(
        f"CREATE TABLE {db}.ord (a BIGINT, b STRING, c DOUBLE, d DOUBLE, v INT, "
        "PRIMARY KEY (a, b, c, d) NOT ENFORCED) TBLPROPERTIES ('bucket' = '2')"
    )
    t = Catalog(str(warehouse)).get_table(f"{db.split('.')[1]}.ord")
    merged = SimpleNamespace(needs_merge=True, files=(1, 2))
    one_file = SimpleNamespace(needs_merge=False, files=(1,))
    unmerged = SimpleNamespace(needs_merge=False, files=(1, 2))  # deletion-vector split
    assert ordering([merged, one_file], None) == ["a", "b"]  # DOUBLE stops the order
    assert ordering([merged], ["b", "a", "v"]) == ["a", "b"]
    assert ordering([merged], ["b", "v"]) == []  # the leading key is not read
    assert ordering([merged, unmerged], None) == []


def test_small_sorted_splits_are_packed_large_ones_keep_their_order(spark: Any, warehouse: Any, db: str) -> None:
    """A compacted table of many small buckets (one sorted file each) reads in few tasks, as
    Spark packs the small files of its own scans, rather than a task per split for a key order;
    splits near Spark's split size keep the order and a task each. Same rows either way."""
    from stratalake.spark.planning import plan

    spark.sql(
        f"CREATE TABLE {db}.packed (id BIGINT, v STRING, p STRING, PRIMARY KEY (id, p) NOT ENFORCED) "
        "PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '4')"
    )
    spark.sql(f"INSERT INTO {db}.packed SELECT id, concat('v', id), concat('p', id % 4) FROM range(400)")
    spark.sql(f"CALL lake.sys.compact(table => '{db.split('.')[1]}.packed')")
    t = Catalog(str(warehouse)).get_table(f"{db.split('.')[1]}.packed")
    request = {"columns": ["id", "v", "p"], "filters": [], "native": True, "parallelism": 4}
    small = plan(t, {}, request)
    assert small["ordering"] == [] and small["num_buckets"] == 4
    assert len(small["splits"]) == 4 < sum(s["files"] for s in small["splits"]) == 16  # one per bucket
    # Splits weighing more than half of Spark's split size: a task each, in key order.
    t = t.copy({"source.split.target-size": "4mb"})
    large = plan(t, {}, request)
    assert large["ordering"] == ["id"] and len(large["splits"]) == 16
    got = sorted(map(tuple, spark.sql(f"SELECT id, v, p FROM {db}.packed").collect()))
    assert got == [(i, f"v{i}", f"p{i % 4}") for i in range(400)]


def test_one_column_bucket_key_of_a_two_column_primary_key(spark: Any, db: str) -> None:
    """bucket-key = 'a' of primary key (a, b): joins and aggregations on (a, b) use the buckets."""
    for name in ("m1", "m2"):
        spark.sql(
            f"CREATE TABLE {db}.{name} (a BIGINT, b STRING, v INT, PRIMARY KEY (a, b) NOT ENFORCED) "
            "TBLPROPERTIES ('bucket' = '4', 'bucket-key' = 'a')"
        )
        spark.sql(
            f"INSERT INTO {db}.{name} SELECT id % 50, concat('k', id % 7), CAST(id AS INT) FROM range(400)"
        )
        spark.sql(f"INSERT INTO {db}.{name} SELECT id % 50, concat('k', id % 7), -1 FROM range(0, 400, 9)")
    q = f"SELECT x.a, x.b, x.v, y.v FROM {db}.m1 x JOIN {db}.m2 y ON x.a = y.a AND x.b = y.b"
    # Spark only co-partitions a join on a subset of its keys when told it may.
    plan, joined = _plan_and_rows(spark, q, "true", spark__sql__requireAllClusterKeysForCoPartition="false")
    assert "Exchange" not in plan, plan
    shuffled_plan, shuffled = _plan_and_rows(spark, q, "false")
    assert "Exchange" in shuffled_plan
    assert joined == shuffled and len(joined) == 350
    agg = f"SELECT a, b, count(*), sum(v) FROM {db}.m1 GROUP BY a, b"
    agg_plan, counted = _plan_and_rows(spark, agg, "true")
    assert "Exchange" not in agg_plan
    assert counted == _plan_and_rows(spark, agg, "false")[1] and len(counted) == 350


def test_two_column_bucket_key_joins_correctly(spark: Any, warehouse: Any, db: str) -> None:
    """A bucket key of two columns (Paimon hashes the BinaryRow of both) cannot be described to
    Spark 4.3, whose key-grouped partitioning takes one-column transforms only: the scan reports
    no partitioning, the join shuffles and returns the same rows either way."""
    from stratalake.spark.planning import spark_bucket_keys

    for name, props in (
        ("k1", "'bucket-key' = 'a,b'"),
        ("k2", "'bucket-key' = 'a,b'"),
        ("k3", "'file.format' = 'parquet'"),
    ):
        spark.sql(
            f"CREATE TABLE {db}.{name} (a BIGINT, b STRING, v INT, PRIMARY KEY (a, b) NOT ENFORCED) "
            f"TBLPROPERTIES ('bucket' = '4', {props})"
        )
        spark.sql(
            f"INSERT INTO {db}.{name} SELECT id % 50, concat('k', id % 7), CAST(id AS INT) FROM range(300)"
        )
    cat = Catalog(str(warehouse))
    short = db.split(".")[1]
    assert cat.get_table(f"{short}.k1").schema().bucket_keys == ("a", "b")
    assert spark_bucket_keys(cat.get_table(f"{short}.k1")) == []
    assert spark_bucket_keys(cat.get_table(f"{short}.k3")) == []  # the primary key (a, b)
    for other in ("k2", "k3"):
        q = f"SELECT x.a, x.b, x.v, y.v FROM {db}.k1 x JOIN {db}.{other} y ON x.a = y.a AND x.b = y.b"
        plan, joined = _plan_and_rows(
            spark, q, "true", spark__sql__requireAllClusterKeysForCoPartition="false"
        )
        assert "Exchange" in plan
        assert joined == _plan_and_rows(spark, q, "false")[1]
        assert len(joined) == 300 and all(v1 == v2 for _, _, v1, v2 in joined)


def test_compatible_bucket_counts_are_reduced(spark: Any, db: str) -> None:
    """bucket(8, id) mod 4 == bucket(4, id) (Paimon's bucket is hash % n): with compatible
    transforms allowed, 4- and 8-bucket (3- and 6-bucket) tables join without a shuffle."""
    for n in (3, 4, 6, 8):
        spark.sql(
            f"CREATE TABLE {db}.r{n} (id BIGINT, w STRING, PRIMARY KEY (id) NOT ENFORCED) "
            f"TBLPROPERTIES ('bucket' = '{n}')"
        )
        spark.sql(f"INSERT INTO {db}.r{n} SELECT id, concat('w{n}-', id) FROM range(0, 500, {n // 2 + 1})")
    compatible = {"spark__sql__sources__v2__bucketing__allowCompatibleTransforms__enabled": "true"}
    for small, big, exchange in ((4, 8, False), (8, 4, False), (3, 6, False), (4, 6, True)):
        q = f"SELECT s.id, s.w, b.w FROM {db}.r{small} s JOIN {db}.r{big} b ON s.id = b.id"
        plan, joined = _plan_and_rows(spark, q, "true", **compatible)
        assert ("Exchange" in plan) == exchange, (small, big, plan)
        shuffled = _plan_and_rows(spark, q, "false")[1]
        assert joined == shuffled
        step_s, step_b = small // 2 + 1, big // 2 + 1
        assert len(joined) == len([i for i in range(0, 500, step_s) if i % step_b == 0])
    # Without the setting, different counts still shuffle.
    plan, _ = _plan_and_rows(spark, f"SELECT * FROM {db}.r4 s JOIN {db}.r8 b ON s.id = b.id", "true")
    assert "Exchange" in plan


def test_timestamp_keys_of_other_precision_are_not_reported(spark: Any, warehouse: Any, db: str) -> None:
    """Spark sees TIMESTAMP(3) and TIMESTAMP(6) keys as the same type, but Paimon hashes them
    differently (compact millis vs millis + nanos): no bucket layout for precision 3, so joining
    such tables shuffles instead of matching buckets that hold different keys."""
    import datetime as dt

    import pyarrow as pa

    short = db.split(".")[1]
    cat = Catalog(str(warehouse))
    t3 = cat.create_table(
        f"{short}.ts3",
        schema=pa.schema([pa.field("ts", pa.timestamp("ms"), nullable=False), pa.field("v", pa.int32())]),
        primary_key=["ts"],
        options={"bucket": "4"},
    )
    assert str(t3.schema().field("ts").type).startswith("TIMESTAMP(3)")
    base = dt.datetime(2024, 1, 1)
    stamps = [base + dt.timedelta(seconds=7 * i) for i in range(64)]
    t3.write(pa.table({"ts": pa.array(stamps, pa.timestamp("ms")), "v": pa.array(range(64), pa.int32())}))
    spark.sql(
        f"CREATE TABLE {db}.ts6 (ts TIMESTAMP_NTZ, w INT, PRIMARY KEY (ts) NOT ENFORCED) TBLPROPERTIES ('bucket' = '4')"
    )
    values = ", ".join(f"(TIMESTAMP_NTZ '{s.isoformat(sep=' ')}', {i})" for i, s in enumerate(stamps))
    spark.sql(f"INSERT INTO {db}.ts6 VALUES {values}")
    from stratalake.spark.planning import spark_bucket_keys

    assert spark_bucket_keys(cat.get_table(f"{short}.ts6")) == ["ts"]
    assert spark_bucket_keys(cat.get_table(f"{short}.ts3")) == []
    q = f"SELECT a.v, b.w FROM {db}.ts3 a JOIN {db}.ts6 b ON a.ts = b.ts"
    plan, joined = _plan_and_rows(spark, q, "true")
    assert "Exchange" in plan
    assert joined == [(i, i) for i in range(64)]


def _leaf(op: str, column: str, value: Any, type: str) -> dict[str, Any]:
    return {"op": op, "column": column, "values": [value], "type": type}


def _tree(op: str, *children: dict[str, Any]) -> dict[str, Any]:
    return {"op": op, "children": list(children)}


# A filter, the rows it keeps, and its JSON tree as the shim sends it to Python.
_CLASSIFIED: list[tuple[str, Any, dict[str, Any]]] = [
    ("id = 21", lambda r: r["id"] == 21, _leaf("=", "id", 21, "long")),
    ("dt = 'd1'", lambda r: r["dt"] == "d1", _leaf("=", "dt", "d1", "string")),
    ("a > 150", lambda r: r["a"] > 150, _leaf(">", "a", 150, "integer")),
    (
        "dt = 'd2' OR id = 5",
        lambda r: r["dt"] == "d2" or r["id"] == 5,
        _tree("or", _leaf("=", "dt", "d2", "string"), _leaf("=", "id", 5, "long")),
    ),
    (
        "dt = 'd3' OR a = 4",
        lambda r: r["dt"] == "d3" or r["a"] == 4,
        _tree("or", _leaf("=", "dt", "d3", "string"), _leaf("=", "a", 4, "integer")),
    ),
    ("NOT (dt = 'd0')", lambda r: r["dt"] != "d0", _tree("not", _leaf("=", "dt", "d0", "string"))),
]


@pytest.mark.parametrize("native", ["true", "false"])
@pytest.mark.parametrize("case", range(len(_CLASSIFIED)))
def test_filters_dropped_from_the_plan_are_exactly_those_python_applies(
    spark: Any, warehouse: Any, facts: str, native: str, case: int
) -> None:
    """Spark keeps a filter after the scan unless Python's planning.exact_filters says the scan
    applies it; the shim asks Python only about filters that may be exact (every column a
    partition key, or with native reads off a primary key too), so a point lookup by a key column
    of a natively read table costs no bridge call; the rows are the model's either way."""
    import json

    from stratalake.spark import planning

    sql, keep, tree = _CLASSIFIED[case]
    contract = spark._jvm.org.stratalake.spark.bridge.BridgeContract
    table = Catalog(str(warehouse)).get_table(facts.split(".", 1)[1])
    exact = planning.exact_filters(table, [tree], native=native == "true")[0]
    with conf(spark, stratalake__read__native__enabled=native):
        spark.sql(f"SELECT * FROM {facts} LIMIT 1").collect()  # the table loaded, the session warm
        before = json.loads(contract.callCounts()).get("classify_filters", 0)
        df = spark.sql(f"SELECT * FROM {facts} WHERE {sql}")
        plan = plan_of(df)
        asked = json.loads(contract.callCounts()).get("classify_filters", 0) - before
        got = rows(df)
    columns = {leaf["column"] for leaf in (tree.get("children") or [tree])}
    may_be_exact = columns <= ({"dt"} if native == "true" else {"dt", "id"})
    assert asked == (1 if may_be_exact else 0), plan
    assert ("Filter " in plan) == (not exact), plan
    full = spark.sql(f"SELECT * FROM {facts}").collect()
    assert got == sorted(tuple(r) for r in full if keep(r))
