"""Defense in depth at commit: messages that would break a bucket's sorted runs are refused, the
exactly-once check fails closed, and tables broken by older versions are read, written and
repaired by a full compaction."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import stratalake
from stratalake.exceptions import CommitConflictError
from stratalake.lsm.levels import key_decoder, overlapping_levels
from stratalake.merge import SEQUENCE_NUMBER, VALUE_KIND
from stratalake.operation.commit import CommitMessage, InvalidCommitError, conflicts
from stratalake.operation.compact import bucket_files, plan
from stratalake.table.compaction import run_task

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _table(tmp_path: Path, buckets: int = 2, **options: str) -> stratalake.Table:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table(
        "db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": str(buckets), **options}
    )


def _rows(ids: range | list[int], tag: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]})


def _prepared(t: stratalake.Table, rows: pa.Table) -> list[CommitMessage]:
    w = t.new_write()
    w.write(rows)
    return w.prepare_commit()


def _read(t: stratalake.Table) -> dict[int, str]:
    out = t.read()
    return dict(zip(out.column("id").to_pylist(), out.column("v").to_pylist(), strict=True))


def _bypass_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the committer accepted before these checks existed."""
    monkeypatch.setattr(conflicts, "check_messages", lambda *_a: None)
    monkeypatch.setattr(conflicts, "check_sorted_runs", lambda *_a: None)


def _files_by_bucket(t: stratalake.Table) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for e in t.live_entries(t.latest_snapshot()):
        out.setdefault(e.bucket, []).append(e.file)
    return out


def _kv(ids: list[int], tag: str, seq: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "v": [f"{tag}{i}" for i in ids],
            SEQUENCE_NUMBER: pa.array(seq, pa.int64()),
            VALUE_KIND: pa.array([0] * len(ids), pa.int8()),
        }
    )


# -- refused commits --------------------------------------------------------------------------------
def test_two_writers_compacting_one_bucket_are_refused(tmp_path: Path) -> None:
    """The reported bug: several Spark tasks wrote the same buckets and each compacted them fully
    (including the same old files) into the top level, in one commit."""
    t = _table(tmp_path, **{"full-compaction.delta-commits": "1"})
    t.new_commit().commit(_prepared(t, _rows(range(100), "a")))
    before = t.latest_snapshot().id
    msgs = _prepared(t, _rows(range(100, 150), "b")) + _prepared(t, _rows(range(150, 200), "c"))
    assert all(m.compact_before for m in msgs)
    with pytest.raises(InvalidCommitError, match=r"compacted away twice .* one writer per bucket"):
        t.new_commit().commit(msgs)
    t.delete_uncommitted(msgs)  # what every caller does on failure
    assert t.latest_snapshot().id == before
    assert _read(t) == {i: f"a{i}" for i in range(100)}
    assert t.remove_orphan_files(older_than_ms=2**62) == []  # nothing left behind


def test_two_compacting_messages_for_one_bucket_are_refused(tmp_path: Path) -> None:
    t = _table(tmp_path, buckets=1)
    t.new_commit().commit(_prepared(t, _rows(range(10), "a")))
    t.new_commit().commit(_prepared(t, _rows(range(10, 20), "b")))
    (task,) = plan(t)
    first, second = task.files
    a = run_task(t, replace(task, files=(first,)), full=True)
    b = run_task(t, replace(task, files=(second,)), full=True)
    assert a is not None and b is not None
    with pytest.raises(InvalidCommitError, match="two writers of this commit compacted the same bucket"):
        t.new_commit().commit([a, b])
    t.delete_uncommitted([a, b])
    assert len(t.snapshots()) == 2


def test_overlapping_files_at_a_level_are_refused_with_their_key_ranges(tmp_path: Path) -> None:
    t = _table(tmp_path, buckets=1)
    t.new_commit().commit(_prepared(t, _rows(range(5), "a")))
    files = bucket_files(t, (), 0)
    f1 = files.write(_kv([10, 11, 12], "x", [100, 101, 102]), level=5)
    f2 = files.write(_kv([12, 13], "y", [103, 104]), level=5)
    partition = t.partition_codec.to_bytes(())
    msg = CommitMessage(partition, 0, 1, new_files=f1 + f2)
    with pytest.raises(InvalidCommitError) as err:
        t.new_commit().commit([msg])
    text = str(err.value)
    assert "db.t" in text and "bucket 0" in text and "level 5" in text
    assert f1[0].file_name in text and f2[0].file_name in text
    assert "(12,)" in text and "(10,)..(12,)" in text
    t.delete_uncommitted([msg])
    assert len(t.snapshots()) == 1 and _read(t) == {i: f"a{i}" for i in range(5)}
    # Disjoint files at a level are fine.
    ok = CommitMessage(partition, 0, 1, new_files=files.write(_kv([20, 21], "z", [200, 201]), level=5))
    t.new_commit().commit([ok])
    assert _read(t)[21] == "z21"
    # So is a file overlapping the live run of level 5 only if it is the one it replaces.
    live5 = [f for f in _files_by_bucket(t)[0] if f.level == 5]
    bad = CommitMessage(partition, 0, 1, new_files=files.write(_kv([21, 22], "w", [300, 301]), level=5))
    with pytest.raises(InvalidCommitError, match=live5[0].file_name):
        t.new_commit().commit([bad])
    t.delete_uncommitted([bad])


def test_a_duplicated_message_set_is_refused(tmp_path: Path) -> None:
    """A retried or speculative task's output passed twice (Spark passes one message per task;
    this is the backstop): the same file would be added twice."""
    t = _table(tmp_path)
    msgs = _prepared(t, _rows(range(50), "a"))
    with pytest.raises(InvalidCommitError, match="added twice"):
        t.new_commit().commit(msgs + msgs)
    assert t.latest_snapshot() is None
    t.new_commit().commit(msgs)  # the same messages once commit normally
    assert _read(t) == {i: f"a{i}" for i in range(50)}


def test_a_writers_lost_compaction_is_still_dropped_not_refused(tmp_path: Path) -> None:
    """Deleting a file that is no longer live stays a race: the data commits, the compaction goes."""
    t = _table(tmp_path, buckets=1, **{"num-sorted-run.compaction-trigger": "2"})
    t.new_commit().commit(_prepared(t, _rows(range(10), "a")))
    w = t.new_write()
    w.write(_rows(range(5, 15), "b"))
    t.compact(full=True)  # replaces the file w restored
    msgs = w.prepare_commit()
    assert any(m.compact_before for m in msgs)
    t.new_commit().commit(msgs)
    assert _read(t) == {**{i: f"a{i}" for i in range(5)}, **{i: f"b{i}" for i in range(5, 15)}}


# -- exactly-once check fails closed ---------------------------------------------------------------
def test_unreadable_snapshot_fails_the_exactly_once_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(tmp_path)
    user = "streaming-job"
    t.new_commit(user).commit(_prepared(t, _rows(range(10), "a")), commit_identifier=1)
    t.new_commit().commit(_prepared(t, _rows(range(10, 20), "b")))  # another user's, on top
    sm = t.snapshot_manager
    sm._cache.clear()
    real = sm.file_io.read_text
    broken = sm.snapshot_path(1)

    def flaky(path: str) -> str:
        if path == broken:
            raise OSError("simulated I/O error")
        return real(path)

    monkeypatch.setattr(sm.file_io, "read_text", flaky)
    replay = _prepared(t, _rows(range(10), "a"))
    with pytest.raises(CommitConflictError, match=r"cannot tell whether .* identifier 1.*simulated"):
        t.new_commit(user).commit(replay, commit_identifier=1)
    with pytest.raises(CommitConflictError, match="cannot tell"):
        t.new_commit(user).committed_snapshot(1)
    assert sm.latest_snapshot_id() == 2  # nothing committed
    monkeypatch.setattr(sm.file_io, "read_text", real)
    assert t.new_commit(user).commit(replay, commit_identifier=1) == 1  # recognised once readable
    t.delete_uncommitted(replay)
    assert len(t.snapshots()) == 2


def test_expired_snapshots_end_the_exactly_once_search(tmp_path: Path) -> None:
    t = _table(tmp_path)
    user = "streaming-job"
    for i in range(1, 4):
        t.new_commit(user).commit(_prepared(t, _rows([i], "a")), commit_identifier=i)
    t.expire_snapshots(retain_max=1, retain_min=1)
    commit = t.new_commit(user)
    assert commit.committed_snapshot(3) == 3
    assert commit.committed_snapshot(1) is None  # expired: not found, no error
    assert t.new_commit(user).committed_snapshot(4) is None


# -- tables broken by older versions --------------------------------------------------------------
def _broken_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **options: str
) -> tuple[stratalake.Table, dict[int, str]]:
    """Two compactions of every bucket, each from its own view (the old top-level file plus one
    writer's new file), committed together as older versions did: every bucket ends with two
    overlapping files at level 5 that both hold the old rows."""
    t = _table(tmp_path, **options)
    model: dict[int, str] = {}
    t.new_commit().commit(_prepared(t, _rows(range(200), "a")))
    model.update({i: f"a{i}" for i in range(200)})
    t.compact(full=True)
    updates_b = _rows(list(range(50, 60)) + list(range(200, 260)), "b")
    updates_c = _rows(list(range(120, 130)) + list(range(260, 300)), "c")
    t.new_commit().commit(_prepared(t, updates_b))
    first = {f.file_name for fs in _files_by_bucket(t).values() for f in fs if f.level == 0}
    t.new_commit().commit(_prepared(t, updates_c))
    for rows in (updates_b, updates_c):
        model.update(zip(rows.column("id").to_pylist(), rows.column("v").to_pylist(), strict=True))
    msgs = []
    for task in plan(t):
        top = tuple(f for f in task.files if f.level > 0)
        mine_b = tuple(f for f in task.files if f.file_name in first)
        mine_c = tuple(f for f in task.files if f.level == 0 and f.file_name not in first)
        for view in (top + mine_b, top + mine_c):
            m = run_task(t, replace(task, files=view), full=True)
            assert m is not None
            msgs.append(m)
    with pytest.raises(InvalidCommitError):
        t.new_commit().commit(msgs)
    with monkeypatch.context() as m:
        _bypass_checks(m)
        t.new_commit().commit(msgs)
    key_of = key_decoder(t.schema())
    for files in _files_by_bucket(t).values():
        assert {f.level for f in files} == {5} and len(files) == 2
        assert list(overlapping_levels(files, key_of)) == [5]
    return t, model


@pytest.mark.parametrize("options", [{}, {"changelog-producer": "lookup"}], ids=["default", "lookup"])
def test_broken_table_reads_writes_and_is_repaired_by_full_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, options: dict[str, str]
) -> None:
    t, model = _broken_table(tmp_path, monkeypatch, **options)
    assert _read(t) == model
    assert t.read().num_rows == len(model)
    # Writers restore such buckets (their levels become several runs) and commit.
    more = _rows(list(range(40, 45)) + list(range(300, 320)), "d")
    t.new_commit().commit(_prepared(t, more))
    model.update(zip(more.column("id").to_pylist(), more.column("v").to_pylist(), strict=True))
    assert _read(t) == model
    # A minor compaction keeps working too (it may leave the level as it was).
    t.compact(full=False)
    assert _read(t) == model
    with caplog.at_level(logging.WARNING, logger="stratalake.operation.compact"):
        t.compact(full=True)
    assert "overlapping files at level 5" in caplog.text and "repairs" in caplog.text
    key_of = key_decoder(t.schema())
    for files in _files_by_bucket(t).values():
        assert {f.level for f in files} == {5}
        assert overlapping_levels(files, key_of) == {}
    assert _read(t) == model
    assert t.read().num_rows == len(model)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="stratalake.operation.compact"):
        t.compact(full=True)
    assert "overlapping" not in caplog.text
    pytest.importorskip("pypaimon")
    from tests.interop.paimon_oracle import paimon_read

    theirs = paimon_read(tmp_path / "wh", "db.t")
    assert dict(zip(theirs.column("id").to_pylist(), theirs.column("v").to_pylist(), strict=True)) == model


def test_deletion_vector_table_with_overlapping_level_is_merged_on_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deletion-vector tables read level >= 1 files one by one without merging; a bucket whose
    level overlaps (copies of the same rows) must be merged instead."""
    t = _table(tmp_path, buckets=1, **{"deletion-vectors.enabled": "true"})
    t.new_commit().commit(_prepared(t, _rows(range(5), "a")))
    files = bucket_files(t, (), 0)
    f1 = files.write(_kv([10, 11, 12], "x", [100, 101, 102]), level=5)
    f2 = files.write(_kv([11, 12, 13], "y", [100, 103, 104]), level=5)  # 11: a copy; 12: newer
    msg = CommitMessage(t.partition_codec.to_bytes(()), 0, 1, new_files=f1 + f2)
    with monkeypatch.context() as m:
        _bypass_checks(m)
        t.new_commit().commit([msg])
    out = t.read().sort_by("id")
    assert out.column("id").to_pylist() == [0, 1, 2, 3, 4, 10, 11, 12, 13]
    assert pc.equal(out.column("id"), 12).to_pylist().index(True) == 7
    assert out.column("v").to_pylist()[7] == "y12"
    t.compact(full=True)
    assert t.read().sort_by("id").column("v").to_pylist()[5:] == ["x10", "x11", "y12", "y13"]
