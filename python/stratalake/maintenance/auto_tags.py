"""Automatic tags after commits, as Paimon's ``TagAutoCreation`` and ``TagBatchCreation``.

``'tag.automatic-creation'``:

- ``process-time`` / ``watermark``: each snapshot has a time (its commit time in
  ``sink.process-time-zone``, default the machine's zone; or its watermark in
  ``sink.watermark-time-zone``, default UTC). Once a snapshot's time, less ``tag.creation-delay``,
  passes the end of the period after the newest automatic tag, the period before that snapshot's
  period is tagged with the snapshot: daily tags are named ``yyyy-MM-dd`` (or ``yyyyMMdd`` with
  ``tag.period-formatter`` = ``without_dashes``), hourly ``yyyy-MM-dd HH`` (``yyyyMMdd HH``,
  ``yyyyMMddHH``), ``two-hours`` ``yyyy-MM-dd HH``, and ``tag.creation-period-duration`` periods
  ``yyyyMMddHHmm``. With no automatic tag yet, the first snapshot examined is tagged. With
  ``tag.automatic-completion`` each missed period is tagged in turn. ``tag.num-retained-max``
  keeps that many automatic tags (the oldest go); ``tag.default-time-retained`` is their
  retention.
- ``batch``: after each batch write (an APPEND or OVERWRITE commit of a batch writer, as Paimon's
  Spark writer does after its commit), the latest snapshot is tagged ``batch-write-yyyy-MM-dd``
  (its commit day) or ``tag.batch.customized-name``, replacing a tag of that name; then the
  oldest tags go until at most ``tag.num-retained-max`` remain.

Paimon keeps its progress (the next snapshot to examine) in the writer's memory and restores it
from the newest automatic tag; a committer here restores it at every commit, and, since snapshot
times only grow with snapshot ids, examines the snapshots since that tag only when the latest
snapshot's time has passed the next tag time.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stratalake.exceptions import InvalidOptionError, SnapshotNotFoundError, TagNotFoundError
from stratalake.maintenance.tags import delete_tag
from stratalake.options import parse_duration_ms
from stratalake.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
from stratalake.store.tag_manager import check_tag_name

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

CREATION = "tag.automatic-creation"
_EPOCH = dt.datetime(1970, 1, 1)
_MIN_WATERMARK = -(2**63)  # Long.MIN_VALUE: no watermark
BATCH_TAG_PREFIX = "batch-write-"


@dataclass(frozen=True)
class TagPeriod:
    """One tag period: its length and the format of the tags naming its start."""

    length: dt.timedelta
    pattern: str  # strftime/strptime
    regex: re.Pattern[str]
    date_only: bool = False

    def tag_to_time(self, name: str) -> dt.datetime | None:
        """The start of the period an automatic tag names, or None for another tag."""
        text = name.split(" ")[0] if self.date_only else name
        if not self.regex.fullmatch(text):
            return None
        try:
            return dt.datetime.strptime(text, self.pattern)
        except ValueError:
            return None

    def time_to_tag(self, time: dt.datetime) -> str:
        return time.strftime(self.pattern)

    def previous_period_start(self, time: dt.datetime) -> dt.datetime:
        """The start of the period before the one holding ``time`` (Paimon's
        ``normalizeToPreviousTag``: whole periods counted from the epoch, in local time)."""
        period_ms = self.length // dt.timedelta(milliseconds=1)
        millis = (time - _EPOCH) // dt.timedelta(milliseconds=1)
        return _EPOCH + dt.timedelta(milliseconds=(millis // period_ms) * period_ms) - self.length


def _formats(formatter: str) -> tuple[tuple[str, str], tuple[str, str]]:
    """(daily, hourly) (pattern, regex) for ``tag.period-formatter``."""
    if formatter == "with_dashes":
        return ("%Y-%m-%d", r"\d{4}-\d{2}-\d{2}"), ("%Y-%m-%d %H", r"\d{4}-\d{2}-\d{2} \d{2}")
    if formatter == "without_dashes":
        return ("%Y%m%d", r"\d{8}"), ("%Y%m%d %H", r"\d{8} \d{2}")
    if formatter == "without_dashes_and_spaces":
        return ("%Y%m%d", r"\d{8}"), ("%Y%m%d%H", r"\d{10}")
    raise InvalidOptionError(
        f"'tag.period-formatter'='{formatter}' must be with_dashes, without_dashes or without_dashes_and_spaces"
    )


def tag_period(options: Callable[[str], str | None], table: str) -> TagPeriod:
    """The tag period the table's options choose (Paimon's ``TagPeriodHandler.create``)."""
    duration = options("tag.creation-period-duration")
    if duration:
        length = dt.timedelta(milliseconds=parse_duration_ms(duration))
        if length <= dt.timedelta(0):
            raise InvalidOptionError(f"table {table}: 'tag.creation-period-duration' must be positive")
        return TagPeriod(length, "%Y%m%d%H%M", re.compile(r"\d{12}"))
    period = (options("tag.creation-period") or "daily").strip().lower()
    try:
        daily, hourly = _formats((options("tag.period-formatter") or "with_dashes").strip().lower())
    except InvalidOptionError as e:
        raise InvalidOptionError(f"table {table}: {e}") from None
    if period == "daily":
        return TagPeriod(dt.timedelta(days=1), daily[0], re.compile(daily[1]), date_only=True)
    if period == "hourly":
        return TagPeriod(dt.timedelta(hours=1), hourly[0], re.compile(hourly[1]))
    if period == "two-hours":
        return TagPeriod(dt.timedelta(hours=2), "%Y-%m-%d %H", re.compile(r"\d{4}-\d{2}-\d{2} \d{2}"))
    raise InvalidOptionError(
        f"table {table}: 'tag.creation-period'='{period}' must be daily, hourly or two-hours "
        "(or set 'tag.creation-period-duration')"
    )


def _zone(name: str | None, table: str, key: str) -> dt.tzinfo | None:
    if not name:
        return None  # the machine's zone, as Java's ZoneId.systemDefault()
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise InvalidOptionError(f"table {table}: '{key}'='{name}' is not a time zone") from None


def _local(millis: int, zone: dt.tzinfo | None) -> dt.datetime:
    """Epoch millis as a wall-clock time in ``zone`` (None: the machine's zone), without zone."""
    instant = dt.datetime.fromtimestamp(millis / 1000, dt.UTC)
    return (instant.astimezone(zone) if zone is not None else instant.astimezone()).replace(tzinfo=None)


def mode(table: TableStore) -> str:
    return (table.core_options.get(CREATION) or "none").strip().lower()


def create_automatic_tags(table: TableStore) -> list[str]:
    """Create the ``process-time`` / ``watermark`` tags now due (see the module docstring);
    returns their names. Nothing for other modes."""
    how = mode(table)
    if how not in ("process-time", "watermark"):
        return []
    opts = table.core_options
    ident = table.identifier
    period = tag_period(opts.get, ident)
    delay = dt.timedelta(milliseconds=parse_duration_ms(opts.get("tag.creation-delay") or "0 ms"))
    if delay >= period.length:
        raise InvalidOptionError(f"table {ident}: 'tag.creation-delay' must be shorter than the tag period")
    if how == "process-time":
        zone = _zone(opts.get("sink.process-time-zone"), ident, "sink.process-time-zone")

        def time_of(s: Snapshot) -> dt.datetime | None:
            return _local(s.time_millis, zone)
    else:
        zone = _zone(opts.get("sink.watermark-time-zone") or "UTC", ident, "sink.watermark-time-zone")

        def time_of(s: Snapshot) -> dt.datetime | None:
            if s.watermark is None or s.watermark == _MIN_WATERMARK:
                return None
            return _local(s.watermark, zone)

    sm, tm = table.snapshot_manager, table.tag_manager
    auto = {name: t for name in tm.names() if (t := period.tag_to_time(name)) is not None}
    next_tag: dt.datetime | None = None
    if auto:
        newest = max(auto, key=lambda n: auto[n])
        next_snapshot = tm.tag(newest).id + 1
        next_tag = auto[newest] + period.length
    else:
        next_snapshot = sm.earliest_snapshot_id() or 1
    latest = sm.latest_snapshot()
    if latest is None:
        return []
    if next_tag is not None:
        latest_time = time_of(latest)
        if latest_time is None or latest_time - delay < next_tag + period.length:
            return []  # times grow with snapshot ids: no snapshot since the newest tag is due
    completion = opts.get_bool("tag.automatic-completion")
    retained = opts.get("tag.default-time-retained")
    retention = dt.timedelta(milliseconds=parse_duration_ms(retained)) if retained else None
    created: list[str] = []
    snapshot_id = next_snapshot
    while snapshot_id <= latest.id:
        try:
            snap = sm.snapshot(snapshot_id)
        except SnapshotNotFoundError:
            earliest = sm.earliest_snapshot_id()
            if earliest is not None and earliest > snapshot_id:
                snapshot_id = earliest  # expired meanwhile
                continue
            snapshot_id += 1
            continue
        time = time_of(snap)
        if time is not None and (next_tag is None or time - delay >= next_tag + period.length):
            this_tag = period.previous_period_start(time)
            if completion and next_tag is not None:
                this_tag = next_tag
            name = check_tag_name(period.time_to_tag(this_tag), ident)
            if tm.write(name, snap, create_time=dt.datetime.now(), time_retained=retention):
                created.append(name)
            next_tag = this_tag + period.length
            _keep_newest_automatic(table, period, opts.get_int("tag.num-retained-max"))
        snapshot_id += 1
    return created


def _keep_newest_automatic(table: TableStore, period: TagPeriod, keep: int | None) -> None:
    """Delete the oldest automatic tags (by snapshot) beyond ``tag.num-retained-max``."""
    if keep is None:
        return
    tags = [
        (s.id, name) for name, s in table.tag_manager.tags().items() if period.tag_to_time(name) is not None
    ]
    for _sid, name in sorted(tags)[: max(len(tags) - keep, 0)]:
        try:
            delete_tag(table, name)
        except TagNotFoundError:
            continue


def create_batch_tag(table: TableStore, snapshot: Snapshot) -> str | None:
    """After a batch write (mode ``batch``): tag ``snapshot`` (the latest), replacing a tag of that
    name, then keep at most ``tag.num-retained-max`` tags; returns the name, or None."""
    if mode(table) != "batch":
        return None
    if snapshot.commit_identifier != BATCH_COMMIT_IDENTIFIER or snapshot.commit_kind not in (
        CommitKind.APPEND,
        CommitKind.OVERWRITE,
    ):
        return None
    opts = table.core_options
    ident = table.identifier
    zone = _zone(opts.get("sink.process-time-zone"), ident, "sink.process-time-zone")
    name = opts.get("tag.batch.customized-name") or (
        BATCH_TAG_PREFIX + _local(snapshot.time_millis, zone).strftime("%Y-%m-%d")
    )
    check_tag_name(name, ident)
    tm = table.tag_manager
    if tm.exists(name):
        delete_tag(table, name)
    retained = opts.get("tag.default-time-retained")
    retention = dt.timedelta(milliseconds=parse_duration_ms(retained)) if retained else None
    tm.write(name, snapshot, create_time=dt.datetime.now(), time_retained=retention)
    keep = opts.get_int("tag.num-retained-max")
    if keep is not None:
        tags = sorted((s.id, n) for n, s in tm.tags().items())
        for _sid, old in tags[: max(len(tags) - keep, 0)]:
            try:
                delete_tag(table, old)
            except TagNotFoundError:
                continue
    return name
