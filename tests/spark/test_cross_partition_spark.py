"""Spark writes to cross-partition upsert tables (primary key without the partition column,
``bucket = -1``) assign buckets in several tasks.

Spark clusters the rows by the key's assigner slice ``|key hash % N|`` only (N = the 4 shuffle
partitions), so each task holds whole keys across partitions: it bootstraps the locations of its
slices' keys, places new keys only into buckets its slice owns and retracts moved keys wherever
they were. Checked on >= 100k rows moving between partitions, MERGE, UPDATE, a full compaction, and
pypaimon reading the result; and on a partial-update table whose keys stay in their partition.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import stratalake
from stratalake.bucket.cross_partition import key_slices
from stratalake.table.table import Table
from tests.interop.paimon_oracle import paimon_create_table, paimon_read
from tests.spark.conftest import ASSIGNERS

pytestmark = [pytest.mark.spark, pytest.mark.interop]



def _rows_by_key(rows: pa.Table, columns: tuple[str, ...]) -> dict[int, tuple[Any, ...]]:
    """id -> the other columns; fails on a primary key stored twice (in any partitions)."""
    out: dict[int, tuple[Any, ...]] = {}
    for r in rows.to_pylist():
        assert r["id"] not in out, f"primary key {r['id']} twice: {out[r['id']]} and {r}"
        out[r["id"]] = tuple(r[c] for c in columns)
    return out


def _files(table: Table) -> dict[tuple[bytes, int], set[str]]:
    snap = table.latest_snapshot()
    out: dict[tuple[bytes, int], set[str]] = {}
    for e in table.live_entries(snap) if snap is not None else []:
        out.setdefault((e.partition, e.bucket), set()).add(e.file.file_name)
    return out


def _writer(file_name: str) -> str:
    """data-<writer uuid>-<n>.<ext>: the task that wrote the file."""
    return file_name[len("data-") : len("data-") + 36]


def _new_writers(table: Table, before: dict[tuple[bytes, int], set[str]]) -> set[str]:
    return {_writer(f) for key, files in _files(table).items() for f in files - before.get(key, set())}


def _key_locations(table: Table) -> dict[tuple[bytes, int], np.ndarray]:
    """(partition, bucket) -> the ids it holds."""
    read = table.new_read(columns=["id", "p"])  # a projection keeps the partition column
    out: dict[tuple[bytes, int], np.ndarray] = {}
    for split in table.new_scan().plan():
        ids = read.read_splits([split]).column("id").to_numpy()
        if len(ids):
            out[(split.partition, split.bucket)] = ids
    return out


def test_spark_moves_keys_across_partitions_in_several_tasks(four_tasks: Any, warehouse: Path) -> None:
    spark = four_tasks
    wh = str(warehouse)
    ident = "cross_dist.t"
    paimon_create_table(
        wh, ident, pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())]),
        primary_keys=["id"], partition_keys=["p"], options={"dynamic-bucket.target-row-num": "2000"},
    )  # fmt: skip
    parts = ["a", "b", "c"]
    model: dict[int, tuple[Any, ...]] = {}  # id -> (v, p)

    def check() -> Table:
        got = spark.sql(f"SELECT id, v, p FROM lake.{ident}").toArrow()
        assert _rows_by_key(got, ("v", "p")) == model
        return stratalake.Catalog(wh).get_table(ident)

    # pypaimon 2.1 cannot write cross-partition tables: one Python API writer fills the table.
    table = stratalake.Catalog(wh).get_table(ident)
    first = np.arange(0, 30_000)
    table.write(pa.table({"id": first, "v": ["w"] * len(first), "p": [parts[i % 3] for i in first.tolist()]}))
    model.update({i: ("w", parts[i % 3]) for i in first.tolist()})
    table = check()
    before, old_buckets = _files(table), set(_key_locations(table))

    # 110k rows: the 30k existing keys move to the next partition, 80k keys are new.
    spark.sql(
        f"INSERT INTO lake.{ident} SELECT id, 's', "
        "element_at(array('a', 'b', 'c'), CAST((id + 1) % 3 AS INT) + 1) FROM range(0, 110000)"
    )
    model.update({i: ("s", parts[(i + 1) % 3]) for i in range(110_000)})
    table = check()
    # One task per assigner slice, each slice in its own task (not Spark's uneven hash of the ids).
    assert len(_new_writers(table, before)) == ASSIGNERS, "slices did not reach one task each"
    located = _key_locations(table)
    created = set(located) - old_buckets
    assert {b % ASSIGNERS for _, b in created} == set(range(ASSIGNERS))
    for partition, bucket in created:  # a bucket the statement created holds its owner slice's keys
        ids = pa.table({"id": pa.array(located[(partition, bucket)], pa.int64())})
        assert (key_slices(table, ids, ASSIGNERS) == bucket % ASSIGNERS).all(), (partition, bucket)
    # The old buckets got retractions from every slice (several tasks wrote each of them).
    shared = 0
    for key in old_buckets:
        shared += len({_writer(f) for f in _files(table)[key] - before[key]}) > 1
    assert shared > 0

    # MERGE: deletes, updates moving keys to partition c, inserts; then UPDATE.
    before = _files(table)
    spark.sql(
        f"MERGE INTO lake.{ident} t USING (SELECT id, id % 10 = 3 AS d FROM range(100000, 130000)) s "
        "ON t.id = s.id WHEN MATCHED AND s.d THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET v = 'm', p = 'c' "
        "WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (s.id, 'n', 'b')"
    )
    for i in range(100_000, 130_000):
        if i in model:
            if i % 10 == 3:
                del model[i]
            else:
                model[i] = ("m", "c")
        else:
            model[i] = ("n", "b")
    table = check()
    assert len(_new_writers(table, before)) > 1
    spark.sql(f"UPDATE lake.{ident} SET v = 'u' WHERE id % 7 = 1")
    model.update({i: ("u", p) for i, (_, p) in model.items() if i % 7 == 1})
    check()

    spark.sql(f"CALL lake.sys.compact('{ident}')")  # full compaction
    table = check()
    assert all(f.level > 0 for e in table.live_entries(table.latest_snapshot()) for f in [e.file])
    assert _rows_by_key(paimon_read(wh, ident), ("v", "p")) == model


def test_spark_partial_update_keeps_keys_in_their_partition(four_tasks: Any, warehouse: Path) -> None:
    spark = four_tasks
    wh = str(warehouse)
    ident = "cross_dist.pu"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("w", pa.string()), ("p", pa.string())])
    paimon_create_table(
        wh, ident, schema, primary_keys=["id"], partition_keys=["p"],
        options={"dynamic-bucket.target-row-num": "3000", "merge-engine": "partial-update"},
    )  # fmt: skip
    table = stratalake.Catalog(wh).get_table(ident)
    first = np.arange(0, 20_000)
    table.write(
        pa.table(
            {"id": first, "v": ["v0"] * len(first), "w": pa.nulls(len(first), pa.string()),
             "p": ["a" if i % 2 else "b" for i in first.tolist()]},
            schema=schema,
        )
    )  # fmt: skip
    before = _files(table)
    # Every key is written to partition c: existing keys stay where they are (their w set), new
    # keys land in c.
    spark.sql(f"INSERT INTO lake.{ident} SELECT id, NULL, 'w1', 'c' FROM range(10000, 100000)")
    model = {i: ("v0", None, "a" if i % 2 else "b") for i in range(20_000)}
    for i in range(10_000, 100_000):
        model[i] = ("v0", "w1", model[i][2]) if i in model else (None, "w1", "c")
    got = spark.sql(f"SELECT id, v, w, p FROM lake.{ident}").toArrow()
    assert _rows_by_key(got, ("v", "w", "p")) == model
    table = stratalake.Catalog(wh).get_table(ident)
    assert len(_new_writers(table, before)) > 1, "one task wrote the whole statement"
    assert _rows_by_key(paimon_read(wh, ident), ("v", "w", "p")) == model


def test_streaming_micro_batches_assign_in_several_tasks(four_tasks: Any, warehouse: Path, tmp_path: Path) -> None:
    """Each micro-batch of a streaming write takes the same path: several tasks, keys moving
    partitions between micro-batches retracted where they were."""
    spark = four_tasks
    ident = "cross_stream.t"
    spark.sql("CREATE DATABASE IF NOT EXISTS lake.cross_stream")
    spark.sql(
        f"CREATE TABLE lake.{ident} (id BIGINT NOT NULL, v STRING, p STRING NOT NULL, "
        "PRIMARY KEY (id) NOT ENFORCED) PARTITIONED BY (p) "
        "TBLPROPERTIES ('bucket' = '-1', 'dynamic-bucket.target-row-num' = '500')"
    )
    src = tmp_path / "src"
    src.mkdir()
    model: dict[int, tuple[Any, ...]] = {}
    for i, ids in enumerate([range(0, 6000), range(3000, 9000)]):
        rows = [{"id": k, "v": f"f{i}", "p": "a" if (k + i) % 2 else "b"} for k in ids]
        (src / f"{i:03d}.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        os.utime(src / f"{i:03d}.json", (1_000_000 + i, 1_000_000 + i))
        model.update({r["id"]: (r["v"], r["p"]) for r in rows})
    query = (
        spark.readStream.schema("id BIGINT, v STRING, p STRING")
        .option("maxFilesPerTrigger", 1)
        .json(str(src))
        .writeStream.option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .toTable(f"lake.{ident}")
    )
    query.awaitTermination(120)
    table = stratalake.Catalog(str(warehouse)).get_table(ident)
    snapshots = table.snapshots()
    assert len(snapshots) == 2  # one commit per micro-batch
    seen: set[str] = set()
    for snap in snapshots:
        new = {e.file.file_name for e in table.live_entries(snap)} - seen
        seen |= new
        assert len({_writer(f) for f in new}) > 1, "one task wrote the micro-batch"
    got = spark.sql(f"SELECT id, v, p FROM lake.{ident}").toArrow()
    assert _rows_by_key(got, ("v", "p")) == model


def test_statements_of_one_session_reuse_the_key_index(spark: Any, warehouse: Path) -> None:
    """INSERTs into a cross-partition table from one session: the Python workers Spark reuses
    keep the key index (bucket/key_index_cache.py) and advance it by the files added since, so a
    statement after the first few reads none of the files the table held before them: with those
    files moved away, it still runs (a writer bootstrapping afresh would fail to read them). Every
    key lands where it lands on a twin table whose writers bootstrap afresh each time."""
    wh = str(warehouse)
    cat = stratalake.Catalog(wh)
    cat.create_database("cross_cache", ignore_if_exists=True)
    tables = {}
    for name, budget in (("cached", "64 mb"), ("fresh", "0")):
        tables[name] = cat.create_table(
            f"cross_cache.{name}",
            schema=pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())]),
            primary_key=["id"],
            partition_keys=["p"],
            options={
                "bucket": "-1",
                "write-only": "true",
                "dynamic-bucket.target-row-num": "300",
                "dynamic-bucket.assigner-parallelism": "1",
                "stratalake.key-index-cache.max-memory": budget,
            },
        )
        first = np.arange(0, 3000)
        tables[name].write(
            pa.table({"id": first, "v": ["w"] * 3000, "p": [f"p{i % 4}" for i in first.tolist()]})
        )
    model = {i: ("w", f"p{i % 4}") for i in range(3000)}
    snap = tables["cached"].latest_snapshot()
    assert snap is not None
    preload = {e.file.file_name for e in tables["cached"].live_entries(snap)}
    root = Path(tables["cached"].location)
    paths = [p for p in root.rglob("data-*") if p.name in preload]
    assert len(paths) == len(preload)

    def insert(step: int) -> None:
        lo = 300 * step
        for name in tables:
            spark.sql(
                f"INSERT INTO lake.cross_cache.{name} SELECT id, 's{step}', "
                f"concat('p', CAST((id + {step + 1}) % 4 AS STRING)) FROM range({lo}, {lo + 500})"
            )
        model.update({i: (f"s{step}", f"p{(i + step + 1) % 4}") for i in range(lo, lo + 500)})

    # Spark hands a task the longest idle Python worker: each of the few the pool holds (local[2])
    # writes one of these statements and keeps the index.
    for step in range(6):
        insert(step)
    away = root / "away"
    away.mkdir()
    for path in paths:
        path.rename(away / f"{path.parent.parent.name}-{path.parent.name}-{path.name}")
    try:
        insert(6)  # reads only files written after the preload
    finally:
        for path in paths:
            (away / f"{path.parent.parent.name}-{path.parent.name}-{path.name}").rename(path)
    located = {}
    for name, t in tables.items():
        t = t.refresh()
        got = spark.sql(f"SELECT id, v, p FROM lake.cross_cache.{name}").toArrow()
        assert _rows_by_key(got, ("v", "p")) == model
        located[name] = {tuple(sorted(ids.tolist())): key for key, ids in _key_locations(t).items()}
    assert located["cached"] == located["fresh"]  # every key in the same partition and bucket
