"""Snapshot expiration: what stays readable, what is deleted, crash safety, the commit hook."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from stratalake.exceptions import InvalidOptionError, SnapshotNotFoundError
from stratalake.table import Table
from tests.lifecycle.helpers import batch, build_history, disk_files, fresh, make_table, needed_files, rows


def _earliest_hint(t: Table) -> str:
    return (Path(t.location) / "snapshot" / "EARLIEST").read_text()


def test_expire_keeps_exactly_the_retained_snapshots(tmp_path: Path) -> None:
    t = make_table(tmp_path, **{"manifest.merge-min-count": "3"})
    build_history(t)
    before = {s.id: rows(t.read(snapshot_id=s.id)) for s in t.snapshots()}
    assert disk_files(t) == needed_files(t, t.snapshots())  # nothing unreferenced to begin with

    assert t.expire_snapshots(retain_max=3, retain_min=1) == 4
    t = fresh(t)
    assert [s.id for s in t.snapshots()] == [5, 6, 7]
    assert _earliest_hint(t) == "5"
    for sid in (5, 6, 7):
        assert rows(t.read(snapshot_id=sid)) == before[sid]
    for sid in (1, 4):
        with pytest.raises(SnapshotNotFoundError, match="expired"):
            t.read(snapshot_id=sid)
    assert disk_files(t) == needed_files(t, t.snapshots())

    assert t.expire_snapshots(retain_max=1, retain_min=1) == 2
    t = fresh(t)
    assert [s.id for s in t.snapshots()] == [7]
    assert rows(t.read()) == before[7]
    assert disk_files(t) == needed_files(t, t.snapshots())
    assert t.expire_snapshots(retain_max=1, retain_min=1) == 0


def test_retain_min_and_age_bound(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    for i in range(5):
        t.write(batch([i], "a"))
        time.sleep(0.003)
    times = {s.id: s.time_millis for s in t.snapshots()}
    # Default retention (1 h, and at least 10 snapshots): nothing expires.
    assert t.expire_snapshots() == 0
    assert t.expire_snapshots(retain_min=1) == 0
    # A snapshot expires once its successor is older than the bound: 1 goes, 2 is still
    # the current snapshot at time(3) - 1 ms.
    assert t.expire_snapshots(retain_min=1, older_than_ms=times[3]) == 1
    assert t.expire_snapshots(retain_min=1, older_than_ms=times[4]) == 1  # now 2 goes as well
    assert [s.id for s in t.snapshots()] == [3, 4, 5]
    # retain_min wins over any age.
    assert t.expire_snapshots(retain_min=2, older_than_ms=times[5] + 10_000) == 1
    assert [s.id for s in t.snapshots()] == [4, 5]
    assert disk_files(t) == needed_files(t, t.snapshots())


def test_max_deletes_bounds_one_run(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    for i in range(6):
        t.write(batch([i], "a"))
    assert t.expire_snapshots(retain_max=1, retain_min=1, max_deletes=2) == 2
    assert t.expire_snapshots(retain_max=1, retain_min=1, max_deletes=2) == 2
    assert t.expire_snapshots(retain_max=1, retain_min=1, max_deletes=2) == 1
    assert [s.id for s in t.snapshots()] == [6]


def test_invalid_retention_is_rejected(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([1], "a"))
    with pytest.raises(InvalidOptionError, match=r"num-retained\.min"):
        t.expire_snapshots(retain_min=0)
    with pytest.raises(InvalidOptionError, match="must not be less"):
        t.expire_snapshots(retain_max=2, retain_min=3)


def test_commit_expires_per_table_options(tmp_path: Path) -> None:
    t = make_table(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"})
    expected = []
    for i in range(5):
        t.write(batch([i], "a"))
        expected.append((i, f"a{i}", "d1"))
    assert [s.id for s in t.snapshots()] == [4, 5]
    assert _earliest_hint(t) == "4"
    assert rows(fresh(t).read()) == expected
    assert disk_files(t) == needed_files(t, t.snapshots())


def test_commit_expires_by_age(tmp_path: Path) -> None:
    t = make_table(tmp_path, **{"snapshot.num-retained.min": "2", "snapshot.time-retained": "1 ms"})
    for i in range(5):
        t.write(batch([i], "a"))
        time.sleep(0.005)
    assert [s.id for s in t.snapshots()] == [4, 5]


def test_write_only_skips_expiration(tmp_path: Path) -> None:
    opts = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1", "write-only": "true"}
    t = make_table(tmp_path, **opts)
    for i in range(3):
        t.write(batch([i], "a"))
    assert len(t.snapshots()) == 3


class _Crash(BaseException):
    pass


@pytest.mark.parametrize("crash_after", [0, 2, 4, 7, 12, 25])
def test_crash_mid_expiration_leaves_every_visible_snapshot_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_after: int
) -> None:
    t = make_table(tmp_path, **{"manifest.merge-min-count": "3"})
    build_history(t)
    before = {s.id: rows(t.read(snapshot_id=s.id)) for s in t.snapshots()}
    real = t.file_io.delete_quietly
    calls = 0

    def crashing(path: str) -> bool:
        nonlocal calls
        if calls >= crash_after:
            raise _Crash(path)
        calls += 1
        return real(path)

    monkeypatch.setattr(t.file_io, "delete_quietly", crashing)
    with pytest.raises(_Crash):
        t.expire_snapshots(retain_max=2, retain_min=1)
    monkeypatch.undo()

    t = fresh(t)
    ids = [s.id for s in t.snapshots()]
    assert ids == list(range(ids[0], 8))  # contiguous, the newest two always kept
    assert ids[0] <= 6
    for sid in ids:
        assert rows(t.read(snapshot_id=sid)) == before[sid]
    # Running again finishes the job; orphan removal reclaims what the crash left behind.
    t.expire_snapshots(retain_max=2, retain_min=1)
    t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    t = fresh(t)
    assert [s.id for s in t.snapshots()] == [6, 7]
    assert disk_files(t) == needed_files(t, t.snapshots())
    assert rows(t.read()) == before[7]


@pytest.mark.parametrize("producer", ["none", "input", "lookup"])
def test_expiration_with_compaction_and_changelog_files(tmp_path: Path, producer: str) -> None:
    # Writers compact after 3 sorted runs: COMPACT snapshots delete files and (lookup) add changelogs.
    t = make_table(tmp_path, **{"changelog-producer": producer, "num-sorted-run.compaction-trigger": "3"})
    for i in range(8):
        t.write(batch(range(i, i + 6), f"w{i}-"))
    t.compact(full=True)
    t.write(batch([0, 1], "x", kinds=["-D", "-D"]), row_kind="k")
    kinds = {s.commit_kind.value for s in t.snapshots()}
    assert kinds == {"APPEND", "COMPACT"}
    before = {s.id: rows(t.read(snapshot_id=s.id)) for s in t.snapshots()}
    latest = max(before)
    expected_cl = t.changelog(latest - 3, latest).to_pylist()
    assert disk_files(t) == needed_files(t, t.snapshots())

    assert t.expire_snapshots(retain_max=3, retain_min=1) == latest - 3
    t = fresh(t)
    assert [s.id for s in t.snapshots()] == [latest - 2, latest - 1, latest]
    for s in t.snapshots():
        assert rows(t.read(snapshot_id=s.id)) == before[s.id]
    assert t.changelog().to_pylist() == t.changelog(latest - 3, latest).to_pylist()
    assert t.changelog(latest - 3).to_pylist() == expected_cl
    assert disk_files(t) == needed_files(t, t.snapshots())
