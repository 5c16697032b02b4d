"""Time travel through Spark: a past snapshot is read in the columns it was written with."""

from __future__ import annotations

from typing import Any


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
