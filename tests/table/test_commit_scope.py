"""Issue 33: a commit reads the live files of the partitions and buckets it touches only, and a
retry advances them by the delta manifests of the snapshots committed since."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratalake
from stratalake.operation.commit import live_cache
from stratalake.operation.commit.message import CommitMessage
from stratalake.operation.commit.protocol import TableCommit
from stratalake.store import manifests
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


def test_next_commit_advances_the_fold_it_kept(tmp_path: Any) -> None:
    """A commit keeps the live files of its partitions; the next one of those partitions (any
    bucket) reads only the delta manifests since, not the partition's manifests again."""
    table = _table(tmp_path)
    _synthesize(table, [f"p{d:02d}" for d in range(10) for _ in range(4)], files_per_manifest=2)
    io = _io(table)
    p03 = table.partition_codec.to_bytes(["p03"])
    assert TableCommit(table).commit([CommitMessage(p03, 1, 4, new_files=(_file(900, 900),))]) == 2
    assert len(io.manifests_read) == 2  # p03's 4 files in 2 manifests (too few to merge)
    for i, bucket in enumerate((2, 1, 0)):
        manifests._CACHE = manifests._LRU(2048)  # nothing decoded: every read reaches the FileIO
        io.manifests_read.clear()
        assert TableCommit(table).commit([CommitMessage(p03, bucket, 4, new_files=(_file(901 + i, 901),))])
        assert len(io.manifests_read) == 1, io.manifests_read  # the previous snapshot's delta
    live = {e.file.file_name for e in table.live_entries(table.latest_snapshot()) if e.partition == p03}  # type: ignore[arg-type]
    assert len(live) == 4 + 4


OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "compact", "overwrite", "rollback", "expire", "add_two"]),
        st.integers(0, 2),  # partition
        st.integers(0, 3),  # bucket
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_kept_folds_equal_a_fresh_fold(tmp_path_factory: pytest.TempPathFactory, ops: list[Any]) -> None:
    """Model: after any mix of commits (also of two partitions at once, which another key
    keeps), compactions, partition overwrites, rollbacks and expirations, the live files a
    commit derives from the kept fold equal a fold of the latest snapshot's manifests."""
    live_cache.clear()
    table = _table(tmp_path_factory.mktemp("fold"))
    codec = table.partition_codec
    parts = [codec.to_bytes([f"p{i}"]) for i in range(3)]
    _synthesize(table, [f"p{i % 3}" for i in range(12)], files_per_manifest=3)
    scopes = [
        table.manifest_filter(partitions=[parts[0]], buckets=[0, 1]),
        table.manifest_filter(partitions=[parts[1]], buckets=[2]),
        table.manifest_filter(partitions=[parts[0], parts[2]]),
        table.manifest_filter(partitions=[parts[2]], buckets=[3]),
    ]
    n = 1000
    for op, p, b in ops:
        n += 1
        latest = table.latest_snapshot()
        assert latest is not None
        if op == "add":
            TableCommit(table).commit([CommitMessage(parts[p], b, 4, new_files=(_file(n, n),))])
        elif op == "add_two":
            TableCommit(table).commit(
                [
                    CommitMessage(parts[p], b, 4, new_files=(_file(n, n),)),
                    CommitMessage(parts[(p + 1) % 3], b, 4, new_files=(_file(n + 5000, n),)),
                ]
            )
        elif op == "compact":
            live = [e for e in table.live_entries(latest) if e.partition == parts[p]]  # type: ignore[arg-type]
            if live:
                e = live[n % len(live)]
                TableCommit(table).commit(
                    [
                        CommitMessage(
                            e.partition, e.bucket, 4, compact_before=(e.file,), compact_after=(_file(n, n),)
                        )
                    ]
                )
        elif op == "overwrite":
            TableCommit(table).commit(
                [CommitMessage(parts[p], b, 4, new_files=(_file(n, n),))],
                overwrite=True,
                overwrite_partitions=[{"dt": f"p{p}"}],
            )
        elif op == "rollback":
            earliest = table.snapshot_manager.earliest_snapshot_id()
            assert earliest is not None
            if latest.id > earliest:
                table.rollback_to(max(earliest, latest.id - 1 - b % 2))
        elif op == "expire":
            table.expire_snapshots(retain_max=2, retain_min=1, older_than_ms=int(time.time() * 1000) + 1)
        latest = table.latest_snapshot()
        assert latest is not None
        commit = TableCommit(table)
        metas = commit._all_metas(latest)
        for scope in scopes:
            assert commit._live_at(latest, metas, scope) == commit._live(metas, scope), (op, p, b)
