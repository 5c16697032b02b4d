"""Tag files: named snapshots (``tag/tag-<name>``, a copy of the snapshot JSON) and their names.

Reading, writing and listing tags (:class:`TagManager`) is store metadata, as snapshots are;
creating and deleting tags with their files is :mod:`stratalake.maintenance.tags`.
"""

from __future__ import annotations

import datetime
import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from stratalake.exceptions import InvalidOptionError, TagNotFoundError
from stratalake.io import FileIO
from stratalake.options import parse_duration_ms
from stratalake.spec.snapshot import Snapshot

TAG_PREFIX = "tag-"
TAG_FILE_RE = re.compile(r"^tag-(.+)$")


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
            m = TAG_FILE_RE.match(status.name)
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
        return self.file_io.try_create_atomic(
            self.tag_path(name), self._tag_json(snapshot, create_time, time_retained)
        )

    def overwrite(
        self,
        name: str,
        snapshot: Snapshot,
        create_time: datetime.datetime | None = None,
        time_retained: datetime.timedelta | None = None,
    ) -> None:
        """Replace the tag file (readers see the old or the new one, never a partial file)."""
        self.file_io.write_bytes(self.tag_path(name), self._tag_json(snapshot, create_time, time_retained))

    @staticmethod
    def _tag_json(
        snapshot: Snapshot, create_time: datetime.datetime | None, time_retained: datetime.timedelta | None
    ) -> bytes:
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
        return text.encode()

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
