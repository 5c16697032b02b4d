"""Spark writes to dynamic-bucket tables whose writers compact every bucket they write (lookup
changelog, deletion vectors, first-row) run in several tasks, one writer per bucket.

Such a bucket may not take keys of an assigner slice that does not own it (that writer's level-0
files would escape the owner's compaction). The shim asks Python for the largest N of slices,
at most Spark's, under which the table's hash index holds only owner keys in every bucket: a table
Spark wrote with N slices keeps N, so later statements are distributed too; a table one assigner
filled (every slice in every bucket) keeps Spark's N: tasks add level-0 files to buckets of other
slices, and a distributed minor compaction right after the commit pushes them up (with their
changelog). Checked on >= 100k rows with existing data, against a model, with the changelog the
lookup producer emits.
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
from stratalake.bucket.cross_partition import owner_consistent_slices
from stratalake.bucket.dynamic import (
    assigner_ids,
    decode_hash_index,
    hash_index_entries_by_partition,
    owner_consistent_assigners,
)
from stratalake.read.changelog_read import read_changelog
from stratalake.spec.bucket import hash_rows
from stratalake.store.index_manifest import index_file_path, live_index_entries
from stratalake.table.table import Table
from stratalake.types import BigIntType
from tests.interop.paimon_oracle import paimon_create_table, paimon_read, paimon_write
from tests.spark.conftest import ASSIGNERS

pytestmark = [pytest.mark.spark, pytest.mark.interop]

KINDS = {
    "lookup": "'changelog-producer' = 'lookup'",
    "deletion-vectors": "'deletion-vectors.enabled' = 'true'",
    "first-row": "'merge-engine' = 'first-row'",
}


def _new_files_by_bucket(table: Table, before: set[str]) -> dict[tuple[bytes, int], set[str]]:
    """(partition, bucket) -> the writers (data-<writer uuid>-<n>) of its files added since ``before``."""
    snap = table.latest_snapshot()
    out: dict[tuple[bytes, int], set[str]] = {}
    for e in table.live_entries(snap) if snap is not None else []:
        if e.file.file_name not in before:
            out.setdefault((e.partition, e.bucket), set()).add(e.file.file_name[len("data-") : len("data-") + 36])
    return out


def _file_names(table: Table) -> set[str]:
    snap = table.latest_snapshot()
    return {e.file.file_name for e in table.live_entries(snap)} if snap is not None else set()


def _buckets(table: Table) -> dict[bytes, set[int]]:
    snap = table.latest_snapshot()
    out: dict[bytes, set[int]] = {}
    for e in live_index_entries(table, snap):
        out.setdefault(e.partition, set()).add(e.bucket)
    return out


def _owner_keys_only(table: Table, n: int) -> bool:
    snap = table.latest_snapshot()
    for partition, buckets in hash_index_entries_by_partition(live_index_entries(table, snap)).items():
        for bucket, e in buckets.items():
            hashes = decode_hash_index(table.file_io.read_bytes(index_file_path(table, e)))
            if not (assigner_ids(partition, hashes, n) == bucket % n).all():
                return False
    return True


def _check(spark: Any, ident: str, table: Table, model: dict[tuple[int, str], str]) -> None:
    got = spark.sql(f"SELECT id, p, v FROM lake.{ident}").toArrow().to_pylist()
    rows = {(r["id"], r["p"]): r["v"] for r in got}
    assert len(rows) == len(got), "a primary key twice"
    assert rows == model
    snap = table.latest_snapshot()
    assert snap is not None
    assert all(e.file.level > 0 for e in table.live_entries(snap)), "level 0 left uncompacted"


@pytest.mark.parametrize("kind", list(KINDS))
def test_lookup_kind_dynamic_tables_write_in_several_tasks(four_tasks: Any, warehouse: Path, kind: str) -> None:
    spark = four_tasks
    db = "own_" + kind.replace("-", "_")
    ident = f"{db}.t"
    spark.sql(f"CREATE DATABASE lake.{db}")
    spark.sql(
        f"CREATE TABLE lake.{ident} (id BIGINT, v STRING, p STRING, PRIMARY KEY (id, p) NOT ENFORCED) "
        f"PARTITIONED BY (p) WITH ('bucket' = '-1', 'dynamic-bucket.target-row-num' = '10000', {KINDS[kind]})"
    )
    model: dict[tuple[int, str], str] = {}
    part = "CASE WHEN id % 2 = 0 THEN 'x' ELSE 'y' END"
    wh = str(warehouse)
    for ids, value in ((range(0, 120_000), "a"), (range(60_000, 180_000), "b")):
        table = stratalake.Catalog(wh).get_table(ident)
        before = _file_names(table)
        spark.sql(f"INSERT INTO lake.{ident} SELECT id, '{value}', {part} FROM range({ids.start}, {ids.stop})")
        for i in ids:
            key = (i, "x" if i % 2 == 0 else "y")
            if kind != "first-row" or key not in model:
                model[key] = value
        table = stratalake.Catalog(wh).get_table(ident)
        _check(spark, ident, table, model)
        # Spark's N (4 slices) held: each bucket has only its owner slice's keys, and each
        # partition's buckets belong to every slice (one writer per slice and partition).
        assert _owner_keys_only(table, ASSIGNERS)
        for partition, buckets in _buckets(table).items():
            assert {b % ASSIGNERS for b in buckets} == set(range(ASSIGNERS)), partition
        assert all(len(w) == 1 for w in _new_files_by_bucket(table, before).values()), "two writers of a bucket"
    if kind == "lookup":
        # The second statement's changelog: -U/+U for the 60k updated keys, +I for 60k new ones.
        changes = read_changelog(table, table.latest_snapshot().id - 2, None)  # type: ignore[union-attr]
        kinds = changes.column("_row_kind").to_numpy(zero_copy_only=False)
        assert {k: int((kinds == k).sum()) for k in ("+I", "-U", "+U", "-D")} == {
            "+I": 60_000, "-U": 60_000, "+U": 60_000, "-D": 0,
        }  # fmt: skip


def _delta_writers(table: Table, snapshot_id: int) -> dict[tuple[bytes, int], set[str]]:
    """(partition, bucket) -> writers of the level-0 files snapshot ``snapshot_id`` added."""
    snap = table.snapshot_manager.snapshot(snapshot_id)
    mio = table.manifest_io
    out: dict[tuple[bytes, int], set[str]] = {}
    for meta in mio.read_list(snap.delta_manifest_list):
        for e in mio.read_entries(meta.file_name):
            if e.file.level == 0:
                out.setdefault((e.partition, e.bucket), set()).add(e.file.file_name[len("data-") : len("data-") + 36])
    return out


@pytest.mark.parametrize("kind", ["lookup", "deletion-vectors"])
def test_table_filled_by_one_assigner_is_compacted_after_the_write(
    four_tasks: Any, warehouse: Path, kind: str
) -> None:
    """Every slice's keys sit in every bucket (pypaimon filled it, one assigner): no N > 1 keeps
    one writer per bucket, so Spark's 4 slices write, several tasks adding level-0 files to one
    bucket, and a distributed minor compaction right after the commit pushes them up (a COMPACT
    snapshot with their changelog). Rows, levels and the lookup changelog are right."""
    spark = four_tasks
    wh = str(warehouse)
    db = "own_single_" + kind.replace("-", "_")
    ident = f"{db}.t"
    option = {"lookup": ("changelog-producer", "lookup"), "deletion-vectors": ("deletion-vectors.enabled", "true")}
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])
    # pypaimon creates and fills it with Paimon's defaults (no 'bucket' option: dynamic buckets,
    # one assigner).
    paimon_create_table(
        wh, ident, schema, primary_keys=["id", "p"], partition_keys=["p"],
        options={"dynamic-bucket.target-row-num": "10000", option[kind][0]: option[kind][1]},
    )  # fmt: skip
    ids = np.arange(0, 100_000)
    parts = np.where(ids % 2 == 0, "x", "y")
    paimon_write(wh, ident, pa.table({"id": ids, "v": ["a"] * len(ids), "p": parts}, schema=schema))
    table = stratalake.Catalog(wh).get_table(ident)
    assert "bucket" not in table.schema().options
    hashes = hash_rows([pa.array(ids)], [BigIntType(nullable=False)])
    assert len(set(assigner_ids(b"", hashes, ASSIGNERS).tolist())) == ASSIGNERS
    assert not _owner_keys_only(table, ASSIGNERS)
    assert owner_consistent_assigners(table, ASSIGNERS) == 1
    model = {(int(i), str(p)): "a" for i, p in zip(ids, parts, strict=True)}
    start = table.latest_snapshot().id  # type: ignore[union-attr]
    spark.sql(
        f"INSERT INTO lake.{ident} SELECT id, 'b', CASE WHEN id % 2 = 0 THEN 'x' ELSE 'y' END "
        "FROM range(50000, 150000)"
    )
    model.update({(i, "x" if i % 2 == 0 else "y"): "b" for i in range(50_000, 150_000)})
    table = table.refresh()
    _check(spark, ident, table, model)  # level 0 is empty again
    snapshots = [table.snapshot_manager.snapshot(i) for i in range(start + 1, table.latest_snapshot().id + 1)]  # type: ignore[union-attr]
    assert [s.commit_kind.value for s in snapshots][-1] == "COMPACT"
    writers = _delta_writers(table, snapshots[0].id)
    assert max(len(w) for w in writers.values()) > 1, "no bucket got level-0 files from two tasks"
    assert len(set().union(*writers.values())) > 2, "the statement ran in fewer than 3 tasks"
    # pypaimon reads what stratalake wrote into its table.
    assert {(r["id"], r["p"]): r["v"] for r in paimon_read(wh, ident).to_pylist()} == model
    if kind == "lookup":
        # pypaimon produced no changelog (it does not compact), so the first compaction emits one
        # for its rows too: replaying everything since then gives the table's state.
        replay: dict[tuple[int, str], str] = {}
        for r in read_changelog(table, start, None).to_pylist():
            if r["_row_kind"] in ("+I", "+U"):
                replay[(r["id"], r["p"])] = r["v"]
            else:
                replay.pop((r["id"], r["p"]), None)
        assert replay == model


@pytest.mark.parametrize("kind", ["lookup", "first-row"])
def test_cross_partition_lookup_kinds_write_in_several_tasks(four_tasks: Any, warehouse: Path, kind: str) -> None:
    """Cross-partition upserts (primary key without the partition column) of lookup and first-row
    tables: slices in several tasks, keys moving between partitions (lookup: deduplicate retracts
    the old row), level 0 compacted at every commit, each bucket holding its owner slice's keys."""
    spark = four_tasks
    db = "own_cross_" + kind.replace("-", "_")
    ident = f"{db}.t"
    spark.sql(f"CREATE DATABASE lake.{db}")
    spark.sql(
        f"CREATE TABLE lake.{ident} (id BIGINT, v STRING, p STRING, PRIMARY KEY (id) NOT ENFORCED) "
        f"PARTITIONED BY (p) WITH ('bucket' = '-1', 'dynamic-bucket.target-row-num' = '10000', {KINDS[kind]})"
    )
    wh = str(warehouse)
    model: dict[int, tuple[str, str]] = {}  # id -> (p, v)
    for ids, value, shift in ((range(0, 100_000), "a", 0), (range(50_000, 150_000), "b", 1)):
        table = stratalake.Catalog(wh).get_table(ident)
        before = _file_names(table)
        spark.sql(
            f"INSERT INTO lake.{ident} SELECT id, '{value}', "
            f"element_at(array('x', 'y'), CAST((id + {shift}) % 2 AS INT) + 1) FROM range({ids.start}, {ids.stop})"
        )
        for i in ids:
            if kind != "first-row" or i not in model:
                model[i] = ("xy"[(i + shift) % 2], value)
        table = stratalake.Catalog(wh).get_table(ident)
        got = spark.sql(f"SELECT id, p, v FROM lake.{ident}").toArrow().to_pylist()
        assert len(got) == len(model) and {r["id"]: (r["p"], r["v"]) for r in got} == model
        snap = table.latest_snapshot()
        assert snap is not None and all(e.file.level > 0 for e in table.live_entries(snap))
        assert all(len(w) == 1 for w in _new_files_by_bucket(table, before).values()), "two writers of a bucket"
        read = table.new_read(columns=["id"])
        residues: set[int] = set()
        for split in table.new_scan().plan():
            keys = read.read_splits([split])
            hashes = hash_rows([keys.column("id")], [BigIntType(nullable=False)])
            assert (np.abs(hashes.astype(np.int64)) % ASSIGNERS == split.bucket % ASSIGNERS).all()
            residues.add(split.bucket % ASSIGNERS)
        assert residues == set(range(ASSIGNERS)), "the slices did not reach one task each"
    if kind == "lookup":
        changes = read_changelog(table, table.latest_snapshot().id - 2, None)  # type: ignore[union-attr]
        kinds = changes.column("_row_kind").to_numpy(zero_copy_only=False)
        # 50k keys moved partition (-D in the old one, +I in the new), 50k new keys (+I).
        assert {k: int((kinds == k).sum()) for k in ("+I", "-U", "+U", "-D")} == {
            "+I": 100_000, "-U": 0, "+U": 0, "-D": 50_000,
        }  # fmt: skip


def test_streaming_micro_batches_are_compacted_after_each_commit(
    four_tasks: Any, warehouse: Path, tmp_path: Path
) -> None:
    """A streaming write into a lookup table one assigner filled: each micro-batch commits in
    several tasks, then its level-0 files are compacted (a COMPACT snapshot with the changelog)."""
    spark = four_tasks
    wh = str(warehouse)
    ident = "own_stream.t"
    cat = stratalake.Catalog(wh)
    cat.create_database("own_stream")
    table = cat.create_table(
        ident,
        schema=pa.schema([("id", pa.int64()), ("v", pa.string())]),
        primary_key=["id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "2000", "changelog-producer": "lookup"},
    )
    table.write(pa.table({"id": np.arange(0, 10_000), "v": ["a"] * 10_000}))
    assert owner_consistent_assigners(table.refresh(), ASSIGNERS) == 1
    start = table.latest_snapshot().id  # type: ignore[union-attr]
    src = tmp_path / "src"
    src.mkdir()
    model = dict.fromkeys(range(10_000), "a")
    for i, ids in enumerate([range(5_000, 15_000), range(0, 3_000)]):
        (src / f"{i:03d}.json").write_text("\n".join(json.dumps({"id": k, "v": f"s{i}"}) for k in ids) + "\n")
        os.utime(src / f"{i:03d}.json", (1_000_000 + i, 1_000_000 + i))
        model.update(dict.fromkeys(ids, f"s{i}"))
    query = (
        spark.readStream.schema("id BIGINT, v STRING")
        .option("maxFilesPerTrigger", 1)
        .json(str(src))
        .writeStream.option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .toTable(f"lake.{ident}")
    )
    query.awaitTermination(180)
    table = table.refresh()
    kinds = [table.snapshot_manager.snapshot(i).commit_kind.value for i in range(start + 1, table.latest_snapshot().id + 1)]  # type: ignore[union-attr]
    assert kinds.count("APPEND") == 2 and kinds[-1] == "COMPACT"
    got = spark.sql(f"SELECT id, v FROM lake.{ident}").toArrow().to_pylist()
    assert len(got) == len(model) and {r["id"]: r["v"] for r in got} == model
    snap = table.latest_snapshot()
    assert snap is not None and all(e.file.level > 0 for e in table.live_entries(snap))
    changes = read_changelog(table, start, None).column("_row_kind").to_numpy(zero_copy_only=False)
    # batch 0: 5k updates and 5k new keys; batch 1: 3k updates.
    assert int((changes == "+I").sum()) == 5_000 and int((changes == "+U").sum()) == 8_000


def test_cross_partition_table_filled_by_one_writer_is_compacted_after_the_write(
    four_tasks: Any, warehouse: Path
) -> None:
    """A cross-partition lookup table the Python API filled (one writer: every slice in every
    bucket): Spark's 4 slices move keys between partitions, writing retractions into buckets of
    other slices, and the compaction after the commit leaves no level-0 file and the right
    changelog."""
    spark = four_tasks
    wh = str(warehouse)
    ident = "own_cross_single.t"
    cat = stratalake.Catalog(wh)
    cat.create_database("own_cross_single")
    table = cat.create_table(
        ident,
        schema=pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())]),
        primary_key=["id"],
        partition_keys=["p"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "10000", "changelog-producer": "lookup"},
    )
    ids = np.arange(0, 60_000)
    table.write(pa.table({"id": ids, "v": ["a"] * len(ids), "p": np.where(ids % 2 == 0, "x", "y")}))
    table = table.refresh()
    assert owner_consistent_slices(table, ASSIGNERS) == 1
    start = table.latest_snapshot().id  # type: ignore[union-attr]
    # Keys 30k..60k move to the other partition; 60k..90k are new.
    spark.sql(
        f"INSERT INTO lake.{ident} SELECT id, 'b', CASE WHEN id % 2 = 0 THEN 'y' ELSE 'x' END "
        "FROM range(30000, 90000)"
    )
    model = {i: ("x" if i % 2 == 0 else "y", "a") for i in range(30_000)}
    model.update({i: ("y" if i % 2 == 0 else "x", "b") for i in range(30_000, 90_000)})
    table = table.refresh()
    got = spark.sql(f"SELECT id, p, v FROM lake.{ident}").toArrow().to_pylist()
    assert len(got) == len(model) and {r["id"]: (r["p"], r["v"]) for r in got} == model
    snap = table.latest_snapshot()
    assert snap is not None and snap.commit_kind.value == "COMPACT"
    assert all(e.file.level > 0 for e in table.live_entries(snap))
    writers = _delta_writers(table, start + 1)
    assert max(len(w) for w in writers.values()) > 1, "no bucket got level-0 files from two tasks"
    kinds = read_changelog(table, start, None).column("_row_kind").to_numpy(zero_copy_only=False)
    assert {k: int((kinds == k).sum()) for k in ("+I", "-U", "+U", "-D")} == {
        "+I": 60_000, "-U": 0, "+U": 0, "-D": 30_000,
    }  # fmt: skip
