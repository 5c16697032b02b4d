"""Databases, CREATE/DESCRIBE/SHOW/ALTER/DROP TABLE through the JVM catalog."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.errors import AnalysisException, IllegalArgumentException

from tests.interop.paimon_oracle import paimon_read

pytestmark = pytest.mark.spark


def test_databases(spark: Any) -> None:
    spark.sql("CREATE DATABASE lake.ddl_db")
    spark.sql("CREATE DATABASE IF NOT EXISTS lake.ddl_db")
    names = {r.namespace for r in spark.sql("SHOW DATABASES IN lake").collect()}
    assert {"default", "ddl_db"} <= names
    with pytest.raises(AnalysisException, match="SCHEMA_ALREADY_EXISTS"):
        spark.sql("CREATE DATABASE lake.ddl_db")
    spark.sql("CREATE TABLE lake.ddl_db.t (id INT, PRIMARY KEY (id) NOT ENFORCED)")
    with pytest.raises(AnalysisException, match="SCHEMA_NOT_EMPTY"):
        spark.sql("DROP DATABASE lake.ddl_db")
    spark.sql("DROP DATABASE lake.ddl_db CASCADE")
    spark.sql("DROP DATABASE IF EXISTS lake.ddl_db")
    assert "ddl_db" not in {r.namespace for r in spark.sql("SHOW DATABASES IN lake").collect()}


def test_use_and_show_tables(spark: Any, db: str) -> None:
    spark.sql(f"USE {db}")
    try:
        spark.sql("CREATE TABLE a (id INT, PRIMARY KEY (id) NOT ENFORCED)")
        spark.sql("CREATE TABLE b (id INT) TBLPROPERTIES ('primary-key' = 'id')")
        assert [r.tableName for r in spark.sql("SHOW TABLES").collect()] == ["a", "b"]
        spark.sql("ALTER TABLE b RENAME TO c")
        assert [r.tableName for r in spark.sql("SHOW TABLES").collect()] == ["a", "c"]
        spark.sql("DROP TABLE a")
        spark.sql("DROP TABLE IF EXISTS a")
        assert [r.tableName for r in spark.sql("SHOW TABLES").collect()] == ["c"]
    finally:
        spark.sql("USE spark_catalog.default")


def test_create_describe_and_show_create_round_trip(spark: Any, db: str) -> None:
    spark.sql(
        f"""CREATE TABLE {db}.t (
              id BIGINT, dt STRING COMMENT 'day', amount DECIMAL(10, 2), tags ARRAY<STRING>,
              PRIMARY KEY (id, dt) NOT ENFORCED
            ) PARTITIONED BY (dt) COMMENT 'orders' WITH ('bucket' = '2')"""
    )
    spark.sql(f"CREATE TABLE IF NOT EXISTS {db}.t (x INT)")  # no-op, no error
    described = {r.col_name: r for r in spark.sql(f"DESCRIBE EXTENDED {db}.t").collect()}
    assert described["id"].data_type == "bigint"
    assert described["dt"].comment == "day"
    assert described["amount"].data_type == "decimal(10,2)"
    assert described["Comment"].data_type == "orders"
    assert "# Partition Information" in described

    schema = spark.table(f"{db}.t").schema
    assert not schema["id"].nullable and not schema["dt"].nullable and schema["amount"].nullable

    ddl = spark.sql(f"SHOW CREATE TABLE {db}.t").collect()[0][0]
    assert "PRIMARY KEY (id, dt) NOT ENFORCED" in ddl
    assert "PARTITIONED BY (dt)" in ddl
    spark.sql(f"DROP TABLE {db}.t")
    spark.sql(ddl)  # replays as is
    assert spark.sql(f"SHOW CREATE TABLE {db}.t").collect()[0][0] == ddl

    props = dict(spark.sql(f"SHOW TBLPROPERTIES {db}.t").collect())
    assert props["bucket"] == "2"
    assert props["primary-key"] == "id,dt"


def test_alter_table(spark: Any, db: str) -> None:
    t = f"{db}.alt"
    spark.sql(f"CREATE TABLE {t} (id INT, v INT, PRIMARY KEY (id) NOT ENFORCED)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 10)")
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (note STRING COMMENT 'free text')")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN v TO value")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN value TYPE BIGINT")
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('snapshot.num-retained.min' = '3')")
    assert dict(spark.sql(f"SHOW TBLPROPERTIES {t}").collect())["snapshot.num-retained.min"] == "3"
    spark.sql(f"ALTER TABLE {t} UNSET TBLPROPERTIES ('snapshot.num-retained.min')")
    assert "snapshot.num-retained.min" not in dict(spark.sql(f"SHOW TBLPROPERTIES {t}").collect())
    spark.sql(f"INSERT INTO {t} VALUES (2, 20, 'new')")
    rows = spark.sql(f"SELECT * FROM {t} ORDER BY id").collect()
    assert [tuple(r) for r in rows] == [(1, 10, None), (2, 20, "new")]
    assert dict(spark.table(t).dtypes)["value"] == "bigint"
    spark.sql(f"ALTER TABLE {t} DROP COLUMN note")
    assert spark.table(t).columns == ["id", "value"]


def test_alter_column_position(spark: Any, db: str, warehouse: Any) -> None:
    """ALTER COLUMN ... FIRST/AFTER and ADD COLUMN ... AFTER, as Paimon's SchemaChange.Move:
    only the order changes; files written before are read by field id (pypaimon too)."""
    t = f"{db}.pos"
    spark.sql(f"CREATE TABLE {t} (id INT, a STRING, b INT, PRIMARY KEY (id) NOT ENFORCED)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x', 10)")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN b FIRST")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN c DOUBLE AFTER id")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN a AFTER b")
    assert spark.table(t).columns == ["b", "a", "id", "c"]
    spark.sql(f"INSERT INTO {t} VALUES (20, 'y', 2, 0.5)")
    rows = [tuple(r) for r in spark.sql(f"SELECT * FROM {t} ORDER BY id").collect()]
    assert rows == [(10, "x", 1, None), (20, "y", 2, 0.5)]
    # Time travel shows the order snapshot 1 was written with.
    assert spark.sql(f"SELECT * FROM {t} VERSION AS OF 1").columns == ["id", "a", "b"]

    ident = t.split(".", 1)[1]
    theirs = paimon_read(str(warehouse), ident).sort_by("id")
    assert theirs.column_names == ["b", "a", "id", "c"]
    assert theirs.to_pylist() == [
        {"b": 10, "a": "x", "id": 1, "c": None},
        {"b": 20, "a": "y", "id": 2, "c": 0.5},
    ]
    with pytest.raises(AnalysisException, match="nosuch"):
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN a AFTER nosuch")


def test_errors_are_readable(spark: Any, db: str) -> None:
    with pytest.raises(IllegalArgumentException, match=r"STRATALAKE:InvalidOptionError.*'bucket'"):
        spark.sql(f"CREATE TABLE {db}.bad (id INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = 'x')")
    assert not spark.catalog.tableExists(f"{db}.bad")
    with pytest.raises(IllegalArgumentException, match="disagree"):
        spark.sql(
            f"CREATE TABLE {db}.bad (id INT, v INT, PRIMARY KEY (id) NOT ENFORCED) "
            "TBLPROPERTIES ('primary-key' = 'v')"
        )
    spark.sql(f"CREATE TABLE {db}.dup (id INT, PRIMARY KEY (id) NOT ENFORCED)")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        spark.sql(f"CREATE TABLE {db}.dup (id INT, PRIMARY KEY (id) NOT ENFORCED)")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {db}.missing")
    with pytest.raises(IllegalArgumentException, match="SnapshotNotFoundError"):
        spark.sql(f"SELECT * FROM {db}.dup VERSION AS OF 42").collect()


def test_errors_map_back_to_stratalake_exceptions(spark: Any, db: str) -> None:
    from stratalake.exceptions import InvalidOptionError
    from stratalake.spark.errors import stratalake_errors

    with pytest.raises(InvalidOptionError, match="'bucket'"), stratalake_errors():
        spark.sql(f"CREATE TABLE {db}.bad (id INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = 'x')")


@pytest.mark.interop
def test_tables_stratalake_cannot_serve_are_listed_described_and_refused_by_name(
    spark: Any, warehouse: Any
) -> None:
    """A pypaimon append table with row tracking and a table with an unknown merge engine: SHOW TABLES lists them,
    DESCRIBE works, reads and writes fail with an error naming the table and the feature."""
    import json
    from pathlib import Path

    import pyarrow as pa

    from tests.interop.paimon_oracle import paimon_create_table, paimon_write

    s = pa.schema([("id", pa.int64()), ("v", pa.string())])
    paimon_create_table(
        str(warehouse), "foreign.events", s, primary_keys=[], options={"row-tracking.enabled": "true"}
    )
    paimon_write(str(warehouse), "foreign.events", pa.table({"id": [1], "v": ["a"]}, schema=s))
    paimon_create_table(str(warehouse), "foreign.odd", s, primary_keys=["id"], options={"bucket": "2"})
    schema_file = Path(warehouse) / "foreign.db" / "odd" / "schema" / "schema-0"
    doc = json.loads(schema_file.read_text())
    doc["options"]["merge-engine"] = "some-future-engine"
    schema_file.write_text(json.dumps(doc))

    names = {r.tableName for r in spark.sql("SHOW TABLES IN lake.foreign").collect()}
    assert {"events", "odd"} <= names
    for name, feature in (("events", "row-tracking.enabled"), ("odd", "merge-engine")):
        cols = [r.col_name for r in spark.sql(f"DESCRIBE lake.foreign.{name}").collect()]
        assert cols[:2] == ["id", "v"]
        with pytest.raises(Exception, match=rf"foreign\.{name}.*{feature}"):
            spark.sql(f"SELECT * FROM lake.foreign.{name}").collect()
        with pytest.raises(Exception, match=rf"foreign\.{name}.*{feature}"):
            spark.sql(f"INSERT INTO lake.foreign.{name} VALUES (2, 'b')")
