"""Tags: named snapshots (``tag/tag-<name>``, a copy of the snapshot JSON) that outlive expiration.

A tag keeps every file its snapshot references: expiration and orphan removal treat tags as
retained snapshots. Deleting a tag deletes the files only it still referenced.

Example::

    t.create_tag("release-1")            # the latest snapshot
    t.create_tag("daily", time_retained="1 d")   # deleted by the first commit a day later
    t.expire_snapshots(retain_max=1)     # the tag's files survive
    tags.read_tag(t, "release-1")
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from stratalake.exceptions import (
    InvalidOptionError,
    SnapshotNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
)
from stratalake.expressions import FilterLike
from stratalake.maintenance.expire import delete_files, retained_references
from stratalake.read import new_read
from stratalake.read.scan import TableScan
from stratalake.spec.snapshot import Snapshot
from stratalake.store.references import ReferenceCollector
from stratalake.store.tag_manager import TAG_FILE_RE, check_tag_name, parse_time_retained

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

#: Paimon's table option: the retention of tags created without one.
DEFAULT_TIME_RETAINED = "tag.default-time-retained"


def _check_name(table: TableStore, name: str) -> None:
    """The rules for a new tag: :func:`check_tag_name`, and no control characters or numbers."""
    check_tag_name(name, table.identifier)
    # Numeric names would be ambiguous with snapshot ids in time travel (VERSION AS OF).
    if name.isdigit() or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise InvalidOptionError(
            f"table {table.identifier}: {name!r} is not a valid tag name; use a non-blank name "
            "without '/', '\\' or control characters that is not a number"
        )


def _source_snapshot(table: TableStore, snapshot_id: int | None) -> Snapshot:
    """The snapshot a new tag points at: the latest, snapshot ``snapshot_id``, or, once that
    expired, a tag's copy of it (as Paimon's ``createTag``: tags keep their snapshot's files)."""
    sm = table.snapshot_manager
    if snapshot_id is None:
        snap = sm.latest_snapshot()
        if snap is None:
            raise SnapshotNotFoundError(f"table {table.identifier}: cannot tag an empty table (no snapshot)")
        return snap
    try:
        return sm.snapshot(snapshot_id)
    except SnapshotNotFoundError:
        for tagged in table.tag_manager.tagged_snapshots():
            if tagged.id == snapshot_id:
                return tagged
        raise


def _check_still_held(table: TableStore, name: str, snap: Snapshot) -> None:
    """Expiration deletes a snapshot's file before its data files and re-reads the tags in between.
    If the snapshot (or another tag of it) is still there now, that re-read sees tag ``name``;
    if not, the files may be going away, so the tag must not stay."""
    if table.file_io.exists(table.snapshot_manager.snapshot_path(snap.id)):
        return
    if any(s.id == snap.id for n, s in table.tag_manager.tags().items() if n != name):
        return
    table.tag_manager.delete_file(name)
    raise SnapshotNotFoundError(
        f"table {table.identifier}: snapshot {snap.id} expired while tag '{name}' was being written"
    )


def create_tag(
    table: TableStore,
    name: str,
    snapshot_id: int | None = None,
    time_retained: str | datetime.timedelta | None = None,
) -> Snapshot:
    """Tag ``snapshot_id`` (default: the latest snapshot) as ``name``; returns the snapshot.

    With ``time_retained`` (a ``timedelta`` or a duration such as '1 d', '12 h') the tag expires
    that long after its creation: the first commit after that deletes it (:func:`expire_tags`).
    Without it, the table's ``tag.default-time-retained`` applies, as in Paimon's ``createTag``.
    """
    _check_name(table, name)
    if time_retained is None:
        time_retained = table.core_options.get(DEFAULT_TIME_RETAINED) or None
    retained = None if time_retained is None else parse_time_retained(time_retained, table.identifier)
    snap = _source_snapshot(table, snapshot_id)
    if not table.tag_manager.write(name, snap, create_time=datetime.datetime.now(), time_retained=retained):
        raise TagAlreadyExistsError(
            f"table {table.identifier}: tag '{name}' already exists; delete it first or pick another name"
        )
    _check_still_held(table, name, snap)
    return snap


def replace_tag(
    table: TableStore,
    name: str,
    snapshot_id: int | None = None,
    time_retained: str | datetime.timedelta | None = None,
) -> Snapshot:
    """Point existing tag ``name`` at ``snapshot_id`` (default: the latest) with a new creation
    time and ``time_retained``, as Paimon's ``replaceTag``; returns the snapshot. Files only the
    old target still referenced are deleted, as :func:`delete_tag` does."""
    retained = None if time_retained is None else parse_time_retained(time_retained, table.identifier)
    tm = table.tag_manager
    if not tm.exists(name):
        raise TagNotFoundError(
            f"table {table.identifier}: tag '{name}' does not exist, so it cannot be replaced; "
            f"create it (CREATE TAG or CREATE OR REPLACE TAG); tags are {tm.names()}"
        )
    old = tm.tag(name)
    snap = _source_snapshot(table, snapshot_id)
    tm.overwrite(name, snap, create_time=datetime.datetime.now(), time_retained=retained)
    _check_still_held(table, name, snap)
    if old.id != snap.id:
        _delete_unreferenced(table, old)
    return snap


def rename_tag(table: TableStore, name: str, target: str) -> Snapshot:
    """Rename tag ``name`` to ``target`` (its snapshot, creation time and retention unchanged), as
    Paimon's ``renameTag``; returns the tagged snapshot."""
    _check_name(table, target)
    tm = table.tag_manager
    snap = tm.tag(name)  # TagNotFoundError naming the table and the existing tags
    data = table.file_io.read_bytes(tm.tag_path(name))
    # Create-if-absent, then remove the old name: atomic on every store, never replaces a tag.
    if not table.file_io.try_create_atomic(tm.tag_path(target), data):
        raise TagAlreadyExistsError(
            f"table {table.identifier}: cannot rename tag '{name}' to '{target}': tag '{target}' "
            "already exists; delete it first or pick another name"
        )
    tm.delete_file(name)
    return snap


def create_tag_from_timestamp(
    table: TableStore, name: str, timestamp_ms: int, time_retained: str | datetime.timedelta | None = None
) -> Snapshot:
    """Tag the first snapshot committed at or after ``timestamp_ms``, as Paimon's
    ``create_tag_from_timestamp``: retained snapshots and tags' snapshots both count (the earlier
    commit time wins), so a tag can be made of a snapshot that only a tag still holds."""
    first = table.snapshot_manager.snapshot_at_or_after(timestamp_ms)
    candidates = [s for s in table.tag_manager.tagged_snapshots() if s.time_millis >= timestamp_ms]
    candidates += [first] if first is not None else []
    if not candidates:
        raise SnapshotNotFoundError(
            f"table {table.identifier}: no snapshot or tag was committed at or after timestamp "
            f"{timestamp_ms}; pick an earlier timestamp (epoch milliseconds)"
        )
    snap = min(candidates, key=lambda s: (s.time_millis, s.id))
    create_tag(table, name, snap.id, time_retained)
    return snap


def _delete_unreferenced(table: TableStore, snap: Snapshot) -> list[str]:
    """Delete the files of ``snap`` (a tag's target no longer tagged) nothing retained uses."""
    if table.file_io.exists(table.snapshot_manager.snapshot_path(snap.id)):
        return []  # the snapshot itself still holds every file
    candidates = ReferenceCollector(table).snapshots([snap], strict=False)
    keep = retained_references(table)
    return delete_files(table, candidates.minus(keep))


def delete_tag(table: TableStore, name: str) -> list[str]:
    """Delete tag ``name`` and the files only it referenced; returns the deleted paths."""
    tm = table.tag_manager
    snap = tm.tag(name)
    tm.delete_file(name)
    return _delete_unreferenced(table, snap)


def expire_tags(
    table: TableStore, now: datetime.datetime | None = None, older_than: datetime.datetime | None = None
) -> list[str]:
    """Delete the tags whose retention has passed (``tagCreateTime + tagTimeRetained < now``, local
    time) and, with ``older_than``, those created before it, with the files only they referenced;
    returns their names. As Paimon's ``TagTimeExpire``: a tag without ``tagCreateTime`` counts from
    its file's modification time, and one without ``tagTimeRetained`` only expires by ``older_than``.
    """
    current = now if now is not None else datetime.datetime.now()
    tm = table.tag_manager
    modified = {
        m.group(1): datetime.datetime.fromtimestamp(status.mtime_ms / 1000)
        for status in table.file_io.list_status(tm.tag_dir)
        if (m := TAG_FILE_RE.match(status.name)) and not status.is_dir
    }
    expired = []
    for name in sorted(modified):
        created, retained = tm.retention(name)
        created = created if created is not None else modified[name]
        try:
            due = retained is not None and current > created + retained
        except OverflowError:
            due = False  # retained beyond the calendar: never by time
        if due or (older_than is not None and created < older_than):
            try:
                delete_tag(table, name)
            except TagNotFoundError:
                continue  # deleted concurrently
            expired.append(name)
    return expired


class _TagScan(TableScan):
    def __init__(self, table: TableStore, snapshot: Snapshot, filter: FilterLike = None) -> None:
        super().__init__(table, filter)
        self._tag_snapshot = snapshot

    def snapshot(self) -> Snapshot | None:
        return self._tag_snapshot


def tag_scan(table: TableStore, name: str, filter: FilterLike = None) -> TableScan:
    """A scan of tag ``name``'s own copy of its snapshot: it plans even after the snapshot expired
    (the tag keeps every file the snapshot references)."""
    return _TagScan(table, table.tag_manager.tag(name), filter)


def read_tag(
    table: TableStore, name: str, columns: Sequence[str] | None = None, filter: FilterLike = None
) -> pa.Table:
    """The merged rows of the table as of tag ``name`` (even after its snapshot expired), in the
    columns the tagged snapshot had."""
    snapshot = table.tag_manager.tag(name)
    table = table.as_of(snapshot)
    splits = _TagScan(table, snapshot, filter).plan()
    return new_read(table, columns, filter).read_splits(splits)
