"""DELETE by a key list that the table checks itself (``table/key_delete.py``).

``DELETE FROM t WHERE id IN (SELECT id FROM keys)`` reads the list, never the table's scan: the
listed keys reach the writer, which keeps the live ones. Checked against a model, against the same
statement run through Spark's row-level plan on a twin table (a condition the shortcut does not
take), against the changelog each table keeps, and against pypaimon's reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.interop.paimon_oracle import paimon_read
from tests.spark.test_dml import snapshot_id

# Ids 0..299 in partition 'a'/'b'/'c' by id % 3, ids 0..99 also in 'z'; then ids 0..49 updated.
_ROWS = [(i, f"v{i}", "abc"[i % 3]) for i in range(300)] + [(i, f"z{i}", "z") for i in range(100)]
_LISTED = [*range(0, 400, 7), 14, 14, None, *range(1000, 1005)]


def _explain(spark: Any, sql: str) -> str:
    return str(spark.sql("EXPLAIN " + sql).collect()[0][0])


def _model() -> dict[tuple[int, str], str]:
    rows = {(i, p): v for i, v, p in _ROWS}
    for i in range(50):
        rows[(i, "abc"[i % 3])] = f"u{i}"
    return rows


def _fill(spark: Any, t: str, options: str) -> None:
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT NOT NULL, v STRING, p STRING NOT NULL) PARTITIONED BY (p) "
        f"TBLPROPERTIES ('primary-key' = 'id,p', 'bucket' = '4', {options})"
    )
    spark.createDataFrame(_ROWS[:300], "id bigint, v string, p string").writeTo(t).append()
    spark.createDataFrame(_ROWS[300:], "id bigint, v string, p string").writeTo(t).append()
    spark.createDataFrame([(i, f"u{i}", "abc"[i % 3]) for i in range(50)], "id bigint, v string, p string").writeTo(
        t
    ).append()


def _rows(spark: Any, t: str) -> dict[tuple[int, str], str]:
    return {(r.id, r.p): r.v for r in spark.table(t).collect()}


def _changes(spark: Any, t: str, before: int, after: int) -> list[tuple[Any, ...]]:
    """The changelog of the snapshots (before, after] as $audit_log's batch read gives it."""
    db, name = t.rsplit(".", 1)
    rows = (
        spark.read.option("incremental-between", f"{before},{after}")
        .option("incremental-between-scan-mode", "changelog")
        .table(f"{db}.`{name}$audit_log`")
        .collect()
    )
    return sorted((r.rowkind, r.id, r.p, r.v) for r in rows)


@pytest.mark.parametrize(
    "options",
    [
        "'changelog-producer' = 'lookup', 'deletion-vectors.enabled' = 'true'",
        "'changelog-producer' = 'input'",
    ],
    ids=["lookup-dv", "input"],
)
def test_a_key_list_deletes_the_live_listed_keys_in_every_partition(
    spark: Any, db: str, warehouse: Path, options: str
) -> None:
    spark.createDataFrame([(k,) for k in _LISTED], "id bigint").createOrReplaceTempView("listed")
    shortcut, planned = f"{db}.t", f"{db}.twin"
    _fill(spark, shortcut, options)
    _fill(spark, planned, options)
    fast = f"DELETE FROM {shortcut} WHERE id IN (SELECT id FROM listed)"
    slow = f"DELETE FROM {planned} WHERE id + 1 IN (SELECT id + 1 FROM listed)"
    assert "BatchScan" not in _explain(spark, fast)  # the table is not scanned
    assert "BatchScan" in _explain(spark, slow)  # Spark's row-level plan scans it
    before, twin_before = snapshot_id(warehouse, shortcut), snapshot_id(warehouse, planned)
    spark.sql(fast)
    spark.sql(slow)
    after, twin_after = snapshot_id(warehouse, shortcut), snapshot_id(warehouse, planned)
    assert before is not None and after is not None and after > before
    assert twin_before is not None and twin_after is not None

    listed = {k for k in _LISTED if k is not None}
    expected = {key: v for key, v in _model().items() if key[0] not in listed}
    assert _rows(spark, shortcut) == expected
    assert _rows(spark, planned) == expected
    assert {(r["id"], r["p"]) for r in paimon_read(warehouse, shortcut.split(".", 1)[1]).to_pylist()} == set(expected)
    if "changelog-producer" in options:
        # One -D per deleted row, none for a listed key with no row: as Spark's plan writes them.
        changes = _changes(spark, shortcut, before, after)
        deleted = sorted(("-D", i, p) for i, p in _model() if i in listed)
        assert [c[:3] for c in changes] == deleted
        twin = _changes(spark, planned, twin_before, twin_after)
        assert [c[:3] for c in twin] == deleted
        if "lookup" in options:  # the lookup changelog carries the deleted rows' values
            model = _model()
            assert [c[3] for c in changes] == [model[(i, p)] for _, i, p in deleted]


def test_listed_partition_values_and_composite_keys(spark: Any, db: str, warehouse: Path) -> None:
    t = f"{db}.t"
    _fill(spark, t, "'changelog-producer' = 'lookup', 'deletion-vectors.enabled' = 'true'")
    # The partition listed: only that partition's row of an id goes.
    sql = f"DELETE FROM {t} WHERE (id, p) IN (SELECT id, 'z' FROM VALUES (1), (2), (150) AS l(id))"
    assert "BatchScan" not in _explain(spark, sql)
    spark.sql(sql)
    expected = {k: v for k, v in _model().items() if k not in {(1, "z"), (2, "z")}}
    assert _rows(spark, t) == expected

    # Two key columns, a string one: matched by a join; no partitions.
    c = f"{db}.composite"
    spark.sql(
        f"CREATE TABLE {c} (k STRING NOT NULL, n INT NOT NULL, v DOUBLE) "
        "TBLPROPERTIES ('primary-key' = 'k,n', 'bucket' = '3', 'deletion-vectors.enabled' = 'true')"
    )
    spark.sql(f"INSERT INTO {c} SELECT concat('k', id % 10), CAST(id AS INT), id * 0.5 FROM range(200)")
    sql = f"DELETE FROM {c} WHERE (k, n) IN (SELECT concat('k', id % 10), CAST(id AS INT) FROM range(0, 300, 3))"
    assert "BatchScan" not in _explain(spark, sql)
    spark.sql(sql)
    assert sorted(r.n for r in spark.table(c).collect()) == [i for i in range(200) if i % 3]
    assert sorted(paimon_read(warehouse, c.split(".", 1)[1]).column("n").to_pylist()) == [i for i in range(200) if i % 3]


def test_other_conditions_and_tables_keep_sparks_plan(spark: Any, db: str) -> None:
    t = f"{db}.t"
    _fill(spark, t, "'deletion-vectors.enabled' = 'true'")
    spark.createDataFrame([(1, "a"), (4, "x")], "id bigint, q string").createOrReplaceTempView("pairs")
    # Correlated, a key list with a condition beside it, a list naming no key: Spark's plan.
    for sql in (
        f"DELETE FROM {t} WHERE id IN (SELECT id FROM pairs WHERE pairs.q = {t}.p)",
        f"DELETE FROM {t} WHERE id IN (SELECT id FROM pairs) AND v = 'u4'",
        f"DELETE FROM {t} WHERE p IN (SELECT q FROM pairs)",
    ):
        assert "BatchScan" in _explain(spark, sql), sql
    spark.sql(f"DELETE FROM {t} WHERE id IN (SELECT id FROM pairs WHERE pairs.q = {t}.p)")
    assert _rows(spark, t) == _model()  # id 1 lives in 'b' and 'z', id 4 nowhere in 'x'
    spark.sql(f"DELETE FROM {t} WHERE id IN (SELECT id FROM pairs) AND v = 'u4'")
    assert _rows(spark, t) == {k: v for k, v in _model().items() if k != (4, "b")}
    # Dynamic buckets: a key's bucket is in the index, not in the key; Spark's plan finds it.
    d = f"{db}.dynamic"
    spark.sql(f"CREATE TABLE {d} (id BIGINT NOT NULL, v STRING) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '-1')")
    spark.sql(f"INSERT INTO {d} SELECT id, 'x' FROM range(20)")
    sql = f"DELETE FROM {d} WHERE id IN (SELECT id FROM range(0, 20, 2))"
    assert "BatchScan" in _explain(spark, sql)
    spark.sql(sql)
    assert sorted(r.id for r in spark.table(d).collect()) == list(range(1, 20, 2))
