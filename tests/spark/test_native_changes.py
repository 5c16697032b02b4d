"""Incremental reads of ``$audit_log`` read by Spark's Parquet reader (``native_changes``).

Each query runs with native reads off (the Python reader: the reference) and on, and must return
the same rows; the executed plan says whether the change files were read natively.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.spark.test_native_read import native, plan_of, rows

pytestmark = pytest.mark.spark

NATIVE_MARK = "[native change files]"


def both(spark: Any, sql: str) -> tuple[list[tuple[Any, ...]], bool]:
    """Rows of ``sql`` (equal with native reads off and on) and whether the native path read them."""
    with native(spark, False):
        df = spark.sql(sql)
        off = rows(df)
        assert NATIVE_MARK not in plan_of(df)
    with native(spark, True):
        df = spark.sql(sql)
        on = rows(df)
        used = NATIVE_MARK in plan_of(df)
    assert on == off, sql
    return on, used


def _changes(spark: Any, t: str, producer: str, extra: str = "") -> None:
    spark.sql(
        f"""CREATE TABLE {t} (k BIGINT, p STRING, a INT, b STRING, c DOUBLE,
            PRIMARY KEY (k, p) NOT ENFORCED) PARTITIONED BY (p)
            TBLPROPERTIES ('bucket' = '2', 'changelog-producer' = '{producer}'{extra})"""
    )
    spark.sql(
        f"INSERT INTO {t} SELECT id, concat('p', id % 3), CAST(id AS INT), concat('b', id), "
        "CASE WHEN id % 7 = 0 THEN NULL ELSE id * 0.5 END FROM range(200)"
    )
    spark.sql(f"INSERT INTO {t} SELECT id, concat('p', id % 3), -1, NULL, id * 2.0 FROM range(0, 200, 4)")
    spark.sql(f"DELETE FROM {t} WHERE k IN (1, 2, 3, 5, 8)")


@pytest.mark.parametrize(
    "producer,extra",
    [("input", ""), ("lookup", ", 'deletion-vectors.enabled' = 'true'")],
    ids=["input", "lookup-dv"],
)
def test_change_files_read_natively(spark: Any, db: str, producer: str, extra: str) -> None:
    t = f"{db}.nc_{producer}{'_dv' if extra else ''}"
    _changes(spark, t, producer, extra)
    name = t.rsplit(".", 1)[1]
    audit = f"{db}.`{name}$audit_log`"
    last = spark.sql(f"SELECT max(snapshot_id) FROM {db}.`{name}$snapshots`").first()[0]
    shapes = [
        "SELECT * FROM {a} WITH ('incremental-between' = '0,{n}')",
        "SELECT rowkind, count(*) FROM {a} WITH ('incremental-between' = '0,{n}') GROUP BY rowkind",
        "SELECT k, b FROM {a} WITH ('incremental-between' = '1,{n}') WHERE rowkind <> '+I'",
        "SELECT rowkind, k, c FROM {a} WITH ('incremental-between' = '0,{n}', "
        "'incremental-between-scan-mode' = 'delta') WHERE p = 'p1'",
    ]
    kinds: set[str] = set()
    for q in shapes:
        got, used = both(spark, q.format(a=audit, n=last))
        assert used and got, q
        if q.startswith("SELECT rowkind, count"):
            kinds = {r[0] for r in got}
    # The upsert and the DELETE show every kind a changelog holds (input: as written).
    assert {"+I", "-D"} <= kinds and ({"-U", "+U"} <= kinds or producer == "input"), kinds
    # An empty range: no files, no rows, still native.
    got, used = both(spark, f"SELECT * FROM {audit} WITH ('incremental-between' = '{last},{last}')")
    assert got == [] and used


def test_reads_python_must_do_stay_in_python(spark: Any, db: str) -> None:
    """Diff mode, $binlog, full (non-incremental) reads, files of a schema Spark cannot match by
    name (a renamed column), and append tables: the Python reader, with the same answers."""
    t = f"{db}.nc_py"
    _changes(spark, t, "lookup")
    audit = f"{db}.`nc_py$audit_log`"
    last = spark.sql(f"SELECT max(snapshot_id) FROM {db}.`nc_py$snapshots`").first()[0]
    for q in (
        f"SELECT * FROM {audit} WITH ('incremental-between' = '1,{last}', 'incremental-between-scan-mode' = 'diff')",
        f"SELECT * FROM {audit}",
        f"SELECT rowkind, k FROM {db}.`nc_py$binlog` WITH ('incremental-between' = '0,{last}')",
    ):
        got, used = both(spark, q)
        assert got and not used, q
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN b TO bb")
    got, used = both(spark, f"SELECT rowkind, k, bb FROM {audit} WITH ('incremental-between' = '0,{last}')")
    assert not used and any(r[2] is not None for r in got)
    # Only columns the old files hold under their own names: native again.
    got, used = both(spark, f"SELECT rowkind, k, a FROM {audit} WITH ('incremental-between' = '0,{last}')")
    assert used and got
    spark.sql(f"CREATE TABLE {db}.nc_append (k BIGINT, v STRING)")
    spark.sql(f"INSERT INTO {db}.nc_append VALUES (1, 'a'), (2, 'b')")
    got, used = both(spark, f"SELECT * FROM {db}.`nc_append$audit_log` WITH ('incremental-between' = '0,1')")
    assert got == [("+I", 1, "a"), ("+I", 2, "b")] and not used
