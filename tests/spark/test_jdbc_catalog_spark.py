"""Spark SQL through a catalog with ``metastore = jdbc`` (SQLite): DDL, writes and reads register
and find tables in Paimon's JDBC catalog tables, with the commit lock on."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import stratalake

pytestmark = pytest.mark.spark


def test_spark_sql_on_a_jdbc_catalog(spark: Any, tmp_path: Path) -> None:
    from stratalake.spark.session import CATALOG_CLASS

    warehouse, db_file = tmp_path / "wh", tmp_path / "catalog.db"
    options = {
        "metastore": "jdbc",
        "uri": f"jdbc:sqlite:{db_file}",
        "lock.enabled": "true",
        "catalog-key": "spark",
    }
    spark.conf.set("spark.sql.catalog.jlake", CATALOG_CLASS)
    spark.conf.set("spark.sql.catalog.jlake.warehouse", str(warehouse))
    for key, value in options.items():
        spark.conf.set(f"spark.sql.catalog.jlake.{key}", value)

    spark.sql("CREATE DATABASE jlake.sales")
    spark.sql(
        "CREATE TABLE jlake.sales.orders (id BIGINT, amount DOUBLE, PRIMARY KEY (id) NOT ENFORCED) "
        "TBLPROPERTIES ('bucket' = '2')"
    )
    spark.sql("INSERT INTO jlake.sales.orders VALUES (1, 1.5), (2, 2.5), (3, 3.5)")
    spark.sql("INSERT INTO jlake.sales.orders VALUES (2, 20.0)")
    rows = spark.sql("SELECT id, amount FROM jlake.sales.orders ORDER BY id").collect()
    assert [tuple(r) for r in rows] == [(1, 1.5), (2, 20.0), (3, 3.5)]
    assert [r[1] for r in spark.sql("SHOW TABLES IN jlake.sales").collect()] == ["orders"]

    with sqlite3.connect(db_file) as conn:
        assert conn.execute("SELECT * FROM paimon_tables").fetchall() == [("spark", "sales", "orders")]
        assert conn.execute("SELECT count(*) FROM paimon_distributed_locks").fetchone() == (0,)

    spark.sql("ALTER TABLE jlake.sales.orders RENAME TO sales.orders2")
    assert [r[1] for r in spark.sql("SHOW TABLES IN jlake.sales").collect()] == ["orders2"]
    assert spark.sql("SELECT sum(amount) FROM jlake.sales.orders2").collect()[0][0] == 25.0
    # The Python API on the same metastore sees what Spark registered.
    cat = stratalake.Catalog(str(warehouse), options)
    assert cat.list_tables("sales") == ["orders2"]
    assert cat.get_table("sales.orders2").read().num_rows == 3

    spark.sql("DROP TABLE jlake.sales.orders2")
    assert spark.sql("SHOW TABLES IN jlake.sales").collect() == []
    spark.sql("DROP DATABASE jlake.sales")
    assert cat.list_databases() == ["default"]  # Spark's session creates its default namespace
    assert not (warehouse / "sales.db" / "orders2").exists()
