"""Row-level DELETE on first-row, partial-update and aggregation tables (without their
remove-record-on-delete options), as Paimon's Spark DELETE: deletion vectors, or a rewrite of the
touched files once compacted (Paimon's DeleteFromTableTestBase: "please use 'COMPACT' procedure
first"); rows whose condition is NULL are kept. Read back by Spark and by pypaimon 2.1.0."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow.compute as pc
import pytest

from stratalake.append.dml import RowDeletes
from stratalake.catalog import Catalog
from stratalake.exceptions import CommitConflictError
from stratalake.read.append_read import FILE_COLUMN, POS_COLUMN, SNAPSHOT_COLUMN
from stratalake.table.row_delete import delete_positions, position_splits, rows_with_positions
from stratalake.table.table import Table
from tests.interop.paimon_oracle import paimon_read

_FIRST = [
    (1, "a", 10),
    (2, "b", None),
    (3, None, 30),
    (4, "a", 40),
    (5, "c", None),
    (6, None, None),
    (7, "a", 70),
    (8, "d", 80),
]
_SECOND = [(1, None, 11), (2, "a", None), (9, "e", 90)]

_ENGINES = {
    "first-row": "'merge-engine' = 'first-row'",
    "partial-update": "'merge-engine' = 'partial-update'",
    "aggregation": (
        "'merge-engine' = 'aggregation', 'fields.name.aggregate-function' = 'last_non_null_value', "
        "'fields.age.aggregate-function' = 'max'"
    ),
}


def _model(engine: str) -> dict[int, tuple[Any, Any]]:
    """The rows after both inserts: first-row keeps the first; partial-update and (these)
    aggregations take each non-null value, and max(age) is the later one here."""
    out: dict[int, tuple[Any, Any]] = {}
    for i, name, age in _FIRST + _SECOND:
        if i not in out:
            out[i] = (name, age)
        elif engine != "first-row":
            old = out[i]
            out[i] = (name if name is not None else old[0], age if age is not None else old[1])
    return out


def _literal(v: Any) -> str:
    return "NULL" if v is None else (f"'{v}'" if isinstance(v, str) else str(v))


def _values(rows: list[tuple[int, Any, Any]], partitioned: bool) -> str:
    out = []
    for i, name, age in rows:
        cells = [str(i), _literal(name), _literal(age)] + ([f"'p{i % 2}'"] if partitioned else [])
        out.append("(" + ", ".join(cells) + ")")
    return ", ".join(out)


def _expected(model: dict[int, tuple[Any, Any]], partitioned: bool) -> list[tuple[Any, ...]]:
    return sorted((i, *v, *((f"p{i % 2}",) if partitioned else ())) for i, v in model.items())


def _filled_table(spark: Any, warehouse: Any, t: str, engine: str, dv: bool, partitioned: bool) -> Table:
    """Table ``t`` after inserting _FIRST and then _SECOND. Without deletion vectors it is written
    write-only, as Paimon's test does: its files stay in level 0 until compacted, so the first
    DELETE must be refused."""
    options = _ENGINES[engine] + (
        ", 'deletion-vectors.enabled' = 'true'" if dv else ", 'write-only' = 'true'"
    )
    spark.sql(
        f"CREATE TABLE {t} (id INT, name STRING, age INT{', pt STRING' if partitioned else ''}) "
        f"{'PARTITIONED BY (pt) ' if partitioned else ''}"
        f"TBLPROPERTIES ('primary-key' = '{'id, pt' if partitioned else 'id'}', 'bucket' = '1', {options})"
    )
    spark.sql(f"INSERT INTO {t} VALUES {_values(_FIRST, partitioned)}")
    spark.sql(f"INSERT INTO {t} VALUES {_values(_SECOND, partitioned)}")
    return Catalog(str(warehouse)).get_table(t.split(".", 1)[1])


def _latest(table: Table) -> int:
    snap = table.refresh().latest_snapshot()
    assert snap is not None
    return snap.id


@pytest.mark.parametrize(
    ("engine", "dv", "partitioned"),
    [
        ("first-row", False, False),
        ("first-row", False, True),
        ("partial-update", False, False),
        ("partial-update", False, True),
        ("partial-update", True, True),
        ("aggregation", False, True),
        ("aggregation", True, False),
    ],
)
def test_delete_on_merge_engines(
    spark: Any, db: str, warehouse: Any, engine: str, dv: bool, partitioned: bool
) -> None:
    t = f"{db}.t"
    ident = t.split(".", 1)[1]
    table = _filled_table(spark, warehouse, t, engine, dv, partitioned)
    model = _model(engine)

    def latest() -> int:
        return _latest(table)

    def compact_if_refused(sql: str) -> None:
        if dv:
            spark.sql(sql)  # deletion vectors: the writers compacted at each commit
            return
        before = latest()
        with pytest.raises(Exception, match=r"please use 'COMPACT' procedure first: CALL sys\.compact"):
            spark.sql(sql)
        assert latest() == before  # refused: nothing committed
        spark.sql(f"CALL lake.sys.compact(table => '{ident}')")
        spark.sql(sql)

    # By value: rows whose name is NULL are kept (the condition is not true for them).
    compact_if_refused(f"DELETE FROM {t} WHERE name = 'a'")
    model = {i: v for i, v in model.items() if v[0] != "a"}
    snap = table.refresh().latest_snapshot()
    assert snap is not None and snap.commit_kind.value == "OVERWRITE"
    assert sorted(spark.sql(f"SELECT * FROM {t}").collect()) == _expected(model, partitioned)

    # By key. A partial-update or aggregation copy is a level-0 file (Paimon's write-only
    # writer), but the bucket's only one: it reads without a merge, as in Paimon.
    spark.sql(f"DELETE FROM {t} WHERE id = 5" + (" AND pt = 'p1'" if partitioned else ""))
    model.pop(5)

    # A condition matching nothing commits nothing.
    before = latest()
    spark.sql(f"DELETE FROM {t} WHERE age > 1000 OR name = 'zz'")
    assert latest() == before

    expected = _expected(model, partitioned)
    assert sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect()) == expected
    assert sorted(tuple(r.values()) for r in paimon_read(warehouse, ident).to_pylist()) == expected
    assert sorted(tuple(r.values()) for r in table.refresh().read().to_pylist()) == expected


# Conditions Spark evaluates itself (no V2 predicate reaches Python): the scan emits each row's
# data file and position, the matching ones come back. Each with what it deletes (None: unknown).
_SPARK_CONDITIONS: list[tuple[str, Callable[[int, Any, Any], bool]]] = [
    ("id IN (SELECT v.k FROM VALUES (4), (9), (42) AS v(k))", lambda i, n, a: i in (4, 9, 42)),
    ("age + 1 > 75", lambda i, n, a: a is not None and a + 1 > 75),
    ("name LIKE 'c%'", lambda i, n, a: n is not None and n.startswith("c")),
    ("EXISTS (SELECT 1 FROM VALUES (2), (100) AS v(k) WHERE v.k = x.id)", lambda i, n, a: i in (2, 100)),
    ("id % 3 = 1 AND upper(name) <> 'Q'", lambda i, n, a: i % 3 == 1 and n is not None),
]


@pytest.mark.parametrize(
    ("engine", "dv", "partitioned"),
    [
        ("first-row", False, False),
        ("first-row", False, True),
        ("partial-update", False, True),
        ("partial-update", True, False),
        ("aggregation", False, False),
        ("aggregation", True, True),
    ],
)
def test_delete_with_conditions_spark_evaluates(
    spark: Any, db: str, warehouse: Any, engine: str, dv: bool, partitioned: bool
) -> None:
    t = f"{db}.s"
    ident = t.split(".", 1)[1]
    table = _filled_table(spark, warehouse, t, engine, dv, partitioned)
    model = _model(engine)

    def latest() -> int:
        return _latest(table)

    first, _ = _SPARK_CONDITIONS[0]
    if not dv:
        # Written write-only: level-0 files that would need a merge. Refused, nothing committed.
        before = latest()
        with pytest.raises(Exception, match=rf"{ident}: DELETE with merge engine '{engine}'.*please use 'COMPACT'"):
            spark.sql(f"DELETE FROM {t} AS x WHERE {first}")
        assert latest() == before
        spark.sql(f"CALL lake.sys.compact(table => '{ident}')")

    for condition, deletes in _SPARK_CONDITIONS:
        before = latest()
        spark.sql(f"DELETE FROM {t} AS x WHERE {condition}")
        gone = {i for i, (n, a) in model.items() if deletes(i, n, a)}
        assert gone, condition  # every condition here deletes something
        model = {i: v for i, v in model.items() if i not in gone}
        snap = table.refresh().latest_snapshot()
        assert snap is not None and snap.id == before + 1 and snap.commit_kind.value == "OVERWRITE"
        got = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect())
        assert got == _expected(model, partitioned), condition

    # A condition matching nothing commits nothing; NULL conditions kept rows 3 and 6 above.
    before = latest()
    spark.sql(f"DELETE FROM {t} WHERE age * 2 > 100000 OR name LIKE 'zz%'")
    assert latest() == before
    assert {3, 6} <= set(model)

    expected = _expected(model, partitioned)
    assert sorted(tuple(r.values()) for r in paimon_read(warehouse, ident).to_pylist()) == expected
    assert sorted(tuple(r.values()) for r in table.refresh().read().to_pylist()) == expected


def test_spark_conditions_see_the_merged_rows(spark: Any, db: str) -> None:
    """An aggregation table's DELETE condition sees each key's folded value, as a read does (the
    bucket must be compacted first: refused by name until then)."""
    t = f"{db}.agg"
    spark.sql(
        f"CREATE TABLE {t} (id INT, n INT) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1', "
        "'merge-engine' = 'aggregation', 'fields.n.aggregate-function' = 'sum')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 1), (2, 2)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 5)")
    with pytest.raises(Exception, match=rf"{t.split('.', 1)[1]}: DELETE with merge engine 'aggregation'"):
        spark.sql(f"DELETE FROM {t} WHERE n + 1 = 7")
    spark.sql(f"CALL lake.sys.compact(table => '{t.split('.', 1)[1]}')")
    spark.sql(f"DELETE FROM {t} WHERE n + 1 = 7")  # the folded sum, 6
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect()] == [(2, 2)]


def test_delete_by_position_keeps_update_by_key_and_hides_row_ids(spark: Any, db: str) -> None:
    """Only DELETE addresses a partial-update table's rows by position: UPDATE stays keyed, and
    the row-id columns are refused by name outside a DELETE."""
    t = f"{db}.pu"
    spark.sql(
        f"CREATE TABLE {t} (id INT, a STRING, b INT) TBLPROPERTIES ('primary-key' = 'id', "
        "'bucket' = '2', 'merge-engine' = 'partial-update', 'deletion-vectors.enabled' = 'true')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x', 1), (2, 'y', 2), (3, 'z', 3)")
    spark.sql(f"INSERT INTO {t} VALUES (1, NULL, 10)")
    spark.sql(f"UPDATE {t} SET b = b + 100 WHERE a LIKE 'y%'")
    spark.sql(f"DELETE FROM {t} WHERE b % 10 = 3")
    assert sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect()) == [(1, "x", 10), (2, "y", 102)]
    spark.sql(f"DELETE FROM {t} WHERE id IN (SELECT id FROM {t} WHERE a = 'x')")  # a plain read inside
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect()] == [(2, "y", 102)]
    with pytest.raises(Exception, match=r"__stratalake_file.*only in a DELETE"):
        spark.sql(f"SELECT id, __stratalake_file FROM {t}").collect()


def test_touched_file_replaced_meanwhile_fails_the_commit(spark: Any, db: str, warehouse: Any) -> None:
    """Positions found by the position scan no longer mean anything once their file was
    compacted away: the commit fails and the table is unchanged."""
    t = f"{db}.fr"
    ident = t.split(".", 1)[1]
    spark.sql(
        f"CREATE TABLE {t} (id INT, v INT) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1', "
        "'merge-engine' = 'first-row')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 1), (2, 2), (3, 3)")
    table = Catalog(str(warehouse)).get_table(ident)
    snapshot_id, splits = position_splits(table, None)
    assert snapshot_id is not None
    deletes = RowDeletes()
    for split in splits:
        for rows in rows_with_positions(table, split, ["v"], None):
            hit = rows.filter(pc.equal(rows.column("v"), 2))
            deletes.add_batch(hit.column(FILE_COLUMN), hit.column(POS_COLUMN), hit.column(SNAPSHOT_COLUMN))
    assert deletes.positions
    spark.sql(f"INSERT INTO {t} VALUES (4, 4)")
    spark.sql(f"CALL lake.sys.compact(table => '{ident}', compact_strategy => 'full')")
    before = table.refresh().latest_snapshot()
    with pytest.raises(CommitConflictError, match=r"removed by a concurrent commit.*table is unchanged"):
        delete_positions(table, deletes)
    assert table.refresh().latest_snapshot() == before
    assert sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect()) == [(1, 1), (2, 2), (3, 3), (4, 4)]


def test_partial_update_removing_by_sequence_group(spark: Any, db: str, warehouse: Any) -> None:
    """'partial-update.remove-record-on-sequence-group': Paimon's DELETE writes -D records (the
    stored rows, with their sequence fields), which retract the group and so remove the row."""
    t = f"{db}.psg"
    spark.sql(
        f"""CREATE TABLE {t} (k INT, a STRING, s1 INT, b STRING, s2 INT, PRIMARY KEY (k) NOT ENFORCED)
            TBLPROPERTIES ('bucket' = '1', 'merge-engine' = 'partial-update',
            'fields.s1.sequence-group' = 'a', 'fields.s2.sequence-group' = 'b',
            'partial-update.remove-record-on-sequence-group' = 's1')"""
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a1', 1, 'b1', 1), (2, 'a2', 1, 'b2', 1), (3, 'a3', 1, 'b3', 1)")
    spark.sql(f"INSERT INTO {t} VALUES (3, NULL, NULL, 'b3x', 2)")  # group b of key 3 moves on
    spark.sql(f"DELETE FROM {t} WHERE k = 1")  # by key: the stored row is read to carry s1, s2
    spark.sql(f"DELETE FROM {t} WHERE b = 'b3x'")  # by value: the rewrite reads the rows
    want = [(2, "a2", 1, "b2", 1)]
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {t} ORDER BY k").collect()] == want
    name = t.removeprefix("lake.")
    assert sorted(Catalog(str(warehouse)).get_table(name).read().to_pylist(), key=lambda r: r["k"]) == [
        dict(zip(("k", "a", "s1", "b", "s2"), want[0], strict=True))
    ]
    # (pypaimon 2.1 refuses to read sequence groups, so it cannot be the oracle here.)
