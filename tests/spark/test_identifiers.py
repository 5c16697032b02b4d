"""Hostile names through Spark SQL: a readable stratalake error, and nothing outside the warehouse.

Names reach the Python catalog through the JVM catalog as written (a V2 catalog gets no
lowercasing), so ``lake.db.CamelCase`` is table ``CamelCase``; see tests/catalog/test_hostile_names.py
for the rules themselves.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from stratalake.exceptions import InvalidIdentifierError, InvalidOptionError
from stratalake.spark.errors import stratalake_errors


def _entries(warehouse: Path) -> list[str]:
    return sorted(os.listdir(warehouse.parent))


@pytest.mark.parametrize(
    ("statement", "error", "words"),
    [
        ("CREATE DATABASE lake.`../escaped`", InvalidIdentifierError, "'/' is a path separator"),
        ("CREATE DATABASE IF NOT EXISTS lake.`..`", InvalidIdentifierError, "'.' and '..' are not names"),
        (
            "CREATE TABLE {db}.`a/b` (id INT, PRIMARY KEY (id) NOT ENFORCED)",
            InvalidIdentifierError,
            "separator",
        ),
        (
            "CREATE TABLE {db}.`../../x` (id INT, PRIMARY KEY (id) NOT ENFORCED)",
            InvalidIdentifierError,
            "separator",
        ),
        (
            "CREATE TABLE {db}.`t$files` (id INT, PRIMARY KEY (id) NOT ENFORCED)",
            InvalidIdentifierError,
            "'t$files' cannot be created: '$' is reserved for system tables",
        ),
        (
            "CREATE TABLE {db}.t (id INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('path' = '/tmp/elsewhere')",
            InvalidOptionError,
            "option 'path' would choose where the table's files go",
        ),
        ("USE lake.`../x`", InvalidIdentifierError, "separator"),
        ("DROP TABLE IF EXISTS {db}.`..`", InvalidIdentifierError, "'.' and '..' are not names"),
        ("CALL lake.sys.compact(table => '../x')", InvalidIdentifierError, "not a table identifier"),
        ("CALL lake.sys.expire_snapshots(table => 'default.a/b')", InvalidIdentifierError, "separator"),
    ],
)
def test_hostile_names_in_sql(
    spark: Any, warehouse: Path, db: str, statement: str, error: type[Exception], words: str
) -> None:
    before = _entries(warehouse)
    with pytest.raises(Exception) as info:
        spark.sql(statement.format(db=db)).collect()
    text = str(info.value)
    assert f"[STRATALAKE:{error.__name__}]" in text and words in text, text
    assert "Traceback" not in text  # a user error, not a bug report
    with pytest.raises(error), stratalake_errors():
        spark.sql(statement.format(db=db)).collect()
    assert _entries(warehouse) == before
    assert not (warehouse.parent / "escaped.db").exists()
    assert list((warehouse / f"{db.split('.')[1]}.db").iterdir()) == []


def test_names_keep_their_case(spark: Any, warehouse: Path, db: str) -> None:
    spark.sql(f"CREATE TABLE {db}.CamelCase (id INT, PRIMARY KEY (id) NOT ENFORCED)")
    spark.sql(f"INSERT INTO {db}.CamelCase VALUES (1)")
    assert (warehouse / f"{db.split('.')[1]}.db" / "CamelCase").is_dir()
    assert spark.sql(f"SELECT * FROM {db}.CamelCase").count() == 1
    with pytest.raises(InvalidIdentifierError, match="cannot be created"), stratalake_errors():
        spark.sql(f"ALTER TABLE {db}.CamelCase RENAME TO `t$x`")
    with pytest.raises(Exception, match=r"\[STRATALAKE:InvalidIdentifierError\] invalid table name 'a\\\\b'"):
        spark.sql(f"ALTER TABLE {db}.CamelCase RENAME TO `a\\b`")
    assert sorted(p.name for p in (warehouse / f"{db.split('.')[1]}.db").iterdir()) == ["CamelCase"]


def test_query_options_cannot_move_the_table(spark: Any, db: str, tmp_path: Path) -> None:
    """A query option spelling the catalog's keys in another case never redirects reads or writes."""
    elsewhere = tmp_path / "elsewhere"
    spark.sql(f"CREATE TABLE {db}.t (id INT, PRIMARY KEY (id) NOT ENFORCED)")
    (
        spark.createDataFrame([(1,)], "id INT")
        .writeTo(f"{db}.t")
        .option("Stratalake.Warehouse", str(elsewhere))
        .option("STRATALAKE.LOCATION", str(elsewhere))
        .append()
    )
    rows = spark.sql(f"SELECT * FROM {db}.t WITH ('Stratalake.Warehouse' = '{elsewhere}')").collect()
    assert [r.id for r in rows] == [1]
    assert not elsewhere.exists()
