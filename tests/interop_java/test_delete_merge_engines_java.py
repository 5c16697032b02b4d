"""Apache Paimon's Java readers read first-row, partial-update and aggregation tables after a
stratalake DELETE removed stored rows (table/row_delete.py): rewritten files, and deletion vectors;
also after a Spark DELETE whose condition Spark evaluates (rows addressed by file and position).

Run by ``make test-paimon-java`` (marker ``paimon_java``); the jars are fetched by Maven on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from stratalake.expressions import field, to_predicate
from stratalake.table import Table
from stratalake.table.row_delete import delete_stored_rows
from tests.interop_java.paimon_java import RELEASES, JavaUnavailable, read_tables, write_table
from tests.spark.unit_jobs import run_in_group, unit_job_tasks

pytestmark = pytest.mark.paimon_java

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string()), ("n", pa.int32())])

KINDS: dict[str, dict[str, str]] = {
    "first_row": {"merge-engine": "first-row"},
    "partial_update": {"merge-engine": "partial-update"},
    "partial_update_dv": {"merge-engine": "partial-update", "deletion-vectors.enabled": "true"},
    "aggregation": {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
    "aggregation_dv": {
        "merge-engine": "aggregation",
        "fields.n.aggregate-function": "sum",
        "deletion-vectors.enabled": "true",
    },
}


def _rows(ids: range, v: str, dt: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "dt": [dt] * len(ids),
            "v": [f"{v}{i}" if i % 7 else None for i in ids],
            "n": pa.array([i % 5 for i in ids], pa.int32()),
        },
        schema=SCHEMA,
    )


def _java_prints(value: Any) -> str:
    return "null" if value is None else str(value)


def _fill(t: Table) -> None:
    t.write(_rows(range(0, 40), "a", "d1"))
    t.write(_rows(range(20, 60), "b", "d1"))
    t.write(_rows(range(0, 30), "c", "d2"))
    t.compact(full=True)


def _java_rows(data: pa.Table) -> list[tuple[str, ...]]:
    cols = [data.column(c).to_pylist() for c in SCHEMA.names]
    return sorted(tuple(_java_prints(v) for v in row) for row in zip(*cols, strict=True))


def _fill_and_delete(t: Table) -> None:
    _fill(t)
    first = to_predicate((field("v") >= "b3") & (field("v") < "b5"))  # NULL v rows are kept
    second = to_predicate((field("dt") == "d2") & field("id").isin([1, 2, 3, 28]))
    assert first is not None and second is not None
    assert delete_stored_rows(t.refresh(), first) is not None
    t.refresh().compact(full=True)  # partial-update / aggregation copies are level-0 files
    assert delete_stored_rows(t.refresh(), second) is not None


@pytest.mark.parametrize("release", ["1.0.1", "1.3.1"])
def test_paimon_java_reads_tables_after_a_delete(tmp_path: Path, release: str) -> None:
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    expected = {}
    for name, options in KINDS.items():
        t = cat.create_table(
            f"db.{name}",
            schema=SCHEMA,
            primary_key=["id", "dt"],
            partition_keys=["dt"],
            options={"bucket": "2", **options},
        )
        before = t.read().num_rows
        _fill_and_delete(t)
        data = cat.get_table(f"db.{name}").read()
        assert before == 0 and 0 < data.num_rows < 90
        live = data.to_pylist()
        assert not [r for r in live if r["v"] is not None and "b3" <= r["v"] < "b5"]
        assert not [r for r in live if r["dt"] == "d2" and r["id"] in (1, 2, 3, 28)]
        assert [r for r in live if r["v"] is None]  # a NULL condition keeps the row
        expected[f"db.{name}"] = _java_rows(data)
    try:
        got = read_tables(release, wh, sorted(expected))
    except JavaUnavailable as e:  # pragma: no cover - CI has Java and Maven
        pytest.fail(f"Paimon {release} could not be set up: {e}")
    failures = {name: got.get(name) for name in expected if got.get(name) != expected[name]}
    assert not failures, {
        k: (v if isinstance(v, str) else f"{len(v or [])} rows") for k, v in failures.items()
    }


@pytest.mark.parametrize("engine", ["first-row", "partial-update", "aggregation"])
def test_paimon_java_writes_on_after_a_delete(tmp_path: Path, engine: str) -> None:
    """Paimon Java (newest release here) writes a table, stratalake compacts it and deletes rows
    by rewriting files, Paimon Java upserts again; both read the merge engine's model."""
    release = RELEASES[-1]
    wh = str(tmp_path / "wh")
    options = {"bucket": "2", "merge-engine": engine}
    model: dict[int, str | None] = {}

    def java_write(ids: range, prefix: str) -> None:
        write_table(release, wh, "db.t", True, ids, prefix, options)
        for k in ids:  # as PaimonWrite.java writes: v is null when k % 7 == 0
            v = None if k % 7 == 0 else f"{prefix}{k}"
            if engine == "first-row":
                model.setdefault(k, v)
            else:  # partial-update; aggregation's default function is last_non_null_value
                model[k] = v if v is not None else model.get(k)

    java_write(range(0, 30), "j")
    java_write(range(20, 40), "k")
    t = stratalake.Catalog(wh).get_table("db.t")
    t.compact(full=True)
    condition = to_predicate(field("id").isin(list(range(0, 40, 3))))
    assert condition is not None and delete_stored_rows(t.refresh(), condition) is not None
    model = {k: v for k, v in model.items() if k % 3 != 0}
    java_write(range(10, 25), "m")
    expected = sorted((str(k), _java_prints(v)) for k, v in model.items())
    got = stratalake.Catalog(wh).get_table("db.t").read()
    assert (
        sorted(
            (str(k), _java_prints(v))
            for k, v in zip(got.column("id").to_pylist(), got.column("v").to_pylist(), strict=True)
        )
        == expected
    )
    assert read_tables(release, wh, ["db.t"])["db.t"] == expected


@pytest.mark.spark
def test_paimon_java_reads_tables_after_a_spark_delete_by_position(spark_lake: tuple[Any, str]) -> None:
    spark, wh = spark_lake
    cat = stratalake.Catalog(wh)
    cat.create_database("dj")
    expected = {}
    for name in ("first_row", "partial_update", "aggregation_dv"):
        t = cat.create_table(
            f"dj.{name}",
            schema=SCHEMA,
            primary_key=["id", "dt"],
            partition_keys=["dt"],
            options={"bucket": "2", **KINDS[name]},
        )
        _fill(t)
        # Spark evaluates LIKE, the subquery and the expression; the scan gives rows by position.
        spark.sql(
            f"DELETE FROM lake.dj.{name} WHERE v LIKE 'b3%' OR n * 2 = 8 "
            "OR id IN (SELECT s.k FROM VALUES (1), (28) AS s(k))"
        )
        data = cat.get_table(f"dj.{name}").read()
        live = data.to_pylist()
        assert 0 < len(live) < 90
        assert not [r for r in live if (r["v"] or "").startswith("b3") or r["n"] == 4 or r["id"] in (1, 28)]
        assert [r for r in live if r["v"] is None]  # a NULL condition keeps the row
        expected[f"dj.{name}"] = _java_rows(data)
    release = RELEASES[-1]
    try:
        got = read_tables(release, wh, sorted(expected))
    except JavaUnavailable as e:  # pragma: no cover - CI has Java and Maven
        pytest.fail(f"Paimon {release} could not be set up: {e}")
    assert {k: got.get(k) for k in expected} == expected


@pytest.mark.spark
@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}])
def test_spark_dml_jobs_on_a_table_paimon_java_wrote(
    spark_lake: tuple[Any, str], options: dict[str, str]
) -> None:
    """Paimon Java writes an append table with its defaults (several commits: several files);
    Spark's DELETE the table evaluates, and an UPDATE through Spark's row-level plan, rewrite it
    in jobs of Spark tasks (a split of one byte: every statement is a job); Paimon Java appends
    again and reads what both wrote."""
    spark, wh = spark_lake
    release = RELEASES[-1]
    name = "dv" if options else "cow"
    ident = f"djobs_{name}.t"
    model: dict[int, str | None] = {}

    def java_write(ids: range, prefix: str) -> None:
        write_table(release, wh, ident, False, ids, prefix, options)
        model.update({k: None if k % 7 == 0 else f"{prefix}{k}" for k in ids})

    stratalake.Catalog(wh).create_database(f"djobs_{name}", ignore_if_exists=True)
    java_write(range(0, 300), "j")
    java_write(range(300, 600), "k")
    spark.sql(f"ALTER TABLE lake.{ident} SET TBLPROPERTIES ('source.split.target-size' = '1')")
    group = f"djobs-{name}"
    run_in_group(
        spark,
        group,
        f"DELETE FROM lake.{ident} WHERE id < 50 OR v = 'k400'",
        f"UPDATE lake.{ident} SET v = concat('u', v) WHERE id % 10 = 3",
    )
    units_jobs = unit_job_tasks(spark, group)
    # The DELETE's job; the UPDATE's rewrite job too where files are copied (no vectors).
    assert len(units_jobs) == (1 if options else 2), units_jobs
    model = {k: v for k, v in model.items() if not (k < 50 or v == "k400")}
    model = {k: (f"u{v}" if k % 10 == 3 and v is not None else v) for k, v in model.items()}
    java_write(range(600, 650), "m")
    expected = sorted((str(k), _java_prints(v)) for k, v in model.items())
    got = stratalake.Catalog(wh).get_table(ident).read()
    ours = sorted(
        (str(k), _java_prints(v))
        for k, v in zip(got.column("id").to_pylist(), got.column("v").to_pylist(), strict=True)
    )
    assert ours == expected
    assert read_tables(release, wh, [ident])[ident] == expected
