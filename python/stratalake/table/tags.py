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
    total = _retained_seconds(value)
    if total is None:  # not a number, or negative: Paimon never stores a negative retention
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


def _retained_seconds(value: Any) -> Decimal | None:
    """A ``tagTimeRetained`` (Jackson: decimal seconds, or ``Duration`` text) in seconds."""
    if isinstance(value, str) and value.lstrip("-").startswith("P"):
        m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?", value)
        if m is None or value == "PT":
            return None
        h, mi, sec = m.groups()
        return Decimal(h or 0) * 3600 + Decimal(mi or 0) * 60 + Decimal(sec or 0)
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        return None
    try:
        total = Decimal(str(value))
    except InvalidOperation:
        return None
    return total if total.is_finite() and total >= 0 else None


def _jackson_duration(retained: datetime.timedelta) -> str:
    """A ``Duration`` as Jackson writes it: seconds with nine fraction digits (``3600.000000000``)."""
    micros = retained // datetime.timedelta(microseconds=1)
    seconds, micro = divmod(micros, 1_000_000)
    return f"{seconds}.{micro * 1000:09d}"


def parse_time_retained(value: str | datetime.timedelta, table: str = "table") -> datetime.timedelta:
    """A tag retention: a ``timedelta`` or a Paimon duration text ('1 d', '12 h', '30 min')."""
    from stratalake.options import parse_duration_ms

    if isinstance(value, datetime.timedelta):
        retained = value
    else:
        try:
            retained = datetime.timedelta(milliseconds=parse_duration_ms(str(value).strip()))
        except ValueError as e:
            raise InvalidOptionError(f"table {table}: time_retained {value!r}: {e}") from None
    if retained <= datetime.timedelta(0):
        raise InvalidOptionError(f"table {table}: time_retained must be positive, got {value!r}")
    return retained


class TagManager:
    """I/O of the tag files of one table."""

    def __init__(self, file_io: FileIO, table_path: str, table_name: str = "table") -> None:
        self.file_io = file_io
        self.table_name = table_name
        self.tag_dir = f"{table_path.rstrip('/')}/tag"

    def tag_path(self, name: str) -> str:
        """``tag/tag-<name>``: every tag name reaching a path (create, read, delete, time travel,
        ``CALL`` procedures) passes here, so this is where it is checked to be one file name."""
        return f"{self.tag_dir}/{TAG_PREFIX}{check_tag_name(name, self.table_name)}"

    def names(self) -> list[str]:
        out = []
        for status in self.file_io.list_status(self.tag_dir):
            m = _TAG_RE.match(status.name)
            # A listed name with a '\\' could not be addressed as a tag (tag_path refuses it).
            if m and not status.is_dir and "\\" not in m.group(1):
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

    def retention(self, name: str) -> tuple[datetime.datetime | None, datetime.timedelta | None]:
        """The tag's ``tagCreateTime`` (local time) and ``tagTimeRetained``, each None if not stored."""
        try:
            raw = json.loads(self.file_io.read_text(self.tag_path(name)), parse_float=Decimal)
        except (FileNotFoundError, OSError, ValueError, RecursionError):
            return None, None
        if not isinstance(raw, dict):
            return None, None
        seconds = _retained_seconds(raw.get("tagTimeRetained"))
        try:
            retained = None if seconds is None else datetime.timedelta(seconds=float(seconds))
        except OverflowError:
            retained = datetime.timedelta.max
        return _parse_local_date_time(raw.get("tagCreateTime")), retained

    def tagged_snapshots(self) -> list[Snapshot]:
        """The distinct snapshots tags point at, by id."""
        return sorted({s.id: s for s in self.tags().values()}.values(), key=lambda s: s.id)

    def write(
        self,
        name: str,
        snapshot: Snapshot,
        create_time: datetime.datetime | None = None,
        time_retained: datetime.timedelta | None = None,
    ) -> bool:
        """Create the tag file atomically; False if the tag already exists.

        ``create_time`` (local wall-clock time, as Java's ``LocalDateTime.now()``) is stored as
        Paimon's ``tagCreateTime``, ``time_retained`` as its ``tagTimeRetained`` (Jackson's
        decimal seconds); the tag expires once ``create_time + time_retained`` has passed.
        """
        text = snapshot.to_json()
        if create_time is not None or time_retained is not None:
            raw = json.loads(text)
            if create_time is not None:
                raw["tagCreateTime"] = _java_local_date_time(create_time)
            marker = "@@stratalake:tagTimeRetained@@"
            if time_retained is not None:
                raw["tagTimeRetained"] = marker
            text = json.dumps(raw, indent=2)
            if time_retained is not None:  # a JSON number with all nine digits, as Jackson
                text = text.replace(json.dumps(marker), _jackson_duration(time_retained))
        return self.file_io.try_create_atomic(self.tag_path(name), text.encode())

    def delete_file(self, name: str) -> None:
        self.file_io.delete_quietly(self.tag_path(name))


def check_tag_name(name: object, table: str = "table") -> str:
    """``name`` if ``tag-<name>`` is one file name in the tag directory (any use of a tag name).

    Tags made by other tools may hold any other character, so only what could leave the directory
    is refused: separators, NUL, and blank names.
    """
    if not isinstance(name, str) or not name.strip() or any(c in name for c in "/\\\x00"):
        raise InvalidOptionError(
            f"table {table}: {name!r} is not a valid tag name; a tag name must be non-blank and "
            "must not contain '/', '\\' or NUL (it names one file in the table's tag directory)"
        )
    return name


def _check_name(table: Table, name: str) -> None:
    """The rules for a new tag: :func:`check_tag_name`, and no control characters or numbers."""
    check_tag_name(name, table.identifier)
    # Numeric names would be ambiguous with snapshot ids in time travel (VERSION AS OF).
    if name.isdigit() or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise InvalidOptionError(
            f"table {table.identifier}: {name!r} is not a valid tag name; use a non-blank name "
            "without '/', '\\' or control characters that is not a number"
        )


def create_tag(
    table: Table,
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


def expire_tags(
    table: Table, now: datetime.datetime | None = None, older_than: datetime.datetime | None = None
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
        if (m := _TAG_RE.match(status.name)) and not status.is_dir
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
    def __init__(self, table: Table, snapshot: Snapshot, filter: FilterLike = None) -> None:
        super().__init__(table, filter)
        self._tag_snapshot = snapshot

    def snapshot(self) -> Snapshot | None:
        return self._tag_snapshot


def tag_scan(table: Table, name: str, filter: FilterLike = None) -> TableScan:
    """A scan of tag ``name``'s own copy of its snapshot: it plans even after the snapshot expired
    (the tag keeps every file the snapshot references)."""
    return _TagScan(table, table.tag_manager.tag(name), filter)


def read_tag(
    table: Table, name: str, columns: Sequence[str] | None = None, filter: FilterLike = None
) -> pa.Table:
    """The merged rows of the table as of tag ``name`` (even after its snapshot expired), in the
    columns the tagged snapshot had."""
    snapshot = table.tag_manager.tag(name)
    table = table.as_of(snapshot)
    splits = _TagScan(table, snapshot, filter).plan()
    return table.new_read(columns, filter).read_splits(splits)
