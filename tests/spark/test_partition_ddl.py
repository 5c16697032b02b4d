"""Partition DDL and CREATE TABLE LIKE through Spark SQL, with the answers Paimon's Spark
connector gives: SHOW PARTITIONS, ALTER TABLE ... DROP/ADD PARTITION, TRUNCATE TABLE [PARTITION],
and the dropped partitions gone for pypaimon too."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from stratalake.spark import partition_ddl
from tests.interop.paimon_oracle import paimon_read

spark_test = pytest.mark.spark


def _partitions(spark: Any, table: str, spec: str = "") -> list[str]:
    return [r[0] for r in spark.sql(f"SHOW PARTITIONS {table} {spec}").collect()]


def _snapshots(spark: Any, table: str) -> list[tuple[int, str]]:
    db, name = table.rsplit(".", 1)
    rows = spark.sql(f"SELECT snapshot_id, commit_kind FROM {db}.`{name}$snapshots` ORDER BY snapshot_id")
    return [(r[0], r[1]) for r in rows.collect()]


def _error(spark: Any, sql: str) -> str:
    with pytest.raises(Exception) as err:  # Spark's and Py4J's classes vary; the text is checked
        spark.sql(sql).collect()
    return str(err.value)


@spark_test
def test_show_drop_truncate_partitions(spark: Any, db: str, warehouse: Path) -> None:
    t = f"{db}.t"
    spark.sql(
        f"CREATE TABLE {t} (id INT NOT NULL, dt STRING NOT NULL, hr INT NOT NULL, v STRING, "
        "PRIMARY KEY (id, dt, hr)) PARTITIONED BY (dt, hr) TBLPROPERTIES ('bucket' = '1')"
    )
    spark.sql(
        f"INSERT INTO {t} VALUES (1, '2024-01-01', 0, 'a'), (2, '2024-01-01', 1, 'b'), "
        "(3, '2024-01-02', 0, 'c'), (4, '2024-01-02', 1, 'd'), (5, '2024-01-03', 0, 'e')"
    )
    assert _partitions(spark, t) == [
        "dt=2024-01-01/hr=0",
        "dt=2024-01-01/hr=1",
        "dt=2024-01-02/hr=0",
        "dt=2024-01-02/hr=1",
        "dt=2024-01-03/hr=0",
    ]
    assert _partitions(spark, t, "PARTITION (dt = '2024-01-02')") == [
        "dt=2024-01-02/hr=0",
        "dt=2024-01-02/hr=1",
    ]

    # One OVERWRITE commit per statement, however many partitions it drops.
    spark.sql(
        f"ALTER TABLE {t} DROP PARTITION (dt = '2024-01-01', hr = 0), PARTITION (dt = '2024-01-01', hr = 1)"
    )
    spark.sql(f"TRUNCATE TABLE {t} PARTITION (dt = '2024-01-02', hr = 1)")
    assert _snapshots(spark, t) == [(1, "APPEND"), (2, "OVERWRITE"), (3, "OVERWRITE")]
    assert _partitions(spark, t) == ["dt=2024-01-02/hr=0", "dt=2024-01-03/hr=0"]
    assert [r[0] for r in spark.sql(f"SELECT id FROM {t} ORDER BY id").collect()] == [3, 5]
    # pypaimon reads the same table: the dropped partitions are gone.
    ident = f"{db[5:]}.t"
    assert sorted(paimon_read(warehouse, ident).column("id").to_pylist()) == [3, 5]

    # Refusals name the table and the spec, and commit nothing.
    assert "PARTITIONS_NOT_FOUND" in (
        e := _error(spark, f"ALTER TABLE {t} DROP PARTITION (dt = '2030-01-01', hr = 0)")
    )
    assert "`dt` = 2030-01-01" in e and "t" in e
    spark.sql(f"ALTER TABLE {t} DROP IF EXISTS PARTITION (dt = '2030-01-01', hr = 0)")
    e = _error(spark, f"ALTER TABLE {t} DROP PARTITION (v = 'c')")
    assert "`v`" in e and f"`{db[5:]}`.`t`" in e
    e = _error(spark, f"ALTER TABLE {t} ADD PARTITION (dt = '2030-01-01', hr = 0)")
    assert f"table {db[5:]}.t: ALTER TABLE ADD PARTITION (dt=" in e and "INSERT INTO" in e
    assert _snapshots(spark, t)[-1] == (3, "OVERWRITE")

    # TRUNCATE TABLE: an OVERWRITE of everything; SHOW PARTITIONS of an empty table is empty.
    spark.sql(f"TRUNCATE TABLE {t}")
    assert _snapshots(spark, t)[-1] == (4, "OVERWRITE")
    assert _partitions(spark, t) == []
    assert paimon_read(warehouse, ident).num_rows == 0


@spark_test
def test_typed_partition_values(spark: Any, db: str) -> None:
    """DATE and DECIMAL partitions: Spark's values reach Python typed and come back the same."""
    t = f"{db}.typed"
    spark.sql(f"CREATE TABLE {t} (id INT, d DATE, amount DECIMAL(5, 2)) PARTITIONED BY (d, amount)")
    spark.sql(
        f"INSERT INTO {t} VALUES (1, DATE'2024-02-29', 1.5), (2, DATE'2024-03-01', 1.5), (3, NULL, NULL)"
    )
    assert sorted(_partitions(spark, t)) == [
        "d=2024-02-29/amount=1.50",
        "d=2024-03-01/amount=1.50",
        "d=null/amount=null",  # Spark's rendering of null partition values
    ]
    spark.sql(f"ALTER TABLE {t} DROP PARTITION (d = '2024-02-29', amount = 1.50)")
    assert [r[0] for r in spark.sql(f"SELECT id FROM {t} ORDER BY id").collect()] == [2, 3]


@spark_test
def test_create_table_like_copies_keys_partitions_and_options(spark: Any, db: str, warehouse: Path) -> None:
    spark.sql(
        f"CREATE TABLE {db}.src (id INT NOT NULL, pt STRING NOT NULL, v BIGINT, PRIMARY KEY (id, pt)) "
        "PARTITIONED BY (pt) COMMENT 'orders' TBLPROPERTIES ('bucket' = '3', 'merge-engine' = 'partial-update')"
    )
    spark.sql(f"INSERT INTO {db}.src VALUES (1, 'a', 10)")
    spark.sql(f"CREATE TABLE {db}.dst LIKE {db}.src")
    spark.sql(f"CREATE TABLE {db}.dst2 LIKE {db}.src TBLPROPERTIES ('bucket' = '5')")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {db}.dst LIKE {db}.src")  # exists: nothing happens

    cat = stratalake.Catalog(str(warehouse))
    src, dst, dst2 = (cat.get_table(f"{db[5:]}.{n}") for n in ("src", "dst", "dst2"))
    for copy in (dst, dst2):
        assert [(f.name, str(f.type)) for f in copy.schema().fields] == [
            (f.name, str(f.type)) for f in src.schema().fields
        ]
        assert list(copy.schema().primary_keys) == ["id", "pt"]
        assert list(copy.schema().partition_keys) == ["pt"]
        assert copy.schema().options["merge-engine"] == "partial-update"
        assert copy.latest_snapshot() is None  # the schema, not the rows
    assert (dst.schema().options["bucket"], dst2.schema().options["bucket"]) == ("3", "5")
    assert dst.schema().comment == "orders"
    assert dst.location != src.location
    # The copy behaves as the source: a partial update keeps v.
    spark.sql(f"INSERT INTO {db}.dst VALUES (1, 'a', 10)")
    spark.sql(f"INSERT INTO {db}.dst VALUES (1, 'a', NULL)")
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {db}.dst").collect()] == [(1, "a", 10)]
    assert "TABLE_OR_VIEW_ALREADY_EXISTS" in _error(spark, f"CREATE TABLE {db}.dst LIKE {db}.src")


def test_bridge_forms_of_partition_values(tmp_path: Path) -> None:
    """Each partition type's JSON form (what catalog/PartitionValues.java reads and writes), and
    back to a drop of exactly that partition; unsupported types are refused by name."""
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("d", pa.date32()),
            ("ts", pa.timestamp("us")),
            ("amount", pa.decimal128(5, 2)),
            ("ok", pa.bool_()),
            ("s", pa.string()),
        ]
    )
    t = cat.create_table("db.t", schema=schema, partition_keys=["d", "ts", "amount", "ok", "s"])
    ts = datetime.datetime(2024, 2, 29, 12, 30, 0, 250)
    t.write(
        pa.table(
            {
                "id": [1, 2],
                "d": [datetime.date(2024, 2, 29), None],
                "ts": [ts, None],
                "amount": [decimal.Decimal("1.50"), None],
                "ok": [True, None],
                "s": ["x y", None],
            },
            schema=schema,
        )
    )
    micros = (ts - datetime.datetime(1970, 1, 1)) // datetime.timedelta(microseconds=1)
    listed = partition_ddl.list_partitions(t)
    assert listed == [[None] * 5, ["2024-02-29", micros, "1.50", True, "x y"]]
    assert partition_ddl.drop_partitions(t, [listed[1]]) == 2
    assert t.read().column("id").to_pylist() == [2]
    with pytest.raises(
        stratalake.exceptions.InvalidOptionError,
        match=r"table db\.t: partition \['x'\] must give one value per",
    ):
        partition_ddl.drop_partitions(t, [["x"]])

    binary = cat.create_table(
        "db.b", schema=pa.schema([("id", pa.int64()), ("k", pa.binary())]), partition_keys=["k"]
    )
    binary.write(pa.table({"id": [1], "k": [b"x"]}, schema=binary.arrow_schema()))
    with pytest.raises(
        stratalake.exceptions.UnsupportedError, match=r"table db\.b: partition column k has type"
    ):
        partition_ddl.list_partitions(binary)
