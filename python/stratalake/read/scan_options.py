"""Paimon's scan options: which snapshot, tag or range of changes a batch read reads.

They are read options of a read (Spark's ``spark.read.option("scan.snapshot-id", "1")``,
:mod:`stratalake.spark.read_options`) and table options too: a table that stores
``'scan.snapshot-id' = '3'`` pins Paimon's batch reads, and :meth:`stratalake.Table.read`'s, to
snapshot 3 unless the read chooses its own version. ``incremental-between`` ('start,end': two
snapshot ids, start exclusive, or two tags), ``incremental-between-timestamp`` ('t1,t2': epoch
millis or 'yyyy-MM-dd HH:mm:ss'), ``incremental-between-scan-mode`` (auto, delta, changelog,
diff) and ``incremental-to-auto-tag`` read changes instead (:mod:`stratalake.read.incremental`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING

from stratalake.exceptions import InvalidOptionError, SnapshotNotFoundError
from stratalake.read import incremental

if TYPE_CHECKING:
    from stratalake.read.incremental import IncrementalRange
    from stratalake.spec.snapshot import Snapshot
    from stratalake.store.table_store import TableStore as Table

SCAN_MODE = "scan.mode"
SCAN_SNAPSHOT_ID = "scan.snapshot-id"
SCAN_TAG_NAME = "scan.tag-name"
SCAN_TIMESTAMP_MILLIS = "scan.timestamp-millis"
SCAN_TIMESTAMP = "scan.timestamp"
INCREMENTAL_BETWEEN = "incremental-between"
INCREMENTAL_BETWEEN_TIMESTAMP = "incremental-between-timestamp"
INCREMENTAL_BETWEEN_SCAN_MODE = "incremental-between-scan-mode"
INCREMENTAL_TO_AUTO_TAG = "incremental-to-auto-tag"
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


def stored(options: Mapping[str, str]) -> dict[str, str]:
    """The batch scan options among a table's ``options`` (set, non-blank)."""
    names = {n.lower() for n in BATCH_SCAN_OPTIONS}
    return {k: v for k, v in options.items() if k.lower() in names and str(v).strip()}


def option_text(options: Mapping[str, str], name: str) -> str | None:
    """The set, non-blank value of option ``name`` (any case) in ``options``, else None."""
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


def snapshot_choice(table: Table, options: Mapping[str, str]) -> tuple[Snapshot | None, str | None]:
    """The snapshot a batch read's scan options name, and the tag when by tag (its own snapshot
    copy, readable after the snapshot expired); ``(None, None)`` for the latest."""
    ident = table.identifier
    if is_incremental(options):
        raise InvalidOptionError(
            f"table {ident}: this read cannot take the incremental read options ('{INCREMENTAL_BETWEEN}'...); "
            "read the table or its $audit_log with them"
        )
    snapshot_text = option_text(options, SCAN_SNAPSHOT_ID)
    tag = option_text(options, SCAN_TAG_NAME)
    millis_text = option_text(options, SCAN_TIMESTAMP_MILLIS)
    timestamp_text = option_text(options, SCAN_TIMESTAMP)
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
    mode = (option_text(options, SCAN_MODE) or "default").lower()
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
        option_text(options, n)
        for n in (INCREMENTAL_BETWEEN, INCREMENTAL_BETWEEN_TIMESTAMP, INCREMENTAL_TO_AUTO_TAG)
    )


def incremental_choice(
    table: Table, options: Mapping[str, str], time_travel: bool = False
) -> IncrementalRange | None:
    """The incremental read the options ask for, resolved against the table; None for a normal
    read. ``time_travel``: the read also names a version (VERSION / TIMESTAMP AS OF): refused."""
    ident = table.identifier
    ids = option_text(options, INCREMENTAL_BETWEEN)
    times = option_text(options, INCREMENTAL_BETWEEN_TIMESTAMP)
    auto_tag = option_text(options, INCREMENTAL_TO_AUTO_TAG)
    mode = incremental.IncrementalMode.parse(ident, option_text(options, INCREMENTAL_BETWEEN_SCAN_MODE))
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
        if option_text(options, n)
    ]
    used = chosen[0]
    if given or time_travel:
        other = f"read option '{given[0]}'" if given else "VERSION AS OF / TIMESTAMP AS OF"
        raise InvalidOptionError(
            f"table {ident}: read option '{used}' reads changes between two versions and {other} chooses one "
            "version to read; give one of them"
        )
    scan_mode = (option_text(options, SCAN_MODE) or "default").lower()
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
