"""Time travel through Spark: a past snapshot is read in the columns it was written with."""

from __future__ import annotations

from typing import Any

import pytest


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def test_version_timestamp_and_tag_read_the_snapshot_schema(spark: Any, db: str) -> None:
    t = f"{db}.tt"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, b STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x')")
    spark.sql(f"CALL lake.sys.create_tag(table => '{t.removeprefix('lake.')}', tag => 'v1', snapshot => 1)")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN dt STRING")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN b TO bb")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'y', 'd')")
    when = spark.sql(f"SELECT commit_time FROM {db}.`tt$snapshots` WHERE snapshot_id = 1").first()[0]
    for query in (
        f"SELECT * FROM {t} VERSION AS OF 1",
        f"SELECT * FROM {t} VERSION AS OF 'v1'",
        f"SELECT * FROM {t} TIMESTAMP AS OF '{when}'",
    ):
        df = spark.sql(query)
        assert df.columns == ["id", "b"], query
        assert _rows(df) == [(1, "x")], query
    assert _rows(spark.sql(f"SELECT b FROM {t} VERSION AS OF 1 WHERE id = 1")) == [("x",)]
    assert spark.sql(f"SELECT * FROM {t}").columns == ["id", "bb", "dt"]
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == [(1, "x", None), (2, "y", "d")]


def test_system_tables_at_a_version(spark: Any, db: str) -> None:
    """t$files VERSION AS OF 1 lists snapshot 1's files, not the latest ones (also by tag and
    timestamp, and for the other tables that show one snapshot)."""
    t = f"{db}.st"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, b STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x')")
    spark.sql(f"CALL lake.sys.create_tag(table => '{t.removeprefix('lake.')}', tag => 'v1', snapshot => 1)")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN dt STRING")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'y', 'd')")
    files = f"{db}.`st$files`"
    first = _rows(spark.sql(f"SELECT file_path FROM {files} VERSION AS OF 1"))
    assert len(first) == 1
    assert len(_rows(spark.sql(f"SELECT file_path FROM {files}"))) == 2
    when = spark.sql(f"SELECT commit_time FROM {db}.`st$snapshots` WHERE snapshot_id = 1").first()[0]
    assert _rows(spark.sql(f"SELECT file_path FROM {files} VERSION AS OF 'v1'")) == first
    assert _rows(spark.sql(f"SELECT file_path FROM {files} TIMESTAMP AS OF '{when}'")) == first
    assert _rows(spark.sql(f"SELECT record_count FROM {db}.`st$partitions` VERSION AS OF 1")) == [(1,)]
    # (nothing is compacted: read-optimized shows no rows; its columns are snapshot 1's)
    assert spark.sql(f"SELECT * FROM {db}.`st$ro` VERSION AS OF 1").columns == ["id", "b"]
    audit = spark.sql(f"SELECT * FROM {db}.`st$audit_log` VERSION AS OF 1")
    assert audit.columns == ["rowkind", "id", "b"] and _rows(audit) == [("+I", 1, "x")]


def test_paimon_scan_options_as_read_options(spark: Any, db: str) -> None:
    """scan.snapshot-id / scan.tag-name / scan.timestamp-millis read that snapshot (read options
    and SET spark.stratalake.<option>); an unknown read option is refused by name."""
    t = f"{db}.ro"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, b STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x')")
    spark.sql(f"CALL lake.sys.create_tag(table => '{t.removeprefix('lake.')}', tag => 'v1', snapshot => 1)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'y'), (2, 'z')")
    millis = spark.sql(f"SELECT unix_millis(commit_time) FROM {db}.`ro$snapshots` WHERE snapshot_id = 1").first()[0]
    first = [(1, "x")]
    for key, value in (("scan.snapshot-id", "1"), ("scan.tag-name", "v1"), ("scan.timestamp-millis", str(millis))):
        assert _rows(spark.read.option(key, value).table(t)) == first, key
    assert _rows(spark.read.option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1").table(t)) == first
    assert _rows(spark.read.option("versionAsOf", "1").table(t)) == first  # Spark's own option
    files = spark.read.option("scan.snapshot-id", "1").table(f"{db}.`ro$files`")
    assert _rows(files) == _rows(spark.sql(f"SELECT * FROM {db}.`ro$files` VERSION AS OF 1"))
    assert files.count() == 1 and spark.read.table(f"{db}.`ro$files`").count() == 2
    assert _rows(spark.read.table(t)) == [(1, "y"), (2, "z")]
    spark.sql("SET `spark.stratalake.scan.snapshot-id` = 1")  # (a `-` needs backquotes)
    try:
        assert _rows(spark.sql(f"SELECT * FROM {t}")) == first
        assert _rows(spark.read.option("scan.snapshot-id", "2").table(t)) == [(1, "y"), (2, "z")]
    finally:
        spark.sql("RESET `spark.stratalake.scan.snapshot-id`")
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == [(1, "y"), (2, "z")]
    with pytest.raises(Exception, match=r"unknown read option 'scan.snapshot-idd'.*did you mean 'scan.snapshot-id'.*supported read options: scan.mode"):
        spark.read.option("scan.snapshot-idd", "1").table(t).collect()
    with pytest.raises(Exception, match=r"read option 'consumer-id': consumers are for streaming reads"):
        spark.read.option("consumer-id", "c1").table(t).collect()
    with pytest.raises(Exception, match=r"'scan.snapshot-id', 'scan.tag-name' each choose the snapshot"):
        spark.read.option("scan.snapshot-id", "1").option("scan.tag-name", "v1").table(t).collect()


def test_scan_options_stored_as_table_options(spark: Any, db: str) -> None:
    """Paimon's scan options are table options too: 'scan.snapshot-id' set on the table pins batch
    reads (COUNT(*) included); a read's own version choice overrides it; UPDATE changes the latest
    rows whatever the table stores; unsetting it reads the latest again."""
    t = f"{db}.pinned"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, b STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x')")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'y')")
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('scan.snapshot-id' = '1')")
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == [(1, "x")]
    assert spark.sql(f"SELECT count(*) FROM {t}").first()[0] == 1
    assert _rows(spark.read.option("scan.snapshot-id", "2").table(t)) == [(1, "x"), (2, "y")]
    assert _rows(spark.sql(f"SELECT * FROM {t} VERSION AS OF 2")) == [(1, "x"), (2, "y")]
    spark.sql(f"UPDATE {t} SET b = 'z' WHERE id = 2")
    assert _rows(spark.read.option("scan.snapshot-id", "3").table(t)) == [(1, "x"), (2, "z")]
    spark.sql(f"ALTER TABLE {t} UNSET TBLPROPERTIES ('scan.snapshot-id')")
    assert _rows(spark.sql(f"SELECT * FROM {t}")) == [(1, "x"), (2, "z")]
