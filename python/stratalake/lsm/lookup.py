"""Lookup in the higher levels of a bucket, and the merge rule of lookup tables.

Tables that "need lookup" (``changelog-producer=lookup``, deletion vectors, ``force-lookup``)
push level-0 files up at every commit, merging each key with its old value found in the higher
levels. The newest high-level record of a key is therefore its complete merged value, and every
merge (read, compaction) must use only that record plus the level-0 records:
:class:`LookupMergeFunction`. Merging all high-level records would, e.g., sum an aggregate twice.

Lookups are vectorized: a batch of keys is binary-searched in (a single integer key) or joined
against whole decoded files, which are kept in a process-wide cache bounded by
``lookup.cache-max-memory-size`` (files are immutable, so the file path is a safe cache key). For remote filesystems, files are first copied to a local directory
bounded by ``lookup.cache-max-disk-size`` and ``lookup.cache-file-retention``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import CorruptFileError
from stratalake.io import FileIO
from stratalake.io.private import check_private, private_dir
from stratalake.lsm.data_file import written_slices
from stratalake.lsm.deletion_vector import DeletionVector
from stratalake.lsm.levels import Levels
from stratalake.merge import MergeFunction
from stratalake.spec.manifest import DataFileMeta
from stratalake.spec.schema import TableSchema

LEVEL = "_LEVEL"
"""Transient int32 column: the level of the file a KV row was read from (never written)."""

_ROW = "__lookup_row"


def with_level(kv: pa.Table, level: int) -> pa.Table:
    """``kv`` plus a constant :data:`LEVEL` column."""
    return kv.append_column(LEVEL, pa.array(np.full(kv.num_rows, level, dtype=np.int32)))


def without_level(kv: pa.Table) -> pa.Table:
    return kv.drop_columns([LEVEL]) if LEVEL in kv.column_names else kv


@dataclass(frozen=True)
class GroupLevels:
    """Per key group of a sorted KV table with :data:`LEVEL`: level-0 presence and the high record."""

    has_level0: npt.NDArray[np.bool_]  # a record from level 0 (or the write buffer) is in the group
    high: npt.NDArray[np.int64]  # row of the newest record from a level >= 1, or -1
    keep: npt.NDArray[np.bool_]  # per row: level <= 0 or the group's high record

    @staticmethod
    def of(levels: npt.NDArray[np.int32], starts: npt.NDArray[np.int64]) -> GroupLevels:
        n = len(levels)
        counts = np.diff(np.append(starts, n))
        gid = np.repeat(np.arange(len(starts)), counts)
        high_level = levels > 0
        # Lower level = newer: the lowest level >= 1 holds the key's latest merged value.
        masked = np.where(high_level, levels, np.iinfo(np.int32).max)
        min_level = np.minimum.reduceat(masked, starts) if n else masked
        is_high = high_level & (levels == min_level[gid])
        rows = np.arange(n, dtype=np.int64)
        high = np.maximum.reduceat(np.where(is_high, rows, -1), starts) if n else rows
        has_level0 = (
            np.maximum.reduceat((~high_level).astype(np.int8), starts).astype(bool) if n else high_level
        )
        return GroupLevels(has_level0, high.astype(np.int64), ~high_level | is_high)


def filter_groups(
    sorted_kv: pa.Table, starts: npt.NDArray[np.int64], keep: npt.NDArray[np.bool_]
) -> tuple[pa.Table, npt.NDArray[np.int64]]:
    """Keep rows of ``sorted_kv`` where ``keep`` (every group keeps at least one row)."""
    if keep.all():
        return sorted_kv, starts
    kept = np.add.reduceat(keep.astype(np.int64), starts)
    new_starts = np.concatenate(([0], np.cumsum(kept)[:-1])).astype(np.int64)
    return sorted_kv.filter(pa.array(keep)), new_starts


class LookupMergeFunction:
    """Wraps a merge function for lookup tables: per key, only the newest high-level record and
    the level-0 records are merged. Input rows carry :data:`LEVEL`; the result does not."""

    def __init__(self, inner: MergeFunction) -> None:
        self.inner = inner

    def merge(self, sorted_kv: pa.Table, starts: np.ndarray) -> pa.Table:
        if sorted_kv.num_rows == 0 or LEVEL not in sorted_kv.column_names:
            return self.inner.merge(without_level(sorted_kv), starts)
        levels = sorted_kv.column(LEVEL).to_numpy()
        groups = GroupLevels.of(levels, starts)
        kv, new_starts = filter_groups(sorted_kv, starts, groups.keep)
        return without_level(self.inner.merge(without_level(kv), new_starts))


# -- caches ---------------------------------------------------------------------------------------
class LookupCache:
    """Decoded data files by path, least recently used evicted beyond ``max_bytes``; also, per
    file, its key column as a sorted numpy array when the key is a single integer column.

    Files put here as they are written (:meth:`put`) hold at most a quarter of ``max_bytes``
    until a lookup reads them: a new run is read again only if a later flush of its bucket has
    keys in its key range, which a load of new keys never has (measured on a 10M-row load and a
    2.5M-row upsert, one writer: 1 hit in 43 lookups of files). Unbounded, the written runs
    filled the whole cache, which each Spark worker keeps between tasks.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._data: OrderedDict[str, pa.Table] = OrderedDict()
        self._keys: dict[str, npt.NDArray[Any] | None] = {}
        # Entries put and not read since, oldest first, with their size.
        self._unread: OrderedDict[str, int] = OrderedDict()
        self._unread_bytes = 0
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_load(self, key: str, load: Callable[[], pa.Table]) -> pa.Table:
        with self._lock:
            table = self._data.get(key)
            if table is not None:
                self._data.move_to_end(key)
                self._unread_bytes -= self._unread.pop(key, 0)
                self.hits += 1
                return table
            self.misses += 1
        table = load()
        with self._lock:
            if key not in self._data and table.nbytes <= self.max_bytes:
                self._data[key] = table
                self._bytes += table.nbytes
                self._evict()
        return table

    def put(self, key: str, table: pa.Table) -> None:
        """Cache ``table``, a file just written that the next lookup may read; the oldest such
        files not read since go first beyond :attr:`unread_budget`."""
        with self._lock:
            if key in self._data or table.nbytes > self.unread_budget:
                return
            while self._unread and self._unread_bytes + table.nbytes > self.unread_budget:
                self._drop(next(iter(self._unread)))
            self._data[key] = table
            self._bytes += table.nbytes
            self._unread[key] = table.nbytes
            self._unread_bytes += table.nbytes
            self._evict()

    @property
    def unread_budget(self) -> int:
        """Bytes that files put and not read since may hold: a quarter of the cache."""
        return self.max_bytes // 4

    def sorted_keys(self, key: str, table: pa.Table, name: str) -> npt.NDArray[Any] | None:
        """``table``'s column ``name`` as numpy if strictly increasing (a file of a level >= 1
        always is), else None; remembered while ``table`` stays cached."""
        with self._lock:
            if key in self._keys:
                return self._keys[key]
        values = table.column(name).to_numpy()
        keys = values if len(values) < 2 or bool(np.all(values[1:] > values[:-1])) else None
        with self._lock:
            if key in self._data and key not in self._keys:
                self._keys[key] = keys
                self._bytes += keys.nbytes if keys is not None else 0
                self._evict()
        return keys

    def _evict(self) -> None:
        while self._bytes > self.max_bytes and self._data:
            self._drop(next(iter(self._data)))

    def _drop(self, key: str) -> None:
        old = self._data.pop(key)
        keys = self._keys.pop(key, None)
        self._bytes -= old.nbytes + (keys.nbytes if keys is not None else 0)
        self._unread_bytes -= self._unread.pop(key, 0)

    @property
    def nbytes(self) -> int:
        return self._bytes


_MEMORY_CACHES: dict[int, LookupCache] = {}
_MEMORY_CACHES_LOCK = threading.Lock()


def memory_cache(max_bytes: int) -> LookupCache:
    """The process-wide cache of exactly ``max_bytes`` (tables with the same
    ``lookup.cache-max-memory-size`` share it), so a small setting bounds memory too."""
    with _MEMORY_CACHES_LOCK:
        cache = _MEMORY_CACHES.get(max_bytes)
        if cache is None:
            cache = _MEMORY_CACHES[max_bytes] = LookupCache(max_bytes)
        return cache


class LocalCopies:
    """Local copies of remote data files, so repeated lookups do not re-download them.

    A compaction merges what it reads from these copies and commits the result, and the copies
    hold table data: so they live in a private directory (this user's, mode 0700, checked before
    each use, see :mod:`stratalake.io.private`), and a copy is used only if it is a regular file
    of this user whose size is the file's size in its metadata.
    """

    def __init__(self, directory: str, max_bytes: int, retention_ms: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.retention_ms = retention_ms
        self._lock = threading.Lock()

    @staticmethod
    def default(max_bytes: int, retention_ms: int) -> LocalCopies:
        """In ``<tmp>/stratalake-lookup-<uid>``, shared by this user's processes only."""
        return LocalCopies(str(private_dir("stratalake-lookup")), max_bytes, retention_ms)

    def local_path(self, file_io: FileIO, path: str, size: int | None = None) -> str:
        """A local copy of ``path``, ``size`` bytes long if given (the data file's size in its
        metadata; a remote file of another size is a :class:`CorruptFileError`)."""
        name = hashlib.sha1(path.encode()).hexdigest() + "-" + os.path.basename(path)
        local = os.path.join(self.directory, name)
        with self._lock:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            check_private(Path(self.directory))
            if self._usable(local, size):
                os.utime(local)
                return local
            data = file_io.read_bytes(path)
            if size is not None and len(data) != size:
                raise CorruptFileError(
                    f"data file {path} has {len(data)} bytes, but its metadata says {size}: it was "
                    "changed or truncated after it was committed; restore it, or roll the table "
                    "back to a snapshot that does not use it"
                )
            tmp = f"{local}.{os.getpid()}.{threading.get_ident()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, local)
            self._evict(keep=local)
        return local

    @staticmethod
    def _usable(local: str, size: int | None) -> bool:
        try:
            st = os.lstat(local)
        except FileNotFoundError:
            return False
        return stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and (size is None or st.st_size == size)

    def _evict(self, keep: str) -> None:
        entries = []
        for e in os.scandir(self.directory):
            if e.is_file() and not e.name.endswith(".tmp"):
                st = e.stat()
                entries.append((st.st_mtime, st.st_size, e.path))
        entries.sort()
        total = sum(size for _, size, _ in entries)
        deadline = time.time() - self.retention_ms / 1000.0
        for mtime, size, path in entries:
            if total <= self.max_bytes and mtime >= deadline:
                break
            if path == keep:  # about to be read
                continue
            with contextlib.suppress(OSError):
                os.remove(path)
            total -= size


# -- lookup ---------------------------------------------------------------------------------------
class LookupLevels:
    """Finds the newest record of many keys in the levels of one bucket, level by level."""

    def __init__(
        self,
        levels: Levels,
        key_names: Sequence[str],
        read: Callable[[DataFileMeta], pa.Table],
        cache: LookupCache | None,
        cache_prefix: str = "",
        deletion_vector_of: Callable[[str], DeletionVector | None] | None = None,
        iter_read: Callable[[DataFileMeta], Iterable[pa.Table]] | None = None,
    ) -> None:
        """``read`` must return every row of a file in file order (positions are row indices);
        ``deletion_vector_of`` gives the rows to ignore, looked up at each call because vectors
        change while the decoded files stay cached. ``iter_read`` reads a file batch by batch in
        file order: files too large for the cache are probed that way, never held whole."""
        self.levels = levels
        self.key_names = list(key_names)
        self._read = read
        self._cache = cache
        self._prefix = cache_prefix
        self._dv_of = deletion_vector_of
        self._iter_read = iter_read

    def remember_budget(self) -> int:
        """Bytes of just-written rows worth keeping for :meth:`remember` (0: no cache)."""
        return 0 if self._cache is None else self._cache.unread_budget

    def _cache_key(self, f: DataFileMeta) -> str:
        return f"{self._prefix}/{f.file_name}"

    def remember(self, metas: Sequence[DataFileMeta], kv: pa.Table, schema: TableSchema) -> None:
        """Cache files just written from ``kv`` (in order): the next commit looks keys up in them."""
        if self._cache is None:
            return
        for m, rows in zip(metas, written_slices(metas, kv, schema), strict=True):
            self._cache.put(self._cache_key(m), rows)

    def _file(self, f: DataFileMeta) -> pa.Table:
        # One chunk per column: a take from a many-chunk column first concatenates all of it.
        if self._cache is None:
            return self._read(f).combine_chunks()
        return self._cache.get_or_load(self._cache_key(f), lambda: self._read(f).combine_chunks())

    def _streams(self, f: DataFileMeta) -> bool:
        """Whether ``f`` is probed batch by batch: its decoded size (estimated from the file
        size; Parquet compresses by about 4x at most for typical data) exceeds the cache."""
        return self._iter_read is not None and (
            self._cache is None or f.file_size * 4 > self._cache.max_bytes
        )

    def _parts(self, f: DataFileMeta) -> Iterator[tuple[pa.Table, int, str | None]]:
        """``f``'s rows as (rows, position of the first, cache key or None): the whole cached file,
        or batches read one by one."""
        if self._iter_read is not None and self._streams(f):
            offset = 0
            for batch in self._iter_read(f):
                yield batch.combine_chunks(), offset, None
                offset += batch.num_rows
            return
        yield self._file(f), 0, self._cache_key(f) if self._cache is not None else None

    def lookup(self, keys: pa.Table, start_level: int) -> pa.Table | None:
        """Records (KV + :data:`LEVEL`) of ``keys`` from the first level >= ``start_level`` holding
        them; at most one per key. None when nothing is found."""
        return self.lookup_positions(keys, start_level)[0]

    def lookup_positions(
        self, keys: pa.Table, start_level: int
    ) -> tuple[pa.Table | None, list[tuple[str, npt.NDArray[np.int64]]]]:
        """:meth:`lookup`, plus where each found record lives: (data file name, row positions).
        Rows a deletion vector marks are skipped, so a key's live record is found."""
        names = self.key_names
        if len(names) == 1 and pa.types.is_integer(keys.schema.field(names[0]).type):
            return self._lookup_sorted(keys.column(names[0]).to_numpy(), start_level)
        return self._lookup_join(keys.select(names), start_level)

    def _live_rows(self, f: DataFileMeta, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_] | None:
        """Which of ``rows`` (positions in ``f``) no deletion vector marks; None: all of them."""
        dv = self._dv_of(f.file_name) if self._dv_of is not None and len(rows) else None
        return None if dv is None else np.isin(rows, dv.positions, invert=True)

    def _lookup_sorted(
        self, probe: npt.NDArray[Any], start_level: int
    ) -> tuple[pa.Table | None, list[tuple[str, npt.NDArray[np.int64]]]]:
        """Single integer key: binary search of the probe keys in each file's sorted key array,
        O(keys x log(file rows)) per file instead of hashing whole files."""
        name = self.key_names[0]
        remaining = np.ones(len(probe), dtype=bool)
        found: list[pa.Table] = []
        where: list[tuple[str, npt.NDArray[np.int64]]] = []
        key_of = self.levels.key_of
        for level in range(max(start_level, 1), self.levels.number_of_levels):
            todo = np.flatnonzero(remaining)
            if len(todo) == 0:
                break
            run = self.levels.run_of_level(level)
            if run.is_empty():
                continue
            wanted = probe[todo]
            lo, hi = int(wanted.min()), int(wanted.max())
            hits: list[pa.Table] = []
            for f in run.files:
                if key_of(f.max_key)[0] < lo or key_of(f.min_key)[0] > hi:
                    continue
                for data, offset, cache_key in self._parts(f):
                    if data.num_rows == 0:
                        continue
                    if self._cache is not None and cache_key is not None:
                        file_keys = self._cache.sorted_keys(cache_key, data, name)
                    else:
                        values = data.column(name).to_numpy()
                        file_keys = (
                            values if len(values) < 2 or bool(np.all(values[1:] > values[:-1])) else None
                        )
                    if file_keys is None:  # not cached, or (never for a sorted run) unsorted
                        rows = _semi_join_rows(data, pa.table({name: wanted}), [name])
                        matched = np.isin(wanted, data.column(name).take(pa.array(rows)).to_numpy())
                    else:
                        pos = np.searchsorted(file_keys, wanted)
                        np.minimum(pos, len(file_keys) - 1, out=pos)
                        matched = file_keys[pos] == wanted
                        rows = np.sort(pos[matched]).astype(np.int64)
                    live = self._live_rows(f, rows + offset)
                    if live is not None:
                        dead_keys = data.column(name).take(pa.array(rows[~live])).to_numpy()
                        matched &= ~np.isin(wanted, dead_keys)
                        rows = rows[live]
                    remaining[todo[matched]] = False
                    if len(rows):
                        hits.append(data.take(pa.array(rows)))
                        where.append((f.file_name, rows + offset))
            if hits:
                found.append(with_level(pa.concat_tables(hits), level))
        if not found:
            return None, where
        return (pa.concat_tables(found) if len(found) > 1 else found[0]), where

    def _lookup_join(
        self, remaining: pa.Table, start_level: int
    ) -> tuple[pa.Table | None, list[tuple[str, npt.NDArray[np.int64]]]]:
        """Any key: a semi join of the remaining keys against each overlapping file."""
        names = self.key_names
        found: list[pa.Table] = []
        where: list[tuple[str, npt.NDArray[np.int64]]] = []
        key_of = self.levels.key_of
        for level in range(max(start_level, 1), self.levels.number_of_levels):
            if remaining.num_rows == 0:
                break
            run = self.levels.run_of_level(level)
            if run.is_empty():
                continue
            lo, hi = _key_bounds(remaining, names)
            hits: list[pa.Table] = []
            for f in run.files:
                if key_of(f.max_key) < lo or key_of(f.min_key) > hi:
                    continue
                for data, offset, _ in self._parts(f):
                    rows = _semi_join_rows(data, remaining, names)
                    live = self._live_rows(f, rows + offset)
                    if live is not None:
                        rows = rows[live]
                    if len(rows):
                        hits.append(data.take(pa.array(rows)))
                        where.append((f.file_name, rows + offset))
            if hits:
                level_rows = pa.concat_tables(hits)
                found.append(with_level(level_rows, level))
                remaining = remaining.join(level_rows.select(names), keys=names, join_type="left anti")
        if not found:
            return None, where
        return (pa.concat_tables(found) if len(found) > 1 else found[0]), where


def _key_bounds(keys: pa.Table, names: Sequence[str]) -> tuple[tuple[object, ...], tuple[object, ...]]:
    order = pc.sort_indices(keys, sort_keys=[(n, "ascending") for n in names])
    first = keys.take(order[:1]).to_pylist()[0]
    last = keys.take(order[-1:]).to_pylist()[0]
    return tuple(first[n] for n in names), tuple(last[n] for n in names)


def _semi_join_rows(data: pa.Table, keys: pa.Table, names: Sequence[str]) -> npt.NDArray[np.int64]:
    """Row indices of ``data`` whose key is in ``keys`` (only key columns enter the join, so any
    value column type is fine)."""
    slim = data.select(list(names)).append_column(_ROW, pa.array(np.arange(data.num_rows, dtype=np.int64)))
    if len(names) == 1:
        mask = pc.is_in(slim.column(names[0]), value_set=keys.column(names[0]).combine_chunks())
        return np.flatnonzero(mask.to_numpy(zero_copy_only=False)).astype(np.int64)
    joined = slim.join(keys, keys=list(names), join_type="left semi")
    return np.sort(joined.column(_ROW).to_numpy()).astype(np.int64)
