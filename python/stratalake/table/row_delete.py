"""Row-level DELETE on primary-key tables that cannot take a ``-D`` record, as Paimon's Spark
DELETE does it (``DeleteFromPaimonTableCommand.performNonPrimaryKeyDelete``).

A first-row table keeps a key's first row, so a retraction would be dropped; partial-update and
aggregation tables fold a retraction into the row unless ``*.remove-record-on-delete`` says
otherwise. Paimon deletes their rows by where they are stored instead:

- the candidate files are the live files of the latest snapshot that the condition may touch
  (partition values, key statistics; value statistics per file where files are read on their own,
  per bucket otherwise, as Paimon's ``KeyValueFileStoreScan``);
- every bucket's candidates must read without a merge (Paimon's ``MergeTreeSplitGenerator``:
  ``rawConvertible``), else the DELETE is refused with Paimon's advice to compact first;
- the matching rows' positions are found reading only the condition's columns, batch by batch,
  each file's deletion vector applied; a row whose condition is NULL is kept (Paimon's ``Not(EqualNullSafe(condition, true))``);
- with deletion vectors the positions join the files' vectors (new index files); otherwise each
  touched file is replaced by a copy without those rows, in one OVERWRITE snapshot that also
  deletes the touched files (Paimon's commit of deleted files). As Paimon's write-only writer,
  partial-update and aggregation copies are level-0 files; first-row copies keep their level,
  since first-row reads skip level 0 (Paimon compacts its copies up at the same commit). Unlike
  Paimon's writer, which numbers the copied rows after the bucket's newest, they keep their
  sequence numbers: an upsert committed while the DELETE ran stays newer than the stale copy.

Conditions that are not column-vs-literal comparisons (subqueries, expressions, ``LIKE``, UDFs)
run in Spark's row-level plan instead, as Paimon's ``findTouchedFiles`` / ``collectDeletionVectors``
run a Spark query over the table with its file-path and row-index metadata columns: the scan reads
the same candidate files (:func:`position_splits`, refused alike) without a merge, each file's
deletion vector applied, and emits every row with its data file and position
(:func:`rows_with_positions`); Spark evaluates the condition in its tasks and the matching
positions come back to :func:`delete_positions`, the same commit as above.

The commit requires every touched file to be live still (``append/dml.py``'s
``apply_changes``): a concurrent compaction that replaced one makes it fail, unchanged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.append.dml import (
    DeleteResult,
    DeleteUnit,
    Positions,
    Rewrite,
    RowDeletes,
    apply_changes,
    commit_results,
    kept_rows,
    pack_units,
    run_unit,
    run_units,
    unit_positions,
)
from stratalake.append.dml import delete_units as append_delete_units
from stratalake.exceptions import UnsupportedError
from stratalake.expressions import Predicate, split_conjuncts
from stratalake.lsm.data_file import (
    DataFileWriter,
    FileNamer,
    RollingDataFileWriter,
    bucket_dir,
    iter_kv_file,
)
from stratalake.lsm.deletion_vector import read_deletion_vector
from stratalake.lsm.merge_reader import dv_keep_mask
from stratalake.merge import VALUE_KIND
from stratalake.operation.commit import CommitMessage
from stratalake.options import MergeEngine
from stratalake.read.append_read import FILE_COLUMN, POS_COLUMN, SNAPSHOT_COLUMN, with_row_ids
from stratalake.read.scan import Split, bucket_split, key_stats_may_match, pack_for_ordered, partition_matcher
from stratalake.read.value_stats import file_may_match
from stratalake.spec.manifest import DataFileMeta, ManifestEntry
from stratalake.store.files import data_file_path
from stratalake.store.index_manifest import deletion_files, dv_entries_by_bucket, live_index_entries

if TYPE_CHECKING:
    from stratalake.spec.snapshot import Snapshot
    from stratalake.store.table_store import TableStore

_LIVE_KINDS = [0, 2]  # +I and +U: the rows a read returns (-U / -D are retractions)


def deletes_by_rewrite(table: TableStore) -> bool:
    """Whether a row-level DELETE of ``table`` removes stored rows instead of writing ``-D``
    records: the primary-key tables Paimon's ``PrimaryKeyTableUtils.validatePKUpsertDeletable``
    refuses (first-row; partial-update and aggregation without their remove options)."""
    if not table.schema().primary_keys:
        return False
    opts = table.core_options
    engine = opts.merge_engine
    if engine is MergeEngine.FIRST_ROW:
        return True
    if engine is MergeEngine.PARTIAL_UPDATE:
        return not opts.get_bool("partial-update.remove-record-on-delete") and (
            opts.get("partial-update.remove-record-on-sequence-group") is None
        )
    if engine is MergeEngine.AGGREGATE:
        return not opts.get_bool("aggregation.remove-record-on-delete")
    return False


def delete_stored_rows(table: TableStore, predicate: Predicate) -> int | None:
    """``DELETE FROM table WHERE predicate`` on a table of :func:`deletes_by_rewrite`; returns the
    new snapshot id, or None when no row matched (no snapshot, as Paimon's empty commit)."""
    return delete_matching(table, predicate)


def matching_positions(table: TableStore, predicate: Predicate) -> RowDeletes:
    """Where the live rows of the latest snapshot that ``predicate`` holds for are stored (the
    candidate files of :func:`position_splits`, refused alike)."""
    snapshot_id, splits = position_splits(table, predicate)
    deletes = RowDeletes(snapshot_id=snapshot_id)
    for split in splits:
        _add_positions(deletes, table, split, predicate)
    return deletes


def _add_positions(deletes: RowDeletes, table: TableStore, split: Split, predicate: Predicate) -> None:
    # Only the condition's columns are read; rows a deletion vector already removed are not
    # matched again (a DELETE that finds no live row commits nothing).
    for rows in rows_with_positions(table, split, [], predicate):
        deletes.add_batch(rows.column(FILE_COLUMN), rows.column(POS_COLUMN), rows.column(SNAPSHOT_COLUMN))


def delete_units(table: TableStore, predicate: Predicate) -> list[DeleteUnit]:
    """The units (``append/dml.py``) of a DELETE the table evaluates itself: an append table's
    candidate files, or, for a table of :func:`deletes_by_rewrite`, those of
    :func:`position_splits` (refused alike when a bucket's files need a merge)."""
    if not table.schema().primary_keys:
        return append_delete_units(table, predicate)
    snap = table.latest_snapshot()
    if snap is None:
        return []
    groups = _candidates(table, snap, predicate)
    _check_no_merge(table, groups)
    dv_index = dv_entries_by_bucket(live_index_entries(table, snap)) if groups else {}
    return pack_units(table, snap.id, groups, dv_index)


def run_delete_unit(
    table: TableStore, unit: DeleteUnit, predicate: Predicate, namer: FileNamer | None = None
) -> DeleteResult | None:
    """Find and remove the rows of ``unit`` that ``predicate`` holds for (in a Spark task, or
    here): what the unit wrote (its data files named by ``namer``), or None when no row matched."""
    if not table.schema().primary_keys:
        return run_unit(table, unit, unit_positions(table, unit, predicate), namer=namer)
    files = tuple(e.file for e in unit.entries)
    split = bucket_split(
        table, unit.snapshot_id, unit.entries[0], files, deletion_files(table, unit.index_base), merge=False
    )
    deletes = RowDeletes(snapshot_id=unit.snapshot_id)
    _add_positions(deletes, table, split, predicate)
    rewrite = None if table.core_options.deletion_vectors_enabled else _rewriter(table)
    return run_unit(table, unit, deletes, rewrite, namer)


def delete_matching(table: TableStore, predicate: Predicate, commit_user: str | None = None) -> int | None:
    """Run a DELETE of :func:`delete_units` in this process and commit it; returns the new
    snapshot id, or None when no row matched."""
    units = delete_units(table, predicate)
    results = run_units(table, units, lambda u: run_delete_unit(table, u, predicate))
    return commit_results(table, results, commit_user)


def delete_positions(table: TableStore, deletes: RowDeletes, commit_user: str | None = None) -> int | None:
    """Remove the stored rows at ``deletes``' positions (all read at one snapshot): deletion
    vectors, or copies of the touched files without them; returns the new snapshot id, or None
    when there is none to remove."""
    if not deletes.positions:
        return None
    rewrite = None
    if not table.core_options.deletion_vectors_enabled:
        rewrite = _rewriter(table)
    return apply_changes(table, deletes, commit_user=commit_user, rewrite=rewrite)


def commit_positions(
    table: TableStore, deletes: RowDeletes, inserts: Sequence[CommitMessage] = (), commit_user: str | None = None
) -> int | None:
    """Commit what Spark's row-level plan found, in this process: ``deletes`` (positions) and an
    append table's ``inserts`` (files written by its tasks), as one snapshot."""
    if table.schema().primary_keys:
        return delete_positions(table, deletes, commit_user)
    return apply_changes(table, deletes, inserts, commit_user)


def rewrites_in_tasks(table: TableStore, deletes: RowDeletes) -> bool:
    """Whether the files ``deletes`` touches are rewritten (copy-on-write, in Spark tasks: the
    rest is metadata, written where it is committed)."""
    return bool(deletes.positions) and not table.core_options.deletion_vectors_enabled


def run_rewrite_unit(
    table: TableStore, unit: DeleteUnit, positions: dict[str, Positions], namer: FileNamer | None = None
) -> DeleteResult | None:
    """Rewrite ``unit``'s files without the rows at ``positions`` (in a Spark task), the copies
    named by ``namer``."""
    deletes = RowDeletes(snapshot_id=unit.snapshot_id, positions={n: [p] for n, p in positions.items()})
    rewrite = _rewriter(table) if table.schema().primary_keys else None
    return run_unit(table, unit, deletes, rewrite, namer)


def position_splits(table: TableStore, predicate: Predicate | None) -> tuple[int | None, list[Split]]:
    """The latest snapshot's id and the splits a row-level DELETE by position reads: the files
    ``predicate`` (a condition's translatable part, for pruning only) may touch, read without a
    merge, a bucket's files in one or more splits; refused with the compact-first advice when a
    bucket's files would need one (as :func:`delete_stored_rows`)."""
    snap = table.latest_snapshot()
    if snap is None:
        return None, []
    groups = _candidates(table, snap, predicate)
    _check_no_merge(table, groups)
    dv_index = dv_entries_by_bucket(live_index_entries(table, snap))
    # Files read without a merge are independent: packed into splits of 'source.split.*' (as
    # Paimon packs raw-convertible files), so a large bucket is read by several tasks.
    opts = table.core_options
    target = opts.get_int("source.split.target-size") or 128 * 1024 * 1024
    open_cost = opts.get_int("source.split.open-file-cost") or 0
    splits = []
    for key, entries in sorted(groups.items()):
        index = dv_index.get(key)
        vectors = deletion_files(table, index) if index else {}
        for pack in pack_for_ordered([e.file for e in entries], target, open_cost):
            splits.append(bucket_split(table, snap.id, entries[0], pack, vectors, merge=False))
    return snap.id, splits


def rows_with_positions(
    table: TableStore, split: Split, columns: Sequence[str], predicate: Predicate | None
) -> Iterator[pa.Table]:
    """The live rows of a :func:`position_splits` split (``columns``, those ``predicate`` holds
    for), batch by batch, each with its row id: data file, position in it, snapshot."""
    directory = bucket_dir(table.location, table.partition_codec.path(split.partition_values), split.bucket)
    schema = table.schema()
    wanted = set(columns) | (predicate.columns() if predicate is not None else set())
    read = [f.name for f in schema.fields if f.name in wanted]
    live = pc.field(VALUE_KIND).isin(_LIVE_KINDS)
    mask = live if predicate is None else predicate.to_arrow() & live
    for f in split.files:
        deletion_file = split.deletion_file(f.file_name)
        dv = read_deletion_vector(table.file_io, deletion_file, f.row_count) if deletion_file else None
        offset = 0
        # With the row kind, which also counts the rows when no column is wanted (a condition
        # on other tables only).
        for rows in iter_kv_file(
            table.file_io,
            data_file_path(directory, f),
            table.file_schema(f.schema_id),
            schema,
            read,
            expected_rows=f.row_count,
            sequence_numbers=False,
        ):
            n = rows.num_rows
            rows = rows.append_column(POS_COLUMN, pa.array(np.arange(offset, offset + n, dtype=np.int64)))
            keep = dv_keep_mask(dv.positions, offset, n) if dv is not None else None
            offset += n
            if keep is not None:
                rows = rows.filter(pa.array(keep))
            rows = rows.filter(mask)
            if rows.num_rows:
                yield with_row_ids(rows.select([*columns, POS_COLUMN]), f.file_name, split.snapshot_id)


def _candidates(
    table: TableStore, snap: Snapshot, predicate: Predicate | None
) -> dict[tuple[bytes, int], list[ManifestEntry]]:
    """The files the condition may touch, by (partition, bucket)."""
    schema = table.schema()
    opts = table.core_options
    conjuncts = split_conjuncts(predicate)
    part_keys = set(schema.partition_keys)
    key_names = list(schema.trimmed_primary_keys)
    part_preds = [p for p in conjuncts if p.columns() <= part_keys]
    key_preds = [p for p in conjuncts if p.columns() <= set(key_names)]
    value_preds = [p for p in conjuncts if not p.columns() <= part_keys]
    # Paimon prunes single files by value statistics only where files are read on their own
    # (deletion vectors, first-row); otherwise a bucket is kept whole if any file may match.
    per_file = opts.deletion_vectors_enabled or opts.merge_engine is MergeEngine.FIRST_ROW
    partition_ok = partition_matcher(table, part_preds)
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = defaultdict(list)
    for e in table.live_entries(snap):
        if not partition_ok(e.partition):
            continue
        if key_preds and not key_stats_may_match(table, e.file, key_names, key_preds):
            continue
        if per_file and not file_may_match(table, e.file, value_preds):
            continue
        groups[(e.partition, e.bucket)].append(e)
    if not per_file:
        groups = {
            k: v for k, v in groups.items() if any(file_may_match(table, e.file, value_preds) for e in v)
        }
    return dict(groups)


def needs_no_merge(files: list[DataFileMeta], always_raw: bool) -> bool:
    """Whether a bucket's candidate files read without a merge: Paimon's
    ``MergeTreeSplitGenerator.splitForBatch`` (raw convertible: no level-0 file and no retraction,
    and with neither deletion vectors nor first-row all in one level; or a single such file).
    Paimon also counts a bucket whose non-overlapping files are packed into separate splits of
    ``source.split.target-size``; those are refused here until compacted."""
    without_deletes = all(f.delete_row_count == 0 for f in files)
    raw = without_deletes and all(f.level != 0 for f in files)
    if raw and (always_raw or len({f.level for f in files}) == 1):
        return True
    return len(files) == 1 and without_deletes


def _check_no_merge(table: TableStore, groups: dict[tuple[bytes, int], list[ManifestEntry]]) -> None:
    opts = table.core_options
    always_raw = opts.deletion_vectors_enabled or opts.merge_engine is MergeEngine.FIRST_ROW
    for (partition, bucket), entries in sorted(groups.items()):
        if needs_no_merge([e.file for e in entries], always_raw):
            continue
        codec = table.partition_codec
        where = (
            f"partition {codec.to_dict(partition)}, bucket {bucket}"
            if codec.is_partitioned
            else f"bucket {bucket}"
        )
        raise UnsupportedError(
            f"table {table.identifier}: DELETE with merge engine '{opts.merge_engine.value}' removes the "
            f"stored rows, which needs the files it reads to be compacted, and {where} has files that still "
            "need a merge. Only compacted table can generate touched files, please use 'COMPACT' "
            f"procedure first: CALL sys.compact(table => '{table.identifier}'), then run the DELETE "
            "again. Nothing was changed."
        )


def _rewriter(table: TableStore) -> Rewrite:
    """How a touched file is copied without its deleted rows (see the module's docstring)."""
    level_of_copy = None if table.core_options.merge_engine is MergeEngine.FIRST_ROW else 0

    def rewrite(
        table: TableStore, entry: ManifestEntry, drop: Positions, namer: FileNamer
    ) -> tuple[list[DataFileMeta], list[str]]:
        codec = table.partition_codec
        directory = bucket_dir(table.location, codec.path(codec.from_bytes(entry.partition)), entry.bucket)
        f = entry.file
        schema = table.schema()
        base = DataFileWriter(table.file_io, schema, table.core_options, directory, namer)
        writer = RollingDataFileWriter(base, f.level if level_of_copy is None else level_of_copy)
        try:
            offset = 0
            for kv in iter_kv_file(
                table.file_io,
                f"{directory}/{f.file_name}",
                table.file_schema(f.schema_id),
                schema,
                expected_rows=f.row_count,
            ):
                keep = kept_rows(drop, offset, kv.num_rows)
                offset += kv.num_rows
                if not keep.any():
                    continue
                writer.write(kv.filter(pa.array(keep)))
            return writer.close(), list(writer.paths)
        except BaseException:
            writer.abort()
            raise

    return rewrite
