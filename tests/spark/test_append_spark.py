"""Append tables (no primary key) through Spark SQL: DDL, inserts, overwrites, reads, system tables."""

from __future__ import annotations

from typing import Any

import pytest

import stratalake

pytestmark = pytest.mark.spark


def _rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def test_append_table_create_insert_overwrite_select(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.events"
    spark.sql(f"CREATE TABLE {t} (ts BIGINT, user STRING, dt STRING) PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 'x'), (2, 'b', 'x'), (3, 'a', 'y')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 'x')")  # duplicates are kept
    assert _rows(spark, f"SELECT * FROM {t}") == [(1, "a", "x"), (1, "a", "x"), (2, "b", "x"), (3, "a", "y")]
    assert _rows(spark, f"SELECT ts FROM {t} WHERE dt = 'y'") == [(3,)]
    assert _rows(spark, f"SELECT user FROM {t} WHERE ts >= 2") == [("a",), ("b",)]
    assert spark.sql(f"SELECT count(*) FROM {t}").collect()[0][0] == 4
    # Static and dynamic partition overwrites.
    spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt = 'x') VALUES (10, 'c')")
    assert _rows(spark, f"SELECT * FROM {t}") == [(3, "a", "y"), (10, "c", "x")]
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        spark.sql(f"INSERT OVERWRITE {t} VALUES (20, 'd', 'y')")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    assert _rows(spark, f"SELECT * FROM {t}") == [(10, "c", "x"), (20, "d", "y")]
    # Time travel and system tables.
    assert _rows(spark, f"SELECT * FROM {t} VERSION AS OF 1") == [(1, "a", "x"), (2, "b", "x"), (3, "a", "y")]
    kinds = [
        r[0]
        for r in spark.sql(f"SELECT commit_kind FROM {db}.`events$snapshots` ORDER BY snapshot_id").collect()
    ]
    assert kinds == ["APPEND", "APPEND", "OVERWRITE", "OVERWRITE"]
    assert {r[0] for r in spark.sql(f"SELECT rowkind FROM {db}.`events$audit_log`").collect()} == {"+I"}
    assert spark.sql(f"SELECT count(*) FROM {db}.`events$files`").collect()[0][0] == 2
    assert _rows(spark, f"SELECT partition, record_count FROM {db}.`events$partitions`") == [
        ("dt=x", 1),
        ("dt=y", 1),
    ]
    # Schema evolution.
    spark.sql(f"ALTER TABLE {t} ADD COLUMN n INT")
    spark.sql(f"INSERT INTO {t} VALUES (30, 'e', 'x', 7)")
    assert _rows(spark, f"SELECT ts, n FROM {t} WHERE n IS NOT NULL OR ts = 10") == [(10, None), (30, 7)]
    cat = stratalake.Catalog(str(warehouse))
    assert cat.get_table(t.removeprefix("lake.")).options()["bucket"] == "-1"
    # Partition-only DELETE drops partitions (row-level DML: tests/spark/test_append_dml.py).
    spark.sql(f"DELETE FROM {t} WHERE dt = 'y'")
    assert _rows(spark, f"SELECT ts FROM {t}") == [(10,), (30,)]
    # DELETE on value columns: the files holding matching rows are rewritten, one snapshot.
    before = spark.sql(f"SELECT count(*) FROM {db}.`events$snapshots`").collect()[0][0]
    spark.sql(f"DELETE FROM {t} WHERE n = 7 OR user = 'nobody'")
    assert _rows(spark, f"SELECT ts FROM {t}") == [(10,)]
    assert spark.sql(f"SELECT count(*) FROM {db}.`events$snapshots`").collect()[0][0] == before + 1


def test_fixed_bucket_append_table_ctas_writeto_and_compact(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.fixed"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) TBLPROPERTIES ('bucket' = '3', 'bucket-key' = 'id')")
    df = spark.range(0, 200).selectExpr("id", "cast(id % 7 as string) as v").repartition(4)
    for _ in range(3):
        df.writeTo(t).append()
    assert spark.sql(f"SELECT count(*), count(distinct id) FROM {t}").collect()[0][:] == (600, 200)
    cat = stratalake.Catalog(str(warehouse))
    table = cat.get_table(t.removeprefix("lake."))
    snap = table.latest_snapshot()
    assert snap is not None
    entries = table.live_entries(snap)
    # One writer per bucket per statement (clustered by bucket): 3 files per bucket, no more.
    assert sorted({e.bucket for e in entries}) == [0, 1, 2] and len(entries) == 9
    spark.sql(f"CALL lake.sys.compact(table => '{t.removeprefix('lake.')}', compact_strategy => 'full')")
    table = cat.get_table(t.removeprefix("lake."))
    assert len(table.live_entries(table.latest_snapshot())) == 3  # type: ignore[arg-type]
    assert spark.sql(f"SELECT count(*) FROM {t}").collect()[0][0] == 600
    with pytest.raises(Exception, match=r"sort compaction\) of append table .*fixed is not supported yet"):
        spark.sql(
            f"CALL lake.sys.compact(table => '{t.removeprefix('lake.')}', order_strategy => 'order', order_by => 'v')"
        )
    # CTAS and writeTo().create() without a primary key make append tables.
    spark.sql(f"CREATE TABLE {db}.ctas AS SELECT * FROM {t} WHERE id < 10")
    assert spark.sql(f"SELECT count(*) FROM {db}.ctas").collect()[0][0] == 30
    df.limit(5).writeTo(f"{db}.created").create()
    assert spark.sql(f"SELECT count(*) FROM {db}.created").collect()[0][0] == 5
    assert cat.get_table(f"{db.removeprefix('lake.')}.created").schema().primary_keys == ()


def test_append_table_streams_in_and_out(spark: Any, db: str, tmp_path: Any) -> None:
    src, dst = f"{db}.src", f"{db}.dst"
    spark.sql(f"CREATE TABLE {src} (id BIGINT, v STRING)")
    spark.sql(f"CREATE TABLE {dst} (id BIGINT, v STRING)")
    spark.sql(f"INSERT INTO {src} VALUES (1, 'a'), (1, 'a')")

    def run() -> None:
        q = (
            spark.readStream.table(src)
            .writeStream.option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .toTable(dst)
        )
        q.awaitTermination(120)

    run()
    assert _rows(spark, f"SELECT * FROM {dst}") == [(1, "a"), (1, "a")]
    spark.sql(f"INSERT INTO {src} VALUES (2, 'b')")
    spark.sql(f"INSERT INTO {src} VALUES (3, 'c')")
    run()  # restarts from the checkpoint: each appended row once, snapshot by snapshot
    assert _rows(spark, f"SELECT * FROM {dst}") == [(1, "a"), (1, "a"), (2, "b"), (3, "c")]
    run()  # nothing new: nothing committed twice
    assert spark.sql(f"SELECT count(*) FROM {dst}").collect()[0][0] == 4
