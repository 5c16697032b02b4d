"""Paimon table options stratalake does not honour: refused by name, never silently stored.

Paimon keeps every option in the table's schema, and stratalake stores Paimon's keys too (a table
stays Paimon's). But an option whose effect stratalake does not implement would be a silent wrong
answer: ``'record-level.expire-time'`` on a table whose rows then never expire, ``'commit.callbacks'``
on a table whose callbacks then never run. So each such option is
listed here with Paimon's default and where it acts (read from Paimon's ``CoreOptions``):

- :data:`READ`: changes what a read returns. Set to anything but Paimon's default, it is refused
  where it is set (CREATE, ALTER ... SET), and a table that carries it (written by Paimon) is
  neither read nor written (:func:`stratalake.store.support.unsupported_features`).
- :data:`WRITE`: changes what a write or compaction stores. Refused where set; such a table is
  read, but not written.
- :data:`AUTOMATION`: work Paimon's writers do after a commit (automatic tags, partition expiry,
  callbacks). Refused where set; a table that carries it (Paimon runs that work) is read and
  written, and a write logs once per process that stratalake does not do that work.

Options that only tune Paimon's Java engine (memory pages, thread counts, spilling, caches of the
Flink lookup join...) change no result; :func:`engine_tuning_notice` names them where they are
set, so nobody expects an effect. Options stratalake implements are in
:data:`stratalake.options.KNOWN_OPTIONS` or read where they act.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from stratalake.exceptions import SchemaError, UnsupportedError
from stratalake.options import KNOWN_OPTIONS

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Unhonoured:
    """A Paimon option stratalake does not implement: its default (None: no default, any value
    is refused) and what it does in Paimon."""

    default: str | None
    what: str

    def is_set(self, value: str) -> bool:
        text = value.strip().lower()
        if not text:
            return False
        return self.default is None or text != self.default


#: Options that change what reads return.
READ: Final[Mapping[str, Unhonoured]] = {
    "sequence.snapshot-ordering": Unhonoured("false", "orders records of one key by commit snapshot"),
    "primary-key.nullable": Unhonoured("false", "allows null primary-key values, merged null-safe"),
    "data-file.thin-mode": Unhonoured("false", "stores primary-key data files without the key columns"),
    "table-read.sequence-number.enabled": Unhonoured(
        "false", "adds _SEQUENCE_NUMBER to $audit_log and $binlog rows"
    ),
    "key-value.sequence_number.enabled": Unhonoured("false", "adds _SEQUENCE_NUMBER to key-value reads"),
    "scan.bucket": Unhonoured(None, "reads one bucket only"),
    "scan.version": Unhonoured(None, "reads a stored version (tag or snapshot) by default"),
    "scan.watermark": Unhonoured(None, "starts reads at the snapshot of a watermark"),
    "scan.creation-time-millis": Unhonoured(None, "reads from a creation time"),
    "scan.file-creation-time-millis": Unhonoured(None, "reads only files created after a time"),
    "scan.bounded.watermark": Unhonoured(None, "ends streaming reads at a watermark"),
    "scan.plan-auto-tag-for-read.time-retained": Unhonoured(None, "tags the snapshot each scan reads"),
    "scan.primary-branch": Unhonoured(None, "reads partitions from a primary branch first"),
    # Paimon's default (false) logs a failed read of a fallback-branch split and reads the split
    # with the current branch's reader instead; stratalake's reads always fail (as with 'true').
    "scan.fallback-branch.read-fail-fast": Unhonoured(
        "true", "logs failed reads of fallback-branch splits and reads them as the current branch's"
    ),
    "scan.fallback-snapshot-branch": Unhonoured(None, "reads missing partitions of a chain table"),
    "scan.fallback-delta-branch": Unhonoured(None, "reads missing partitions of a chain table"),
    "scan.ignore-corrupt-files": Unhonoured("false", "skips corrupt files while reading"),
    "scan.ignore-lost-files": Unhonoured("false", "skips lost files while reading"),
    "batch-scan-mode": Unhonoured("none", "forces Paimon's internal batch scanners"),
    "stream-scan-mode": Unhonoured("none", "forces Paimon's internal streaming scanners"),
    "streaming-read-overwrite": Unhonoured("false", "streams the changes of OVERWRITE commits"),
    "streaming-read-append-overwrite": Unhonoured(
        "false", "streams the rows of append tables' OVERWRITE commits"
    ),
}

#: Options that change what writes and compactions store.
WRITE: Final[Mapping[str, Unhonoured]] = {
    "record-level.expire-time": Unhonoured(None, "drops expired records when compacting"),
    "ignore-update-before": Unhonoured("false", "drops -U records on write"),
    "changelog-producer.row-deduplicate-ignore-fields": Unhonoured(
        None, "ignores fields when deduplicating -U/+U changelog pairs"
    ),
    "commit.discard-duplicate-files": Unhonoured("false", "drops data files committed twice"),
    "commit.force-compact": Unhonoured("false", "compacts before every commit"),
    "write.sequence-number-init-mode": Unhonoured("scan", "starts sequence numbers another way"),
}

#: Work Paimon's writers do after commits.
AUTOMATION: Final[Mapping[str, Unhonoured]] = {
    "tag.create-success-file": Unhonoured("false", "writes a success file for each new tag"),
    "tag.callbacks": Unhonoured(None, "calls Java classes after each tag"),
    "commit.callbacks": Unhonoured(None, "calls Java classes after each commit"),
    "partition.expiration-strategy": Unhonoured("values-time", "expires partitions by their last update"),
    "partition.end-input-to-done": Unhonoured("false", "marks partitions done when a batch ends"),
    "snapshot.clean-empty-directories": Unhonoured("false", "removes empty directories on expiry"),
    "metastore.tag-to-partition": Unhonoured(None, "maps tags to metastore partitions"),
    "metastore.tag-to-partition.preview": Unhonoured("none", "previews tags as metastore partitions"),
    "compaction.optimization-interval": Unhonoured(None, "compacts fully at an interval"),
}

#: What to do instead, per option.
_ADVICE: Final[Mapping[str, str]] = {
    "scan.version": "time-travel with VERSION AS OF or the read option 'scan.tag-name' / 'scan.snapshot-id'",
    "partition.expiration-strategy": "use 'values-time' (partition values that name a time)",
    "commit.force-compact": "compact with CALL sys.compact",
    "compaction.optimization-interval": "compact with CALL sys.compact",
    "record-level.expire-time": "delete expired rows with DELETE",
    "scan.fallback-branch.read-fail-fast": "stratalake always fails such a read; leave the option unset "
    "or 'true'",
}

#: Options that tune Paimon's Java engine only (no result depends on them).
ENGINE_TUNING: Final = frozenset(
    {
        "async-file-write",
        "cache-page-size",
        "commit.max-retry-wait",
        "commit.min-retry-wait",
        "commit.timeout",
        "continuous.discovery-interval",
        "cross-partition-upsert.bootstrap-parallelism",
        "delete-file.thread-num",
        "file.block-size",
        "file-operation.thread-num",
        "file-reader-async-threshold",
        "local-merge-buffer-size",
        "local-sort.max-num-file-handles",
        "lookup.cache-spill-compression",
        "lookup.cache.bloom.filter.enabled",
        "lookup.cache.bloom.filter.fpp",
        "lookup.cache.high-priority-pool-ratio",
        "lookup.hash-load-factor",
        "page-size",
        "read.batch-size",
        "scan.manifest.parallelism",
        "scan.max-splits-per-task",
        "sort-engine",
        "sort-spill-buffer-size",
        "sort-spill-threshold",
        "spill-compression",
        "spill-compression.zstd-level",
        "write-buffer-for-append",
        "write-max-writers-to-spill",
        "write.batch-memory",
        "write.batch-size",
    }
)

_SCOPES: Final = (("read", READ), ("write", WRITE), ("automation", AUTOMATION))


def _find(key: str) -> tuple[str, Unhonoured] | None:
    for scope, table in _SCOPES:
        if key in table:
            return scope, table[key]
    return None


def _message(table: str, key: str, value: str, option: Unhonoured) -> str:
    advice = _ADVICE.get(key, "remove it, or use Paimon for what it does")
    return (
        f"table {table}: option '{key}'='{value}' is Paimon's (it {option.what}), which stratalake "
        f"does not implement; {advice}"
    )


def check_settable(options: Mapping[str, str], table: str) -> None:
    """Refuse, by name, an option being set (CREATE, ALTER ... SET) that stratalake does not
    honour (:class:`UnsupportedError`; the table is unchanged)."""
    for key, value in options.items():
        found = _find(str(key).strip())
        if found is not None and found[1].is_set(str(value)):
            raise UnsupportedError(_message(table, str(key), str(value), found[1]))


def unhonoured(options: Mapping[str, str], scope: str) -> list[tuple[str, str, str]]:
    """``(key, value, what)`` of each option of a table set to a value stratalake does not honour
    in ``scope`` (``read``, ``write`` or ``automation``)."""
    table = dict(_SCOPES)[scope]
    return [
        (key, value, table[key].what)
        for key, value in options.items()
        if key in table and table[key].is_set(str(value))
    ]


_WARNED: set[tuple[str, str]] = set()


def warn_automation(options: Mapping[str, str], table: str) -> None:
    """Log, once per process and option, that a table's writer-side automation (Paimon's
    :data:`AUTOMATION` options) is not done by stratalake's writes."""
    for key, value, what in unhonoured(options, "automation"):
        if (table, key) in _WARNED:
            continue
        _WARNED.add((table, key))
        _LOG.warning(
            "table %s: option '%s'='%s' (in Paimon it %s): stratalake's commits do not do that; %s",
            table,
            key,
            value,
            what,
            _ADVICE.get(key, "Paimon's writers still do it"),
        )


#: Key prefixes Paimon hands to a format's Java writer and reader (parquet-mr's ``parquet.page.size``,
#: ORC's ``orc.bloom.filter.columns``...): they shape files, never a result.
FORMAT_PREFIXES: Final = ("parquet.", "orc.", "avro.")

#: The format library keys stratalake's writers apply: its known options under those prefixes.
HONOURED_FORMAT_OPTIONS: Final = frozenset(k for k in KNOWN_OPTIONS if k.startswith(FORMAT_PREFIXES))


def engine_tuning_notice(options: Mapping[str, str], table: str) -> str | None:
    """A notice naming the options set that tune Paimon's Java engine or its format libraries
    only (not the format keys of :data:`HONOURED_FORMAT_OPTIONS`), or None."""
    tuning = sorted(
        k
        for k in options
        if k in ENGINE_TUNING or (k.startswith(FORMAT_PREFIXES) and k not in HONOURED_FORMAT_OPTIONS)
    )
    if not tuning:
        return None
    return (
        f"table {table}: option(s) {', '.join(repr(k) for k in tuning)} tune Paimon's Java engine "
        "or its file format libraries; they are kept for Paimon but change nothing in stratalake"
    )


# ---- options fixed once a table exists --------------------------------------------------------

#: Options fixed at creation: changing them would reinterpret existing files (Paimon's
#: ``CoreOptions.IMMUTABLE_OPTIONS`` plus ``bucket``, which stratalake does not rescale).
IMMUTABLE: Final = frozenset({"bucket", "bucket-key", "merge-engine", "primary-key", "partition", "sequence.field"})

_DV = "deletion-vectors.enabled"
_DV_MODIFIABLE = "deletion-vectors.modifiable"


def check_option_change(options: Mapping[str, str], key: str, new: str | None, table: str) -> None:
    """Refuse changing option ``key`` of a table whose options are ``options`` to ``new`` (None:
    removed), where Paimon's ``SchemaManager.checkAlterTableOption`` refuses it; raises
    :class:`stratalake.exceptions.SchemaError` naming the table and the option.

    Used by ALTER TABLE and by a handle's dynamic options (a compaction's ``options`` argument).
    """
    old = options.get(key)
    if old == new:
        return
    if key in IMMUTABLE and (new is not None or old is not None):
        verb = "removed" if new is None else "changed"
        raise SchemaError(f"table {table}: option '{key}' cannot be {verb} after creation")
    if key == _DV and options.get(_DV_MODIFIABLE, "false").strip().lower() != "true":
        # Paimon's reads of a deletion-vector table skip level-0 files and its compactions produce
        # deletion vectors, so flipping the mode without a full compaction shows rows twice or
        # loses them in Paimon's readers.
        before = (old or "false").strip().lower() == "true"
        after = (new or "false").strip().lower() == "true"
        if before != after:
            raise SchemaError(
                f"table {table}: cannot change '{_DV}' from {str(before).lower()} to {str(after).lower()}; "
                f"without a full compaction first, readers may see rows twice or miss them. If you are "
                f"sure, set '{_DV_MODIFIABLE}'='true' first (Paimon's rule)"
            )
