"""Native reads of splits that need a merge (deduplicate tables): Python merges only the key,
sequence and row-kind columns and lists the rows the merge drops; Spark's Parquet reader reads
the files whole without them.

Every query runs three ways and must return the same rows: native reads off (Python merges
everything), native on with key-merged splits off, and native on (key-merged splits). Tables are
written by several Spark tasks into existing data, at sizes where a batch boundary or a wrong
position shows.
"""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import stratalake
from tests.interop.paimon_oracle import paimon_create_table, paimon_read, paimon_write
from tests.spark.test_catalyst import conf
from tests.spark.test_native_read import plan_of, rows, scan_metrics, splits

pytestmark = pytest.mark.spark

MODES = {
    "python": {"stratalake.read.native.enabled": "false"},
    "native, no key merge": {"stratalake.read.native.enabled": "true", "stratalake.read.native-merge.enabled": "false"},
    "native": {"stratalake.read.native.enabled": "true", "stratalake.read.native-merge.enabled": "true"},
}


def settings(spark: Any, values: dict[str, str]) -> AbstractContextManager[None]:
    """Temporarily set the SQL settings ``values`` (dotted names)."""
    return conf(spark, **{k.replace(".", "__"): v for k, v in values.items()})


def key_merged(plan: str) -> int:
    return sum(int(n) for n in re.findall(r"(\d+) of the native after a key merge in Python", plan))


def three_ways(spark: Any, sql: str) -> tuple[list[tuple[Any, ...]], str]:
    """Rows of ``sql`` (equal in every mode) and the plan with key-merged native reads on."""
    results = {}
    plan = ""
    for mode, values in MODES.items():
        with settings(spark, values):
            df = spark.sql(sql)
            p = plan_of(df)
            results[mode] = rows(df)
            if mode != "native":
                assert key_merged(p) == 0, (mode, p)
            else:
                plan = p
    assert results["native"] == results["python"], sql
    assert results["native, no key merge"] == results["python"], sql
    return results["native"], plan


N = 120_000


def model(n: int) -> dict[int, tuple[int, str, float | None]]:
    """k -> (a, b, c) after the statements of :func:`build`."""
    state: dict[int, tuple[int, str, float | None]] = {}
    for k in range(n):
        state[k] = (k, f"b{k}", None if k % 11 == 0 else k * 0.5)
    for k in range(0, n, 4):
        state[k] = (-k, f"u{k}", k * 1.5)
    for k in range(n):
        if k % 9 == 0:
            state.pop(k, None)
    for k in list(state):
        if k % 13 == 0:
            a, b, c = state[k]
            state[k] = (a + 1_000_000, b, c)
    return state


def build(spark: Any, table: str, props: str = "") -> int:
    """Creates and fills ``table``; returns the snapshot of the upsert (before any delete)."""
    spark.sql(
        f"""CREATE TABLE {table} (k BIGINT, p STRING, a BIGINT, b STRING, c DOUBLE,
            PRIMARY KEY (k, p) NOT ENFORCED) PARTITIONED BY (p)
            TBLPROPERTIES ('bucket' = '3'{props})"""
    )
    spark.sql(
        f"INSERT INTO {table} SELECT id, concat('p', id % 2), id, concat('b', id), "
        f"CASE WHEN id % 11 = 0 THEN NULL ELSE id * 0.5 END FROM range({N})"
    )
    spark.sql(f"CALL lake.sys.compact(table => '{table.split('.', 1)[1]}', compact_strategy => 'full')")
    # A quarter of the keys updated, then deletes and an update: level-0 runs over the compacted
    # files, with retractions.
    spark.sql(
        f"INSERT INTO {table} SELECT id, concat('p', id % 2), -id, concat('u', id), id * 1.5 "
        f"FROM range(0, {N}, 4)"
    )
    db, name = table.rsplit(".", 1)
    upsert = int(spark.sql(f"SELECT max(snapshot_id) FROM {db}.`{name}$snapshots`").collect()[0][0])
    spark.sql(f"DELETE FROM {table} WHERE k % 9 = 0")
    spark.sql(f"UPDATE {table} SET a = a + 1000000 WHERE k % 13 = 0")
    return upsert


QUERIES = [
    "SELECT sum(length(b)), sum(c), max(a), min(a), count(*), count(c) FROM {t}",
    "SELECT p, count(*), sum(a) FROM {t} GROUP BY p",
    "SELECT count(*) FROM {t} WHERE a % 7 = 0",
    "SELECT b, a FROM {t} WHERE b LIKE 'u1%'",
    "SELECT a, c FROM {t} WHERE p = 'p1' AND a < 0",
    "SELECT a FROM {t} WHERE k < 500",
    "SELECT b FROM {t} WHERE c IS NULL",
]


def test_key_merged_reads_at_size(spark: Any, db: str, four_tasks: Any) -> None:
    table = f"{db}.kv"
    upsert = build(four_tasks, table)
    state = model(N)
    got, plan = three_ways(spark, QUERIES[0].format(t=table))
    values = list(state.values())
    assert got == [
        (
            sum(len(b) for _, b, _ in values),
            pytest.approx(sum(c for _, _, c in values if c is not None)),
            max(a for a, _, _ in values),
            min(a for a, _, _ in values),
            len(values),
            sum(1 for _, _, c in values if c is not None),
        )
    ]
    # 3 buckets x 2 partitions, written by 4 tasks
    assert key_merged(plan) == 6 and splits(plan) == (6, 0), plan
    for q in QUERIES[1:]:
        _, plan = three_ways(spark, q.format(t=table))
        # A key filter makes the scan output the key: its key order is reported (see below).
        assert (key_merged(plan) > 0) == ("WHERE k" not in q), (q, plan)
    got, _ = three_ways(spark, f"SELECT a, b FROM {table} WHERE k IN (0, 4, 9, 13, 26, 27, 52, {N - 1})")
    expected = sorted((state[k][0], state[k][1]) for k in (0, 4, 9, 13, 26, 27, 52, N - 1) if k in state)
    assert got == sorted(expected, key=repr)
    # Time travel to the upsert: two runs, no retractions, in p0's buckets (its ids are even).
    got, plan = three_ways(spark, f"SELECT count(*), sum(a) FROM {table} VERSION AS OF {upsert}")
    assert got == [(N, sum(range(N)) - 2 * sum(range(0, N, 4)))] and key_merged(plan) == 3
    # Row by row (Spark's row-based Parquet reader) drops the same rows.
    with settings(spark, {"spark.sql.parquet.enableVectorizedReader": "false"}):
        three_ways(spark, QUERIES[0].format(t=table))
    # A LIMIT stops reading early.
    with settings(spark, MODES["native"]):
        assert len(spark.sql(f"SELECT a, b FROM {table} LIMIT 10").collect()) == 10
    # Metrics: key-merged splits counted, rows after the merge are the live rows.
    with settings(spark, MODES["native"]):
        df = spark.sql(f"SELECT a FROM {table}")
        assert len(df.collect()) == len(state)
        metrics = scan_metrics(df)
    assert metrics["stratalakeKeyMergedSplits"] == 6
    assert metrics["stratalakeRowsAfterMerge"] == len(state)


def test_key_order_kept_where_spark_can_use_it(spark: Any, db: str) -> None:
    """A scan that outputs the key of a bucketed table reports key order (a join or aggregation
    on the key then needs no sort): its merged splits stay in Python, which merges in key order."""
    table = f"{db}.ord"
    spark.sql(
        f"""CREATE TABLE {table} (k BIGINT, a BIGINT, PRIMARY KEY (k) NOT ENFORCED)
            TBLPROPERTIES ('bucket' = '2')"""
    )
    spark.sql(f"INSERT INTO {table} SELECT id, id FROM range(1000)")
    spark.sql(f"INSERT INTO {table} SELECT id, -id FROM range(0, 1000, 3)")
    _, plan = three_ways(spark, f"SELECT k, a FROM {table}")
    assert key_merged(plan) == 0 and splits(plan) == (0, 2)
    _, plan = three_ways(spark, f"SELECT sum(a) FROM {table}")
    assert key_merged(plan) == 2


def test_sequence_field(spark: Any, db: str) -> None:
    """Newer records with a lower sequence field lose; a composite key."""
    table = f"{db}.sf"
    spark.sql(
        f"""CREATE TABLE {table} (k BIGINT, s STRING, p STRING, a BIGINT, b STRING,
            PRIMARY KEY (k, s, p) NOT ENFORCED) PARTITIONED BY (p)
            TBLPROPERTIES ('bucket' = '2', 'sequence.field' = 'a')"""
    )
    spark.sql(f"INSERT INTO {table} SELECT id, 's', concat('p', id % 2), id * 10, 'old' FROM range(20000)")
    spark.sql(
        f"INSERT INTO {table} SELECT id, 's', concat('p', id % 2), id * 10 + IF(id % 2 = 0, 5, -5), 'new' "
        f"FROM range(0, 20000, 3)"
    )
    spark.sql(f"DELETE FROM {table} WHERE k % 7 = 0")
    got, plan = three_ways(spark, f"SELECT b, count(*), sum(a) FROM {table} GROUP BY b")
    assert key_merged(plan) > 0
    assert dict((b, n) for b, n, _ in got)["new"] == sum(1 for k in range(0, 20000, 3) if k % 2 == 0 and k % 7)


def test_schema_evolution_and_engines_that_fold_rows(spark: Any, db: str) -> None:
    table = f"{db}.ev"
    spark.sql(
        f"""CREATE TABLE {table} (k BIGINT, a BIGINT, b STRING, PRIMARY KEY (k) NOT ENFORCED)
            TBLPROPERTIES ('bucket' = '2')"""
    )
    spark.sql(f"INSERT INTO {table} SELECT id, id, concat('b', id) FROM range(5000)")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN d STRING")
    spark.sql(f"INSERT INTO {table} SELECT id, -id, 'u', concat('d', id) FROM range(0, 5000, 2)")
    got, plan = three_ways(spark, f"SELECT d IS NULL, count(*), count(DISTINCT d) FROM {table} GROUP BY d IS NULL")
    assert key_merged(plan) == 2 and got == [(False, 2500, 2500), (True, 2500, 0)]
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN a TO a2")  # a renamed column: Python maps by field id
    _, plan = three_ways(spark, f"SELECT sum(a2) FROM {table}")
    assert key_merged(plan) == 0 and splits(plan)[1] == 2
    agg = f"{db}.agg"
    spark.sql(
        f"""CREATE TABLE {agg} (k BIGINT, a BIGINT, PRIMARY KEY (k) NOT ENFORCED)
            TBLPROPERTIES ('bucket' = '2', 'merge-engine' = 'aggregation', 'fields.a.aggregate-function' = 'sum')"""
    )
    for _ in range(2):
        spark.sql(f"INSERT INTO {agg} SELECT id, id FROM range(100)")
    got, plan = three_ways(spark, f"SELECT sum(a) FROM {agg}")
    assert got == [(2 * sum(range(100)),)] and key_merged(plan) == 0
    lookup = f"{db}.lk"
    spark.sql(
        f"""CREATE TABLE {lookup} (k BIGINT, a BIGINT, PRIMARY KEY (k) NOT ENFORCED)
            TBLPROPERTIES ('bucket' = '2', 'changelog-producer' = 'lookup', 'write-only' = 'true')"""
    )
    for v in (1, 2):
        spark.sql(f"INSERT INTO {lookup} SELECT id, id * {v} FROM range(100)")
    got, plan = three_ways(spark, f"SELECT sum(a) FROM {lookup}")
    assert got == [(2 * sum(range(100)),)] and key_merged(plan) == 0


def test_table_pypaimon_wrote_with_defaults(four_tasks: Any, warehouse: Path) -> None:
    """pypaimon creates and fills a table with Paimon's defaults (dynamic buckets, no compaction:
    its two commits are two level-0 runs per bucket); it is read key-merged, then 4 Spark tasks
    upsert into it and it is read again, and pypaimon reads the result."""
    spark = four_tasks
    wh = str(warehouse)
    ident = "km_paimon.t"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64())])
    paimon_create_table(
        wh, ident, schema, primary_keys=["id"], options={"dynamic-bucket.target-row-num": "40000"}
    )
    ids = np.arange(100_000)
    paimon_write(wh, ident, pa.table({"id": ids, "v": ["a"] * len(ids), "n": ids}, schema=schema))
    upd = ids[::3]
    paimon_write(wh, ident, pa.table({"id": upd, "v": ["b"] * len(upd), "n": -upd}, schema=schema))
    assert "bucket" not in stratalake.Catalog(wh).get_table(ident).schema().options
    model = {int(i): ("a", int(i)) for i in ids}
    model.update({int(i): ("b", -int(i)) for i in upd})
    query = f"SELECT v, count(*), sum(n) FROM lake.{ident} GROUP BY v"

    def expected() -> list[tuple[Any, ...]]:
        out: dict[str, list[int]] = {}
        for v, n in model.values():
            out.setdefault(v, []).append(n)
        return sorted(((v, len(ns), sum(ns)) for v, ns in out.items()), key=repr)

    got, plan = three_ways(spark, query)
    assert got == expected() and key_merged(plan) >= 3, plan  # one split per dynamic bucket
    # No bucket layout is reported for dynamic buckets: even SELECT * is key-merged.
    got, plan = three_ways(spark, f"SELECT * FROM lake.{ident} WHERE n < 0")
    assert len(got) == len(upd) - 1 and key_merged(plan) > 0
    spark.sql(f"INSERT INTO lake.{ident} SELECT id, 'c', id * 2 FROM range(50000, 120000, 2)")
    model.update({i: ("c", i * 2) for i in range(50_000, 120_000, 2)})
    got, plan = three_ways(spark, query)
    assert got == expected() and key_merged(plan) > 0, plan
    assert {r["id"]: (r["v"], r["n"]) for r in paimon_read(wh, ident).to_pylist()} == model

