"""The Table handle: the store-level handle plus the entry points of scans, reads, writes, commits,
compaction and maintenance (it sits above them all, as Paimon's ``FileStoreTable``)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from stratalake import read as reads
from stratalake.append.write import AppendTableWrite
from stratalake.expressions import FilterLike
from stratalake.identifiers import MAIN_BRANCH, SYSTEM_TABLE_SEPARATOR
from stratalake.maintenance import auto_tags, expire, orphan, tags
from stratalake.maintenance.rollback import rollback_to
from stratalake.operation.commit import CommitMessage, TableCommit, delete_uncommitted, new_commit
from stratalake.operation.write import TableWrite
from stratalake.read import changelog_read, fallback, incremental, scan_options
from stratalake.read.fallback import FallbackScan
from stratalake.read.merge_read import TableRead
from stratalake.read.scan import TableScan
from stratalake.spec.snapshot import Snapshot
from stratalake.spec.statistics import Statistics
from stratalake.store.branch_manager import normalize_branch
from stratalake.store.stats_file import snapshot_stats
from stratalake.store.table_store import TableStore
from stratalake.table import lifecycle
from stratalake.table import partitions as partition_ops
from stratalake.table import statistics as table_statistics
from stratalake.table.compaction import compact
from stratalake.table.system_tables import system_table


class Table(TableStore):
    """A table at ``location``, bound to the schema that was current when loaded.

    Example::

        t = stratalake.Catalog("/tmp/wh").get_table("db.orders")
        t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
        t.read(filter=field("id") == 1)
    """

    def new_scan(
        self, filter: FilterLike = None, snapshot_id: int | None = None, timestamp_ms: int | None = None
    ) -> TableScan | FallbackScan:
        """A batch scan; with ``scan.fallback-branch`` set, the partitions this branch lacks come
        from that branch (see :mod:`stratalake.read.fallback`)."""
        return reads.new_scan(self, filter, snapshot_id, timestamp_ms)

    def new_read(self, columns: Sequence[str] | None = None, filter: FilterLike = None) -> TableRead:
        return reads.new_read(self, columns, filter)  # type: ignore[return-value]

    def new_write(self, commit_user: str | None = None) -> TableWrite:
        self.check_supported("write")
        if self.is_append:
            return AppendTableWrite(self, commit_user)  # type: ignore[return-value]
        return TableWrite(self, commit_user)

    def new_commit(self, commit_user: str | None = None) -> TableCommit:
        return new_commit(self, commit_user)

    def write(
        self,
        data: pa.Table | pa.RecordBatch,
        row_kind: str | None = None,
        overwrite: bool = False,
        overwrite_partitions: Sequence[dict[str, Any]] | None = None,
    ) -> int | None:
        """Write ``data`` and commit it as one snapshot; returns the snapshot id.

        ``row_kind`` names a column of '+I'/'-U'/'+U'/'-D' strings giving each row's kind.
        """
        with self.new_write() as w:
            w.ignore_previous_files = overwrite
            w.write(data, row_kind=row_kind)
            return w.commit(overwrite=overwrite, overwrite_partitions=overwrite_partitions)

    def read(
        self,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        timestamp_ms: int | None = None,
        tag: str | None = None,
    ) -> pa.Table:
        """The merged rows of the table (or of a past snapshot, by id, time or tag, in the columns
        it had then) as an Arrow table. A tag reads even after its snapshot expired.

        Paimon's scan options stored as table options (``scan.snapshot-id``, ``scan.tag-name``,
        ``scan.timestamp-millis``, ``incremental-between``...) choose what is read, as in Paimon,
        unless this call names its own version.
        """
        stored = scan_options.stored(self.options())
        if fallback.fallback_branch(self) is not None:
            return self._read_with_fallback(columns, filter, snapshot_id, timestamp_ms, tag, stored)
        if stored and snapshot_id is None and timestamp_ms is None and tag is None:
            rng = scan_options.incremental_choice(self, stored)
            if rng is not None:
                return incremental.read(self, rng, columns, filter, False)
            chosen, tag = scan_options.snapshot_choice(self, stored)
            if chosen is not None and tag is None:
                snapshot_id = chosen.id
        if tag is not None:
            if snapshot_id is not None or timestamp_ms is not None:
                raise ValueError(
                    f"table {self.identifier}: give a tag or a snapshot_id/timestamp_ms, not both"
                )
            return tags.read_tag(self, tag, columns, filter)
        table = self
        if snapshot_id is not None or timestamp_ms is not None:
            snapshot = self.new_scan(None, snapshot_id, timestamp_ms).snapshot()
            if snapshot is not None:
                table, snapshot_id, timestamp_ms = self.as_of(snapshot), snapshot.id, None
        splits = table.new_scan(filter, snapshot_id, timestamp_ms).plan()
        return table.new_read(columns, filter).read_splits(splits)

    def _read_with_fallback(
        self,
        columns: Sequence[str] | None,
        filter: FilterLike,
        snapshot_id: int | None,
        timestamp_ms: int | None,
        tag: str | None,
        stored: dict[str, str],
    ) -> pa.Table:
        """:meth:`read` of a table with ``scan.fallback-branch`` (:mod:`stratalake.read.fallback`)."""
        if tag is not None:
            if snapshot_id is not None or timestamp_ms is not None:
                raise ValueError(
                    f"table {self.identifier}: give a tag or a snapshot_id/timestamp_ms, not both"
                )
            at = self.as_of(self.tag_manager.tag(tag))
            tagged = FallbackScan(at, filter, tag=tag)
            return at.new_read(columns, filter).read_splits(tagged.plan())
        if snapshot_id is None and timestamp_ms is None and stored:
            fallback.refuse_fallback(self, f"a read with the stored scan options {', '.join(sorted(stored))}")
        if snapshot_id is not None and timestamp_ms is not None:
            raise ValueError(f"table {self.identifier}: give a snapshot_id or a timestamp_ms, not both")
        table = self
        if snapshot_id is not None or timestamp_ms is not None:
            snapshot = TableScan(self, None, snapshot_id, timestamp_ms).snapshot()
            if snapshot is not None:
                table = self.as_of(snapshot)
        scan = table.new_scan(filter, snapshot_id, timestamp_ms)
        return table.new_read(columns, filter).read_splits(scan.plan())

    def compact(self, full: bool = False, partitions: Sequence[dict[str, Any]] | None = None) -> int | None:
        """Compact the table's buckets (all files into the top level with ``full``) as one
        COMPACT snapshot; returns its id, or None when nothing needed compacting.

        Raises :class:`~stratalake.exceptions.CommitConflictError` (leaving the table unchanged)
        when a concurrent compaction removed some of the same files first.
        """
        self.check_supported("compact")
        messages = compact(self, full=full, partitions=partitions)
        if not messages:
            return None
        commit = self.new_commit()
        try:
            return commit.commit(messages)
        except BaseException:
            commit.abort(messages)  # removes the outputs only if known not committed
            raise

    def delete_uncommitted(self, messages: Sequence[CommitMessage]) -> None:
        """Remove the files of messages whose commit failed (they were never visible)."""
        delete_uncommitted(self, messages)

    # -- lifecycle: expiration, orphans, tags, change records -----------------------------------
    def expire_snapshots(
        self,
        retain_max: int | None = None,
        retain_min: int | None = None,
        older_than_ms: int | None = None,
        max_deletes: int | None = None,
    ) -> int:
        """Expire old snapshots and delete the files only they referenced; returns how many expired.

        Unset arguments come from ``snapshot.num-retained.max``/``.min``, ``snapshot.time-retained``
        (``older_than_ms`` is an epoch-millis bound instead) and ``snapshot.expire.limit``.
        """
        self.check_supported("expire snapshots of")
        cfg = expire.ExpireConfig.from_options(self.core_options, retain_max, retain_min, max_deletes)
        # Consumers past 'consumer.expiration-time' go first, as after a commit: they no longer pin.
        expire.expire_consumers(self)
        return expire.expire_snapshots(self, cfg, older_than_ms=older_than_ms)

    def consumers(self) -> dict[str, int]:
        """Each consumer's id and next snapshot (``t$consumers``)."""
        return self.consumer_manager.consumers()

    def reset_consumer(self, consumer_id: str, next_snapshot_id: int | None = None) -> None:
        """Set consumer ``consumer_id``'s next snapshot (it must exist); without one, delete it."""
        lifecycle.reset_consumer(self, consumer_id, next_snapshot_id)

    def clear_consumers(self, including: str | None = None, excluding: str | None = None) -> list[str]:
        """Delete the consumers whose whole id matches regular expression ``including`` (default:
        all) and not ``excluding``; returns their ids."""
        return lifecycle.clear_consumers(self, including, excluding)

    def remove_orphan_files(self, older_than_ms: int | None = None, dry_run: bool = False) -> list[str]:
        """Delete files no snapshot, tag or changelog uses, older than ``older_than_ms``
        (default: one day ago); returns their paths."""
        # Unsupported layouts (e.g. data files in another directory) would make live files look orphaned.
        self.check_supported("remove orphan files of")
        return orphan.remove_orphan_files(self, older_than_ms, dry_run)

    def create_tag(
        self, name: str, snapshot_id: int | None = None, time_retained: str | datetime.timedelta | None = None
    ) -> Snapshot:
        """Tag a snapshot (default: the latest) so that its files survive expiration; with
        ``time_retained`` ('1 d', '12 h' or a ``timedelta``) the first commit after that long deletes it."""
        return tags.create_tag(self, name, snapshot_id, time_retained)

    def replace_tag(
        self, name: str, snapshot_id: int | None = None, time_retained: str | datetime.timedelta | None = None
    ) -> Snapshot:
        """Point existing tag ``name`` at another snapshot (default: the latest)."""
        self.check_supported("replace tags of")
        return tags.replace_tag(self, name, snapshot_id, time_retained)

    def rename_tag(self, name: str, target: str) -> Snapshot:
        """Rename tag ``name`` to ``target``; returns the tagged snapshot."""
        return tags.rename_tag(self, name, target)

    def create_tag_from_timestamp(
        self, name: str, timestamp_ms: int, time_retained: str | datetime.timedelta | None = None
    ) -> Snapshot:
        """Tag the first snapshot (or tagged snapshot) committed at or after ``timestamp_ms``."""
        return tags.create_tag_from_timestamp(self, name, timestamp_ms, time_retained)

    def delete_tag(self, name: str) -> list[str]:
        """Delete a tag and the files only it referenced; returns the deleted paths."""
        self.check_supported("delete tags of")
        return tags.delete_tag(self, name)

    def tags(self) -> dict[str, Snapshot]:
        """Every tag of the table, by name, with the snapshot it points at."""
        return self.tag_manager.tags()

    def rollback_to(self, version: int | str) -> Snapshot:
        """Make snapshot id or tag ``version`` the latest again, deleting newer snapshots, newer tags
        and the files only they referenced; returns that snapshot. See :mod:`~stratalake.maintenance.rollback`."""
        self.check_supported("roll back")
        return rollback_to(self, version)

    def rollback_to_timestamp(self, timestamp_ms: int) -> Snapshot:
        """Roll back to the newest snapshot committed at or before ``timestamp_ms``."""
        self.check_supported("roll back")
        return rollback_to(self, self.snapshot_manager.snapshot_at_or_before(timestamp_ms).id)

    def rollback_to_watermark(self, watermark: int) -> Snapshot:
        """Roll back to the newest snapshot whose watermark is at most ``watermark``."""
        self.check_supported("roll back")
        return rollback_to(self, lifecycle.snapshot_at_watermark(self, watermark).id)

    def trigger_tag_automatic_creation(self) -> list[str]:
        """Create the automatic tags now due and expire tags past their retention, as a commit
        does (``'tag.automatic-creation'``, Paimon's ``trigger_tag_automatic_creation``);
        returns the new tags' names."""
        self.check_supported("tag")
        created = auto_tags.create_automatic_tags(self)
        if self.core_options.get_bool("tag.time-expire-enabled"):
            tags.expire_tags(self)
        return created

    def purge_files(self) -> None:
        """Empty the table: every row, tag, changelog and snapshot but the last one, and every
        file no snapshot uses (Paimon's ``purge_files``); the schema stays."""
        lifecycle.purge_files(self)

    def remove_unexisting_files(self, dry_run: bool = False) -> list[str]:
        """Remove the entries of data files that storage no longer holds (their rows are lost);
        returns their paths (``dry_run``: only those)."""
        return lifecycle.remove_unexisting_files(self, dry_run)

    def mark_partitions_done(self, specs: Sequence[dict[str, Any]]) -> list[str]:
        """Run ``partition.mark-done-action`` (``success-file``: a ``_SUCCESS`` file) for each
        partition; returns the partition paths."""
        return lifecycle.mark_partitions_done(self, specs)

    # -- branches ---------------------------------------------------------------------------------
    def branch(self, name: str) -> Table:
        """A handle on branch ``name`` of this table (``main``: the main branch); reads, writes,
        tags and system tables of it see the branch alone. Also ``catalog.get_table("db.t$branch_b")``.

        Raises :class:`~stratalake.exceptions.BranchNotFoundError` naming the branches."""
        base = self.identifier.split(SYSTEM_TABLE_SEPARATOR, 1)[0]
        branch = normalize_branch(name)
        if branch == self.current_branch:
            return self
        if branch == MAIN_BRANCH:
            return self._derived(type(self)(self.file_io, self.location, base))
        self.branch_manager.check_exists(branch)
        handle = type(self)(self.file_io, self.location, f"{base}$branch_{branch}", branch=branch)
        # A metastore's partitions are the main branch's; a branch's commits do not report theirs.
        return handle

    def branches(self) -> list[str]:
        """The names of the table's branches (``main`` not included), sorted."""
        return self.branch_manager.branches()

    def create_branch(self, name: str, tag: str | None = None, ignore_if_exists: bool = False) -> bool:
        """Create branch ``name``: from ``tag`` (the tagged snapshot becomes the branch's first),
        or empty with this branch's latest schema. Returns False if it existed and
        ``ignore_if_exists``; otherwise an existing branch, an unknown tag or a name Paimon
        refuses (``main``, blank, only digits) raises, leaving the table unchanged."""
        return self.branch_manager.create(name, tag, ignore_if_exists)

    def delete_branch(self, name: str) -> None:
        """Delete branch ``name`` (not the one this handle is on, nor the table's fallback
        branch); its data files stay until ``remove_orphan_files``. A table with options stratalake
        does not implement (a primary branch, say) is refused, as other maintenance is."""
        self.branch_manager.delete(name, self.options(), lambda: self.check_supported("delete branches of"))

    def rename_branch(self, name: str, target: str) -> None:
        """Rename branch ``name`` to ``target``."""
        self.branch_manager.rename(name, target)

    def fast_forward(self, name: str) -> None:
        """Make this branch (usually ``main``) branch ``name``'s state: its snapshots, schemas and
        tags from the branch's earliest snapshot on replace this branch's (Paimon's
        ``fast_forward``). Reopen handles afterwards (``refresh()``)."""
        self.check_supported("fast-forward")  # it deletes snapshots, as a rollback does
        self.branch_manager.fast_forward(name)
        self.snapshot_manager.forget_all()
        self.schema_manager.forget_all()

    # -- partitions -------------------------------------------------------------------------------
    def partitions(self) -> list[dict[str, Any]]:
        """The partitions holding data in the latest snapshot, each as ``{column: value}`` (with
        ``scan.fallback-branch``, also the fallback branch's partitions this branch lacks, as a
        read sees them)."""
        keys = self.partition_codec.keys
        return [dict(zip(keys, v, strict=True)) for v in partition_ops.scanned_partitions(self)]

    def drop_partitions(self, specs: Sequence[dict[str, Any]], commit_user: str | None = None) -> int | None:
        """Drop every partition matching one of ``specs`` (some or all partition columns) in one
        OVERWRITE commit; returns the snapshot id, None when nothing matched. See
        :mod:`~stratalake.table.partitions`."""
        return partition_ops.drop_partitions(self, specs, commit_user)

    def analyze(self, columns: Sequence[str] | None = None, all_columns: bool = False) -> int | None:
        """Paimon's ``ANALYZE TABLE``: statistics of the latest snapshot's merged rows (row count,
        size, and per column of ``columns``, or every column with ``all_columns``, distinct and
        null counts, min/max, average/max length) committed as an ANALYZE snapshot; returns its
        id, None when the table has no snapshot. See :mod:`~stratalake.table.statistics`."""
        return table_statistics.analyze(self, columns, all_columns)

    def statistics(self, snapshot_id: int | None = None) -> Statistics | None:
        """The statistics the latest snapshot (or ``snapshot_id``) carries, as Paimon's
        ``Table.statistics()``; None when it carries none."""
        snapshot = self.snapshot(snapshot_id) if snapshot_id is not None else self.latest_snapshot()
        return snapshot_stats(self, snapshot)

    def system_table(self, name: str, snapshot_id: int | None = None) -> pa.Table:
        """Paimon system table ``name`` (``snapshots``, ``schemas``, ``options``, ``files``,
        ``manifests``, ``partitions``, ``buckets``, ``tags``, ``statistics``, ``audit_log``, ``ro``) as Arrow."""
        return system_table(self, name, snapshot_id)

    def changelog(self, start_snapshot: int | None = None, end_snapshot: int | None = None) -> pa.Table:
        """Change records of snapshots ``(start_snapshot, end_snapshot]``, ``_row_kind`` first."""
        self.check_supported("read")
        return changelog_read.read_changelog(self, start_snapshot, end_snapshot)

    def audit_log(self, snapshot_id: int | None = None, filter: FilterLike = None) -> pa.Table:
        """Paimon's ``$audit_log``: the merged rows with their row kind in a ``rowkind`` column."""
        self.check_supported("read")
        return changelog_read.read_audit_log(self, snapshot_id, filter)

    def read_incremental(
        self,
        start: int | str,
        end: int | str,
        mode: str = "auto",
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        row_kind: bool = False,
    ) -> pa.Table:
        """The changes between two snapshots or two tags, as Paimon's ``incremental-between``.

        Snapshot ids read the changes of snapshots ``(start, end]`` per ``mode`` (``auto``,
        ``delta``, ``changelog`` or ``diff``); tag names read the difference between the two
        tagged states. Rows that add data (+I/+U) are returned; ``row_kind=True`` keeps every
        record (retractions too) with a leading ``rowkind`` column, as ``$audit_log``.
        See :mod:`stratalake.read.incremental`.

        Example::

            t.read_incremental(1, 3)                       # what snapshots 2 and 3 wrote
            t.read_incremental("2024-01-01", "2024-01-02", row_kind=True)
        """
        self.check_supported("read")
        how = incremental.IncrementalMode.parse(self.identifier, mode, "mode")
        if isinstance(start, int) and isinstance(end, int):
            rng = incremental.between_snapshots(self, start, end, how, "read_incremental(start, end)")
        else:
            rng = incremental.between(self, f"{start},{end}", how, "read_incremental(start, end)")
        return incremental.read(self, rng, columns, filter, row_kind)

    def read_incremental_between_timestamps(
        self,
        start_ms: int,
        end_ms: int,
        mode: str = "auto",
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        row_kind: bool = False,
    ) -> pa.Table:
        """The changes of the snapshots committed in ``(start_ms, end_ms]`` (epoch millis), as
        Paimon's ``incremental-between-timestamp``; otherwise as :meth:`read_incremental`."""
        self.check_supported("read")
        how = incremental.IncrementalMode.parse(self.identifier, mode, "mode")
        rng = incremental.between_timestamps(
            self, start_ms, end_ms, how, "read_incremental_between_timestamps(start_ms, end_ms)"
        )
        return incremental.read(self, rng, columns, filter, row_kind)
