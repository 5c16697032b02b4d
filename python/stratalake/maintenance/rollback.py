"""Rollback: make an older snapshot (or a tag) the latest again, as Paimon's ``rollbackTo``.

Snapshots newer than the target are deleted newest first (so the remaining ids stay contiguous and
a reader never sees a gap), then tags pointing past the target, then the files that only the
deleted snapshots referenced (the same set difference expiration uses). Rolling back to a tag
whose snapshot already expired recreates that snapshot file from the tag; every retained snapshot
is newer than it, so the tag's snapshot becomes the only one.

Rollback is not a commit: run it while nothing else writes to the table.

Example::

    t.rollback_to(3)            # snapshot id
    t.rollback_to("release-1")  # tag name
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stratalake.exceptions import SnapshotNotFoundError
from stratalake.maintenance.expire import delete_files, retained_references
from stratalake.spec.snapshot import Snapshot
from stratalake.store.references import ReferenceCollector

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore


def _target(table: TableStore, version: int | str) -> Snapshot:
    sm = table.snapshot_manager
    text = str(version).strip()
    if text.isdigit():
        return sm.snapshot(int(text))
    snap = table.tag_manager.tag(text)
    path = sm.snapshot_path(snap.id)
    # A tag that outlived its snapshot: recreate the snapshot, it becomes the table's only one.
    if not table.file_io.exists(path) and not table.file_io.try_create_atomic(path, snap.to_json().encode()):
        raise SnapshotNotFoundError(
            f"table {table.identifier}: cannot recreate snapshot {snap.id} of tag '{text}'"
        )
    return snap


def rollback_to(table: TableStore, version: int | str) -> Snapshot:
    """Roll ``table`` back to snapshot id or tag ``version``; returns the new latest snapshot."""
    sm = table.snapshot_manager
    target = _target(table, version)
    newer = [s for s in sm.snapshots() if s.id > target.id]
    newer_tags = [name for name, s in table.tag_manager.tags().items() if s.id > target.id]
    collector = ReferenceCollector(table)
    candidates = collector.snapshots(newer, strict=False)
    candidates.update(collector.snapshots([table.tag_manager.tag(n) for n in newer_tags], strict=False))

    for snap in sorted(newer, key=lambda s: s.id, reverse=True):
        table.file_io.delete_quietly(sm.snapshot_path(snap.id))
        sm.forget(snap.id)
    sm.commit_hint("LATEST", target.id)
    earliest = sm.earliest_snapshot_id()
    if earliest is None or earliest > target.id:
        sm.commit_hint("EARLIEST", target.id)
    for name in newer_tags:
        table.tag_manager.delete_file(name)

    keep = retained_references(table)
    delete_files(table, candidates.minus(keep))
    return target
