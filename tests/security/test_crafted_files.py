"""Item 6 of issue 36: crafted manifests and deletion vectors fail with ``CorruptFileError``
naming the file, without first exhausting memory.

The files are small byte strings built here; memory is measured with ``tracemalloc`` (Python's
allocator, which bytes objects and lists use), so the sizes stay harmless even on the old code.
"""

from __future__ import annotations

import io
import struct
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import fastavro
import pytest
import zstandard

from stratalake.exceptions import CorruptFileError
from stratalake.lsm.deletion_vector import MAGIC, DeletionVector, deserialize_bitmap
from stratalake.spec import avro

_COOKIE = 12347  # RoaringBitmap's portable cookie with run containers


def _peak_bytes(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        with pytest.raises(CorruptFileError) as info:
            fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "manifest-crafted" in str(info.value) or "dv-crafted" in str(info.value)
    return peak


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _container(schema: dict[str, Any], count: int, body: bytes, codec: str = "null") -> bytes:
    """An Avro object container with one block, written byte by byte (fastavro would refuse)."""
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [], codec=codec)
    header = buf.getvalue()  # magic, metadata, sync; no blocks
    sync = header[-16:]
    return header + _zigzag(count) + _zigzag(len(body)) + body + sync


def test_array_of_nulls_in_the_writer_schema_is_refused_before_decoding() -> None:
    schema = {
        "type": "record",
        "name": "record",
        "fields": [{"name": "a", "type": {"type": "array", "items": "null"}}],
    }
    # One record: an array block of 5 million nulls (4 bytes), then the end of the array.
    data = _container(schema, 1, _zigzag(5_000_000) + _zigzag(0))
    assert len(data) < 300
    peak = _peak_bytes(lambda: avro.decode_manifest_entries(data, "manifest-crafted"))
    assert peak < 4_000_000  # the old code built a list of 5 million Nones (40 MB) first


def test_compressed_block_inflating_past_the_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(avro, "MAX_DECODED_BYTES", 8 << 20, raising=False)
    schema = {"type": "record", "name": "record", "fields": [{"name": "_VERSION", "type": "bytes"}]}
    inflated = _zigzag(48 << 20) + bytes(48 << 20)  # one 48 MiB bytes value
    block = zstandard.ZstdCompressor(level=19).compress(inflated)
    data = _container(schema, 1, block, codec="zstandard")
    assert len(data) < 64_000
    peak = _peak_bytes(lambda: avro.decode_manifest_entries(data, "manifest-crafted"))
    assert peak < 8 << 20


def test_block_count_beyond_the_block_bytes_is_refused() -> None:
    schema = {"type": "record", "name": "record", "fields": [{"name": "_VERSION", "type": "int"}]}
    data = _container(schema, 1 << 40, b"\x04")
    with pytest.raises(CorruptFileError, match=r"manifest-crafted.*cannot hold 1099511627776 records"):
        avro.decode_manifest_entries(data, "manifest-crafted")


def _vector(bitmap: bytes) -> bytes:
    body = struct.pack(">i", MAGIC) + bitmap
    return struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def _full_runs(containers: int, header_card: int = 1 << 16) -> bytes:
    """Run containers each holding one run over all 65536 values; the header says ``header_card``."""
    out = struct.pack("<I", _COOKIE | ((containers - 1) << 16))
    out += bytes([0xFF]) * ((containers + 7) // 8)  # every container is a run container
    out += b"".join(struct.pack("<HH", k, header_card - 1) for k in range(containers))
    if containers >= 4:
        out += bytes(4 * containers)  # offsets (not needed to decode)
    return out + b"".join(struct.pack("<HHH", 1, 0, 0xFFFF) for _ in range(containers))


def test_run_lengths_must_match_the_header_cardinality() -> None:
    # Header: one value per container; runs: 65536 each. The old code expanded the runs anyway.
    with pytest.raises(CorruptFileError, match=r"dv-crafted.*runs hold other than"):
        deserialize_bitmap(_full_runs(16, header_card=1), "dv-crafted")


def test_vector_larger_than_its_index_entry_or_data_file_is_refused() -> None:
    data = _vector(_full_runs(64))  # 4 million positions in 400 bytes
    peak = _peak_bytes(lambda: DeletionVector.from_bytes(data, "dv-crafted", cardinality=10))
    assert peak < 4_000_000
    peak = _peak_bytes(lambda: DeletionVector.from_bytes(data, "dv-crafted", max_rows=1000))
    assert peak < 4_000_000


def test_container_count_larger_than_the_bytes_is_refused() -> None:
    bitmap = struct.pack("<II", 12346, 0xFFFFFFFF)  # no-run cookie, 4 billion containers
    with pytest.raises(CorruptFileError, match=r"dv-crafted.*do not fit"):
        deserialize_bitmap(bitmap, "dv-crafted")


@pytest.mark.parametrize(
    ("count", "body", "codec", "message"),
    [
        (1 << 40, lambda: b"\x04", "null", "cannot hold 1099511627776 records"),
        (
            1,
            lambda: zstandard.ZstdCompressor().compress(bytes(300 << 20)),
            "zstandard",
            "inflates to more than",
        ),
        (3, lambda: _zigzag(1 << 30) + b"abc", "null", "do not decode"),
    ],
    ids=["count", "bomb", "string-length"],
)
def test_crafted_avro_data_files_fail_naming_the_file(
    tmp_path: Any, count: int, body: Callable[[], bytes], codec: str, message: str
) -> None:
    """Data files in Avro are checked as manifests are (block counts against their bytes, inflated
    size) before polars decodes them; what polars cannot decode fails as the file's error."""
    from stratalake.io import FileIO
    from stratalake.lsm.file_format import open_data_file

    schema = {"type": "record", "name": "record", "fields": [{"name": "s", "type": "string"}]}
    path = tmp_path / "data-crafted-0.avro"
    path.write_bytes(_container(schema, count, body(), codec))
    reader = open_data_file(FileIO.get(str(path)), str(path))
    tracemalloc.start()
    try:
        with pytest.raises(CorruptFileError, match=rf"data-crafted-0\.avro.*{message}"):
            reader.read()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < (256 + 16) << 20  # a block may inflate to 256 MiB (MAX_BLOCK_BYTES), no more
