"""The deletion-vector codec: RoaringBitmap portable format, vector framing, index files."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pyroaring
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratalake.exceptions import CorruptFileError, UnsupportedError
from stratalake.io import LocalFileIO
from stratalake.lsm.deletion_vector import (
    MAGIC,
    MAGIC_64,
    DeletionFile,
    DeletionVector,
    decode_index_file,
    deserialize_bitmap,
    encode_index_file,
    read_deletion_vector,
    serialize_bitmap,
)

# Positions clustered in a few 65536-blocks, so array, bitmap and run containers all occur.
_blocks = st.lists(st.integers(0, 2**15 - 1), min_size=1, max_size=4)
_positions = st.builds(
    lambda blocks, picks, runs: np.unique(
        np.concatenate(
            [np.array([b * 65536 + p % 65536 for b in blocks for p in picks], dtype=np.int64)]
            + [np.arange(b * 65536 + s, b * 65536 + s + n) for b in blocks[:1] for s, n in runs]
        )
    ).astype(np.uint32),
    _blocks,
    st.lists(st.integers(0, 65535), max_size=300),
    st.lists(st.tuples(st.integers(0, 60000), st.integers(1, 5000)), max_size=3),
)


@settings(max_examples=150, deadline=None)
@given(_positions)
def test_bitmap_matches_pyroaring_both_ways(positions: np.ndarray) -> None:
    ours = serialize_bitmap(positions)
    assert list(pyroaring.BitMap.deserialize(ours)) == positions.tolist()
    theirs = pyroaring.BitMap(positions.tolist())
    assert np.array_equal(deserialize_bitmap(theirs.serialize()), positions)
    theirs.run_optimize()  # Java serializes run-optimized bitmaps
    assert np.array_equal(deserialize_bitmap(theirs.serialize()), positions)
    assert ours == theirs.serialize()  # same container choices as runOptimize()


def test_dense_and_edge_positions() -> None:
    for positions in ([], [0], [2**31 - 1], list(range(70000)), list(range(0, 200000, 2))):
        arr = np.array(positions, dtype=np.uint32)
        assert np.array_equal(deserialize_bitmap(serialize_bitmap(arr)), arr)


def test_vector_framing_size_magic_crc() -> None:
    dv = DeletionVector.of([3, 1, 4, 1, 5, 9, 2, 6])
    data = dv.to_bytes()
    size, magic = struct.unpack_from(">ii", data)
    assert magic == MAGIC and size == len(data) - 8
    assert struct.unpack_from(">I", data, 4 + size)[0] == zlib.crc32(data[4 : 4 + size])
    assert DeletionVector.from_bytes(data, "t", size).positions.tolist() == [1, 2, 3, 4, 5, 6, 9]
    corrupt = bytearray(data)
    corrupt[-6] ^= 0xFF  # a bitmap byte: the checksum no longer matches
    with pytest.raises(CorruptFileError, match="checksum"):
        DeletionVector.from_bytes(bytes(corrupt), "t")
    with pytest.raises(CorruptFileError, match="magic"):
        DeletionVector.from_bytes(data[:4] + struct.pack(">i", 42) + data[8:], "t")
    with pytest.raises(UnsupportedError, match="64-bit"):
        DeletionVector.from_bytes(data[:4] + struct.pack(">i", MAGIC_64) + data[8:], "t")
    with pytest.raises(CorruptFileError, match="size"):
        DeletionVector.from_bytes(data, "t", size + 1)


def test_apply_masks_positions() -> None:
    import pyarrow as pa

    t = pa.table({"x": list(range(10))})
    assert DeletionVector.of([0, 9, 4]).apply(t).column("x").to_pylist() == [1, 2, 3, 5, 6, 7, 8]
    assert DeletionVector.of([]).apply(t).num_rows == 10


@given(
    st.sets(st.integers(0, 2**31 - 1) | st.integers(0, 300)),
    st.lists(st.integers(0, 2**31 - 1) | st.integers(0, 300)),
)
def test_union_is_the_set_union(old: set[int], new: list[int]) -> None:
    """A commit's new positions (unsorted, repeated, some already deleted) join the vector as a
    set union, sorted, distinct and uint32, whatever the input's integer type."""
    vector = DeletionVector.of(sorted(old))
    for dtype in (np.int64, np.uint32):
        union = vector.union(np.array(new, dtype=dtype))
        assert union.positions.dtype == np.uint32
        assert union.positions.tolist() == sorted(old | set(new))
    assert vector.positions.tolist() == sorted(old)  # the old vector is unchanged


def test_index_file_read_by_pypaimon(tmp_path: Path) -> None:
    vectors = {
        "data-a.parquet": DeletionVector.of([0, 7, 65540]),
        "data-b.parquet": DeletionVector.of(range(5000)),
    }
    data, ranges = encode_index_file(vectors)
    path = tmp_path / "index-x-0"
    path.write_bytes(data)
    assert data[0] == 1
    for r in ranges:
        got = _pypaimon_read(str(path), r.offset, r.length, r.cardinality)
        assert got == vectors[r.data_file].positions.tolist()
        assert r.cardinality == vectors[r.data_file].cardinality
    assert {k: v.positions.tolist() for k, v in decode_index_file(data, ranges, "x").items()} == {
        k: v.positions.tolist() for k, v in vectors.items()
    }


def _pypaimon_read(path: str, offset: int, length: int, cardinality: int | None) -> list[int]:
    """pypaimon's reader on one range (it only needs an input stream with seek/read)."""
    from pypaimon.deletionvectors.deletion_vector import DeletionVector as PaimonDV
    from pypaimon.table.source.deletion_file import DeletionFile as PaimonDeletionFile

    class _Streams:
        @staticmethod
        def new_input_stream(p: str) -> object:
            return open(p, "rb")

    dv = PaimonDV.read(_Streams(), PaimonDeletionFile(path, offset, length, cardinality))  # type: ignore[arg-type]
    return sorted(dv.bit_map())


def test_reads_pypaimon_serialized_vectors(tmp_path: Path) -> None:
    from pypaimon.deletionvectors.bitmap_deletion_vector import BitmapDeletionVector
    from pypaimon.utils.roaring_bitmap import RoaringBitmap

    positions = [1, 2, 3, 4, 100, 70000, 70001]
    bitmap = RoaringBitmap()
    for p in positions:
        bitmap.add(p)
    blob = BitmapDeletionVector(bitmap).serialize()
    path = tmp_path / "index-y-0"
    path.write_bytes(b"\x01" + blob)
    size = struct.unpack_from(">i", blob)[0]
    dv = read_deletion_vector(LocalFileIO(), DeletionFile(str(path), 1, size, len(positions)))
    assert dv.positions.tolist() == positions
