"""Manifest merging on commit: minor merges, and the full compaction of
``manifest.full-compaction-threshold-size`` (Paimon's ManifestFileMerger rule)."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import stratalake
from stratalake.catalog.schema_change import SchemaChange
from stratalake.options import CoreOptions
from stratalake.spec.manifest import FileKind, ManifestFileMeta
from stratalake.spec.snapshot import Snapshot

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
PART_SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])


def _table(tmp_path: Path, schema: pa.Schema = SCHEMA, **options: str) -> stratalake.Table:
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    partition = ["dt"] if "dt" in schema.names else None
    keys = ["dt", "id"] if partition else ["id"]
    return cat.create_table(
        "db.t",
        schema=schema,
        primary_key=keys,
        partition_keys=partition,
        options={"bucket": "4", "snapshot.num-retained.max": "1000", **options},
    )


def _base(t: stratalake.Table, snap: Snapshot | None = None) -> list[ManifestFileMeta]:
    snap = snap or t.latest_snapshot()
    assert snap is not None
    return t.manifest_io.read_list(snap.base_manifest_list)


def _deletes(t: stratalake.Table, metas: list[ManifestFileMeta]) -> int:
    return sum(1 for m in metas for e in t.manifest_io.read_entries(m.file_name) if e.kind is FileKind.DELETE)


def test_default_threshold_is_paimons() -> None:
    assert CoreOptions({}).get_int("manifest.full-compaction-threshold-size") == 16 * 1024 * 1024
    assert (
        CoreOptions({"manifest.full-compaction-threshold-size": "1 kb"}).get_int(
            "manifest.full-compaction-threshold-size"
        )
        == 1024
    )


@pytest.mark.parametrize("threshold", ["12 kb", "1 gb"])  # full compactions happen / never happen
def test_manifest_list_stays_bounded_and_reads_stay_right(tmp_path: Path, threshold: str) -> None:
    t = _table(
        tmp_path,
        **{
            "manifest.target-file-size": "3 kb",  # an empty manifest is ~2.4 kb (the Avro schema)
            "manifest.merge-min-count": "6",
            "manifest.full-compaction-threshold-size": threshold,
            "write-only": "true",  # compactions only where the test asks, so DELETE entries are known
        },
    )
    rng = random.Random(7)
    model: dict[int, int] = {}
    sizes, deletes, full_compactions = [], [0], 0
    for c in range(90):
        ids = rng.sample(range(400), 12)
        for i in ids:
            model[i] = c
        t.write(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([c] * len(ids), pa.int64())}))
        if c % 4 == 3:
            t.compact(full=c % 8 == 7)  # replaces files: DELETE entries in the next manifests
        base = _base(t)
        sizes.append(len(base))
        deletes.append(_deletes(t, base))
        full_compactions += deletes[-1] == 0 and deletes[-2] > 0
        if c % 15 == 14:
            assert {r["id"]: r["v"] for r in t.read().to_pylist()} == model
    if threshold == "12 kb":
        # Full compactions cancel every DELETE entry against its ADD and keep the list short.
        assert full_compactions >= 5, deletes
        assert max(sizes) <= 6, sizes
    else:
        # Minor merges alone keep the DELETE entries whose ADDs sit in full-size manifests: the
        # metadata grows with the history (what the threshold is for), but never per commit.
        assert full_compactions == 0 and deletes[-1] > deletes[45] > 0, deletes
        assert max(sizes) < 90 // 3, sizes  # (unmerged: one manifest per commit)
    # Every file is added at most once more than it is deleted, across base and delta.
    snap = t.latest_snapshot()
    assert snap is not None
    metas = _base(t) + t.manifest_io.read_list(snap.delta_manifest_list)
    balance: dict[tuple[bytes, int, int, str], int] = {}
    for m in metas:
        for e in t.manifest_io.read_entries(m.file_name):
            key = (e.partition, e.bucket, e.file.level, e.file.file_name)
            balance[key] = balance.get(key, 0) + (1 if e.kind is FileKind.ADD else -1)
    assert set(balance.values()) <= {0, 1}
    assert {r["id"]: r["v"] for r in t.read().to_pylist()} == model


def test_full_compaction_drops_every_delete_entry(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"write-only": "true", "manifest.merge-min-count": "1000"})
    for c in range(6):
        t.write(pa.table({"id": pa.array(range(c, c + 20), pa.int64()), "v": pa.array([c] * 20, pa.int64())}))
    t.compact(full=True)
    t.write(pa.table({"id": pa.array([1000], pa.int64()), "v": pa.array([0], pa.int64())}))
    base = _base(t)
    assert _deletes(t, base) > 0  # below the 16 MB default nothing was merged
    expected = t.read().sort_by("id")
    live = {e.file.file_name for e in t.live_entries(t.latest_snapshot())}  # type: ignore[arg-type]

    cat = stratalake.Catalog(str(tmp_path))
    t3 = cat.alter_table("db.t", [SchemaChange.set_option("manifest.full-compaction-threshold-size", "1 b")])
    t3.write(pa.table({"id": pa.array([1001], pa.int64()), "v": pa.array([0], pa.int64())}))
    base = _base(t3)
    assert _deletes(t3, base) == 0
    assert all(m.num_deleted_files == 0 for m in base)
    entries = [e for m in base for e in t3.manifest_io.read_entries(m.file_name)]
    assert {e.file.file_name for e in entries} == live  # exactly the live files of before
    assert len(entries) == len(live)
    got = t3.read().sort_by("id")
    assert got.num_rows == expected.num_rows + 1
    assert got.filter(pc.less(got.column("id"), 1001)).equals(expected)


def test_full_compaction_keeps_large_manifests_of_untouched_partitions(tmp_path: Path) -> None:
    """A target-size manifest without DELETE entries whose partitions hold no deleted file is
    kept as it is (Paimon's partition filter); the rest is rewritten without DELETE entries."""
    t = _table(
        tmp_path,
        PART_SCHEMA,
        **{
            "bucket": "16",
            "manifest.target-file-size": "2 kb",  # every manifest is "large"
            "manifest.full-compaction-threshold-size": "6 kb",
            "write-only": "true",
        },
    )
    t.write(pa.table({"dt": ["b"] * 200, "id": pa.array(range(200), pa.int64()), "v": pa.array([0] * 200)}))
    t.write(pa.table({"dt": ["a"], "id": pa.array([0], pa.int64()), "v": pa.array([0])}))
    big = _base(t)
    assert len(big) == 1 and big[0].file_size >= 2 * 1024 and big[0].num_deleted_files == 0
    cancelled = 0
    for c in range(1, 12):
        t.write(
            pa.table({"dt": ["a"] * 3, "id": pa.array([c, c + 1, c + 2], pa.int64()), "v": pa.array([c] * 3)})
        )
        if c % 3 == 0:
            t.compact(full=True, partitions=[{"dt": "a"}])
        base = _base(t)
        assert big[0].file_name in {m.file_name for m in base}  # never rewritten
        if any(m.num_deleted_files for m in _base(t, t.snapshot(t.latest_snapshot().id - 1))):  # type: ignore[union-attr]
            cancelled += _deletes(t, base) == 0
    assert cancelled >= 1
    got = {(r["dt"], r["id"]): r["v"] for r in t.read().to_pylist()}
    assert len(got) == 200 + 14 and got[("a", 12)] == 11 and got[("b", 5)] == 0


@pytest.mark.interop
@pytest.mark.parametrize("threshold", ["8 kb", "1 gb"])
def test_pypaimon_reads_merged_manifests(tmp_path: Path, threshold: str) -> None:
    """Merged base manifests (with DELETE entries kept by minor merges, or none after full
    compactions) read the same in pypaimon."""
    pytest.importorskip("pypaimon")
    from tests.interop.paimon_oracle import paimon_read

    t = _table(
        tmp_path,
        **{
            "manifest.target-file-size": "3 kb",
            "manifest.merge-min-count": "3",
            "manifest.full-compaction-threshold-size": threshold,
        },
    )
    rng = random.Random(3)
    for c in range(30):
        ids = rng.sample(range(200), 10)
        t.write(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([c] * len(ids), pa.int64())}))
        if c % 5 == 4:
            t.compact(full=True)
    assert _deletes(t, _base(t)) > 0 or threshold == "8 kb"
    ours = t.read().sort_by("id")
    theirs = paimon_read(str(tmp_path), "db.t").select(ours.column_names).sort_by("id")
    assert theirs.to_pylist() == ours.to_pylist()


@pytest.mark.parametrize("min_count", ["0", "1"])
def test_merge_min_count_zero_and_one_merge_every_commit(tmp_path: Path, min_count: str) -> None:
    """Paimon accepts any ``manifest.merge-min-count``: 0 (and 1) merge the small manifests left at
    the end of the list on every commit, so the base list never holds more than one of them."""
    t = _table(tmp_path, **{"manifest.merge-min-count": min_count, "write-only": "true"})
    for c in range(5):
        t.write(pa.table({"id": pa.array([c, c + 100], pa.int64()), "v": pa.array([c, c], pa.int64())}))
        assert len(_base(t)) <= 1
    assert sorted(t.read().column("id").to_pylist()) == sorted([*range(5), *range(100, 105)])
