"""Cross-partition upsert: dynamic-bucket tables whose primary key lacks a partition column.

A key may then live in any partition, so a writer must know where each existing key is. As
Paimon's ``GlobalIndexAssigner`` does (Paimon's "Dynamic Bucket" spec page, cross-partition upsert
mode), the writer bootstraps a key -> (partition, bucket) index from the table's live rows (no
HASH index files are involved in this mode) and routes each input row:

* a key seen in the row's own partition goes to its bucket;
* a key stored in another partition: with ``deduplicate`` the old row is retracted there (a -D
  in its old partition and bucket, the values of the new row) and the new row goes to the new
  partition as a new key; ``partial-update`` and ``aggregation`` keep the key where it is (the row
  is rewritten into the old partition, old bucket); ``first-row`` ignores the new row;
* a new key goes to the lowest bucket of its partition holding fewer than
  ``dynamic-bucket.target-row-num`` keys, else to the lowest free bucket id (Paimon's
  ``crosspartition.BucketAssigner``; counts are live keys, a retracted key frees its place).

Rows are processed as one stream per key, vectorized: rows sorted by (key, arrival), a new
*segment* wherever a key's partition changes; only per-partition bucket filling loops, over
partitions and buckets, never rows. As in Paimon, one writing job at a time: the index is
bootstrapped once per writer (at one snapshot), and a commit is refused when another job added
rows after that snapshot (``commit/conflicts.check_key_index_base``): it may have placed a key this
writer places again elsewhere.

As Paimon's Flink job keeps its bootstrapped index for the job's life, a process keeps the index
its writers bootstrapped (``key_index_cache.py``): the next writer of the table takes it and
advances it to the latest snapshot by reading only the data files APPEND snapshots added since
(:meth:`CrossPartitionAssigner._advance`), or bootstraps afresh where that would not be exact. The
advanced index is the table's at that snapshot, so the commit's check above stays as it was.

Distributed assignment (a Spark write, ``num_assigners`` = N): Spark routes every row to a task by
its key's *slice* ``|key hash % N|`` alone (no partition columns), so a task holds every row of
its keys whatever their partition, as Paimon's ``GlobalIndexAssigner`` tasks do. A writer then
keeps in its index only the keys of the slices it met (it streams the table's live keys, batch by
batch, and drops other slices' keys; once more for slices first met in a later batch), while its
bucket counts cover every live key of the scan. A new key goes only to a bucket its slice owns,
``bucket % N == slice`` (Paimon's ``isAssignBucket``), so no two tasks fill one bucket; an existing
key (or a moved key's retraction) goes to the bucket holding it, which another slice may own: then
this writer only adds level-0 files there (:meth:`owns`, the rule of ``dynamic_bucket.py``). Each
commit message carries the writer's claim (writer, N, slices) for the commit's check
(``commit/conflicts.check_assigner_slices``).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.bucket.dynamic import DEFAULT_TARGET_ROW_NUM, compacts_every_commit, largest_divisor
from stratalake.bucket.key_index_cache import (
    CACHE,
    MAX_MEMORY_OPTION,
    KeyIndexCache,
    KeyIndexState,
    SortedKeyIndex,
    fixed_keys,
)
from stratalake.exceptions import CommitConflictError, SnapshotNotFoundError
from stratalake.lsm.data_file import read_kv_file
from stratalake.merge import SEQUENCE_NUMBER, VALUE_KIND
from stratalake.options import MergeEngine
from stratalake.read import new_branch_scan, new_read
from stratalake.spec.binary_row import encode_arrow_rows
from stratalake.spec.bucket import hash_rows
from stratalake.spec.manifest import FileKind, ManifestEntry
from stratalake.spec.snapshot import CommitKind
from stratalake.store.partition import group_rows
from stratalake.store.references import ReferenceCollector

if TYPE_CHECKING:
    from collections.abc import Hashable

    from stratalake.spec.snapshot import Snapshot
    from stratalake.store.table_store import TableStore

_DELETE = 3  # _VALUE_KIND of -D
# Index bytes per key with a one-column 8-byte key (16-byte BinaryRow, its hash, partition, bucket):
# whether a table's keys fit the cache's budget, estimated from its record count.
_BYTES_PER_KEY = 32


def key_fingerprints(table: TableStore, rows: pa.Table) -> pa.Array:
    """The trimmed primary key of each row as its BinaryRow bytes (one comparable binary value)."""
    schema = table.schema()
    keys = list(schema.trimmed_primary_keys)
    n = rows.num_rows
    parts: list[pa.Array] = []
    positions: list[npt.NDArray[np.int64]] = []
    for group in encode_arrow_rows([rows.column(k) for k in keys], [schema.field(k).type for k in keys]):
        words = np.ascontiguousarray(group.words, dtype="<u4")
        width = words.shape[1] * 4
        fixed = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(width), len(words), [None, pa.py_buffer(words.tobytes())]
        )
        parts.append(fixed.cast(pa.binary()))
        positions.append(np.asarray(group.rows, dtype=np.int64).reshape(-1))
    if not parts:
        return pa.array([b""] * n, pa.binary())
    flat = pa.concat_arrays(parts)
    where = np.empty(n, dtype=np.int64)
    where[np.concatenate(positions)] = np.arange(n, dtype=np.int64)
    return flat.take(pa.array(where))


def key_slices(table: TableStore, rows: pa.Table, num_assigners: int) -> npt.NDArray[np.int64]:
    """The assigner slice of each row's key, ``|trimmed key hash % N|``: the shim's
    ``stratalake_bucket(N, mask, trimmed key)`` that Spark clusters a cross-partition write by."""
    if num_assigners == 1:
        return np.zeros(rows.num_rows, dtype=np.int64)
    schema = table.schema()
    keys = list(schema.trimmed_primary_keys)
    hashes = hash_rows([rows.column(k) for k in keys], [schema.field(k).type for k in keys])
    return np.abs(np.fmod(hashes.astype(np.int64), num_assigners))


def owner_consistent_slices(table: TableStore, requested: int) -> int:
    """The largest N <= ``requested`` under which every live key lies in a bucket its slice owns
    (``|key hash| % N == bucket % N``, i.e. N divides ``|key hash| - bucket``): the divisors of
    one gcd over the table's live keys, streamed batch by batch (the key columns only). 1 if no
    N > 1 holds. See ``dynamic_bucket.owner_consistent_assigners`` for why."""
    requested = max(int(requested), 1)
    snap = table.latest_snapshot()
    if requested == 1 or snap is None:
        return requested
    schema = table.schema()
    keys = list(schema.trimmed_primary_keys)
    types = [schema.field(k).type for k in keys]
    read = new_read(table, columns=keys)
    g = 0
    for split in new_branch_scan(table, snapshot_id=snap.id).plan():
        for batch in read.read_split(split):
            if batch.num_rows == 0:
                continue
            hashes = np.abs(hash_rows([batch.column(k) for k in keys], types).astype(np.int64))
            g = int(np.gcd.reduce(np.append(hashes - split.bucket, g)))
            if g == 1:
                return 1
    return largest_divisor(g, requested)


class CrossPartitionAssigner:
    """Routes rows of a cross-partition-upsert table (see the module docstring).

    ``num_assigners`` (a Spark write): N; the caller routes every key of a slice to this writer,
    which then holds only the keys of the slices it meets."""

    def __init__(
        self,
        table: TableStore,
        ignore_existing: bool = False,
        num_assigners: int | None = None,
        allow_foreign: bool = False,
        cache: KeyIndexCache | None = CACHE,
    ) -> None:
        self.table = table
        self.ignore_existing = ignore_existing
        self.distributed = num_assigners is not None
        self.num_assigners = 1 if num_assigners is None else max(int(num_assigners), 1)
        opts = table.core_options
        # As dynamic_bucket.BucketAssigner.owners_only: Spark chose N so that no key lies in a
        # bucket of another slice; one found now means the table changed after planning.
        self.owners_only = self.distributed and compacts_every_commit(opts) and not allow_foreign
        self.target = max(opts.get_int("dynamic-bucket.target-row-num") or DEFAULT_TARGET_ROW_NUM, 1)
        self.engine = opts.merge_engine
        self._parts: list[bytes] = []
        self._part_ids: dict[bytes, int] = {}
        self._counts: dict[int, dict[int, int]] = defaultdict(dict)  # part id -> bucket -> live keys
        self._index = SortedKeyIndex.empty()  # key -> (partition id, bucket)
        self._slices: set[int] = set()  # slices this writer met (claimed, :meth:`owns`)
        self._held: set[int] = set()  # slices whose keys are in the index (a cached index may hold more)
        self._scanned = False  # the index's snapshot chosen (at the first bootstrap)
        self._counted = False  # the bucket counts hold (a scan counted them, or a cached index)
        self._routed = False  # rows routed: the index now holds this writer's uncommitted rows
        self._snapshot_id: int | None = None  # every bootstrap scan reads this snapshot
        self._snapshot_delta: str | None = None  # its delta manifest list (names it in the cache)
        self.token = uuid.uuid4().hex  # this writer, in its commit messages' claims
        # The per-process cache of bootstrapped indexes (key_index_cache.py); not for tables whose
        # batch reads skip level 0 (deletion vectors without merge-on-read, first-row): their
        # bootstrap leaves out the level-0 files that advancing the index would read.
        self._cache = cache
        self._cache_budget = opts.get_int(MAX_MEMORY_OPTION) or 0
        if opts.deletion_vectors_enabled:
            skips_level0 = not opts.get_bool("deletion-vectors.merge-on-read")
        else:
            skips_level0 = self.engine is MergeEngine.FIRST_ROW
        if cache is None or self._cache_budget <= 0 or skips_level0 or ignore_existing:
            self._cache = None
        # A retraction ends a key's life only for deduplicate (without ignore-delete or a
        # sequence field that could order it before the stored row): elsewhere an advance that
        # meets one bootstraps afresh.
        self._retractions_exact = (
            self.engine is MergeEngine.DEDUPLICATE
            and not opts.get_bool("ignore-delete")
            and not opts.get("sequence.field")
        )

    # -- the key index ------------------------------------------------------------------------------
    def _part_id(self, partition: bytes) -> int:
        pid = self._part_ids.get(partition)
        if pid is None:
            pid = self._part_ids[partition] = len(self._parts)
            self._parts.append(partition)
        return pid

    def _cache_key(self) -> Hashable:
        schema = self.table.schema()
        fields = [
            (k, str(schema.field(k).type)) for k in (*schema.trimmed_primary_keys, *schema.partition_keys)
        ]
        return (
            self.table.location,
            self.table.current_branch,
            tuple(fields),
            len(schema.trimmed_primary_keys),
            self.num_assigners,
        )

    def _bootstrap(self, slices: set[int]) -> None:
        """Make the index hold the live keys of ``slices``: at the first call, from the cached index
        of this table advanced to the latest snapshot where it can be, then by one streaming scan
        of the table's keys (one batch in memory at a time besides the index) for the slices still
        missing, which also counts every live key per (partition, bucket) unless the counts hold."""
        missing = slices - self._slices
        if not missing:
            return
        self._slices |= missing
        if self.ignore_existing:
            self._scanned = True
            return
        if not self._scanned:
            self._scanned = True
            snap = self.table.latest_snapshot()
            if snap is None:
                self._counted = True  # an empty table: nothing to read
                self._held = set(range(self.num_assigners))
                return
            self._snapshot_id, self._snapshot_delta = snap.id, snap.delta_manifest_list
            self._from_cache(snap)
            if not self._held and self._cache is not None:
                # A cached index holds every slice's keys: then its bucket counts follow every
                # key, exactly. A table whose keys would not fit the budget is left uncached.
                rows = snap.total_record_count
                if rows is not None and rows * _BYTES_PER_KEY <= self._cache_budget:
                    slices = set(range(self.num_assigners))
                else:
                    self._cache = None
        need = slices - self._held
        if not need:
            return
        self._scan(need)
        if self._cache is not None and not self._routed and len(self._held) == self.num_assigners:
            self._cache.put(self._cache_key(), self._state(), self._cache_budget)

    def _state(self) -> KeyIndexState:
        assert self._snapshot_id is not None
        return KeyIndexState(
            self._snapshot_id,
            self._snapshot_delta,
            self._parts,
            {p: c for p, c in self._counts.items() if c},
            self._index,
            frozenset(self._held),
        )

    def _from_cache(self, snap: Snapshot) -> None:
        """Take the cached index of this table, advanced to ``snap``, if there is one that can be."""
        if self._cache is None:
            return
        state = self._cache.get(self._cache_key())
        if state is None:
            return
        if len(state.slices) != self.num_assigners:
            self._cache.note("fallback:slices")
            return
        assert not self._parts, "the cached index's partition ids replace the writer's"
        self._parts = state.parts
        self._part_ids = {p: i for i, p in enumerate(self._parts)}
        self._counts = defaultdict(dict, state.counts)
        self._index = state.index
        self._held = set(state.slices)
        reason = self._advance(state, snap)
        if reason is not None:
            self._cache.note(f"fallback:{reason}")
            self._parts, self._part_ids = [], {}
            self._counts = defaultdict(dict)
            self._index = SortedKeyIndex.empty()
            self._held = set()
            return
        self._cache.note("hit")
        self._counted = True
        if state.snapshot_id != snap.id:
            self._cache.put(self._cache_key(), self._state(), self._cache_budget)

    def _advance(self, state: KeyIndexState, snap: Snapshot) -> str | None:
        """Bring the index loaded from ``state`` to ``snap`` by reading only the data files the
        APPEND snapshots in between added (their keys, sequence numbers and value kinds); COMPACT
        and ANALYZE snapshots keep every key where it is. None when done, else why it cannot be
        done exactly (then the caller bootstraps afresh): a snapshot in between is gone or was
        replaced (expiration, rollback), an OVERWRITE (partition drops, truncate, row-level
        deletes), a retraction whose effect depends on the merge engine, or a key found live in
        two places."""
        table = self.table
        sm = table.snapshot_manager
        if snap.id < state.snapshot_id:
            return "rollback"
        try:
            if sm.snapshot(state.snapshot_id).delta_manifest_list != state.delta_manifest_list:
                return "rollback"
            entries: list[tuple[int, ManifestEntry]] = []
            for sid in range(state.snapshot_id + 1, snap.id + 1):
                between = sm.snapshot(sid)
                if between.commit_kind is CommitKind.OVERWRITE:
                    return "overwrite"
                if between.commit_kind is not CommitKind.APPEND:
                    continue
                mio = table.manifest_io
                for meta in mio.read_list(between.delta_manifest_list):
                    for e in mio.read_entries(meta.file_name):
                        if e.kind is not FileKind.ADD:
                            return "overwrite"
                        if e.bucket >= 0:  # postpone-bucket files are invisible to reads
                            entries.append((sid, e))
        except SnapshotNotFoundError:
            return "expired"
        if not entries:
            return None
        schema = table.schema()
        key_names = list(schema.trimmed_primary_keys)
        refs = ReferenceCollector(table)
        fps: list[pa.Array] = []
        cols: dict[str, list[npt.NDArray[np.int64]]] = {
            k: [] for k in ("pid", "bucket", "sid", "seq", "kind")
        }
        for sid, e in entries:
            kv = read_kv_file(
                table.file_io,
                next(refs.entry_paths(e)),
                table.file_schema(e.file.schema_id),
                schema,
                columns=key_names,
                expected_rows=e.file.row_count,
            )
            self._cache.note("advanced_files")  # type: ignore[union-attr]
            n = kv.num_rows
            if n == 0:
                continue
            fps.append(key_fingerprints(table, kv))
            cols["pid"].append(np.full(n, self._part_id(e.partition), dtype=np.int64))
            cols["bucket"].append(np.full(n, e.bucket, dtype=np.int64))
            cols["sid"].append(np.full(n, sid, dtype=np.int64))
            cols["seq"].append(kv.column(SEQUENCE_NUMBER).to_numpy().astype(np.int64))
            cols["kind"].append(kv.column(VALUE_KIND).to_numpy().astype(np.int64))
        if not fps:
            return None
        fp = pa.concat_arrays(fps)
        pid, bucket, sid_, seq, kind = (
            np.concatenate(cols[k]) for k in ("pid", "bucket", "sid", "seq", "kind")
        )
        key_id = pc.dictionary_encode(fp).indices.to_numpy(zero_copy_only=False).astype(np.int64)
        # A key's state in one bucket is its newest record there (sequence numbers order a
        # bucket's records; the snapshots in between order them too).
        order = np.lexsort((seq, sid_, key_id, bucket, pid))
        p_s, b_s, k_s = pid[order], bucket[order], key_id[order]
        last = np.ones(len(order), dtype=bool)
        last[:-1] = (p_s[1:] != p_s[:-1]) | (b_s[1:] != b_s[:-1]) | (k_s[1:] != k_s[:-1])
        rows = order[last]
        g_pid, g_bucket, g_key = pid[rows], bucket[rows], key_id[rows]
        g_add = ~np.isin(kind[rows], (1, 3))  # -U and -D retract
        if not g_add.all() and not self._retractions_exact:
            return "retraction"
        # The state holds every slice's keys (see _bootstrap), so each key's place is known.
        g_fp = fp.take(pa.array(rows))
        prev_part, prev_bucket = self._lookup(g_fp)
        touched = (prev_part == g_pid) & (prev_bucket == g_bucket)  # live there before the delta
        change = g_add.astype(np.int64) - touched.astype(np.int64)
        moved = change != 0
        pairs = np.stack([g_pid[moved], g_bucket[moved]], axis=1)
        if len(pairs):
            uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
            sums = np.bincount(inverse.reshape(-1), weights=change[moved], minlength=len(uniq)).astype(
                np.int64
            )
            for (p, b), d in zip(uniq.tolist(), sums.tolist(), strict=True):
                counts = self._counts[int(p)]
                left = counts.get(int(b), 0) + int(d)
                if left < 0:
                    return "count"
                if left:
                    counts[int(b)] = left
                else:
                    counts.pop(int(b), None)  # as a scan, which sees no live key there
        # Each key's place after the delta: the bucket where its newest record adds it, else where
        # it was unless the delta retracted it there.
        _, kid = np.unique(g_key, return_inverse=True)
        kid = kid.reshape(-1)
        nk = int(kid.max()) + 1
        adds = np.bincount(kid, weights=g_add, minlength=nk)
        hit = np.bincount(kid, weights=touched, minlength=nk) > 0
        was = np.zeros(nk, dtype=bool)
        was[kid] = prev_part >= 0
        kept = was & ~hit
        if ((adds + kept) > 1).any():
            return "ambiguous"
        add_rows = np.flatnonzero(g_add)
        first_row = np.unique(kid, return_index=True)[1]  # a row of each key
        keep_rows = first_row[np.flatnonzero(kept)]
        g_keys = fixed_keys(g_fp)
        self._index = self._index.without(g_keys).put(
            np.concatenate([g_keys[add_rows], g_keys[keep_rows]]),
            np.concatenate([g_pid[add_rows], prev_part[keep_rows]]),
            np.concatenate([g_bucket[add_rows], prev_bucket[keep_rows]]),
        )
        return None

    def _scan(self, need: set[int]) -> None:
        """Add the live keys of slices ``need`` to the index: one streaming scan of the table's keys
        at the index's snapshot, keeping only those slices' keys; counts every live key per
        (partition, bucket) unless the counts already hold."""
        table = self.table
        count = not self._counted
        if count:
            self._counts = defaultdict(dict)
        self._counted = True
        self._held |= need
        if self._cache is not None:
            self._cache.note("scans")
        schema = table.schema()
        key_names = list(schema.trimmed_primary_keys)
        read = new_read(table, columns=key_names)  # the partition comes with the split
        wanted = np.array(sorted(need), dtype=np.int64)
        every = len(need) == self.num_assigners
        keys: list[npt.NDArray[np.bytes_]] = [self._index.keys]
        part_ids: list[npt.NDArray[np.int32]] = [self._index.part]
        buckets: list[npt.NDArray[np.int32]] = [self._index.bucket]
        for split in new_branch_scan(table, snapshot_id=self._snapshot_id).plan():
            pid = self._part_id(split.partition)
            for batch in read.read_split(split):
                if batch.num_rows == 0:
                    continue
                live = pa.Table.from_batches([batch])
                if count:
                    counts = self._counts[pid]
                    counts[split.bucket] = counts.get(split.bucket, 0) + live.num_rows
                if not every:
                    live = live.filter(pa.array(np.isin(key_slices(table, live, self.num_assigners), wanted)))
                    if live.num_rows == 0:
                        continue
                keys.append(fixed_keys(key_fingerprints(table, live)))
                part_ids.append(np.full(live.num_rows, pid, dtype=np.int32))
                buckets.append(np.full(live.num_rows, split.bucket, dtype=np.int32))
        self._index = SortedKeyIndex.build(
            np.concatenate(keys), np.concatenate(part_ids), np.concatenate(buckets)
        )

    def _lookup(self, fingerprints: pa.Array) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        """(partition id, bucket) of each fingerprint in the index, -1 where absent."""
        return self._index.lookup(fixed_keys(fingerprints))

    def owns(self, partition: bytes, bucket: int) -> bool:
        """Whether this writer may compact ``bucket`` (of any partition): always in one process;
        in a Spark write, the writer holding the bucket's slice ``bucket % N`` (others only add
        level-0 files updating or retracting keys of their own slices that the bucket holds)."""
        return not self.distributed or bucket % self.num_assigners in self._slices

    def key_index_snapshot(self) -> int | None:
        """The snapshot this writer's key index was bootstrapped from (0: the table was empty;
        None: no bootstrap, e.g. an overwrite that ignores the existing keys)."""
        if not self._scanned or self.ignore_existing:
            return None
        return 0 if self._snapshot_id is None else self._snapshot_id

    def claim(self) -> tuple[str, int, tuple[int, ...]]:
        """(writer, N, slices whose keys this writer held): for the commit's check that no two
        writers of one commit held the same slice or used different N."""
        return (self.token, self.num_assigners, tuple(sorted(self._slices)))

    # -- routing --------------------------------------------------------------------------------------
    def route(
        self, rows: pa.Table, kinds: pa.Array | None
    ) -> tuple[pa.Table, pa.Array | None, npt.NDArray[np.int64]]:
        """(rows, kinds, bucket of each row) to write instead of ``rows``: possibly with retractions
        added, partition columns rewritten, rows dropped."""
        table = self.table
        codec = table.partition_codec
        n = rows.num_rows
        fp = key_fingerprints(table, rows)
        row_slice = key_slices(table, rows, self.num_assigners)
        # First: a cached index brings its own partition ids.
        self._bootstrap(set(np.unique(row_slice).tolist()))
        self._routed = True
        row_part = np.empty(n, dtype=np.int32)
        for indices, _ in group_rows(rows, list(codec.keys)):
            values = tuple(rows.column(k)[int(indices[0])].as_py() for k in codec.keys)
            row_part[indices] = self._part_id(codec.to_bytes(values))
        boot_part, boot_bucket = self._lookup(fp)
        if self.owners_only:
            self._check_owned(boot_part, boot_bucket, row_slice)
        key_id = pc.dictionary_encode(fp).indices.to_numpy(zero_copy_only=False).astype(np.int64)

        # One stream per key: rows sorted by (key, arrival).
        order = np.lexsort((np.arange(n), key_id))
        k_sorted, p_sorted = key_id[order], row_part[order]
        first = np.ones(n, dtype=bool)
        first[1:] = k_sorted[1:] != k_sorted[:-1]
        prev_part = np.empty(n, dtype=np.int32)
        prev_part[1:] = p_sorted[:-1]
        prev_part[first] = boot_part[order][first]
        # A segment starts at a key's first row or where its partition changes.
        seg_start = first | (p_sorted != prev_part)
        seg_of = np.cumsum(seg_start) - 1  # segment of each sorted row
        starts = np.flatnonzero(seg_start)
        seg_part = p_sorted[starts]
        seg_first_row = order[starts]  # arrival position of each segment's first row
        seg_slice = row_slice[seg_first_row]  # a key's slice (all its rows share it)
        # Where the key was before each segment (-1: nowhere).
        seg_prev_part = prev_part[starts]
        seg_is_first = first[starts]
        seg_prev_bucket = np.full(len(starts), -1, dtype=np.int32)
        seg_prev_bucket[seg_is_first] = boot_bucket[order][starts][seg_is_first]
        seg_bucket = np.full(len(starts), -1, dtype=np.int32)
        stays = seg_is_first & (seg_prev_part == seg_part)  # the key's stored location
        seg_bucket[stays] = seg_prev_bucket[stays]

        if self.engine is MergeEngine.DEDUPLICATE:
            last = np.ones(n, dtype=bool)
            last[:-1] = first[1:]
            tails = np.flatnonzero(last)  # each key's last row (sorted position)
            out = self._route_moving(
                rows,
                kinds,
                order,
                seg_of,
                seg_part,
                seg_first_row,
                seg_prev_part,
                seg_prev_bucket,
                seg_is_first,
                seg_bucket,
                seg_slice,
            )
            self._remember_keys(
                fp.take(pa.array(order[tails])), seg_part[seg_of[tails]], seg_bucket[seg_of[tails]]
            )
            return out
        return self._route_staying(
            rows,
            kinds,
            row_part,
            order,
            first,
            seg_of,
            seg_part,
            seg_first_row,
            seg_prev_part,
            seg_prev_bucket,
            seg_is_first,
            fp,
            seg_slice,
        )

    def _route_moving(
        self,
        rows: pa.Table,
        kinds: pa.Array | None,
        order: npt.NDArray[np.int64],
        seg_of: npt.NDArray[np.int64],
        seg_part: npt.NDArray[np.int32],
        seg_first_row: npt.NDArray[np.int64],
        seg_prev_part: npt.NDArray[np.int32],
        seg_prev_bucket: npt.NDArray[np.int32],
        seg_is_first: npt.NDArray[np.bool_],
        seg_bucket: npt.NDArray[np.int32],
        seg_slice: npt.NDArray[np.int64],
    ) -> tuple[pa.Table, pa.Array | None, npt.NDArray[np.int64]]:
        """Deduplicate: a key moving to another partition is retracted where it was."""
        new_segs = np.flatnonzero(seg_bucket < 0)
        self._assign_new(seg_bucket, new_segs, seg_part, seg_first_row, seg_slice)
        # The previous location of a later segment is the key's segment before it.
        later = ~seg_is_first
        seg_prev_bucket[later] = seg_bucket[np.flatnonzero(later) - 1]
        retract = np.flatnonzero((seg_prev_part >= 0) & (seg_prev_part != seg_part))
        # A retracted key frees its place (Paimon's BucketAssigner.decrement), per (partition, bucket).
        pairs = np.stack([seg_prev_part[retract], seg_prev_bucket[retract]], axis=1).astype(np.int64)
        for (pid, b), c in zip(*np.unique(pairs, axis=0, return_counts=True), strict=True):
            counts = self._counts[int(pid)]
            counts[int(b)] = max(counts.get(int(b), 0) - int(c), 0)
        n = rows.num_rows
        buckets = np.empty(n, dtype=np.int64)
        buckets[order] = seg_bucket[seg_of]
        if not len(retract):
            return rows, kinds, buckets
        src = seg_first_row[retract]
        old = self._with_partition(rows.take(pa.array(src)), seg_prev_part[retract])
        all_rows = pa.concat_tables([rows, old])
        all_kinds = pa.concat_arrays(
            [
                kinds if kinds is not None else pa.array(np.zeros(n, dtype=np.int8)),
                pa.array(np.full(len(src), _DELETE, dtype=np.int8)),
            ]
        )
        # Each retraction just before the row that moved the key (by arrival).
        position = np.concatenate([2 * np.arange(n, dtype=np.int64) + 1, 2 * src])
        sort = np.argsort(position, kind="stable")
        all_buckets = np.concatenate([buckets, seg_prev_bucket[retract].astype(np.int64)])
        return all_rows.take(pa.array(sort)), all_kinds.take(pa.array(sort)), all_buckets[sort]

    def _route_staying(
        self,
        rows: pa.Table,
        kinds: pa.Array | None,
        row_part: npt.NDArray[np.int32],
        order: npt.NDArray[np.int64],
        first: npt.NDArray[np.bool_],
        seg_of: npt.NDArray[np.int64],
        seg_part: npt.NDArray[np.int32],
        seg_first_row: npt.NDArray[np.int64],
        seg_prev_part: npt.NDArray[np.int32],
        seg_prev_bucket: npt.NDArray[np.int32],
        seg_is_first: npt.NDArray[np.bool_],
        fp: pa.Array,
        seg_slice: npt.NDArray[np.int64],
    ) -> tuple[pa.Table, pa.Array | None, npt.NDArray[np.int64]]:
        """Partial-update, aggregation (rows join the key's partition) and first-row (rows for
        another partition are dropped): a key never moves."""
        n = rows.num_rows
        # The key's location: where it is stored, else its first segment (a new key there).
        key_seg = np.cumsum(seg_is_first) - 1  # key of each segment
        head = np.flatnonzero(seg_is_first)  # each key's first segment
        loc_part = np.where(seg_prev_part[head] >= 0, seg_prev_part[head], seg_part[head]).astype(np.int32)
        loc_bucket = np.where(seg_prev_part[head] >= 0, seg_prev_bucket[head], -1).astype(np.int32)
        new_keys = np.flatnonzero(loc_bucket < 0)
        self._assign_new(loc_bucket, new_keys, loc_part, seg_first_row[head], seg_slice[head])
        row_key = np.empty(n, dtype=np.int64)
        row_key[order] = key_seg[seg_of]
        target_part = loc_part[row_key]
        buckets = loc_bucket[row_key].astype(np.int64)
        elsewhere = target_part != row_part
        head_rows = order[np.flatnonzero(first)]
        self._remember_keys(fp.take(pa.array(head_rows)), loc_part, loc_bucket)
        if not elsewhere.any():
            return rows, kinds, buckets
        if self.engine is MergeEngine.FIRST_ROW:
            keep = np.flatnonzero(~elsewhere)
            return (
                rows.take(pa.array(keep)),
                kinds.take(pa.array(keep)) if kinds is not None else None,
                buckets[keep],
            )
        moved = np.flatnonzero(elsewhere)
        rewritten = self._with_partition(rows.take(pa.array(moved)), target_part[moved])
        stay = np.flatnonzero(~elsewhere)
        out = pa.concat_tables([rows.take(pa.array(stay)), rewritten])
        back = np.argsort(np.concatenate([stay, moved]), kind="stable")
        return out.take(pa.array(back)), kinds, buckets

    # -- helpers ----------------------------------------------------------------------------------------
    def _check_owned(
        self, part: npt.NDArray[np.int32], bucket: npt.NDArray[np.int32], slices: npt.NDArray[np.int64]
    ) -> None:
        found = bucket >= 0
        foreign = found & (bucket % self.num_assigners != slices)
        if foreign.any():
            i = int(np.flatnonzero(foreign)[0])
            codec = self.table.partition_codec
            raise CommitConflictError(
                f"table {self.table.identifier}: bucket {int(bucket[i])} of partition "
                f"{codec.to_dict(self._parts[int(part[i])])} holds keys of another of the write's "
                f"{self.num_assigners} assigner slices; the table changed after the write was planned "
                "(Paimon allows one writer at a time on a cross-partition table). Nothing was "
                "committed and the table is unchanged; retry the write"
            )

    def _assign_new(
        self,
        bucket: npt.NDArray[np.int32],
        which: npt.NDArray[np.int64],
        part: npt.NDArray[np.int32],
        arrival: npt.NDArray[np.int64],
        slices: npt.NDArray[np.int64],
    ) -> None:
        """Fill ``bucket[which]`` (new keys of partitions ``part``, of assigner slices ``slices``),
        in arrival order, as Paimon's cross-partition BucketAssigner with its assigner filter: among
        the buckets the key's slice owns (``b % N == slice``), the lowest below target, else the
        lowest free id."""
        if not len(which):
            return
        n = self.num_assigners
        which = which[np.argsort(arrival[which], kind="stable")]
        groups = np.stack([part[which].astype(np.int64), slices[which]], axis=1)
        for pid, slice_id in np.unique(groups, axis=0).tolist():
            mine = which[(part[which] == pid) & (slices[which] == slice_id)]
            counts = self._counts[pid]
            owned = sorted(b for b in counts if b % n == slice_id)
            ids = [b for b in owned if counts[b] < self.target]
            caps = [self.target - counts[b] for b in ids]
            have = sum(caps)
            if have < len(mine):
                need = -(-(len(mine) - have) // self.target)
                taken = set(owned)
                free = [b for b in range(slice_id, slice_id + n * (len(taken) + need), n) if b not in taken][
                    :need
                ]
                ids += free
                caps += [self.target] * len(free)
            placed = np.repeat(np.array(ids, dtype=np.int32), caps)[: len(mine)]
            bucket[mine] = placed
            for b, c in zip(*np.unique(placed, return_counts=True), strict=True):
                counts[int(b)] = counts.get(int(b), 0) + int(c)

    def _with_partition(self, rows: pa.Table, part_ids: npt.NDArray[np.int32]) -> pa.Table:
        """``rows`` with their partition columns set to the values of partitions ``part_ids``."""
        codec = self.table.partition_codec
        values = [codec.from_bytes(p) for p in self._parts]
        out = rows
        for i, name in enumerate(codec.keys):
            col = pa.array([values[pid][i] for pid in range(len(values))], type=rows.schema.field(name).type)
            out = out.set_column(out.schema.get_field_index(name), name, col.take(pa.array(part_ids)))
        return out

    def _remember_keys(
        self, fps: pa.Array, part: npt.NDArray[np.int32], bucket: npt.NDArray[np.int32]
    ) -> None:
        self._index = self._index.put(fixed_keys(fps), part, bucket)
