"""Manifest files and manifest lists of a table: naming, writing, cached reading."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from stratalake.exceptions import CorruptFileError
from stratalake.io import FileIO
from stratalake.spec.avro import (
    decode_index_manifest_entries,
    decode_manifest_blocks,
    decode_manifest_entries,
    decode_manifest_file_metas,
    encode_index_manifest_entries,
    encode_manifest_entries,
    encode_manifest_file_metas,
)
from stratalake.spec.binary_row import encode_row
from stratalake.spec.manifest import (
    FileKind,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)
from stratalake.spec.names import check_data_file, check_file_name, check_index_file
from stratalake.store.manifest_filter import ManifestFilter
from stratalake.store.partition import PartitionCodec

T = TypeVar("T")


# Decoded manifest entries the cache keeps at most: ~0.9 KB each in memory (a file's metadata),
# so ~110 MiB, as Paimon Java's manifest cache keeps 128 MB by default. Enough to keep every
# manifest of a table of 100,000 live files decoded (planning and commits then decode only
# what is new); a larger table's manifests are decoded again as they are needed, and a worker
# that planned it does not keep all of it.
MAX_CACHED_ENTRIES = 131_072


class _LRU:
    """A small process-wide cache of decoded immutable files (manifests never change), bounded
    by files and by the items (entries, metas) they hold together."""

    def __init__(self, capacity: int, max_items: int = MAX_CACHED_ENTRIES) -> None:
        # Keyed by path, or (path, wanted) for a manifest read in part (ManifestIO.read_entries_of).
        self._data: OrderedDict[Any, list[Any]] = OrderedDict()
        self._capacity = capacity
        self._max_items = max_items
        self._items = 0
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Any, value: list[Any]) -> None:
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._items -= len(old)
            self._data[key] = value
            self._items += len(value)
            # The newest file goes last: one larger than the whole bound is not kept either.
            while self._data and (len(self._data) > self._capacity or self._items > self._max_items):
                _, dropped = self._data.popitem(last=False)
                self._items -= len(dropped)

    def items(self) -> int:
        """Decoded items held now."""
        with self._lock:
            return self._items


_CACHE = _LRU(2048)
# Partial manifest reads are cached under what they wanted only for sets up to this size: a
# commit of hundreds of partitions would otherwise keep a large key per manifest in the cache.
MAX_CACHED_WANTED = 64


class ManifestNamer:
    """``manifest-<uuid>-<n>`` / ``manifest-list-<uuid>-<n>`` names of one commit."""

    def __init__(self) -> None:
        self._uuid = str(uuid.uuid4())
        self._n = 0

    def manifest(self) -> str:
        name = f"manifest-{self._uuid}-{self._n}"
        self._n += 1
        return name

    def manifest_list(self) -> str:
        name = f"manifest-list-{self._uuid}-{self._n}"
        self._n += 1
        return name


class ManifestIO:
    """Reads and writes manifest files and manifest lists under ``<table>/manifest``."""

    ENTRIES_PER_FILE = 50_000

    def __init__(self, file_io: FileIO, table_path: str, partitions: PartitionCodec, schema_id: int) -> None:
        self.file_io = file_io
        self.dir = f"{table_path.rstrip('/')}/manifest"
        self.partitions = partitions
        self.schema_id = schema_id

    def path(self, name: str) -> str:
        """``manifest/<name>``; ``name`` (from a snapshot or manifest list) must be one file name."""
        return f"{self.dir}/{check_file_name(name, 'manifest file')}"

    # -- manifest files ------------------------------------------------------------------------
    def _read_cached(
        self, name: str, decode: Callable[[bytes, str], list[T]], check: Callable[[T], None], keep: bool = True
    ) -> list[T]:
        path = self.path(name)
        cached: list[T] | None = _CACHE.get(path)
        if cached is None:
            cached = decode(self.file_io.read_bytes(path), path)
            # The names inside are checked once per decoded entry, before anything uses them as paths.
            try:
                for item in cached:
                    check(item)
            except CorruptFileError as e:
                raise CorruptFileError(f"{path}: {e}") from None
            if keep:
                _CACHE.put(path, cached)
        return list(cached)

    def read_entries(self, name: str, keep: bool = True) -> list[ManifestEntry]:
        """The entries of manifest ``name``; without ``keep``, a manifest not cached yet is not
        cached either (one read to find files to delete: it would push out manifests that stay)."""
        return self._read_cached(name, decode_manifest_entries, _check_entry, keep)

    def read_entries_of(
        self, name: str, wanted: frozenset[tuple[bytes, int | None]], keep: bool = True
    ) -> list[ManifestEntry]:
        """A superset of the entries of ``name`` whose (partition, bucket) is in ``wanted``
        (:attr:`ManifestFilter.wanted_pairs`): the whole manifest when it is cached, else only
        its Avro blocks that may hold them are decoded. A partial read is cached under
        ``wanted`` when that is small (the key stays in the cache with it); one that decoded
        every block is cached as the whole manifest. Without ``keep``, nothing new is cached."""
        path = self.path(name)
        full: list[ManifestEntry] | None = _CACHE.get(path)
        if full is not None:
            return list(full)
        key = (path, wanted)
        partial: list[ManifestEntry] | None = _CACHE.get(key)
        if partial is None:
            partial, every = decode_manifest_blocks(self.file_io.read_bytes(path), path, wanted)
            try:
                for e in partial:
                    _check_entry(e)
            except CorruptFileError as err:
                raise CorruptFileError(f"{path}: {err}") from None
            if not keep:
                pass
            elif every:
                _CACHE.put(path, partial)
            elif len(wanted) <= MAX_CACHED_WANTED:
                _CACHE.put(key, partial)
        return list(partial)

    def write_entries(self, entries: Sequence[ManifestEntry], namer: ManifestNamer) -> list[ManifestFileMeta]:
        metas = []
        for offset in range(0, len(entries), self.ENTRIES_PER_FILE):
            chunk = entries[offset : offset + self.ENTRIES_PER_FILE]
            name = namer.manifest()
            data = encode_manifest_entries(chunk)
            self.file_io.write_bytes(self.path(name), data)
            _CACHE.put(self.path(name), list(chunk))
            metas.append(self._meta(name, len(data), chunk))
        return metas

    def _meta(self, name: str, size: int, entries: Sequence[ManifestEntry]) -> ManifestFileMeta:
        added = sum(1 for e in entries if e.kind is FileKind.ADD)
        buckets = [e.bucket for e in entries]
        levels = [e.file.level for e in entries]
        return ManifestFileMeta(
            file_name=name,
            file_size=size,
            num_added_files=added,
            num_deleted_files=len(entries) - added,
            partition_stats=self.partition_stats(e.partition for e in entries),
            schema_id=self.schema_id,
            min_bucket=min(buckets) if buckets else None,
            max_bucket=max(buckets) if buckets else None,
            min_level=min(levels) if levels else None,
            max_level=max(levels) if levels else None,
            total_buckets=entries[0].total_buckets if entries else None,
        )

    def partition_stats(self, partitions: Iterable[bytes]) -> SimpleStats:
        codec = self.partitions
        if not codec.is_partitioned:
            return SimpleStats.empty()
        distinct = {p: codec.from_bytes(p) for p in set(partitions)}
        arity = len(codec.keys)
        mins: list[Any] = [None] * arity
        maxs: list[Any] = [None] * arity
        nulls = [0] * arity
        for values in distinct.values():
            for i, v in enumerate(values):
                if v is None:
                    nulls[i] += 1
                    continue
                if mins[i] is None or v < mins[i]:
                    mins[i] = v
                if maxs[i] is None or v > maxs[i]:
                    maxs[i] = v
        types = list(codec.types)
        return SimpleStats(encode_row(mins, types), encode_row(maxs, types), tuple(nulls))

    # -- manifest lists ------------------------------------------------------------------------
    def read_list(self, name: str, keep: bool = True) -> list[ManifestFileMeta]:
        """The manifest list ``name``; ``keep`` as for :meth:`read_entries`."""
        return self._read_cached(name, decode_manifest_file_metas, _check_meta, keep)

    def write_list(self, metas: Sequence[ManifestFileMeta], namer: ManifestNamer) -> tuple[str, int]:
        name = namer.manifest_list()
        data = encode_manifest_file_metas(metas)
        self.file_io.write_bytes(self.path(name), data)
        _CACHE.put(self.path(name), list(metas))
        return name, len(data)

    # -- index manifests -----------------------------------------------------------------------
    def read_index(self, name: str) -> list[IndexManifestEntry]:
        return self._read_cached(name, decode_index_manifest_entries, check_index_file)

    def write_index(self, entries: Sequence[IndexManifestEntry]) -> str:
        """Write an index manifest (``index-manifest-<uuid>-0``); returns its name."""
        name = f"index-manifest-{uuid.uuid4()}-0"
        self.file_io.write_bytes(self.path(name), encode_index_manifest_entries(entries))
        _CACHE.put(self.path(name), list(entries))
        return name


def _check_entry(e: ManifestEntry) -> None:
    check_data_file(e.file)


def _check_meta(m: ManifestFileMeta) -> None:
    check_file_name(m.file_name, "manifest file")


def filtered_entries(
    mio: ManifestIO, metas: Iterable[ManifestFileMeta], where: ManifestFilter | None, keep: bool = True
) -> Iterator[ManifestEntry]:
    """The entries of ``metas`` in order; with ``where``, only its partitions and buckets, and
    manifests it excludes by their statistics are not read at all. ``keep`` as for
    :meth:`ManifestIO.read_entries`."""
    if where is None or where.is_trivial:
        for m in metas:
            yield from mio.read_entries(m.file_name, keep)
        return
    buckets = where.buckets
    wanted = where.wanted_pairs
    for m in metas:
        if not where.manifest_may_match(m):
            continue
        entries = (
            mio.read_entries(m.file_name, keep)
            if wanted is None
            else mio.read_entries_of(m.file_name, wanted, keep)
        )
        for e in entries:
            if (buckets is None or e.bucket in buckets) and where.entry_partition_ok(e.partition):
                yield e


def fold_entries(entries: Iterable[ManifestEntry]) -> dict[tuple[bytes, int, str], ManifestEntry]:
    """Apply ADD/DELETE entries in order: what remains is the live file set."""
    live: dict[tuple[bytes, int, str], ManifestEntry] = {}
    for e in entries:
        key = e.identifier()
        if e.kind is FileKind.ADD:
            live[key] = e
        else:
            live.pop(key, None)
    return live
