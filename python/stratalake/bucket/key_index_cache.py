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
reused the id is noticed), the partitions, the live keys per (partition, bucket), and the keys of
the slices it has seen. The cache keeps at most ``stratalake.key-index-cache.max-memory`` bytes
(a table option, default 256 MiB; 0 turns the cache off for that table), least recently used first
out.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

import pyarrow as pa

#: The table option holding the cache's byte budget (the table being written sets it).
MAX_MEMORY_OPTION = "stratalake.key-index-cache.max-memory"
DEFAULT_MAX_MEMORY = "256 mb"


@dataclass
class KeyIndexState:
    """A key index as of one snapshot: what a writer's bootstrap produces, before any routing."""

    snapshot_id: int  # 0: the empty table
    delta_manifest_list: str | None  # the snapshot's, to tell it from a later one of the same id
    parts: list[bytes]  # partition id -> the partition's BinaryRow bytes
    counts: dict[int, dict[int, int]]  # partition id -> bucket -> live keys
    index: pa.Table  # _KEY (unique), _PART, _BUCKET of the held slices' keys
    # The slices whose keys the index holds; the counts are exact for the buckets they own
    # (``bucket % N``), the only buckets their writers place new keys in.
    slices: frozenset[int]

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
