"""Columnar merged reads: splits that need a merge reach Spark as Arrow column vectors.

Every query runs on the row path (``stratalake.read.columnar.enabled`` off, native reads off:
Spark's own Python reader, row by row) and on the columnar path with native reads off (every split
merged in Python, handed over as batches) and on (native and merged splits side by side, both
columnar), and must return the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.spark.test_native_read import QUERIES, native, plan_of, rows, splits

pytestmark = pytest.mark.spark

COLUMNAR = "stratalake.read.columnar.enabled"


@contextmanager
def columnar(spark: Any, on: bool) -> Iterator[None]:
    old = spark.conf.get(COLUMNAR, None)
    spark.conf.set(COLUMNAR, "true" if on else "false")
    try:
        yield
    finally:
        if old is None:
            spark.conf.unset(COLUMNAR)
        else:
            spark.conf.set(COLUMNAR, old)


def is_columnar(df: Any) -> bool:
    """Whether the executed plan reads a stratalake scan as batches (run ``df`` first: adaptive
    execution inserts the transition when it runs the stage)."""
    return "ColumnarToRow" in plan_of(df)


def same(spark: Any, sql: str, merged: bool = True, native_too: bool = False) -> list[tuple[Any, ...]]:
    """Rows of ``sql``, equal on the row path and on the columnar path with native reads off
    (and, with ``native_too``, on).

    ``merged``: the query's scan has splits that need a merge, so the columnar path must be taken.
    """
    with columnar(spark, False), native(spark, False):
        df = spark.sql(sql)
        expected = rows(df)
        assert not is_columnar(df), sql
    for nat in (False, True) if native_too else (False,):
        with columnar(spark, True), native(spark, nat):
            df = spark.sql(sql)
            got = rows(df)
            assert got == expected, (sql, nat)
            if merged and not nat and splits(plan_of(df))[1] > 0:
                assert is_columnar(df), (sql, plan_of(df))
    return expected


# The read shapes of the native-read tests, one of each kind: full rows, projection, aggregate,
# value filter, key filter, key IN, partition filter, partition OR value, LIKE, IS NULL.
SHAPES = [QUERIES[i] for i in (0, 1, 2, 3, 4, 6, 7, 9, 11, 13)]


def check_queries(spark: Any, table: str, shapes: list[str] = SHAPES) -> None:
    for q in shapes:
        same(spark, q.format(t=table), merged="WHERE k" not in q)


def two_runs(spark: Any, table: str, props: str, first: str = "CAST(id AS INT)") -> None:
    spark.sql(
        f"""CREATE TABLE {table} (k BIGINT, p STRING, a INT, b STRING, c DOUBLE,
            PRIMARY KEY (k, p) NOT ENFORCED) PARTITIONED BY (p)
            TBLPROPERTIES ('bucket' = '2'{props})"""
    )
    spark.sql(
        f"INSERT INTO {table} SELECT id, concat('p', id % 2), {first}, concat('b', id), "
        f"CASE WHEN id % 11 = 0 THEN NULL ELSE id * 0.5 END FROM range(300)"
    )
    spark.sql(
        f"INSERT INTO {table} SELECT id, concat('p', id % 2), CAST(id AS INT) + 1000, "
        f"CASE WHEN id % 2 = 0 THEN NULL ELSE concat('c', id) END, id * 1.5 FROM range(0, 300, 3)"
    )


@pytest.mark.parametrize(
    "props",
    [
        "",
        ", 'merge-engine' = 'partial-update'",
        ", 'merge-engine' = 'aggregation', 'fields.a.aggregate-function' = 'sum', "
        "'fields.c.aggregate-function' = 'max'",
        ", 'merge-engine' = 'first-row'",
        ", 'deletion-vectors.enabled' = 'true'",
    ],
    ids=["deduplicate", "partial-update", "aggregation", "first-row", "deletion-vectors"],
)
def test_merge_engines(spark: Any, db: str, props: str) -> None:
    two_runs(spark, f"{db}.t", props)
    # Every shape on the default engine; the others differ only inside the Python merge.
    check_queries(spark, f"{db}.t", SHAPES if props == "" else [SHAPES[0], SHAPES[2], SHAPES[6]])
    same(spark, f"SELECT * FROM {db}.t", native_too=True)
    # Time travel: the first insert alone, and a projection of it with a value filter.
    # (a deletion-vector table's batch reads skip level 0: its first insert alone reads empty)
    assert len(same(spark, f"SELECT * FROM {db}.t VERSION AS OF 1")) == (0 if "deletion" in props else 300)
    same(spark, f"SELECT k, a, b FROM {db}.t VERSION AS OF 1 WHERE a > 100")
    if "deletion" in props:  # updates and deletes: deletion vectors on level >= 1 files
        spark.sql(f"UPDATE {db}.t SET a = -a WHERE k % 10 = 1")
        spark.sql(f"DELETE FROM {db}.t WHERE k % 4 = 0")
        spark.sql(f"INSERT INTO {db}.t SELECT id, concat('p', id % 2), 0, 'z', 0.0 FROM range(0, 300, 7)")
        same(spark, f"SELECT * FROM {db}.t", native_too=True)
        same(spark, f"SELECT count(*), sum(a) FROM {db}.t WHERE c > 10", native_too=True)


def test_scan_of_many_splits_with_early_close_and_metrics(spark: Any, db: str) -> None:
    """120k rows, 4 buckets, two sorted runs each: the columnar path streams every split in
    bounded batches; a LIMIT closes the readers early and the next query still works."""
    spark.sql(
        f"""CREATE TABLE {db}.big (k BIGINT, a INT, b STRING, PRIMARY KEY (k) NOT ENFORCED)
            TBLPROPERTIES ('bucket' = '4')"""
    )
    n = 120_000
    spark.sql(f"INSERT INTO {db}.big SELECT id, CAST(id AS INT), concat('v', id) FROM range({n})")
    spark.sql(f"INSERT INTO {db}.big SELECT id, -1, 'new' FROM range(0, {n}, 2)")
    expected = [(n, n // 2, sum(range(1, n, 2)) - n // 2)]
    got = same(spark, f"SELECT count(*), count_if(b = 'new'), sum(a) FROM {db}.big")
    assert got == expected
    with columnar(spark, True), native(spark, True):
        aqe = spark.conf.get("spark.sql.adaptive.enabled")
        spark.conf.set("spark.sql.adaptive.enabled", "false")  # the scan is then a leaf of the plan
        try:
            df = spark.sql(f"SELECT max(k), min(b) FROM {db}.big")
            assert df.collect()[0][0] == n - 1
            scans = df._jdf.queryExecution().executedPlan().collectLeaves()
        finally:
            spark.conf.set("spark.sql.adaptive.enabled", aqe)
        nat, merged = splits(plan_of(df))
        assert is_columnar(df) and nat == 0 and merged >= 4
        metrics: dict[str, int] = {}
        for i in range(scans.size()):
            it = scans.apply(i).metrics().iterator()
            while it.hasNext():
                entry = it.next()
                metrics[entry._1()] = metrics.get(entry._1(), 0) + int(entry._2().value())
        assert metrics["stratalakePythonSplits"] == merged
        assert metrics["stratalakeRowsAfterMerge"] == n
        assert metrics["stratalakeRowsBeforeMerge"] == n + n // 2
        # Python's own metrics (declared with the scan's, see StrataLakeScan) reach the plan too.
        assert metrics["pythonDataReceived"] > 0
        # Early close: Spark stops reading after a few rows (a limit not pushed into the scan too).
        for q in (f"SELECT * FROM {db}.big LIMIT 5", f"SELECT * FROM {db}.big WHERE a > 5 LIMIT 3"):
            limited = spark.sql(q)
            assert len(limited.collect()) in (5, 3)
        assert len(spark.sql(f"SELECT * FROM {db}.big").take(7)) == 7
        assert spark.sql(f"SELECT count(*) FROM {db}.big WHERE a >= 0").collect()[0][0] == n // 2


def test_python_error_during_merged_read(spark: Any, db: str, warehouse: Any) -> None:
    """A failure inside the Python merge reaches the query with Python's message, and the
    session's workers keep serving later queries."""
    two_runs(spark, f"{db}.err", "")
    data = sorted((warehouse / f"{db.split('.')[1]}.db" / "err").glob("p=p0/bucket-*/data-*"))
    assert data
    data[0].rename(data[0].with_name("moved-" + data[0].name))
    errors = []
    for col_on in (True, False):
        with columnar(spark, col_on), native(spark, False):
            with pytest.raises(Exception, match=data[0].name + " is missing") as info:
                spark.sql(f"SELECT * FROM {db}.err").collect()
            errors.append(type(info.value).__name__)
    assert errors[0] == errors[1] == "PythonException"  # the same error both ways
    data[0].with_name("moved-" + data[0].name).rename(data[0])
    assert len(same(spark, f"SELECT * FROM {db}.err")) == 300


def test_schema_evolution(spark: Any, db: str) -> None:
    two_runs(spark, f"{db}.ev", "")
    spark.sql(f"ALTER TABLE {db}.ev ADD COLUMN d STRING")  # old files lack it: nulls
    same(spark, f"SELECT k, b, d FROM {db}.ev")
    spark.sql(f"INSERT INTO {db}.ev VALUES (5, 'p1', 7, 'x', 1.0, 'new')")
    spark.sql(f"ALTER TABLE {db}.ev RENAME COLUMN b TO b2")
    spark.sql(f"ALTER TABLE {db}.ev ALTER COLUMN a TYPE BIGINT")  # widened
    spark.sql(f"INSERT INTO {db}.ev VALUES (6, 'p0', 5000000000, 'y', 2.0, 'newer')")
    got = same(spark, f"SELECT * FROM {db}.ev")
    assert (5, "p1", 7, "x", 1.0, "new") in got and (6, "p0", 5000000000, "y", 2.0, "newer") in got
    same(spark, f"SELECT k, a, b2, d FROM {db}.ev WHERE a > 1000 AND p = 'p0'")


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_types_and_file_formats(spark: Any, db: str, fmt: str) -> None:
    spark.sql(
        f"""CREATE TABLE {db}.ty (k INT, t TINYINT, s SMALLINT, f FLOAT, dbl DOUBLE,
            dec DECIMAL(10, 2), big DECIMAL(30, 5), d DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ,
            bin BINARY, flag BOOLEAN, str STRING, arr ARRAY<INT>, m MAP<STRING, BIGINT>,
            st STRUCT<x: INT, y: ARRAY<STRING>>, PRIMARY KEY (k) NOT ENFORCED)
            TBLPROPERTIES ('bucket' = '1', 'file.format' = '{fmt}')"""
    )
    for round_ in range(2):  # two sorted runs: merged
        spark.sql(
            f"""INSERT INTO {db}.ty VALUES
            (1, 1, 2, 1.5, -0.25, 12.34, 123456789012345678901.12345, DATE '1500-03-01',
             TIMESTAMP '2024-01-02 03:04:05.123456', TIMESTAMP_NTZ '1900-01-01 00:00:00.5',
             X'00ff', true, 'héllo', array(1, NULL, {round_}), map('a', 1, 'b', NULL),
             named_struct('x', {round_}, 'y', array('p', NULL))),
            ({2 + round_}, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
             NULL, NULL, NULL)"""
        )
    got = same(spark, f"SELECT * FROM {db}.ty")
    assert len(got) == 3
    same(spark, f"SELECT k, st.y, m['a'], arr[2] FROM {db}.ty WHERE k = 1", merged=False)
    same(spark, f"SELECT k, ts, ntz, big FROM {db}.ty WHERE d < DATE '2000-01-01'")


def test_avro_statements_of_several_tasks_into_a_bucketed_table_holding_data(spark: Any, db: str) -> None:
    """Avro data files written column by column from several Spark tasks per statement, into
    buckets that already hold files: the merged rows, then a full compaction that reads and
    rewrites them all."""
    spark.sql(
        f"""CREATE TABLE {db}.av (k BIGINT, v STRING, tags ARRAY<INT>, PRIMARY KEY (k) NOT ENFORCED)
            TBLPROPERTIES ('bucket' = '2', 'file.format' = 'avro')"""
    )
    insert = (
        f"INSERT INTO {db}.av SELECT id, concat('{{p}}', id), IF(id % 3 = 0, NULL, array(id, {{n}})) "
        "FROM range({lo}, {hi}, 1, 4)"
    )
    spark.sql(insert.format(p="a", n=1, lo=0, hi=30_000))
    spark.sql(insert.format(p="b", n=2, lo=20_000, hi=40_000))  # upserts 20,000..29,999
    expected = {k: (f"a{k}" if k < 20_000 else f"b{k}") for k in range(40_000)}
    rows = spark.sql(f"SELECT k, v, tags FROM {db}.av").collect()
    assert {r[0]: r[1] for r in rows} == expected
    assert all(r[2] is None if r[0] % 3 == 0 else r[2] == [r[0], 1 if r[0] < 20_000 else 2] for r in rows)
    spark.sql(f"CALL lake.sys.compact(table => '{db.removeprefix('lake.')}.av', compact_strategy => 'full')")
    assert {r[0]: r[1] for r in spark.sql(f"SELECT k, v FROM {db}.av").collect()} == expected
    files = spark.sql(f"SELECT file_path FROM {db}.`av$files`").collect()
    assert files and all(r[0].endswith(".avro") for r in files)


def test_system_tables_and_streaming(spark: Any, db: str, tmp_path: Any) -> None:
    """System tables holding the table's rows ($audit_log, its incremental reads, $binlog, $ro)
    are handed over columnar like merged splits; metadata tables and streaming reads stay on
    Spark's row path. Same rows either way."""
    two_runs(spark, f"{db}.s", "")
    spark.sql(f"CALL lake.sys.compact(table => '{db.split('.')[1]}.s')")  # $ro reads the top level
    # One task per split (2 partitions x 2 buckets), not the whole table in one task.
    assert spark.table(f"{db}.`s$audit_log`").rdd.getNumPartitions() == 4
    for sql, batches in (
        (f"SELECT snapshot_id, commit_kind FROM {db}.`s$snapshots`", False),
        (f"SELECT rowkind, k, a FROM {db}.`s$audit_log`", True),
        (f"SELECT rowkind, k, a FROM {db}.`s$audit_log` WITH ('incremental-between' = '1,2')", True),
        (f"SELECT rowkind, k, b FROM {db}.`s$binlog`", True),
        (f"SELECT k, p, c FROM {db}.`s$ro`", True),
    ):
        with columnar(spark, False):
            df = spark.sql(sql)
            off = rows(df)
            assert not is_columnar(df), sql
        with columnar(spark, True):
            df = spark.sql(sql)
            assert rows(df) == off, sql
            assert is_columnar(df) == batches, (sql, plan_of(df))
        assert off, sql
    results = []
    for i, on in enumerate((False, True)):
        with columnar(spark, on):
            got: list[tuple[Any, ...]] = []
            q = (
                spark.readStream.table(f"{db}.s")
                .writeStream.foreachBatch(lambda df, _, out=got: out.extend(tuple(r) for r in df.collect()))
                .option("checkpointLocation", str(tmp_path / f"cp{i}"))
                .trigger(availableNow=True)
                .start()
            )
            q.awaitTermination(120)
            results.append(sorted(got, key=repr))
    assert results[0] == results[1] and len(results[0]) == 300


def test_mixed_native_and_merged_splits_are_columnar(spark: Any, db: str) -> None:
    """A compacted partition next to a merged one: both kinds of split in one columnar scan."""
    spark.sql(
        f"""CREATE TABLE {db}.mix (k BIGINT, p STRING, a INT, PRIMARY KEY (k, p) NOT ENFORCED)
            PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '1')"""
    )
    for lo in (0, 100):
        spark.sql(
            f"INSERT INTO {db}.mix SELECT id, concat('p', id % 2), CAST(id AS INT) + {lo} "
            f"FROM range({lo}, {lo} + 300)"
        )
    spark.sql(f"CALL lake.sys.compact(table => '{db.split('.')[1]}.mix', partitions => 'p=p0')")
    same(spark, f"SELECT * FROM {db}.mix")
    with columnar(spark, True), native(spark, True):
        assert splits(plan_of(spark.sql(f"SELECT * FROM {db}.mix"))) == (1, 1)
        df = spark.sql(f"SELECT p, sum(a) FROM {db}.mix GROUP BY p")
        assert rows(df) == [
            (f"p{r}", sum(i + (100 if i >= 100 else 0) for i in range(r, 400, 2))) for r in (0, 1)
        ]
        assert is_columnar(df)
