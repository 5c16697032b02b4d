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

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from stratalake.exceptions import InvalidOptionError, UnsupportedError
from stratalake.read import scan_options
from stratalake.read.scan_options import (
    BATCH_SCAN_OPTIONS,
    INCREMENTAL_BETWEEN,
    INCREMENTAL_BETWEEN_TIMESTAMP,
    INCREMENTAL_TO_AUTO_TAG,
    SCAN_MODE,
    SCAN_SNAPSHOT_ID,
    SCAN_TAG_NAME,
    SCAN_TIMESTAMP,
    SCAN_TIMESTAMP_MILLIS,
    is_incremental,
    option_text,
    parse_timestamp_ms,
)
from stratalake.spark import source_options as keys

if TYPE_CHECKING:
    from stratalake.read.incremental import IncrementalRange
    from stratalake.spec.snapshot import Snapshot
    from stratalake.table.table import Table

CONSUMER_ID = "consumer-id"
CONSUMER_IGNORE_PROGRESS = "consumer.ignore-progress"
CONSUMER_MODE = "consumer.mode"

#: Options of streaming reads (stratalake.spark.streaming); harmless in a batch read.
STREAMING_OPTIONS = ("read.stream.maxFilesPerTrigger", "read.stream.maxRowsPerTrigger")
#: Consumer options of streaming reads (stratalake.spark.streaming). Paimon's batch scans ignore
#: them (``AbstractDataTableScan`` reads the consumer only when streaming), so a batch read
#: refuses them rather than silently reading the whole table.
CONSUMER_OPTIONS = (CONSUMER_ID, CONSUMER_IGNORE_PROGRESS, CONSUMER_MODE)
#: Write switches a session may set (``SET spark.stratalake.write.merge-schema = true``), which the
#: shim hands every scan of the session as well: they change nothing in a read.
WRITE_SESSION_OPTIONS = (
    "write.merge-schema",
    "write.merge-schema.type-widening",
    "write.merge-schema.explicit-cast",
)
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


def _known() -> list[str]:
    return [*BATCH_SCAN_OPTIONS, *STREAMING_OPTIONS]


def check_read_options(table: str, options: Mapping[str, str]) -> None:
    """Refuses, by name, a read option of a batch read that is neither one of
    :data:`BATCH_SCAN_OPTIONS`, a streaming option, one of Spark's generic options nor
    stratalake's internal options (``source_options.INTERNAL``); consumer options are refused (streaming only)."""
    accepted = {k.lower() for k in (*_known(), *_SPARK_GENERIC, *WRITE_SESSION_OPTIONS)}
    not_yet = {k.lower(): why for k, why in (*_NOT_YET.items(), *_STREAM_ONLY.items())}
    for key in options:
        lowered = key.lower()
        if lowered in keys.INTERNAL or lowered in accepted:
            continue
        if lowered in not_yet:
            raise UnsupportedError(f"table {table}: read option '{key}': {not_yet[lowered]}")
        close = difflib.get_close_matches(lowered, [k.lower() for k in _known()], n=1)
        hint = f" (did you mean '{_spelled(close[0])}'?)" if close else ""
        raise InvalidOptionError(
            f"table {table}: unknown read option '{key}'{hint}; supported read options: {', '.join(_known())}"
        )
    command = option_text(options, keys.ROW_LEVEL_COMMAND)
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
    given = [n for n in _VERSION_CHOOSING if option_text(options, n)]
    mode = (option_text(options, SCAN_MODE) or "default").lower()
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


def scan_snapshot(table: Table, options: Mapping[str, str]) -> tuple[Snapshot | None, str | None]:
    """The snapshot a batch read's scan options name, and the tag when by tag (its own snapshot
    copy, readable after the snapshot expired); ``(None, None)`` for the latest."""
    check_read_options(table.identifier, options)
    return scan_options.snapshot_choice(table, options)


def incremental_range(
    table: Table, options: Mapping[str, str], time_travel: bool = False
) -> IncrementalRange | None:
    """The incremental read the options ask for, resolved against the table; None for a normal
    read. ``time_travel``: the read also names a version (VERSION / TIMESTAMP AS OF): refused."""
    check_read_options(table.identifier, options)
    return scan_options.incremental_choice(table, options, time_travel)


__all__ = [
    "BATCH_SCAN_OPTIONS",
    "check_read_options",
    "incremental_range",
    "is_incremental",
    "parse_timestamp_ms",
    "scan_snapshot",
]
