"""Native reads: splits that need no merge are read by Spark's own vectorized Parquet reader.

Every query runs twice, with ``stratalake.read.native.enabled`` on and off, and must return the
same rows; plan checks say which splits went which way.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.spark

NATIVE = "stratalake.read.native.enabled"


@contextmanager
def native(spark: Any, on: bool) -> Iterator[None]:
    old = spark.conf.get(NATIVE, None)
    spark.conf.set(NATIVE, "true" if on else "false")
    try:
        yield
    finally:
        if old is None:
            spark.conf.unset(NATIVE)
        else:
            spark.conf.set(NATIVE, old)


def plan_of(df: Any) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def scan_metrics(df: Any) -> dict[str, int]:
    """The custom metrics of the executed plan's scans (run ``df`` first), summed by name."""
    metrics: dict[str, int] = {}
    scans = df._jdf.queryExecution().executedPlan().collectLeaves()
    for i in range(scans.size()):
        it = scans.apply(i).metrics().iterator()
        while it.hasNext():
            entry = it.next()
            metrics[entry._1()] = metrics.get(entry._1(), 0) + int(entry._2().value())
    return metrics


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def splits(plan: str) -> tuple[int, int]:
    """(native, merged in Python) splits of the plan's stratalake scans, summed."""
    found = re.findall(r"\[splits: (\d+) native, (\d+) merged in Python", plan)
    assert found, plan
    return sum(int(n) for n, _ in found), sum(int(p) for _, p in found)


def same(spark: Any, sql: str) -> tuple[list[tuple[Any, ...]], str]:
    """Rows of ``sql`` with the native path on (checked equal to off) and the plan with it on."""
    with native(spark, False):
        off_df = spark.sql(sql)
        off = rows(off_df)
        assert splits(plan_of(off_df))[0] == 0
    with native(spark, True):
        df = spark.sql(sql)
        plan = plan_of(df)  # before running: an adaptive plan then also prints its initial plan
        on = rows(df)
    assert on == off, sql
    return on, plan


QUERIES = [
    "SELECT * FROM {t}",
    "SELECT k, b FROM {t}",
    "SELECT sum(length(b)), sum(c), max(a), count(*) FROM {t}",
    "SELECT count(*) FROM {t} WHERE a % 7 = 0",
    "SELECT * FROM {t} WHERE k < 20",
    "SELECT k, b FROM {t} WHERE k = 17",
    "SELECT k, a FROM {t} WHERE k IN (3, 4, 500)",
    "SELECT k, b FROM {t} WHERE p = 'p1'",
    "SELECT k, b FROM {t} WHERE p = 'p1' AND k < 40",
    "SELECT k, c FROM {t} WHERE p = 'p0' OR k > 290",
    "SELECT k, a FROM {t} WHERE a > 250",
    "SELECT k FROM {t} WHERE b LIKE 'c1%'",
    "SELECT p, count(*), sum(a) FROM {t} GROUP BY p",
    "SELECT * FROM {t} WHERE c IS NULL",
]


def check_queries(spark: Any, table: str) -> list[str]:
    plans = []
    for q in QUERIES:
        _, plan = same(spark, q.format(t=table))
        plans.append(plan)
    return plans


@pytest.fixture(scope="module")
def kv(spark: Any) -> str:
    """Two partitions x two buckets, two inserts (every bucket has two sorted runs)."""
    db = "lake.native_kv"
    spark.sql(f"CREATE DATABASE {db}")
    spark.sql(
        f"""CREATE TABLE {db}.t (k BIGINT, p STRING, a INT, b STRING, c DOUBLE,
            PRIMARY KEY (k, p) NOT ENFORCED) PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '2')"""
    )
    spark.sql(
        f"INSERT INTO {db}.t SELECT id, concat('p', id % 2), CAST(id AS INT), concat('b', id), "
        f"CASE WHEN id % 11 = 0 THEN NULL ELSE id * 0.5 END FROM range(300)"
    )
    spark.sql(
        f"INSERT INTO {db}.t SELECT id, concat('p', id % 2), CAST(id AS INT) + 1000, concat('c', id), "
        f"id * 1.5 FROM range(0, 300, 3)"
    )
    return f"{db}.t"


def test_merged_splits_then_compaction_makes_them_native(spark: Any, kv: str) -> None:
    for q, plan in zip(QUERIES, check_queries(spark, kv), strict=True):
        if "WHERE k" in q:  # key filters may prune a bucket down to one file (then native)
            continue
        # Every bucket holds two sorted runs: merged in Python where the scan reports key order
        # (it outputs the key of a bucketed table), else read natively after a merge of the keys
        # (tests/spark/test_key_merged_native.py).
        n = 2 if "p = 'p1'" in q else 4
        if q.startswith(("SELECT *", "SELECT k")):
            assert splits(plan) == (0, n), q
        else:
            assert splits(plan) == (n, 0) and f"{n} of the native after a key merge" in plan, q
    spark.sql(f"CALL lake.sys.compact(table => '{kv.split('.', 1)[1]}', compact_strategy => 'full')")
    for q, plan in zip(QUERIES, check_queries(spark, kv), strict=True):
        nat, py = splits(plan)
        assert nat > 0 and py == 0, (q, plan)
    # All splits native: the scan hands Spark columnar batches.
    with native(spark, True):
        df = spark.sql(f"SELECT sum(c), max(a) FROM {kv}")
        df.collect()  # adaptive execution inserts the columnar transition when it runs the stage
        assert "ColumnarToRow" in plan_of(df)
    # Time travel to the first insert: one level-0 file per bucket, no merge either.
    first, plan = same(spark, f"SELECT * FROM {kv} VERSION AS OF 1")
    assert len(first) == 300 and splits(plan) == (4, 0)
    same(spark, f"SELECT k, a FROM {kv} VERSION AS OF 2 WHERE k < 30")


def test_native_metrics(spark: Any, kv: str) -> None:
    spark.sql(f"CALL lake.sys.compact(table => '{kv.split('.', 1)[1]}', compact_strategy => 'full')")
    with native(spark, True):
        df = spark.sql(f"SELECT k, a FROM {kv}")
        assert len(df.collect()) == 300
        metrics = scan_metrics(df)
    assert metrics["stratalakeNativeSplits"] == 4
    assert metrics["stratalakePythonSplits"] == 0
    assert metrics["stratalakeRowsAfterMerge"] == 300


def test_native_reads_share_the_broadcast_hadoop_settings(spark: Any, kv: str) -> None:
    """Scans with equal Hadoop settings share one broadcast of them (Spark's own file scans make
    one per query: most of a short query's planning); a changed setting gets a broadcast of its
    own, and every scan reads the same rows."""
    spark.sql(f"CALL lake.sys.compact(table => '{kv.split('.', 1)[1]}', compact_strategy => 'full')")
    confs = spark._jvm.org.stratalake.spark.scan.NativeParquet.HadoopConfs
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    q = f"SELECT k, a FROM {kv} WHERE k = 17"
    with native(spark, True):
        first = rows(spark.sql(q))
        assert rows(spark.sql(f"SELECT k, b FROM {kv} WHERE k < 5")) != []  # its own read schema
        made = confs.created()
        for _ in range(3):
            assert rows(spark.sql(q)) == first
            assert rows(spark.sql(f"SELECT k, b FROM {kv} WHERE k < 5")) != []
        assert confs.created() == made  # the same settings: shared
        hadoop.set("stratalake.test.broadcast-marker", "changed")
        try:
            assert rows(spark.sql(q)) == first
            assert confs.created() == made + 1  # a changed setting: its own broadcast
        finally:
            hadoop.unset("stratalake.test.broadcast-marker")
    assert first == [(17, 17)]


def test_a_native_scan_reads_the_session_hadoop_settings_once(spark: Any, kv: str) -> None:
    """Copying and digesting the session's ~1,100 Hadoop settings is most of what a reader factory
    costs: a query reads them once, however often Spark copies its scan node and however many
    schemas the scan reads its files with."""
    spark.sql(f"CALL lake.sys.compact(table => '{kv.split('.', 1)[1]}', compact_strategy => 'full')")
    confs = spark._jvm.org.stratalake.spark.scan.NativeParquet.HadoopConfs
    with native(spark, True):
        for q in (f"SELECT k, a FROM {kv} WHERE k = 17", f"SELECT count(*), sum(a) FROM {kv} WHERE k < 50"):
            before = confs.digested()
            df = spark.sql(q)
            assert rows(df) != []
            assert confs.digested() - before == 1, q  # (none when no split is read natively)


def test_compacted_partition_next_to_merged_one(spark: Any, db: str) -> None:
    spark.sql(
        f"""CREATE TABLE {db}.mix (k BIGINT, p STRING, a INT, b STRING, c DOUBLE,
            PRIMARY KEY (k, p) NOT ENFORCED) PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '1')"""
    )
    for lo in (0, 100):
        spark.sql(
            f"INSERT INTO {db}.mix SELECT id, concat('p', id % 2), CAST(id AS INT), concat('c', id), "
            f"id * 0.25 FROM range({lo}, {lo} + 300)"
        )
    spark.sql(f"CALL lake.sys.compact(table => '{db.split('.')[1]}.mix', partitions => 'p=p0')")
    plans = check_queries(spark, f"{db}.mix")
    assert splits(plans[0]) == (1, 1)
    # Mixed: columnar when merged splits come back as batches, else the native split goes row by row.
    for merged_columnar in (True, False):
        spark.conf.set("stratalake.read.columnar.enabled", str(merged_columnar).lower())
        try:
            with native(spark, True):
                df = spark.sql(f"SELECT * FROM {db}.mix")
                df.collect()
                assert ("ColumnarToRow" in plan_of(df)) == merged_columnar
        finally:
            spark.conf.unset("stratalake.read.columnar.enabled")


def vector_casts(spark: Any, sql: str) -> set[str]:
    """The column-vector classes the whole-stage code of ``sql`` holds its input columns as
    (``ColumnVector``, the abstract class, for a scan that reports no vector types)."""
    spark.conf.set("spark.sql.adaptive.enabled", "false")  # (EXPLAIN CODEGEN of the final plan)
    try:
        code = spark.sql(f"EXPLAIN CODEGEN {sql}").collect()[0][0]
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    return set(re.findall(r"private ([\w.]+ColumnVector)\[\] columnartorow_mutableStateArray", code))


def test_generated_code_names_the_vector_class(spark: Any, db: str) -> None:
    """A scan whose batches all have one vector kind names it to Spark's code generator, as Spark's
    file source does, so its whole-stage code is a class of its own rather than one shared with
    every stratalake scan of the same query shape (whose JIT state other vector kinds spoil):
    on-heap (or off-heap) vectors when every split is read natively whole, views of kept rows when
    every split is read natively and some file has deleted or superseded rows, Arrow vectors when
    every split is merged in Python; scans that mix kinds keep the generic code. Each case runs
    for real and agrees with the Python reader."""
    t = f"{db}.vt"
    spark.sql(
        f"""CREATE TABLE {t} (k BIGINT, p STRING, a INT, b STRING, c DOUBLE,
            PRIMARY KEY (k, p) NOT ENFORCED) PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '2')"""
    )
    spark.sql(f"INSERT INTO {t} SELECT id, concat('p', id % 2), CAST(id AS INT), concat('b', id), id * 0.5 FROM range(5000)")
    spark.sql(f"INSERT INTO {t} SELECT id, concat('p', id % 2), -CAST(id AS INT), 'u', id * 0.25 FROM range(0, 5000, 3)")
    agg = f"SELECT sum(length(b)), sum(c), max(a), count(*) FROM {t}"
    expected = [(sum(1 if i % 3 == 0 else len(f"b{i}") for i in range(5000)),
                 sum(i * 0.25 if i % 3 == 0 else i * 0.5 for i in range(5000)),
                 max(i for i in range(5000) if i % 3), 5000)]  # fmt: skip
    arrow = "org.apache.spark.sql.vectorized.ArrowColumnVector"
    onheap = "org.apache.spark.sql.execution.vectorized.OnHeapColumnVector"
    offheap = "org.apache.spark.sql.execution.vectorized.OffHeapColumnVector"
    generic = {"org.apache.spark.sql.vectorized.ColumnVector"}
    views = {"org.stratalake.spark.scan.SelectedColumnVector"}
    # Two sorted runs per bucket: read natively after a key merge, as views of the kept rows.
    assert same(spark, agg)[0] == expected and vector_casts(spark, agg) == views
    # The same merged in Python: Arrow vectors only.
    spark.conf.set("stratalake.read.native-merge.enabled", "false")
    try:
        assert same(spark, agg)[0] == expected and vector_casts(spark, agg) == {arrow}
    finally:
        spark.conf.unset("stratalake.read.native-merge.enabled")
    # One partition compacted, the other still merged in Python: mixed, generic.
    spark.sql(f"CALL lake.sys.compact(table => '{t.split('.', 1)[1]}', partitions => 'p=p0')")
    spark.conf.set("stratalake.read.native-merge.enabled", "false")
    try:
        got, plan = same(spark, agg)
        assert got == expected and splits(plan) == (2, 2) and vector_casts(spark, agg) == generic
    finally:
        spark.conf.unset("stratalake.read.native-merge.enabled")
    # With the key merge: whole files next to key-merged ones, every batch a view (some of all rows).
    got, plan = same(spark, agg)
    assert got == expected and splits(plan) == (4, 0) and vector_casts(spark, agg) == views
    # All compacted: Spark's own vectors, on or off heap as the session sets them.
    spark.sql(f"CALL lake.sys.compact(table => '{t.split('.', 1)[1]}', compact_strategy => 'full')")
    assert same(spark, agg)[0] == expected and vector_casts(spark, agg) == {onheap}
    spark.conf.set("spark.sql.columnVector.offheap.enabled", "true")
    try:
        assert same(spark, agg)[0] == expected and vector_casts(spark, agg) == {offheap}
    finally:
        spark.conf.unset("spark.sql.columnVector.offheap.enabled")
    # Deletion vectors: views too, whether a batch lost rows or not.
    spark.sql(
        f"""CREATE TABLE {t}_dv (k BIGINT, b STRING, PRIMARY KEY (k) NOT ENFORCED)
            TBLPROPERTIES ('bucket' = '2', 'deletion-vectors.enabled' = 'true')"""
    )
    spark.sql(f"INSERT INTO {t}_dv SELECT id, concat('b', id) FROM range(20000)")
    spark.sql(f"DELETE FROM {t}_dv WHERE k < 3000 OR k % 97 = 0")
    dv = f"SELECT count(*), sum(length(b)) FROM {t}_dv"
    live = [k for k in range(20000) if not (k < 3000 or k % 97 == 0)]
    assert same(spark, dv)[0] == [(len(live), sum(len(f"b{k}") for k in live))]
    assert vector_casts(spark, dv) == views
    # A join whose filter may reach the scan at run time (then re-planned: generic code) reads right.
    join = f"SELECT sum(length(x.b)) FROM {t} x JOIN (SELECT 'p1' AS p) y ON x.p = y.p"
    assert same(spark, join)[0] == [(sum(1 if i % 3 == 0 else len(f"b{i}") for i in range(1, 5000, 2)),)]


def test_deletion_vectors_after_updates(spark: Any, db: str, warehouse: Any) -> None:
    spark.sql(
        f"""CREATE TABLE {db}.dv (k BIGINT, p STRING, a INT, b STRING, c DOUBLE,
            PRIMARY KEY (k, p) NOT ENFORCED) PARTITIONED BY (p)
            TBLPROPERTIES ('bucket' = '2', 'deletion-vectors.enabled' = 'true')"""
    )
    spark.sql(
        f"INSERT INTO {db}.dv SELECT id, concat('p', id % 2), CAST(id AS INT), concat('c', id), "
        f"id * 0.5 FROM range(300)"
    )
    spark.sql(f"UPDATE {db}.dv SET a = -a WHERE k % 5 = 0")
    spark.sql(f"DELETE FROM {db}.dv WHERE k % 7 = 0")
    plans = check_queries(spark, f"{db}.dv")
    live = [i for i in range(300) if i % 7 != 0]
    expected = [(len(live), sum(-i if i % 5 == 0 else i for i in live))]
    got, plan = same(spark, f"SELECT count(*), sum(a) FROM {db}.dv")
    assert got == expected
    # Deletion vectors are applied natively: every split (level >= 1 files) is read by Spark.
    assert all(splits(p)[1] == 0 for p in plans) and splits(plan)[0] > 0
    assert any((warehouse / f"{db.split('.')[1]}.db" / "dv" / "index").glob("index-*")), "no vectors"
    # Row by row too (Spark's row-based Parquet reader), value filters kept out of the DV files.
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", "false")
    try:
        got, _ = same(spark, f"SELECT count(*), sum(a) FROM {db}.dv WHERE c > 10")
        assert got == [
            (sum(1 for i in live if i * 0.5 > 10), sum(-i if i % 5 == 0 else i for i in live if i * 0.5 > 10))
        ]
    finally:
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")


def test_deletion_vectors_across_batches(spark: Any, db: str) -> None:
    """Deleted rows in many Parquet batches (Spark decodes 4096 rows at a time): a whole batch
    deleted, deletions on batch edges, nulls and every flat type, through the views of kept rows
    the native reader hands Spark, against the Python reader."""
    spark.sql(
        f"""CREATE TABLE {db}.dvb (k BIGINT, i INT, s STRING, d DOUBLE, m DECIMAL(12, 2), dt DATE,
            f BOOLEAN, ts TIMESTAMP, bin BINARY, sh SMALLINT, PRIMARY KEY (k) NOT ENFORCED)
            TBLPROPERTIES ('bucket' = '1', 'deletion-vectors.enabled' = 'true')"""
    )
    spark.sql(
        f"""INSERT INTO {db}.dvb SELECT id, CAST(id AS INT), IF(id % 11 = 0, NULL, concat('s', id)),
            IF(id % 13 = 0, NULL, id * 0.25), CAST(id / 7 AS DECIMAL(12, 2)), date_add('2020-01-01', CAST(id % 900 AS INT)),
            id % 2 = 0, timestamp_seconds(id * 3600), CAST(concat('b', id) AS BINARY), CAST(id % 30000 AS SMALLINT)
            FROM range(20000)"""
    )
    spark.sql(
        f"DELETE FROM {db}.dvb WHERE k BETWEEN 4096 AND 8191 OR k % 3 = 0 OR k IN (4095, 8192, 12287, 12288, 19999)"
    )
    spark.sql(f"UPDATE {db}.dvb SET i = -i WHERE k % 10 = 1")
    live = [k for k in range(20000) if not (4096 <= k <= 8191 or k % 3 == 0 or k in (4095, 8192, 12287, 12288, 19999))]
    got, plan = same(spark, f"SELECT * FROM {db}.dvb")
    assert [r[0] for r in sorted(got, key=lambda r: r[0])] == live
    assert splits(plan)[0] > 0
    got, _ = same(spark, f"SELECT count(*), count(s), sum(d), sum(i), max(s) FROM {db}.dvb")
    assert got[0][0] == len(live) and got[0][1] == sum(1 for k in live if k % 11 != 0)
    same(spark, f"SELECT k, s FROM {db}.dvb WHERE s LIKE 's1%' AND i < 0")


def test_filtered_reads_of_files_with_deletion_vectors_skip_pages(spark: Any, db: str) -> None:
    """A filter on a file with a deletion vector skips the file's row groups and pages that cannot
    match (Spark's Parquet reader gives each row's position in the file, so the vector still
    applies): fewer rows decoded than the file holds, the same rows as the Python reader, deleted
    rows left out on both sides of a skipped page."""
    spark.sql(
        f"""CREATE TABLE {db}.dvp (k BIGINT, s STRING, v DOUBLE, PRIMARY KEY (k) NOT ENFORCED)
            TBLPROPERTIES ('bucket' = '1', 'deletion-vectors.enabled' = 'true')"""
    )
    n = 200_000  # pages of ~20,000 keys
    spark.sql(f"INSERT INTO {db}.dvp SELECT id, concat('s', id), id * 0.5 FROM range({n})")
    spark.sql(f"DELETE FROM {db}.dvp WHERE k % 1000 IN (7, 8) OR k BETWEEN 30000 AND 30100")
    live = [k for k in range(n) if k % 1000 not in (7, 8) and not 30000 <= k <= 30100]
    got, plan = same(spark, f"SELECT k, s FROM {db}.dvp WHERE k = 41006")
    assert got == [(41006, "s41006")] and splits(plan) == (1, 0), plan
    assert same(spark, f"SELECT k FROM {db}.dvp WHERE k = 41007")[0] == []  # deleted
    lo, hi = 29_000, 31_500
    got, _ = same(spark, f"SELECT count(*), sum(k), min(s) FROM {db}.dvp WHERE k BETWEEN {lo} AND {hi}")
    kept = [k for k in live if lo <= k <= hi]
    assert got == [(len(kept), sum(kept), min(f"s{k}" for k in kept))]
    got, _ = same(spark, f"SELECT k FROM {db}.dvp WHERE k IN (7, 6, 59999, 30050, 45008)")
    assert sorted(got) == [(6,), (59999,)]
    with native(spark, True):
        df = spark.sql(f"SELECT k, s FROM {db}.dvp WHERE k = 41006")
        df.collect()
        decoded = scan_metrics(df)["stratalakeRowsAfterMerge"]
    assert 0 < decoded < n // 4, decoded  # a page or two, not the file


def test_first_row_table(spark: Any, db: str) -> None:
    spark.sql(
        f"""CREATE TABLE {db}.fr (k BIGINT, p STRING, a INT, b STRING, c DOUBLE,
            PRIMARY KEY (k, p) NOT ENFORCED) PARTITIONED BY (p)
            TBLPROPERTIES ('bucket' = '2', 'merge-engine' = 'first-row')"""
    )
    for v in (1, 2):
        spark.sql(
            f"INSERT INTO {db}.fr SELECT id, concat('p', id % 2), CAST(id AS INT) * {v}, concat('c', id), "
            f"id * 0.5 FROM range({v * 100}, 300)"
        )
    plans = check_queries(spark, f"{db}.fr")
    assert splits(plans[0])[0] > 0
    got, _ = same(spark, f"SELECT k, a FROM {db}.fr WHERE k IN (150, 250)")
    assert got == [(150, 150), (250, 250)]


def test_schema_evolution(spark: Any, db: str) -> None:
    spark.sql(
        f"""CREATE TABLE {db}.ev (k BIGINT, p STRING, a INT, b STRING, c DOUBLE,
            PRIMARY KEY (k, p) NOT ENFORCED) PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '2')"""
    )
    spark.sql(
        f"INSERT INTO {db}.ev SELECT id, concat('p', id % 2), CAST(id AS INT), concat('c', id), "
        f"id * 0.5 FROM range(300)"
    )
    spark.sql(f"ALTER TABLE {db}.ev ADD COLUMN d STRING")
    # An added column is absent from old files: Spark's reader fills nulls, as Python does.
    got, plan = same(spark, f"SELECT k, b, d FROM {db}.ev WHERE k < 3")
    assert got == [(0, "c0", None), (1, "c1", None), (2, "c2", None)]
    assert splits(plan)[0] > 0 and splits(plan)[1] == 0
    same(spark, f"SELECT d FROM {db}.ev")
    spark.sql(f"ALTER TABLE {db}.ev RENAME COLUMN a TO a2")
    spark.sql(f"ALTER TABLE {db}.ev DROP COLUMN c")
    spark.sql(f"ALTER TABLE {db}.ev ADD COLUMN c STRING")  # a new field under a dropped one's name
    plans = [
        same(spark, q)[1]
        for q in (
            f"SELECT * FROM {db}.ev",
            f"SELECT k, a2 FROM {db}.ev WHERE k < 9",
            f"SELECT k, c FROM {db}.ev",
        )
    ]
    assert all(splits(p)[0] == 0 for p in plans)  # renamed / reused names: Python maps by field id
    assert splits(same(spark, f"SELECT k, b, d FROM {db}.ev")[1]) == (4, 0)
    spark.sql(f"INSERT INTO {db}.ev VALUES (1000, 'p0', 7, 'x', 'new', '1.0')")
    same(spark, f"SELECT * FROM {db}.ev")
    spark.sql(f"CALL lake.sys.compact(table => '{db.split('.')[1]}.ev', compact_strategy => 'full')")
    got, plan = same(spark, f"SELECT k, a2, d, c FROM {db}.ev WHERE k IN (3, 1000)")
    assert got == sorted([(3, 3, None, None), (1000, 7, "new", "1.0")], key=repr)
    assert splits(plan)[0] > 0


def test_orc_files_fall_back(spark: Any, db: str) -> None:
    spark.sql(
        f"""CREATE TABLE {db}.orc (k BIGINT, p STRING, a INT, b STRING, c DOUBLE,
            PRIMARY KEY (k, p) NOT ENFORCED) PARTITIONED BY (p)
            TBLPROPERTIES ('bucket' = '2', 'file.format' = 'orc')"""
    )
    spark.sql(
        f"INSERT INTO {db}.orc SELECT id, concat('p', id % 2), CAST(id AS INT), concat('c', id), "
        f"id * 0.5 FROM range(300)"
    )
    plans = check_queries(spark, f"{db}.orc")
    assert all(splits(p)[0] == 0 for p in plans)


def test_types_read_natively(spark: Any, db: str) -> None:
    spark.sql(
        f"""CREATE TABLE {db}.ty (k INT, t TINYINT, s SMALLINT, f FLOAT, dec DECIMAL(10, 2),
            big DECIMAL(30, 5), d DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ, bin BINARY, flag BOOLEAN,
            arr ARRAY<INT>, PRIMARY KEY (k) NOT ENFORCED) TBLPROPERTIES ('bucket' = '1')"""
    )
    spark.sql(
        f"""INSERT INTO {db}.ty VALUES
            (1, 1, 2, 1.5, 12.34, 123456789012345678901.12345, DATE '1500-03-01',
             TIMESTAMP '2024-01-02 03:04:05.123456', TIMESTAMP_NTZ '1000-01-01 00:00:00.5',
             X'00ff', true, array(1, 2)),
            (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"""
    )
    flat = "k, t, s, f, dec, big, d, ts, ntz, bin, flag"
    _, plan = same(spark, f"SELECT {flat} FROM {db}.ty")
    assert splits(plan) == (1, 0)
    _, plan = same(spark, f"SELECT * FROM {db}.ty")
    assert splits(plan) == (0, 1)  # arrays are not read natively (yet)
    same(spark, f"SELECT k FROM {db}.ty WHERE d < DATE '2000-01-01' AND dec > 1")


def test_parquet_statistics_prune_row_groups(spark: Any, db: str, warehouse: Any) -> None:
    """Data files carry Parquet row-group statistics; a value filter on a native split skips row
    groups (seen as fewer rows handed to Spark), with the same result as without."""
    import pyarrow.parquet as pq

    from stratalake import Catalog

    spark.sql(
        f"""CREATE TABLE {db}.st (k BIGINT, a INT, PRIMARY KEY (k) NOT ENFORCED)
            TBLPROPERTIES ('bucket' = '1')"""
    )
    t = Catalog(str(warehouse)).get_table(f"{db.split('.')[1]}.st")
    import pyarrow as pa

    n = 300_000  # compaction streams the merge in batches of 128K rows: several row groups
    for lo in range(0, n, 100_000):
        w = t.new_write()
        part = range(lo, lo + 100_000)
        w.write(pa.table({"k": pa.array(part, pa.int64()), "a": pa.array(part, pa.int32())}))
        t.new_commit().commit(w.prepare_commit())
    t.compact(full=True)
    (split,) = t.new_scan().plan()
    (f,) = split.files
    path = f"{t.location}/bucket-0/{f.file_name}"
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups > 1
    assert all(meta.row_group(0).column(i).is_stats_set for i in range(meta.num_columns))
    got, plan = same(spark, f"SELECT count(*), sum(a) FROM {db}.st WHERE a >= {n - 10}")
    assert got == [(10, sum(range(n - 10, n)))] and splits(plan) == (1, 0), plan
    with native(spark, True):
        df = spark.sql(f"SELECT k FROM {db}.st WHERE a >= {n - 10}")
        df.collect()
        metrics = scan_metrics(df)
    assert metrics["stratalakeRowsAfterMerge"] < n  # the first row groups were never decoded


def test_catalog_option_turns_native_reads_off(spark: Any, kv: str, warehouse: Any) -> None:
    """``spark.sql.catalog.<name>.native-read = false``; the session's SQL setting wins over it."""
    from stratalake.spark.session import CATALOG_CLASS

    spark.conf.set("spark.sql.catalog.lake_nonative", CATALOG_CLASS)
    spark.conf.set("spark.sql.catalog.lake_nonative.warehouse", str(warehouse))
    spark.conf.set("spark.sql.catalog.lake_nonative.native-read", "false")
    spark.sql(f"CALL lake.sys.compact(table => '{kv.split('.', 1)[1]}', compact_strategy => 'full')")
    other = kv.replace("lake.", "lake_nonative.", 1)
    q = f"SELECT k, a FROM {other}"
    assert splits(plan_of(spark.sql(q))) == (0, 4)
    assert splits(plan_of(spark.sql(f"SELECT k, a FROM {kv}"))) == (4, 0)
    with native(spark, True):
        df = spark.sql(q)
        assert splits(plan_of(df)) == (4, 0)
        on = rows(df)
    assert rows(spark.sql(q)) == on


def test_partition_aggregates_from_metadata(spark: Any, db: str) -> None:
    """COUNT(*) / MIN / MAX of partition columns GROUP BY partition columns: answered from file
    row counts when every split's live rows are known, else scanned; same answers both ways."""
    spark.sql(
        f"""CREATE TABLE {db}.pa (k BIGINT, p STRING, day DATE, a INT, PRIMARY KEY (k, p, day) NOT ENFORCED)
            PARTITIONED BY (p, day) TBLPROPERTIES ('bucket' = '2')"""
    )
    for lo in (0, 50):
        spark.sql(
            f"INSERT INTO {db}.pa SELECT id, concat('p', id % 3), date_add(DATE '2024-01-01', CAST(id % 4 AS INT)), "
            f"CAST(id AS INT) FROM range({lo}, {lo} + 100)"
        )
    spark.sql(f"DELETE FROM {db}.pa WHERE p = 'p2' AND day = DATE '2024-01-02'")
    queries = {
        f"SELECT p, count(*) FROM {db}.pa GROUP BY p": f"SELECT p, sum(1) FROM {db}.pa GROUP BY p",
        f"SELECT p, day, count(*) FROM {db}.pa GROUP BY p, day": f"SELECT p, day, sum(1) FROM {db}.pa GROUP BY p, day",
        f"SELECT min(day), max(day), min(p), max(p), count(*) FROM {db}.pa": (
            f"SELECT min(date_add(day, 0)), max(date_add(day, 0)), min(concat(p, '')), max(concat(p, '')), sum(1) "
            f"FROM {db}.pa"
        ),
        f"SELECT day, max(p) FROM {db}.pa GROUP BY day": f"SELECT day, max(concat(p, '')) FROM {db}.pa GROUP BY day",
    }

    def check(metadata: bool) -> None:
        for q, scanned in queries.items():
            df = spark.sql(q)
            plan = plan_of(df)
            assert ("BatchScan" not in plan and "LocalTableScan" in plan) == metadata, (q, plan)
            assert rows(df) == rows(spark.sql(scanned)), q

    check(metadata=False)  # two sorted runs per bucket: live rows unknown until merged
    spark.sql(f"CALL lake.sys.compact(table => '{db.split('.')[1]}.pa', compact_strategy => 'full')")
    check(metadata=True)
    # A filter or a non-partition column: scanned.
    assert "aggregate from metadata" not in plan_of(
        spark.sql(f"SELECT p, count(*) FROM {db}.pa WHERE a > 3 GROUP BY p")
    )
    assert "aggregate from metadata" not in plan_of(spark.sql(f"SELECT max(a) FROM {db}.pa"))


def test_value_column_min_max_from_statistics(spark: Any, db: str) -> None:
    """MIN/MAX of integer, boolean and date columns come from file statistics when every row of
    every file is live (compacted primary-key tables, append tables); deleted rows, merges,
    strings and floats are scanned. Same answers as Spark's own aggregation of the rows."""
    spark.sql(
        f"""CREATE TABLE {db}.mm (k BIGINT, p STRING, a INT, f BOOLEAN, day DATE, s STRING, x DOUBLE,
            PRIMARY KEY (k, p) NOT ENFORCED) PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '2')"""
    )
    spark.sql(
        f"INSERT INTO {db}.mm SELECT id, concat('p', id % 3), IF(id % 7 = 0, NULL, CAST(id * 3 - 500 AS INT)), "
        f"id % 5 = 0, date_add(DATE '2024-01-01', CAST(id % 40 AS INT)), concat('s', id), id * 0.5 FROM range(400)"
    )
    spark.sql(f"INSERT INTO {db}.mm SELECT id, concat('p', id % 3), -9999, false, DATE '2020-02-02', 'u', 1.0 FROM range(0, 400, 9)")
    spark.sql(f"ALTER TABLE {db}.mm ADD COLUMN late INT")  # absent from every file: all nulls
    table = f"{db}.mm"
    pushed = {
        f"SELECT min(a), max(a), min(f), max(f), min(day), max(day), max(late), count(*) FROM {table}": (
            f"SELECT min(a + 0), max(a + 0), min(f AND true), max(f AND true), min(date_add(day, 0)), "
            f"max(date_add(day, 0)), max(late + 0), sum(1) FROM {table}"
        ),
        f"SELECT p, min(a), max(day) FROM {table} GROUP BY p": (
            f"SELECT p, min(a + 0), max(date_add(day, 0)) FROM {table} GROUP BY p"
        ),
        f"SELECT max(k), min(k) FROM {table}": f"SELECT max(k + 0), min(k + 0) FROM {table}",
    }
    scanned = [f"SELECT max(s) FROM {table}", f"SELECT max(x) FROM {table}"]

    def check(metadata: bool) -> None:
        for q, computed in pushed.items():
            df = spark.sql(q)
            plan = plan_of(df)
            assert ("BatchScan" not in plan and "LocalTableScan" in plan) == metadata, (q, plan)
            assert rows(df) == rows(spark.sql(computed)), q
        for q in scanned:
            assert "BatchScan" in plan_of(spark.sql(q)), q

    check(metadata=False)  # two sorted runs per bucket: merged
    spark.sql(f"CALL lake.sys.compact(table => '{db.split('.')[1]}.mm', compact_strategy => 'full')")
    check(metadata=True)
    assert rows(spark.sql(f"SELECT min(a), max(a) FROM {table}")) == [(-9999, 3 * 398 - 500)]
    # Deleted rows (a deletion vector, or rows a merge would drop) may hold the extremes: scanned.
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('deletion-vectors.modifiable' = 'true')")
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('deletion-vectors.enabled' = 'true')")
    spark.sql(f"DELETE FROM {table} WHERE a = -9999")
    check(metadata=False)
    spark.sql(f"CALL lake.sys.compact(table => '{db.split('.')[1]}.mm', compact_strategy => 'full')")
    check(metadata=True)
    # Append tables: every written row is live.
    spark.sql(f"CREATE TABLE {db}.ev (ts DATE, n BIGINT, tag STRING)")
    spark.sql(f"INSERT INTO {db}.ev SELECT date_add(DATE '2023-05-01', CAST(id % 100 AS INT)), id - 50, 't' FROM range(1000)")
    spark.sql(f"INSERT INTO {db}.ev VALUES (DATE '1999-12-31', NULL, 'x')")
    df = spark.sql(f"SELECT min(ts), max(n), min(n) FROM {db}.ev")
    assert "LocalTableScan" in plan_of(df)
    assert rows(df) == [(dt.date(1999, 12, 31), 949, -50)]


def test_partition_values_needing_escapes(spark: Any, db: str) -> None:
    """Partition directories with spaces, '%' and '/' escaped in their names read natively."""
    spark.sql(
        f"""CREATE TABLE {db}.esc (k BIGINT, p STRING, a INT, PRIMARY KEY (k, p) NOT ENFORCED)
            PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '1', 'deletion-vectors.enabled' = 'true')"""
    )
    spark.sql(
        f"INSERT INTO {db}.esc SELECT id, element_at(array('a b', 'x%y', 'c/d', 'é=#?'), CAST(id % 4 + 1 AS INT)), "
        f"CAST(id AS INT) FROM range(40)"
    )
    spark.sql(f"UPDATE {db}.esc SET a = -1 WHERE k % 3 = 0")
    got, plan = same(spark, f"SELECT p, count(*), sum(a) FROM {db}.esc GROUP BY p")
    assert len(got) == 4 and splits(plan) == (4, 0)


def test_small_native_splits_share_input_partitions(spark: Any, db: str) -> None:
    """Native splits are packed into input partitions as Spark packs Parquet files (a task per
    small split costs more than reading it): by bucket when the scan reports the bucket layout,
    by size otherwise; never when the scan reports key order (packed rows are not sorted), which
    it reports only for splits too large to pack well (test_catalyst.py)."""
    spark.sql(
        f"""CREATE TABLE {db}.packed (k BIGINT, p STRING, a INT, PRIMARY KEY (k, p) NOT ENFORCED)
            PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '4')"""
    )
    spark.sql(f"INSERT INTO {db}.packed SELECT id, concat('p', id % 4), CAST(id AS INT) FROM range(4000)")
    unordered = spark.sql(f"SELECT a, p FROM {db}.packed")
    assert unordered.rdd.getNumPartitions() == 4  # 16 one-file splits, one partition per bucket
    assert "[splits: 16 native, 0 merged" in plan_of(unordered)
    got, _ = same(spark, f"SELECT p, count(*), sum(a) FROM {db}.packed GROUP BY p")
    assert got == [(f"p{r}", 1000, sum(i for i in range(4000) if i % 4 == r)) for r in range(4)]
    # Selecting the key of these small sorted splits: packed too, rather than a partition per
    # split for a key order.
    keyed = spark.sql(f"SELECT k, a FROM {db}.packed")
    assert keyed.rdd.getNumPartitions() == 4
    assert sorted(keyed.collect()) == [(i, i) for i in range(4000)]
    # An append table (no bucket layout to keep): packed by size alone.
    spark.sql(f"CREATE TABLE {db}.packed_log (k BIGINT, p STRING) PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO {db}.packed_log SELECT id, concat('p', id % 16) FROM range(4000)")
    df = spark.sql(f"SELECT k FROM {db}.packed_log")
    assert "[splits: 16 native, 0 merged" in plan_of(df)
    # Small files: about one partition per core (Spark's maxSplitBytes rule), not one per split.
    assert df.rdd.getNumPartitions() <= spark.sparkContext.defaultParallelism + 1 < 16
    assert sorted(r[0] for r in df.collect()) == list(range(4000))


SPARK_ROW_METADATA = b"org.apache.spark.sql.parquet.row.metadata"


@pytest.mark.parametrize("kind", ["primary-key", "append"])
def test_parquet_page_size_option_sizes_the_pages(spark: Any, db: str, warehouse: Path, kind: str) -> None:
    """'parquet.page.size' (Paimon hands it to parquet-mr) sizes the data pages that stratalake's
    writer (a primary-key table) and Spark's (an append table) write: a point lookup decodes a page
    per file, ~1,000 rows of 4 KiB pages (pyarrow checks a page's size every 1,024 values) against
    the default pages' ~20,000."""
    decoded = {}
    for page in (None, 4096):
        name = f"pg_{kind.replace('-', '_')}_{page or 'default'}"
        key = ", PRIMARY KEY (k) NOT ENFORCED" if kind == "primary-key" else ""
        props = ["'bucket' = '1'" if kind == "primary-key" else "'bucket' = '-1'"]
        if page:
            props.append(f"'parquet.page.size' = '{page}'")
        spark.sql(f"CREATE TABLE {db}.{name} (k BIGINT, s STRING{key}) TBLPROPERTIES ({', '.join(props)})")
        spark.sql(f"INSERT INTO {db}.{name} SELECT id, concat('s', id) FROM range(100000)")
        files = list((warehouse / f"{db.split('.', 1)[1]}.db" / name).rglob("data-*.parquet"))
        # Spark's writer leaves its schema in the footer: the append table's rows went through it.
        by_spark = {SPARK_ROW_METADATA in (pq.ParquetFile(f).metadata.metadata or {}) for f in files}
        assert by_spark == {kind == "append"}, files
        with native(spark, True):
            df = spark.sql(f"SELECT k, s FROM {db}.{name} WHERE k = 41006")
            assert rows(df) == [(41006, "s41006")]
            decoded[page] = scan_metrics(df)["stratalakeRowsAfterMerge"]
    assert 0 < decoded[4096] <= 2_048 and decoded[None] >= 10_000, decoded
