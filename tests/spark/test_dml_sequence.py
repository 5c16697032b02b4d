"""DELETE / UPDATE / MERGE INTO on tables with ``sequence.field`` (or NOT NULL value columns),
checked against the Python API.

A ``-D`` record is ordered by its sequence-field values like any record: it must carry the stored
row's values (so it ties with the row and wins on the later system sequence number), not only the
key (a null sequence value sorts oldest and would lose to the row it deletes).
"""

from __future__ import annotations

from typing import Any

import pytest

from stratalake.catalog import Catalog

pytestmark = pytest.mark.spark


def _py_rows(warehouse: Any, table: str) -> list[tuple[Any, ...]]:
    t = Catalog(str(warehouse)).get_table(table.removeprefix("lake."))
    return sorted(tuple(r.values()) for r in t.read().to_pylist())


def _compact_full(warehouse: Any, table: str) -> None:
    Catalog(str(warehouse)).get_table(table.removeprefix("lake.")).compact(full=True)


def _seq_table(spark: Any, t: str, options: str = "") -> None:
    extra = f", {options}" if options else ""
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, ts BIGINT, v STRING, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        f"PARTITIONED BY (dt) WITH ('bucket' = '2', 'sequence.field' = 'ts'{extra})"
    )
    spark.sql(
        f"INSERT INTO {t} VALUES (1, 10, 'a', 'd1'), (2, 10, 'b', 'd1'), (3, 10, 'c', 'd2'), "
        "(4, NULL, 'd', 'd2'), (5, 7, 'e', 'd1')"
    )


@pytest.mark.parametrize("order", ["ascending", "descending"])
def test_delete_on_sequence_field_table(spark: Any, db: str, warehouse: Any, order: str) -> None:
    t = f"{db}.seq_del_{order}"
    _seq_table(spark, t, f"'sequence.field.sort-order' = '{order}'")
    spark.sql(f"DELETE FROM {t} WHERE v = 'a'")  # Spark's row-level plan (a scan by condition)
    assert [r[0] for r in _py_rows(warehouse, t)] == [2, 3, 4, 5]
    spark.sql(f"DELETE FROM {t} WHERE id = 2 AND dt = 'd1'")  # on the full key: a lookup, no scan
    spark.sql(f"DELETE FROM {t} WHERE id = 4")  # its stored sequence value is null
    assert _py_rows(warehouse, t) == [(3, 10, "c", "d2"), (5, 7, "e", "d1")]
    _compact_full(warehouse, t)  # the retractions survive a full compaction
    assert _py_rows(warehouse, t) == [(3, 10, "c", "d2"), (5, 7, "e", "d1")]
    # Deleting a key that no longer exists changes nothing.
    spark.sql(f"DELETE FROM {t} WHERE id = 1 AND dt = 'd1'")
    assert spark.sql(f"SELECT id FROM {t} ORDER BY id").collect() == [(3,), (5,)]


@pytest.mark.parametrize("order", ["ascending", "descending"])
def test_update_on_sequence_field_table(spark: Any, db: str, warehouse: Any, order: str) -> None:
    t = f"{db}.seq_upd_{order}"
    _seq_table(spark, t, f"'sequence.field.sort-order' = '{order}'")
    spark.sql(f"UPDATE {t} SET v = 'a2' WHERE id = 1")  # same sequence value: the later record wins
    spark.sql(f"UPDATE {t} SET v = 'd2' WHERE id = 4")  # null sequence value, kept null
    newer = "ts + 1" if order == "ascending" else "ts - 1"
    spark.sql(f"UPDATE {t} SET v = 'b2', ts = {newer} WHERE id = 2")
    b_ts = 11 if order == "ascending" else 9
    assert _py_rows(warehouse, t) == [
        (1, 10, "a2", "d1"),
        (2, b_ts, "b2", "d1"),
        (3, 10, "c", "d2"),
        (4, None, "d2", "d2"),
        (5, 7, "e", "d1"),
    ]
    # An older sequence value loses to the stored row, as for any write (Paimon's semantics).
    older = "ts - 5" if order == "ascending" else "ts + 5"
    spark.sql(f"UPDATE {t} SET v = 'stale', ts = {older} WHERE id = 3")
    assert _py_rows(warehouse, t)[2] == (3, 10, "c", "d2")


def test_merge_into_sequence_field_table(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.seq_merge"
    _seq_table(spark, t)
    spark.createDataFrame(
        [(1, 10, "gone", "d1"), (2, 10, "b2", "d1"), (9, 1, "new", "d3")],
        "id long, ts long, v string, dt string",
    ).createOrReplaceTempView("seq_merge_src")
    spark.sql(
        f"""MERGE INTO {t} t USING seq_merge_src s ON t.id = s.id AND t.dt = s.dt
        WHEN MATCHED AND s.v = 'gone' THEN DELETE
        WHEN MATCHED THEN UPDATE SET *
        WHEN NOT MATCHED THEN INSERT *
        WHEN NOT MATCHED BY SOURCE AND t.id = 4 THEN DELETE"""
    )
    assert _py_rows(warehouse, t) == [
        (2, 10, "b2", "d1"),
        (3, 10, "c", "d2"),
        (5, 7, "e", "d1"),
        (9, 1, "new", "d3"),
    ]


def test_partial_update_with_sequence_field(spark: Any, db: str, warehouse: Any) -> None:
    t = f"{db}.seq_pu"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, ts BIGINT, a STRING, b STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('merge-engine' = 'partial-update', 'sequence.field' = 'ts', "
        "'partial-update.remove-record-on-delete' = 'true')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 10, 'a1', NULL), (2, 10, 'a2', NULL), (3, 10, 'a3', NULL)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 10, NULL, 'b1'), (2, 10, NULL, 'b2'), (3, 10, NULL, 'b3')")
    assert _py_rows(warehouse, t)[0] == (1, 10, "a1", "b1")
    spark.sql(f"DELETE FROM {t} WHERE b = 'b1'")
    spark.sql(f"DELETE FROM {t} WHERE id = 3")
    spark.sql(f"UPDATE {t} SET a = 'x' WHERE id = 2")
    assert _py_rows(warehouse, t) == [(2, 10, "x", "b2")]
    # A deleted key starts over: a later partial write does not bring the old columns back.
    spark.sql(f"INSERT INTO {t} VALUES (1, 11, 'again', NULL)")
    assert _py_rows(warehouse, t) == [(1, 11, "again", None), (2, 10, "x", "b2")]


def test_delete_and_merge_on_not_null_value_columns(spark: Any, db: str, warehouse: Any) -> None:
    """NOT NULL value columns: a -D record carries the stored row (as Paimon's DELETE writes it),
    so DELETE by key, by value and MERGE ... DELETE all work, and readers of the change records
    (pypaimon) see complete rows."""
    t = f"{db}.nn"
    spark.sql(
        f"CREATE TABLE {t} (id INT, v STRING NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (id) NOT ENFORCED) "
        "TBLPROPERTIES ('bucket' = '2', 'changelog-producer' = 'input')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40)")
    spark.sql(f"DELETE FROM {t} WHERE id = 2")  # key equality: no row-level plan
    spark.sql(f"DELETE FROM {t} WHERE v = 'c'")  # row-level plan: Spark sends keys only
    spark.sql(f"DELETE FROM {t} WHERE id = 99")  # no such key: nothing to delete
    spark.sql(
        f"MERGE INTO {t} t USING (SELECT 4 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE"
    )
    assert _py_rows(warehouse, t) == [(1, "a", 10)]
    audit = spark.sql(f"SELECT rowkind, id, v, n FROM {db}.`nn$audit_log` WHERE rowkind = '-D' ORDER BY id")
    assert [tuple(r) for r in audit.collect()] == [("-D", 2, "b", 20), ("-D", 3, "c", 30), ("-D", 4, "d", 40)]
