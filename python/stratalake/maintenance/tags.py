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

def _check_name(table: TableStore, name: str) -> None:
    """The rules for a new tag: :func:`check_tag_name`, and no control characters or numbers."""
    check_tag_name(name, table.identifier)
    # Numeric names would be ambiguous with snapshot ids in time travel (VERSION AS OF).
    if name.isdigit() or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise InvalidOptionError(
            f"table {table.identifier}: {name!r} is not a valid tag name; use a non-blank name "
            "without '/', '\\' or control characters that is not a number"
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
    """
    _check_name(table, name)
    retained = None if time_retained is None else parse_time_retained(time_retained, table.identifier)
    sm = table.snapshot_manager
    tm = table.tag_manager
    if snapshot_id is None:
        snap = sm.latest_snapshot()
        if snap is None:
            raise SnapshotNotFoundError(f"table {table.identifier}: cannot tag an empty table (no snapshot)")
    else:
        snap = sm.snapshot(snapshot_id)
    if not tm.write(name, snap, create_time=datetime.datetime.now(), time_retained=retained):
        raise TagAlreadyExistsError(
            f"table {table.identifier}: tag '{name}' already exists; delete it first or pick another name"
        )
    # Expiration deletes a snapshot's file before its data files and re-reads the tags in between.
    # If the snapshot is still there now, that re-read sees this tag; if not, the files may be
    # going away, so the tag must not stay.
    if not table.file_io.exists(sm.snapshot_path(snap.id)):
        tm.delete_file(name)
        raise SnapshotNotFoundError(
            f"table {table.identifier}: snapshot {snap.id} expired while tag '{name}' was being created"
        )
    return snap


def delete_tag(table: TableStore, name: str) -> list[str]:
    """Delete tag ``name`` and the files only it referenced; returns the deleted paths."""
    tm = table.tag_manager
    snap = tm.tag(name)
    tm.delete_file(name)
    if table.file_io.exists(table.snapshot_manager.snapshot_path(snap.id)):
        return []  # the snapshot itself still holds every file
    candidates = ReferenceCollector(table).snapshots([snap], strict=False)
    keep = retained_references(table)
    return delete_files(table, candidates.minus(keep))


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
