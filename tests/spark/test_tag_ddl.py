"""Paimon's tag statements (its Spark SQL extensions) and tag procedures through Spark SQL, with
Paimon's answers; renamed and replaced tags read back by pypaimon from disk."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from tests.interop.paimon_oracle import paimon_table

pytestmark = pytest.mark.spark


def _tags(spark: Any, table: str) -> list[str]:
    return [r[0] for r in spark.sql(f"SHOW TAGS {table}").collect()]


def _ids(spark: Any, sql: str) -> list[int]:
    return [r[0] for r in spark.sql(sql).collect()]


def _error(spark: Any, sql: str) -> str:
    with pytest.raises(Exception) as err:  # Spark's and Py4J's classes vary; the text is checked
        spark.sql(sql).collect()
    return str(err.value)


def _paimon_tag_ids(warehouse: Path, ident: str, tag: str) -> list[int]:
    table = paimon_table(warehouse, ident).copy({"scan.tag-name": tag})
    builder = table.new_read_builder()
    result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    assert isinstance(result, pa.Table)
    return sorted(result.column("id").to_pylist())


def test_tag_statements(spark: Any, db: str, warehouse: Path) -> None:
    t = f"{db}.t"
    spark.sql(
        f"CREATE TABLE {t} (id INT NOT NULL, v STRING, PRIMARY KEY (id)) TBLPROPERTIES ('bucket' = '1')"
    )
    for i in (1, 2, 3):
        spark.sql(f"INSERT INTO {t} VALUES ({i}, 'v{i}')")  # snapshot i holds ids 1..i

    spark.sql(f"ALTER TABLE {t} CREATE TAG `tag-1`")  # the latest snapshot
    spark.sql(f"ALTER TABLE {t} CREATE TAG IF NOT EXISTS `tag-1` AS OF VERSION 1")  # exists: kept
    spark.sql(f"ALTER TABLE {t} CREATE TAG early AS OF VERSION 1 RETAIN 2 DAYS")
    catalog, database = spark.catalog.currentCatalog(), spark.catalog.currentDatabase()
    spark.sql(f"USE {db}")
    try:  # a bare table name: the current catalog and database
        spark.sql("ALTER TABLE t CREATE TAG mid AS OF VERSION 2")
        assert _tags(spark, "t") == ["early", "mid", "tag-1"]
    finally:
        spark.sql(f"USE {catalog}.{database}")
    assert _tags(spark, t) == ["early", "mid", "tag-1"]
    assert _ids(spark, f"SELECT id FROM {t} VERSION AS OF 'tag-1' ORDER BY id") == [1, 2, 3]
    assert _ids(spark, f"SELECT id FROM {t} VERSION AS OF 'early' ORDER BY id") == [1]

    spark.sql(f"ALTER TABLE {t} RENAME TAG early TO first")
    spark.sql(f"ALTER TABLE {t} REPLACE TAG `tag-1` AS OF VERSION 2")
    spark.sql(f"ALTER TABLE {t} CREATE OR REPLACE TAG mid AS OF VERSION 1 RETAIN 3 HOURS")
    spark.sql(f"ALTER TABLE {t} CREATE OR REPLACE TAG fresh")  # missing: created at the latest
    assert _tags(spark, t) == ["first", "fresh", "mid", "tag-1"]
    expected = {"first": [1], "fresh": [1, 2, 3], "mid": [1], "tag-1": [1, 2]}
    ident = f"{db[5:]}.t"
    for tag, ids in expected.items():
        assert _ids(spark, f"SELECT id FROM {t} VERSION AS OF '{tag}' ORDER BY id") == ids
        assert _paimon_tag_ids(warehouse, ident, tag) == ids  # pypaimon reads the tag files
    assert sorted(paimon_table(warehouse, ident).list_tags()) == sorted(expected)

    spark.sql(f"ALTER TABLE {t} DELETE TAG first, mid")  # Paimon's comma-separated list
    spark.sql(f"ALTER TABLE {t} DELETE TAG IF EXISTS first")
    assert _tags(spark, t) == ["fresh", "tag-1"]

    # Refused, naming the table and the tag or the clause, with the tags unchanged.
    e = _error(spark, f"ALTER TABLE {t} CREATE TAG fresh")
    assert f"table {ident}: tag 'fresh' already exists" in e
    e = _error(spark, f"ALTER TABLE {t} REPLACE TAG nope")
    assert f"table {ident}: tag 'nope' does not exist, so it cannot be replaced" in e
    e = _error(spark, f"ALTER TABLE {t} DELETE TAG fresh, nope")
    assert f"table {ident}: tag(s) 'nope' do not exist, so nothing was deleted" in e
    e = _error(spark, f"ALTER TABLE {t} RENAME TAG fresh TO `tag-1`")
    assert "tag 'tag-1' already exists" in e
    e = _error(spark, f"ALTER TABLE {t} CREATE TAG x RETAIN 2 WEEKS")
    assert "expected DAYS, HOURS or MINUTES but found 'WEEKS'" in e
    e = _error(spark, f"ALTER TABLE {t} CREATE TAG x AS OF VERSION 9")
    assert "9" in e and ident in e
    assert "cannot be found" in _error(spark, f"ALTER TABLE {db}.nope CREATE TAG x")
    assert _tags(spark, t) == ["fresh", "tag-1"]
    # Spark's own ALTER TABLE statements still parse as before.
    spark.sql(f"ALTER TABLE {t} RENAME TO {db[5:]}.t2")
    assert _tags(spark, f"{db}.t2") == ["fresh", "tag-1"]


def test_tag_procedures(spark: Any, db: str, warehouse: Path) -> None:
    t = f"{db}.p"
    arg = f"{db[5:]}.p"
    spark.sql(f"CREATE TABLE {t} (id INT NOT NULL, PRIMARY KEY (id)) TBLPROPERTIES ('bucket' = '1')")
    for i in (1, 2, 3):
        spark.sql(f"INSERT INTO {t} VALUES ({i})")
        time.sleep(0.01)  # distinct commit times
    millis = {s.id: s.time_millis for s in stratalake.Catalog(str(warehouse)).get_table(arg).snapshots()}
    # Paimon's answer: the first snapshot committed at or after the time.
    rows = spark.sql(
        f"CALL lake.sys.create_tag_from_timestamp(table => '{arg}', tag => 'ts', timestamp => {millis[2] - 1})"
    ).collect()
    assert [tuple(r) for r in rows] == [("ts", 2, millis[2], "null")]
    assert rows[0].asDict().keys() == {"tagName", "snapshot", "commit_time", "watermark"}
    rename = f"CALL lake.sys.rename_tag(table => '{arg}', tag => 'ts', target_tag => 'ts2')"
    assert spark.sql(rename).collect()[0].asDict() == {"result": True}
    replace = f"CALL lake.sys.replace_tag(table => '{arg}', tag => 'ts2', snapshot => 1)"
    assert spark.sql(replace).collect()[0].asDict() == {"result": True}
    assert _ids(spark, f"SELECT id FROM {t} VERSION AS OF 'ts2'") == [1]
    rollback = f"CALL lake.sys.rollback_to_timestamp(table => '{arg}', timestamp => {millis[2]})"
    assert spark.sql(rollback).collect()[0].asDict() == {"result": "Success roll back to snapshot: 2 ."}
    assert _ids(spark, f"SELECT id FROM {t} ORDER BY id") == [1, 2]
