"""Scan planning: the live files of a snapshot, pruned, grouped into one split per bucket."""

from __future__ import annotations

import contextlib
import heapq
import itertools
import pickle
import tempfile
import zlib
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

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
from stratalake.store.manifests import filtered_entries, fold_entries
from stratalake.types import to_arrow

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore


#: Live files of the largest snapshot :meth:`TableScan.plan_batches` plans at once (one batch),
#: and of a batch of a larger one. Decoded entries take ~0.9 KB each: ~120 MiB and ~30 MiB.
#: Paimon Java's plan of a 100,000-file table holds ~4 KB a file. Planning in batches spills
#: the entries once to local disk (~1.5x the time), so smaller tables are planned at once.
PLAN_AT_ONCE_FILES = 131_072
PLAN_BATCH_FILES = 32_768


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
        return [s for batch in self._batches(None) for s in batch]

    def plan_buckets(self, buckets: Collection[int]) -> list[Split]:
        """:meth:`plan`'s splits of the buckets numbered ``buckets`` only, in every partition:
        manifests whose bucket range excludes them are not read."""
        snap = self.snapshot()
        wanted = set(buckets)
        if snap is None or not wanted:
            return []
        where = self.table.manifest_filter(buckets=wanted)
        return self._splits(snap, [e for e in self.table.live_entries(snap, where) if e.bucket in wanted])

    def plan_batches(self, max_files: int | None = None) -> Iterator[list[Split]]:
        """:meth:`plan`'s splits, in its order, in batches of whole buckets holding about
        ``max_files`` live files each (default :data:`PLAN_BATCH_FILES`; a bucket larger than
        that is a batch of its own), holding one batch's decoded manifest entries at a time.

        A snapshot whose manifest list says it holds no more live files than
        :data:`PLAN_AT_ONCE_FILES` (or ``max_files`` when given) is planned at once, as
        :meth:`plan`. A larger one is sorted externally: its wanted entries are decoded
        once, in runs of ``max_files`` sorted by (partition, bucket, order read) and spilled to
        local disk (compressed pickles), then merged back a chunk of each run at a time; each
        bucket's entries are folded as they come, and a batch of whole buckets is planned when
        it is full. So the driver holds about two batches of entries and a chunk per run,
        whatever the table's size; its manifests are not cached (they would not fit), except
        partial reads of a few partitions a filter pins.
        """
        if max_files is not None:
            if max_files < 1:
                raise ValueError(f"plan_batches: max_files must be at least 1, got {max_files}")
            return self._batches(max_files, max_files)
        return self._batches(PLAN_BATCH_FILES, PLAN_AT_ONCE_FILES)

    def _batches(self, max_files: int | None, at_once: int = 0) -> Iterator[list[Split]]:
        """:meth:`plan_batches`; ``max_files`` None: one batch."""
        snap = self.snapshot()
        if snap is None:
            return
        table = self.table
        schema = table.schema()
        conjuncts = split_conjuncts(self.predicate)
        part_keys = set(schema.partition_keys)
        part_preds = [p for p in conjuncts if p.columns() <= part_keys]
        part_pred = And(tuple(part_preds)) if len(part_preds) > 1 else (part_preds[0] if part_preds else None)
        wanted_buckets = self._bucket_filter(conjuncts)
        # Manifests whose partition statistics or bucket range exclude the filter are not read.
        where = table.manifest_filter(part_pred, buckets=wanted_buckets)
        partition_ok = partition_matcher(table, part_preds)

        def wanted(e: ManifestEntry) -> bool:
            # Postpone-bucket files (bucket -2, `bucket-postpone/`) are invisible to batch
            # reads until compaction moves them to real buckets, as in Paimon.
            return (
                e.bucket >= 0
                and partition_ok(e.partition)
                and (wanted_buckets is None or e.bucket in wanted_buckets)
            )

        metas = table.manifest_metas(snap)
        if max_files is not None:
            listed = sum(
                m.num_added_files - m.num_deleted_files for m in metas if where.manifest_may_match(m)
            )
            if listed <= at_once:
                max_files = None
        if max_files is None:
            yield self._splits(snap, [e for e in table.live_entries(snap, where) if wanted(e)])
            return
        # Partial reads of a few pinned partitions stay cached (small, and a query asks again);
        # whole manifests of a table this size would push out the rest of the cache.
        keep = where.wanted_pairs is not None
        entries = (e for e in filtered_entries(table.manifest_io, metas, where, keep=keep) if wanted(e))
        batch: list[ManifestEntry] = []
        for _, group in itertools.groupby(sorted_entries(entries, max_files), key=_bucket_of):
            live = fold_entries(group).values()
            if batch and len(batch) + len(live) > max_files:
                yield self._splits(snap, batch)
                batch = []
            batch.extend(live)
        if batch:
            yield self._splits(snap, batch)

    def _splits(self, snap: Snapshot, entries: Sequence[ManifestEntry]) -> list[Split]:
        """The splits of the wanted live ``entries`` of whole buckets, by (partition, bucket)."""
        table = self.table
        schema = table.schema()
        conjuncts = split_conjuncts(self.predicate)
        part_keys = set(schema.partition_keys)
        key_names = schema.trimmed_primary_keys
        key_preds = [p for p in conjuncts if p.columns() <= set(key_names)]
        # Append tables (no primary key): no merge, so any column's statistics may prune files.
        append = not schema.primary_keys
        value_preds = [p for p in conjuncts if not p.columns() <= part_keys] if append else []

        groups: dict[tuple[bytes, int], list[ManifestEntry]] = defaultdict(list)
        for e in entries:
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
        dv_index = dv_entries_by_bucket(live_index_entries(table, snap)) if groups else {}
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


def _bucket_of(e: ManifestEntry) -> tuple[bytes, int]:
    return e.partition, e.bucket


def sorted_entries(entries: Iterable[ManifestEntry], run_size: int) -> Iterator[ManifestEntry]:
    """``entries`` sorted by (partition, bucket), entries of one bucket in their given order (so
    that folding a bucket's ADD and DELETE entries still applies them in manifest order).

    An external merge sort holding ``run_size`` entries, plus a chunk of each spilled run: runs
    of ``run_size`` entries are sorted and spilled to anonymous local files (gone once closed),
    at most :data:`SPILL_FAN_IN` at a time (more are first merged into one), then merged."""
    chunk = max(1, min(SPILL_CHUNK, run_size // 16))
    with contextlib.ExitStack() as stack:
        spilled: list[tuple[IO[bytes], Iterator[_Item]]] = []

        def spill(items: Iterable[_Item]) -> tuple[IO[bytes], Iterator[_Item]]:
            file = stack.enter_context(tempfile.TemporaryFile())
            return file, _spilled(file, items, chunk)

        run: list[_Item] = []
        for i, e in enumerate(entries):
            run.append((e.partition, e.bucket, i, e))
            if len(run) >= run_size:
                run.sort(key=_run_order)
                spilled.append(spill(run))
                run = []
            if len(spilled) >= SPILL_FAN_IN:
                merged = spill(heapq.merge(*(r for _, r in spilled), key=_run_order))
                for file, _ in spilled:
                    file.close()
                spilled = [merged]
        run.sort(key=_run_order)
        for item in heapq.merge(*(r for _, r in spilled), iter(run), key=_run_order):
            yield item[3]


_Item = tuple[bytes, int, int, ManifestEntry]


def _run_order(item: _Item) -> tuple[bytes, int, int]:
    return item[0], item[1], item[2]


#: Entries per pickled chunk of a spilled run (what the merge holds of each run), and the most
#: runs merged at once: a plan holds at most 64 x 1,024 entries of them.
SPILL_CHUNK = 1024
SPILL_FAN_IN = 64


def _spilled(file: IO[bytes], items: Iterable[_Item], chunk: int) -> Iterator[_Item]:
    """``items`` written to ``file`` in compressed pickled chunks of ``chunk``; an iterator
    reading them back."""
    batch: list[_Item] = []
    for item in items:
        batch.append(item)
        if len(batch) >= chunk:
            _write_chunk(file, batch)
            batch = []
    if batch:
        _write_chunk(file, batch)
    if isinstance(items, list):
        items.clear()
    file.flush()

    def read() -> Iterator[_Item]:
        file.seek(0)
        while header := file.read(8):
            yield from pickle.loads(zlib.decompress(file.read(int.from_bytes(header, "little"))))

    return read()


def _write_chunk(file: IO[bytes], batch: list[_Item]) -> None:
    data = zlib.compress(pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL), 1)
    file.write(len(data).to_bytes(8, "little"))
    file.write(data)


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
