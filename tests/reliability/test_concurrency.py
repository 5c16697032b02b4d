"""Several processes append, compact, expire and read one table at the same time.

Each writer commits numbered batches of disjoint keys; a compaction job, an expiration job and a
reader run beside them. Afterwards every successful commit's rows are present exactly once, and
every snapshot the reader saw was complete (see :mod:`tests.reliability.workload`).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stratalake
from stratalake.exceptions import CommitConflictError
from stratalake.operation.commit import CommitMessage, TableCommit
from stratalake.store.snapshot_manager import _any_id_above
from stratalake.table import Table
from tests.reliability.procs import Worker, wait_all
from tests.reliability.workload import (
    KEY_SPAN,
    batch,
    check_rows,
    create_table,
    live_files_unique,
    open_table,
)


def _errors(workers: list[Worker]) -> list[dict[str, Any]]:
    return [
        r for w in workers for r in w.records() if r["event"] in ("error", "violation", "gave_up", "timeout")
    ]


def run_concurrent(
    tmp_path: Path, writers: int, commits: int, rows: int, max_seconds: float
) -> dict[str, Any]:
    wh = str(tmp_path / "wh")
    create_table(wh, **{"snapshot.num-retained.min": "3", "snapshot.num-retained.max": "8"})
    stop = tmp_path / "stop"
    common = {"warehouse": wh, "stop_file": str(stop), "max_seconds": max_seconds}
    logs = tmp_path / "logs"
    logs.mkdir()
    started = time.monotonic()
    ws = [
        Worker(
            "writer",
            {**common, "writer": i, "commits": commits, "rows": rows, "compact_every": 10, "seed": i},
            logs / f"writer-{i}.jsonl",
        )
        for i in range(writers)
    ]
    others = [
        Worker("compactor", {**common, "pause": 0.1}, logs / "compactor.jsonl"),
        Worker("expirer", {**common, "retain_max": 3, "pause": 0.1}, logs / "expirer.jsonl"),
        Worker("reader", {**common}, logs / "reader.jsonl"),
    ]
    try:
        codes = wait_all(ws, max_seconds + 30)
    finally:
        stop.touch()
    codes.update(wait_all(others, 60))
    elapsed = time.monotonic() - started
    everyone = ws + others
    assert not _errors(everyone), _errors(everyone)[:5]
    assert all(c == 0 for c in codes.values()), (
        {k: c for k, c in codes.items() if c},
        [w.stderr for w in everyone],
    )

    # The writers' keys are disjoint (their key ranges are not): the same-key check never fires.
    same_key = [r for w in ws for r in w.records() if "one writer per bucket" in r.get("message", "")]
    assert not same_key, same_key[:3]

    # Every commit a writer saw succeed is there, exactly once, and nothing else is.
    ok = [r for w in ws for r in w.records() if r["event"] == "ok"]
    assert Counter((r["writer"], r["commit"]) for r in ok) == Counter(
        (w, c) for w in range(writers) for c in range(commits)
    )
    sids = [r["snapshot"] for r in ok]
    assert len(sids) == len(set(sids)), "two commits reported the same snapshot id"
    t = open_table(wh)
    final = t.read()
    assert check_rows(final) == dict.fromkeys(range(writers), commits - 1)
    assert final.num_rows == writers * (commits * rows + 1)
    live_files_unique(t)

    # The reader saw complete snapshots only (check_rows ran on each), ids never going back.
    reads = [r for r in others[2].records() if r["event"] == "read"]
    assert reads, "the reader never read a snapshot"
    stats = Counter(r["event"] for w in everyone for r in w.records())

    # After the storm: compaction and orphan removal keep the same rows.
    t.compact(full=True)
    t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 1000)
    assert t.read().sort_by("k").equals(final.sort_by("k"))
    return {"elapsed": elapsed, "events": dict(stats), "snapshots": t.latest_snapshot().id}


def test_concurrent_writers_compaction_expiration_and_reader(tmp_path: Path) -> None:
    report = run_concurrent(tmp_path, writers=3, commits=12, rows=10, max_seconds=60)
    assert report["events"]["ok"] == 36


@pytest.mark.slow
def test_concurrent_writers_heavy(tmp_path: Path) -> None:
    """4 writer processes x 50 commits, plus compaction, expiration and a checking reader."""
    report = run_concurrent(tmp_path, writers=4, commits=50, rows=20, max_seconds=150)
    print(report)
    assert report["events"]["ok"] == 200


def _one_row(writer: int, commit: int, key: int) -> pa.Table:
    return batch(writer, commit, 1).slice(0, 1).set_column(0, "k", pa.array([key], pa.int64()))


def _prepared(t: Table, rows: pa.Table, overwrite: bool = False) -> list[CommitMessage]:
    w = t.new_write()
    w.ignore_previous_files = overwrite
    w.write(rows)
    return w.prepare_commit()


def _data_files(t: Table) -> set[str]:
    return {p.name for p in Path(t.location).rglob("data-*.parquet")}


def test_same_key_from_two_concurrent_writers_in_one_bucket(tmp_path: Path) -> None:
    """Paimon's contract is one writer per bucket. Without the commit check, two writers of the
    same key got equal sequence numbers and 6 of 10 full compactions changed the visible winner
    (readers ordered the tie by commit, compaction by file name). Now the second commit fails."""
    t = create_table(str(tmp_path / "wh"), bucket="1")
    for i in range(10):
        first, second = t.new_write(), t.new_write()  # both restore the same max sequence number
        first.write(_one_row(0, i, 0))
        second.write(_one_row(1, i, 0))
        m1, m2 = first.prepare_commit(), second.prepare_commit()
        sid = t.new_commit().commit(m1)
        files = _data_files(t)
        with pytest.raises(CommitConflictError, match=r"bucket 0 .*one writer per bucket") as info:
            t.new_commit().commit(m2)
        assert "'k': 0" in str(info.value) and t.identifier in str(info.value)
        assert t.latest_snapshot().id == sid  # nothing of the second commit is visible
        t.delete_uncommitted(m2)  # as TableWrite.commit does on failure
        assert _data_files(t) == files - {f.file_name for m in m2 for f in m.new_files}
        before = t.read().to_pylist()
        assert [(r["k"], r["writer"], r["commit"]) for r in before] == [(0, 0, i)]
        t.compact(full=True)
        assert t.read().to_pylist() == before  # a compaction never changes what readers see
        # The loser retries as a new writer: it restores the winner's numbers and commits on top.
        retry = t.new_write()
        retry.write(_one_row(1, i, 0))
        retry.commit()
        assert [(r["writer"], r["commit"]) for r in t.read().to_pylist()] == [(1, i)]
    live_files_unique(t)


def test_same_key_from_a_writer_that_started_later_is_refused(tmp_path: Path) -> None:
    """The other writer's rows need not tie: any row of the key our writer did not see counts."""
    t = create_table(str(tmp_path / "wh"), bucket="1")
    t.write(batch(0, 0, 3))
    slow = _prepared(t, _one_row(0, 1, 5))  # numbers from 4
    t.write(batch(2, 0, 3))  # an unrelated commit raises the bucket's numbers
    fast = t.new_write()
    fast.write(_one_row(1, 0, 5))
    fast.commit()  # numbered above slow's rows, committed first
    with pytest.raises(CommitConflictError, match="one writer per bucket"):
        t.new_commit().commit(slow)
    t.delete_uncommitted(slow)
    assert t.read().filter(pc.equal(t.read().column("k"), 5)).column("writer").to_pylist() == [1]


def test_concurrent_writers_of_disjoint_keys_in_one_bucket_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Overlapping sequence numbers and key ranges, but no shared key: no false conflict. Key
    columns are read only when the cheap checks (numbers, key ranges) cannot decide."""
    reads: list[str] = []
    real = TableCommit._file_keys

    def counting(self, partition, bucket, f, key_names, keys_read):  # type: ignore[no-untyped-def]
        reads.append(f.file_name)
        return real(self, partition, bucket, f, key_names, keys_read)

    monkeypatch.setattr(TableCommit, "_file_keys", counting)
    t = create_table(str(tmp_path / "wh"), bucket="1")
    t.write(pa.concat_tables([_one_row(9, 0, k) for k in (0, 50, 100)]))
    a = _prepared(t, pa.concat_tables([_one_row(0, 0, k) for k in (10, 30, 50)]))  # 50: an update
    b = _prepared(t, pa.concat_tables([_one_row(1, 0, k) for k in (20, 40, 60)]))
    c = _prepared(t, _one_row(2, 0, 1000))  # key range beyond the others
    t.new_commit().commit(a)
    assert reads == []  # the base file's numbers are all below a's
    t.new_commit().commit(b)
    assert len(reads) == 2  # a's file (same numbers, overlapping range) and b's own, compared exactly
    t.new_commit().commit(c)
    assert len(reads) == 2  # c's key range misses a's and b's files: no I/O
    got = {r["k"]: r["writer"] for r in t.read().to_pylist()}
    assert got == {0: 9, 10: 0, 20: 1, 30: 0, 40: 1, 50: 0, 60: 1, 100: 9, 1000: 2}
    t.compact(full=True)
    assert {r["k"]: r["writer"] for r in t.read().to_pylist()} == got


def test_concurrent_writers_in_different_buckets_or_partitions_commit(tmp_path: Path) -> None:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string())])
    t = cat.create_table(
        "db.p", schema=schema, primary_key=["dt", "k"], partition_keys=["dt"], options={"bucket": "1"}
    )
    t.write(pa.table({"dt": ["a", "b"], "k": [1, 1], "v": ["old", "old"]}))
    a = _prepared(t, pa.table({"dt": ["a"], "k": [1], "v": ["A"]}))
    b = _prepared(t, pa.table({"dt": ["b"], "k": [1], "v": ["B"]}))  # same key, other partition
    t.new_commit().commit(a)
    t.new_commit().commit(b)
    assert sorted((r["dt"], r["v"]) for r in t.read().to_pylist()) == [("a", "A"), ("b", "B")]


def test_concurrent_compaction_is_no_conflict(tmp_path: Path) -> None:
    """A compaction rewrites rows the writer saw (keeping their numbers) and rows of another
    writer's disjoint keys (numbers overlapping ours): the writer's update still commits."""
    t = create_table(str(tmp_path / "wh"), bucket="1")
    for c in range(3):
        t.write(batch(0, c, 5))
    mine = _prepared(t, pa.concat_tables([_one_row(1, 0, 1001), _one_row(1, 0, 2002)]))  # updates
    other = t.new_write()
    other.write(batch(2, 0, 5))  # disjoint keys, numbered like ours
    other.commit()
    assert t.compact(full=True) is not None  # one file: old rows, the updated keys, other's rows
    t.new_commit().commit(mine)
    rows = {r["k"]: r["writer"] for r in t.read().to_pylist()}
    assert rows[1001] == rows[2002] == 1 and rows[2 * KEY_SPAN] == 2
    before = t.read().sort_by("k")
    t.compact(full=True)
    assert t.read().sort_by("k").equals(before)


def test_overwrite_is_no_conflict(tmp_path: Path) -> None:
    """An overwrite replaces the rows a concurrent writer committed; one of another partition
    keeps its rows. Neither is a conflict."""
    t = create_table(str(tmp_path / "wh"), bucket="1")
    t.write(batch(0, 0, 3))
    overwrite = _prepared(t, _one_row(5, 0, 0), overwrite=True)  # numbered from 0
    t.write(pa.concat_tables([_one_row(1, 0, 0), _one_row(1, 0, 7)]))  # same key, concurrently
    t.new_commit().commit(overwrite, overwrite=True)
    assert [(r["k"], r["writer"]) for r in t.read().to_pylist()] == [(0, 5)]
    # Appends after the overwrite restore its numbers: no conflict either.
    t.write(_one_row(6, 0, 0))
    assert [(r["k"], r["writer"]) for r in t.read().to_pylist()] == [(0, 6)]

    cat = stratalake.Catalog(str(tmp_path / "wh"))
    schema = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string())])
    p = cat.create_table(
        "db.p", schema=schema, primary_key=["dt", "k"], partition_keys=["dt"], options={"bucket": "1"}
    )
    p.write(pa.table({"dt": ["a", "b"], "k": [1, 1], "v": ["old", "old"]}))
    ow = _prepared(p, pa.table({"dt": ["a"], "k": [1], "v": ["new"]}), overwrite=True)
    p.write(pa.table({"dt": ["b"], "k": [1], "v": ["B"]}))
    p.new_commit().commit(ow, overwrite=True, overwrite_partitions=[{"dt": "a"}])
    assert sorted((r["dt"], r["v"]) for r in p.read().to_pylist()) == [("a", "new"), ("b", "B")]


def test_append_after_a_concurrent_overwrite_of_the_same_key_is_refused(tmp_path: Path) -> None:
    """The overwrite numbered its rows from 0, overlapping the appender's numbers: the overwrite's
    version of key 2 would win although the append committed after it."""
    t = create_table(str(tmp_path / "wh"), bucket="1")
    t.write(pa.concat_tables([_one_row(0, 0, k) for k in range(3)]))
    append = _prepared(t, _one_row(1, 0, 2))  # numbered from 3
    t.write(
        pa.concat_tables([_one_row(5, 0, k) for k in (0, 1, 3, 4, 5, 2)]), overwrite=True
    )  # key 2: number 5
    with pytest.raises(CommitConflictError, match="one writer per bucket"):
        t.new_commit().commit(append)


def test_composite_and_string_keys_are_compared_exactly(tmp_path: Path) -> None:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("a", pa.string()), ("b", pa.int32()), ("v", pa.string())])
    t = cat.create_table("db.c", schema=schema, primary_key=["a", "b"], options={"bucket": "1"})
    t.write(pa.table({"a": ["m"], "b": [0], "v": ["base"]}))
    x = _prepared(t, pa.table({"a": ["a", "z"], "b": [1, 1], "v": ["x", "x"]}))
    y = _prepared(t, pa.table({"a": ["a", "z"], "b": [2, 1], "v": ["y", "y"]}))  # shares (z, 1)
    z = _prepared(t, pa.table({"a": ["a", "q"], "b": [3, 1], "v": ["z", "z"]}))  # shares nothing
    t.new_commit().commit(x)
    with pytest.raises(CommitConflictError, match=r"'a': 'z', 'b': 1"):
        t.new_commit().commit(y)
    t.new_commit().commit(z)
    assert t.read().num_rows == 5


def test_conflict_is_checked_again_on_retry(tmp_path: Path) -> None:
    """A writer that loses the snapshot race re-checks against what won it."""
    t = create_table(str(tmp_path / "wh"), bucket="1")
    t.write(batch(0, 0, 2))
    mine, theirs = _prepared(t, _one_row(1, 0, 3)), _prepared(t, _one_row(2, 0, 3))
    sm = t.snapshot_manager
    real, calls = sm.try_commit, []

    def racing(snapshot):  # type: ignore[no-untyped-def]
        calls.append(snapshot.id)
        if len(calls) == 1:
            t.new_commit().commit(theirs)  # lands first, with the same key
        return real(snapshot)

    sm.try_commit = racing  # type: ignore[method-assign]
    with pytest.raises(CommitConflictError, match="one writer per bucket"):
        t.new_commit().commit(mine)
    assert len(calls) == 2  # the first attempt lost the race; the retry saw the conflict


def test_stale_committer_cannot_resurrect_an_expired_snapshot_id(tmp_path: Path) -> None:
    """Found by the stress test: a committer whose base snapshot had expired "won" an expired id
    (its file was free again), and its commit vanished below the newer snapshots."""
    t = create_table(str(tmp_path / "wh"), **{"write-only": "true"})  # no auto-expiration
    for c in range(5):
        t.write(batch(0, c, 3))
    stale = t.snapshot(5)
    w = t.new_write()
    w.write(batch(1, 0, 3))
    messages = w.prepare_commit()
    for c in range(5, 8):
        t.write(batch(0, c, 3))
    assert t.expire_snapshots(retain_max=1, retain_min=1, older_than_ms=int(time.time() * 1000)) == 7
    sm = t.snapshot_manager
    real, calls = sm.latest_snapshot, []

    def latest_once_stale(fresh=False):  # type: ignore[no-untyped-def]
        calls.append(1)
        return stale if len(calls) == 1 else real(fresh)

    sm.latest_snapshot = latest_once_stale  # type: ignore[method-assign]
    sid = t.new_commit().commit(messages)
    assert len(calls) >= 2 and sid == 9  # the stale attempt was refused, the retry landed on top
    assert not t.file_io.exists(sm.snapshot_path(6))
    assert check_rows(open_table(str(tmp_path / "wh")).read()) == {0: 7, 1: 0}


def test_snapshot_created_below_newer_ones_is_withdrawn(tmp_path: Path) -> None:
    t = create_table(str(tmp_path / "wh"), **{"write-only": "true"})
    for c in range(4):
        t.write(batch(0, c, 3))
    sm = t.snapshot_manager
    snap3 = t.snapshot(3)
    t.file_io.delete(sm.snapshot_path(3))  # as if 2 and 3 expired and 2 were re-won in a race
    sm.forget(3)
    _rewin(t, 2)
    time.sleep(0.02)  # the evidence is "successor written before this attempt began": make it so
    with pytest.raises(CommitConflictError, match="withdrawn"):
        sm.try_commit(snap3)  # 2 exists, so it is created, but 4 is older than the attempt
    assert not t.file_io.exists(sm.snapshot_path(3))


def test_snapshot_created_below_a_gap_is_withdrawn(tmp_path: Path) -> None:
    """A resurrected id whose successors expired too: the gap above it is the evidence."""
    t = create_table(str(tmp_path / "wh"), **{"write-only": "true"})
    for c in range(5):
        t.write(batch(0, c, 3))
    sm = t.snapshot_manager
    snap3 = t.snapshot(3)
    for sid in (3, 4):  # as if 2, 3 and 4 expired, 2 were re-won and 3 were re-won by a stale committer
        t.file_io.delete(sm.snapshot_path(sid))
        sm.forget(sid)
    _rewin(t, 2)
    with pytest.raises(CommitConflictError, match="withdrawn"):
        sm.try_commit(snap3)
    assert not t.file_io.exists(sm.snapshot_path(3)) and t.file_io.exists(sm.snapshot_path(5))


def _rewin(t: Any, sid: int) -> None:
    """Snapshot ``sid`` as another commit that won the id again after it expired would leave it
    (other bytes: its own commit user), as this process did not read it."""
    import dataclasses

    sm = t.snapshot_manager
    again = dataclasses.replace(sm.snapshot(sid), commit_user="another-writer")
    t.file_io.delete(sm.snapshot_path(sid))
    t.file_io.write_bytes(sm.snapshot_path(sid), again.to_json().encode())


def test_a_commit_whose_base_is_unchanged_does_not_list_the_snapshots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit built on snapshot N-1 that still holds what it read cannot have won an expired
    id (expiration deletes N-1 before N): the check after the create needs no listing; when the
    predecessor holds another commit's bytes, it lists and withdraws."""
    t = create_table(str(tmp_path / "wh"), **{"write-only": "true"})
    for c in range(3):
        t.write(batch(0, c, 3))
    io = t.file_io
    listed: list[str] = []
    real_list = io.list_names
    monkeypatch.setattr(io, "list_names", lambda path, **kw: listed.append(path) or real_list(path, **kw))
    for c in range(3, 7):
        t.write(batch(0, c, 3))
    assert not [p for p in listed if p.endswith("/snapshot")]
    sm = t.snapshot_manager
    snap5 = t.snapshot(5)
    for sid in (5, 6):  # as if 4, 5 and 6 expired (7 is the latest) and 4 were re-won
        io.delete(sm.snapshot_path(sid))
        sm.forget(sid)
    _rewin(t, 4)
    with pytest.raises(CommitConflictError, match="withdrawn"):
        sm.try_commit(snap5)  # 4 exists, so 5 is created; 4 is not what this process read: listed
    assert [p for p in listed if p.endswith("/snapshot")]
    assert not io.exists(sm.snapshot_path(5))


def test_resurrection_check_lists_names_and_stats_one_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check after each create reads no per-file metadata of the snapshot directory: one
    listing of names and, when there is a successor, one status (its time)."""
    t = create_table(str(tmp_path / "wh"), **{"write-only": "true"})
    for c in range(4):
        t.write(batch(0, c, 3))
    sm, io = t.snapshot_manager, t.file_io
    listed: list[str] = []
    stats: list[str] = []
    real_status = io.status
    monkeypatch.setattr(io, "list_status", lambda path: listed.append(path) or [])
    monkeypatch.setattr(io, "status", lambda path: stats.append(path) or real_status(path))
    sm.forget_all()  # no base known to this process: the listing decides
    started = int(time.time() * 1000)
    assert not sm._resurrected(4, started)  # the newest: no successor, nothing stat'ed
    assert not sm._resurrected(3, started - 60_000)  # successor written after the attempt began
    assert sm._resurrected(3, started + 60_000)  # successor written before it
    assert listed == [] and stats == [sm.snapshot_path(4)] * 2


def test_writer_check_meets_a_file_compacted_and_expired_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit's concurrent-writer check reads keys of files live in the snapshot it planned on.
    Another job may compact such a file away and expire it before the read (seen under load in
    test_concurrent_writers_heavy): the plan is stale, so the commit plans again on the newer
    snapshot instead of failing with 'data file ... is missing'."""
    from stratalake.operation.commit import conflicts

    t = create_table(str(tmp_path / "wh"), bucket="1")
    t.write(_one_row(9, 0, 0))  # so that a full compaction rewrites files (one alone is only moved up)
    first, second = t.new_write(), t.new_write()  # both start from the same bucket
    # Key ranges overlap ([1, 3] and [2, 2]), keys do not: the check must read the first's keys.
    first.write(pa.concat_tables([_one_row(0, 0, 1), _one_row(0, 0, 3)]))
    second.write(_one_row(1, 0, 2))
    first_messages = first.prepare_commit()
    second_messages = second.prepare_commit()
    t.new_commit().commit(first_messages)  # the second commit's check must read this file's keys
    first_file = Path(t.location) / "bucket-0" / first_messages[0].new_files[0].file_name
    real_read = conflicts.read_file_keys
    raced: list[int] = []

    def compact_and_expire_first(*args: Any, **kwargs: Any) -> pa.Table:
        if not raced:  # the other jobs run once, between the plan and the read
            raced.append(1)
            other = open_table(str(tmp_path / "wh"))
            other.compact(full=True)
            other.expire_snapshots(retain_max=1, retain_min=1)
            assert not first_file.exists()
        return real_read(*args, **kwargs)

    monkeypatch.setattr(conflicts, "read_file_keys", compact_and_expire_first)
    t.new_commit().commit(second_messages)
    assert raced
    keys = sorted(t.refresh().read().column("k").to_pylist())
    assert {0, 1, 2, 3} <= set(keys)


def test_writer_compaction_after_its_restored_files_were_compacted_and_expired(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer restores a bucket's files, another job compacts them away and expires them, then
    the writer's own compaction finds its inputs gone: the compaction is skipped (it is optional)
    and the data commits. The check that decides so reads the latest snapshot, which may expire
    while it reads (seen under load): it reads the newer snapshot instead of failing."""
    # Two writes leave two sorted runs; the third run (the writer's) triggers its compaction.
    t = create_table(str(tmp_path / "wh"), bucket="1", **{"num-sorted-run.compaction-trigger": "3"})
    t.write(_one_row(9, 0, 0))
    t.write(_one_row(9, 1, 1))
    w = t.new_write()
    w.write(_one_row(0, 0, 2))  # restores the two files at its first write
    other = open_table(str(tmp_path / "wh"))
    other.compact(full=True)
    other.expire_snapshots(retain_max=1, retain_min=1)
    from stratalake.store.table_store import TableStore

    real_live_entries = TableStore.live_entries
    calls: list[int] = []

    def expire_while_read(self: Any, snapshot: Any, where: Any = None) -> Any:
        if not calls:  # once: a newer snapshot appears and this one expires under the reader
            calls.append(1)
            other.write(_one_row(8, 0, 5))
            other.expire_snapshots(retain_max=1, retain_min=1)
            # What a reader without this snapshot's manifests cached meets (this one has them
            # cached from its restore): the manifest list is gone.
            raise FileNotFoundError(snapshot.delta_manifest_list)
        return real_live_entries(self, snapshot, where)

    monkeypatch.setattr(TableStore, "live_entries", expire_while_read)
    w.write(_one_row(0, 1, 3))  # a second sorted run: the writer's compaction is due
    messages = w.prepare_commit()
    monkeypatch.undo()
    assert calls
    t.new_commit().commit(messages)
    assert sorted(t.refresh().read().column("k").to_pylist())[:5] == [0, 1, 2, 3, 5]


@settings(max_examples=300, deadline=None)
@given(
    names=st.lists(
        st.builds(
            lambda head, n, tail: f"{head}{n}{tail}",
            st.sampled_from(["snapshot-", "snapshot-0", ".snapshot-", "EARLIEST", "x"]),
            st.integers(0, 12_000),
            st.sampled_from(["", "", ".tmp", "x"]),
        ),
        max_size=12,
    ),
    snapshot_id=st.integers(0, 12_000),
)
def test_newer_id_check_agrees_with_parsing_every_name(names: list[str], snapshot_id: int) -> None:
    """The per-commit listing check (``_any_id_above``, no regular expression per name) answers
    as parsing every ``snapshot-<n>`` name would."""
    ids = {int(m.group(1)) for n in names if (m := re.match(r"^snapshot-([0-9]+)$", n))}
    assert _any_id_above(sorted(names), snapshot_id) == (bool(ids) and max(ids) > snapshot_id)
