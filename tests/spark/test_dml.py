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
    # each bucket (so each key) goes to one writer task: Paimon's bucket function in the shuffle
    # (unpartitioned: the bucket's channel among the shuffle partitions, bucket b to task b mod M)
    assert "Exchange hashpartitioning(applyfunctionexpression(stratalake.stratalake_slice(bigint), 4, " in plan, plan
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
    q = f"SELECT * FROM {t} WHERE dt = 'even' AND id IN (2, 4, 5) AND v > 2"
    # Key filters are exact only without native reads (Spark's Parquet reader filters no rows).
    spark.conf.set("stratalake.read.native.enabled", "false")
    try:
        df = spark.sql(q)
        plan = df._jdf.queryExecution().executedPlan().toString()
        assert sorted(tuple(r) for r in df.collect()) == [(4, "even", 4)]
    finally:
        spark.conf.unset("stratalake.read.native.enabled")
    filter_line = next(line for line in plan.splitlines() if "Filter" in line)
    assert "v#" in filter_line  # the value filter stays with Spark (it is not safe before the merge)
    assert "dt#" not in filter_line and "id#" not in filter_line  # partition and key filters are pushed
    df = spark.sql(q)
    filter_line = next(
        line for line in df._jdf.queryExecution().executedPlan().toString().splitlines() if "Filter" in line
    )
    assert "dt#" not in filter_line and "id#" in filter_line  # native reads: only partition filters
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


def test_overwrite_of_a_deletion_vector_table_is_visible(spark: Any, db: str) -> None:
    # Batch reads of deletion-vector tables skip level 0: the overwrite must not be stuck there.
    t = f"{db}.dv"
    spark.sql(
        f"CREATE TABLE {t} (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('bucket' = '2', 'deletion-vectors.enabled' = 'true')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'B')")
    assert rows(spark, f"SELECT * FROM {t} ORDER BY id") == [(1, "a"), (2, "B")]
    spark.sql(f"INSERT OVERWRITE {t} VALUES (1, 'x'), (2, 'y'), (3, 'c'), (4, 'd')")
    assert rows(spark, f"SELECT * FROM {t} ORDER BY id") == [(1, "x"), (2, "y"), (3, "c"), (4, "d")]


# ---- row-level DML: DELETE / UPDATE / MERGE INTO ------------------------------------------------


def _py_rows(warehouse: Any, table: str) -> list[tuple[Any, ...]]:
    t = Catalog(str(warehouse)).get_table(table.removeprefix("lake."))
    data = t.read()
    return sorted(tuple(r.values()) for r in data.to_pylist())


def _snapshots(warehouse: Any, table: str) -> list[tuple[int, str]]:
    t = Catalog(str(warehouse)).get_table(table.removeprefix("lake."))
    return [(s.id, s.commit_kind.value) for s in t.snapshots()]


def _kv_table(spark: Any, t: str, options: str = "'bucket' = '2'") -> None:
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, v STRING, n INT, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        f"PARTITIONED BY (dt) WITH ({options})"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 1, 'd1'), (2, 'b', 2, 'd1'), (3, 'c', 3, 'd2')")


def test_update_writes_change_records_in_one_snapshot(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.upd"
    _kv_table(spark, t)
    spark.sql(f"UPDATE {t} SET v = concat(v, '!'), n = n * 10 WHERE n >= 2")
    assert _py_rows(warehouse, t) == [(1, "a", 1, "d1"), (2, "b!", 20, "d1"), (3, "c!", 30, "d2")]
    assert rows(spark, f"SELECT id, v FROM {t} ORDER BY id") == [(1, "a"), (2, "b!"), (3, "c!")]
    assert _snapshots(warehouse, t) == [(1, "APPEND"), (2, "APPEND")]
    audit = Catalog(str(warehouse)).get_table(t.removeprefix("lake.")).changelog(1, 2)
    assert sorted(audit.column("_row_kind").to_pylist()) == ["+U", "+U"]


def test_row_level_delete_writes_retractions(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.del"
    _kv_table(spark, t)
    spark.sql(f"DELETE FROM {t} WHERE n = 2 OR v = 'c'")
    assert _py_rows(warehouse, t) == [(1, "a", 1, "d1")]
    assert _snapshots(warehouse, t)[-1] == (2, "APPEND")


def test_partition_delete_is_metadata_only(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.pdel"
    _kv_table(spark, t)
    plan = rows(spark, f"EXPLAIN DELETE FROM {t} WHERE dt = 'd1'")[0][0]
    assert "DeleteFromTable" in plan and "BatchScan" not in plan
    table = Catalog(str(warehouse)).get_table(t.removeprefix("lake."))
    before = table.live_entries(table.latest_snapshot())  # type: ignore[arg-type]
    spark.sql(f"DELETE FROM {t} WHERE dt = 'd1'")
    assert _py_rows(warehouse, t) == [(3, "c", 3, "d2")]
    snap = table.latest_snapshot()
    assert snap is not None and snap.commit_kind.value == "OVERWRITE"
    after = table.live_entries(snap)
    # no data file was written: the surviving files are the old ones
    assert {e.file.file_name for e in after} < {e.file.file_name for e in before}
    spark.sql(f"DELETE FROM {t}")  # no condition: truncate
    assert _py_rows(warehouse, t) == []


def test_point_delete_on_full_key_does_not_scan(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.point"
    _kv_table(spark, t)
    plan = rows(spark, f"EXPLAIN DELETE FROM {t} WHERE id IN (1, 3) AND dt = 'd1'")[0][0]
    assert "DeleteFromTable" in plan and "BatchScan" not in plan
    spark.sql(f"DELETE FROM {t} WHERE id IN (1, 3) AND dt = 'd1'")
    assert _py_rows(warehouse, t) == [(2, "b", 2, "d1"), (3, "c", 3, "d2")]
    assert _snapshots(warehouse, t)[-1] == (2, "APPEND")


def test_merge_into_all_clauses(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.merge"
    _kv_table(spark, t)
    spark.createDataFrame(
        [(1, "a2", 10, "d1"), (2, "gone", 0, "d1"), (7, "new", 70, "d3")],
        "id long, v string, n int, dt string",
    ).createOrReplaceTempView("merge_src")
    spark.sql(
        f"""MERGE INTO {t} t USING merge_src s ON t.id = s.id AND t.dt = s.dt
        WHEN MATCHED AND s.v = 'gone' THEN DELETE
        WHEN MATCHED THEN UPDATE SET *
        WHEN NOT MATCHED AND s.n > 0 THEN INSERT *
        WHEN NOT MATCHED BY SOURCE AND t.n = 3 THEN UPDATE SET v = 'orphan'"""
    )
    assert _py_rows(warehouse, t) == [(1, "a2", 10, "d1"), (3, "orphan", 3, "d2"), (7, "new", 70, "d3")]
    assert len(_snapshots(warehouse, t)) == 2  # one snapshot for the statement
    spark.sql(
        f"MERGE INTO {t} t USING merge_src s ON t.id = s.id AND t.dt = s.dt "
        "WHEN NOT MATCHED BY SOURCE THEN DELETE"
    )
    assert [r[0] for r in _py_rows(warehouse, t)] == [1, 7]


def test_partial_update_table_update(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.pu"
    _kv_table(spark, t, "'merge-engine' = 'partial-update'")
    spark.sql(f"UPDATE {t} SET v = 'z' WHERE id = 2")
    assert _py_rows(warehouse, t)[1] == (2, "z", 2, "d1")


def test_row_level_rules(spark: Any, db: str) -> None:
    t = f"{db}.rules"
    _kv_table(spark, t)
    with pytest.raises(Exception, match="cannot change primary-key column 'id'"):
        spark.sql(f"UPDATE {t} SET id = 9 WHERE id = 1")
    with pytest.raises(Exception, match="cannot change primary-key column 'dt'"):
        spark.sql(f"UPDATE {t} SET dt = 'd9' WHERE id = 1")
    spark.createDataFrame(
        [(1, "x", 1, "d1"), (1, "y", 2, "d1")], "id long, v string, n int, dt string"
    ).createOrReplaceTempView("dup_src")
    with pytest.raises(Exception, match="MERGE_CARDINALITY_VIOLATION"):
        spark.sql(
            f"MERGE INTO {t} t USING dup_src s ON t.id = s.id AND t.dt = s.dt WHEN MATCHED THEN UPDATE SET *"
        )
    agg = f"{db}.agg"
    spark.sql(
        f"CREATE TABLE {agg} (id BIGINT, n BIGINT, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('merge-engine' = 'aggregation', 'fields.n.aggregate-function' = 'sum')"
    )
    with pytest.raises(Exception, match="UPDATE and MERGE INTO are supported on 'deduplicate'"):
        spark.sql(f"UPDATE {agg} SET n = 1")
    # Not column-vs-literal predicates: Spark's row-level plan by position (table/row_delete.py).
    spark.sql(f"INSERT INTO {agg} VALUES (1, 1), (2, 5)")
    spark.sql(f"DELETE FROM {agg} WHERE n + 1 = 2")
    assert rows(spark, f"SELECT * FROM {agg}") == [(2, 5)]
    first = f"{db}.first"
    spark.sql(
        f"CREATE TABLE {first} (id BIGINT, n BIGINT, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('merge-engine' = 'first-row')"
    )
    spark.sql(f"INSERT INTO {first} VALUES (1, 1, 'a'), (2, 2, 'b')")
    spark.sql(f"DELETE FROM {first} WHERE n = 1")  # the stored row goes (test_delete_merge_engines)
    spark.sql(f"DELETE FROM {first} WHERE dt = 'b'")  # whole partitions: any engine
    assert rows(spark, f"SELECT id FROM {first}") == []


def test_seed_walkthrough_delete_then_compact(spark: Any, db: str, warehouse: Any) -> None:
    """The Paimon primary-key table walk-through (seed 004): 10 partitions, a DELETE, a compaction."""
    t = f"{db}.T"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, a INT, b STRING, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt)"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 10001, 'varchar00001', '20230501')")
    values = ", ".join(f"({i}, {10000 + i}, 'varchar{i:05d}', '202305{i:02d}')" for i in range(2, 11))
    spark.sql(f"INSERT INTO {t} VALUES {values}")
    table = Catalog(str(warehouse)).get_table(t.removeprefix("lake."))

    def delta_entries(snapshot_id: int) -> list[tuple[str, str]]:
        snap = table.snapshot(snapshot_id)
        mio = table.manifest_io
        return [
            (e.kind.name, table.partition_codec.to_dict(e.partition)["dt"])
            for m in mio.read_list(snap.delta_manifest_list)
            for e in mio.read_entries(m.file_name)
        ]

    # As in the walk-through, a DELETE that reads rows writes one -D file per touched partition
    # (the extra "a > 0" keeps it row-level; by partition alone it would drop the partitions).
    spark.sql(f"DELETE FROM {t} WHERE dt >= '20230503' AND a > 0")
    assert table.snapshot(3).commit_kind.value == "APPEND"
    assert sorted(delta_entries(3)) == [("ADD", f"202305{i:02d}") for i in range(3, 11)]
    assert rows(spark, f"SELECT id FROM {t} ORDER BY id") == [(1,), (2,)]

    spark.sql(f"CALL lake.sys.compact(table => '{t.removeprefix('lake.')}', compact_strategy => 'full')")
    snap4 = table.snapshot(4)
    assert snap4.commit_kind.value == "COMPACT"
    entries = delta_entries(4)
    # 18 DELETE (two files in each of 8 emptied partitions, one upgraded file in 0501 and 0502)
    # and 2 ADD (the upgraded files: metadata only, the same file names).
    assert sum(1 for k, _ in entries if k == "DELETE") == 18
    assert sorted(p for k, p in entries if k == "ADD") == ["20230501", "20230502"]
    assert _py_rows(warehouse, t) == [
        (1, 10001, "varchar00001", "20230501"),
        (2, 10002, "varchar00002", "20230502"),
    ]


def test_seed_walkthrough_partition_delete_is_metadata_only(spark: Any, db: str, warehouse: Any) -> None:
    """The same walk-through with the plain partition DELETE: partitions are dropped, nothing written."""
    t = f"{db}.T2"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, a INT, b STRING, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt)"
    )
    values = ", ".join(f"({i}, {10000 + i}, 'varchar{i:05d}', '202305{i:02d}')" for i in range(1, 11))
    spark.sql(f"INSERT INTO {t} VALUES {values}")
    spark.sql(f"DELETE FROM {t} WHERE dt >= '20230503'")
    table = Catalog(str(warehouse)).get_table(t.removeprefix("lake."))
    snap = table.latest_snapshot()
    assert snap is not None and snap.commit_kind.value == "OVERWRITE"
    mio = table.manifest_io
    kinds = [
        e.kind.name for m in mio.read_list(snap.delta_manifest_list) for e in mio.read_entries(m.file_name)
    ]
    assert kinds == ["DELETE"] * 8
    assert rows(spark, f"SELECT id FROM {t} ORDER BY id") == [(1,), (2,)]


def test_partition_delete_with_force_produce_changelog_writes_deletes(
    spark: Any, db: str, warehouse: Any
) -> None:
    """'delete.force-produce-changelog': a DELETE on partition columns only must write '-D' records
    (changelog readers see them), not drop the partitions without change records."""
    t = f"{db}.fc"
    spark.sql(
        f"CREATE TABLE {t} (id INT, name STRING, dt STRING, hh STRING, PRIMARY KEY (id, dt, hh) NOT ENFORCED) "
        "PARTITIONED BY (dt, hh) WITH ('changelog-producer' = 'input', "
        "'delete.force-produce-changelog' = 'true')"
    )
    spark.sql(
        f"INSERT INTO {t} VALUES (1, 'a', 'd1', '12'), (2, 'b', 'd1', '12'), (3, 'c', 'd2', '12'), "
        "(4, 'd', 'd2', '13')"
    )
    spark.sql(f"DELETE FROM {t} WHERE hh = '12'")
    table = Catalog(str(warehouse)).get_table(t.removeprefix("lake."))
    changes = table.changelog(1, 2)
    kinds = changes.column("_row_kind").to_pylist()
    assert sorted(zip(kinds, changes.column("id").to_pylist(), strict=True)) == [("-D", 1), ("-D", 2), ("-D", 3)]
    assert rows(spark, f"SELECT id FROM {t}") == [(4,)]
    spark.sql(f"DELETE FROM {t}")  # without a condition it still truncates, as Paimon's
    assert rows(spark, f"SELECT id FROM {t}") == []
