"""Incremental reads through Spark: Paimon's ``incremental-between`` read options (also as session
settings), its ``$audit_log`` with them, and the ``paimon_incremental_*`` table functions."""

from __future__ import annotations

from typing import Any

import pytest


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def test_incremental_between_snapshots_tags_and_timestamps(spark: Any, db: str) -> None:
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
    # Its $audit_log keeps every record with its row kind.
    audit = spark.read.option("incremental-between", "1,3").table(f"{db}.`inc$audit_log`")
    # (DELETE by key writes a -D record holding the key alone.)
    assert _rows(audit) == [("+I", 2, "bb"), ("+I", 3, "c"), ("-D", 1, None)]
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
