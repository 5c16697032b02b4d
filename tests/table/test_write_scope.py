"""Issue 33: a writer restores the live files of the partitions and buckets it writes only."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from stratalake.merge import SEQUENCE_NUMBER
from stratalake.operation.commit.message import CommitMessage
from stratalake.operation.commit.protocol import TableCommit
from stratalake.store.index_manifest import dv_entries_by_bucket, live_index_entries
from tests.table.metadata_helpers import _file, _io, _synthesize, _table, cold_manifest_cache

__all__ = ["cold_manifest_cache"]


def _rows(dt: str, ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": [dt] * len(ids), "v": ["x"] * len(ids)})


def test_small_write_opens_only_the_manifests_of_its_partition(tmp_path: Any) -> None:
    table = _table(tmp_path)
    parts = [f"p{d:02d}" for d in range(20) for _ in range(8)]  # file j: partition j // 8, bucket j % 4
    _synthesize(table, parts, files_per_manifest=8)  # one manifest per partition
    io = _io(table)
    w = table.new_write()
    try:
        w.write(_rows("p07", [1, 2, 3]))
        # Only p07's manifest admits the buckets written (its partition statistics).
        assert len(io.manifests_read) == 1
        partition = table.partition_codec.to_bytes(["p07"])
        assert w._buffers and all(p == partition for p, _ in w._buffers)
        for (_, bucket), buf in w._buffers.items():
            # Each bucket continues after its restored files (file j has sequence number j).
            restored = [j for j in range(56, 64) if j % 4 == bucket]
            assert buf.tables[0].column(SEQUENCE_NUMBER)[0].as_py() == max(restored) + 1
            assert sorted(f.max_sequence_number for f in w._restored[(partition, bucket)]) == restored  # type: ignore[index]
        # Writing more into the same buckets reads nothing again; another partition reads its own.
        io.manifests_read.clear()
        w.write(_rows("p07", [1, 2, 3]))
        assert io.manifests_read == []
        w.write(_rows("p12", [4]))
        assert len(io.manifests_read) == 1
    finally:
        w.abort()


def test_buckets_opened_after_the_first_snapshot_expired_are_read_at_the_newest(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(tmp_path)
    _synthesize(table, ["a"] * 8 + ["b"] * 8, files_per_manifest=8)
    codec = table.partition_codec
    w = table.new_write()
    try:
        w.write(_rows("a", [1]))
        first = w._restore_snapshot
        assert first is not None
        TableCommit(table).commit([CommitMessage(codec.to_bytes(["b"]), 1, 4, new_files=(_file(900, 900),))])
        real = table.live_entries

        def expired(snapshot: Any, where: Any = None) -> Any:
            if snapshot.id == first.id:
                raise FileNotFoundError("manifest of an expired snapshot")
            return real(snapshot, where)

        monkeypatch.setattr(table, "live_entries", expired)
        w.write(_rows("b", list(range(40))))  # every bucket of b
        b = codec.to_bytes(["b"])
        assert 900 in {f.max_sequence_number for f in w._restored[(b, 1)]}  # type: ignore[index]
        newest = table.latest_snapshot()
        dv = dv_entries_by_bucket(live_index_entries(table, newest))
        assert all(w._restored_dv[(b, bucket)] == dv.get((b, bucket), []) for bucket in range(4))
    finally:
        w.abort()
