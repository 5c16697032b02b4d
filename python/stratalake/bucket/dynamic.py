"""Dynamic bucket mode (``bucket = -1``, Paimon's default for primary-key tables).

Each partition has any number of buckets; a key's bucket is recorded in the table's *hash index*
(Paimon's "Dynamic Bucket" and "Index Files" spec pages, and ``docs/format.md``):

* one file per (partition, bucket), ``index/index-<uuid>-<n>``, holding the 4-byte big-endian hash
  of every trimmed primary key ever written to that bucket (the key's BinaryRow hash, the one fixed
  buckets use, see :func:`stratalake.spec.bucket.hash_rows`); hashes are never removed;
* listed in the snapshot's index manifest as an entry of type ``HASH``. A new file for a bucket
  replaces the old one (Paimon's index-manifest combiner keys HASH entries by partition and
  bucket), in the same snapshot as the data written with it.

A key already in the index goes to its bucket. A new key goes, as in Paimon's ``PartitionIndex``,
to the lowest bucket holding fewer than ``dynamic-bucket.target-row-num`` hashes; when every bucket
is full, to a new bucket (the lowest free id), up to ``dynamic-bucket.max-buckets`` per partition
(-1: Paimon's limit of ``Short.MAX_VALUE - 1``); beyond that, to one of the existing buckets.
New keys are split over N assigners as Paimon's ``HashBucketAssigner`` does (with as many
channels as assigners): a key belongs to assigner ``(|partition hash % N| + |key hash % N|) % N``
(its *slice* of the hash space), which loads only its slice of the partition's index and creates
and fills only the buckets it owns, ``b % N == assigner``; so the first keys of a partition spread
over N buckets. The Python API plays every assigner in one process (N = ``initial-buckets``, else
1, as pypaimon); a Spark write runs the slices in separate tasks (``num_assigners``, see
ARCHITECTURE.md "Dynamic buckets in Spark"). A bucket may hold keys of several slices (a writer with
another N filled it); such a bucket's existing keys are updated by whichever task holds their
slice, but only its owner adds keys to it (and rewrites its index file) or compacts it.

Assignment is vectorized: per partition a sorted array of the loaded slices' hashes with their
buckets, ``np.searchsorted`` for known keys, ``np.repeat`` over bucket capacities for new ones. A
slice of a partition is loaded once per writer, at the snapshot of the writer's first assignment;
as Paimon's ``PartitionIndex.loadIndex``, only the partitions the writer meets are read (their
HASH files, and the data manifests whose partition statistics admit them, to refuse a bucket with
data but no index), never the whole table.

Each process keeps the HASH files it decoded or wrote (:data:`HASH_FILES`, by table location and
file name: a file is never rewritten under its name), within the byte budget of the table option
``stratalake.key-index-cache.max-memory`` (0: off). A writer's next statement (a Spark Python
worker is reused; a streaming micro-batch) then reads only the index manifest and the HASH files
another process wrote since; the ones its own commits wrote are already here.

Paimon allows one writing job at a time on such a table. :func:`check_hash_index_conflicts` makes a
commit that changes a partition's hash index fail with :class:`CommitConflictError` when another
commit changed that partition's index after this writer loaded it (two writers could otherwise
put the same new key into two buckets); nothing is committed, and the write can be retried.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from stratalake.bucket.key_index_cache import MAX_MEMORY_OPTION
from stratalake.exceptions import CommitConflictError, CorruptFileError, UnsupportedError
from stratalake.lsm.compaction.strategy import needs_lookup
from stratalake.lsm.deletion_vector import index_file_name
from stratalake.options import ChangelogProducer, CoreOptions
from stratalake.spec.bucket import hash_bytes, hash_rows
from stratalake.spec.manifest import FileKind, IndexManifestEntry
from stratalake.spec.snapshot import Snapshot
from stratalake.store.index_manifest import HASH_INDEX, index_dir, index_file_path, live_index_entries
from stratalake.store.partition import group_rows

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

__all__ = [
    "DYNAMIC_BUCKET",
    "HASH_FILES",
    "HASH_INDEX",
    "POSTPONE_BUCKET",
    "BucketAssigner",
    "HashIndexChange",
    "assigner_ids",
    "check_hash_index_conflicts",
    "check_writable",
    "compacts_every_commit",
    "decode_hash_index",
    "drop_hash_index",
    "encode_hash_index",
    "hash_index_entries_by_partition",
    "owner_consistent_assigners",
    "split_index_entries",
]

DYNAMIC_BUCKET = -1
POSTPONE_BUCKET = -2
# Paimon's PartitionIndex: bucket ids stay below Short.MAX_VALUE (they are stored as shorts).
_UNBOUNDED_MAX_BUCKET_ID = 32767 - 1

DEFAULT_TARGET_ROW_NUM = 2_000_000


# -- index files -----------------------------------------------------------------------------------
def encode_hash_index(hashes: npt.NDArray[np.int32]) -> bytes:
    """A HASH index file: each hash as a 4-byte big-endian int (sorted, as pypaimon writes them;
    Paimon's readers accept any order)."""
    return np.sort(hashes.astype(np.int32)).astype(">i4").tobytes()


def decode_hash_index(data: bytes, origin: str = "hash index") -> npt.NDArray[np.int32]:
    if len(data) % 4:
        raise CorruptFileError(f"{origin}: a HASH index holds 4-byte hashes, got {len(data)} bytes")
    return np.frombuffer(data, dtype=">i4").astype(np.int32)


class HashFileCache:
    """Decoded HASH index files of this process, least recently used out past a byte budget;
    thread safe. ``stats`` counts hits, reads and files kept from this process's own writes."""

    def __init__(self) -> None:
        self._files: OrderedDict[tuple[str, str], npt.NDArray[np.int32]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.stats: Counter[str] = Counter()

    def read(self, table: TableStore, entry: IndexManifestEntry) -> npt.NDArray[np.int32]:
        """The hashes of ``entry``'s file (read-only), from here or read and kept."""
        key = (table.location, entry.file_name)
        with self._lock:
            hashes = self._files.get(key)
            if hashes is not None:
                self._files.move_to_end(key)
                self.stats["hit"] += 1
                return hashes
        path = index_file_path(table, entry)
        hashes = decode_hash_index(table.file_io.read_bytes(path), path)
        self._keep(table, entry.file_name, hashes, "read")
        return hashes

    def wrote(self, table: TableStore, name: str, hashes: npt.NDArray[np.int32]) -> None:
        """Keep the hashes of a file this process just wrote."""
        self._keep(table, name, hashes, "wrote")

    def _keep(self, table: TableStore, name: str, hashes: npt.NDArray[np.int32], why: str) -> None:
        budget = table.core_options.get_int(MAX_MEMORY_OPTION) or 0
        with self._lock:
            self.stats[why] += 1
            key = (table.location, name)
            if budget <= 0 or hashes.nbytes > budget or key in self._files:
                return
            hashes = hashes.copy()
            hashes.setflags(write=False)
            self._files[key] = hashes
            self._bytes += hashes.nbytes
            while self._bytes > budget:
                _, old = self._files.popitem(last=False)
                self._bytes -= old.nbytes

    def clear(self) -> None:
        """Forget every file and the statistics."""
        with self._lock:
            self._files.clear()
            self._bytes = 0
            self.stats.clear()


#: This process's decoded HASH files (module docstring).
HASH_FILES = HashFileCache()


def hash_index_entries_by_partition(
    entries: Iterable[IndexManifestEntry],
) -> dict[bytes, dict[int, IndexManifestEntry]]:
    """Live HASH entries: partition -> bucket -> entry."""
    out: dict[bytes, dict[int, IndexManifestEntry]] = defaultdict(dict)
    for e in entries:
        if e.index_type == HASH_INDEX:
            out[e.partition][e.bucket] = e
    return dict(out)


# -- options ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DynamicBucketOptions:
    target_row_num: int
    max_buckets: int  # -1: unbounded
    num_assigners: int

    @staticmethod
    def of(options: CoreOptions) -> DynamicBucketOptions:
        """The options (validated by :meth:`CoreOptions.validate`)."""
        target = options.get_int("dynamic-bucket.target-row-num") or DEFAULT_TARGET_ROW_NUM
        max_buckets = options.get_int("dynamic-bucket.max-buckets")
        max_buckets = -1 if max_buckets is None else max_buckets
        # As Paimon's Spark writer: min(initial buckets, assigner parallelism), the parallelism
        # itself capped by max-buckets. One process plays every assigner.
        assigners = options.get_int("dynamic-bucket.initial-buckets") or 1
        if max_buckets != -1:
            assigners = min(assigners, max_buckets)
        return DynamicBucketOptions(max(target, 1), max_buckets, max(assigners, 1))


def compacts_every_commit(options: CoreOptions) -> bool:
    """Whether a writer compacts every bucket it writes at each commit (lookup or full-compaction
    changelog, deletion vectors, first-row; not with ``write-only``): such a bucket must have one
    writer per commit."""
    if options.get_bool("write-only"):
        return False  # no writer compacts; a compaction job does, over every writer's files
    return needs_lookup(options) or options.changelog_producer is ChangelogProducer.FULL_COMPACTION


def is_cross_partition(table: TableStore) -> bool:
    """Dynamic tables whose primary key lacks a partition column (Paimon's cross-partition upsert)."""
    schema = table.schema()
    return table.core_options.bucket == DYNAMIC_BUCKET and bool(
        set(schema.partition_keys) - set(schema.primary_keys)
    )


def check_writable(table: TableStore) -> None:
    """Refuse, before anything is written, the bucket mode stratalake cannot write (postpone)."""
    bucket = table.core_options.bucket
    if bucket == POSTPONE_BUCKET:
        raise UnsupportedError(
            f"table {table.identifier}: writing postpone-bucket tables ('bucket'='-2') is not "
            "supported; write with Paimon (its compaction assigns the real buckets), or recreate "
            "the table with a fixed number of buckets or 'bucket'='-1'"
        )


# -- assignment -------------------------------------------------------------------------------------
@dataclass
class _PartitionIndex:
    """The hash index of one partition as the writer sees it: the slices it loaded."""

    hashes: npt.NDArray[np.int32]  # sorted, unique (the loaded slices only)
    buckets: npt.NDArray[np.int32]  # bucket of each hash
    counts: dict[int, int]  # hashes per bucket (every bucket of the partition)
    entries: dict[int, IndexManifestEntry]  # the live HASH file of each bucket (replaced on commit)
    base_names: frozenset[str] | None  # HASH files when loaded (None: ignoring the existing index)
    start: int  # |partition hash % N|: slice id -> assigner offset
    slices: set[int] = field(default_factory=set)  # assigners whose keys are loaded
    added: dict[int, list[npt.NDArray[np.int32]]] = field(default_factory=dict)  # new hashes per bucket
    upper_bound_reached: set[int] = field(default_factory=set)  # assigners with no new bucket left


# In-memory only (never encoded): the partition's HASH files a new HASH entry's writer loaded, which
# writer wrote it, and the (number of assigners, assigners) whose keys that writer held.
BASE_KEY = "hash_index_base"
WRITER_KEY = "hash_index_writer"
SLICES_KEY = "hash_index_slices"


@dataclass(frozen=True)
class HashIndexChange:
    """A bucket's new HASH file, the one it replaces, and the partition's files it was based on."""

    added: IndexManifestEntry
    deleted: IndexManifestEntry | None
    base: tuple[str, ...] | None
    writer: str = ""
    slices: tuple[int, tuple[int, ...]] = (1, (0,))

    def entries_added(self) -> tuple[IndexManifestEntry, ...]:
        """The new entry, carrying base, writer and slices in its (never written) ``extra`` for
        the commit check."""
        extra: dict[str, object] = {**self.added.extra, WRITER_KEY: self.writer, SLICES_KEY: self.slices}
        if self.base is not None:
            extra[BASE_KEY] = self.base
        return (replace(self.added, extra=extra),)

    def entries_deleted(self) -> tuple[IndexManifestEntry, ...]:
        return () if self.deleted is None else (self.deleted,)


class BucketAssigner:
    """Assigns dynamic buckets to keys and maintains the hash index of the partitions it touched.

    ``assign(partition_bytes, key_hashes)`` returns the bucket of each key; :meth:`prepare_commit`
    writes the changed buckets' index files. With ``ignore_existing`` (an overwrite) the existing
    index is not loaded: the overwritten partitions start empty. ``num_assigners`` (a Spark write)
    fixes N; the caller routes every key of a slice to one writer (:meth:`owns` then tells which
    buckets this writer may compact).
    """

    def __init__(
        self,
        table: TableStore,
        ignore_existing: bool = False,
        num_assigners: int | None = None,
        allow_foreign: bool = False,
    ) -> None:
        self.table = table
        self.ignore_existing = ignore_existing
        self.options = DynamicBucketOptions.of(table.core_options)
        self.distributed = num_assigners is not None
        if num_assigners is not None:
            self.options = replace(self.options, num_assigners=max(int(num_assigners), 1))
        # Tables whose writers compact every bucket they write take no foreign bucket: Spark chose
        # N so that none exists (owner_consistent_assigners); one now means the index changed.
        # (allow_foreign: the planner compacts other slices' level-0 files after the commit.)
        self.owners_only = (
            self.distributed and compacts_every_commit(table.core_options) and not allow_foreign
        )
        self._snapshot: Snapshot | None = None
        self._loaded = False
        self._index_entries: dict[bytes, dict[int, IndexManifestEntry]] = {}
        self._partitions: dict[bytes, _PartitionIndex] = {}
        self._lock = threading.Lock()
        self._token = uuid.uuid4().hex

    # -- loading ---------------------------------------------------------------------------------
    def _load_snapshot(self) -> None:
        """The snapshot of the first assignment and its HASH entries (one index manifest, the
        full index state); data manifests are read per partition, when it is first written."""
        if self._loaded:
            return
        self._loaded = True
        if self.ignore_existing:
            return
        table = self.table
        snap = table.latest_snapshot()
        self._snapshot = snap
        if snap is None:
            return
        self._index_entries = hash_index_entries_by_partition(live_index_entries(table, snap))

    def _partition_state(self, partition: bytes) -> tuple[dict[int, IndexManifestEntry], set[int]]:
        """The partition's HASH entries and the buckets holding its live data files, of one
        snapshot: the loaded one, where only the manifests whose partition statistics admit the
        partition are opened. A writer meeting a partition after that snapshot expired reads the
        partition at the newest snapshot instead (the commit's index check compares against it)."""
        snap = self._snapshot
        if snap is None:
            return {}, set()
        where = self.table.manifest_filter(partitions={partition})
        try:
            data = self.table.live_entries(snap, where)
        except (OSError, CorruptFileError):
            newest = self.table.snapshot_manager.latest_snapshot(fresh=True)
            if newest is None or newest.id == snap.id:
                raise
            data = self.table.live_entries(newest, where)
            entries = hash_index_entries_by_partition(live_index_entries(self.table, newest))
            return entries.get(partition, {}), {e.bucket for e in data if e.bucket >= 0}
        return self._index_entries.get(partition, {}), {e.bucket for e in data if e.bucket >= 0}

    def _partition(self, partition: bytes) -> _PartitionIndex:
        """The partition's index with no slice loaded yet (bucket counts from the index entries)."""
        index = self._partitions.get(partition)
        if index is not None:
            return index
        self._load_snapshot()
        start = _assigner_start(partition, self.options.num_assigners)
        empty = np.empty(0, np.int32)
        if self.ignore_existing:
            index = _PartitionIndex(empty, empty, {}, {}, base_names=None, start=start)
            self._partitions[partition] = index
            return index
        entries, data_buckets = self._partition_state(partition)
        unindexed = sorted(data_buckets - set(entries))
        if unindexed:
            where = self._where(partition)
            raise CorruptFileError(
                f"table {self.table.identifier}: {where} has data files in bucket(s) {unindexed} but no "
                "HASH index for them, so the bucket of existing keys is unknown (the table was written "
                "by a writer that does not maintain dynamic-bucket indexes); nothing was written. "
                "Rewrite the partition (INSERT OVERWRITE) before writing to it incrementally"
            )
        counts = {bucket: int(e.row_count) for bucket, e in entries.items()}
        names = frozenset(e.file_name for e in entries.values())
        index = _PartitionIndex(empty, empty, counts, dict(entries), names, start=start)
        self._partitions[partition] = index
        return index

    def _assigners(self, index: _PartitionIndex, hashes: npt.NDArray[np.int32]) -> npt.NDArray[np.int64]:
        return _assigner_ids(index.start, hashes, self.options.num_assigners)

    def _load_slices(self, index: _PartitionIndex, slices: set[int]) -> None:
        """Add the keys of ``slices`` to the loaded index, one HASH file at a time (memory: the
        loaded slices plus one file)."""
        index.slices |= slices
        if index.base_names is None or not index.entries:
            return
        wanted = np.array(sorted(slices), dtype=np.int64)
        hashes: list[npt.NDArray[np.int32]] = [index.hashes]
        buckets: list[npt.NDArray[np.int32]] = [index.buckets]
        for bucket, e in sorted(index.entries.items()):
            h = HASH_FILES.read(self.table, e)
            if len(slices) < self.options.num_assigners:
                h = h[np.isin(self._assigners(index, h), wanted)]
            hashes.append(h)
            buckets.append(np.full(len(h), bucket, dtype=np.int32))
        all_h, all_b = np.concatenate(hashes), np.concatenate(buckets)
        order = np.argsort(all_h, kind="stable")
        all_h, all_b = all_h[order], all_b[order]
        if len(all_h) > 1:
            # A hash in two buckets (a collision of two keys written by different assigners, or an
            # index written by someone else): Paimon's loader keeps the last file read; so do we.
            last = np.append(all_h[1:] != all_h[:-1], True)
            all_h, all_b = all_h[last], all_b[last]
        index.hashes, index.buckets = all_h, all_b

    def owns(self, partition: bytes, bucket: int) -> bool:
        """Whether this writer is the one that may add keys to, rewrite the index of and compact
        ``bucket``: always in one process; in a Spark write, the writer holding the bucket's
        assigner slice (others only add level-0 files updating keys the bucket already holds)."""
        if not self.distributed:
            return True
        with self._lock:
            index = self._partitions.get(partition)
            return index is not None and bucket % self.options.num_assigners in index.slices

    def _where(self, partition: bytes) -> str:
        codec = self.table.partition_codec
        return f"partition {codec.to_dict(partition)}" if codec.is_partitioned else "the table"

    # -- assignment ------------------------------------------------------------------------------
    def assign_rows(self, rows: pa.Table) -> npt.NDArray[np.int64]:
        """The bucket of every row of ``rows`` (table columns), by partition and trimmed key."""
        table = self.table
        schema = table.schema()
        codec = table.partition_codec
        keys = list(schema.trimmed_primary_keys)
        types = [schema.field(k).type for k in keys]
        out = np.empty(rows.num_rows, dtype=np.int64)
        for indices, _ in group_rows(rows, list(codec.keys)):
            part = rows.take(pa.array(indices)) if len(indices) != rows.num_rows else rows
            values = tuple(part.column(k)[0].as_py() for k in codec.keys)
            hashes = hash_rows([part.column(k) for k in keys], types)
            out[indices] = self.assign(codec.to_bytes(values), hashes)
        return out

    def assign(self, partition: bytes, key_hashes: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
        """Buckets of ``key_hashes`` (int32 BinaryRow hashes of trimmed keys) in ``partition``."""
        h = np.asarray(key_hashes, dtype=np.int32)
        with self._lock:
            index = self._partition(partition)
            if not len(h):
                return np.empty(0, dtype=np.int32)
            # One sort of the batch: sorted distinct hashes look up fast in the sorted index.
            uniq, first, inverse = np.unique(h, return_index=True, return_inverse=True)
            missing = set(np.unique(self._assigners(index, uniq)).tolist()) - index.slices
            if missing:
                self._load_slices(index, missing)
            buckets = np.empty(len(uniq), dtype=np.int32)
            found = np.zeros(len(uniq), dtype=bool)
            if len(index.hashes):
                pos = np.minimum(np.searchsorted(index.hashes, uniq), len(index.hashes) - 1)
                found = index.hashes[pos] == uniq
                buckets[found] = index.buckets[pos[found]]
                if self.owners_only:
                    self._check_owned(index, partition, uniq[found], buckets[found])
            if not found.all():
                new_at = np.flatnonzero(~found)
                stream = new_at[np.argsort(first[new_at])]  # first-appearance order, as Paimon's stream
                buckets[stream] = self._place(index, partition, uniq[stream])
                new_hashes, new_buckets = uniq[new_at], buckets[new_at]  # still sorted
                index.hashes, index.buckets = _merge_sorted(
                    index.hashes, index.buckets, new_hashes, new_buckets
                )
                for b in np.unique(new_buckets).tolist():
                    index.added.setdefault(int(b), []).append(new_hashes[new_buckets == b])
            return buckets[inverse.reshape(-1)]

    def _check_owned(
        self,
        index: _PartitionIndex,
        partition: bytes,
        hashes: npt.NDArray[np.int32],
        buckets: npt.NDArray[np.int32],
    ) -> None:
        n = self.options.num_assigners
        foreign = buckets % n != self._assigners(index, hashes)
        if foreign.any():
            bucket = int(buckets[np.flatnonzero(foreign)[0]])
            raise CommitConflictError(
                f"table {self.table.identifier}: bucket {bucket} of {self._where(partition)} holds keys "
                f"of another of the write's {n} assigner slices; the dynamic-bucket index changed after "
                "the write was planned (Paimon allows one writer at a time on a dynamic-bucket table). "
                "Nothing was committed and the table is unchanged; retry the write"
            )

    def _place(
        self, index: _PartitionIndex, partition: bytes, new: npt.NDArray[np.int32]
    ) -> npt.NDArray[np.int32]:
        """Buckets for hashes not in the index yet, in stream order (Paimon's PartitionIndex)."""
        out = np.empty(len(new), dtype=np.int32)
        assigners = self._assigners(index, new)
        for a in np.unique(assigners).tolist():
            rows = np.flatnonzero(assigners == a)
            out[rows] = self._place_for(index, partition, int(a), new[rows])
        return out

    def _place_for(
        self, index: _PartitionIndex, partition: bytes, assigner: int, new: npt.NDArray[np.int32]
    ) -> npt.NDArray[np.int32]:
        opts = self.options
        n, target = opts.num_assigners, opts.target_row_num
        m = len(new)
        mine = sorted(b for b in index.counts if b % n == assigner)
        # 1. the non-full buckets, lowest id first (Paimon iterates its bucket map in that order).
        fill_ids = [b for b in mine if index.counts[b] < target]
        fill_caps = [target - index.counts[b] for b in fill_ids]
        have = sum(fill_caps)
        # 2. new buckets: the lowest free ids this assigner owns, up to the bucket limit.
        if have < m and assigner not in index.upper_bound_reached:
            need = -(-(m - have) // target)
            top = _UNBOUNDED_MAX_BUCKET_ID if opts.max_buckets == -1 else opts.max_buckets - 1
            candidates = np.arange(assigner, top + 1, n, dtype=np.int64)
            candidates = candidates[~np.isin(candidates, np.array(mine, dtype=np.int64))][:need]
            if len(candidates) < need:
                if opts.max_buckets == -1:
                    raise UnsupportedError(
                        f"table {self.table.identifier}: {self._where(partition)} "
                        f"needs more than {top + 1} dynamic buckets; raise 'dynamic-bucket.target-row-num' "
                        f"(now {target})"
                    )
                index.upper_bound_reached.add(assigner)
            fill_ids += candidates.tolist()
            fill_caps += [target] * len(candidates)
            have += target * len(candidates)
        taken = min(have, m)
        out = np.empty(m, dtype=np.int32)
        if fill_ids:
            out[:taken] = np.repeat(np.array(fill_ids, dtype=np.int32), fill_caps)[:taken]
        if taken < m:
            # 3. every bucket full and no new one allowed: Paimon picks an existing bucket at
            # random; a hash-based pick is as valid (the index records it) and reproducible.
            pool = np.array(sorted(set(mine) | set(fill_ids)), dtype=np.int64)
            if not len(pool):
                raise UnsupportedError(
                    f"table {self.table.identifier}: no dynamic bucket is available to assigner "
                    f"{assigner}; raise 'dynamic-bucket.max-buckets'"
                )
            rest = new[taken:].astype(np.int64)
            out[taken:] = pool[np.abs(np.fmod(rest, len(pool)))]
        for b, c in zip(*np.unique(out, return_counts=True), strict=True):
            index.counts[int(b)] = index.counts.get(int(b), 0) + int(c)
        return out

    # -- commit ------------------------------------------------------------------------------------
    def prepare_commit(self) -> dict[tuple[bytes, int], HashIndexChange]:
        """Write a new index file for every bucket that got new keys since the last call: the
        bucket's current file (every slice's keys) plus the new hashes, one bucket at a time."""
        table = self.table
        n = self.options.num_assigners
        changes: dict[tuple[bytes, int], HashIndexChange] = {}
        with self._lock:
            for partition, index in self._partitions.items():
                if not index.added:
                    continue
                base = tuple(sorted(index.base_names)) if index.base_names is not None else None
                slices = (n, tuple(sorted(index.slices)))
                mine: dict[int, HashIndexChange] = {}
                for bucket in sorted(index.added):
                    parts = index.added[bucket]
                    old = index.entries.get(bucket)
                    if old is not None:
                        parts = [HASH_FILES.read(table, old), *parts]
                    hashes = np.unique(np.concatenate(parts))
                    data = encode_hash_index(hashes)
                    name = index_file_name()
                    table.file_io.write_bytes(f"{index_dir(table)}/{name}", data)
                    HASH_FILES.wrote(table, name, hashes)
                    entry = IndexManifestEntry(
                        FileKind.ADD, partition, bucket, HASH_INDEX, name, len(data), len(hashes)
                    )
                    mine[bucket] = HashIndexChange(entry, old, base, self._token, slices)
                    changes[(partition, bucket)] = mine[bucket]
                # Once committed, the new files are this writer's base for its next commit.
                for bucket, change in mine.items():
                    index.entries[bucket] = change.added
                if index.base_names is not None:
                    gone = {c.deleted.file_name for c in mine.values() if c.deleted}
                    index.base_names = (index.base_names - gone) | {c.added.file_name for c in mine.values()}
                index.added.clear()
        return changes


def _assigner_start(partition: bytes, num_assigners: int) -> int:
    """BucketAssigner.computeAssigner's offset of a partition, ``|partition hash % N|`` (0 for an
    unpartitioned table)."""
    if len(partition) <= 4:
        return 0
    return abs(int(np.fmod(np.int64(hash_bytes(partition[4:])), num_assigners)))


def _assigner_ids(start: int, hashes: npt.NDArray[np.int32], num_assigners: int) -> npt.NDArray[np.int64]:
    if num_assigners == 1:
        return np.zeros(len(hashes), dtype=np.int64)
    return (start + np.abs(np.fmod(np.asarray(hashes).astype(np.int64), num_assigners))) % num_assigners


def owner_consistent_assigners(table: TableStore, requested: int) -> int:
    """The largest N <= ``requested`` such that every key in the table's hash index lies in a
    bucket its own assigner slice owns (``assigner(partition, hash, N) == bucket % N``), so a
    Spark write with N slices has exactly one writer per bucket (1 if no such N > 1 exists).

    The condition ``(|partition hash| % N + |key hash| % N) % N == bucket % N`` says N divides
    ``|partition hash| + |key hash| - bucket``; the valid N are the divisors of the gcd of that
    over every indexed key. Writers that must compact every bucket they write (lookup, deletion
    vectors, first-row, full-compaction changelog) use it: a second writer of a bucket would add
    level-0 files its owner's compaction does not see. A table written with N slices keeps that
    property, and so does every divisor of N. One index file in memory at a time.
    """
    requested = max(int(requested), 1)
    snap = table.latest_snapshot()
    if requested == 1 or snap is None:
        return requested
    g = 0
    for partition, by_bucket in hash_index_entries_by_partition(live_index_entries(table, snap)).items():
        offset = abs(int(hash_bytes(partition[4:]))) if len(partition) > 4 else 0
        for e in by_bucket.values():
            g = int(np.gcd(g, _file_gcd(table, e, offset)))
            if g == 1:
                return 1
    return largest_divisor(g, requested)


# Index files are immutable (a new key set is a new file), so the gcd of one is computed once per
# process: the driver's bridge worker then reads only the HASH files written since its last write
# planning, not every one of the table (entries: a path and an int; cleared when it grows large).
_FILE_GCDS: dict[tuple[str, int, int], int] = {}
_FILE_GCDS_LIMIT = 200_000


def _file_gcd(table: TableStore, entry: IndexManifestEntry, offset: int) -> int:
    """gcd of ``|key hash| + offset - bucket`` over one HASH file (0 for an empty one)."""
    path = index_file_path(table, entry)
    key = (path, offset, entry.bucket)
    cached = _FILE_GCDS.get(key)
    if cached is not None:
        return cached
    hashes = np.abs(decode_hash_index(table.file_io.read_bytes(path), path).astype(np.int64))
    g = int(np.gcd.reduce(hashes + (offset - entry.bucket))) if len(hashes) else 0
    if len(_FILE_GCDS) >= _FILE_GCDS_LIMIT:
        _FILE_GCDS.clear()
    _FILE_GCDS[key] = g
    return g


def largest_divisor(g: int, requested: int) -> int:
    """The largest N <= ``requested`` dividing ``g`` (``requested`` when ``g`` is 0: no key yet,
    or every difference 0, and any N divides 0)."""
    if g == 0:
        return requested
    return next(n for n in range(requested, 0, -1) if g % n == 0)


def assigner_ids(
    partition: bytes, key_hashes: npt.NDArray[np.int32], num_assigners: int
) -> npt.NDArray[np.int64]:
    """Paimon's assigner of each key hash of ``partition`` with N assigners (and as many channels):
    ``(|partition hash % N| + |key hash % N|) % N``; it owns the buckets ``b % N`` equal to it."""
    return _assigner_ids(_assigner_start(partition, num_assigners), key_hashes, num_assigners)


def _merge_sorted(
    hashes: npt.NDArray[np.int32],
    buckets: npt.NDArray[np.int32],
    new_hashes: npt.NDArray[np.int32],
    new_buckets: npt.NDArray[np.int32],
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """Insert sorted ``new_hashes`` (none present) into sorted ``hashes`` in linear time."""
    if not len(hashes):
        return new_hashes.copy(), new_buckets.copy()
    slots = np.searchsorted(hashes, new_hashes) + np.arange(len(new_hashes))
    old = np.ones(len(hashes) + len(new_hashes), dtype=bool)
    old[slots] = False
    out_h = np.empty(len(old), dtype=np.int32)
    out_b = np.empty(len(old), dtype=np.int32)
    out_h[slots], out_b[slots] = new_hashes, new_buckets
    out_h[old], out_b[old] = hashes, buckets
    return out_h, out_b


# -- commit-side helpers ------------------------------------------------------------------------------
def split_index_entries(
    added: Sequence[IndexManifestEntry], deleted: Sequence[IndexManifestEntry]
) -> tuple[
    list[IndexManifestEntry], list[IndexManifestEntry], list[IndexManifestEntry], list[IndexManifestEntry]
]:
    """(HASH added, HASH deleted, other added, other deleted): HASH changes commit with the data
    they index; deletion vectors with the compaction that changed them."""
    return (
        [e for e in added if e.index_type == HASH_INDEX],
        [e for e in deleted if e.index_type == HASH_INDEX],
        [e for e in added if e.index_type != HASH_INDEX],
        [e for e in deleted if e.index_type != HASH_INDEX],
    )


def check_hash_index_conflicts(
    table: TableStore,
    index_added: Sequence[IndexManifestEntry],
    index_live: Sequence[IndexManifestEntry] | None,
) -> None:
    """Refuse a commit whose new HASH entries could hold one key in two buckets: two writers that
    assigned new keys of the same assigner slice of a partition (or with different numbers of
    assigners), two new index files for one bucket, or a partition's index changed by another
    commit since a writer loaded it."""
    codec = table.partition_codec

    def where(partition: bytes) -> str:
        return f"partition {codec.to_dict(partition)}" if codec.is_partitioned else "the table"

    writers: dict[bytes, dict[object, object]] = defaultdict(dict)
    buckets: set[tuple[bytes, int]] = set()
    twice: tuple[bytes, int] | None = None
    for e in index_added:
        if e.index_type != HASH_INDEX:
            continue
        writers[e.partition][e.extra.get(WRITER_KEY)] = e.extra.get(SLICES_KEY)
        if (e.partition, e.bucket) in buckets:
            twice = (e.partition, e.bucket)
        buckets.add((e.partition, e.bucket))
    for partition, by_writer in writers.items():
        if len(by_writer) < 2:
            continue
        claims = [s for s in by_writer.values() if isinstance(s, tuple)]
        seen: set[int] = set()
        disjoint = len(claims) == len(by_writer) and len({c[0] for c in claims}) == 1
        for _, held in claims if disjoint else ():
            if seen & set(held):
                disjoint = False
            seen |= set(held)
        if not disjoint:
            raise CommitConflictError(
                f"table {table.identifier}: {len(by_writer)} writers assigned dynamic buckets to new keys "
                f"of the same key-hash slice of {where(partition)} in one commit; each could have put "
                "the same key into a different bucket. Route each partition's slice of the key hashes "
                "to one writer (Paimon shuffles by partition and key hash); this commit was abandoned "
                "and the table is unchanged"
            )
    if twice is not None:
        raise CommitConflictError(
            f"table {table.identifier}: two writers of this commit rewrote the dynamic-bucket index "
            f"of bucket {twice[1]} of {where(twice[0])}; each could have put a key into another "
            "bucket. Route each assigner slice to one writer; this commit was abandoned and the "
            "table is unchanged"
        )
    current: dict[bytes, set[str]] = defaultdict(set)
    for e in index_live or ():
        if e.index_type == HASH_INDEX:
            current[e.partition].add(e.file_name)
    for e in index_added:
        base = e.extra.get(BASE_KEY) if e.index_type == HASH_INDEX else None
        if isinstance(base, tuple) and current.get(e.partition, set()) != {str(n) for n in base}:
            raise CommitConflictError(
                f"table {table.identifier}: another writer changed the dynamic-bucket index of "
                f"{where(e.partition)} while this write assigned buckets to new keys (Paimon allows one "
                "writer at a time on a dynamic-bucket table); this commit was abandoned and the table "
                "is unchanged. Retry the write"
            )


def drop_hash_index(
    entries: Iterable[IndexManifestEntry] | None, dropped: Callable[[bytes], bool]
) -> list[IndexManifestEntry]:
    """HASH entries of the partitions an overwrite replaces: their keys are gone."""
    return [e for e in entries or () if e.index_type == HASH_INDEX and dropped(e.partition)]
