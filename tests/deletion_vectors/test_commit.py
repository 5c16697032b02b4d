"""Commits, conflicts and the lifecycle of deletion-vector index files."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from stratalake.exceptions import CommitConflictError
from stratalake.operation.compact import plan
from stratalake.spec.snapshot import CommitKind
from stratalake.table.compaction import compact, run_task
from tests.deletion_vectors.helpers import batch, dv_entries, rows, with_vectors


def index_files(t: object) -> set[str]:
    directory = Path(t.location) / "index"  # type: ignore[attr-defined]
    return set(os.listdir(directory)) if directory.exists() else set()


def test_index_manifest_carries_over_and_changes_with_vectors(tmp_path: Path) -> None:
    t = with_vectors(tmp_path)
    snaps = {s.id: s for s in t.snapshots()}
    kinds = [s.commit_kind for s in snaps.values()]
    assert kinds == [CommitKind.APPEND, CommitKind.COMPACT] * 3
    assert snaps[2].index_manifest is None  # the first load went straight to the top level
    assert snaps[4].index_manifest is not None  # the second commit masked rows of that file
    assert snaps[5].index_manifest == snaps[4].index_manifest  # an APPEND carries it over
    # The third commit masked more rows: the bucket's index file was replaced (copy-on-write).
    before, after = dv_entries(t, 4), dv_entries(t, 6)
    assert {e.file_name for e in after}.isdisjoint({e.file_name for e in before})
    assert sum(r.cardinality or 0 for e in after for r in e.dv_ranges or ()) > sum(
        r.cardinality or 0 for e in before for r in e.dv_ranges or ()
    )


def test_concurrent_compactions_fail_cleanly(tmp_path: Path) -> None:
    t = with_vectors(tmp_path, **{"write-only": "true"})
    first = [m for m in (run_task(t, task) for task in plan(t)) if m is not None]
    second = [m for m in (run_task(t, task) for task in plan(t)) if m is not None]
    t.new_commit().commit(first)
    snapshot = t.latest_snapshot()
    expected_rows = rows(t)
    with pytest.raises(CommitConflictError):
        t.new_commit().commit(second)
    assert t.latest_snapshot() == snapshot and rows(t) == expected_rows


def test_stale_deletion_vector_base_is_a_conflict(tmp_path: Path) -> None:
    """A compaction whose vectors were read from index files no longer live must not commit,
    even when its data files are all still there."""
    t = with_vectors(tmp_path, **{"write-only": "true"})
    (msg,) = compact(t)
    stale = dataclasses.replace(msg, index_base=("index-gone-0",))
    with pytest.raises(CommitConflictError, match="deletion vectors"):
        t.new_commit().commit([stale])
    t.delete_uncommitted([stale])
    assert rows(t) == []  # nothing compacted: level 0 stays invisible


def test_overwrite_drops_vectors_of_replaced_files(tmp_path: Path) -> None:
    t = with_vectors(tmp_path)
    assert dv_entries(t)
    t.write(batch([1, 2], "o"), overwrite=True)
    assert dv_entries(t) == []
    assert rows(t) == [(1, "o1", 1), (2, "o2", 1)]


def test_expiration_and_orphan_removal_keep_referenced_index_files(tmp_path: Path) -> None:
    t = with_vectors(tmp_path)
    live = {e.file_name for e in dv_entries(t)}
    assert live and live <= index_files(t)
    t.compact(full=True)  # vectors applied: the index file is only referenced by old snapshots
    assert dv_entries(t) == []
    assert t.remove_orphan_files(older_than_ms=2**62) == []
    assert live <= index_files(t)
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert index_files(t) == set()  # no snapshot references it any more
    assert rows(t) == sorted(set(rows(t)))


def test_orphan_removal_deletes_unreferenced_index_files(tmp_path: Path) -> None:
    t = with_vectors(tmp_path)
    (Path(t.location) / "index" / "index-orphan-0").write_bytes(b"\x01")
    removed = t.remove_orphan_files(older_than_ms=2**62)
    assert [os.path.basename(p) for p in removed] == ["index-orphan-0"]
    assert {e.file_name for e in dv_entries(t)} <= index_files(t)
    assert len(rows(t)) > 0


def test_expiration_keeps_index_files_of_retained_snapshots(tmp_path: Path) -> None:
    t = with_vectors(tmp_path)
    live = {e.file_name for e in dv_entries(t)}
    t.write(batch([3000 + 5], "z"))
    t.expire_snapshots(retain_max=1, retain_min=1)
    now = {e.file_name for e in dv_entries(t)}
    assert now <= index_files(t)
    assert (live - now).isdisjoint(index_files(t))  # replaced and unreferenced: deleted
    assert (3005, "z3005", 1) in rows(t)
