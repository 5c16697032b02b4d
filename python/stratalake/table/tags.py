"""Tags: named snapshots (``tag/tag-<name>``, a copy of the snapshot JSON) that outlive expiration.

A tag keeps every file its snapshot references: expiration and orphan removal treat tags as
retained snapshots. Deleting a tag deletes the files only it still referenced.

Example::

    t.create_tag("release-1")            # the latest snapshot
    t.expire_snapshots(retain_max=1)     # the tag's files survive
    tags.read_tag(t, "release-1")
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from stratalake.exceptions import (
    InvalidOptionError,
    SnapshotNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
)
from stratalake.expressions import FilterLike
from stratalake.io import FileIO
from stratalake.spec.snapshot import Snapshot
from stratalake.table.references import ReferenceCollector
from stratalake.table.scan import TableScan

if TYPE_CHECKING:
    from stratalake.table.table import Table

TAG_PREFIX = "tag-"
_TAG_RE = re.compile(r"^tag-(.+)$")


def _java_local_date_time(value: datetime.datetime) -> list[int]:
    """Jackson's array form of a ``LocalDateTime`` (seconds and nanos left off when zero)."""
    out = [value.year, value.month, value.day, value.hour, value.minute]
    nanos = value.microsecond * 1000
    if value.second or nanos:
        out.append(value.second)
    if nanos:
        out.append(nanos)
    return out


def _parse_local_date_time(value: Any) -> datetime.datetime | None:
    """A ``tagCreateTime`` as Jackson writes it: ``[y, m, d, h, mi(, s(, nanos))]`` or ISO text."""
    try:
        if isinstance(value, list) and 5 <= len(value) <= 7 and all(isinstance(v, int) for v in value):
            y, mo, d, h, mi, *rest = value
            sec = rest[0] if rest else 0
            nanos = rest[1] if len(rest) > 1 else 0
            return datetime.datetime(y, mo, d, h, mi, sec, nanos // 1000)
        if isinstance(value, str):
            return datetime.datetime.fromisoformat(value)
    except (ValueError, TypeError, OverflowError):
        pass
    return None


def _duration_string(value: Any) -> str | None:
    """A ``tagTimeRetained`` (Jackson: decimal seconds) as Java's ``Duration.toString()``."""
    if isinstance(value, str) and value.startswith(("PT", "-PT", "P")):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        return None
    try:
        total = Decimal(str(value))
    except InvalidOperation:
        return None
    if not total.is_finite() or total < 0:  # Paimon never stores a negative retention
        return None
    if total == 0:
        return "PT0S"
    whole = int(total)
    hours, minutes, seconds = whole // 3600, whole % 3600 // 60, whole % 60
    out = "PT"
    if hours:
        out += f"{hours}H"
    if minutes:
        out += f"{minutes}M"
    fraction = total - whole
    if seconds or fraction:
        text = f"{(seconds + fraction).normalize():f}"
        out += f"{text}S"
    return out


class TagManager:
    """I/O of the tag files of one table."""

    def __init__(self, file_io: FileIO, table_path: str, table_name: str = "table") -> None:
        self.file_io = file_io
        self.table_name = table_name
        self.tag_dir = f"{table_path.rstrip('/')}/tag"

    def tag_path(self, name: str) -> str:
        return f"{self.tag_dir}/{TAG_PREFIX}{name}"

    def names(self) -> list[str]:
        out = []
        for status in self.file_io.list_status(self.tag_dir):
            m = _TAG_RE.match(status.name)
            if m and not status.is_dir:
                out.append(m.group(1))
        return sorted(out)

    def exists(self, name: str) -> bool:
        return self.file_io.exists(self.tag_path(name))

    def try_tag(self, name: str) -> Snapshot | None:
        path = self.tag_path(name)
        try:
            text = self.file_io.read_text(path)
        except (FileNotFoundError, OSError):
            return None
        # Java's Tag adds tagCreateTime/tagTimeRetained; Snapshot.from_json ignores unknown keys.
        return Snapshot.from_json(text, origin=path)

    def tag(self, name: str) -> Snapshot:
        snap = self.try_tag(name)
        if snap is None:
            raise TagNotFoundError(
                f"table {self.table_name}: tag '{name}' does not exist; tags are {self.names()}"
            )
        return snap

    def tags(self) -> dict[str, Snapshot]:
        """Every tag by name (a tag deleted while listing is left out)."""
        out = {}
        for name in self.names():
            snap = self.try_tag(name)
            if snap is not None:
                out[name] = snap
        return out

    def tag_times(self, name: str) -> tuple[datetime.datetime | None, str | None]:
        """The tag's ``tagCreateTime`` (local time) and ``tagTimeRetained`` (``Duration`` text), if stored."""
        try:
            raw = json.loads(self.file_io.read_text(self.tag_path(name)), parse_float=Decimal)
        except (FileNotFoundError, OSError, ValueError, RecursionError):
            return None, None
        if not isinstance(raw, dict):
            return None, None
        return _parse_local_date_time(raw.get("tagCreateTime")), _duration_string(raw.get("tagTimeRetained"))

    def tagged_snapshots(self) -> list[Snapshot]:
        """The distinct snapshots tags point at, by id."""
        return sorted({s.id: s for s in self.tags().values()}.values(), key=lambda s: s.id)

    def write(self, name: str, snapshot: Snapshot, create_time: datetime.datetime | None = None) -> bool:
        """Create the tag file atomically; False if the tag already exists.

        ``create_time`` (local wall-clock time, as Java's ``LocalDateTime.now()``) is stored as
        Paimon's ``tagCreateTime``.
        """
        text = snapshot.to_json()
        if create_time is not None:
            raw = json.loads(text)
            raw["tagCreateTime"] = _java_local_date_time(create_time)
            text = json.dumps(raw, indent=2)
        return self.file_io.try_create_atomic(self.tag_path(name), text.encode())

    def delete_file(self, name: str) -> None:
        self.file_io.delete_quietly(self.tag_path(name))


def _check_name(table: Table, name: str) -> None:
    # Numeric names would be ambiguous with snapshot ids in time travel (VERSION AS OF).
    if not name or not name.strip() or "/" in name or name.isdigit():
        raise InvalidOptionError(
            f"table {table.identifier}: '{name}' is not a valid tag name; use a non-blank name "
            "without '/' that is not a number"
        )


def create_tag(table: Table, name: str, snapshot_id: int | None = None) -> Snapshot:
    """Tag ``snapshot_id`` (default: the latest snapshot) as ``name``; returns the snapshot."""
    _check_name(table, name)
    sm = table.snapshot_manager
    tm = table.tag_manager
    if snapshot_id is None:
        snap = sm.latest_snapshot()
        if snap is None:
            raise SnapshotNotFoundError(f"table {table.identifier}: cannot tag an empty table (no snapshot)")
    else:
        snap = sm.snapshot(snapshot_id)
    if not tm.write(name, snap, create_time=datetime.datetime.now()):
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


def delete_tag(table: Table, name: str) -> list[str]:
    """Delete tag ``name`` and the files only it referenced; returns the deleted paths."""
    # expire imports this module (tags protect files), so import it lazily.
    from stratalake.table.expire import delete_files, retained_references

    tm = table.tag_manager
    snap = tm.tag(name)
    tm.delete_file(name)
    if table.file_io.exists(table.snapshot_manager.snapshot_path(snap.id)):
        return []  # the snapshot itself still holds every file
    candidates = ReferenceCollector(table).snapshots([snap], strict=False)
    keep = retained_references(table)
    return delete_files(table, candidates.minus(keep))


class _TagScan(TableScan):
    def __init__(self, table: Table, snapshot: Snapshot, filter: FilterLike = None) -> None:
        super().__init__(table, filter)
        self._tag_snapshot = snapshot

    def snapshot(self) -> Snapshot | None:
        return self._tag_snapshot


def read_tag(
    table: Table, name: str, columns: Sequence[str] | None = None, filter: FilterLike = None
) -> pa.Table:
    """The merged rows of the table as of tag ``name`` (even after its snapshot expired)."""
    splits = _TagScan(table, table.tag_manager.tag(name), filter).plan()
    return table.new_read(columns, filter).read_splits(splits)
