"""A per-process cache of cross-partition writers' key indexes (``cross_partition.py``).

Paimon's Flink ``GlobalIndexAssigner`` bootstraps its key -> (partition, bucket) index once per
job and then keeps it current from the rows it routes. A stratalake writer lives for one statement
(a Spark task, a Python API write), so the index it bootstrapped is kept here instead, in the
process (Spark reuses its Python workers), and the next writer of the same table advances it from
the snapshot it reflects to the table's latest by reading only the data files added in between
(:meth:`CrossPartitionAssigner._advance`).

An entry is keyed by the table's location and branch, its trimmed primary key and partition
fields (names and types: the index holds encoded keys and partition values), and the number of
assigner slices; it holds the snapshot it reflects (id and delta manifest list, so a rollback that
reused the id is noticed), the partitions, the live keys per (partition, bucket), and every live
key's place: a writer that caches bootstraps every slice's keys (Spark hands a reused worker any
slice), so the counts follow every key. A table whose keys would not fit the budget (its record
count, 32 bytes a key) is not cached: its writers hold their own slices' keys only, as before.
The cache keeps at most ``stratalake.key-index-cache.max-memory`` bytes (a table option, default
256 MiB; 0 turns the cache off for that table), least recently used first out.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

#: The table option holding the cache's byte budget (the table being written sets it).
MAX_MEMORY_OPTION = "stratalake.key-index-cache.max-memory"


def fixed_keys(fingerprints: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.bytes_]:
    """Binary keys as one numpy ``S<width>`` array (zero-copy where all have one width). Shorter
    keys are zero padded: distinct BinaryRows stay distinct, as a row's fixed part holds the lengths
    of its variable-length fields, so two rows of different lengths differ there."""
    if isinstance(fingerprints, pa.ChunkedArray):
        fingerprints = fingerprints.combine_chunks()
    arr = fingerprints.cast(pa.binary())
    n = len(arr)
    if n == 0:
        return np.empty(0, dtype="S1")
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset : arr.offset + n + 1]
    lengths = np.diff(offsets)
    width = max(int(lengths.max()), 1)
    if arr.null_count == 0 and int(lengths.min()) == width:
        data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
        return data.view(f"S{width}")
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=f"S{width}")


_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def key_hashes(keys: npt.NDArray[np.bytes_]) -> npt.NDArray[np.uint64]:
    """A 64-bit hash of each key: the sum of its 8-byte words, each mixed (SplitMix64's finalizer)
    and weighted by its position. A zero word adds nothing, so a key hashes alike at any padding."""
    width = keys.itemsize
    if width % 8:
        width += 8 - width % 8
        keys = keys.astype(f"S{width}")
    words = np.ascontiguousarray(keys).view("<u8").reshape(len(keys), width // 8)
    out = np.zeros(len(keys), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(words.shape[1]):
            z = words[:, i].copy()
            z ^= z >> np.uint64(30)
            z *= _MIX1
            z ^= z >> np.uint64(27)
            z *= _MIX2
            z ^= z >> np.uint64(31)
            out += z * np.uint64(2 * i + 1)
    return out


def _widen(keys: npt.NDArray[np.bytes_], width: int) -> npt.NDArray[np.bytes_]:
    return keys if keys.itemsize == width else keys.astype(f"S{width}")


@dataclass(frozen=True)
class SortedKeyIndex:
    """Key -> (partition id, bucket): keys (:func:`fixed_keys`, unique) ordered by their
    :func:`key_hashes`, with their partition ids and buckets; looked up by binary search on the
    hashes, each candidate compared byte for byte; changed by one delete and one insert per batch.
    Immutable: a change makes a new index, so a cached one can be shared."""

    keys: npt.NDArray[np.bytes_]
    hashes: npt.NDArray[np.uint64]
    part: npt.NDArray[np.int32]
    bucket: npt.NDArray[np.int32]

    @staticmethod
    def empty() -> SortedKeyIndex:
        return SortedKeyIndex(
            np.empty(0, dtype="S1"), np.empty(0, np.uint64), np.empty(0, np.int32), np.empty(0, np.int32)
        )

    @staticmethod
    def build(keys: npt.NDArray[np.bytes_], part: npt.ArrayLike, bucket: npt.ArrayLike) -> SortedKeyIndex:
        """The index of ``keys`` (unique) at ``part`` and ``bucket``."""
        hashes = key_hashes(keys)
        order = np.argsort(hashes, kind="stable")
        return SortedKeyIndex(
            keys[order],
            hashes[order],
            np.asarray(part, dtype=np.int32)[order],
            np.asarray(bucket, dtype=np.int32)[order],
        )

    @property
    def num_rows(self) -> int:
        return len(self.keys)

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.hashes.nbytes + self.part.nbytes + self.bucket.nbytes)

    def _find(self, probe: npt.NDArray[np.bytes_]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """(position, found) of each key of ``probe`` in this index."""
        m = len(probe)
        at = np.zeros(m, dtype=np.int64)
        found = np.zeros(m, dtype=bool)
        if len(self.keys) == 0 or m == 0:
            return at, found
        width = max(self.keys.itemsize, probe.itemsize)
        probe = _widen(probe, width)
        h = key_hashes(probe)
        lo = np.searchsorted(self.hashes, h, "left")
        hi = np.searchsorted(self.hashes, h, "right")
        one = np.flatnonzero(hi - lo == 1)
        if len(one):
            at[one] = lo[one]
            found[one] = _widen(self.keys[lo[one]], width) == probe[one]
        for i in np.flatnonzero(hi - lo > 1).tolist():  # keys sharing a 64-bit hash: rare
            for j in range(int(lo[i]), int(hi[i])):
                if _widen(self.keys[j : j + 1], width)[0] == probe[i]:
                    at[i], found[i] = j, True
                    break
        return at, found

    def lookup(self, probe: npt.NDArray[np.bytes_]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        """(partition id, bucket) of each key of ``probe``, -1 where absent."""
        at, found = self._find(probe)
        part = np.full(len(probe), -1, dtype=np.int32)
        bucket = np.full(len(probe), -1, dtype=np.int32)
        part[found] = self.part[at[found]]
        bucket[found] = self.bucket[at[found]]
        return part, bucket

    def without(self, drop: npt.NDArray[np.bytes_]) -> SortedKeyIndex:
        """This index less the keys ``drop`` (those it holds)."""
        at, found = self._find(drop)
        if not found.any():
            return self
        gone = np.unique(at[found])
        return SortedKeyIndex(
            np.delete(self.keys, gone),
            np.delete(self.hashes, gone),
            np.delete(self.part, gone),
            np.delete(self.bucket, gone),
        )

    def put(self, keys: npt.NDArray[np.bytes_], part: npt.ArrayLike, bucket: npt.ArrayLike) -> SortedKeyIndex:
        """This index with ``keys`` (unique) at ``part`` and ``bucket``, replacing their entries."""
        if not len(keys):
            return self
        base = self.without(keys)
        add = SortedKeyIndex.build(keys, part, bucket)
        width = max(base.keys.itemsize, add.keys.itemsize)
        at = np.searchsorted(base.hashes, add.hashes)
        return SortedKeyIndex(
            np.insert(_widen(base.keys, width), at, _widen(add.keys, width)),
            np.insert(base.hashes, at, add.hashes),
            np.insert(base.part, at, add.part),
            np.insert(base.bucket, at, add.bucket),
        )


@dataclass
class KeyIndexState:
    """A key index as of one snapshot: what a writer's bootstrap produces, before any routing."""

    snapshot_id: int  # 0: the empty table
    delta_manifest_list: str | None  # the snapshot's, to tell it from a later one of the same id
    parts: list[bytes]  # partition id -> the partition's BinaryRow bytes
    counts: dict[int, dict[int, int]]  # partition id -> bucket -> live keys
    index: SortedKeyIndex  # the held slices' keys
    slices: frozenset[int]  # the slices whose keys the index holds: all of them

    @property
    def nbytes(self) -> int:
        buckets = sum(len(c) for c in self.counts.values())
        return int(self.index.nbytes) + sum(len(p) for p in self.parts) + 64 * (len(self.parts) + buckets)

    def copy(self) -> KeyIndexState:
        """A copy a writer may change (the index table is immutable and shared)."""
        return KeyIndexState(
            self.snapshot_id,
            self.delta_manifest_list,
            list(self.parts),
            {p: dict(c) for p, c in self.counts.items()},
            self.index,
            self.slices,
        )


class KeyIndexCache:
    """Least-recently-used key indexes within a byte budget; thread safe. ``stats`` counts hits
    (an index served as it was or advanced), misses and each reason for a fresh bootstrap."""

    def __init__(self) -> None:
        self._entries: OrderedDict[Hashable, KeyIndexState] = OrderedDict()
        self._lock = threading.Lock()
        self.stats: Counter[str] = Counter()

    def get(self, key: Hashable) -> KeyIndexState | None:
        """A private copy of the entry of ``key`` (None if absent)."""
        with self._lock:
            state = self._entries.get(key)
            if state is None:
                self.stats["miss"] += 1
                return None
            self._entries.move_to_end(key)
            return state.copy()

    def put(self, key: Hashable, state: KeyIndexState, max_bytes: int) -> None:
        """Keep ``state`` (a private copy) for ``key``; evict the least recently used entries until
        the cache holds at most ``max_bytes``. An entry larger than the budget is not kept."""
        with self._lock:
            self._entries.pop(key, None)
            if max_bytes <= 0 or state.nbytes > max_bytes:
                self.stats["too_large"] += 1
                return
            self._entries[key] = state.copy()
            total = sum(s.nbytes for s in self._entries.values())
            while total > max_bytes:
                _, old = self._entries.popitem(last=False)
                total -= old.nbytes
                self.stats["evicted"] += 1

    def note(self, what: str) -> None:
        """Count an event (a hit, an advance, a fallback reason) in :attr:`stats`."""
        with self._lock:
            self.stats[what] += 1

    def nbytes(self) -> int:
        with self._lock:
            return sum(s.nbytes for s in self._entries.values())

    def clear(self) -> None:
        """Forget every entry and the statistics."""
        with self._lock:
            self._entries.clear()
            self.stats.clear()


#: The process's cache (Python API writers and the Spark Python workers' writers).
CACHE = KeyIndexCache()
