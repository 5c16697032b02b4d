"""The Table handle: schema, snapshots, and the entry points of scans, reads, writes and commits."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import pyarrow as pa

from stratalake.expressions import FilterLike
from stratalake.io import FileIO
from stratalake.lsm.data_file import bucket_dir
from stratalake.merge import MergeContext
from stratalake.options import CoreOptions
from stratalake.spec.manifest import ManifestEntry
from stratalake.spec.schema import TableSchema
from stratalake.spec.snapshot import Snapshot
from stratalake.table import changelog_read, expire, orphan, tags
from stratalake.table.changelog_manager import ChangelogManager
from stratalake.table.commit import CommitMessage, TableCommit
from stratalake.table.files import delete_in_table
from stratalake.table.manifests import ManifestIO, fold_entries
from stratalake.table.partition import PartitionCodec
from stratalake.table.read import TableRead
from stratalake.table.scan import TableScan
from stratalake.table.schema_manager import SchemaManager
from stratalake.table.snapshot_manager import SnapshotManager
from stratalake.table.support import check_supported, unsupported_features
from stratalake.table.write import TableWrite


class Table:
    """A primary-key table at ``location``, bound to the schema that was current when loaded.

    Example::

        t = stratalake.Catalog("/tmp/wh").get_table("db.orders")
        t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
        t.read(filter=field("id") == 1)
    """

    def __init__(self, file_io: FileIO, location: str, identifier: str, schema: TableSchema | None = None) -> None:
        self.file_io = file_io
        self.location = location.rstrip("/")
        self.identifier = identifier
        self.schema_manager = SchemaManager(file_io, self.location, identifier)
        self.snapshot_manager = SnapshotManager(file_io, self.location, identifier)
        self.tag_manager = tags.TagManager(file_io, self.location, identifier)
        self.changelog_manager = ChangelogManager(file_io, self.location, identifier)
        self._schema = schema if schema is not None else self.schema_manager.latest()

    # -- metadata ---------------------------------------------------------------------------------
    def schema(self) -> TableSchema:
        """The table schema this handle is bound to."""
        return self._schema

    def file_schema(self, schema_id: int) -> TableSchema:
        """The schema a data file was written with (for field-id based reading)."""
        if schema_id == self._schema.id:
            return self._schema
        return self.schema_manager.schema(schema_id)

    def options(self) -> dict[str, str]:
        return dict(self._schema.options)

    @cached_property
    def core_options(self) -> CoreOptions:
        return CoreOptions(self._schema.options, self.identifier)

    @cached_property
    def partition_codec(self) -> PartitionCodec:
        return PartitionCodec(self._schema, self.core_options.partition_default_name)

    @cached_property
    def merge_context(self) -> MergeContext:
        return MergeContext.of(self._schema, self.core_options, self.identifier)

    @cached_property
    def manifest_io(self) -> ManifestIO:
        return ManifestIO(self.file_io, self.location, self.partition_codec, self._schema.id)

    def arrow_schema(self) -> pa.Schema:
        """Arrow schema of the table's columns (primary-key columns non-nullable)."""
        return self._schema.logical_arrow_schema()

    def refresh(self) -> Table:
        """A handle bound to the latest schema."""
        return Table(self.file_io, self.location, self.identifier)

    def as_of(self, snapshot: Snapshot) -> Table:
        """A handle for reading ``snapshot``: bound to the columns it was written with (a column
        added later is absent, a renamed one has its old name), with this handle's options.

        That is Paimon's time travel (``AbstractFileStoreTable.tryTimeTravel``: the snapshot's
        schema, copied with the current options); reading a past snapshot with the latest columns
        would show columns that did not exist then.
        """
        if snapshot.schema_id == self._schema.id:
            return self
        old = self.schema_manager.schema(snapshot.schema_id)
        return Table(
            self.file_io, self.location, self.identifier, dataclasses.replace(old, options=self._schema.options)
        )

    # -- snapshots ------------------------------------------------------------------------------
    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest_snapshot()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.snapshot_manager.snapshot(snapshot_id)

    def snapshot_at(self, timestamp_ms: int) -> Snapshot:
        return self.snapshot_manager.snapshot_at_or_before(timestamp_ms)

    def snapshots(self) -> list[Snapshot]:
        return list(self.snapshot_manager.snapshots())

    def live_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """ADD entries of every live data file at ``snapshot``."""
        mio = self.manifest_io
        metas = mio.read_list(snapshot.base_manifest_list) + mio.read_list(snapshot.delta_manifest_list)
        return list(fold_entries(e for m in metas for e in mio.read_entries(m.file_name)).values())

    def max_sequence_numbers(self) -> dict[tuple[bytes, int], int]:
        """Highest ``_SEQUENCE_NUMBER`` per (partition, bucket) over the latest live files."""
        snap = self.latest_snapshot()
        out: dict[tuple[bytes, int], int] = {}
        if snap is None:
            return out
        for e in self.live_entries(snap):
            key = (e.partition, e.bucket)
            out[key] = max(out.get(key, -1), e.file.max_sequence_number)
        return out

    # -- operations -----------------------------------------------------------------------------
    @cached_property
    def unsupported_features(self) -> list[str]:
        """What stratalake cannot read or write in this table yet (see :mod:`~stratalake.table.support`);
        empty for a table it fully supports. Listing and describing work either way."""
        return unsupported_features(self._schema, self._schema.options)

    def check_supported(self, action: str = "use") -> None:
        """:class:`~stratalake.exceptions.UnsupportedError` naming the table and each unsupported feature."""
        if self.unsupported_features:
            check_supported(self.identifier, self._schema, action)

    def new_scan(
        self, filter: FilterLike = None, snapshot_id: int | None = None, timestamp_ms: int | None = None
    ) -> TableScan:
        self.check_supported("read")
        return TableScan(self, filter, snapshot_id, timestamp_ms)

    @property
    def is_append(self) -> bool:
        """A table without a primary key: Paimon's append table (``table/append_write.py``)."""
        return not self._schema.primary_keys

    def new_read(self, columns: Sequence[str] | None = None, filter: FilterLike = None) -> TableRead:
        self.check_supported("read")
        if self.is_append:
            from stratalake.table.append_read import AppendTableRead

            return AppendTableRead(self, columns, filter)  # type: ignore[return-value]
        return TableRead(self, columns, filter)

    def new_write(self, commit_user: str | None = None) -> TableWrite:
        self.check_supported("write")
        if self.is_append:
            from stratalake.table.append_write import AppendTableWrite

            return AppendTableWrite(self, commit_user)  # type: ignore[return-value]
        return TableWrite(self, commit_user)

    def new_commit(self, commit_user: str | None = None) -> TableCommit:
        self.check_supported("write")
        return TableCommit(self, commit_user)

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
        it had then) as an Arrow table. A tag reads even after its snapshot expired."""
        if tag is not None:
            if snapshot_id is not None or timestamp_ms is not None:
                raise ValueError(f"table {self.identifier}: give a tag or a snapshot_id/timestamp_ms, not both")
            return tags.read_tag(self, tag, columns, filter)
        table = self
        if snapshot_id is not None or timestamp_ms is not None:
            snapshot = self.new_scan(None, snapshot_id, timestamp_ms).snapshot()
            if snapshot is not None:
                table, snapshot_id, timestamp_ms = self.as_of(snapshot), snapshot.id, None
        splits = table.new_scan(filter, snapshot_id, timestamp_ms).plan()
        return table.new_read(columns, filter).read_splits(splits)

    def compact(self, full: bool = False, partitions: Sequence[dict[str, Any]] | None = None) -> int | None:
        """Compact the table's buckets (all files into the top level with ``full``) as one
        COMPACT snapshot; returns its id, or None when nothing needed compacting.

        Raises :class:`~stratalake.exceptions.CommitConflictError` (leaving the table unchanged)
        when a concurrent compaction removed some of the same files first.
        """
        from stratalake.table.compact import compact

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
        codec = self.partition_codec
        for m in messages:
            directory = bucket_dir(self.location, codec.path(codec.from_bytes(m.partition)), m.bucket)
            # An upgraded file keeps its name: it is still the committed input, never delete it.
            inputs = {f.file_name for f in m.compact_before}
            outputs = [f for f in m.compact_after if f.file_name not in inputs]
            # Messages may be crafted (a refused commit comes here too): delete only inside the table.
            for f in (*m.new_files, *m.changelog_files, *outputs, *m.compact_changelog_files):
                delete_in_table(self, f"{directory}/{f.file_name}")
            for e in m.index_files_added:
                delete_in_table(self, f"{self.location}/index/{e.file_name}")

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
        return expire.expire_snapshots(self, cfg, older_than_ms=older_than_ms)

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

    def delete_tag(self, name: str) -> list[str]:
        """Delete a tag and the files only it referenced; returns the deleted paths."""
        self.check_supported("delete tags of")
        return tags.delete_tag(self, name)

    def tags(self) -> dict[str, Snapshot]:
        """Every tag of the table, by name, with the snapshot it points at."""
        return self.tag_manager.tags()

    def rollback_to(self, version: int | str) -> Snapshot:
        """Make snapshot id or tag ``version`` the latest again, deleting newer snapshots, newer tags
        and the files only they referenced; returns that snapshot. See :mod:`~stratalake.table.rollback`."""
        from stratalake.table.rollback import rollback_to

        self.check_supported("roll back")
        return rollback_to(self, version)

    def system_table(self, name: str, snapshot_id: int | None = None) -> pa.Table:
        """Paimon system table ``name`` (``snapshots``, ``schemas``, ``options``, ``files``,
        ``manifests``, ``partitions``, ``buckets``, ``tags``, ``audit_log``, ``ro``) as Arrow."""
        from stratalake.table.system_tables import system_table

        return system_table(self, name, snapshot_id)

    def changelog(self, start_snapshot: int | None = None, end_snapshot: int | None = None) -> pa.Table:
        """Change records of snapshots ``(start_snapshot, end_snapshot]``, ``_row_kind`` first."""
        self.check_supported("read")
        return changelog_read.read_changelog(self, start_snapshot, end_snapshot)

    def audit_log(self, snapshot_id: int | None = None, filter: FilterLike = None) -> pa.Table:
        """Paimon's ``$audit_log``: the merged rows with their row kind in a ``rowkind`` column."""
        self.check_supported("read")
        return changelog_read.read_audit_log(self, snapshot_id, filter)

    def __repr__(self) -> str:
        return f"Table({self.identifier!r}, location={self.location!r}, schema_id={self._schema.id})"
