"""Spark SQL through a catalog with ``metastore = hive`` (one focused test)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.metastore import hive_server
from tests.spark.conftest import _build_jar_if_missing

pytestmark = [pytest.mark.metastore_server, pytest.mark.spark]


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    _build_jar_if_missing()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from stratalake.spark import configure

    builder = SparkSession.builder.master("local[2]").appName("stratalake-hive-tests")
    session = configure(builder, str(tmp_path_factory.mktemp("lake"))).getOrCreate()
    session.sparkContext.setLogLevel("OFF")
    yield session
    session.stop()


def test_spark_sql_through_the_hive_metastore(
    spark: Any, hive_metastore: hive_server.HiveMetastore, tmp_path: Path
) -> None:
    prefix = "spark.sql.catalog.hms"
    spark.conf.set(prefix, "org.stratalake.spark.StrataLakeCatalog")
    spark.conf.set(f"{prefix}.warehouse", str(tmp_path))
    spark.conf.set(f"{prefix}.metastore", "hive")
    spark.conf.set(f"{prefix}.uri", hive_metastore.uri)
    spark.sql("CREATE DATABASE hms.sales")
    spark.sql(
        "CREATE TABLE hms.sales.orders (id BIGINT, amount DOUBLE, dt STRING) PARTITIONED BY (dt) "
        "TBLPROPERTIES ('primary-key' = 'id,dt', 'bucket' = '1', 'metastore.partitioned-table' = 'true')"
    )
    spark.sql("INSERT INTO hms.sales.orders VALUES (1, 9.5, 'd1'), (2, 3.0, 'd2')")
    spark.sql("INSERT INTO hms.sales.orders VALUES (1, 10.0, 'd1')")
    got = spark.sql("SELECT id, amount, dt FROM hms.sales.orders ORDER BY id").collect()
    assert [tuple(r) for r in got] == [(1, 10.0, "d1"), (2, 3.0, "d2")]
    assert [r.tableName for r in spark.sql("SHOW TABLES IN hms.sales").collect()] == ["orders"]

    # The metastore holds it as Paimon's HiveCatalog registers it, with the partitions written.
    import stratalake
    from stratalake.catalog.hive import HiveCatalog

    cat = stratalake.Catalog(str(tmp_path), {"metastore": "hive", "uri": hive_metastore.uri})
    assert isinstance(cat, HiveCatalog)
    hms = cat.client.call("get_table", "sales", "orders")
    assert hms.parameters["table_type"] == "PAIMON"
    assert sorted(cat.client.call("get_partition_names", "sales", "orders", -1)) == ["dt=d1", "dt=d2"]
    spark.sql("ALTER TABLE hms.sales.orders DROP PARTITION (dt = 'd2')")
    assert cat.client.call("get_partition_names", "sales", "orders", -1) == ["dt=d1"]
    spark.sql("DROP TABLE hms.sales.orders")
    assert cat.list_tables("sales") == []


def test_mark_partition_done_and_repair_procedures(
    spark: Any, hive_metastore: hive_server.HiveMetastore, tmp_path: Path
) -> None:
    """Paimon's procedures with its argument names and result column, on the Hive catalog."""
    prefix = "spark.sql.catalog.hmsp"
    spark.conf.set(prefix, "org.stratalake.spark.StrataLakeCatalog")
    spark.conf.set(f"{prefix}.warehouse", str(tmp_path))
    spark.conf.set(f"{prefix}.metastore", "hive")
    spark.conf.set(f"{prefix}.uri", hive_metastore.uri)
    spark.sql("CREATE DATABASE hmsp.ops")
    spark.sql(
        "CREATE TABLE hmsp.ops.events (id BIGINT, dt STRING) PARTITIONED BY (dt) TBLPROPERTIES "
        "('primary-key' = 'id,dt', 'bucket' = '1', 'metastore.partitioned-table' = 'true', "
        "'partition.mark-done-action' = 'done-partition,mark-event')"
    )
    spark.sql("INSERT INTO hmsp.ops.events VALUES (1, 'd1'), (2, 'd2')")
    done = spark.sql("CALL hmsp.sys.mark_partition_done(table => 'ops.events', partitions => 'dt=d1')")
    assert done.columns == ["result"] and [tuple(r) for r in done.collect()] == [(True,)]

    import stratalake
    from stratalake.catalog.hive import HiveCatalog

    cat = stratalake.Catalog(str(tmp_path), {"metastore": "hive", "uri": hive_metastore.uri})
    assert isinstance(cat, HiveCatalog)
    assert sorted(cat.client.call("get_partition_names", "ops", "events", -1)) == ["dt=d1", "dt=d1.done", "dt=d2"]
    load_done = cat.client.types.PartitionEventType.LOAD_DONE
    assert cat.client.call("isPartitionMarkedForEvent", "ops", "events", {"dt": "d1"}, load_done)

    done_column = spark.sql("SELECT partition, done FROM hmsp.ops.`events$partitions` ORDER BY partition")
    assert [tuple(r) for r in done_column.collect()] == [("dt=d1", True), ("dt=d2", False)]

    cat.client.call("drop_table", "ops", "events", False)  # the metastore loses the table
    repaired = spark.sql("CALL hmsp.sys.repair(database_or_table => 'ops.events')")
    assert repaired.columns == ["result"] and [tuple(r) for r in repaired.collect()] == [(True,)]
    assert sorted(cat.client.call("get_partition_names", "ops", "events", -1)) == ["dt=d1", "dt=d2"]
    got = spark.sql("SELECT id, dt FROM hmsp.ops.events ORDER BY id").collect()
    assert [tuple(r) for r in got] == [(1, "d1"), (2, "d2")]
