"""Column DEFAULT values through Spark SQL: CREATE, INSERT with a column list or the DEFAULT
keyword, ALTER COLUMN SET/DROP DEFAULT, MERGE's partial inserts (Spark's analyzer fills the
defaults the catalog reports), and the written nulls the table itself fills, as Paimon's writer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.interop.paimon_oracle import paimon_read

pytestmark = pytest.mark.spark


def _rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in spark.sql(f"SELECT * FROM {table} ORDER BY id").collect()]


def _fields(warehouse: Path, db: str, table: str, schema_id: int) -> list[dict[str, Any]]:
    path = warehouse / f"{db.split('.')[-1]}.db" / table / "schema" / f"schema-{schema_id}"
    return list(json.loads(path.read_text())["fields"])


def test_defaults_in_create_insert_alter_and_merge(spark: Any, db: str, warehouse: Path) -> None:
    t = f"{db}.t"
    spark.sql(
        f"CREATE TABLE {t} (id INT, name STRING DEFAULT 'anon', n INT DEFAULT 7, "
        "PRIMARY KEY (id) NOT ENFORCED)"
    )
    assert [f.get("defaultValue") for f in _fields(warehouse, db, "t", 0)] == [None, "'anon'", "7"]
    spark.sql(f"INSERT INTO {t} (id) VALUES (1)")
    spark.sql(f"INSERT INTO {t} VALUES (2, DEFAULT, 3)")
    spark.sql(f"INSERT INTO {t} VALUES (3, NULL, NULL)")  # Paimon's writer: a null takes the default
    assert _rows(spark, t) == [(1, "anon", 7), (2, "anon", 3), (3, "anon", 7)]

    spark.sql(f"ALTER TABLE {t} ALTER COLUMN n SET DEFAULT 42")
    spark.sql(f"INSERT INTO {t} (id, name) VALUES (4, 'x')")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN name DROP DEFAULT")
    assert [f.get("defaultValue") for f in _fields(warehouse, db, "t", 2)] == [None, None, "42"]
    spark.sql(f"INSERT INTO {t} (id) VALUES (5)")
    assert _rows(spark, t)[3:] == [(4, "x", 42), (5, None, 42)]
    described = [tuple(r) for r in spark.sql(f"DESCRIBE TABLE EXTENDED {t}").collect()]
    section = described.index(("# Column Default Values", "", ""))
    assert described[section + 1] == ("n", "int", "42")
    ddl = spark.sql(f"SHOW CREATE TABLE {t}").collect()[0][0]
    assert "n INT DEFAULT 42" in ddl and "name STRING" in ddl and "'anon'" not in ddl

    spark.sql(f"CREATE TABLE {db}.src (id INT, name STRING)")
    spark.sql(f"INSERT INTO {db}.src VALUES (1, 'one'), (9, 'nine')")
    spark.sql(
        f"MERGE INTO {t} USING {db}.src ON {t}.id = src.id "
        "WHEN MATCHED THEN UPDATE SET name = src.name "
        "WHEN NOT MATCHED THEN INSERT (id) VALUES (src.id)"
    )
    want = [(1, "one", 7), (2, "anon", 3), (3, "anon", 7), (4, "x", 42), (5, None, 42), (9, None, 42)]
    assert _rows(spark, t) == want
    # pypaimon reads the same rows (the defaults are in the files, not applied on read).
    got = paimon_read(str(warehouse), f"{db.split('.')[-1]}.t")
    assert (
        sorted(zip(got["id"].to_pylist(), got["name"].to_pylist(), got["n"].to_pylist(), strict=True)) == want
    )


def test_refusals_name_the_column_and_leave_the_table(spark: Any, db: str, warehouse: Path) -> None:
    t = f"{db}.r"
    # Paimon drops one pair of enclosing quotes and casts the rest from STRING: DATE'..' does not.
    with pytest.raises(Exception, match=r"table .*r: column 'd' has DEFAULT DATE'2024-01-31'"):
        spark.sql(f"CREATE TABLE {t} (id INT, d DATE DEFAULT DATE'2024-01-31')")
    with pytest.raises(Exception, match=r"column 'ts' has DEFAULT current_timestamp\(\)"):
        spark.sql(f"CREATE TABLE {t} (id INT, ts TIMESTAMP DEFAULT current_timestamp())")
    assert not spark.catalog.tableExists(t)

    spark.sql(f"CREATE TABLE {t} (id INT, v STRING DEFAULT 'x', PRIMARY KEY (id) NOT ENFORCED)")
    with pytest.raises(Exception, match=r"ADD COLUMN z with a DEFAULT is not supported"):
        spark.sql(f"ALTER TABLE {t} ADD COLUMN z INT DEFAULT 1")
    with pytest.raises(Exception, match=r"column 'v' has DEFAULT NULL"):
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN v SET DEFAULT NULL")
    assert [f.get("defaultValue") for f in _fields(warehouse, db, "r", 0)] == [None, "'x'"]
    assert not (warehouse / f"{db.split('.')[-1]}.db" / "r" / "schema" / "schema-1").exists()


def test_append_table_defaults_skip_the_native_writer(spark: Any, db: str) -> None:
    """A bucket-unaware append table would be written by Spark's Parquet writer; with a default
    the Python writer takes the rows, so written nulls get the default there too."""
    t = f"{db}.a"
    spark.sql(f"CREATE TABLE {t} (id INT, v STRING DEFAULT 'dv', w DOUBLE DEFAULT 1.5)")
    spark.sql(f"INSERT INTO {t} (id) VALUES (1)")
    spark.sql(f"INSERT INTO {t} VALUES (2, NULL, NULL), (3, 'y', 2.0)")
    assert _rows(spark, t) == [(1, "dv", 1.5), (2, "dv", 1.5), (3, "y", 2.0)]
