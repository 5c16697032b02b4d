"""Scan planning: the live files of a snapshot, pruned, grouped into one split per bucket."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from stratalake.expressions import (
    And,
    ColumnStats,
    FilterLike,
    Predicate,
    pinned_combinations,
    split_conjuncts,
    to_predicate,
)
from stratalake.lsm.deletion_vector import DeletionFile
from stratalake.lsm.levels import KeyOf, key_decoder, overlapping_levels
from stratalake.options import MergeEngine
from stratalake.read.value_stats import file_may_match
from stratalake.spec.bucket import bucket_ids
from stratalake.spec.manifest import DataFileMeta, ManifestEntry
from stratalake.spec.snapshot import Snapshot
from stratalake.spec.stats import stats_to_values
from stratalake.store.index_manifest import deletion_files, dv_entries_by_bucket, live_index_entries
from stratalake.types import to_arrow

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore


@dataclass(frozen=True)
class Split:
    """Live files of one (partition, bucket) at one snapshot: one unit of merge-on-read.

    Deletion-vector tables split a bucket into groups of level>=1 files read one by one, without
    a merge (``merge=False``), each with its deletion vector applied.
    ``snapshot_id`` is a snapshot of ``branch`` when that is set.
    """

    snapshot_id: int
    partition: bytes
    partition_values: tuple[Any, ...]
    bucket: int
    total_buckets: int
    files: tuple[DataFileMeta, ...]
    deletion_files: tuple[tuple[str, DeletionFile], ...] = ()  # (data file name, its vector)
    merge: bool = True
    #: The branch whose files (and schemas) this split reads when it is not the reading table's:
    #: a partition read from the table's ``scan.fallback-branch`` (:mod:`~stratalake.read.fallback`),
    #: and the id of the schema its snapshot has (the columns it is read with).
    branch: str | None = None
    branch_schema_id: int | None = None

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    @property
    def needs_merge(self) -> bool:
        """A single file holds each key at most once, already folded: nothing to merge."""
        return self.merge and len(self.files) > 1

    @property
    def raw_convertible(self) -> bool:
        """Readable without merging and without dropping retractions."""
        return (not self.merge or len(self.files) == 1) and all(f.delete_row_count == 0 for f in self.files)

    def deletion_file(self, file_name: str) -> DeletionFile | None:
        for name, deletion_file in self.deletion_files:
            if name == file_name:
                return deletion_file
        return None


class TableScan:
    """Plans the splits of a read; see :meth:`plan`."""

    def __init__(
        self,
        table: TableStore,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        timestamp_ms: int | None = None,
    ) -> None:
        self.table = table
        self.predicate: Predicate | None = to_predicate(filter)
        self.snapshot_id = snapshot_id
        self.timestamp_ms = timestamp_ms

    def snapshot(self) -> Snapshot | None:
        sm = self.table.snapshot_manager
        if self.snapshot_id is not None:
            return sm.snapshot(self.snapshot_id)
        if self.timestamp_ms is not None:
            return sm.snapshot_at_or_before(self.timestamp_ms)
        return sm.latest_snapshot()

    def plan(self) -> list[Split]:
        """Live files of the snapshot, pruned by partition, bucket and key statistics."""
        snap = self.snapshot()
        if snap is None:
            return []
        table = self.table
        schema = table.schema()
        conjuncts = split_conjuncts(self.predicate)
        part_keys = set(schema.partition_keys)
        part_preds = [p for p in conjuncts if p.columns() <= part_keys]
        key_names = schema.trimmed_primary_keys
        key_preds = [p for p in conjuncts if p.columns() <= set(key_names)]
        wanted_buckets = self._bucket_filter(conjuncts)
        # Manifests whose partition statistics or bucket range exclude the filter are not read.
        where = table.manifest_filter(
            And(tuple(part_preds)) if len(part_preds) > 1 else (part_preds[0] if part_preds else None),
            buckets=wanted_buckets,
        )
        entries = table.live_entries(snap, where)
        # Append tables (no primary key): no merge, so any column's statistics may prune files.
        append = not schema.primary_keys
        value_preds = [p for p in conjuncts if not p.columns() <= part_keys] if append else []

        partition_ok = partition_matcher(table, part_preds)
        groups: dict[tuple[bytes, int], list[ManifestEntry]] = defaultdict(list)
        for e in entries:
            if e.bucket < 0:
                # Postpone-bucket files (bucket -2, `bucket-postpone/`) are invisible to batch
                # reads until compaction moves them to real buckets, as in Paimon.
                continue
            if not partition_ok(e.partition):
                continue
            if wanted_buckets is not None and e.bucket not in wanted_buckets:
                continue
            if key_preds and not self._file_may_match(e.file, key_names, key_preds):
                continue
            if append and not file_may_match(table, e.file, value_preds):
                continue
            groups[(e.partition, e.bucket)].append(e)
        opts = table.core_options
        # Paimon's batchScanSkipLevel0. Level 0 has no deletion vectors, so reading it would need
        # the merge the vectors exist to avoid; first-row's lookup compaction drops keys already
        # stored, so levels >= 1 hold each key once. Compaction at each commit keeps level 0 empty.
        if opts.deletion_vectors_enabled:
            skip_level0 = not opts.get_bool("deletion-vectors.merge-on-read")
        else:
            skip_level0 = opts.merge_engine is MergeEngine.FIRST_ROW
        skip_level0 = skip_level0 and not append  # append files are all level 0
        # Vectors are applied whenever a snapshot has them, even if the option was turned off.
        dv_index = dv_entries_by_bucket(live_index_entries(table, snap))
        target = opts.get_int("source.split.target-size") or 128 * 1024 * 1024
        open_cost = opts.get_int("source.split.open-file-cost") or 0
        splits = []
        key_of: KeyOf | None = None
        for (partition, bucket), group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            files = tuple(sorted((e.file for e in group), key=lambda f: (-f.level, f.min_sequence_number)))
            if skip_level0:
                files = tuple(f for f in files if f.level > 0)
                if not files:
                    continue
            index = dv_index.get((partition, bucket))
            dfiles = deletion_files(table, index) if index else {}
            # Without retractions, level>=1 files of such tables hold each key at most once among
            # their live rows: read them independently, in parallel splits.
            raw = skip_level0 and all(f.delete_row_count == 0 for f in files)
            if append:  # files are read one after the other, in sequence order
                files = tuple(sorted(files, key=lambda f: (f.min_sequence_number, f.file_name)))
                raw = True
            if raw and len(files) > 1 and not append:
                if key_of is None:
                    key_of = key_decoder(schema)
                # Tables written by older versions may hold overlapping files (copies of the same
                # rows) in one level: such a bucket must be merged until compaction repairs it.
                raw = not overlapping_levels(files, key_of)
            for pack in pack_for_ordered(files, target, open_cost) if raw else [files]:
                splits.append(bucket_split(table, snap.id, group[0], pack, dfiles, merge=not raw))
        return splits

    def _bucket_filter(self, conjuncts: Sequence[Predicate]) -> set[int] | None:
        """Buckets a key-equality filter can touch (None: all)."""
        schema = self.table.schema()
        bucket_keys = schema.bucket_keys
        num_buckets = self.table.core_options.bucket
        if not bucket_keys or num_buckets <= 0:
            return None
        # Bounded to keep planning cheap.
        combos = pinned_combinations(conjuncts, bucket_keys, 10_000)
        if combos is None:
            return None
        types = [schema.field(k).type for k in bucket_keys]
        try:
            columns = [pa.array([c[i] for c in combos], type=to_arrow(t)) for i, t in enumerate(types)]
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
            return None
        return {int(b) for b in bucket_ids(columns, types, num_buckets)}

    def _file_may_match(self, f: DataFileMeta, key_names: Sequence[str], preds: Sequence[Predicate]) -> bool:
        return key_stats_may_match(self.table, f, key_names, preds)


def bucket_split(
    table: TableStore,
    snapshot_id: int,
    entry: ManifestEntry,
    files: tuple[DataFileMeta, ...],
    vectors: Mapping[str, DeletionFile],
    merge: bool,
) -> Split:
    """A split of ``files`` of ``entry``'s (partition, bucket), with their deletion vectors."""
    return Split(
        snapshot_id=snapshot_id,
        partition=entry.partition,
        partition_values=table.partition_codec.from_bytes(entry.partition),
        bucket=entry.bucket,
        total_buckets=entry.total_buckets,
        files=files,
        deletion_files=tuple((f.file_name, vectors[f.file_name]) for f in files if f.file_name in vectors),
        merge=merge,
    )


def partition_matcher(table: TableStore, part_preds: Sequence[Predicate]) -> Callable[[bytes], bool]:
    """Whether a partition (its stored bytes) may hold rows matching ``part_preds`` (predicates
    on partition columns), each partition decoded once."""
    codec = table.partition_codec
    seen: dict[bytes, bool] = {}

    def ok(partition: bytes) -> bool:
        result = seen.get(partition)
        if result is None:
            values = codec.to_dict(partition)
            result = seen[partition] = all(p.eval_values(values) is not False for p in part_preds)
        return result

    return ok


def key_stats_may_match(
    table: TableStore, f: DataFileMeta, key_names: Sequence[str], preds: Sequence[Predicate]
) -> bool:
    """Whether primary-key file ``f`` may hold rows matching ``preds`` (predicates on the key
    columns ``key_names``), by its key statistics (unknown statistics never prune)."""
    # Key statistics are safe to prune with: every version of a key has the same key values.
    schema = table.file_schema(f.schema_id)
    try:
        types = [schema.field(k).type for k in key_names]
        mins, maxs, nulls = stats_to_values(f.key_stats, types)
    except Exception:
        return True
    if not mins and not maxs:
        return True
    stats = {
        k: ColumnStats(
            mins[i] if i < len(mins) else None,
            maxs[i] if i < len(maxs) else None,
            nulls[i] if nulls and i < len(nulls) else None,
            f.row_count,
        )
        for i, k in enumerate(key_names)
    }
    return all(p.may_match(stats) for p in preds)


def pack_for_ordered(
    files: Sequence[DataFileMeta], target_size: int, open_file_cost: int
) -> list[tuple[DataFileMeta, ...]]:
    """Consecutive files grouped up to ``target_size`` bytes, each weighing at least
    ``open_file_cost`` (Paimon's ``BinPacking.packForOrdered`` with ``source.split.*``)."""
    packs: list[tuple[DataFileMeta, ...]] = []
    current: list[DataFileMeta] = []
    weight = 0
    for f in files:
        w = max(f.file_size, open_file_cost)
        if current and weight + w > target_size:
            packs.append(tuple(current))
            current, weight = [], 0
        current.append(f)
        weight += w
    if current:
        packs.append(tuple(current))
    return packs
