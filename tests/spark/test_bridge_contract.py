"""The Python-JVM bridge contract: both sides hold the same operations and messages, every
operation runs end to end through a SparkSession, and malformed requests are refused by name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stratalake.spark import bridge_contract as bc
from stratalake.spark import bridge_handlers

spark_test = pytest.mark.spark


def _jvm_contract(spark: Any) -> dict[str, Any]:
    described: str = spark._jvm.org.stratalake.spark.bridge.BridgeContract.describe()
    return dict(json.loads(described))


@spark_test
def test_protocol_versions_agree(spark: Any) -> None:
    assert _jvm_contract(spark)["protocol"] == bc.PROTOCOL_VERSION


@spark_test
def test_operations_agree(spark: Any) -> None:
    """The same operation names, each with the same request message and reply type."""
    assert _jvm_contract(spark)["operations"] == bc.describe()["operations"]


@spark_test
@pytest.mark.parametrize("message", sorted(bc.describe()["messages"]))
def test_message_fields_agree(spark: Any, message: str) -> None:
    """Each message has the same JSON keys, each of the same type, on both sides."""
    jvm = _jvm_contract(spark)["messages"]
    assert message in jvm, f"the JVM has no message {message}"
    assert jvm[message] == bc.describe()["messages"][message]


@spark_test
def test_no_message_only_on_the_jvm(spark: Any) -> None:
    assert set(_jvm_contract(spark)["messages"]) == set(bc.describe()["messages"])


# ---- every operation, end to end ----------------------------------------------------------------


@pytest.fixture(scope="module")
def calls(spark: Any) -> dict[str, int]:
    """Per operation, the bridge calls a workload touching every operation made (JVM counters)."""
    contract = spark._jvm.org.stratalake.spark.bridge.BridgeContract
    before = json.loads(contract.callCounts())
    db = "lake.bridge_contract"
    spark.sql(f"CREATE DATABASE {db}")  # create_database
    spark.sql("SHOW NAMESPACES IN lake").collect()  # list_databases
    spark.sql(f"DESCRIBE NAMESPACE {db}").collect()  # database_exists, load_database
    # create_table, table_exists (IF NOT EXISTS), alter_table, list_tables
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {db}.pk (id INT NOT NULL, p STRING NOT NULL, v BIGINT, PRIMARY KEY (id, p)) "
        "PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '2')"
    )
    spark.sql(f"ALTER TABLE {db}.pk SET TBLPROPERTIES ('comment' = 'bridge')")
    spark.sql(f"SHOW TABLES IN {db}").collect()
    spark.sql(f"INSERT INTO {db}.pk VALUES (1, 'a', 10), (2, 'b', 20), (3, 'b', 30)")  # load_table
    # plan_scan, classify_filters, count_rows, aggregate_partitions
    spark.sql(f"SELECT * FROM {db}.pk WHERE p = 'b' AND id = 2").collect()
    spark.sql(f"SELECT count(*) FROM {db}.pk").collect()
    spark.sql(f"SELECT max(p) FROM {db}.pk").collect()
    spark.sql(f"DELETE FROM {db}.pk WHERE p = 'a'")  # can_delete_where, delete_where
    # plan_changes: an incremental $audit_log read
    spark.sql(f"SELECT * FROM {db}.`pk$audit_log` WITH ('incremental-between' = '0,1')").collect()
    spark.sql(f"SELECT * FROM {db}.`pk$snapshots`").collect()  # read_system_table
    spark.sql(f"SHOW PARTITIONS {db}.pk").collect()  # list_partitions
    spark.sql(f"INSERT INTO {db}.pk VALUES (4, 'c', 40)")
    spark.sql(f"ALTER TABLE {db}.pk DROP PARTITION (p = 'c')")  # drop_partitions
    # stage_table (CTAS), rename_table, drop_table
    spark.sql(f"CREATE TABLE {db}.ctas AS SELECT id, v FROM {db}.pk")
    spark.sql(f"ALTER TABLE {db}.ctas RENAME TO bridge_contract.renamed")
    spark.sql(f"DROP TABLE {db}.renamed")
    # A native append write: compaction_due after its commit.
    spark.sql(f"CREATE TABLE {db}.log (id INT, s STRING)")
    spark.sql(f"INSERT INTO {db}.log VALUES (1, 'x')")
    # A write that adds a column: merge_schema (planned, then committed when the write starts).
    spark.sql("SELECT 2 AS id, 'y' AS s, 3 AS n").writeTo(f"{db}.log").option("write.merge-schema", "true").append()
    # row_level_commit: Spark's row-level plan (a condition the table does not evaluate), whose
    # copy-on-write rewrite is a job (then the final answer).
    spark.sql(f"DELETE FROM {db}.log WHERE length(s) = 1 AND id = 2")
    # A dynamic-bucket table whose writers compact every bucket they write: dynamic_assigners.
    spark.sql(
        f"CREATE TABLE {db}.dyn (id INT NOT NULL, v STRING, PRIMARY KEY (id)) "
        "TBLPROPERTIES ('bucket' = '-1', 'deletion-vectors.enabled' = 'true')"
    )
    spark.sql(f"INSERT INTO {db}.dyn SELECT CAST(id AS INT), 'v' FROM range(20)")
    # describe_procedure, call_procedure (a distributed job, then the final answer)
    spark.sql(f"CALL lake.sys.compact(table => '{db[5:]}.pk')").collect()
    # list_procedures: Spark's SQL has no statement for it; the catalog is asked directly.
    namespace = spark.sparkContext._gateway.new_array(spark._jvm.java.lang.String, 1)
    namespace[0] = "sys"
    spark._jsparkSession.sessionState().catalogManager().catalog("lake").listProcedures(namespace)
    # keep_alive: made by a background thread after a pause (test_bridge_keep_alive.py); here once.
    spark._jvm.org.stratalake.spark.bridge.BridgeKeepAlive.call()
    spark.sql(f"DROP DATABASE {db} CASCADE")  # drop_database
    after = json.loads(contract.callCounts())
    return {op: int(after.get(op, 0)) - int(before.get(op, 0)) for op in bc.OPERATIONS}


@spark_test
@pytest.mark.parametrize("operation", list(bc.OPERATIONS))
def test_operation_runs_through_spark(calls: dict[str, int], operation: str) -> None:
    """The operation went JVM -> Python -> JVM through the contract (both sides decode strictly,
    so a call that disagreed with it would have failed the workload)."""
    assert calls[operation] > 0


# ---- malformed requests, refused by name ----------------------------------------------------------


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    error = json.loads(bridge_handlers.handle(json.dumps(request)))["error"]
    assert error["type"] == "BridgeContractError"
    return dict(error)


def _table_exists(**changes: Any) -> dict[str, Any]:
    request = {
        "op": "table_exists",
        "protocol": bc.PROTOCOL_VERSION,
        "catalog": {"warehouse": "/nonexistent-warehouse", "options": {}},
        "database": "default",
        "table": "t",
    }
    request.update(changes)
    return {k: v for k, v in request.items() if v is not _DROP}


_DROP = object()


def test_unknown_key_is_refused_by_name() -> None:
    assert "unknown key 'tabel'" in _answer(_table_exists(tabel="t"))["message"]


def test_unknown_nested_key_is_refused_by_name() -> None:
    catalog = {"warehouse": "/w", "options": {}, "extra": 1}
    assert "unknown key 'extra' in CatalogConf" in _answer(_table_exists(catalog=catalog))["message"]


def test_missing_key_is_refused_by_name() -> None:
    assert "missing key 'table' in TableExists" in _answer(_table_exists(table=_DROP))["message"]


def test_wrongly_typed_value_is_refused_by_name() -> None:
    message = _answer(_table_exists(database=3))["message"]
    assert "request table_exists.database" in message and "expected str, got int" in message


def test_unknown_operation_is_refused_by_name() -> None:
    assert (
        "unknown stratalake bridge request 'drop_everything'"
        in _answer(_table_exists(op="drop_everything"))["message"]
    )


def test_protocol_mismatch_names_both_versions() -> None:
    message = _answer(_table_exists(protocol=bc.PROTOCOL_VERSION + 1))["message"]
    assert f"speaks version {bc.PROTOCOL_VERSION + 1}" in message
    assert f"Python package version {bc.PROTOCOL_VERSION}" in message


def test_request_without_protocol_is_refused() -> None:
    assert "speaks version None" in _answer(_table_exists(protocol=_DROP))["message"]
