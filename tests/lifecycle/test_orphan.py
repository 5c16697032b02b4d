"""Orphan-file removal: only unreferenced files, only old ones."""

from __future__ import annotations

import os
import time
from pathlib import Path

from stratalake.maintenance.tags import read_tag
from tests.lifecycle.helpers import batch, disk_files, fresh, make_table, needed_files, rows


def _age_everything(root: Path, seconds: float) -> None:
    old = time.time() - seconds
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            os.utime(os.path.join(dirpath, f), (old, old))


def test_remove_orphan_files(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch(range(10), "a"))
    t.write(batch(range(5), "b", dt="d2"))
    t.write(batch(range(3), "c"), overwrite=True)
    t.create_tag("keep", snapshot_id=1)
    root = Path(t.location)
    t.expire_snapshots(retain_max=1, retain_min=1)  # snapshot 1's files now live on through the tag
    expected = {s.id: rows(t.read(snapshot_id=s.id)) for s in t.snapshots()}
    tagged = rows(read_tag(t, "keep"))

    # Orphans: files of a writer that never committed, a stray manifest, temp files.
    w = t.new_write()
    w.write(batch(range(100, 104), "z", dt="d3"))
    uncommitted = {
        str(root / "dt=d3" / f"bucket-{m.bucket}" / f.file_name)
        for m in w.prepare_commit()
        for f in m.new_files
    }
    stray_manifest = root / "manifest" / "manifest-00000000-dead-beef-0000-000000000000-0"
    stray_manifest.write_bytes(b"junk")
    temp_snapshot = root / "snapshot" / ".snapshot-9.0123abcd.tmp"
    temp_snapshot.write_bytes(b"{}")
    orphans = {*uncommitted, str(stray_manifest), str(temp_snapshot)}
    unneeded = disk_files(t) - needed_files(t, [*t.snapshots(), *t.tags().values()])
    assert {str(root / p) for p in unneeded} == orphans - {str(temp_snapshot)}
    # Young files are never touched (a writer may still commit them).
    assert t.remove_orphan_files() == []

    _age_everything(root, 2 * 86_400)
    assert t.remove_orphan_files(dry_run=True) == sorted(orphans)
    assert all(Path(p).exists() for p in orphans)
    assert t.remove_orphan_files() == sorted(orphans)
    assert not any(Path(p).exists() for p in orphans)

    t = fresh(t)
    assert disk_files(t) == needed_files(t, [*t.snapshots(), *t.tags().values()])
    for sid, r in expected.items():
        assert rows(t.read(snapshot_id=sid)) == r
    assert rows(read_tag(t, "keep")) == tagged
    assert t.remove_orphan_files() == []


def test_unreadable_metadata_stops_orphan_removal(tmp_path: Path) -> None:
    import pytest

    from stratalake.exceptions import CorruptFileError

    t = make_table(tmp_path)
    t.write(batch(range(4), "a"))
    t.write(batch(range(4), "b"))
    snap = t.latest_snapshot()
    assert snap is not None
    root = Path(t.location)
    (root / "manifest" / snap.delta_manifest_list).unlink()
    fresh(t)
    _age_everything(root, 2 * 86_400)
    files = disk_files(t)
    with pytest.raises(CorruptFileError, match="nothing was deleted"):
        t.remove_orphan_files()
    assert disk_files(t) == files
