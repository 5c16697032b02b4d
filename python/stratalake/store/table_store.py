"""The store-level table handle: what lower layers (reads, writers, commits, maintenance) need.

:class:`TableStore` holds a table's location, schema, options, metadata managers and the
snapshots' live files; the public :class:`~stratalake.table.Table` extends it with the entry
points that call writers, commits and maintenance (as Paimon's ``FileStoreTable`` sits above its
operations), so nothing below the table layer imports those.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from functools import cached_property
from typing import Protocol, Self

import pyarrow as pa

from stratalake import option_support
from stratalake.exceptions import InvalidOptionError, UnsupportedError
from stratalake.expressions import Predicate
from stratalake.identifiers import MAIN_BRANCH, SYSTEM_TABLE_SEPARATOR, check_options, unknown_keys
from stratalake.io import FileIO
from stratalake.merge import MergeContext
from stratalake.options import CoreOptions
from stratalake.spec.manifest import ManifestEntry, ManifestFileMeta
from stratalake.spec.schema import TableSchema
from stratalake.spec.snapshot import Snapshot
from stratalake.store.branch_manager import BranchManager, branch_path, normalize_branch
from stratalake.store.changelog_manager import ChangelogManager
from stratalake.store.consumer_manager import ConsumerManager
from stratalake.store.manifest_filter import ManifestFilter
from stratalake.store.manifests import ManifestIO, filtered_entries, fold_entries
from stratalake.store.partition import PartitionCodec
from stratalake.store.schema_manager import SchemaManager
from stratalake.store.snapshot_manager import SnapshotManager
from stratalake.store.support import check_supported, unsupported_features
from stratalake.store.tag_manager import TagManager


class PartitionHandler(Protocol):
    """Where a metastore catalog keeps a table's partitions in step (Paimon's ``PartitionHandler``).

    Values are the partition columns' strings in key order, as Paimon's partition computer gives
    them (the default partition name for null or blank values).
    """

    def partitions_created(self, table: TableStore, partitions: list[dict[str, str]]) -> None: ...

    def partitions_dropped(self, table: TableStore, partitions: list[dict[str, str]]) -> None: ...


class MetastorePartitions(PartitionHandler, Protocol):
    """A metastore that can record a table's partitions, whatever the table's options: what
    Paimon's ``done-partition`` and ``mark-event`` mark-done actions act on (its
    ``PartitionModification`` and ``PartitionMarkDone``)."""

    def mark_done_events(self, table: TableStore, partitions: list[dict[str, str]]) -> None: ...

    def marked_done(self, table: TableStore, partitions: list[dict[str, str]]) -> list[bool]:
        """Whether each partition has the LOAD_DONE event (``t$partitions``' ``done``)."""
        ...

    def check_registered(self, table: TableStore) -> None:
        """Raise :class:`TableNotFoundError` when the metastore does not hold the table."""


class TableStore:
    """A table at ``location`` on storage, bound to the schema that was current when loaded.

    ``branch`` (default ``main``) picks the metadata root: a branch's schemas, snapshots, tags,
    changelogs and consumers live under ``<location>/branch/branch-<name>``, its data files and
    manifests under ``location`` (see :mod:`~stratalake.store.branch_manager`).
    """

    #: Set by a metastore catalog whose metastore lists partitions (Hive's
    #: ``metastore.partitioned-table``): commits report the partitions they write, partition drops
    #: the ones they drop. Handles derived from this one (refresh, time travel) keep it.
    partition_handler: PartitionHandler | None = None
    #: Set by a catalog whose branches stratalake cannot manage (Paimon's REST catalog manages them
    #: on the server): why branch operations are refused. Derived handles keep it.
    branches_refused: str | None = None
    #: Set by a catalog with a metastore that records partitions (Hive), on every table it opens.
    metastore_partitions: MetastorePartitions | None = None

    def __init__(
        self,
        file_io: FileIO,
        location: str,
        identifier: str,
        schema: TableSchema | None = None,
        branch: str | None = None,
    ) -> None:
        self.file_io = file_io
        self.location = location.rstrip("/")
        self.identifier = identifier
        self.current_branch = normalize_branch(branch)
        #: Where this branch's schemas, snapshots, tags, changelogs and consumers live.
        self.metadata_path = branch_path(self.location, self.current_branch)
        root = self.metadata_path
        self.schema_manager = SchemaManager(file_io, root, identifier)
        self.snapshot_manager = SnapshotManager(file_io, root, identifier)
        self.tag_manager = TagManager(file_io, root, identifier)
        self.changelog_manager = ChangelogManager(file_io, root, identifier)
        self.consumer_manager = ConsumerManager(file_io, root, identifier)
        self._schema = schema if schema is not None else self.schema_manager.latest()

    @property
    def branch_manager(self) -> BranchManager:
        """The table's branches, seen from this handle's branch."""
        if self.branches_refused is not None:
            raise UnsupportedError(f"table {self.identifier}: {self.branches_refused}")
        return BranchManager(self.file_io, self.location, self.identifier, self.current_branch)

    def open_branch(self, branch: str) -> Self:
        """A handle on branch ``branch`` of this table, bound to its latest schema (no check that
        it exists beyond that schema: :class:`TableNotFoundError` when it has none)."""
        base = self.identifier.split(SYSTEM_TABLE_SEPARATOR, 1)[0]
        branch = normalize_branch(branch)
        if branch == self.current_branch:
            return self
        name = base if branch == MAIN_BRANCH else f"{base}$branch_{branch}"
        return self._derived(type(self)(self.file_io, self.location, name, branch=branch))

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

    def refresh(self) -> Self:
        """A handle bound to the latest schema."""
        return self._derived(
            type(self)(self.file_io, self.location, self.identifier, branch=self.current_branch)
        )

    def as_of(self, snapshot: Snapshot) -> Self:
        """A handle for reading ``snapshot``: bound to the columns it was written with (a column
        added later is absent, a renamed one has its old name), with this handle's options.

        That is Paimon's time travel (``AbstractFileStoreTable.tryTimeTravel``: the snapshot's
        schema, copied with the current options); reading a past snapshot with the latest columns
        would show columns that did not exist then.
        """
        return self.as_of_schema(snapshot.schema_id)

    def as_of_schema(self, schema_id: int) -> Self:
        """:meth:`as_of` a snapshot written with schema ``schema_id``."""
        if schema_id == self._schema.id:
            return self
        old = self.schema_manager.schema(schema_id)
        return self._derived(
            type(self)(
                self.file_io,
                self.location,
                self.identifier,
                dataclasses.replace(old, options=self._schema.options),
                branch=self.current_branch,
            )
        )

    def copy(self, dynamic_options: Mapping[str, str]) -> Self:
        """A handle whose options are the table's with ``dynamic_options`` over them, for this
        handle only (nothing is stored), as Paimon's ``FileStoreTable.copy``.

        Refused as ALTER TABLE ... SET would refuse them: options fixed at creation, flipping
        deletion vectors, options stratalake does not honour, bad values.
        """
        if not dynamic_options:
            return self
        options = dict(self._schema.options)
        for key, close in unknown_keys(dynamic_options).items():
            # Nothing is stored, so an unknown key (a typo) could only be silently ignored.
            hint = f" (did you mean '{close}'?)" if close else ""
            raise InvalidOptionError(
                f"table {self.identifier}: option '{key}' is neither a Paimon nor a stratalake option{hint}"
            )
        for key, value in dynamic_options.items():
            option_support.check_option_change(options, key, value, self.identifier)
        check_options(dynamic_options, self.identifier)
        options.update(dynamic_options)
        handle = self._derived(
            type(self)(
                self.file_io,
                self.location,
                self.identifier,
                dataclasses.replace(self._schema, options=options),
                branch=self.current_branch,
            )
        )
        handle.core_options.validate()
        return handle

    def _derived(self, handle: Self) -> Self:
        handle.partition_handler = self.partition_handler
        handle.branches_refused = self.branches_refused
        handle.metastore_partitions = self.metastore_partitions
        return handle

    # -- snapshots ------------------------------------------------------------------------------
    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest_snapshot()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.snapshot_manager.snapshot(snapshot_id)

    def snapshot_at(self, timestamp_ms: int) -> Snapshot:
        return self.snapshot_manager.snapshot_at_or_before(timestamp_ms)

    def snapshots(self) -> list[Snapshot]:
        return list(self.snapshot_manager.snapshots())

    def live_entries(self, snapshot: Snapshot, where: ManifestFilter | None = None) -> list[ManifestEntry]:
        """ADD entries of every live data file at ``snapshot`` (only those ``where`` admits:
        manifests whose partition statistics or bucket range exclude it are not read)."""
        return list(self.live_files(snapshot, where).values())

    def live_files(
        self, snapshot: Snapshot, where: ManifestFilter | None = None, keep: bool = True
    ) -> dict[tuple[bytes, int, str], ManifestEntry]:
        """:meth:`live_entries` keyed by identifier (partition, bucket, file name); without
        ``keep``, manifests not cached yet are decoded without being cached."""
        return fold_entries(filtered_entries(self.manifest_io, self.manifest_metas(snapshot), where, keep))

    def manifest_metas(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        """The base then delta manifests of ``snapshot``."""
        mio = self.manifest_io
        return mio.read_list(snapshot.base_manifest_list) + mio.read_list(snapshot.delta_manifest_list)

    def manifest_filter(
        self,
        predicate: Predicate | None = None,
        partitions: Collection[bytes] | None = None,
        buckets: Collection[int] | None = None,
    ) -> ManifestFilter:
        """A :class:`ManifestFilter` for this table's partition columns."""
        return ManifestFilter(self.partition_codec, predicate, partitions, buckets)

    # -- support -----------------------------------------------------------------------------
    @cached_property
    def unsupported_features(self) -> list[str]:
        """What stratalake cannot read or write in this table yet (see :mod:`~stratalake.store.support`);
        empty for a table it fully supports. Listing and describing work either way."""
        return unsupported_features(self._schema, self._schema.options)

    def check_supported(self, action: str = "use") -> None:
        """:class:`~stratalake.exceptions.UnsupportedError` naming the table and each unsupported feature."""
        if self.unsupported_features:
            check_supported(self.identifier, self._schema, action)
        if action == "write":
            option_support.warn_automation(self._schema.options, self.identifier)

    @property
    def is_append(self) -> bool:
        """A table without a primary key: Paimon's append table (``append/write.py``)."""
        return not self._schema.primary_keys

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identifier!r}, location={self.location!r}, schema_id={self._schema.id})"
