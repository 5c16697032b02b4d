"""Spark SQL on tables pypaimon created with Paimon's defaults (dynamic buckets, ``bucket`` absent).

Several tasks per statement (3-4 shuffle partitions, AQE on): dynamic-bucket writes are clustered
by Paimon's assigner slice of the key hash, so several tasks assign one partition's keys;
cross-partition upserts by key slice alone. Afterwards stratalake, Spark, pypaimon and
pypaimon-rust read the model's rows with no key twice, and pypaimon can write again (the Python API
for cross-partition tables, which pypaimon cannot write).
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
from stratalake.bucket.dynamic import assigner_ids, decode_hash_index, hash_index_entries_by_partition
from stratalake.spec.bucket import hash_rows
from stratalake.store.index_manifest import index_file_path, live_index_entries
from tests.interop.paimon_oracle import paimon_create_table, paimon_read, paimon_write, rust_read
from tests.spark.conftest import ASSIGNERS

pytestmark = [pytest.mark.spark, pytest.mark.interop]

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])


@pytest.fixture
def multi_task(spark: Any) -> Any:
    settings = {
        "spark.sql.shuffle.partitions": "3",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.minPartitionSize": "16k",
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": "64k",
    }
    saved = {k: spark.conf.get(k) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    yield spark
    for k, v in saved.items():
        spark.conf.set(k, v)


def _model_of(rows: pa.Table, key: tuple[str, ...]) -> dict[tuple[Any, ...], str]:
    out: dict[tuple[Any, ...], str] = {}
    for r in rows.to_pylist():
        k = tuple(r[c] for c in key)
        assert k not in out, f"duplicate primary key {k}"
        out[k] = r["v"]
    return out


def _batch(ids: range, v: str, p: Any) -> pa.Table:
    return pa.table(
        {"id": pa.array(list(ids), pa.int64()), "v": [v] * len(ids), "p": [p(i) for i in ids]}, schema=SCHEMA
    )


@pytest.mark.parametrize("cross_partition", [False, True], ids=["per-partition", "cross-partition"])
def test_spark_writes_into_pypaimon_dynamic_bucket_tables(
    multi_task: Any, warehouse: Path, cross_partition: bool
) -> None:
    spark = multi_task
    db = "dyn_cross" if cross_partition else "dyn"
    ident = f"{db}.t"
    key = ("id",) if cross_partition else ("id", "p")
    paimon_create_table(
        str(warehouse), ident, SCHEMA, primary_keys=list(key), partition_keys=["p"],
        options={"dynamic-bucket.target-row-num": "2000"},
    )  # fmt: skip
    model: dict[tuple[Any, ...], str] = {}

    def apply(batch: pa.Table) -> None:
        for r in batch.to_pylist():
            if cross_partition:
                model[(r["id"],)] = r["v"]
            else:
                model[(r["id"], r["p"])] = r["v"]

    # pypaimon 2.1 cannot write cross-partition tables (no global key index): the Python API does.
    def write(batch: pa.Table) -> None:
        if cross_partition:
            stratalake.Catalog(str(warehouse)).get_table(ident).write(batch)
        else:
            paimon_write(str(warehouse), ident, batch)
        apply(batch)

    write(_batch(range(0, 20_000), "p", lambda i: f"p{i % 3}"))

    # Spark: upserts of existing keys (moving partitions when cross-partition) and new keys.
    spark.sql(
        f"INSERT INTO lake.{ident} SELECT id, 's', concat('p', cast((id + 1) % 3 AS string)) "
        "FROM range(10000, 40000)"
    )
    apply(_batch(range(10_000, 40_000), "s", lambda i: f"p{(i + 1) % 3}"))

    got = spark.sql(f"SELECT id, v, p FROM lake.{ident}").toArrow()
    assert _model_of(got, key) == model
    assert _model_of(stratalake.Catalog(str(warehouse)).get_table(ident).read(), key) == model
    assert _model_of(paimon_read(str(warehouse), ident), key) == model

    # pypaimon writes again, existing and new keys: still one row per key everywhere.
    write(_batch(range(35_000, 45_000), "q", lambda i: f"p{(i + 2) % 3}"))
    assert _model_of(paimon_read(str(warehouse), ident), key) == model
    assert _model_of(rust_read(str(warehouse), ident), key) == model
    got = spark.sql(f"SELECT id, v, p FROM lake.{ident}").toArrow()
    assert _model_of(got, key) == model


# -- distributed bucket assignment ------------------------------------------------------------------


def _live_files(table: Any) -> dict[tuple[bytes, int], set[str]]:
    snap = table.latest_snapshot()
    out: dict[tuple[bytes, int], set[str]] = {}
    for e in table.live_entries(snap) if snap is not None else []:
        out.setdefault((e.partition, e.bucket), set()).add(e.file.file_name)
    return out


def _writer(file_name: str) -> str:
    """data-<writer uuid>-<n>.<ext>: the task that wrote the file."""
    return file_name[len("data-") : len("data-") + 36]


def _hash_index(table: Any) -> dict[bytes, dict[int, np.ndarray]]:
    """Partition -> bucket -> the key hashes of its live HASH index file."""
    out: dict[bytes, dict[int, np.ndarray]] = {}
    entries = live_index_entries(table, table.latest_snapshot())
    for partition, by_bucket in hash_index_entries_by_partition(entries).items():
        for bucket, e in by_bucket.items():
            path = index_file_path(table, e)
            out.setdefault(partition, {})[bucket] = decode_hash_index(table.file_io.read_bytes(path), path)
    return out


def _check_index(table: Any) -> dict[bytes, dict[int, np.ndarray]]:
    """Every live key sits in the bucket its partition's hash index names, and no hash is indexed
    in two buckets."""
    index = _hash_index(table)
    lookup: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
    for partition, by_bucket in index.items():
        hashes = np.concatenate(list(by_bucket.values()))
        buckets = np.concatenate([np.full(len(h), b) for b, h in by_bucket.items()])
        assert len(np.unique(hashes)) == len(hashes), "a key hash is indexed in two buckets"
        order = np.argsort(hashes)
        lookup[partition] = (hashes[order], buckets[order])
    id_type = table.schema().field("id").type
    read = table.new_read(columns=["id"])
    for split in table.new_scan().plan():
        ids = pa.concat_tables(pa.Table.from_batches([b]) for b in read.read_split(split)).column("id")
        h = hash_rows([ids], [id_type])
        known, where = lookup[split.partition]
        pos = np.searchsorted(known, h)
        assert (pos < len(known)).all() and (known[np.minimum(pos, len(known) - 1)] == h).all()
        assert (where[pos] == split.bucket).all(), f"keys of bucket {split.bucket} indexed elsewhere"
    return index


def test_spark_assigns_dynamic_buckets_in_several_tasks(four_tasks: Any, warehouse: Path) -> None:
    """>= 100k rows into a pypaimon-created dynamic-bucket table with many buckets: each task
    assigns its slices of the key hashes (several tasks per partition), and the table stays right
    through upserts, MERGE, UPDATE, DELETE, a full compaction and pypaimon writing again."""
    spark = four_tasks
    ident = "dyn_dist.t"
    wh = str(warehouse)
    paimon_create_table(
        wh, ident, SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
        options={"dynamic-bucket.target-row-num": "1000"},
    )  # fmt: skip
    model: dict[tuple[Any, ...], str] = {}

    def part(i: int) -> str:
        return "a" if i % 2 == 0 else "b"

    def apply(ids: range, v: str) -> None:
        for i in ids:
            model[(i, part(i))] = v

    def check() -> dict[bytes, dict[int, np.ndarray]]:
        got = spark.sql(f"SELECT id, v, p FROM lake.{ident}").toArrow()
        assert _model_of(got, ("id", "p")) == model
        return _check_index(stratalake.Catalog(wh).get_table(ident))

    # pypaimon (one assigner, its default) fills buckets 0.. of each partition with every slice.
    paimon_write(wh, ident, _batch(range(0, 30_000), "p", part))
    apply(range(0, 30_000), "p")
    table = stratalake.Catalog(wh).get_table(ident)
    before_files, before_index = _live_files(table), _hash_index(table)

    # 100k rows from Spark: 10k updates of pypaimon's keys, 90k new keys.
    spark.sql(
        f"INSERT INTO lake.{ident} SELECT id, 's', IF(id % 2 = 0, 'a', 'b') FROM range(20000, 120000)"
    )
    apply(range(20_000, 120_000), "s")
    index = check()
    table = stratalake.Catalog(wh).get_table(ident)
    writers: dict[bytes, set[str]] = {}
    shared = 0  # pypaimon's buckets (keys of every slice) updated by several tasks in one job
    for (partition, bucket), files in _live_files(table).items():
        new = {_writer(name) for name in files - before_files.get((partition, bucket), set())}
        writers.setdefault(partition, set()).update(new)
        shared += bucket in before_index.get(partition, {}) and len(new) > 1
    assert shared > 0
    for partition in index:
        assert len(writers[partition]) > 1, f"one task wrote every key of partition {partition!r}"
        # Buckets this write created hold only keys of the slice that owns them (b % N).
        created = sorted(set(index[partition]) - set(before_index.get(partition, {})))
        assert len({b % ASSIGNERS for b in created}) == ASSIGNERS, created
        for b in created:
            owners = assigner_ids(partition, index[partition][b], ASSIGNERS)
            assert (owners == b % ASSIGNERS).all(), f"bucket {b} holds keys of other assigner slices"
    assert sum(len(b) for b in index.values()) > 100  # many buckets

    # MERGE (update, delete, insert), UPDATE and DELETE: change records, distributed the same way.
    spark.sql(
        f"MERGE INTO lake.{ident} t USING (SELECT id, IF(id % 2 = 0, 'a', 'b') AS p, "
        "id % 10 = 3 AS d FROM range(100000, 130000)) s ON t.id = s.id AND t.p = s.p "
        "WHEN MATCHED AND s.d THEN DELETE WHEN MATCHED THEN UPDATE SET v = 'm' "
        "WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (s.id, 'n', s.p)"
    )
    for i in range(100_000, 130_000):
        k = (i, part(i))
        if k in model:
            if i % 10 == 3:
                del model[k]
            else:
                model[k] = "m"
        else:
            model[k] = "n"
    check()
    spark.sql(f"UPDATE lake.{ident} SET v = 'u' WHERE id % 7 = 1")
    for k in model:
        if k[0] % 7 == 1:
            model[k] = "u"
    spark.sql(f"DELETE FROM lake.{ident} WHERE id % 11 = 5")
    for k in [k for k in model if k[0] % 11 == 5]:
        del model[k]
    check()

    spark.sql(f"CALL lake.sys.compact('{ident}')")  # full compaction
    check()

    # pypaimon and pypaimon-rust read the same rows; pypaimon writes existing and new keys again.
    assert _model_of(paimon_read(wh, ident), ("id", "p")) == model
    assert _model_of(rust_read(wh, ident), ("id", "p")) == model
    paimon_write(wh, ident, _batch(range(125_000, 140_000), "q", part))
    apply(range(125_000, 140_000), "q")
    assert _model_of(paimon_read(wh, ident), ("id", "p")) == model
    assert _model_of(rust_read(wh, ident), ("id", "p")) == model
    check()


def test_streaming_and_write_to_assign_in_several_tasks(four_tasks: Any, warehouse: Path, tmp_path: Path) -> None:
    """Streaming micro-batches and ``writeTo`` use the same slice clustering: a Spark-created
    dynamic-bucket table stays one row per key, every key in its indexed bucket, each
    micro-batch's partition was written by several tasks, and the table's
    ``dynamic-bucket.assigner-parallelism`` (3, not the 4 shuffle partitions) is the N of every
    bucket's slice."""
    spark = four_tasks
    ident = "dyn_stream.t"
    spark.sql("CREATE DATABASE IF NOT EXISTS lake.dyn_stream")
    spark.sql(
        f"CREATE TABLE lake.{ident} (id BIGINT NOT NULL, v STRING, p STRING NOT NULL, "
        "PRIMARY KEY (id, p) NOT ENFORCED) PARTITIONED BY (p) "
        "TBLPROPERTIES ('bucket' = '-1', 'dynamic-bucket.target-row-num' = '500', "
        "'dynamic-bucket.assigner-parallelism' = '3')"
    )
    src = tmp_path / "src"
    src.mkdir()
    model: dict[tuple[Any, ...], str] = {}
    for i, ids in enumerate([range(0, 6000), range(3000, 9000)]):
        rows = [{"id": k, "v": f"f{i}", "p": "a" if k % 2 else "b"} for k in ids]
        (src / f"{i:03d}.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        os.utime(src / f"{i:03d}.json", (1_000_000 + i, 1_000_000 + i))
        model.update({(r["id"], r["p"]): r["v"] for r in rows})
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
        by_partition: dict[bytes, set[str]] = {}
        for e in table.live_entries(snap):
            if e.file.file_name not in seen:
                by_partition.setdefault(e.partition, set()).add(_writer(e.file.file_name))
        seen |= {e.file.file_name for e in table.live_entries(snap)}
        assert by_partition and all(len(w) > 1 for w in by_partition.values()), by_partition

    df = spark.range(8000, 12000).selectExpr("id", "'w' AS v", "IF(id % 2 = 1, 'a', 'b') AS p")
    df.writeTo(f"lake.{ident}").append()
    model.update({(k, "a" if k % 2 else "b"): "w" for k in range(8000, 12000)})
    got = spark.sql(f"SELECT id, v, p FROM lake.{ident}").toArrow()
    assert _model_of(got, ("id", "p")) == model
    index = _check_index(stratalake.Catalog(str(warehouse)).get_table(ident))
    for partition, buckets in index.items():
        assert {b % 3 for b in buckets} == {0, 1, 2}
        for b, hashes in buckets.items():
            assert (assigner_ids(partition, hashes, 3) == b % 3).all()
    assert _model_of(rust_read(str(warehouse), ident), ("id", "p")) == model
