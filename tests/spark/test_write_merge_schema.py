"""Write-time schema evolution (Paimon's ``write.merge-schema``): DataFrame and SQL writes that
add columns, what is refused (naming the table, column and types, the table unchanged), and the
evolved tables as pypaimon reads them."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import pytest
from pyspark.sql.functions import col

from stratalake import Catalog, SchemaChange
from stratalake.exceptions import CommitConflictError, UnsupportedError
from stratalake.spark import bridge_contract as bc
from stratalake.spark import bridge_handlers
from stratalake.spark.write_options import check_write_options
from tests.interop.paimon_oracle import paimon_read

pytestmark = [pytest.mark.spark, pytest.mark.interop]

MERGE = {"write.merge-schema": "true"}


def _rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def _versions(spark: Any, t: str) -> tuple[int, int]:
    """(schemas, snapshots) of table ``t``."""
    database, name = t.rsplit(".", 1)
    counts = [
        spark.sql(f"SELECT count(*) FROM {database}.`{name}${system}`").collect()[0][0]
        for system in ("schemas", "snapshots")
    ]
    return int(counts[0]), int(counts[1])


@pytest.mark.parametrize(
    ("engine", "expected"),
    [
        ("deduplicate", [(1, "a", None), (2, "B", 20), (3, "c", 30)]),
        ("partial-update", [(1, "a", None), (2, "B", 20), (3, "c", 30)]),
        ("aggregation", [(1, "a", None), (2, "B", 20), (3, "c", 30)]),
        ("first-row", [(1, "a", None), (2, "b", None), (3, "c", 30)]),
    ],
)
def test_dataframe_write_adds_columns_to_primary_key_tables(
    spark: Any, db: str, warehouse: Any, engine: str, expected: list[tuple[Any, ...]]
) -> None:
    t = f"{db}.t"
    spark.sql(
        f"CREATE TABLE {t} (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) "
        f"TBLPROPERTIES ('bucket' = '2', 'merge-engine' = '{engine}')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    df = spark.createDataFrame([(20, "B", 2), (30, "c", 3)], "n int, v string, k long")  # by name
    df.writeTo(t).options(**MERGE).append()
    assert spark.table(t).columns == ["k", "v", "n"]  # added after the existing columns
    assert _rows(spark, f"SELECT k, v, n FROM {t}") == expected
    # The old snapshot keeps its own schema; pypaimon 2.1 reads the evolved table, old rows NULL.
    assert spark.sql(f"SELECT * FROM {t} VERSION AS OF 1").columns == ["k", "v"]
    assert _rows(spark, f"SELECT * FROM {t} VERSION AS OF 1") == [(1, "a"), (2, "b")]
    got = paimon_read(str(warehouse), t.removeprefix("lake."))
    assert got.column_names == ["k", "v", "n"]
    assert sorted(tuple(r.values()) for r in got.to_pylist()) == expected


def test_sql_insert_by_name_under_the_session_setting(spark: Any, db: str, warehouse: Any) -> None:
    """``SET spark.stratalake.write.merge-schema`` (Paimon's ``spark.paimon.write.merge-schema``):
    INSERT BY NAME adds columns and NULL-fills missing ones; EXPLAIN changes nothing; type
    widening widens a value column."""
    t = f"{db}.t"
    spark.sql(f"CREATE TABLE {t} (k BIGINT, v INT, s STRING, PRIMARY KEY (k) NOT ENFORCED)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 10, 'x')")
    spark.conf.set("spark.stratalake.write.merge-schema", "true")
    try:
        spark.sql(f"EXPLAIN INSERT INTO {t} BY NAME SELECT 9 AS k, 1 AS never").collect()
        assert _versions(spark, t) == (1, 1)  # planned, not run: no schema change
        spark.sql(f"INSERT INTO {t} BY NAME SELECT 2 AS k, 'y' AS s, DATE'2024-01-02' AS d")
        # Without type widening a wider value is cast to the column's type (INT stays INT).
        spark.sql(f"INSERT INTO {t} BY NAME SELECT 3 AS k, CAST(30 AS BIGINT) AS v")
        assert dict(spark.table(t).dtypes)["v"] == "int"
        # MERGE does not evolve the schema: INSERT * with a column the table lacks is refused (Paimon
        # would add it); without one it runs as always.
        merge = f"MERGE INTO {t} USING ({{}}) s ON {t}.k = s.k WHEN NOT MATCHED THEN INSERT *"
        with pytest.raises(Exception, match=r"MERGE INTO does not evolve the schema .* lacks: extra"):
            spark.sql(merge.format("SELECT 5L AS k, 50 AS v, 'z' AS s, DATE'2024-01-05' AS d, 1 AS extra"))
        spark.sql(merge.format("SELECT 5L AS k, 50 AS v, 'z' AS s, DATE'2024-01-05' AS d"))
        spark.sql("SET `spark.stratalake.write.merge-schema.type-widening` = true")
        # As in Paimon, widening takes the data's types as they are: an INT key into the BIGINT
        # column would be narrowing, refused.
        spark.sql(f"INSERT INTO {t} BY NAME SELECT 4L AS k, 40000000000L AS v")
    finally:
        spark.conf.unset("spark.stratalake.write.merge-schema")
        spark.conf.unset("spark.stratalake.write.merge-schema.type-widening")
    assert spark.table(t).dtypes == [("k", "bigint"), ("v", "bigint"), ("s", "string"), ("d", "date")]
    expected = [
        (1, 10, "x", None),
        (2, None, "y", datetime.date(2024, 1, 2)),
        (3, 30, None, None),
        (4, 40000000000, None, None),
        (5, 50, "z", datetime.date(2024, 1, 5)),
    ]
    assert _rows(spark, f"SELECT * FROM {t}") == expected
    assert _versions(spark, t)[0] == 3  # d added, then v widened
    got = paimon_read(str(warehouse), t.removeprefix("lake."))
    assert sorted(tuple(r.values()) for r in got.to_pylist()) == expected


def test_append_table_and_save_as_table(spark: Any, db: str, warehouse: Any) -> None:
    """An append table (Spark's own Parquet writer, Python's once columns are added), through
    ``saveAsTable`` in append mode and Spark's ``mergeSchema`` spelling; names match
    case-insensitively, as Spark's do."""
    t = f"{db}.t"
    spark.sql(f"CREATE TABLE {t} (id INT, name STRING) PARTITIONED BY (name)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    df = spark.createDataFrame([(2, "b", 2.5)], "ID int, name string, score double")
    df.write.mode("append").option("mergeSchema", "true").saveAsTable(t)
    assert spark.table(t).columns == ["id", "name", "score"]
    spark.createDataFrame([(3, "c")], "id int, name string").write.mode("append").option(
        "mergeSchema", "true"
    ).saveAsTable(t)  # nothing to add: no new schema
    expected = [(1, "a", None), (2, "b", 2.5), (3, "c", None)]
    assert _rows(spark, f"SELECT * FROM {t}") == expected
    assert _versions(spark, t) == (2, 3)
    # Overwrites evolve too: of the partitions written, and of those a condition names (its
    # columns keep resolving against the evolved table).
    spark.sql("SELECT 4 AS id, 'b' AS name, 4.5D AS score, 'q' AS note").writeTo(t).option(
        "write.merge-schema", "true"
    ).overwritePartitions()
    spark.sql("SELECT 5 AS id, 'a' AS name").writeTo(t).option("write.merge-schema", "true").overwrite(
        col("name") == "a"
    )
    expected = [(3, "c", None, None), (4, "b", 4.5, "q"), (5, "a", None, None)]
    assert _rows(spark, f"SELECT * FROM {t}") == expected
    assert _versions(spark, t) == (3, 5)
    got = paimon_read(str(warehouse), t.removeprefix("lake."))
    assert sorted(tuple(r[c] for c in ("id", "name", "score", "note")) for r in got.to_pylist()) == expected


def test_refusals_leave_the_table_unchanged(spark: Any, db: str) -> None:
    t = f"{db}.t"
    spark.sql(
        f"CREATE TABLE {t} (k INT, p STRING, v BIGINT, s STRUCT<a: INT>, PRIMARY KEY (k, p) NOT ENFORCED) "
        "PARTITIONED BY (p) TBLPROPERTIES ('bucket' = '1')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x', 10, named_struct('a', 1))")
    name = f"{db.split('.')[1]}.t"
    widen = {**MERGE, "write.merge-schema.type-widening": "true"}
    refusals = [
        # Narrowing is no widening (Paimon: the data's type must be one the column casts to implicitly).
        (
            "2 AS k, 'x' AS p, 20 AS v",
            widen,
            f"table {name}: cannot widen column 'v' from BIGINT to the data's INT",
        ),
        (
            "2L AS k, 'x' AS p",
            widen,
            "cannot change the type of primary-key column 'k' from INT NOT NULL to BIGINT",
        ),
        (
            "'x' AS p, 20L AS v",
            MERGE,
            f"table {name}: column 'k' \\(INT NOT NULL\\) is missing from the data",
        ),
        (
            "2 AS k, 'x' AS p, named_struct('a', 1, 'b', 2) AS s",
            MERGE,
            f"table {name}: column 's' of the data has fields its ROW type lacks \\(s.b\\)",
        ),
        (
            "2 AS k, 'x' AS p",
            {**MERGE, "write.merge-schema.explicit-cast": "true"},
            "'write.merge-schema.explicit-cast' is not supported",
        ),
        (
            "2 AS k, 'x' AS p",
            {"write.merge-schema": "yes"},
            "'write.merge-schema'='yes' must be 'true' or 'false'",
        ),
        # Without the option a new column is Spark's error, as before.
        ("2 AS k, 'x' AS p, 1 AS n", {}, "Cannot write extra columns `n`"),
    ]
    for select, options, error in refusals:
        with pytest.raises(Exception, match=f"(?i){error}"):
            spark.sql(f"SELECT {select}").writeTo(t).options(**options).append()
    assert _versions(spark, t) == (1, 1)  # no schema file, no snapshot
    assert _rows(spark, f"SELECT k, p, v FROM {t}") == [(1, "x", 10)]


# ---- without Spark: the bridge operation and the write options ----------------------------------


def test_commit_refuses_a_schema_changed_since_planning(tmp_path: Any) -> None:
    """The schema Python planned is committed only if the table still evolves to it: a column
    added meanwhile fails the write with nothing committed (no schema on top of the other's)."""
    conf = bc.CatalogConf(warehouse=str(tmp_path), options={})
    cat = bridge_handlers.catalog(conf)
    cat.create_database("db")
    cat.create_table("db.t", [("k", "BIGINT NOT NULL"), ("v", "STRING")], primary_key=["k"])
    data = {
        "type": "struct",
        "fields": [
            {"name": "k", "type": "long", "nullable": False, "metadata": {}},
            {"name": "n", "type": "integer", "nullable": True, "metadata": {}},
        ],
    }
    request = bc.MergeSchema(conf, "db", "t", data, False, False, False, None)
    planned = bridge_handlers.merge_schema(request)
    assert [f["name"] for f in planned["fields"]] == ["k", "v", "n"]
    assert cat.get_table("db.t").schema().id == 0  # planning commits nothing
    cat.alter_table("db.t", [SchemaChange.add_column("w", "INT")])
    with pytest.raises(
        CommitConflictError, match=r"table db\.t: the schema changed while the write was planned"
    ):
        bridge_handlers.merge_schema(dataclasses.replace(request, expected=planned))
    assert cat.get_table("db.t").schema().id == 1
    replanned = bridge_handlers.merge_schema(request)
    assert bridge_handlers.merge_schema(dataclasses.replace(request, expected=replanned)) == replanned
    assert [f.name for f in cat.get_table("db.t").schema().fields] == ["k", "v", "w", "n"]


def test_write_options_of_schema_evolution(tmp_path: Any) -> None:
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    table = cat.create_table("db.t", [("k", "BIGINT NOT NULL")], primary_key=["k"])
    check_write_options(table, {"write.merge-schema": "TRUE", "write.merge-schema.type-widening": "true"})
    check_write_options(table, {"mergeschema": "false", "write.merge-schema.explicit-cast": "false"})
    with pytest.raises(
        UnsupportedError, match=r"'write\.merge-schema' .* is not supported on streaming writes"
    ):
        check_write_options(table, {"write.merge-schema": "true"}, streaming=True)
    check_write_options(table, {"write.merge-schema": "false"}, streaming=True)
