"""Optimistic commits: lost races retry, conflicting deletes fail cleanly, retries are idempotent."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.exceptions import CommitConflictError
from stratalake.operation.commit import CommitMessage

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def table(tmp_path: Path) -> stratalake.Table:
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    return cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2"})


def _messages(t: stratalake.Table, ids: list[int]) -> list[CommitMessage]:
    w = t.new_write()
    w.write(pa.table({"id": ids, "v": [str(i) for i in ids]}))
    return w.prepare_commit()


def test_concurrent_appends_both_land(table: stratalake.Table, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _messages(table, [1, 2]), _messages(table, [3, 4])
    sm = table.snapshot_manager
    real = sm.try_commit
    calls = {"n": 0}

    def racing(snapshot):  # type: ignore[no-untyped-def]
        # The first attempt of writer A loses: writer B commits in between.
        calls["n"] += 1
        if calls["n"] == 1:
            table.new_commit().commit(b)
        return real(snapshot)

    monkeypatch.setattr(sm, "try_commit", racing)
    sid = table.new_commit().commit(a)
    assert sid == 2
    assert sorted(table.read().column("id").to_pylist()) == [1, 2, 3, 4]
    assert table.latest_snapshot().total_record_count == 4
    # The loser's stale manifest lists were removed.
    lists = {p.name for p in (Path(table.location) / "manifest").glob("manifest-list-*")}
    referenced = set()
    for s in table.snapshots():
        referenced |= {s.base_manifest_list, s.delta_manifest_list}
    assert lists == referenced


def test_deleting_an_already_deleted_file_conflicts(table: stratalake.Table) -> None:
    table.new_commit().commit(_messages(table, [1, 2, 3]))
    entry = table.live_entries(table.latest_snapshot())[0]
    msg = CommitMessage(entry.partition, entry.bucket, entry.total_buckets, compact_before=(entry.file,))
    table.new_commit().commit([msg])  # first "compaction" removes it
    before = table.latest_snapshot().id
    with pytest.raises(CommitConflictError, match="already removed"):
        table.new_commit().commit([msg])
    assert table.latest_snapshot().id == before


def test_streaming_commit_identifier_is_idempotent(table: stratalake.Table) -> None:
    msgs = _messages(table, [1])
    c = table.new_commit(commit_user="query-1")
    assert c.commit(msgs, commit_identifier=7) == 1
    assert table.new_commit(commit_user="query-1").commit(msgs, commit_identifier=7) == 1
    assert len(table.snapshots()) == 1
    assert table.new_commit(commit_user="query-1").commit(_messages(table, [2]), commit_identifier=8) == 2


def test_manifests_are_merged_to_keep_scans_bounded(table: stratalake.Table) -> None:
    for i in range(35):
        table.write(pa.table({"id": [i], "v": ["x"]}))
    snap = table.latest_snapshot()
    base = table.manifest_io.read_list(snap.base_manifest_list)
    assert len(base) < 30
    assert table.read().num_rows == 35
