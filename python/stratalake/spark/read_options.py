"""Paimon's scan options as read options of a Spark batch read.

``spark.read.option("scan.snapshot-id", "1").table("lake.db.t")`` (or the session setting
``SET spark.stratalake.scan.snapshot-id = 1``, which the shim adds to every scan of the session as
Paimon adds ``spark.paimon.*`` settings as dynamic options) reads that snapshot. A read option
stratalake does not know is refused by name: ignoring it would return the latest full state,
which looks like an answer and is not the one asked for.

Paimon's incremental reads are read options too: ``incremental-between`` ('start,end': two
snapshot ids, start exclusive, or two tags), ``incremental-between-timestamp`` ('t1,t2': epoch
millis or 'yyyy-MM-dd HH:mm:ss') and ``incremental-between-scan-mode`` (auto, delta, changelog,
diff), and ``incremental-to-auto-tag`` (an automatically created tag's name: the changes since
the auto tag before it); see :mod:`stratalake.read.incremental`. They read the table's current columns.

Spark fixes a query's columns when it loads the table, before it passes the read options, so a
read at a past snapshot chosen by an option returns the table's current columns (a column added
since is null; renamed ones are read by field id). ``VERSION AS OF`` / ``TIMESTAMP AS OF`` give
the snapshot's own columns (:func:`stratalake.spark.planning.read_table`).
"""

from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from stratalake.exceptions import InvalidOptionError, SnapshotNotFoundError, UnsupportedError
from stratalake.read import incremental
from stratalake.spark import source_options as keys

if TYPE_CHECKING:
    from stratalake.read.incremental import IncrementalRange
    from stratalake.spec.snapshot import Snapshot
    from stratalake.table.table import Table

SCAN_MODE = "scan.mode"
SCAN_SNAPSHOT_ID = "scan.snapshot-id"
SCAN_TAG_NAME = "scan.tag-name"
SCAN_TIMESTAMP_MILLIS = "scan.timestamp-millis"
SCAN_TIMESTAMP = "scan.timestamp"
INCREMENTAL_BETWEEN = "incremental-between"
INCREMENTAL_BETWEEN_TIMESTAMP = "incremental-between-timestamp"
INCREMENTAL_BETWEEN_SCAN_MODE = "incremental-between-scan-mode"
INCREMENTAL_TO_AUTO_TAG = "incremental-to-auto-tag"
CONSUMER_ID = "consumer-id"
CONSUMER_IGNORE_PROGRESS = "consumer.ignore-progress"
CONSUMER_MODE = "consumer.mode"

#: Paimon's scan options a batch read accepts.
BATCH_SCAN_OPTIONS = (
    SCAN_MODE,
    SCAN_SNAPSHOT_ID,
    SCAN_TAG_NAME,
    SCAN_TIMESTAMP_MILLIS,
    SCAN_TIMESTAMP,
    INCREMENTAL_BETWEEN,
    INCREMENTAL_BETWEEN_TIMESTAMP,
    INCREMENTAL_BETWEEN_SCAN_MODE,
    INCREMENTAL_TO_AUTO_TAG,
)
#: Options of streaming reads (stratalake.spark.streaming); harmless in a batch read.
STREAMING_OPTIONS = ("read.stream.maxFilesPerTrigger", "read.stream.maxRowsPerTrigger")
#: Consumer options of streaming reads (stratalake.spark.streaming). Paimon's batch scans ignore
#: them (``AbstractDataTableScan`` reads the consumer only when streaming), so a batch read
#: refuses them rather than silently reading the whole table.
CONSUMER_OPTIONS = (CONSUMER_ID, CONSUMER_IGNORE_PROGRESS, CONSUMER_MODE)
#: Options Spark itself gives every source (time travel by option becomes VERSION/TIMESTAMP AS OF
#: before the scan; ``path`` comes with ``load(path)``), and the data source's own locators.
_SPARK_GENERIC = ("path", "paths", "versionAsOf", "timestampAsOf", "warehouse", "table")
#: Paimon read options stratalake knows but does not implement yet: refused with that reason.
_NOT_YET: dict[str, str] = {
    "branch": "Paimon's option to read a branch; stratalake reads a branch as its own table: "
    "SELECT * FROM db.`t$branch_<name>`",
}
_STREAM_ONLY = {
    k: "consumers are for streaming reads (spark.readStream); a batch read ignores them in Paimon, "
    "so stratalake refuses them: drop the option, or read the table as a stream"
    for k in CONSUMER_OPTIONS
}
_BATCH_MODES = (
    "default",
    "latest-full",
    "full",
    "latest",
    "from-snapshot",
    "from-snapshot-full",
    "from-timestamp",
    "incremental",
)


def _known() -> list[str]:
    return [*BATCH_SCAN_OPTIONS, *STREAMING_OPTIONS]


def check_read_options(table: str, options: Mapping[str, str]) -> None:
    """Refuses, by name, a read option of a batch read that is neither one of
    :data:`BATCH_SCAN_OPTIONS`, a streaming option, one of Spark's generic options nor
    stratalake's internal ``stratalake.*``; consumer options are refused (streaming only)."""
    accepted = {k.lower() for k in (*_known(), *_SPARK_GENERIC)}
    not_yet = {k.lower(): why for k, why in (*_NOT_YET.items(), *_STREAM_ONLY.items())}
    for key in options:
        lowered = key.lower()
        if lowered.startswith("stratalake.") or lowered in accepted:
            continue
        if lowered in not_yet:
            raise UnsupportedError(f"table {table}: read option '{key}': {not_yet[lowered]}")
        close = difflib.get_close_matches(lowered, [k.lower() for k in _known()], n=1)
        hint = f" (did you mean '{_spelled(close[0])}'?)" if close else ""
        raise InvalidOptionError(
            f"table {table}: unknown read option '{key}'{hint}; supported read options: {', '.join(_known())}"
        )
    command = _get(options, keys.ROW_LEVEL_COMMAND)
    if command:
        _check_row_level(table, command, options)


#: Read options that choose what a scan reads instead of the latest snapshot.
_VERSION_CHOOSING = (
    SCAN_SNAPSHOT_ID,
    SCAN_TAG_NAME,
    SCAN_TIMESTAMP_MILLIS,
    SCAN_TIMESTAMP,
    INCREMENTAL_BETWEEN,
    INCREMENTAL_BETWEEN_TIMESTAMP,
    INCREMENTAL_TO_AUTO_TAG,
)


def _check_row_level(table: str, command: str, options: Mapping[str, str]) -> None:
    """A row-level command (UPDATE, DELETE, MERGE) rewrites the rows of the latest snapshot: a
    read option (usually a session's ``SET spark.stratalake.<option>``) that chooses another
    version would make it rewrite, or delete, rows of that version instead."""
    given = [n for n in _VERSION_CHOOSING if _get(options, n)]
    mode = (_get(options, SCAN_MODE) or "default").lower()
    if mode not in ("default", "latest-full", "full", "latest"):
        given.append(SCAN_MODE)
    if given:
        name = given[0]
        raise InvalidOptionError(
            f"table {table}: {command} reads the latest snapshot, but read option '{name}' chooses another "
            f"version; RESET spark.stratalake.{name} (or drop the option) before the {command}"
        )


def _spelled(lowered: str) -> str:
    return next(k for k in _known() if k.lower() == lowered)


def _get(options: Mapping[str, str], name: str) -> str | None:
    for key, value in options.items():
        if key.lower() == name.lower() and value is not None and str(value).strip() != "":
            return str(value).strip()
    return None


def _integer(table: str, name: str, value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise InvalidOptionError(
            f"table {table}: read option '{name}' must be an integer, got {value!r}"
        ) from None
    if n < 0:
        raise InvalidOptionError(f"table {table}: read option '{name}' must not be negative, got {value!r}")
    return n


def parse_timestamp_ms(text: str) -> int:
    """'yyyy-MM-dd HH:mm:ss[.SSS]' (local time, as Paimon) or epoch millis, as epoch millis."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        return int(dt.datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError:
        raise InvalidOptionError(
            f"'{text}' is not a timestamp; use 'yyyy-MM-dd HH:mm:ss' or epoch milliseconds"
        ) from None


def scan_snapshot(table: Table, options: Mapping[str, str]) -> tuple[Snapshot | None, str | None]:
    """The snapshot a batch read's scan options name, and the tag when by tag (its own snapshot
    copy, readable after the snapshot expired); ``(None, None)`` for the latest."""
    ident = table.identifier
    check_read_options(ident, options)
    if is_incremental(options):
        raise InvalidOptionError(
            f"table {ident}: this read cannot take the incremental read options ('{INCREMENTAL_BETWEEN}'...); "
            "read the table or its $audit_log with them"
        )
    snapshot_text = _get(options, SCAN_SNAPSHOT_ID)
    tag = _get(options, SCAN_TAG_NAME)
    millis_text = _get(options, SCAN_TIMESTAMP_MILLIS)
    timestamp_text = _get(options, SCAN_TIMESTAMP)
    given = [
        n
        for n, v in (
            (SCAN_SNAPSHOT_ID, snapshot_text),
            (SCAN_TAG_NAME, tag),
            (SCAN_TIMESTAMP_MILLIS, millis_text),
            (SCAN_TIMESTAMP, timestamp_text),
        )
        if v
    ]
    if len(given) > 1:
        raise InvalidOptionError(
            f"table {ident}: read options {', '.join(repr(g) for g in given)} each choose the snapshot "
            "to read; give only one"
        )
    mode = (_get(options, SCAN_MODE) or "default").lower()
    if mode not in _BATCH_MODES:
        raise InvalidOptionError(
            f"table {ident}: batch reads support scan.mode {', '.join(_BATCH_MODES)}, not {mode!r}"
        )
    if mode in ("latest-full", "full", "latest") and given:
        raise InvalidOptionError(
            f"table {ident}: scan.mode '{mode}' reads the latest snapshot; it cannot take {given[0]!r}"
        )
    if mode == "incremental":
        raise InvalidOptionError(
            f"table {ident}: scan.mode 'incremental' needs read option '{INCREMENTAL_BETWEEN}' or "
            f"'{INCREMENTAL_BETWEEN_TIMESTAMP}'"
        )
    if mode in ("from-snapshot", "from-snapshot-full") and not (snapshot_text or tag):
        raise InvalidOptionError(
            f"table {ident}: scan.mode '{mode}' needs read option '{SCAN_SNAPSHOT_ID}' or '{SCAN_TAG_NAME}'"
        )
    if mode == "from-timestamp" and not (millis_text or timestamp_text):
        raise InvalidOptionError(
            f"table {ident}: scan.mode 'from-timestamp' needs read option '{SCAN_TIMESTAMP_MILLIS}'"
        )
    if snapshot_text:
        return table.snapshot(_integer(ident, SCAN_SNAPSHOT_ID, snapshot_text)), None
    if tag:
        return table.tag_manager.tag(tag), tag
    if millis_text or timestamp_text:
        millis = (
            _integer(ident, SCAN_TIMESTAMP_MILLIS, millis_text)
            if millis_text
            else parse_timestamp_ms(str(timestamp_text))
        )
        snapshot = table.snapshot_at(millis)
        if snapshot is None:
            raise SnapshotNotFoundError(f"table {ident} has no snapshot at or before timestamp {millis} ms")
        return snapshot, None
    return None, None


def is_incremental(options: Mapping[str, str]) -> bool:
    """Whether the options ask for an incremental read (checked by :func:`incremental_range`)."""
    return any(
        _get(options, n)
        for n in (INCREMENTAL_BETWEEN, INCREMENTAL_BETWEEN_TIMESTAMP, INCREMENTAL_TO_AUTO_TAG)
    )


def incremental_range(
    table: Table, options: Mapping[str, str], time_travel: bool = False
) -> IncrementalRange | None:
    """The incremental read the options ask for, resolved against the table; None for a normal
    read. ``time_travel``: the read also names a version (VERSION / TIMESTAMP AS OF): refused."""
    ident = table.identifier
    check_read_options(ident, options)
    ids = _get(options, INCREMENTAL_BETWEEN)
    times = _get(options, INCREMENTAL_BETWEEN_TIMESTAMP)
    auto_tag = _get(options, INCREMENTAL_TO_AUTO_TAG)
    mode = incremental.IncrementalMode.parse(ident, _get(options, INCREMENTAL_BETWEEN_SCAN_MODE))
    chosen = [
        n
        for n, v in (
            (INCREMENTAL_BETWEEN, ids),
            (INCREMENTAL_BETWEEN_TIMESTAMP, times),
            (INCREMENTAL_TO_AUTO_TAG, auto_tag),
        )
        if v
    ]
    if not chosen:
        return None  # a scan mode alone changes nothing, as in Paimon
    if len(chosen) > 1:
        raise InvalidOptionError(
            f"table {ident}: read options {', '.join(repr(c) for c in chosen)} each choose the changes to read; "
            "give only one"
        )
    given = [
        n
        for n in (SCAN_SNAPSHOT_ID, SCAN_TAG_NAME, SCAN_TIMESTAMP_MILLIS, SCAN_TIMESTAMP)
        if _get(options, n)
    ]
    used = chosen[0]
    if given or time_travel:
        other = f"read option '{given[0]}'" if given else "VERSION AS OF / TIMESTAMP AS OF"
        raise InvalidOptionError(
            f"table {ident}: read option '{used}' reads changes between two versions and {other} chooses one "
            "version to read; give one of them"
        )
    scan_mode = (_get(options, SCAN_MODE) or "default").lower()
    if scan_mode not in ("default", "incremental"):
        raise InvalidOptionError(
            f"table {ident}: read option '{used}' is an incremental read; scan.mode '{scan_mode}' is not "
            "(leave scan.mode unset or 'incremental')"
        )
    option = f"read option '{used}'"
    if auto_tag:
        return incremental.to_auto_tag(table, auto_tag, option)
    if ids:
        return incremental.between(table, ids, mode, option)
    parts = [p.strip() for p in str(times).split(",")]
    if len(parts) != 2 or not all(parts):
        raise InvalidOptionError(
            f"table {ident}: {option} must be 'start,end' (epoch milliseconds or 'yyyy-MM-dd HH:mm:ss', "
            f"start exclusive), got {times!r}"
        )
    try:
        start, end = parse_timestamp_ms(parts[0]), parse_timestamp_ms(parts[1])
    except InvalidOptionError as e:
        raise InvalidOptionError(f"table {ident}: {option}: {e}") from None
    return incremental.between_timestamps(table, start, end, mode, option)


__all__ = ["BATCH_SCAN_OPTIONS", "check_read_options", "incremental_range", "is_incremental", "scan_snapshot"]
