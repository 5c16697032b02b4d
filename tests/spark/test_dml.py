"""Reads and writes through the Python data source: merge-on-read, overwrite modes, time travel."""

from __future__ import annotations

import time
from typing import Any

import pytest
from chispa import assert_df_equality

from stratalake.catalog import Catalog

pytestmark = pytest.mark.spark


def rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in spark.sql(sql).collect()]


def snapshot_id(warehouse: Any, table: str) -> int | None:
    snap = Catalog(str(warehouse)).get_table(table.removeprefix("lake.")).latest_snapshot()
    return None if snap is None else snap.id


def test_insert_update_by_key_and_select(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.kv"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, name STRING, price DOUBLE, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('bucket' = '2')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 1.0), (2, 'b', 2.0), (3, 'c', 3.0)")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'b2', 2.5)")  # update by re-inserting the key
    spark.sql(f"INSERT INTO {t} SELECT id + 10, name, price FROM {t} WHERE id = 1")
    expected = spark.createDataFrame(
        [(1, "a", 1.0), (2, "b2", 2.5), (3, "c", 3.0), (11, "a", 1.0)],
        "id bigint not null, name string, price double",
    )
    assert_df_equality(spark.table(t), expected, ignore_row_order=True)
    assert snapshot_id(warehouse, t) == 3
    # one input partition per bucket split (2 buckets, one unpartitioned table)
    assert spark.table(t).rdd.getNumPartitions() == 2


def test_one_snapshot_per_statement_with_clustered_write(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.many"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
    plan = rows(spark, f"EXPLAIN INSERT INTO {t} SELECT id, id FROM range(10)")[0][0]
    assert "Exchange hashpartitioning(id" in plan  # each key goes to one writer task
    spark.range(0, 1000, numPartitions=4).selectExpr("id", "id * 2 AS v").writeTo(t).append()
    assert snapshot_id(warehouse, t) == 1
    assert rows(spark, f"SELECT count(*), sum(v) FROM {t}") == [(1000, 999000)]


def test_failed_job_commits_nothing(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.fail"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    with pytest.raises(Exception, match="boom"):
        spark.sql(
            f"INSERT INTO {t} SELECT id, CASE WHEN id = 5 THEN raise_error('boom') ELSE 'x' END "
            "FROM range(10)"
        )
    assert snapshot_id(warehouse, t) == 1
    assert rows(spark, f"SELECT * FROM {t}") == [(1, "a")]


def test_null_key_is_rejected(spark: Any, db: str) -> None:
    t = f"{db}.nk"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)")
    with pytest.raises(Exception, match="NOT_NULL_ASSERT_VIOLATION"):
        spark.sql(f"INSERT INTO {t} VALUES (NULL, 'a')")


def test_insert_overwrite_modes(spark: Any, db: str) -> None:
    t = f"{db}.parts"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, dt STRING, v INT, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt)"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 1), (2, 'a', 2), (1, 'b', 3)")
    spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt = 'a') SELECT 5, 50")  # static partition
    assert rows(spark, f"SELECT * FROM {t} ORDER BY dt, id") == [(5, "a", 50), (1, "b", 3)]
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        spark.sql(f"INSERT OVERWRITE {t} VALUES (7, 'b', 70), (8, 'c', 80)")  # replaces b, adds c
        assert rows(spark, f"SELECT * FROM {t} ORDER BY dt, id") == [(5, "a", 50), (7, "b", 70), (8, "c", 80)]
        df = spark.createDataFrame([(9, "c", 90)], "id long, dt string, v int")
        df.writeTo(t).overwritePartitions()
        assert rows(spark, f"SELECT * FROM {t} ORDER BY dt, id") == [(5, "a", 50), (7, "b", 70), (9, "c", 90)]
    finally:
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
    spark.sql(f"INSERT OVERWRITE {t} VALUES (3, 'z', 30)")  # static mode: whole table
    assert rows(spark, f"SELECT * FROM {t}") == [(3, "z", 30)]


def test_filters_are_pushed_down(spark: Any, db: str) -> None:
    t = f"{db}.filt"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, dt STRING, v INT, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '2')"
    )
    spark.sql(f"INSERT INTO {t} SELECT id, IF(id % 2 = 0, 'even', 'odd'), CAST(id AS INT) FROM range(20)")
    df = spark.sql(f"SELECT * FROM {t} WHERE dt = 'even' AND id IN (2, 4, 5) AND v > 2")
    plan = df._jdf.queryExecution().executedPlan().toString()
    filter_line = next(line for line in plan.splitlines() if "Filter" in line)
    assert "v#" in filter_line  # the value filter stays with Spark (it is not safe before the merge)
    assert "dt#" not in filter_line and "id#" not in filter_line  # partition and key filters are pushed
    assert sorted(tuple(r) for r in df.collect()) == [(4, "even", 4)]
    # pruning: fewer splits than the 2 partitions x 2 buckets of the whole table
    assert spark.table(t).rdd.getNumPartitions() == 4
    assert df.rdd.getNumPartitions() <= 2


def test_time_travel(spark: Any, db: str) -> None:
    t = f"{db}.tt"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'first')")
    time.sleep(0.05)
    between = spark.sql("SELECT date_format(current_timestamp(), 'yyyy-MM-dd HH:mm:ss.SSS')").collect()[0][0]
    time.sleep(0.05)
    spark.sql(f"INSERT INTO {t} VALUES (1, 'second')")
    assert rows(spark, f"SELECT v FROM {t}") == [("second",)]
    assert rows(spark, f"SELECT v FROM {t} VERSION AS OF 1") == [("first",)]
    assert rows(spark, f"SELECT v FROM {t} TIMESTAMP AS OF '{between}'") == [("first",)]
    assert spark.read.option("versionAsOf", 1).table(t).collect()[0].v == "first"
    with pytest.raises(Exception, match="SnapshotNotFoundError"):
        spark.sql(f"SELECT * FROM {t} TIMESTAMP AS OF '2000-01-01 00:00:00'").collect()


def test_ctas_and_save_as_table_keep_the_key(spark: Any, db: str, warehouse: Any) -> None:
    src = spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string")
    src.createOrReplaceTempView("ctas_src")
    spark.sql(f"CREATE TABLE {db}.ctas TBLPROPERTIES ('primary-key' = 'id') AS SELECT * FROM ctas_src")
    assert rows(spark, f"SELECT * FROM {db}.ctas ORDER BY id") == [(1, "a"), (2, "b")]

    t = f"{db}.saved"
    src.write.option("primary-key", "id").option("bucket", "2").saveAsTable(t)
    spark.createDataFrame([(2, "b2")], "id long, v string").write.mode("append").saveAsTable(t)
    assert rows(spark, f"SELECT * FROM {t} ORDER BY id") == [(1, "a"), (2, "b2")]
    spark.createDataFrame([(3, "c")], "id long, v string").write.mode("overwrite").saveAsTable(t)
    assert rows(spark, f"SELECT * FROM {t}") == [(3, "c")]
    props = dict(spark.sql(f"SHOW TBLPROPERTIES {t}").collect())
    assert props["primary-key"] == "id" and props["bucket"] == "2"
    assert snapshot_id(warehouse, t) == 3  # the overwrite kept the table and its history


def test_merge_engines(spark: Any, db: str) -> None:
    t = f"{db}.pu"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, price DOUBLE, sales BIGINT, description STRING, "
        "PRIMARY KEY (id) NOT ENFORCED) WITH ('merge-engine' = 'partial-update')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 23.0, 10, NULL)")
    spark.sql(f"INSERT INTO {t} VALUES (1, NULL, NULL, 'This is a book')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 25.2, NULL, NULL)")
    assert rows(spark, f"SELECT * FROM {t}") == [(1, 25.2, 10, "This is a book")]


def test_data_source_by_name(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.direct"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)")
    name = t.removeprefix("lake.")
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string")
    df.write.format("stratalake").option("warehouse", str(warehouse)).option("table", name).mode(
        "append"
    ).save()
    read = spark.read.format("stratalake").option("warehouse", str(warehouse)).option("table", name).load()
    assert read.schema.simpleString() == "struct<id:bigint,v:string>"
    assert sorted(tuple(r) for r in read.collect()) == [(1, "a"), (2, "b")]


def test_partial_static_partition_overwrite(spark: Any, db: str) -> None:
    t = f"{db}.twolevel"
    spark.sql(
        f"CREATE TABLE {t} (id INT, dt STRING, hr INT, PRIMARY KEY (id, dt, hr) NOT ENFORCED) "
        "PARTITIONED BY (dt, hr)"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x', 1), (2, 'x', 2), (3, 'y', 1)")
    spark.sql(f"INSERT OVERWRITE {t} PARTITION (dt = 'x') SELECT 4, 3")  # replaces all of dt = 'x'
    assert rows(spark, f"SELECT * FROM {t} ORDER BY id") == [(3, "y", 1), (4, "x", 3)]
