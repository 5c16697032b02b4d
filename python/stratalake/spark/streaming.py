"""Structured Streaming on stratalake tables: change streams out, exactly-once micro-batches in.

Reads (``spark.readStream.table("lake.db.t")`` or ``.format("stratalake")``) follow Paimon's
streaming scan: first the table's state at a snapshot (``scan.mode`` ``latest-full``, the default),
then every following snapshot's change records per the table's ``changelog-producer`` (``none``:
the files APPEND snapshots added; ``input`` / ``lookup`` / ``full-compaction``: changelog files).
A plain table stream keeps inserts and update-afters; ``db.t$audit_log`` streams keep every record
with its kind in a leading ``rowkind`` column. Through the catalog, "latest" is the latest snapshot
when the streaming DataFrame was defined (the table load), so rows written after ``start()`` are
changes of the stream, never part of its initial full scan.

An offset is a position in that sequence of *units* (the full scan of one snapshot, or the
changelog of one snapshot) and of *items* within a unit (one bucket split of a full scan, one
changelog file)::

    {"snapshot": 7, "full": false, "index": 2}   # next: item 2 of snapshot 7's changelog

Units and their items are pure functions of immutable snapshots, so a batch replayed from a
checkpoint reads exactly the same records. ``read.stream.maxFilesPerTrigger`` and
``read.stream.maxRowsPerTrigger`` cut batches at item boundaries (at least one item per batch).

With ``consumer-id`` (a read option or table option), the stream is a Paimon consumer: a query
started while ``consumer/consumer-<id>`` exists starts at the consumer's ``nextSnapshot`` (reading
that snapshot's changes on, no full scan) unless ``consumer.ignore-progress``, and each micro-batch
whose offsets Spark commits records the first snapshot the query has not wholly read. While it
exists the consumer keeps snapshot expiration from removing what it reads next. Paimon's Spark
source reads the consumer's start but records no progress; its Flink source records it when a
checkpoint completes, which is Spark's offset commit here.

Writes (``df.writeStream.toTable("lake.db.t")``) commit each micro-batch as one snapshot with the
batch id as commit identifier and a commit user derived from the query id (stable across restarts
from a checkpoint), so a batch Spark replays after a failure is recognised and not committed twice.
"""

from __future__ import annotations

import contextlib
import enum
import json
import logging
import pickle
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from stratalake.exceptions import InvalidOptionError, SnapshotNotFoundError, UnsupportedError
from stratalake.options import CONSUMER_MODES, ChangelogProducer
from stratalake.read import new_branch_scan
from stratalake.read.changelog_read import (
    AUDIT_KIND_COLUMN,
    read_changelog_entry,
    snapshot_changelog_entries,
)
from stratalake.read.scan import Split
from stratalake.spark import source_options as keys
from stratalake.spark.read_options import is_incremental
from stratalake.spark.source import (
    StrataLakeCommitMessage,
    _option,
    conform,
    is_audit_log,
    load_base_table,
    load_table,
    set_dynamic_assigners,
)
from stratalake.spark.worker_memory import use_worker_allocator
from stratalake.spark.write_options import COMMIT_USER, check_write_options
from stratalake.store.consumer_manager import check_consumer_id
from stratalake.store.index_manifest import live_index_entries

_LOG = logging.getLogger(__name__)

if TYPE_CHECKING:
    from stratalake.spec.manifest import ManifestEntry
    from stratalake.spec.snapshot import Snapshot
    from stratalake.table.table import Table

SCAN_MODE = "scan.mode"
SCAN_SNAPSHOT_ID = "scan.snapshot-id"
SCAN_TIMESTAMP_MILLIS = "scan.timestamp-millis"
MAX_FILES_PER_TRIGGER = "read.stream.maxFilesPerTrigger"
MAX_ROWS_PER_TRIGGER = "read.stream.maxRowsPerTrigger"
CONSUMER_ID = "consumer-id"
CONSUMER_IGNORE_PROGRESS = "consumer.ignore-progress"
CONSUMER_MODE = "consumer.mode"

_KEPT_KINDS = pa.array(["+I", "+U"])  # what a plain (non-audit) table stream emits


class ScanMode(enum.Enum):
    LATEST_FULL = "latest-full"
    LATEST = "latest"
    FROM_SNAPSHOT = "from-snapshot"
    FROM_SNAPSHOT_FULL = "from-snapshot-full"
    FROM_TIMESTAMP = "from-timestamp"


# ---- options ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class StreamConfig:
    """The streaming-read options, from the table's options overridden by the query's."""

    mode: ScanMode
    snapshot_id: int | None
    timestamp_ms: int | None
    max_files: int | None
    max_rows: int | None
    consumer_id: str | None = None
    ignore_progress: bool = False

    @classmethod
    def of(cls, table: Table, options: Mapping[str, str]) -> StreamConfig:
        merged = {**table.options(), **dict(options)}
        where = f"table {table.identifier}"

        def number(name: str) -> int | None:
            value = _option(merged, name)
            if value is None or value == "":
                return None
            try:
                n = int(value)
            except ValueError:
                raise InvalidOptionError(
                    f"{where}: option '{name}' must be an integer, got {value!r}"
                ) from None
            if n < 0 or (n == 0 and name in (MAX_FILES_PER_TRIGGER, MAX_ROWS_PER_TRIGGER)):
                raise InvalidOptionError(f"{where}: option '{name}' must be positive, got {value!r}")
            return n

        snapshot_id, timestamp_ms = number(SCAN_SNAPSHOT_ID), number(SCAN_TIMESTAMP_MILLIS)
        raw = (_option(merged, SCAN_MODE) or "default").strip().lower()
        if raw == "default":  # as Paimon: the start options choose the mode
            if snapshot_id is not None:
                mode = ScanMode.FROM_SNAPSHOT
            elif timestamp_ms is not None:
                mode = ScanMode.FROM_TIMESTAMP
            else:
                mode = ScanMode.LATEST_FULL
        elif raw == "full":  # Paimon's deprecated name of latest-full
            mode = ScanMode.LATEST_FULL
        else:
            try:
                mode = ScanMode(raw)
            except ValueError:
                choices = ", ".join(m.value for m in ScanMode)
                raise InvalidOptionError(
                    f"{where}: streaming reads support scan.mode {choices} (or default), not {raw!r}"
                ) from None
        if mode in (ScanMode.FROM_SNAPSHOT, ScanMode.FROM_SNAPSHOT_FULL) and snapshot_id is None:
            raise InvalidOptionError(f"{where}: scan.mode '{mode.value}' needs option '{SCAN_SNAPSHOT_ID}'")
        if mode is ScanMode.FROM_TIMESTAMP and timestamp_ms is None:
            raise InvalidOptionError(
                f"{where}: scan.mode 'from-timestamp' needs option '{SCAN_TIMESTAMP_MILLIS}'"
            )
        consumer_id = _option(merged, CONSUMER_ID)
        if consumer_id is not None:
            check_consumer_id(consumer_id, table.identifier)
        ignore = (_option(merged, CONSUMER_IGNORE_PROGRESS) or "false").strip().lower()
        if ignore not in ("true", "false"):
            raise InvalidOptionError(f"{where}: option '{CONSUMER_IGNORE_PROGRESS}' must be true or false, got {ignore!r}")
        consumer_mode = (_option(merged, CONSUMER_MODE) or CONSUMER_MODES[0]).strip().lower()
        if consumer_mode not in CONSUMER_MODES:
            raise InvalidOptionError(
                f"{where}: option '{CONSUMER_MODE}' must be one of {', '.join(CONSUMER_MODES)}, got {consumer_mode!r}"
            )
        return cls(
            mode,
            snapshot_id,
            timestamp_ms,
            number(MAX_FILES_PER_TRIGGER),
            number(MAX_ROWS_PER_TRIGGER),
            consumer_id,
            ignore == "true",
        )


# ---- offsets ---------------------------------------------------------------------------------

FULL, CHANGES = 0, 1  # the two kinds of unit; a snapshot's full scan sorts before its changelog


@dataclass(frozen=True, order=True)
class StreamOffset:
    """The next item to read: item ``index`` of ``snapshot``'s full scan or changelog."""

    snapshot: int
    phase: int
    index: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"snapshot": self.snapshot, "full": self.phase == FULL, "index": self.index}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> StreamOffset:
        return cls(int(obj["snapshot"]), FULL if obj.get("full") else CHANGES, int(obj.get("index", 0)))

    def next_unit(self) -> StreamOffset:
        """The start of the unit after this one: a full scan of S is followed by S+1's changes."""
        return StreamOffset(self.snapshot + 1, CHANGES, 0)


@dataclass(frozen=True)
class _Item:
    """The smallest piece of a unit a batch may end after: one bucket split or changelog file."""

    partition: bytes
    bucket: int
    files: int
    rows: int
    split: Split | None = None
    entry: ManifestEntry | None = None


class StreamPartition(InputPartition):
    """One bucket's work of a batch, in order: a pickled list of splits and changelog entries."""


# ---- reads -----------------------------------------------------------------------------------


class StrataLakeStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans batches as ranges of snapshot positions; reads them bucket by bucket in tasks.

    Spark keeps one instance per query run in a driver-side Python process (offsets, planning)
    and builds fresh ones for the tasks' :meth:`read`; so the constructor stays cheap.
    """

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.options = dict(options)
        self.schema_json = schema.json()
        self.audit = is_audit_log(self.options)
        system = _option(self.options, keys.SYSTEM_TABLE)
        if system is not None and not self.audit:
            ident = _option(self.options, keys.TABLE, "table")
            raise UnsupportedError(
                f"table {ident}${system}: only $audit_log of the system tables is a stream"
            )
        if is_incremental(self.options):  # as Paimon: "Cannot read incremental in streaming mode"
            ident = _option(self.options, keys.TABLE, "table")
            raise InvalidOptionError(
                f"table {ident}: incremental read options ('incremental-between'...) are for batch reads; a "
                "stream reads changes from 'scan.mode' / 'scan.snapshot-id' on"
            )
        self._table: Table | None = None
        self._config: StreamConfig | None = None
        self._units: dict[tuple[int, int], list[_Item]] = {}
        self._target: int | None = None  # Trigger.AvailableNow: the last snapshot to read

    def __getstate__(self) -> dict[str, Any]:
        # Tasks get a pickled reader: planning state stays on the driver.
        state = dict(self.__dict__)
        state.update(_table=None, _config=None, _units={}, _target=None)
        return state

    # -- driver side ------------------------------------------------------------------------------
    def _load(self, refresh: bool = False) -> Table:
        if self._table is None or refresh:
            self._table = load_base_table(self.options)
        return self._table

    @property
    def config(self) -> StreamConfig:
        if self._config is None:
            self._config = StreamConfig.of(self._load(), self.options)
        return self._config

    def initialOffset(self) -> dict[str, Any]:
        table = self._load(refresh=True)
        cfg = self.config
        resumed = self._consumer_start(table)
        if resumed is not None:
            return resumed.to_json()
        latest = self._latest_at_start(table)
        if cfg.mode is ScanMode.LATEST_FULL:
            start = StreamOffset(1, CHANGES) if latest is None else StreamOffset(latest, FULL)
        elif cfg.mode is ScanMode.LATEST:
            start = StreamOffset((latest or 0) + 1, CHANGES)
        elif cfg.mode is ScanMode.FROM_TIMESTAMP:
            assert cfg.timestamp_ms is not None
            start = StreamOffset(self._first_snapshot_at_or_after(table, cfg.timestamp_ms), CHANGES)
        else:
            assert cfg.snapshot_id is not None
            full = cfg.mode is ScanMode.FROM_SNAPSHOT_FULL
            if full:
                table.snapshot(cfg.snapshot_id)  # must exist: clear error otherwise
            start = StreamOffset(cfg.snapshot_id, FULL if full else CHANGES)
        return start.to_json()

    def _consumer_start(self, table: Table) -> StreamOffset | None:
        """Where the consumer left off: its ``nextSnapshot``'s changes on (Paimon's
        ``AbstractDataTableScan``: a consumer's start overrides ``scan.mode``); None without one."""
        cfg = self.config
        if cfg.consumer_id is None or cfg.ignore_progress:
            return None
        found = table.consumer_manager.consumer(cfg.consumer_id)
        if found is None:
            return None
        earliest = table.snapshot_manager.earliest_snapshot_id()
        start = found.next_snapshot
        if earliest is not None and start < earliest and table.changelog_manager.try_changelog(start) is None:
            # As Paimon's Spark source (its initial offset is at least the earliest snapshot).
            _LOG.warning(
                "table %s: consumer %r is at snapshot %s, which expired; starting at the earliest snapshot %s",
                table.identifier,
                cfg.consumer_id,
                start,
                earliest,
            )
            start = earliest
        return StreamOffset(start, CHANGES)

    def _latest_at_start(self, table: Table) -> int | None:
        """The latest snapshot when the query was defined (the catalog's table load, see
        ``STREAM_LATEST_SNAPSHOT``), else now. Spark asks for the initial offset only once the
        query's Python reader is up, seconds after ``start()``: a start taken then would fold the
        rows written meanwhile into the initial full scan instead of streaming them as changes."""
        sm = table.snapshot_manager
        text = _option(self.options, keys.STREAM_LATEST_SNAPSHOT)
        if text is None:  # .format("stratalake").load(): no table load to fix it at
            return sm.latest_snapshot_id()
        fixed = int(text) or None
        earliest = sm.earliest_snapshot_id()
        # The first snapshot the stream needs: the fixed one (its full scan), or snapshot 1.
        needed = fixed if fixed is not None else 1
        if earliest is not None and needed < earliest:
            latest = sm.latest_snapshot_id()
            _LOG.warning(
                "table %s: the stream's start snapshot %s expired before the query started; "
                "starting at the latest snapshot %s instead",
                table.identifier,
                needed,
                latest,
            )
            return latest
        return fixed

    @staticmethod
    def _first_snapshot_at_or_after(table: Table, timestamp_ms: int) -> int:
        sm = table.snapshot_manager
        latest, earliest = sm.latest_snapshot_id(), sm.earliest_snapshot_id()
        if latest is None or earliest is None:
            return 1
        try:
            return sm.snapshot_at_or_before(timestamp_ms - 1).id + 1
        except SnapshotNotFoundError:  # every retained snapshot is at or after the timestamp
            return earliest

    def getDefaultReadLimit(self) -> ReadLimit:
        cfg = self.config
        if cfg.max_files is not None:
            return ReadMaxFiles(cfg.max_files)
        if cfg.max_rows is not None:
            return ReadMaxRows(cfg.max_rows)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._load(refresh=True).snapshot_manager.latest_snapshot_id() or 0

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        table = self._load(refresh=True)  # picks up schema changes
        latest = table.snapshot_manager.latest_snapshot_id() or 0
        cap = latest if self._target is None else min(latest, self._target)
        max_files, max_rows = self._limits(limit)
        return self._advance(StreamOffset.from_json(start), cap, max_files, max_rows).to_json()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        latest = self._load().snapshot_manager.latest_snapshot_id()
        return None if latest is None else StreamOffset(latest + 1, CHANGES).to_json()

    def _limits(self, limit: ReadLimit) -> tuple[int | None, int | None]:
        """Spark's limit wins; with a limited trigger both configured limits apply."""
        if isinstance(limit, ReadAllAvailable):
            return None, None
        cfg = self.config
        if isinstance(limit, ReadMaxFiles):
            return limit.max_files, cfg.max_rows
        if isinstance(limit, ReadMaxRows):
            return cfg.max_files, limit.max_rows
        return cfg.max_files, cfg.max_rows

    def _advance(
        self, pos: StreamOffset, cap: int, max_files: int | None, max_rows: int | None
    ) -> StreamOffset:
        files = rows = taken = 0
        while pos.snapshot <= cap:
            items = self._unit(pos)
            while pos.index < len(items):
                item = items[pos.index]
                over = (max_files is not None and files + item.files > max_files) or (
                    max_rows is not None and rows + item.rows > max_rows
                )
                if taken and over:
                    return pos
                files, rows, taken = files + item.files, rows + item.rows, taken + 1
                pos = replace(pos, index=pos.index + 1)
            pos = pos.next_unit()
        return pos

    def _unit(self, pos: StreamOffset) -> list[_Item]:
        """The items of ``pos``'s unit (cached: snapshots never change)."""
        key = (pos.snapshot, pos.phase)
        items = self._units.get(key)
        if items is None:
            items = self._plan_full(pos.snapshot) if pos.phase == FULL else self._plan_changes(pos.snapshot)
            self._units[key] = items
        return items

    def _plan_full(self, snapshot_id: int) -> list[_Item]:
        table = self._load()
        self._snapshot(snapshot_id)  # a clear error if it expired
        producer = table.core_options.changelog_producer
        top = table.core_options.num_levels - 1
        items = []
        # As Paimon's streaming reads: the current branch alone, whatever its fallback branch.
        for split in new_branch_scan(table, snapshot_id=snapshot_id).plan():
            # As Paimon: with lookup / full-compaction changelogs, the full phase reads only what
            # already produced its changelog; the rest arrives through later snapshots' changelogs.
            if producer is ChangelogProducer.LOOKUP:
                split = replace(split, files=tuple(f for f in split.files if f.level > 0))
            elif producer is ChangelogProducer.FULL_COMPACTION:
                split = replace(split, files=tuple(f for f in split.files if f.level == top))
            if split.files:
                items.append(
                    _Item(split.partition, split.bucket, len(split.files), split.row_count, split=split)
                )
        return sorted(items, key=lambda i: (i.partition, i.bucket))

    def _plan_changes(self, snapshot_id: int) -> list[_Item]:
        table = self._load()
        snap = self._snapshot(snapshot_id)
        return [
            _Item(e.partition, e.bucket, 1, e.file.row_count, entry=e)
            for e in snapshot_changelog_entries(table, snap)
        ]

    def _snapshot(self, snapshot_id: int) -> Snapshot:
        table = self._load()
        try:
            return table.snapshot_manager.snapshot(snapshot_id)
        except SnapshotNotFoundError:
            kept = table.changelog_manager.try_changelog(snapshot_id)
            if kept is not None:
                return kept
            earliest = table.snapshot_manager.earliest_snapshot_id()
            raise SnapshotNotFoundError(
                f"table {table.identifier}: the streaming read needs snapshot {snapshot_id}, which has "
                f"expired (the earliest snapshot is now {earliest}): the query fell behind snapshot "
                "expiration and cannot continue without losing changes. Keep snapshots or changelogs "
                "longer ('snapshot.num-retained.min', 'snapshot.time-retained', "
                "'changelog.num-retained.min', 'changelog.time-retained'), or start the query again "
                "with a new checkpoint location"
            ) from None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        pos, stop = StreamOffset.from_json(start), StreamOffset.from_json(end)
        groups: dict[tuple[bytes, int], list[Split | ManifestEntry]] = {}
        while pos < stop:
            items = self._unit(pos)
            same_unit = (pos.snapshot, pos.phase) == (stop.snapshot, stop.phase)
            for item in items[pos.index : stop.index if same_unit else len(items)]:
                work = item.split if item.split is not None else item.entry
                assert work is not None
                groups.setdefault((item.partition, item.bucket), []).append(work)
            pos = pos.next_unit()
        # One task per bucket: a key's records stay in order (full state first, then changes).
        return [
            StreamPartition(pickle.dumps(work)) for _, work in sorted(groups.items(), key=lambda kv: kv[0])
        ]

    def commit(self, end: dict[str, Any]) -> None:
        done = StreamOffset.from_json(end)
        for key in [k for k in self._units if k < (done.snapshot, done.phase)]:
            del self._units[key]
        consumer_id = self.config.consumer_id
        if consumer_id is not None and done.phase == CHANGES:
            # Every snapshot before ``done.snapshot`` is wholly read (a part-read one is not: the
            # consumer names it, exactly-once at snapshot granularity). While the initial full
            # scan is under way no snapshot's changes are read, so nothing is recorded yet.
            self._load().consumer_manager.reset_consumer(consumer_id, done.snapshot)

    # -- task side --------------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        use_worker_allocator()
        work: list[Split | ManifestEntry] = pickle.loads(partition.value)
        table = load_base_table(self.options)
        target = to_arrow_schema(StructType.fromJson(json.loads(self.schema_json)), timezone="UTC")
        for piece in work:
            if isinstance(piece, Split):
                # The full state of a bucket, merged batch by batch: memory is bounded by the
                # merge, not by the bucket's size (issue 33).
                for batch in table.new_read().read_split(piece):
                    if self.audit:
                        kinds = pa.repeat(pa.scalar("+I", pa.string()), batch.num_rows)
                        batch = pa.RecordBatch.from_arrays(
                            [kinds, *batch.columns], names=[AUDIT_KIND_COLUMN, *batch.schema.names]
                        )
                    yield conform(batch, target)
                continue
            rows = read_changelog_entry(table, piece, AUDIT_KIND_COLUMN)
            if not self.audit:
                rows = rows.filter(pc.is_in(rows.column(AUDIT_KIND_COLUMN), value_set=_KEPT_KINDS))
                rows = rows.drop_columns([AUDIT_KIND_COLUMN])
            for batch in rows.to_batches(max_chunksize=64 * 1024):
                yield conform(batch, target)


# ---- writes ----------------------------------------------------------------------------------


def stream_commit_user(options: Mapping[str, str], table: Table) -> str:
    """A commit user that is the same for every run of one streaming query.

    From the query id the catalog's write passes (Spark keeps it in the checkpoint), else from
    the checkpoint location given as a write option, else an explicit ``commit.user``.
    """
    explicit = _option(options, COMMIT_USER)
    if explicit:
        return explicit
    anchor = _option(options, keys.STREAM_QUERY_ID)
    if not anchor:
        location = _option(options, "checkpointLocation", "path.checkpointLocation")
        anchor = f"checkpoint:{location}" if location else None
    if not anchor:
        raise InvalidOptionError(
            f"table {table.identifier}: a streaming write needs a commit user that survives restarts; "
            "write through the catalog (df.writeStream.toTable('lake.db.t')), or pass "
            ".option('checkpointLocation', ...) to the writer (or an explicit 'commit.user')"
        )
    return f"stream-{uuid.uuid5(uuid.NAMESPACE_URL, f'{table.metadata_path}|{anchor}')}"


class StrataLakeStreamWriter(DataSourceStreamArrowWriter):
    """Each micro-batch: tasks write files, the driver commits them as one snapshot whose
    commit identifier is the batch id; a batch already committed by this query is skipped."""

    def __init__(self, options: Mapping[str, str], schema: StructType, overwrite: bool) -> None:
        self.options = dict(options)
        table = load_table(self.options)
        if overwrite:
            raise UnsupportedError(
                f"table {table.identifier}: streaming writes support the append and update output "
                "modes (rows are upserts by primary key), not complete"
            )
        check_write_options(table, self.options, streaming=True)
        self.commit_user = stream_commit_user(self.options, table)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StrataLakeCommitMessage:
        use_worker_allocator()
        table = load_table(self.options)
        writer = table.new_write(self.commit_user)
        set_dynamic_assigners(writer, self.options)
        try:
            for batch in iterator:
                writer.write(batch)
            return StrataLakeCommitMessage(writer.prepare_commit())
        except BaseException:
            writer.abort()
            raise

    @staticmethod
    def _messages(messages: Sequence[WriterCommitMessage | None]) -> list[Any]:
        return [m for msg in messages if isinstance(msg, StrataLakeCommitMessage) for m in msg.messages]

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        table = load_table(self.options)
        msgs = self._messages(messages)
        commit = table.new_commit(self.commit_user)
        done = commit.committed_snapshot(batchId)
        if done is not None:
            # Spark replays a batch whose commit it did not record: the first run's snapshot stands.
            # The replay's own files go, never one the first run's snapshot references.
            table.delete_uncommitted(_not_committed_by(table, done, msgs))
            return
        try:
            commit.commit(msgs, commit_identifier=batchId)
        except BaseException:
            commit.abort(msgs)  # deletes them only if the batch is known not committed
            raise

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Files of a batch that is known not committed go. A stopped query's batch may have been
        committed by Python when Spark aborts it: its files stay (and so when that is unknown)."""
        table = load_table(self.options)
        msgs = self._messages(messages)
        try:
            done = table.new_commit(self.commit_user).committed_snapshot(batchId)
        except Exception as e:
            _LOG.warning(
                "table %s: batch %s aborted; its files are kept (cannot tell whether it committed: %s)",
                table.identifier,
                batchId,
                e,
            )
            return
        if done is None:
            table.delete_uncommitted(msgs)


def _not_committed_by(table: Table, snapshot_id: int, msgs: list[Any]) -> list[Any]:
    """``msgs`` without every file that the batch's snapshots (``snapshot_id``: its newest; a
    batch commits an APPEND and maybe a COMPACT snapshot) added. A replay's tasks wrote new
    files; this keeps the first run's safe should the same messages come again."""
    newest = table.snapshot(snapshot_id)
    snaps = [newest]
    with contextlib.suppress(SnapshotNotFoundError):
        before = table.snapshot(snapshot_id - 1)
        if (before.commit_user, before.commit_identifier) == (newest.commit_user, newest.commit_identifier):
            snaps.append(before)
    mio = table.manifest_io
    added = {
        e.file.file_name
        for snap in snaps
        for lst in (snap.delta_manifest_list, snap.changelog_manifest_list)
        if lst is not None
        for m in mio.read_list(lst)
        for e in mio.read_entries(m.file_name)
    }
    index = {e.file_name for snap in snaps for e in live_index_entries(table, snap)}

    def keep(files: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(f for f in files if f.file_name not in added)

    return [
        replace(
            m,
            new_files=keep(m.new_files),
            changelog_files=keep(m.changelog_files),
            compact_after=keep(m.compact_after),
            compact_changelog_files=keep(m.compact_changelog_files),
            index_files_added=tuple(e for e in m.index_files_added if e.file_name not in index),
        )
        for m in msgs
    ]
