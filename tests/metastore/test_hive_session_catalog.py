"""One catalog for Hive and lake tables: stratalake as Spark's session catalog over the same Hive
Metastore that Spark's own Hive support uses (``enableHiveSupport``).

Spark's tables (``USING parquet``) and views are registered in the metastore by Spark; stratalake
tables (``USING stratalake``) by stratalake's Hive catalog, as Paimon's HiveCatalog registers them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stratalake
from tests.metastore import hive_server
from tests.spark.conftest import _build_jar_if_missing

pytestmark = [pytest.mark.metastore_server, pytest.mark.spark]


@pytest.fixture(scope="module")
def hive_spark(hive_metastore: hive_server.HiveMetastore, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    _build_jar_if_missing()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from stratalake.spark import configure

    warehouse = str(tmp_path_factory.mktemp("hive-warehouse"))
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("stratalake-hive-session-catalog")
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.hadoop.hive.metastore.uris", hive_metastore.uri)
        .config("spark.sql.catalog.spark_catalog.metastore", "hive")
        .config("spark.sql.catalog.spark_catalog.uri", hive_metastore.uri)
        .enableHiveSupport()
    )
    session = configure(builder, warehouse, catalog="spark_catalog").getOrCreate()
    session.sparkContext.setLogLevel("OFF")
    yield session, warehouse
    session.stop()


def test_hive_and_lake_tables_in_one_catalog(hive_spark: Any, hive_metastore: hive_server.HiveMetastore) -> None:
    spark, warehouse = hive_spark
    spark.sql("CREATE DATABASE shop")
    spark.sql(
        "CREATE TABLE shop.orders (id BIGINT, amount DOUBLE, PRIMARY KEY (id) NOT ENFORCED) USING stratalake "
        "TBLPROPERTIES ('bucket' = '1')"
    )
    spark.sql("CREATE TABLE shop.customers (id BIGINT, name STRING) USING parquet")
    spark.sql("INSERT INTO shop.orders VALUES (1, 9.5), (2, 3.0)")
    spark.sql("INSERT INTO shop.orders VALUES (1, 10.0)")
    spark.sql("INSERT INTO shop.customers VALUES (1, 'ann'), (2, 'bob')")
    spark.sql(
        "CREATE VIEW shop.spend AS SELECT c.name, o.amount FROM shop.orders o JOIN shop.customers c ON o.id = c.id"
    )
    got = sorted(tuple(r) for r in spark.sql("SELECT * FROM shop.spend").collect())
    assert got == [("ann", 10.0), ("bob", 3.0)]
    assert {r.tableName for r in spark.sql("SHOW TABLES IN shop").collect()} == {"orders", "customers", "spend"}

    # The metastore holds all three: Spark's table and view, and the Paimon table as Paimon registers it.
    cat = stratalake.Catalog(warehouse, {"metastore": "hive", "uri": hive_metastore.uri})
    assert cat.list_tables("shop") == ["orders"]  # the catalog's own tables only: Paimon's
    hms = cat.client.call("get_table", "shop", "orders")
    assert hms.parameters["table_type"] == "PAIMON"
    assert cat.client.call("get_table", "shop", "spend").tableType == "VIRTUAL_VIEW"
    assert cat.client.call("get_table", "shop", "customers").tableType == "MANAGED_TABLE"
    assert sorted(r["id"] for r in cat.get_table("shop.orders").read().to_pylist()) == [1, 2]

    with pytest.raises(Exception, match="already exists"):
        spark.sql("CREATE TABLE shop.orders (id BIGINT) USING parquet")
    # A database holding only Spark's tables is Spark's to refuse dropping, and they survive.
    spark.sql("CREATE DATABASE keep")
    spark.sql("CREATE TABLE keep.p USING parquet AS SELECT 1 AS x")
    with pytest.raises(Exception, match=r"(?i)not empty|SCHEMA_NOT_EMPTY|non-?empty|still"):
        spark.sql("DROP DATABASE keep")
    assert spark.sql("SELECT x FROM keep.p").collect()[0][0] == 1
    spark.sql("DROP DATABASE keep CASCADE")

    spark.sql("DROP VIEW shop.spend")
    spark.sql("DROP DATABASE shop CASCADE")
    assert "shop" not in cat.list_databases()
    assert not Path(warehouse, "shop.db", "orders").exists()
