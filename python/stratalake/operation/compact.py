"""Compaction of primary-key tables: planning the job (one :class:`CompactTask` per bucket), the
per-bucket managers writers use, and one bucket's compaction (:func:`run_primary_key_task`).

The job itself (both table kinds, run and committed as one COMPACT snapshot) is
:mod:`stratalake.table.compaction`.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stratalake.changelog.producers import create_rewriter
from stratalake.exceptions import CommitConflictError, CorruptFileError, InvalidOptionError, UnsupportedError
from stratalake.expressions import Predicate
from stratalake.lsm.compaction import (
    BucketFiles,
    CompactIncrement,
    CompactionOptions,
    MergeTreeCompactManager,
    create_strategy,
)
from stratalake.lsm.data_file import FileNamer, bucket_dir
from stratalake.lsm.levels import Levels, key_decoder, overlapping_levels
from stratalake.lsm.lookup import LocalCopies
from stratalake.operation.commit import CommitMessage
from stratalake.options import ChangelogProducer
from stratalake.spec.manifest import DataFileMeta, IndexManifestEntry
from stratalake.store.index_manifest import (
    dv_entries_by_bucket,
    index_file_path,
    live_index_entries,
    restore_maintainer,
)

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompactTask:
    """The live files of one (partition, bucket) to compact. Picklable."""

    snapshot_id: int
    partition: bytes
    partition_values: tuple[Any, ...]
    bucket: int
    total_buckets: int
    files: tuple[DataFileMeta, ...]
    dv_index: tuple[IndexManifestEntry, ...] = ()  # the bucket's deletion-vector index files


def bucket_files(
    table: TableStore, partition_values: tuple[Any, ...], bucket: int, namer: FileNamer | None = None
) -> BucketFiles:
    """Reading and writing files of one bucket of ``table`` (its data files named by ``namer``,
    its changelog files by its sibling; None: new namers)."""
    opts = table.core_options
    directory = bucket_dir(table.location, table.partition_codec.path(partition_values), bucket)
    files = BucketFiles(table.file_io, directory, table.schema(), opts, table.file_schema)
    if namer is not None:
        files.data_namer, files.changelog_namer = namer, namer.sibling("changelog")
    if not table.file_io.is_local and opts.changelog_producer is ChangelogProducer.LOOKUP:
        # Lookups read higher-level files again and again: keep local copies of remote ones.
        copies = LocalCopies.default(
            opts.get_int("lookup.cache-max-disk-size") or 0, opts.get_int("lookup.cache-file-retention") or 0
        )
        files.local_path = lambda path, size: copies.local_path(table.file_io, path, size)
    return files


def bucket_manager(
    table: TableStore,
    partition_values: tuple[Any, ...],
    bucket: int,
    restored: Sequence[DataFileMeta],
    dv_index: Sequence[IndexManifestEntry] = (),
    namer: FileNamer | None = None,
) -> MergeTreeCompactManager:
    """The compaction manager of one bucket, its levels restored from ``restored`` files and, for
    deletion-vector tables, its vectors from ``dv_index`` (the bucket's live index files at the
    same snapshot). Every file it writes is named by ``namer`` or its siblings (None: new namers)."""
    core = table.core_options
    files = bucket_files(table, partition_values, bucket, namer)
    if core.deletion_vectors_enabled:
        if core.changelog_producer is ChangelogProducer.FULL_COMPACTION:
            # Its rewriter merges without looking old records up, so it could not mask them.
            raise UnsupportedError(
                f"table {table.identifier}: 'deletion-vectors.enabled'='true' with "
                "'changelog-producer'='full-compaction' is not supported; use 'lookup' or 'none'"
            )
        partition = table.partition_codec.to_bytes(partition_values)
        files.deletion_vectors = restore_maintainer(table, partition, bucket, dv_index)
        if namer is not None:
            files.deletion_vectors.namer = namer.sibling("index")
    opts = CompactionOptions.of(core)
    levels = Levels(key_decoder(table.schema()), restored, opts.num_levels)
    rewriter = create_rewriter(files, table.merge_context, levels)
    return MergeTreeCompactManager(levels, create_strategy(opts), rewriter, opts)


def plan(
    table: TableStore,
    partitions: Sequence[dict[str, Any]] | None = None,
    partition_filter: Predicate | None = None,
) -> list[CompactTask]:
    """One task per bucket with live files at the latest snapshot (optionally only of some
    ``partitions`` specs, and/or of the partitions whose values ``partition_filter`` accepts)."""
    snap = table.latest_snapshot()
    if snap is None:
        return []
    codec = table.partition_codec
    wanted = None
    if partitions:
        wanted = {codec.to_bytes(codec.spec_to_values(p, table.identifier)) for p in partitions}
    selected: dict[bytes, bool] = {}
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    totals: dict[tuple[bytes, int], int] = {}
    entries = table.live_entries(snap)
    if wanted is not None:
        _check_partitions_exist(table, partitions or [], wanted, {e.partition for e in entries})
    for e in entries:
        if wanted is not None and e.partition not in wanted:
            continue
        if partition_filter is not None:
            if e.partition not in selected:
                selected[e.partition] = partition_filter.eval_values(codec.to_dict(e.partition)) is True
            if not selected[e.partition]:
                continue
        groups[(e.partition, e.bucket)].append(e.file)
        totals[(e.partition, e.bucket)] = e.total_buckets
    dv_index = dv_entries_by_bucket(live_index_entries(table, snap))
    if table.schema().primary_keys:
        _warn_overlapping(table, groups)
    return [
        CompactTask(
            snap.id, p, codec.from_bytes(p), b, totals[(p, b)], tuple(files), tuple(dv_index.get((p, b), ()))
        )
        for (p, b), files in sorted(groups.items(), key=lambda kv: kv[0])
    ]


def check_partitions(table: TableStore, specs: Sequence[dict[str, Any]]) -> None:
    """:class:`InvalidOptionError` when a partition spec names no partition with live files at
    the latest snapshot (``CALL sys.compact`` checks before it starts its job)."""
    snap = table.latest_snapshot()
    codec = table.partition_codec
    wanted = {codec.to_bytes(codec.spec_to_values(p, table.identifier)) for p in specs}
    live = {e.partition for e in table.live_entries(snap)} if snap is not None else set()
    _check_partitions_exist(table, specs, wanted, live)


def _check_partitions_exist(
    table: TableStore, specs: Sequence[dict[str, Any]], wanted: set[bytes], live: set[bytes]
) -> None:
    """A spec naming no partition with live files is a mistake (a typo, a quoting or type
    mismatch), not "nothing to compact": compacting nothing and answering success hides it."""
    codec = table.partition_codec
    missing = [s for s in specs if codec.to_bytes(codec.spec_to_values(s, table.identifier)) not in live]
    if missing:
        known = sorted(str(codec.to_dict(p)) for p in live)
        shown = ", ".join(known[:5]) + (f" ... ({len(known)} in all)" if len(known) > 5 else "")
        raise InvalidOptionError(
            f"table {table.identifier}: compact partitions {', '.join(str(m) for m in missing)} match no "
            f"partition of the table; its partitions are {shown or 'none (the table is empty)'}"
        )


def _bucket_name(table: TableStore, partition: bytes, bucket: int) -> str:
    codec = table.partition_codec
    return (
        f"bucket {bucket} of partition {codec.to_dict(partition)}"
        if codec.is_partitioned
        else f"bucket {bucket}"
    )


def _warn_overlapping(table: TableStore, groups: dict[tuple[bytes, int], list[DataFileMeta]]) -> None:
    """Say which buckets hold overlapping files in a level >= 1 (metadata only)."""
    key_of = key_decoder(table.schema())
    for (partition, bucket), files in sorted(groups.items(), key=lambda kv: kv[0]):
        for level, runs in overlapping_levels(files, key_of).items():
            _LOG.warning(
                "table %s: %s has overlapping files at level %d (%d sorted runs, %d files), left by "
                "an older version that let several writers compact one bucket in one commit; "
                "reads merge them, and a full compaction repairs it into one sorted run",
                table.identifier,
                _bucket_name(table, partition, bucket),
                level,
                len(runs),
                sum(len(r.files) for r in runs),
            )


def run_primary_key_task(
    table: TableStore, task: CompactTask, full: bool = False, namer: FileNamer | None = None
) -> CommitMessage | None:
    """Compact one bucket of a primary-key table; the message describes the files to swap (nothing
    is visible yet). :func:`stratalake.table.compaction.run_task` picks this or the append tables' one.
    Its files are named by ``namer`` and its siblings (None: new namers).

    A bucket whose level >= 1 holds overlapping files (written by older versions) is restored as
    several sorted runs; a full compaction merges them into one (logged)."""
    manager = bucket_manager(table, task.partition_values, task.bucket, task.files, task.dv_index, namer)
    rewriter_files = manager.rewriter.files
    increment = CompactIncrement(rewriter_files.delete)
    index_added: tuple[IndexManifestEntry, ...] = ()
    index_deleted: tuple[IndexManifestEntry, ...] = ()
    try:
        result = manager.trigger_compaction(full)
        if result is not None:
            increment.add(result)
        # Lookup tables: level 0 must be empty afterwards, or its changelog is never produced.
        for _ in range(manager.levels.number_of_levels):
            if not manager.compaction_not_completed():
                break
            result = manager.trigger_compaction(False)
            if result is None:
                break
            increment.add(result)
        if manager.dv_maintainer is not None and not increment.is_empty():
            index_added, index_deleted = manager.dv_maintainer.write(table.file_io)
            rewriter_files.written += [index_file_path(table, e) for e in index_added]
    except BaseException as e:
        for path in rewriter_files.written:
            table.file_io.delete_quietly(path)
        if isinstance(e, CorruptFileError) and _inputs_replaced(table, task):
            raise CommitConflictError(
                f"table {table.identifier}: compaction of bucket {task.bucket} planned at snapshot "
                f"{task.snapshot_id} lost a race: a concurrent commit replaced its input files and "
                "expiration deleted them; the table is unchanged. Re-run the compaction."
            ) from e
        raise
    if manager.levels.restored_overlaps:
        left = manager.levels.overlapping_levels()
        _LOG.warning(
            "table %s: %s: levels with overlapping files %s (level: sorted runs) %s",
            table.identifier,
            _bucket_name(table, task.partition, task.bucket),
            manager.levels.restored_overlaps,
            f"remain as {left} until a full compaction" if left else "were merged into one sorted run",
        )
    if increment.is_empty():
        return None
    before, after, changelog = increment.drain()
    return CommitMessage(
        partition=task.partition,
        bucket=task.bucket,
        total_buckets=task.total_buckets,
        compact_before=before,
        compact_after=after,
        compact_changelog_files=changelog,
        index_files_added=index_added,
        index_files_deleted=index_deleted,
        index_base=tuple(e.file_name for e in task.dv_index) if manager.dv_maintainer is not None else None,
    )


def _inputs_replaced(table: TableStore, task: CompactTask) -> bool:
    """Whether some input file of ``task`` is no longer live at the latest snapshot."""
    snap = table.latest_snapshot()
    live = {
        e.file.file_name
        for e in (table.live_entries(snap) if snap is not None else [])
        if (e.partition, e.bucket) == (task.partition, task.bucket)
    }
    return any(f.file_name not in live for f in task.files)
