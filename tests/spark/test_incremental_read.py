"""Incremental reads through Spark: Paimon's ``incremental-between`` read options (also as session
settings), its ``$audit_log`` with them, and the ``paimon_incremental_*`` table functions."""

from __future__ import annotations

from typing import Any

import pytest


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def test_incremental_between_snapshots_tags_and_timestamps(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.inc"
    name = t.removeprefix("lake.")
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")  # snapshot 1
    spark.sql(f"CALL lake.sys.create_tag(table => '{name}', tag => 't1')")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'bb'), (3, 'c')")  # snapshot 2
    spark.sql(f"DELETE FROM {t} WHERE id = 1")  # snapshot 3
    spark.sql(f"CALL lake.sys.create_tag(table => '{name}', tag => 't3')")

    # Snapshot ids (start exclusive): what each snapshot wrote; the delete's -D is dropped.
    assert _rows(spark.read.option("incremental-between", "1,3").table(t)) == [(2, "bb"), (3, "c")]
    assert _rows(spark.read.option("incremental-between", "0,1").table(t)) == [(1, "a"), (2, "b")]
    # The same through the data source without the catalog.
    direct = spark.read.format("stratalake").option("warehouse", str(warehouse)).option("table", name)
    assert _rows(direct.option("incremental-between", "1,3").load()) == [(2, "bb"), (3, "c")]
    # Its $audit_log keeps every record with its row kind.
    audit = spark.read.option("incremental-between", "1,3").table(f"{db}.`inc$audit_log`")
    # (DELETE by key writes a -D record holding the key alone.)
    assert _rows(audit) == [("+I", 2, "bb"), ("+I", 3, "c"), ("-D", 1, None)]
    binlog = spark.read.option("incremental-between", "1,3").table(f"{db}.`inc$binlog`")
    assert _rows(binlog.selectExpr("rowkind", "id[0]")) == [("+I", 2), ("+I", 3), ("-D", 1)]
    # Tags: the difference between the two states.
    assert _rows(spark.read.option("incremental-between", "t1,t3").table(t)) == [(2, "bb"), (3, "c")]
    diff = spark.read.option("incremental-between", "t1,t3").table(f"{db}.`inc$audit_log`")
    assert _rows(diff) == [("+I", 2, "bb"), ("+I", 3, "c"), ("-D", 1, None)]
    # A session setting is a read option of every scan, SQL included; COUNT(*) reads the changes.
    spark.sql("SET `spark.stratalake.incremental-between` = 2,3")
    try:
        assert _rows(spark.sql(f"SELECT * FROM {t}")) == []
        assert _rows(spark.sql(f"SELECT rowkind, id FROM {db}.`inc$audit_log`")) == [("-D", 1)]
    finally:
        spark.sql("RESET `spark.stratalake.incremental-between`")
    assert spark.read.option("incremental-between", "0,2").table(t).count() == 4
    times = [r[0] for r in spark.sql(f"SELECT unix_millis(commit_time) FROM {db}.`inc$snapshots` ORDER BY snapshot_id").collect()]
    by_time = spark.read.option("incremental-between-timestamp", f"{times[0]},{times[1]}").table(t)
    assert _rows(by_time) == [(2, "bb"), (3, "c")]

    with pytest.raises(Exception, match=r"table t\d+\.inc: read option 'incremental-between' = '3,1': the start snapshot"):
        spark.read.option("incremental-between", "3,1").table(t).collect()
    with pytest.raises(Exception, match=r"'x' and 'y' are not tags, and the values are not two snapshot ids"):
        spark.read.option("incremental-between", "x,y").table(t).collect()
    with pytest.raises(Exception, match=r"read option 'incremental-between' reads changes between two versions and read option 'scan.snapshot-id'"):
        spark.read.option("incremental-between", "1,2").option("scan.snapshot-id", "1").table(t).collect()
    with pytest.raises(Exception, match=r"'changelog' reads changelog files, and the table has no 'changelog-producer'"):
        spark.read.option("incremental-between", "1,2").option("incremental-between-scan-mode", "changelog").table(t).collect()


def test_table_functions(spark: Any, db: str) -> None:
    """Paimon's ``paimon_incremental_*`` table functions and their ``stratalake_`` aliases read
    the table with the incremental read options; a bare name resolves in the current database."""
    t = f"{db}.fn"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'b'), (2, 'c')")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'd')")
    short = t.removeprefix("lake.")
    assert _rows(spark.sql(f"SELECT * FROM paimon_incremental_query('{t}', 1, 3)")) == [(1, "b"), (2, "c"), (3, "d")]
    assert _rows(spark.sql(f"SELECT id FROM stratalake_incremental_query('{t}', '2', '3')")) == [(3,)]
    audit = spark.sql(f"SELECT rowkind, id FROM paimon_incremental_query('{db}.`fn$audit_log`', 0, 2) WHERE id = 1")
    assert _rows(audit) == [("+I", 1), ("+I", 1)]
    times = [r[0] for r in spark.sql(f"SELECT unix_millis(commit_time) FROM {db}.`fn$snapshots` ORDER BY snapshot_id").collect()]
    before = f"{spark.catalog.currentCatalog()}.{spark.catalog.currentDatabase()}"
    spark.sql(f"USE {db}")
    try:
        by_time = spark.sql(f"SELECT * FROM paimon_incremental_between_timestamp('fn', {times[1]}, {times[2]})")
        assert _rows(by_time) == [(3, "d")]
        spark.sql(f"USE {db.removesuffix('.' + short.split('.')[0])}")  # the catalog alone
        assert _rows(spark.sql(f"SELECT * FROM paimon_incremental_query('{short}', 0, 1)")) == [(1, "a")]
    finally:
        spark.sql(f"USE {before}")
    spark.sql(f"CALL lake.sys.create_tag(table => '{short}', tag => '2024-12-01', snapshot => 1)")
    spark.sql(f"CALL lake.sys.create_tag(table => '{short}', tag => '2024-12-02', snapshot => 3)")
    auto = spark.sql(f"SELECT * FROM stratalake_incremental_to_auto_tag('{t}', '2024-12-02')")
    assert _rows(auto) == [(1, "b"), (2, "c"), (3, "d")]
    with pytest.raises(Exception, match=r"paimon_incremental_query takes 3 arguments \(table, start, end\), got 2"):
        spark.sql(f"SELECT * FROM paimon_incremental_query('{t}', 1)").collect()
    with pytest.raises(Exception, match=r"snapshot 7 does not exist; the latest is 3"):
        spark.sql(f"SELECT * FROM paimon_incremental_query('{t}', 1, 7)").collect()


def test_streams_refuse_incremental_options() -> None:
    """As Paimon ("Cannot read incremental in streaming mode"); no Spark session needed."""
    from pyspark.sql.types import LongType, StructField, StructType

    from stratalake.spark.streaming import StrataLakeStreamReader

    schema = StructType([StructField("id", LongType())])
    with pytest.raises(Exception, match=r"table db.t: incremental read options .* are for batch reads"):
        StrataLakeStreamReader({"table": "db.t", "warehouse": "/nowhere", "incremental-between": "1,2"}, schema)


def test_row_level_commands_refuse_a_session_version_setting(spark: Any, db: str) -> None:
    """``SET spark.stratalake.incremental-between`` (or ``scan.snapshot-id``) applies to every scan
    of the session; UPDATE/DELETE/MERGE would then rewrite the rows of that version, so they refuse
    it by name and leave the table unchanged."""
    t = f"{db}.dml"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c')")
    for setting, value in (("incremental-between", "1,2"), ("scan.snapshot-id", "1")):
        spark.sql(f"SET `spark.stratalake.{setting}` = {value}")
        try:
            with pytest.raises(Exception, match=rf"UPDATE reads the latest snapshot, but read option '{setting}'"):
                spark.sql(f"UPDATE {t} SET v = 'x' WHERE id > 0")
            with pytest.raises(Exception, match=rf"MERGE reads the latest snapshot, but read option '{setting}'"):
                spark.sql(
                    f"MERGE INTO {t} USING (SELECT 9 AS id) s ON {t}.id = s.id "
                    "WHEN NOT MATCHED BY SOURCE THEN DELETE"
                )
        finally:
            spark.sql(f"RESET `spark.stratalake.{setting}`")
    assert _rows(spark.table(t)) == [(1, "a"), (2, "b"), (3, "c")]
    assert spark.sql(f"SELECT count(*) FROM {db}.`dml$snapshots`").collect()[0][0] == 2
