"""Issue 33: a dynamic-bucket writer reads the data manifests and HASH index files only of the
partitions it writes (Paimon's ``PartitionIndex`` loads a partition's index the first time a key
of that partition arrives), not the whole table's."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import stratalake
from stratalake.bucket import dynamic
from stratalake.bucket.dynamic import owner_consistent_assigners
from stratalake.exceptions import CorruptFileError
from stratalake.store import manifests
from stratalake.store.index_manifest import HASH_INDEX, live_index_entries
from stratalake.table import Table
from tests.table.metadata_helpers import RecordingFileIO, _io, _synthesize, _table, cold_manifest_cache

__all__ = ["cold_manifest_cache"]


class IndexRecordingFileIO(RecordingFileIO):
    """Also records the index files (HASH, deletion vectors) it reads."""

    def __init__(self) -> None:
        super().__init__()
        self.index_files_read: list[str] = []

    def read_bytes(self, path: str) -> bytes:
        if "/index/" in path:
            self.index_files_read.append(path.rsplit("/", 1)[-1])
        return super().read_bytes(path)


def _rows(dt: str, ids: list[int], v: str = "x") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": [dt] * len(ids), "v": [v] * len(ids)})


def _dynamic_table(tmp_path: Any) -> Table:
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
    cat.create_table(
        "db.t",
        schema=schema,
        primary_key=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "-1", "write-only": "true", "dynamic-bucket.target-row-num": "4"},
    )
    return Table(IndexRecordingFileIO(), f"{tmp_path}/db.db/t", "db.t")


def test_one_partition_write_reads_only_that_partitions_manifest_and_index_files(tmp_path: Any) -> None:
    table = _dynamic_table(tmp_path)
    for d in range(12):  # one commit, so one data manifest, per partition
        table.write(_rows(f"p{d:02d}", list(range(10))))
    snap = table.latest_snapshot()
    part = table.partition_codec.to_bytes(["p05"])
    hash_files = {e.partition: set() for e in live_index_entries(table, snap)}
    for e in live_index_entries(table, snap):
        if e.index_type == HASH_INDEX:
            hash_files[e.partition].add(e.file_name)
    assert len(hash_files[part]) == 3  # 10 keys, 4 per bucket
    manifests._CACHE = manifests._LRU(2048)  # the writes cached their manifests: start cold
    table = Table(IndexRecordingFileIO(), table.location, "db.t")
    io = table.file_io
    assert isinstance(io, IndexRecordingFileIO)
    w = table.new_write()
    try:
        w.write(_rows("p05", [3, 100], "new"))  # an upsert and a new key
        messages = w.prepare_commit()
    except BaseException:
        w.abort()
        raise
    # The partition's one data manifest (the old writer read all 12 to check for unindexed buckets).
    assert len(set(io.manifests_read)) == 1
    assert set(io.index_files_read) <= hash_files[part]
    table.new_commit().commit(messages)
    got = {(r["dt"], r["id"]): r["v"] for r in table.read().to_pylist()}
    assert len(got) == 121 and got[("p05", 3)] == got[("p05", 100)] == "new"
    # The new key joined the partition's non-full bucket; other partitions' index is unchanged.
    after = live_index_entries(table, table.latest_snapshot())
    changed = {e.file_name for e in after} - {e.file_name for e in live_index_entries(table, snap)}
    assert {e.partition for e in after if e.file_name in changed} == {part}
    assert sorted(e.row_count for e in after if e.partition == part) == [3, 4, 4]


def test_partition_without_hash_index_is_refused_by_name_and_a_new_partition_reads_no_manifest(
    tmp_path: Any,
) -> None:
    table = _table(tmp_path, buckets=-1)  # data files in bucket 0 of p00..p19, and no HASH index
    _synthesize(table, [f"p{d:02d}" for d in range(20) for _ in range(4)], files_per_manifest=4, buckets=1)
    io = _io(table)
    w = table.new_write()
    try:
        w.write(_rows("q00", [1]))  # a new partition: no manifest's statistics admit it
        assert io.manifests_read == []
        with pytest.raises(CorruptFileError, match=r"partition \{'dt': 'p07'\} has data files in bucket\(s\) \[0\]"):
            w.write(_rows("p07", [1]))
        assert len(io.manifests_read) == 1
    finally:
        w.abort()
    assert table.latest_snapshot().id == 1  # type: ignore[union-attr]


def test_owner_consistent_assigners_reads_each_hash_file_once_per_process(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dynamic, "_FILE_GCDS", {}, raising=False)
    table = _dynamic_table(tmp_path)

    def write(rows: pa.Table) -> None:
        w = table.new_write()
        w.dynamic_assigners = 2  # as a Spark write with 2 slices: the index stays owner-consistent
        w.write(rows)
        table.new_commit().commit(w.prepare_commit())

    for d in range(6):
        write(_rows(f"p{d:02d}", list(range(10))))
    io = table.file_io
    assert isinstance(io, IndexRecordingFileIO)
    hash_files = {e.file_name for e in live_index_entries(table, table.latest_snapshot()) if e.index_type == HASH_INDEX}
    io.index_files_read.clear()
    assert owner_consistent_assigners(table, 2) == 2
    assert set(io.index_files_read) == hash_files
    # The next statement's planning reads only the HASH files written since.
    write(_rows("p03", [100, 101, 102, 103, 104]))
    new = {
        e.file_name for e in live_index_entries(table, table.latest_snapshot()) if e.index_type == HASH_INDEX
    } - hash_files
    assert new
    io.index_files_read.clear()
    assert owner_consistent_assigners(table, 4) == 2
    assert set(io.index_files_read) == new
    monkeypatch.setattr(dynamic, "_FILE_GCDS", {}, raising=False)
    assert owner_consistent_assigners(table, 4) == 2  # the same answer from every file


def test_partition_met_after_the_first_snapshot_expired_is_read_at_the_newest(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _dynamic_table(tmp_path)
    table.write(_rows("p00", list(range(6))))
    table.write(_rows("p01", list(range(6))))
    real = table.live_entries
    filters: list[Any] = []
    gone: set[int] = set()

    def recording(snapshot: Any, where: Any = None) -> Any:
        filters.append(where)
        if snapshot.id in gone:
            raise FileNotFoundError("manifest of an expired snapshot")
        return real(snapshot, where)

    monkeypatch.setattr(table, "live_entries", recording)
    w = table.new_write()
    try:
        w.write(_rows("p00", [50]))
        first = table.latest_snapshot()
        assert first is not None
        table.write(_rows("p01", list(range(6, 12))))  # another writer: p01 gets a third bucket
        gone.add(first.id)
        w.write(_rows("p01", [11, 99], "new"))  # no spurious "no HASH index" for bucket 2
        assert filters and all(f is not None for f in filters)  # a partition's manifests, never the table's
        messages = w.prepare_commit()
    except BaseException:
        w.abort()
        raise
    monkeypatch.undo()
    table.new_commit().commit(messages)
    rows = {(r["dt"], r["id"]): r["v"] for r in table.read().to_pylist()}
    assert len(rows) == 20 and rows[("p01", 11)] == rows[("p01", 99)] == "new"
    p01 = table.partition_codec.to_bytes(["p01"])
    index = [e for e in live_index_entries(table, table.latest_snapshot()) if e.partition == p01]
    assert sorted(e.row_count for e in index) == [1, 4, 4, 4]  # key 11 kept its bucket; 99 opened bucket 3
