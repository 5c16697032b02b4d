"""System tables through Spark (``lake.db.`t$snapshots```), checked against the Python API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from stratalake.catalog import Catalog
from stratalake.spark import bridge_contract as bc
from stratalake.spark import bridge_handlers, driver_tables
from tests.spark.test_native_read import native, plan_of

pytestmark = pytest.mark.spark


def rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in spark.sql(sql).collect()]


def test_system_tables_match_the_python_api(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.sys"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, v STRING, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '2')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 'd1'), (2, 'b', 'd1'), (3, 'c', 'd2')")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'b2', 'd1')")
    table = Catalog(str(warehouse)).get_table(t.removeprefix("lake."))
    table.create_tag("t1", 1)

    def sys(name: str, columns: str = "*") -> list[tuple[Any, ...]]:
        return rows(spark, f"SELECT {columns} FROM {db}.`sys${name}`")

    assert sys("snapshots", "snapshot_id, commit_kind, total_record_count") == [
        (1, "APPEND", 3),
        (2, "APPEND", 4),
    ]
    assert [c for c in spark.table(f"{db}.`sys$snapshots`").columns][:5] == [
        "snapshot_id",
        "schema_id",
        "commit_user",
        "commit_identifier",
        "commit_kind",
    ]
    assert sys("schemas", "schema_id, primary_keys, partition_keys") == [(0, '["id","dt"]', '["dt"]')]
    assert ("bucket", "2") in sys("options")
    for name in (
        "files",
        "manifests",
        "partitions",
        "buckets",
        "tags",
        "file_key_ranges",
        "aggregation_fields",
    ):
        expected = table.system_table(name)
        got = spark.table(f"{db}.`sys${name}`")
        assert got.columns == expected.column_names, name
        assert got.count() == expected.num_rows, name
    assert sys("partitions", "partition, record_count, file_count") == [("dt=d1", 3, 2), ("dt=d2", 1, 1)]
    assert sys("tags", "tag_name, snapshot_id") == [("t1", 1)]
    # Columns Paimon added later (row tracking, Java-only snapshot fields, partition metadata).
    assert sys("tags", "create_time IS NOT NULL, time_retained") == [(True, None)]
    assert sys("snapshots", "operation, writer_version") == [(None, None), (None, None)]
    assert set(sys("files", "first_row_id, write_cols")) == {(None, None)}
    assert set(sys("manifests", "min_row_id, max_row_id")) == {(None, None)}
    assert sys("partitions", "created_at, options, done, deleted_record_count") == [
        (None, None, False, 0),
        (None, None, False, 0),
    ]
    assert sorted(sys("files", "partition, level, record_count")) == sorted(
        (r["partition"], r["level"], r["record_count"]) for r in table.system_table("files").to_pylist()
    )
    assert sys("aggregation_fields", "field_name, function") == [("id", "[]"), ("v", "[]"), ("dt", "[]")]
    assert sys("table_indexes") == []  # no deletion vectors or hash index
    audit = sorted(sys("audit_log"))
    assert audit == [("+I", 1, "a", "d1"), ("+I", 2, "b2", "d1"), ("+I", 3, "c", "d2")]
    assert sorted(sys("binlog")) == [
        ("+I", [1], ["a"], ["d1"]),
        ("+I", [2], ["b2"], ["d1"]),
        ("+I", [3], ["c"], ["d2"]),
    ]
    assert sys("ro") == []  # nothing compacted to the top level yet
    table.compact(full=True)
    assert sorted(sys("ro", "id, v")) == [(1, "a"), (2, "b2"), (3, "c")]
    with pytest.raises(Exception, match=r"sys\$nope"):
        spark.sql(f"SELECT * FROM {db}.`sys$nope`")
    with pytest.raises(Exception, match="sys\\$snapshots"):
        spark.sql(f"INSERT INTO {db}.`sys$snapshots` SELECT * FROM {db}.`sys$snapshots`")


def test_table_indexes_show_deletion_vectors_through_spark(spark: Any, db: str, warehouse: Any) -> None:
    from tests.deletion_vectors.helpers import SCHEMA, batch

    name = f"{db.removeprefix('lake.')}.dv"
    table = Catalog(str(warehouse)).create_table(
        name, schema=SCHEMA, primary_key=["k"], options={"bucket": "1", "deletion-vectors.enabled": "true"}
    )
    table.write(batch(list(range(3000)), "a"))
    table.write(batch([1, 5, 9], "b"))  # the writer's compaction marks the old rows in a vector
    expected = table.system_table("table_indexes").to_pylist()
    assert expected and expected[0]["dv_ranges"]
    got = [r.asDict(recursive=True) for r in spark.sql(f"SELECT * FROM {db}.`dv$table_indexes`").collect()]
    assert got == expected


def test_version_as_of_tag(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.tagged"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    spark.sql(f"CALL lake.sys.create_tag(table => '{t.removeprefix('lake.')}', tag => 'first')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'b'), (2, 'c')")
    assert rows(spark, f"SELECT * FROM {t} VERSION AS OF 'first'") == [(1, "a")]
    assert rows(spark, f"SELECT * FROM {t} VERSION AS OF 1") == [(1, "a")]
    with pytest.raises(Exception, match=r"TagNotFoundError|does not exist"):
        spark.sql(f"SELECT * FROM {t} VERSION AS OF 'nope'").collect()


def test_global_system_tables(spark: Any, tmp_path: Any) -> None:
    """sys.tables (alias sys.all_tables), sys.all_table_options and sys.catalog_options, with
    Paimon's columns; credentials redacted; read-only and of no version."""
    # A catalog of its own: sys.tables reads every table of the catalog's warehouse.
    spark.conf.set("spark.sql.catalog.globalsys", "org.stratalake.spark.StrataLakeCatalog")
    spark.conf.set("spark.sql.catalog.globalsys.warehouse", str(tmp_path))
    spark.conf.set("spark.sql.catalog.globalsys.s3.secret-key", "hunter2")
    spark.sql("CREATE DATABASE globalsys.d")
    db, name = "globalsys.d", "d"
    spark.sql(
        f"CREATE TABLE {db}.g (id BIGINT, dt STRING, v STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt) TBLPROPERTIES ('bucket' = '2', 'snapshot.num-retained.min' = '7')"
    )
    spark.sql(f"CREATE TABLE {db}.e (x INT)")
    spark.sql(f"INSERT INTO {db}.g VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'b', 'z')")

    tables = {r.table_name: r.asDict() for r in spark.sql("SELECT * FROM globalsys.sys.tables").collect()}
    assert set(tables) == {"g", "e"}
    g, e = tables["g"], tables["e"]
    assert g["database_name"] == name
    assert (g["table_type"], g["partitioned"], g["primary_key"]) == ("table", True, True)
    assert (e["partitioned"], e["primary_key"], e["record_count"], e["file_count"]) == (
        False,
        False,
        None,
        None,
    )
    live = spark.sql(
        f"SELECT count(*), sum(file_size_in_bytes), sum(record_count) FROM {db}.`g$files`"
    ).collect()[0]
    assert (g["file_count"], g["file_size_in_bytes"], g["record_count"]) == tuple(live)
    assert g["last_file_creation_time"] is not None
    assert spark.sql("SELECT count(*) FROM globalsys.sys.all_tables").collect()[0][0] == 2

    options = {
        (r.table_name, r.key): r.value
        for r in spark.sql("SELECT * FROM globalsys.sys.all_table_options").collect()
    }
    assert options[("g", "bucket")] == "2"
    assert options[("g", "snapshot.num-retained.min")] == "7"

    catalog = dict(spark.sql("SELECT key, value FROM globalsys.sys.catalog_options").collect())
    assert catalog["warehouse"] == str(tmp_path)
    assert catalog["s3.secret-key"] != "hunter2"
    assert {r.tableName for r in spark.sql("SHOW TABLES IN globalsys.sys").collect()} >= {
        "tables",
        "all_table_options",
        "catalog_options",
    }
    with pytest.raises(Exception, match=r"read-only|does not support|UNSUPPORTED"):
        spark.sql("INSERT INTO globalsys.sys.catalog_options VALUES ('a', 'b')")
    with pytest.raises(Exception, match="no versions"):
        spark.sql("SELECT * FROM globalsys.sys.tables VERSION AS OF 1").collect()
    with pytest.raises(Exception, match=r"(?i)TABLE_OR_VIEW_NOT_FOUND|does not exist"):
        spark.sql("SELECT * FROM globalsys.sys.nosuch").collect()


def test_metadata_tables_are_answered_on_the_driver(spark: Any, db: str, warehouse: Any) -> None:
    """Metadata system tables are a local scan on the driver (``driver_tables``), with the rows
    of the Python data source's read (native reads off); per-file and row tables stay scans."""
    t = f"{db}.drv"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, v STRING, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '2', 'deletion-vectors.enabled' = 'true')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 'd1'), (2, 'b', 'd1'), (3, 'c', 'd2')")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'b2', 'd1')")
    Catalog(str(warehouse)).get_table(t.removeprefix("lake.")).create_tag("t1", 1)
    driver = (
        "snapshots",
        "schemas",
        "options",
        "manifests",
        "partitions",
        "buckets",
        "tags",
        "branches",
        "consumers",
        "statistics",
        "aggregation_fields",
        "table_indexes",
    )
    queries = [(f"SELECT * FROM {db}.`drv${name}`", True) for name in driver]
    queries += [
        (f"SELECT max(snapshot_id), count(*) FROM {db}.`drv$snapshots`", True),
        (f"SELECT file_name FROM {db}.`drv$manifests` VERSION AS OF 1", True),
        (f"SELECT snapshot_id FROM {db}.`drv$snapshots` WITH ('scan.tag-name' = 't1')", True),
        ("SELECT * FROM lake.sys.all_table_options", True),
        (f"SELECT * FROM {db}.`drv$files`", False),
        (f"SELECT * FROM {db}.`drv$file_key_ranges`", False),
        (f"SELECT * FROM {db}.`drv$audit_log`", False),
        (f"SELECT * FROM {db}.`drv$audit_log` WITH ('incremental-between' = '0,2')", False),
    ]
    for sql, on_driver in queries:
        with native(spark, False):
            df = spark.sql(sql)
            reference = sorted(map(repr, df.collect()))
            assert "LocalTableScan" not in plan_of(df), sql
        df = spark.sql(sql)
        assert sorted(map(repr, df.collect())) == reference, sql
        plan = plan_of(df)
        assert ("LocalTableScan" in plan and "BatchScan" not in plan) == on_driver, (sql, plan)
    # Options the table does not honour are still refused by name, and nothing runs on a task.
    with pytest.raises(Exception, match=r"scan\.nope"):
        spark.sql(f"SELECT * FROM {db}.`drv$snapshots` WITH ('scan.nope' = '1')").collect()


def test_a_large_answer_is_left_to_a_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``driver_tables.MAX_BYTES`` the rows are not held on the driver (None: Spark's task
    reads them); a table that is no system table is never answered there."""
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.big", pa.schema([("id", pa.int64())]), primary_key=["id"], options={"bucket": "1"}
    )
    for i in range(3):
        t.write(pa.table({"id": [i]}))
    conf = bc.CatalogConf(warehouse=str(tmp_path), options={})

    def described(name: str) -> tuple[dict[str, str], Any]:
        d = bridge_handlers.load_table(bc.LoadTable(conf, "db", name, None, None))
        return d.source_options, d.schema

    options, schema = described("big$snapshots")
    assert driver_tables.read(options, schema) is not None
    assert driver_tables.read(*described("big")) is None
    monkeypatch.setattr(driver_tables, "MAX_BYTES", 100)
    assert driver_tables.read(options, schema) is None


def test_aggregates_of_a_driver_answered_table(spark: Any, db: str) -> None:
    """COUNT, MIN and MAX without grouping are answered with the rows (one row, no aggregation
    left in the plan); other aggregates, and any after a filter, are Spark's. Same answers as
    the Python data source's read."""
    spark.sql(f"CREATE TABLE {db}.agg (id BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    for i in range(3):
        spark.sql(f"INSERT INTO {db}.agg VALUES ({i})")
    snaps = f"{db}.`agg$snapshots`"
    for sql, pushed in (
        (f"SELECT max(snapshot_id) FROM {snaps}", True),
        (
            f"SELECT min(snapshot_id), max(commit_time), min(commit_kind), count(*), count(watermark), "
            f"count(snapshot_id), max(watermark) FROM {snaps}",
            True,
        ),
        (f"SELECT max(snapshot_id) FROM {db}.`agg$options`", False),  # no such column: refused
        (f"SELECT max(snapshot_id) FROM {snaps} WHERE snapshot_id < 3", False),
        (f"SELECT sum(snapshot_id), count(DISTINCT commit_kind) FROM {snaps}", False),
        (f"SELECT commit_kind, max(snapshot_id) FROM {snaps} GROUP BY commit_kind", False),
    ):
        if "agg$options" in sql:
            with pytest.raises(Exception, match="snapshot_id"):
                spark.sql(sql).collect()
            continue
        with native(spark, False):
            reference = [tuple(r) for r in spark.sql(sql).collect()]
        df = spark.sql(sql)
        assert [tuple(r) for r in df.collect()] == reference, sql
        plan = plan_of(df)
        assert ("HashAggregate" not in plan) == pushed, (sql, plan)
    assert reference == [("APPEND", 3)]
