"""Batch reads of a table's change records: the changelog between snapshots, and ``$audit_log``.

Changelog of snapshots ``(start, end]``, per the table's ``changelog-producer``:

- ``none``: the data files each APPEND snapshot added (level-0 files, one folded record per key
  and flush, with its row kind); COMPACT and OVERWRITE snapshots produce no changelog, as in
  Paimon's streaming reads;
- otherwise: the changelog files of each snapshot's changelog manifest list (``input`` writes every
  input record; ``lookup`` / ``full-compaction`` attach theirs to COMPACT snapshots).

Snapshots that expired are read from their long-lived changelog copies when the table keeps
changelogs longer than snapshots (``changelog.num-retained.*`` / ``changelog.time-retained``).

Within a snapshot, records come bucket by bucket and, within a bucket, in sequence order: for a
key, that is the order the records were written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import SnapshotNotFoundError
from stratalake.expressions import FilterLike, to_predicate
from stratalake.lsm.data_file import read_kv_file
from stratalake.merge import VALUE_KIND
from stratalake.options import ChangelogProducer
from stratalake.read import new_read, new_scan
from stratalake.read.fallback import refuse_fallback
from stratalake.spec.manifest import FileKind, ManifestEntry
from stratalake.spec.snapshot import CommitKind, Snapshot
from stratalake.store.append_file import iter_append_file, with_kv_columns
from stratalake.store.references import ReferenceCollector

if TYPE_CHECKING:
    from stratalake.expressions import Predicate
    from stratalake.read.scan import Split
    from stratalake.store.table_store import TableStore

CHANGELOG_KIND_COLUMN = "_row_kind"
AUDIT_KIND_COLUMN = "rowkind"  # the name of Paimon's $audit_log column
_KIND_STRINGS = pa.array(["+I", "-U", "+U", "-D"], pa.string())


def _with_kind_column(table: TableStore, kv: pa.Table, name: str) -> pa.Table:
    """``kv``'s table columns with the row kind (as +I/-U/+U/-D) prepended as ``name``."""
    arrow_schema = table.arrow_schema()
    kinds = pc.take(_KIND_STRINGS, kv.column(VALUE_KIND))
    out_schema = pa.schema([pa.field(name, pa.string(), nullable=False), *arrow_schema])
    columns = [kinds, *(kv.column(f.name) for f in arrow_schema)]
    return pa.Table.from_arrays(columns, schema=out_schema)


with_kind_column = _with_kind_column


def _empty(table: TableStore, name: str) -> pa.Table:
    return pa.schema([pa.field(name, pa.string(), nullable=False), *table.arrow_schema()]).empty_table()


def read_changelog(
    table: TableStore, start_snapshot: int | None = None, end_snapshot: int | None = None
) -> pa.Table:
    """Change records of snapshots ``(start_snapshot, end_snapshot]`` with a ``_row_kind`` column.

    ``start_snapshot`` defaults to just before the oldest snapshot or changelog still kept,
    ``end_snapshot`` to the latest snapshot.
    """
    refuse_fallback(table, "a change-record read")
    sm, cm = table.snapshot_manager, table.changelog_manager
    latest = sm.latest_snapshot_id()
    if latest is None:
        return _empty(table, CHANGELOG_KIND_COLUMN)
    changelog_ids = cm.ids()
    earliest = sm.earliest_snapshot_id() or latest
    oldest = min(earliest, changelog_ids[0]) if changelog_ids else earliest
    start = oldest - 1 if start_snapshot is None else start_snapshot
    end = latest if end_snapshot is None else end_snapshot
    if start < oldest - 1 or end > latest or start > end:
        raise SnapshotNotFoundError(
            f"table {table.identifier}: cannot read the changelog of snapshots ({start}, {end}]; "
            f"the changelog is kept for snapshots {oldest}..{latest} (raise 'changelog.num-retained.min' "
            "or 'changelog.time-retained' to keep it longer)"
        )
    producer = table.core_options.changelog_producer
    collector = ReferenceCollector(table)
    parts = []
    for sid in range(start + 1, end + 1):
        snap = _snapshot_or_changelog(table, sid, oldest, latest)
        for entry in _changelog_entries(table, snap, producer):
            path = next(collector.entry_paths(entry))
            kv = _read_entry_kv(table, path, entry)
            parts.append(_with_kind_column(table, kv, CHANGELOG_KIND_COLUMN))
    if not parts:
        return _empty(table, CHANGELOG_KIND_COLUMN)
    return pa.concat_tables(parts)


def _snapshot_or_changelog(table: TableStore, sid: int, oldest: int, latest: int) -> Snapshot:
    try:
        return table.snapshot_manager.snapshot(sid)
    except SnapshotNotFoundError:
        snap = table.changelog_manager.try_changelog(sid)
        if snap is not None:
            return snap
        raise SnapshotNotFoundError(
            f"table {table.identifier}: the changelog of snapshot {sid} has expired; it is kept "
            f"for snapshots {oldest}..{latest}"
        ) from None


def _changelog_entries(table: TableStore, snap: Snapshot, producer: ChangelogProducer) -> list[ManifestEntry]:
    if producer is ChangelogProducer.NONE:
        return delta_entries(table, snap)
    return _entries(table, snap.changelog_manifest_list)


def delta_entries(table: TableStore, snap: Snapshot) -> list[ManifestEntry]:
    """The data files an APPEND snapshot added (none for COMPACT and OVERWRITE ones), in reading
    order: Paimon's ``delta`` scan of incremental and streaming reads."""
    if snap.commit_kind is not CommitKind.APPEND:
        return []
    return _entries(table, snap.delta_manifest_list)


def changelog_entries(table: TableStore, snap: Snapshot) -> list[ManifestEntry]:
    """The changelog files of a snapshot other than an OVERWRITE, in reading order: Paimon's
    ``changelog`` scan of incremental reads."""
    if snap.commit_kind is CommitKind.OVERWRITE:
        return []
    return _entries(table, snap.changelog_manifest_list)


def _entries(table: TableStore, list_name: str | None) -> list[ManifestEntry]:
    if list_name is None:
        return []
    mio = table.manifest_io
    entries = [
        e for m in mio.read_list(list_name) for e in mio.read_entries(m.file_name) if e.kind is FileKind.ADD
    ]
    # Sequence numbers order a bucket's records; buckets are independent of each other.
    return sorted(entries, key=lambda e: (e.partition, e.bucket, e.file.min_sequence_number))


def read_audit_log(
    table: TableStore,
    snapshot_id: int | None = None,
    filter: FilterLike = None,
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """The table's rows with a leading ``rowkind`` column, as Paimon's ``$audit_log`` batch read.

    Rows are merged per key as a normal read, but a key whose merged record is a retraction (a
    ``-D`` or ``-U`` not yet dropped by a full compaction) is kept, with that kind, like Paimon's
    ``forceKeepDelete`` read. ``filter`` applies to the merged rows.
    """
    refuse_fallback(table, "a read of $audit_log")
    predicate = to_predicate(filter)
    splits = audit_log_splits(table, snapshot_id, predicate)
    parts = [read_audit_log_split(table, split, predicate) for split in splits]
    out = pa.concat_tables(parts) if parts else _empty(table, AUDIT_KIND_COLUMN)
    if columns is not None:
        out = out.select([AUDIT_KIND_COLUMN, *columns])
    return out


def audit_log_splits(
    table: TableStore, snapshot_id: int | None = None, predicate: Predicate | None = None
) -> list[Split]:
    """The splits of a ``$audit_log`` batch read, each read on its own by
    :func:`read_audit_log_split` (a Spark task each)."""
    refuse_fallback(table, "a read of $audit_log")
    # Planning prunes by partition, bucket and key statistics only: safe before the merge.
    return new_scan(table, filter=predicate, snapshot_id=snapshot_id).plan()


def read_audit_log_split(table: TableStore, split: Split, predicate: Predicate | None = None) -> pa.Table:
    """One split's rows of ``$audit_log`` (see :func:`read_audit_log`)."""
    kv = new_read(table).read_kv_split(split)
    if predicate is not None:
        kv = kv.filter(predicate.to_arrow())
    return _with_kind_column(table, kv, AUDIT_KIND_COLUMN)


# -- per-file access, for incremental (streaming) readers ---------------------------------------


def snapshot_changelog_entries(table: TableStore, snap: Snapshot) -> list[ManifestEntry]:
    """The files holding ``snap``'s change records (per the changelog producer), in reading order."""
    return _changelog_entries(table, snap, table.core_options.changelog_producer)


def read_changelog_entry(
    table: TableStore, entry: ManifestEntry, kind_column: str = CHANGELOG_KIND_COLUMN
) -> pa.Table:
    """One changelog file's records, in the table's current schema, with the row kind first."""
    path = next(ReferenceCollector(table).entry_paths(entry))
    kv = _read_entry_kv(table, path, entry)
    return _with_kind_column(table, kv, kind_column)


def read_entry_kv(table: TableStore, entry: ManifestEntry) -> pa.Table:
    """One data or changelog file's records as a KV table, unmerged, in the current schema."""
    return _read_entry_kv(table, next(ReferenceCollector(table).entry_paths(entry)), entry)


def snapshot_or_changelog(table: TableStore, snapshot_id: int) -> Snapshot:
    """Snapshot ``snapshot_id``, or its long-lived changelog copy once the snapshot expired."""
    sm = table.snapshot_manager
    latest = sm.latest_snapshot_id() or 0
    ids = table.changelog_manager.ids()
    earliest = sm.earliest_snapshot_id() or latest
    oldest = min(earliest, ids[0]) if ids else earliest
    return _snapshot_or_changelog(table, snapshot_id, oldest, latest)


def _read_entry_kv(table: TableStore, path: str, entry: ManifestEntry) -> pa.Table:
    """A data or changelog file as a KV table; an append table's rows are all inserts (+I)."""
    if table.schema().primary_keys:
        return read_kv_file(
            table.file_io,
            path,
            table.file_schema(entry.file.schema_id),
            table.schema(),
            expected_rows=entry.file.row_count,
        )
    parts = list(
        iter_append_file(
            table.file_io,
            path,
            table.file_schema(entry.file.schema_id),
            table.schema(),
            expected_rows=entry.file.row_count,
        )
    )
    rows = pa.concat_tables(parts) if parts else table.arrow_schema().empty_table()
    return with_kv_columns(rows, entry.file.min_sequence_number)
