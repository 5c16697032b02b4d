"""Issue 33: a commit reads the live files of the partitions and buckets it touches only, and a
retry advances them by the delta manifests of the snapshots committed since."""

from __future__ import annotations

import time
from typing import Any

import stratalake
from stratalake.operation.commit.message import CommitMessage
from stratalake.operation.commit.protocol import TableCommit
from tests.table.metadata_helpers import _file, _io, _synthesize, _table, cold_manifest_cache

__all__ = ["cold_manifest_cache"]


def test_commit_reads_only_the_manifests_of_its_partition(tmp_path: Any) -> None:
    table = _table(tmp_path)
    parts = [f"p{d:02d}" for d in range(20) for _ in range(8)]
    _synthesize(table, parts, files_per_manifest=8)
    io = _io(table)
    partition = table.partition_codec.to_bytes(["p07"])
    msg = CommitMessage(partition, 1, 4, new_files=(_file(10_000, 10_000),))
    assert TableCommit(table).commit([msg]) == 2
    # The commit's conflict checks read one data manifest (p07's); merging reads none (too few).
    assert len(io.manifests_read) == 1
    live = {e.file.file_name for e in table.live_entries(table.latest_snapshot())}  # type: ignore[arg-type]
    assert len(live) == len(parts) + 1


def test_retry_advances_live_files_by_delta_manifests(tmp_path: Any) -> None:
    table = _table(tmp_path)
    _synthesize(table, ["a"] * 8 + ["b"] * 8, files_per_manifest=8)
    codec = table.partition_codec
    first = table.latest_snapshot()
    assert first is not None
    commit = TableCommit(table)
    scope = table.manifest_filter(partitions=[codec.to_bytes(["a"])])
    live = commit._live(commit._all_metas(first), scope)
    # Other commits: new files, a compaction that deletes one of a's files, and one into b.
    a_files = sorted(live.values(), key=lambda e: e.file.file_name)
    TableCommit(table).commit([CommitMessage(codec.to_bytes(["a"]), 0, 4, new_files=(_file(500, 500),))])
    TableCommit(table).commit(
        [
            CommitMessage(
                codec.to_bytes(["a"]),
                a_files[0].bucket,
                4,
                compact_before=(a_files[0].file,),
                compact_after=(_file(501, 501),),
            )
        ]
    )
    TableCommit(table).commit([CommitMessage(codec.to_bytes(["b"]), 1, 4, new_files=(_file(502, 502),))])
    latest = table.latest_snapshot()
    assert latest is not None and latest.id == first.id + 3
    advanced = commit._advance((first, live), latest, scope)
    assert advanced is not None
    assert advanced == commit._live(commit._all_metas(latest), scope)
    assert a_files[0].identifier() not in advanced
    # A snapshot in between that is gone: no shortcut.
    table.file_io.delete(table.snapshot_manager.snapshot_path(first.id + 1))
    assert commit._advance((first, live), latest, scope) is None


def test_small_commit_cost_does_not_grow_with_the_table(tmp_path: Any) -> None:
    """Shape test: manifests a one-file commit reads stay constant from 1,000 to 4,000 files."""
    read = []
    for n in (1_000, 4_000):
        table = _table(tmp_path / str(n))
        parts = [f"p{j * 40 // n:02d}" for j in range(n)]  # 40 partitions, chronological
        _synthesize(table, parts, files_per_manifest=250)
        newest = table.partition_codec.to_bytes(["p39"])
        io = _io(table)
        t0 = time.perf_counter()
        TableCommit(table).commit([CommitMessage(newest, 0, 4, new_files=(_file(10**6, 10**6),))])
        assert time.perf_counter() - t0 < 5
        read.append(len(io.manifests_read))
        io.manifests_read.clear()
        assert len(table.new_scan(filter=stratalake.field("dt") == "p20").plan()) > 0
        assert len(io.manifests_read) == 1
    assert read[0] == read[1] == 1


