"""One writer per bucket: Spark writes with several tasks per statement, as users run them.

Spark used to cluster written rows by the key columns with its own hash, so several tasks wrote
(and compacted) the same bucket and left overlapping sorted runs. Writes now cluster by the
shim's evaluation of Paimon's bucket function; these tests check that function against the
Python reference on every bucket-key type, and run multi-task statements (3 shuffle partitions,
8 buckets, AQE on, existing data) through every write path, checking rows against a model and
the sorted-run invariant of every bucket after each step.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import stratalake
from stratalake.lsm.levels import key_decoder
from stratalake.spec.bucket import bucket_ids
from stratalake.types import DataType

pytestmark = pytest.mark.spark

ROWS = 120_000


@pytest.fixture
def multi_task(spark: Any) -> Any:
    """Three shuffle partitions (not the bucket count), AQE on with partition coalescing; a small
    advisory size, so that AQE does not coalesce these test-sized writes into a single task."""
    conf = spark.conf
    settings = {
        "spark.sql.shuffle.partitions": "3",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": "64k",
        # (AQE otherwise favours parallelism down to this size, 1 MB by default: one task here)
        "spark.sql.adaptive.coalescePartitions.minPartitionSize": "16k",
    }
    saved = {k: conf.get(k) for k in settings}
    for k, v in settings.items():
        conf.set(k, v)
    yield spark
    for k, v in saved.items():
        conf.set(k, v)


def _table(warehouse: Path, db: str, name: str) -> Any:
    return stratalake.Catalog(str(warehouse)).get_table(f"{db.split('.', 1)[1]}.{name}")


def assert_sorted_runs_hold(table: Any) -> dict[tuple[bytes, int], int]:
    """Every level >= 1 of every bucket is one sorted run (disjoint key ranges); returns the
    number of files per (partition, bucket)."""
    snap = table.latest_snapshot()
    key_of = key_decoder(table.schema())
    levels: dict[tuple[bytes, int, int], list[Any]] = defaultdict(list)
    files: dict[tuple[bytes, int], int] = defaultdict(int)
    for e in table.live_entries(snap):
        files[(e.partition, e.bucket)] += 1
        if e.file.level > 0:
            levels[(e.partition, e.bucket, e.file.level)].append(e.file)
    for (_partition, bucket, level), metas in levels.items():
        ordered = sorted(metas, key=lambda f: key_of(f.min_key))
        for a, b in itertools.pairwise(ordered):
            assert key_of(a.max_key) < key_of(b.min_key), (
                f"bucket {bucket} level {level}: {a.file_name} {key_of(a.min_key)}..{key_of(a.max_key)} "
                f"overlaps {b.file_name} {key_of(b.min_key)}..{key_of(b.max_key)}"
            )
    return files


def _rows(spark: Any, table: str, cols: str = "id, a, b") -> dict[int, tuple[Any, ...]]:
    t = spark.sql(f"SELECT {cols} FROM {table}").toArrow()
    ids = t.column(0).to_pylist()
    rest = list(zip(*(t.column(i).to_pylist() for i in range(1, t.num_columns)), strict=True))
    assert len(set(ids)) == len(ids), "duplicate primary keys"
    return dict(zip(ids, rest, strict=True))


# ---- the JVM bucket function equals the Python reference ------------------------------------------


def _keys(kind: str, n: int, rnd: random.Random) -> tuple[list[Any], str, str]:
    """(values, Spark SQL type, Paimon type) of ``n`` random keys of one bucket-key type."""
    if kind == "bigint":
        return [rnd.randint(-(2**63), 2**63 - 1) for _ in range(n)], "BIGINT", "BIGINT"
    if kind == "int":
        return [rnd.randint(-(2**31), 2**31 - 1) for _ in range(n)], "INT", "INT"
    if kind == "smallint":
        return [rnd.randint(-(2**15), 2**15 - 1) for _ in range(n)], "SMALLINT", "SMALLINT"
    if kind == "tinyint":
        return [rnd.randint(-128, 127) for _ in range(n)], "TINYINT", "TINYINT"
    if kind == "boolean":
        return [rnd.random() < 0.5 for _ in range(n)], "BOOLEAN", "BOOLEAN"
    if kind == "double":
        return [rnd.uniform(-1e9, 1e9) for _ in range(n)], "DOUBLE", "DOUBLE"
    if kind == "float":
        return [float(np.float32(rnd.uniform(-1e6, 1e6))) for _ in range(n)], "FLOAT", "FLOAT"
    if kind == "string":
        alphabet = "abcxyz-é漢"
        return (
            ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 20))) for _ in range(n)],
            "STRING",
            "STRING",
        )
    if kind == "binary":
        return [rnd.randbytes(rnd.randint(0, 19)) for _ in range(n)], "BINARY", "BYTES"
    if kind == "decimal":
        return (
            [Decimal(rnd.randint(-(10**12), 10**12)).scaleb(-2) for _ in range(n)],
            "DECIMAL(14, 2)",
            "DECIMAL(14, 2)",
        )
    if kind == "bigdecimal":
        return (
            [Decimal(rnd.randint(-(10**30), 10**30)).scaleb(-4) for _ in range(n)],
            "DECIMAL(36, 4)",
            "DECIMAL(36, 4)",
        )
    if kind == "date":
        base = dt.date(1970, 1, 1)
        return [base + dt.timedelta(days=rnd.randint(-30000, 30000)) for _ in range(n)], "DATE", "DATE"
    if kind in ("ts3", "ts6"):
        base = dt.datetime(1970, 1, 1)
        micros = [rnd.randint(-(10**15), 10**15) for _ in range(n)]
        if kind == "ts3":
            micros = [m - m % 1000 for m in micros]
        values = [base + dt.timedelta(microseconds=m) for m in micros]
        return values, "TIMESTAMP_NTZ", "TIMESTAMP(3)" if kind == "ts3" else "TIMESTAMP(6)"
    raise AssertionError(kind)


KINDS = [
    "bigint", "int", "smallint", "tinyint", "boolean", "double", "float", "string", "binary",
    "decimal", "bigdecimal", "date", "ts3", "ts6",
]  # fmt: skip


@pytest.mark.parametrize("kinds", [[k] for k in KINDS] + [["bigint", "string"], ["date", "ts3", "int"]])
def test_jvm_bucket_function_matches_python(spark: Any, kinds: list[str]) -> None:
    rnd = random.Random(hash(tuple(kinds)) & 0xFFFF)
    n, num_buckets = 300, 13
    columns = [_keys(k, n, rnd) for k in kinds]
    paimon_types = [DataType.parse(p) for _, _, p in columns]
    arrow = pa.table(
        {
            f"k{i}": pa.array(v, stratalake.types.to_arrow(t))
            for i, ((v, _, _), t) in enumerate(zip(columns, paimon_types, strict=True))
        }
    )
    expected = bucket_ids([arrow.column(i) for i in range(len(kinds))], paimon_types, num_buckets)
    ddl = ", ".join(f"k{i} {sql}" for i, (_, sql, _) in enumerate(columns))
    rows = [tuple(c[0][r] for c in columns) for r in range(n)]
    df = spark.createDataFrame(rows, ddl).coalesce(1)
    mask = sum(1 << i for i, t in enumerate(paimon_types) if str(t).startswith("TIMESTAMP(3)"))
    keys = ", ".join(f"k{i}" for i in range(len(kinds)))
    got = df.selectExpr(f"lake.sys.stratalake_bucket({num_buckets}, {mask}, {keys})").toArrow().column(0)
    assert got.to_pylist() == expected.tolist()


@pytest.mark.parametrize(("n", "m"), [(1, 1), (3, 3), (4, 4), (7, 7), (16, 16), (8, 4), (3, 5)])
def test_slice_function_spreads_slices_evenly_over_partitions(spark: Any, n: int, m: int) -> None:
    """``stratalake_slice(n, m, mask, key)`` is a value Spark's hash partitioning among m
    (``pmod(hash(v), m)``, the same Murmur3 as ``hash()``) sends to partition ``slice mod m``, where
    slice = ``|key hash % n|`` is the key's assigner slice: one slice per task when n = m."""
    rows = spark.sql(
        f"SELECT pmod(hash(lake.sys.stratalake_slice({n}, {m}, 0, id)), {m}) AS task, "
        f"lake.sys.stratalake_bucket({n}, 0, id) AS slice FROM range(2000)"
    ).collect()
    assert all(r.task == r.slice % m for r in rows)
    assert {r.slice for r in rows} == set(range(n))


def test_format_test_vectors_through_spark(spark: Any) -> None:
    got = spark.sql("SELECT lake.sys.bucket(4, id) FROM range(1, 9)").toArrow().column(0).to_pylist()
    assert got == [2, 0, 1, 2, 0, 0, 3, 0]
    got = (
        spark.sql(
            "SELECT lake.sys.bucket(7, s) FROM VALUES ('a'), ('abcdefg'), ('abcdefgh'), "
            "('a-much-longer-string-key') AS v(s)"
        )
        .toArrow()
        .column(0)
        .to_pylist()
    )
    assert got == [5, 0, 2, 6]


# ---- every write path, several tasks, one writer per bucket ---------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"changelog-producer": "lookup"},
        {"deletion-vectors.enabled": "true"},
    ],
    ids=["dedupe", "lookup", "dv"],
)
def test_multi_task_statements_keep_one_writer_per_bucket(
    multi_task: Any, warehouse: Path, db: str, tmp_path: Path, options: dict[str, str]
) -> None:
    spark = multi_task
    props = ", ".join(f"'{k}' = '{v}'" for k, v in {"bucket": "8", **options}.items())
    spark.sql(
        f"CREATE TABLE {db}.t (id BIGINT, a BIGINT, b STRING, dt STRING, "
        f"PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) WITH ({props})"
    )
    table = f"{db}.t"
    model: dict[int, tuple[Any, ...]] = {}

    def check(step: str) -> None:
        got = _rows(spark, table, "id, a, b")
        assert got == model, f"{step}: rows differ from the model"
        assert_sorted_runs_hold(_table(warehouse, db, "t"))

    # 1. a load and a second load into existing data (several tasks per statement)
    for lo in (0, ROWS // 2):
        src = spark.range(lo, lo + ROWS // 2).selectExpr(
            "id", "id * 3 AS a", "concat('v', cast(id AS string)) AS b", "if(id % 2 = 0, 'x', 'y') AS dt"
        )
        src.writeTo(table).append()
        for i in range(lo, lo + ROWS // 2):
            model[i] = (i * 3, f"v{i}")
        if lo == 0:  # one task wrote each bucket: one file per bucket
            files = assert_sorted_runs_hold(_table(warehouse, db, "t"))
            assert len(files) == 16 and set(files.values()) == {1}, dict(files)
    check("load")

    # 2. upsert of a quarter of the keys, SQL INSERT from a query
    spark.sql(
        f"INSERT INTO {table} SELECT id * 4 AS id, id AS a, 'u' AS b, if(id * 4 % 2 = 0, 'x', 'y') AS dt "
        f"FROM range({ROWS // 4})"
    )
    for i in range(ROWS // 4):
        model[i * 4] = (i, "u")
    check("upsert")

    # 3. MERGE: delete, update and insert in one statement
    spark.range(0, ROWS + 3000, 7).selectExpr(
        "id", "id % 3 AS op", "if(id % 2 = 0, 'x', 'y') AS dt"
    ).createOrReplaceTempView("changes")
    spark.sql(
        f"MERGE INTO {table} t USING changes c ON t.id = c.id AND t.dt = c.dt "
        "WHEN MATCHED AND c.op = 0 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET a = -1, b = 'm' "
        "WHEN NOT MATCHED THEN INSERT (id, a, b, dt) VALUES (c.id, -2, 'n', c.dt)"
    )
    for i in range(0, ROWS + 3000, 7):
        if i in model:
            if i % 3 == 0:
                del model[i]
            else:
                model[i] = (-1, "m")
        else:
            model[i] = (-2, "n")
    check("merge")

    # 4. DELETE by a value condition (reads rows)
    spark.sql(f"DELETE FROM {table} WHERE a % 10 = 3")
    model = {k: v for k, v in model.items() if v[0] % 10 != 3}
    check("delete")

    # 5. one streaming micro-batch
    src_dir = tmp_path / "stream"
    spark.range(ROWS, ROWS + 20_000).selectExpr(
        "id", "id AS a", "'s' AS b", "if(id % 2 = 0, 'x', 'y') AS dt"
    ).write.parquet(str(src_dir))
    query = (
        spark.readStream.schema("id BIGINT, a BIGINT, b STRING, dt STRING")
        .parquet(str(src_dir))
        .writeStream.option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .toTable(table)
    )
    query.awaitTermination(300)
    for i in range(ROWS, ROWS + 20_000):
        model[i] = (i, "s")
    check("stream")

    # 6. full compaction: one sorted run per bucket afterwards
    spark.sql(f"CALL lake.sys.compact(table => '{table.split('.', 1)[1]}', compact_strategy => 'full')")
    check("compact")
    t = _table(warehouse, db, "t")
    levels: dict[tuple[bytes, int], set[int]] = defaultdict(set)
    for e in t.live_entries(t.latest_snapshot()):
        levels[(e.partition, e.bucket)].add(e.file.level)
    assert all(len(ls) == 1 and 0 not in ls for ls in levels.values()), dict(levels)
    assert len(levels) == 16  # 2 partitions x 8 buckets

    if options.get("changelog-producer") == "lookup":
        # Replaying the changelog from the first snapshot gives the state.
        log = t.changelog()
        state: dict[int, tuple[Any, ...]] = {}
        for kind, i, a, b in zip(
            *(log.column(c).to_pylist() for c in ("_row_kind", "id", "a", "b")), strict=True
        ):
            if kind in ("+I", "+U"):
                state[i] = (a, b)
            else:
                assert state.pop(i, None) is not None, f"{kind} of key {i} that is not live"
        assert state == model


def test_write_plan_clusters_by_the_bucket_function(multi_task: Any, db: str) -> None:
    spark = multi_task
    spark.sql(
        f"CREATE TABLE {db}.p (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '8')"
    )
    plan = spark.range(10).selectExpr("id", "'v' AS v").writeTo(f"{db}.p")
    # The physical plan of the append shows the exchange on Paimon's bucket function.
    df = spark.range(10).selectExpr("id", "'v' AS v")
    df.createOrReplaceTempView("src10")
    text = spark.sql(f"EXPLAIN INSERT INTO {db}.p SELECT * FROM src10").collect()[0][0]
    # Unpartitioned: by the bucket's channel among the 3 shuffle partitions (bucket b to task b mod 3).
    assert "stratalake.stratalake_slice(bigint), 8, 3, 0, id" in text, text
    plan.append()
    spark.sql(
        f"CREATE TABLE {db}.pp (id BIGINT, p STRING, PRIMARY KEY (id, p) NOT ENFORCED) "
        "PARTITIONED BY (p) WITH ('bucket' = '8')"
    )
    text = spark.sql(f"EXPLAIN INSERT INTO {db}.pp SELECT id, 'x' FROM src10").collect()[0][0]
    assert "stratalake.stratalake_bucket(bigint), 8, 0, id" in text, text


def test_unpartitioned_buckets_spread_evenly_over_tasks(multi_task: Any, db: str, warehouse: Any) -> None:
    """8 buckets over 3 shuffle partitions: each task writes 2 or 3 buckets (b mod 3), not what
    Spark's hash of the bucket ids would give; a second statement into the loaded buckets keeps
    one writer per bucket and the sorted runs intact."""
    spark = multi_task
    spark.sql(f"CREATE TABLE {db}.even (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '8')")
    seen: set[str] = set()
    for start, value in ((0, "a"), (30_000, "b")):  # the second load updates half of the first's keys
        spark.range(start, start + 60_000).selectExpr("id", f"'{value}' AS v").writeTo(f"{db}.even").append()
        t = _table(warehouse, db, "even")
        by_writer: dict[str, set[int]] = {}
        for e in t.live_entries(t.latest_snapshot()):
            writer = e.file.file_name[len("data-") : len("data-") + 36]
            if writer not in seen:
                by_writer.setdefault(writer, set()).add(e.bucket)
        seen |= set(by_writer)
        assert sorted(len(b) for b in by_writer.values()) == [2, 3, 3], by_writer
        assert all(len({b % 3 for b in buckets}) == 1 for buckets in by_writer.values()), by_writer
        assert_sorted_runs_hold(t)
    got = dict(spark.sql(f"SELECT v, count(*) FROM {db}.even GROUP BY v").collect())
    assert got == {"a": 30_000, "b": 60_000}


# ---- storage-partitioned joins shuffle only the other side ------------------------------------------


@pytest.mark.parametrize("key_type", ["BIGINT", "STRING"])
def test_join_shuffles_only_the_non_stratalake_side(spark: Any, db: str, key_type: str) -> None:
    """With ``spark.sql.sources.v2.bucketing.shuffle.enabled`` Spark hashes the other side's rows
    into the table's buckets with the (now evaluable) bucket function: one Exchange, not two."""
    spark.sql(
        f"CREATE TABLE {db}.spj (id {key_type}, w STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "WITH ('bucket' = '4')"
    )
    key = "id" if key_type == "BIGINT" else "concat('k', cast(id AS string))"
    spark.sql(f"INSERT INTO {db}.spj SELECT {key}, concat('w', id) FROM range(0, 3000, 3)")
    spark.sql(f"INSERT INTO {db}.spj SELECT {key}, 'again' FROM range(0, 3000, 9)")
    spark.range(0, 2000).selectExpr(f"{key} AS id", "id % 7 AS g").createOrReplaceTempView("other_side")
    q = f"SELECT s.id, s.w, o.g FROM {db}.spj s JOIN other_side o ON s.id = o.id"
    conf = spark.conf
    settings = {
        "spark.sql.autoBroadcastJoinThreshold": "-1",
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.sources.v2.bucketing.enabled": "true",
        "spark.sql.sources.v2.bucketing.shuffle.enabled": "true",
    }
    saved = {k: conf.get(k, None) for k in settings}
    try:
        for k, v in settings.items():
            conf.set(k, v)
        df = spark.sql(q)
        plan = str(df._jdf.queryExecution().executedPlan().toString())
        assert plan.count("Exchange") == 1, plan
        assert "bucket" in plan, plan
        joined = sorted(tuple(r) for r in df.collect())
        conf.set("spark.sql.sources.v2.bucketing.enabled", "false")
        expected = sorted(tuple(r) for r in spark.sql(q).collect())
    finally:
        for k, v in saved.items():
            if v is None:
                conf.unset(k)
            else:
                conf.set(k, v)
    assert joined == expected and len(joined) == 667
