"""Row-level DELETE on first-row, partial-update and aggregation tables (without their
remove-record-on-delete options), as Paimon's Spark DELETE: deletion vectors, or a rewrite of the
touched files once compacted (Paimon's DeleteFromTableTestBase: "please use 'COMPACT' procedure
first"); rows whose condition is NULL are kept. Read back by Spark and by pypaimon 2.1.0."""

from __future__ import annotations

from typing import Any

import pytest

from stratalake.catalog import Catalog
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
    # Without deletion vectors the table is written write-only, as Paimon's test does: its files
    # stay in level 0 until compacted, so the first DELETE must be refused.
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
    table = Catalog(str(warehouse)).get_table(ident)
    model = _model(engine)

    def latest() -> int:
        snap = table.refresh().latest_snapshot()
        assert snap is not None
        return snap.id

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


def test_conditions_spark_cannot_hand_over_are_refused_by_name(spark: Any, db: str) -> None:
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
    spark.sql(f"DELETE FROM {t} WHERE n = 6")  # the folded sum is what a DELETE sees
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect()] == [(2, 2)]


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
