"""``scan.fallback-branch`` through Spark SQL, with the answers of Paimon's docs example
(manage-branches, "Batch Reading from Fallback Branch") and ``FallbackReadFileStoreTable``: set with
ALTER TABLE, refused for a missing branch or at CREATE; SELECT (projections, partition and data
filters, COUNT(*), aggregates, time travel) reads each partition from main when main has it, else
from the fallback branch; DML that would rewrite fallback rows into main is refused by name."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from stratalake.spark.source import infer_schema
from stratalake.spark.streaming import StrataLakeStreamReader

pytestmark = pytest.mark.spark


def _rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in spark.sql(sql).collect()]


def _error(spark: Any, sql: str) -> str:
    with pytest.raises(Exception) as err:  # Spark's and Py4J's classes vary; the text is checked
        spark.sql(sql).collect()
    return str(err.value)


@pytest.mark.parametrize("keyed", [False, True])
def test_docs_example_through_sql(spark: Any, db: str, keyed: bool) -> None:
    t = f"{db}.T"
    name = db.split(".", 1)[1]
    props = "'primary-key'='dt,name', 'bucket'='2'" if keyed else "'bucket'='-1'"
    spark.sql(
        f"CREATE TABLE {t} (dt STRING NOT NULL, name STRING NOT NULL, amount BIGINT) "
        f"PARTITIONED BY (dt) TBLPROPERTIES ({props})"
    )
    assert "does not exist" in _error(
        spark, f"ALTER TABLE {t} SET TBLPROPERTIES ('scan.fallback-branch'='test')"
    )
    spark.sql(f"CALL lake.sys.create_branch('{name}.T', 'test')")
    branch = f"{db}.`T$branch_test`"
    spark.sql(
        f"INSERT INTO {branch} VALUES ('20240725', 'apple', 4), ('20240725', 'peach', 10), "
        "('20240726', 'cherry', 3), ('20240726', 'pear', 6)"
    )
    if keyed:  # a second version of a key in the branch: merged within the branch
        spark.sql(f"INSERT INTO {branch} VALUES ('20240726', 'pear', 6)")
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('scan.fallback-branch'='test')")
    spark.sql(f"INSERT INTO {t} VALUES ('20240725', 'apple', 5), ('20240725', 'banana', 7)")
    expected = [
        ("20240725", "apple", 5),
        ("20240725", "banana", 7),
        ("20240726", "cherry", 3),
        ("20240726", "pear", 6),
    ]
    assert _rows(spark, f"SELECT * FROM {t} ORDER BY dt, name") == expected
    assert _rows(spark, f"SELECT name FROM {t} WHERE dt = '20240726' ORDER BY name") == [
        ("cherry",),
        ("pear",),
    ]
    assert _rows(spark, f"SHOW PARTITIONS {t}") == [("dt=20240725",), ("dt=20240726",)]
    # (record_count counts the stored records: the keyed branch holds pear twice)
    assert _rows(spark, f"SELECT partition, record_count FROM {db}.`T$partitions` ORDER BY partition") == [
        ("dt=20240725", 2),
        ("dt=20240726", 3 if keyed else 2),
    ]
    # Main's partition is complete even where the data filter leaves nothing of it.
    assert _rows(spark, f"SELECT name FROM {t} WHERE amount > 8") == []
    assert _rows(spark, f"SELECT count(*) FROM {t}") == [(4,)]
    assert _rows(spark, f"SELECT dt, count(*), max(amount) FROM {t} GROUP BY dt ORDER BY dt") == [
        ("20240725", 2, 7),
        ("20240726", 2, 6),
    ]
    # Writes and DELETE act on main (Paimon's append DELETE plans from main's files); a primary-key
    # DELETE, whose -D records Paimon derives from the fallback read, is refused by name.
    if keyed:
        err = _error(spark, f"DELETE FROM {t} WHERE amount = 3")
        assert "scan.fallback-branch" in err and "not supported yet" in err
        err = _error(spark, f"DELETE FROM {t} WHERE dt = '20240726' AND name = 'pear'")
        assert "scan.fallback-branch" in err and "not supported yet" in err
    else:
        spark.sql(f"DELETE FROM {t} WHERE amount = 3")  # only the fallback branch has such a row
    assert _rows(spark, f"SELECT * FROM {t} ORDER BY dt, name") == expected
    err = _error(spark, f"UPDATE {t} SET amount = 0 WHERE name = 'apple'")
    assert "scan.fallback-branch" in err and "not supported yet" in err
    # Unset: main alone (Paimon's docs).
    spark.sql(f"ALTER TABLE {t} UNSET TBLPROPERTIES ('scan.fallback-branch')")
    assert _rows(spark, f"SELECT * FROM {t} ORDER BY dt, name") == expected[:2]


def test_create_with_fallback_and_time_travel(spark: Any, db: str) -> None:
    t = f"{db}.T"
    name = db.split(".", 1)[1]
    err = _error(
        spark,
        f"CREATE TABLE {t} (dt STRING, v INT) PARTITIONED BY (dt) TBLPROPERTIES ('scan.fallback-branch'='b')",
    )
    assert "cannot set 'scan.fallback-branch' = 'b' because the branch 'b' does not exist" in err
    spark.sql(f"CREATE TABLE {t} (dt STRING, v INT) PARTITIONED BY (dt)")
    spark.sql(f"CALL lake.sys.create_branch('{name}.T', 'b')")
    spark.sql(f"INSERT INTO {db}.`T$branch_b` VALUES ('d2', 20)")  # branch snapshot 1
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('scan.fallback-branch'='b')")
    time.sleep(0.01)
    spark.sql(f"INSERT INTO {t} VALUES ('d1', 1)")  # main snapshot 1
    at = _rows(spark, f"SELECT commit_time FROM {db}.`T$snapshots` WHERE snapshot_id = 1")[0][0]
    time.sleep(0.01)
    spark.sql(f"INSERT INTO {db}.`T$branch_b` VALUES ('d3', 30)")  # branch snapshot 2, later
    spark.sql(f"INSERT INTO {t} VALUES ('d1', 2)")
    assert _rows(spark, f"SELECT * FROM {t} ORDER BY dt, v") == [("d1", 1), ("d1", 2), ("d2", 20), ("d3", 30)]
    assert _rows(spark, f"SELECT * FROM {t} VERSION AS OF 1 ORDER BY dt, v") == [("d1", 1), ("d2", 20)]
    assert _rows(spark, f"SELECT * FROM {t} TIMESTAMP AS OF '{at}' ORDER BY dt, v") == [("d1", 1), ("d2", 20)]
    # The branch alone; a tag reads the fallback branch at its tag of the same name.
    assert _rows(spark, f"SELECT * FROM {db}.`T$branch_b` ORDER BY dt") == [("d2", 20), ("d3", 30)]
    spark.sql(f"CALL lake.sys.create_tag(table => '{name}.T', tag => 'v1', snapshot => 1)")
    assert "tag 'v1' does not exist in its 'scan.fallback-branch' 'b'" in _error(
        spark, f"SELECT * FROM {t} VERSION AS OF 'v1'"
    )
    spark.sql(f"CALL lake.sys.create_tag(table => '{name}.`T$branch_b`', tag => 'v1', snapshot => 1)")
    assert _rows(spark, f"SELECT * FROM {t} VERSION AS OF 'v1' ORDER BY dt") == [("d1", 1), ("d2", 20)]


def test_streaming_reads_the_branch_alone(tmp_path: Path) -> None:
    """Paimon's docs: streaming reads do not fall back; they produce the current branch's rows."""
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("dt", pa.string()), ("v", pa.int64())])
    t = cat.create_table("db.t", schema, partition_keys=["dt"])
    t.create_branch("b")
    t.branch("b").write(pa.table({"dt": ["d2"], "v": [20]}, schema=schema))
    t = cat.alter_table("db.t", [stratalake.SchemaChange.set_option("scan.fallback-branch", "b")])
    t.write(pa.table({"dt": ["d1"], "v": [1]}, schema=schema))
    assert sorted(t.read().column("v").to_pylist()) == [1, 20]  # a batch read falls back
    options = {"warehouse": str(tmp_path / "wh"), "table": "db.t"}
    reader = StrataLakeStreamReader(options, infer_schema(options))
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    got = [r["v"] for p in reader.partitions(start, end) for x in reader.read(p) for r in x.to_pylist()]
    assert got == [1]
