"""Deletion vectors (docs/format.md section 10): row positions of a data file that readers must skip.

Compaction of a table with ``deletion-vectors.enabled`` marks a superseded record of an older,
higher-level file as deleted instead of rewriting that file. Readers then read level>=1 files one
by one, dropping deleted positions, with no merge.

On disk a bucket's vectors live in index files ``index/index-<uuid>-<n>``: one version byte (1),
then per vector, at the offset its index-manifest range names: int32 BE size, int32 BE magic
:data:`MAGIC`, the bitmap in RoaringBitmap's portable 32-bit serialization, int32 BE CRC32 over
magic + bitmap (size = 4 + bitmap length). The codec here is numpy throughout: a vector is a sorted
``uint32`` position array, and per-container work touches whole 65536-row blocks at once.
"""

from __future__ import annotations

import struct
import threading
import uuid
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from stratalake.exceptions import CorruptFileError, UnsupportedError
from stratalake.io import FileIO
from stratalake.spec.manifest import DeletionVectorRange, FileKind, IndexManifestEntry
from stratalake.spec.names import check_file_name, check_no_external_path

if TYPE_CHECKING:
    from stratalake.lsm.data_file import FileNamer

MAGIC = 1581511376
"""Magic of a 32-bit bitmap vector (Java ``BitmapDeletionVector.MAGIC_NUMBER``)."""
MAGIC_64 = 1581511377
"""Magic of Paimon's 64-bit (Iceberg-compatible) vectors, which stratalake does not read."""
INDEX_FILE_VERSION = 1
DELETION_VECTORS_INDEX = "DELETION_VECTORS"

_COOKIE_NO_RUN = 12346
_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4  # with run containers, offsets are written only from this many containers
_ARRAY_MAX = 4096  # containers of more values are bitmaps (unless runs are smaller)
_MAX_POSITIONS = 1 << 31  # row positions of a data file are Java ints
# Deleted rows of one data file when neither its index entry (_CARDINALITY, absent in older Paimon
# files) nor its row count bounds them: far above any real file, far below exhausting memory.
_UNKNOWN_CARDINALITY_LIMIT = 1 << 26
_U16 = np.dtype("<u2")
_U32 = np.dtype("<u4")

Positions = npt.NDArray[np.uint32]


# -- RoaringBitmap portable serialization --------------------------------------------------------
def serialize_bitmap(positions: Positions) -> bytes:
    """Portable RoaringBitmap bytes of sorted, distinct ``positions``.

    Chooses the smallest container per 65536-value block (array, bitmap or run), as Java's
    ``runOptimize()`` + ``serialize()`` do, so Java and pyroaring read it back unchanged.
    """
    pos = np.asarray(positions, dtype=np.uint32)
    keys_all = (pos >> 16).astype(np.uint16)
    keys, starts, cards = np.unique(keys_all, return_index=True, return_counts=True)
    lows = (pos & 0xFFFF).astype(np.uint16)
    bodies: list[bytes] = []
    is_run: list[bool] = []
    for start, card in zip(starts.tolist(), cards.tolist(), strict=True):
        low = lows[start : start + card]
        breaks = np.flatnonzero(np.diff(low.astype(np.int32)) != 1) + 1
        run_starts = np.concatenate(([0], breaks))
        run_size = 2 + 4 * len(run_starts)
        plain_size = 2 * card if card <= _ARRAY_MAX else 8192
        if run_size < plain_size:
            run_ends = np.concatenate((breaks, [card]))
            pairs = np.empty(2 * len(run_starts), dtype=_U16)
            pairs[0::2] = low[run_starts]
            pairs[1::2] = (run_ends - run_starts - 1).astype(np.uint16)  # stored as length - 1
            bodies.append(struct.pack("<H", len(run_starts)) + pairs.tobytes())
            is_run.append(True)
        elif card <= _ARRAY_MAX:
            bodies.append(low.astype(_U16).tobytes())
            is_run.append(False)
        else:
            bits = np.zeros(65536, dtype=np.uint8)
            bits[low] = 1
            bodies.append(np.packbits(bits, bitorder="little").tobytes())
            is_run.append(False)
    size = len(keys)
    has_run = any(is_run)
    header = bytearray()
    if has_run:
        header += struct.pack("<I", _COOKIE | ((size - 1) << 16))
        flags = np.packbits(np.array(is_run, dtype=np.uint8), bitorder="little")
        header += flags.tobytes()
    else:
        header += struct.pack("<II", _COOKIE_NO_RUN, size)
    descriptive = np.empty(2 * size, dtype=_U16)
    descriptive[0::2] = keys
    descriptive[1::2] = (cards - 1).astype(np.uint16)
    header += descriptive.tobytes()
    if not has_run or size >= _NO_OFFSET_THRESHOLD:
        lengths = np.array([len(b) for b in bodies], dtype=np.int64)
        first = len(header) + 4 * size
        offsets = first + np.concatenate(([0], np.cumsum(lengths)[:-1])) if size else lengths
        header += offsets.astype(_U32).tobytes()
    return bytes(header) + b"".join(bodies)


def deserialize_bitmap(
    data: bytes | memoryview, origin: str = "deletion vector", max_values: int = _MAX_POSITIONS
) -> Positions:
    """Sorted ``uint32`` positions of a portable RoaringBitmap (any container kinds).

    The header's cardinalities are checked against ``max_values`` (and every position against
    2**31) before anything is expanded: run containers of a few bytes can describe billions of
    positions, so a crafted vector fails here instead of exhausting memory.
    """
    try:
        return _deserialize(memoryview(data), max_values)
    except (struct.error, ValueError, IndexError) as e:
        raise CorruptFileError(f"{origin}: not a valid RoaringBitmap ({e})") from None


def _deserialize(buf: memoryview, max_values: int) -> Positions:
    (cookie,) = struct.unpack_from("<I", buf, 0)
    pos = 4
    run_flags: npt.NDArray[np.bool_]
    if cookie & 0xFFFF == _COOKIE:
        size = (cookie >> 16) + 1
        nbytes = (size + 7) // 8
        flags = np.frombuffer(buf[pos : pos + nbytes], dtype=np.uint8)
        run_flags = np.unpackbits(flags, bitorder="little")[:size].astype(bool)
        pos += nbytes
    elif cookie == _COOKIE_NO_RUN:
        (size,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        if size > (len(buf) - pos) // 4:  # before allocating anything by a count from the file
            raise ValueError(f"{size} containers do not fit in {len(buf)} bytes")
        run_flags = np.zeros(size, dtype=bool)
    else:
        raise ValueError(f"unknown cookie {cookie}")
    descriptive = np.frombuffer(buf[pos : pos + 4 * size], dtype=_U16)
    if len(descriptive) != 2 * size:
        raise ValueError("truncated header")
    keys = descriptive[0::2].astype(np.uint32)
    cards = descriptive[1::2].astype(np.int64) + 1
    total = int(cards.sum())
    if total > max_values or (size and int(keys.max()) >= _MAX_POSITIONS >> 16):
        raise ValueError(
            f"its header claims {total} positions (at most {max_values} expected, each below 2**31)"
        )
    pos += 4 * size
    if not run_flags.any() or size >= _NO_OFFSET_THRESHOLD:
        pos += 4 * size  # offsets: containers are contiguous, so sizes alone locate them
    parts: list[Positions] = []
    for i in range(size):
        base = keys[i] << 16
        card = int(cards[i])
        if run_flags[i]:
            (n_runs,) = struct.unpack_from("<H", buf, pos)
            pairs = np.frombuffer(buf[pos + 2 : pos + 2 + 4 * n_runs], dtype=_U16).astype(np.int64)
            if len(pairs) != 2 * n_runs:
                raise ValueError(f"container {i} is truncated")
            pos += 2 + 4 * n_runs
            run_start, run_len = pairs[0::2], pairs[1::2] + 1
            # Checked before expanding: crafted run lengths would otherwise ask for gigabytes.
            if int(run_len.sum()) != card or int((run_start + run_len).max(initial=0)) > 1 << 16:
                raise ValueError(f"container {i}: its runs hold other than the {card} values its header says")
            # Expand runs without a Python loop: offsets within each run added to its start.
            within = np.arange(int(run_len.sum())) - np.repeat(np.cumsum(run_len) - run_len, run_len)
            low = np.repeat(run_start, run_len) + within
        elif card <= _ARRAY_MAX:
            low = np.frombuffer(buf[pos : pos + 2 * card], dtype=_U16).astype(np.int64)
            pos += 2 * card
        else:
            words = np.frombuffer(buf[pos : pos + 8192], dtype=np.uint8)
            low = np.flatnonzero(np.unpackbits(words, bitorder="little"))
            pos += 8192
        if len(low) != card:
            raise ValueError(f"container {i} holds {len(low)} values, header says {card}")
        parts.append((low.astype(np.uint32) | base).astype(np.uint32))
    if not parts:
        return np.empty(0, dtype=np.uint32)
    return np.concatenate(parts)


# -- one vector ----------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class DeletionVector:
    """Deleted row positions of one data file (sorted, distinct, below 2**31)."""

    positions: Positions

    @staticmethod
    def of(positions: Iterable[int] | npt.NDArray[np.integer]) -> DeletionVector:
        arr = np.unique(np.asarray(positions if isinstance(positions, np.ndarray) else list(positions)))
        if len(arr) and (arr[0] < 0 or arr[-1] > 2**31 - 1):
            raise ValueError("deletion vector positions must lie in [0, 2**31 - 1]")
        return DeletionVector(arr.astype(np.uint32))

    @property
    def cardinality(self) -> int:
        return len(self.positions)

    def is_empty(self) -> bool:
        return len(self.positions) == 0

    def union(self, positions: npt.NDArray[np.integer]) -> DeletionVector:
        if len(positions) == 0:
            return self
        new = np.sort(positions.astype(np.uint32))
        if len(new) > 1:
            new = new[np.concatenate(([True], new[1:] != new[:-1]))]
        old = self.positions
        if len(old) == 0:
            return DeletionVector(new)
        # A merge of two sorted runs, O(old + new): a vector grows by a few positions per commit,
        # and a hash-based union of the whole vector each time cost ~0.6 ms per 16k positions.
        at = np.searchsorted(old, new)
        fresh = old[np.minimum(at, len(old) - 1)] != new
        fresh |= at == len(old)
        if not fresh.any():
            return self
        return DeletionVector(np.insert(old, at[fresh], new[fresh]))

    def keep_mask(self, num_rows: int) -> npt.NDArray[np.bool_]:
        """True for rows of a ``num_rows``-row file that are not deleted."""
        keep = np.ones(num_rows, dtype=bool)
        inside = self.positions[self.positions < num_rows]
        keep[inside] = False
        return keep

    def apply(self, table: pa.Table) -> pa.Table:
        """The rows of ``table`` (a whole data file, in file order) that are not deleted."""
        if self.is_empty():
            return table
        return table.filter(pa.array(self.keep_mask(table.num_rows)))

    def to_bytes(self) -> bytes:
        """size | magic | bitmap | CRC32(magic + bitmap), all big-endian ints."""
        body = struct.pack(">i", MAGIC) + serialize_bitmap(self.positions)
        return struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    @staticmethod
    def from_bytes(
        data: bytes | memoryview,
        origin: str,
        expected_size: int | None = None,
        cardinality: int | None = None,
        max_rows: int | None = None,
    ) -> DeletionVector:
        """Decode :meth:`to_bytes` output, checking size, magic, checksum and (when the index
        manifest recorded it) ``cardinality``; ``data`` may run on past the vector (a view into
        its index file); ``max_rows`` (the data file's row count) bounds it too."""
        if len(data) < 12:
            raise CorruptFileError(f"{origin}: deletion vector of {len(data)} bytes is truncated")
        size, magic = struct.unpack_from(">ii", data, 0)
        if magic == MAGIC_64:
            raise UnsupportedError(
                f"{origin}: 64-bit deletion vectors ('deletion-vectors.bitmap64') are not supported"
            )
        if magic != MAGIC:
            raise CorruptFileError(f"{origin}: deletion vector magic {magic} is not {MAGIC}")
        if expected_size is not None and size != expected_size:
            raise CorruptFileError(
                f"{origin}: deletion vector size {size} differs from its range ({expected_size})"
            )
        if size < 4 or len(data) < 8 + size:
            raise CorruptFileError(f"{origin}: deletion vector is truncated (size {size})")
        body = data[4 : 4 + size]
        (crc,) = struct.unpack_from(">I", data, 4 + size)
        if crc != zlib.crc32(body) & 0xFFFFFFFF:
            raise CorruptFileError(f"{origin}: deletion vector checksum mismatch")
        limit = _UNKNOWN_CARDINALITY_LIMIT if cardinality is None else max(cardinality, 0)
        if max_rows is not None:
            limit = min(limit, max_rows)
        dv = DeletionVector(deserialize_bitmap(body[4:], origin, limit))
        if cardinality is not None and dv.cardinality != cardinality:
            raise CorruptFileError(
                f"{origin}: deletion vector holds {dv.cardinality} positions, its index entry says {cardinality}"
            )
        return dv


# -- index files ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class DeletionFile:
    """Where one data file's vector lives (Paimon's ``DeletionFile``). Picklable."""

    path: str  # index file
    offset: int  # of the size int
    length: int  # the size: 4 + bitmap bytes
    cardinality: int | None = None


def encode_index_file(vectors: Mapping[str, DeletionVector]) -> tuple[bytes, tuple[DeletionVectorRange, ...]]:
    """An index file holding ``vectors`` (by data file name) and the ranges to record for them."""
    chunks = [bytes([INDEX_FILE_VERSION])]
    ranges = []
    offset = 1
    for name in sorted(vectors):
        dv = vectors[name]
        data = dv.to_bytes()
        ranges.append(DeletionVectorRange(name, offset, len(data) - 8, dv.cardinality))
        chunks.append(data)
        offset += len(data)
    return b"".join(chunks), tuple(ranges)


def decode_index_file(
    data: bytes, ranges: Iterable[DeletionVectorRange], origin: str
) -> dict[str, DeletionVector]:
    """The vectors named by ``ranges`` from a whole index file."""
    if not data or data[0] != INDEX_FILE_VERSION:
        version = data[0] if data else None
        raise CorruptFileError(
            f"{origin}: deletion vector index file version {version} is not {INDEX_FILE_VERSION}"
        )
    view = memoryview(data)  # one view: slicing bytes per range would copy the rest of the file each time
    out = {}
    for r in ranges:
        if not 0 < r.offset < len(data):
            raise CorruptFileError(f"{origin}: deletion vector offset {r.offset} is outside the file")
        out[r.data_file] = DeletionVector.from_bytes(
            view[r.offset :], f"{origin}@{r.offset}", r.length, r.cardinality
        )
    return out


class _IndexFileCache:
    """Index files by path (immutable once written), bounded by bytes."""

    def __init__(self, max_bytes: int) -> None:
        self._data: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._max = max_bytes
        self._lock = threading.Lock()

    def read(self, file_io: FileIO, path: str) -> bytes:
        with self._lock:
            data = self._data.get(path)
            if data is not None:
                self._data.move_to_end(path)
                return data
        try:
            data = file_io.read_bytes(path)
        except FileNotFoundError:
            raise CorruptFileError(f"deletion vector index file {path} is missing") from None
        with self._lock:
            if path not in self._data and len(data) <= self._max:
                self._data[path] = data
                self._bytes += len(data)
                while self._bytes > self._max:
                    _, old = self._data.popitem(last=False)
                    self._bytes -= len(old)
        return data


_INDEX_CACHE = _IndexFileCache(64 * 1024 * 1024)


def read_deletion_vector(
    file_io: FileIO, deletion_file: DeletionFile, max_rows: int | None = None
) -> DeletionVector:
    """The vector ``deletion_file`` points at (index files are read whole and cached: a bucket's
    vectors share one small file)."""
    data = _INDEX_CACHE.read(file_io, deletion_file.path)
    origin = f"{deletion_file.path}@{deletion_file.offset}"
    if not 0 < deletion_file.offset < len(data):
        raise CorruptFileError(f"{origin}: deletion vector offset is outside the file ({len(data)} bytes)")
    return DeletionVector.from_bytes(
        memoryview(data)[deletion_file.offset :],
        origin,
        deletion_file.length,
        deletion_file.cardinality,
        max_rows,
    )


def index_file_name() -> str:
    return f"index-{uuid.uuid4()}-0"


# -- maintenance during compaction ---------------------------------------------------------------
@dataclass
class DeletionVectorsMaintainer:
    """The vectors of one bucket while its compactions run (Paimon's ``BucketedDvMaintainer``).

    Starts from the bucket's index files at a snapshot; compaction adds deletions for superseded
    rows of files above its output and drops the vectors of files it rewrote. :meth:`write`
    rewrites the bucket's whole vector set into new index files (copy-on-write, as Paimon does),
    so a commit replaces exactly the index files the maintainer started from.
    """

    index_dir: str
    partition: bytes
    bucket: int
    vectors: dict[str, DeletionVector] = field(default_factory=dict)
    base_files: tuple[IndexManifestEntry, ...] = ()  # the live index files the vectors came from
    target_file_size: int = 2 * 1024 * 1024
    modified: bool = False
    # Names the index files it writes (a task attempt's, see FileNamer.sibling); None: random.
    namer: FileNamer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @staticmethod
    def restore(
        file_io: FileIO, index_dir: str, partition: bytes, bucket: int, entries: Iterable[IndexManifestEntry]
    ) -> DeletionVectorsMaintainer:
        """Load the vectors of ``entries`` (the bucket's live DELETION_VECTORS index files)."""
        base = tuple(e for e in entries if e.index_type == DELETION_VECTORS_INDEX)
        vectors: dict[str, DeletionVector] = {}
        for e in base:
            check_no_external_path(e.external_path, e.file_name)
            path = f"{index_dir}/{check_file_name(e.file_name, 'index file')}"
            vectors.update(decode_index_file(_INDEX_CACHE.read(file_io, path), e.dv_ranges or (), path))
        return DeletionVectorsMaintainer(index_dir, partition, bucket, vectors, base)

    def deletion_vector_of(self, file_name: str) -> DeletionVector | None:
        dv = self.vectors.get(file_name)
        return dv if dv is not None and not dv.is_empty() else None

    def has_deletion_vector(self, file_name: str) -> bool:
        return self.deletion_vector_of(file_name) is not None

    def notify_new_deletions(self, file_name: str, positions: npt.NDArray[np.integer]) -> None:
        if len(positions) == 0:
            return
        with self._lock:
            old = self.vectors.get(file_name) or DeletionVector(np.empty(0, dtype=np.uint32))
            self.vectors[file_name] = old.union(np.asarray(positions))
            self.modified = True

    def remove(self, file_name: str) -> None:
        """The file was rewritten (or dropped): its vector goes with it."""
        with self._lock:
            if self.vectors.pop(file_name, None) is not None:
                self.modified = True

    def write(self, file_io: FileIO) -> tuple[tuple[IndexManifestEntry, ...], tuple[IndexManifestEntry, ...]]:
        """Write the current vectors if they changed; returns (added, deleted) index entries and
        makes the added ones the new base. Nothing to do: ``((), ())``."""
        with self._lock:
            if not self.modified:
                return (), ()
            live = {k: v for k, v in self.vectors.items() if not v.is_empty()}
            added = []
            group: dict[str, DeletionVector] = {}
            group_size = 0
            names = sorted(live)
            for i, name in enumerate(names):
                group[name] = live[name]
                group_size += 12 + 2 * live[name].cardinality  # a rough upper bound, for rolling
                if group_size >= self.target_file_size or i == len(names) - 1:
                    added.append(self._write_one(file_io, group))
                    group, group_size = {}, 0
            deleted = self.base_files
            self.base_files = tuple(added)
            self.modified = False
            return tuple(added), deleted

    def _write_one(self, file_io: FileIO, vectors: Mapping[str, DeletionVector]) -> IndexManifestEntry:
        data, ranges = encode_index_file(vectors)
        name = self.namer.next(None) if self.namer is not None else index_file_name()
        file_io.write_bytes(f"{self.index_dir}/{name}", data)
        return IndexManifestEntry(
            FileKind.ADD,
            self.partition,
            self.bucket,
            DELETION_VECTORS_INDEX,
            name,
            len(data),
            len(ranges),
            ranges,
        )
