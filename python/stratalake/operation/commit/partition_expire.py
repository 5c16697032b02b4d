"""Partition expiration, as Paimon's ``NormalPartitionExpire`` with the ``values-time`` strategy.

A partition expires when the time its values name is older than now less
``partition.expiration-time``: the time is read from the first partition value, or from
``partition.timestamp-pattern`` with ``$column`` replaced by values (e.g. ``'$dt $hh:00:00'``),
parsed with ``partition.timestamp-formatter`` (a Java pattern such as ``yyyyMMdd``) or else
leniently as ``yyyy-MM-dd[ HH:mm:ss[.fff]]``. A value that is no time never expires. At most
``partition.expiration-max-num`` partitions go per run, in batches of
``partition.expiration-batch-size`` (one OVERWRITE commit each).

After a commit (:func:`expire_after_commit`), as Paimon's committer: not for ``write-only``
tables; at most once per ``partition.expiration-check-interval`` per table and process, the first
check falling a random part of that interval after the process's first commit (so a short batch
job usually does not expire, as in Paimon), unless ``end-input.check-partition-expire`` asks for
a check at the end of each batch write.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from stratalake.exceptions import InvalidOptionError, UnsupportedError
from stratalake.options import parse_duration_ms
from stratalake.spec.snapshot import BATCH_COMMIT_IDENTIFIER

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

_LOG = logging.getLogger(__name__)

EXPIRATION_TIME = "partition.expiration-time"
STRATEGY = "partition.expiration-strategy"
_JAVA_PATTERN = (("yyyy", "%Y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"), ("ss", "%S"))
_DEFAULT_TIME = re.compile(
    r"(\d{1,10})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?)?"
)

#: Drops the partitions given as specs (one OVERWRITE commit).
Drop = Callable[[list[dict[str, Any]]], object]


def _python_format(java: str) -> str:
    fmt = java
    for j, p in _JAVA_PATTERN:
        fmt = fmt.replace(j, p)
    return fmt


def partition_time(
    keys: Sequence[str], values: Sequence[Any], pattern: str | None, formatter: str | None
) -> dt.datetime | None:
    """The time a partition's values name (Paimon's ``PartitionTimeExtractor``), None if none."""
    if any(v is None for v in values):
        return None
    if pattern:
        # Longer keys first, so that $dt does not match inside $dt1.
        order = sorted(range(len(keys)), key=lambda i: -len(keys[i]))
        out, i = [], 0
        while i < len(pattern):
            if pattern[i] == "$":
                hit = next((k for k in order if pattern.startswith(keys[k], i + 1)), None)
                if hit is not None:
                    out.append(str(values[hit]))
                    i += 1 + len(keys[hit])
                    continue
            out.append(pattern[i])
            i += 1
        text = "".join(out)
    else:
        text = str(values[0])
    if formatter:
        try:
            return dt.datetime.strptime(text, _python_format(formatter))
        except ValueError:
            return None
    m = _DEFAULT_TIME.fullmatch(text.strip())
    if m is None:
        return None
    y, mo, d, h, mi, s, frac = m.groups()
    try:
        return dt.datetime(
            int(y),
            int(mo),
            int(d),
            int(h or 0),
            int(mi or 0),
            int(s or 0),
            int((frac or "0")[:6].ljust(6, "0")),
        )
    except ValueError:
        return None


def expired_partitions(
    table: TableStore,
    expiration_time: str,
    timestamp_formatter: str | None = None,
    timestamp_pattern: str | None = None,
    expire_strategy: str | None = None,
    max_expires: int | None = None,
    now: dt.datetime | None = None,
) -> list[dict[str, Any]]:
    """The live partitions of ``table`` that expire now (arguments override the table's
    ``partition.*`` options), as partition specs in Paimon's order, at most ``max_expires``."""
    opts = table.core_options
    ident = table.identifier
    strategy = (expire_strategy or opts.get(STRATEGY) or "values-time").strip().lower()
    if strategy != "values-time":
        raise UnsupportedError(
            f"table {ident}: partition expiration strategy '{strategy}' is not supported; only "
            "'values-time' (the time partition values name) is"
        )
    if not table.schema().partition_keys:
        raise InvalidOptionError(f"table {ident} has no partitions to expire")
    try:
        expiration = dt.timedelta(milliseconds=parse_duration_ms(expiration_time))
    except ValueError as e:
        raise InvalidOptionError(f"table {ident}: expiration time '{expiration_time}': {e}") from None
    formatter = timestamp_formatter or opts.get("partition.timestamp-formatter")
    pattern = timestamp_pattern or opts.get("partition.timestamp-pattern")
    limit = max_expires if max_expires is not None else (opts.get_int("partition.expiration-max-num") or 100)
    cutoff = (now or dt.datetime.now()) - expiration
    snap = table.latest_snapshot()
    if snap is None:
        return []
    codec = table.partition_codec
    keys = list(table.schema().partition_keys)
    seen: set[bytes] = set()
    expired: list[dict[str, Any]] = []
    for entry in table.live_entries(snap):
        if entry.partition in seen:
            continue
        seen.add(entry.partition)
        values = codec.to_dict(entry.partition)
        when = partition_time(keys, [values[k] for k in keys], pattern, formatter)
        if when is not None and when < cutoff:
            expired.append(values)
    expired.sort(key=lambda spec: "-".join(str(spec[k]) for k in keys))
    return expired[: max(limit, 0)]


def expire_partitions(
    table: TableStore,
    drop: Drop,
    expiration_time: str,
    timestamp_formatter: str | None = None,
    timestamp_pattern: str | None = None,
    expire_strategy: str | None = None,
    max_expires: int | None = None,
) -> list[dict[str, Any]]:
    """Drop the partitions :func:`expired_partitions` names, ``partition.expiration-batch-size``
    at a time (all at once by default); returns them."""
    specs = expired_partitions(
        table, expiration_time, timestamp_formatter, timestamp_pattern, expire_strategy, max_expires
    )
    size = table.core_options.get_int("partition.expiration-batch-size") or 0
    step = size if 0 < size < len(specs) else max(len(specs), 1)
    for start in range(0, len(specs), step):
        drop(specs[start : start + step])
    return specs


_LAST_CHECK: dict[str, dt.datetime] = {}


def expire_after_commit(table: TableStore, commit_identifier: int, drop: Drop) -> list[dict[str, Any]]:
    """Expire partitions after a commit when due (see the module docstring); a failure is logged,
    not raised: the commit already succeeded."""
    opts = table.core_options
    expiration = opts.get(EXPIRATION_TIME)
    if not expiration or opts.get_bool("write-only") or not table.schema().partition_keys:
        return []
    try:
        interval = dt.timedelta(
            milliseconds=parse_duration_ms(opts.get("partition.expiration-check-interval") or "1 h")
        )
        now = dt.datetime.now()
        last = _LAST_CHECK.get(table.metadata_path)  # per branch: each has its own partitions
        if last is None:
            seconds = int(interval.total_seconds())
            last = now - dt.timedelta(seconds=random.randrange(seconds) if seconds > 0 else 0)
            _LAST_CHECK[table.metadata_path] = last
        end_input = (
            opts.get_bool("end-input.check-partition-expire") and commit_identifier == BATCH_COMMIT_IDENTIFIER
        )
        if not (interval == dt.timedelta(0) or now > last + interval or end_input):
            return []
        _LAST_CHECK[table.metadata_path] = now  # before dropping: the drop's own commit comes back here
        return expire_partitions(table, drop, expiration)
    except Exception as failure:
        _LOG.warning(
            "table %s: the commit succeeded, but partition expiration after it failed: %s: %s",
            table.identifier,
            type(failure).__name__,
            failure,
        )
        return []


def describe(specs: Sequence[Mapping[str, Any]]) -> list[str]:
    """``k=v,k2=v2`` per partition spec, as Paimon's procedure prints them."""
    return [",".join(f"{k}={v}" for k, v in s.items()) for s in specs]
