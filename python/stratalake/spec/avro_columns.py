"""Avro object container files, column by column (Avro 1.11 specification, "Object Container Files";
docs/format.md section 6).

A data or changelog file with ``file.format = avro`` holds one Avro record per row. Decoding or
encoding record by record costs microseconds a row in Python, so neither is done here:

- **Writing** (:class:`ContainerWriter`, :func:`encode_records`): every column becomes an Arrow
  binary array of its values' encodings (zig-zag varints, lengths and IEEE bytes built with numpy,
  nested values from their children's encodings by offsets), a row is the element-wise join of its
  fields (``pyarrow.compute``), and a block is a slice of those rows, compressed whole.
- **Reading** (:class:`ContainerReader`, :func:`decode_blocks`): the container is framed here
  (header, block counts and sizes, sync markers, codecs, size limits), and the records of a run of
  blocks are decoded by polars' Avro reader (Rust) into Arrow, then given Paimon's Arrow types.

Only the types Paimon's Avro schemas use are accepted (:func:`arrow_type`): primitives, records,
nullable unions ``["null", T]``, arrays, maps (string keys) and Paimon's arrays of key/value
records (other keys), and the logical types decimal (bytes), date, time-millis and the timestamp
and local-timestamp millis/micros.
"""

from __future__ import annotations

import bz2
import io
import itertools
import json
import lzma
import os
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import UnsupportedError

__all__ = [
    "BLOCK_BYTES",
    "ContainerReader",
    "ContainerWriter",
    "Cursor",
    "arrow_type",
    "decode_blocks",
    "encode_records",
    "min_record_size",
    "read_header",
]

MAGIC: Final = b"Obj\x01"
SYNC_SIZE: Final = 16
#: Uncompressed record bytes per block, as Avro Java's DataFileWriter (its default sync interval).
BLOCK_BYTES: Final = 64_000
#: A block inflating past this is refused before it is decoded (a few hundred compressed bytes can
#: inflate to gigabytes); Avro writers cut blocks at tens of kilobytes.
MAX_BLOCK_BYTES: Final = 256 * 1024 * 1024
MAX_SCHEMA_DEPTH: Final = 32
_CHUNK: Final = 1 << 20

_FIXED_SIZES: Final = {
    "null": 0,
    "boolean": 1,
    "int": 1,
    "long": 1,
    "float": 4,
    "double": 8,
    "bytes": 1,
    "string": 1,
}
_EMPTY: Final = pa.scalar(b"", pa.large_binary())


# -- schemas -------------------------------------------------------------------------------------


def _nullable_branch(schema: list[Any]) -> tuple[Any, int, int]:
    """(T, index of null, index of T) of a union ``["null", T]`` or ``[T, "null"]``."""
    if len(schema) != 2 or "null" not in schema or schema[0] == schema[1]:
        raise UnsupportedError(f"Avro union {schema} is not a Paimon column type")
    null_index = schema.index("null")
    return schema[1 - null_index], null_index, 1 - null_index


def arrow_type(schema: Any) -> tuple[pa.DataType, bool]:
    """(Arrow type, nullable) of an Avro type as Paimon writes them; :class:`UnsupportedError` for
    any other (enums, fixed, named references, unions of several types...), ValueError for a
    malformed one (a record without fields, a decimal without a precision...)."""
    try:
        return _arrow_type(schema, 0)
    except (KeyError, TypeError, AttributeError, IndexError) as e:
        raise ValueError(f"malformed Avro type {json.dumps(schema)[:200]}: {type(e).__name__} {e}") from None


def _arrow_type(schema: Any, depth: int) -> tuple[pa.DataType, bool]:
    if depth > MAX_SCHEMA_DEPTH:
        raise UnsupportedError(f"the Avro schema nests deeper than {MAX_SCHEMA_DEPTH} levels")
    if isinstance(schema, list):
        inner, _, _ = _nullable_branch(schema)
        return _arrow_type(inner, depth + 1)[0], True
    if isinstance(schema, str):
        simple = {
            "boolean": pa.bool_(),
            "int": pa.int32(),
            "long": pa.int64(),
            "float": pa.float32(),
            "double": pa.float64(),
            "string": pa.string(),
            "bytes": pa.binary(),
        }
        if schema not in simple:
            raise UnsupportedError(f"Avro type '{schema}' is not a Paimon column type")
        return simple[schema], False
    if not isinstance(schema, dict):
        raise UnsupportedError(f"Avro type {schema!r} is not a Paimon column type")
    logical = schema.get("logicalType")
    kind = schema.get("type")
    if logical == "decimal" and kind == "bytes":
        precision, scale = int(schema["precision"]), int(schema.get("scale", 0))
        if not 0 < precision <= 38 or not 0 <= scale <= precision:
            raise UnsupportedError(f"Avro decimal({precision}, {scale}) is not a Paimon decimal")
        return pa.decimal128(precision, scale), False
    if logical == "date" and kind == "int":
        return pa.date32(), False
    if logical == "time-millis" and kind == "int":
        return pa.time32("ms"), False
    if kind == "long" and logical in (
        "timestamp-millis",
        "timestamp-micros",
        "local-timestamp-millis",
        "local-timestamp-micros",
    ):
        unit = "ms" if logical.endswith("millis") else "us"
        return pa.timestamp(unit, tz="UTC" if logical.startswith("local") else None), False
    if kind == "record":
        fields = []
        for f in schema.get("fields") or []:
            ft, nullable = _arrow_type(f["type"], depth + 1)
            fields.append(pa.field(f["name"], ft, nullable=nullable))
        if not fields:
            raise UnsupportedError(f"Avro record {schema.get('name')} has no fields")
        return pa.struct(fields), False
    if kind == "map":
        vt, vnull = _arrow_type(schema["values"], depth + 1)
        key = pa.field("key", pa.string(), nullable=False)
        return pa.map_(key, pa.field("value", vt, nullable=vnull)), False
    if kind == "array":
        items = schema["items"]
        if logical == "map" and isinstance(items, dict) and items.get("type") == "record":
            entry = items.get("fields") or []
            if [f.get("name") for f in entry] != ["key", "value"]:
                raise UnsupportedError(f"Avro map entries {items.get('name')} are not (key, value) records")
            kt, knull = _arrow_type(entry[0]["type"], depth + 1)
            if knull:
                raise UnsupportedError("Avro map entries with nullable keys are not a Paimon map")
            vt, vnull = _arrow_type(entry[1]["type"], depth + 1)
            return pa.map_(pa.field("key", kt, nullable=False), pa.field("value", vt, nullable=vnull)), False
        it, inull = _arrow_type(items, depth + 1)
        return pa.list_(pa.field("item", it, nullable=inull)), False
    if isinstance(kind, str) and logical is None and len(schema) == 1:
        return _arrow_type(kind, depth + 1)
    raise UnsupportedError(f"Avro type {json.dumps(schema)} is not a Paimon column type")


def min_record_size(schema: Any, named: dict[str, Any] | None = None, depth: int = 0) -> int:
    """The fewest bytes one value of ``schema`` encodes to; ValueError for arrays whose items may
    take none (their counts would not be bounded by the file's size) or a malformed schema."""
    named = {} if named is None else named
    if depth > MAX_SCHEMA_DEPTH:
        raise ValueError(f"the writer schema nests deeper than {MAX_SCHEMA_DEPTH} levels")
    if isinstance(schema, str):
        if schema in _FIXED_SIZES:
            return _FIXED_SIZES[schema]
        if schema in named:
            return named[schema] if isinstance(named[schema], int) else 1  # recursion: via a union
        raise ValueError(f"the writer schema names an unknown type {schema!r}")
    if isinstance(schema, list):
        for branch in schema:
            min_record_size(branch, named, depth + 1)
        return 1  # the branch index
    if not isinstance(schema, dict):
        raise ValueError(f"the writer schema has a malformed type {schema!r}")
    kind = schema.get("type")
    if kind == "record" or kind == "error":
        name = str(schema.get("name"))
        named[name] = "pending"
        fields = schema.get("fields")
        if not isinstance(fields, list):
            raise ValueError(f"record {name} has no field list")
        total = sum(min_record_size(f.get("type"), named, depth + 1) for f in fields if isinstance(f, dict))
        named[name] = total
        return total
    if kind == "array":
        if min_record_size(schema.get("items"), named, depth + 1) == 0:
            raise ValueError("the writer schema has an array of values that take no bytes")
        return 1
    if kind == "map":
        min_record_size(schema.get("values"), named, depth + 1)
        return 1
    if kind == "enum":
        return 1
    if kind == "fixed":
        size = schema.get("size")
        if not isinstance(size, int) or size < 0:
            raise ValueError(f"fixed type with size {size!r}")
        return size
    return min_record_size(kind, named, depth + 1)


# -- block codecs --------------------------------------------------------------------------------


def _snappy() -> Any:
    try:
        import cramjam
    except ImportError:
        raise UnsupportedError(
            "Avro's snappy codec needs the cramjam package (pip install cramjam); or write with "
            "'file.compression' = 'zstd'"
        ) from None
    return cramjam.snappy


def compress_block(codec: str, data: bytes | memoryview, level: int | None = None) -> bytes:
    """``data`` compressed as Avro's ``codec`` stores a block."""
    if codec == "null":
        return bytes(data)
    if codec == "zstandard":
        import zstandard

        return zstandard.ZstdCompressor(level=3 if level is None else level).compress(data)
    if codec == "deflate":
        c = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush()
    if codec == "snappy":
        crc = zlib.crc32(data).to_bytes(4, "big")
        return bytes(_snappy().compress_raw(bytes(data))) + crc
    if codec == "bzip2":
        return bz2.compress(data)
    if codec == "xz":
        return lzma.compress(data)
    raise UnsupportedError(f"Avro codec {codec!r} is not supported")


def inflate_block(codec: str, block: bytes, limit: int = MAX_BLOCK_BYTES) -> bytes:
    """A block's records, decompressed; ValueError past ``limit`` bytes or for a damaged block."""
    if codec == "null":
        return block
    if codec == "zstandard":
        import zstandard

        try:
            with zstandard.ZstdDecompressor().stream_reader(block, read_across_frames=True) as reader:
                out = reader.read(limit + 1)
                # read() may return less than asked before the end: keep reading up to the limit.
                pieces = [out]
                total = len(out)
                while total <= limit and (chunk := reader.read(min(_CHUNK, limit + 1 - total))):
                    pieces.append(chunk)
                    total += len(chunk)
        except zstandard.ZstdError as e:
            raise ValueError(f"zstandard block: {e}") from None
        data = b"".join(pieces)
    elif codec == "deflate":
        d = zlib.decompressobj(-15)
        try:
            data = d.decompress(block, limit + 1)
        except zlib.error as e:
            raise ValueError(f"deflate block: {e}") from None
    elif codec == "snappy":
        if len(block) < 4:
            raise ValueError("snappy block shorter than its checksum")
        try:
            data = bytes(_snappy().decompress_raw(block[:-4]))
        except Exception as e:  # cramjam raises its own DecompressionError
            raise ValueError(f"snappy block: {e}") from None
        if zlib.crc32(data).to_bytes(4, "big") != block[-4:]:
            raise ValueError("snappy block's checksum does not match its records")
    elif codec == "bzip2":
        try:
            data = bz2.BZ2Decompressor().decompress(block, limit + 1)
        except OSError as e:
            raise ValueError(f"bzip2 block: {e}") from None
    elif codec == "xz":
        try:
            data = lzma.LZMADecompressor().decompress(block, limit + 1)
        except lzma.LZMAError as e:
            raise ValueError(f"xz block: {e}") from None
    else:
        raise ValueError(f"codec {codec!r} is not an Avro codec stratalake reads")
    if len(data) > limit:
        raise ValueError(f"a block inflates to more than {limit} bytes")
    return data


# -- the container -------------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


class Cursor:
    """Reads Avro's zig-zag longs and byte runs from ``data``; ValueError past its end."""

    def __init__(self, data: bytes | memoryview) -> None:
        self.data = data
        self.pos = 0

    def long(self) -> int:
        shift = result = 0
        while True:
            if shift > 63:
                raise ValueError(f"varint longer than 10 bytes at byte {self.pos}")
            if self.pos >= len(self.data):
                raise ValueError(f"the file ends inside a varint at byte {self.pos}")
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"a length of {n} at byte {self.pos} runs past the end ({len(self.data)} bytes)")
        out = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return out


def read_header(r: Cursor) -> tuple[dict[str, bytes], bytes]:
    """(metadata, sync marker) of the container header at ``r``, which is left after it."""
    if r.take(4) != MAGIC:
        raise ValueError("no Avro magic bytes")
    meta: dict[str, bytes] = {}
    while (count := r.long()) != 0:
        if count < 0:
            count = -count
            r.long()  # the block's byte size
        for _ in range(count):
            key = r.take(r.long()).decode("utf-8", "replace")
            meta[key] = r.take(r.long())
    return meta, r.take(SYNC_SIZE)


@dataclass(frozen=True)
class Block:
    """One block of a container: its record count and its records' bytes, decompressed."""

    count: int
    records: bytes


class ContainerReader:
    """An Avro object container in memory: its header on construction, its blocks on demand.

    Every block is checked before anyone decodes it: its sync marker, its size once decompressed
    (:data:`MAX_BLOCK_BYTES`), and its record count against what its bytes can hold
    (:func:`min_record_size`). ValueError says what is wrong.
    """

    def __init__(self, data: bytes | memoryview) -> None:
        self._data = data
        r = Cursor(data)
        meta, self.sync = read_header(r)
        try:
            self.schema: Any = json.loads(meta.get("avro.schema", b"null"))
        except ValueError as e:
            raise ValueError(f"its schema is not JSON: {e}") from None
        self.codec = meta.get("avro.codec", b"null").decode("utf-8", "replace")
        self.metadata = meta
        self._record_size = min_record_size(self.schema)
        if self._record_size == 0:
            raise ValueError("its records take no bytes")
        self._start = r.pos

    def block_counts(self) -> list[int]:
        """Every block's record count, from the block headers (nothing decompressed)."""
        counts = []
        for count, _, _ in self._frames():
            counts.append(count)
        return counts

    def blocks(self) -> Iterator[Block]:
        """The blocks in file order, decompressed and checked."""
        for count, start, end in self._frames():
            records = inflate_block(self.codec, bytes(self._data[start:end]))
            if count > len(records) // self._record_size:
                raise ValueError(f"a block of {len(records)} bytes cannot hold {count} records")
            yield Block(count, records)

    def _frames(self) -> Iterator[tuple[int, int, int]]:
        r = Cursor(self._data)
        r.pos = self._start
        while r.pos < len(self._data):
            count, size = r.long(), r.long()
            if count < 0 or size < 0:
                raise ValueError(f"a block at byte {r.pos} has a negative count or size")
            start = r.pos
            r.pos += size
            if r.take(SYNC_SIZE) != self.sync:
                raise ValueError(
                    f"the sync marker after the block at byte {start} does not match the header's"
                )
            yield count, start, start + size


def _header(schema: Any, codec: str, sync: bytes) -> bytes:
    meta = {"avro.schema": json.dumps(schema).encode(), "avro.codec": codec.encode()}
    header = bytearray(MAGIC)
    header += _varint(len(meta))
    for key, value in meta.items():
        header += _varint(len(key)) + key.encode() + _varint(len(value)) + value
    header += _varint(0) + sync
    return bytes(header)


class ContainerWriter:
    """An Avro object container written to ``sink``: records given as their encodings
    (:func:`encode_records`), cut into blocks of about :data:`BLOCK_BYTES`."""

    def __init__(self, sink: BinaryIO, schema: dict[str, Any], codec: str, level: int | None = None) -> None:
        compress_block(codec, b"", level)  # an unknown or unavailable codec fails before any byte
        self._sink = sink
        self._codec = codec
        self._level = level
        self._sync = os.urandom(SYNC_SIZE)
        self._pending: pa.LargeBinaryArray | None = None
        sink.write(_header(schema, codec, self._sync))

    def write(self, records: pa.LargeBinaryArray) -> None:
        """Append encoded records; full blocks go to the sink, the rest waits for more."""
        if self._pending is not None and len(self._pending):
            records = pa.concat_arrays([self._pending, records])
        offsets, data = _parts(records)
        # As Avro Java: a block ends with the record that brings it to BLOCK_BYTES or more; what
        # follows the last full block waits. One search per block, not per record.
        start = 0
        while True:
            end = int(np.searchsorted(offsets, offsets[start] + BLOCK_BYTES, side="left"))
            if end >= len(offsets):
                break
            self._block(end - start, data, int(offsets[start]), int(offsets[end]))
            start = end
        self._pending = records.slice(start) if start < len(records) else None

    def flush(self) -> None:
        """Write the records still waiting as a last block."""
        if self._pending is not None and len(self._pending):
            offsets, data = _parts(self._pending)
            self._block(len(self._pending), data, int(offsets[0]), int(offsets[-1]))
        self._pending = None

    def _block(self, count: int, data: pa.Buffer, start: int, end: int) -> None:
        body = compress_block(self._codec, memoryview(data)[start:end], self._level)
        self._sink.write(_varint(count) + _varint(len(body)))
        self._sink.write(body)
        self._sink.write(self._sync)


# -- encoding ------------------------------------------------------------------------------------


def _parts(arr: pa.Array) -> tuple[np.ndarray, pa.Buffer]:
    """(offsets of the array's ``len + 1`` values, data buffer) of a large_binary array."""
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = bufs[2] if bufs[2] is not None else pa.py_buffer(b"")
    return offsets, data


def _binary(offsets: np.ndarray, data: pa.Buffer | np.ndarray) -> pa.LargeBinaryArray:
    buf = data if isinstance(data, pa.Buffer) else pa.py_buffer(np.ascontiguousarray(data))
    offs = pa.py_buffer(np.ascontiguousarray(offsets, dtype=np.int64))
    return pa.Array.from_buffers(pa.large_binary(), len(offsets) - 1, [None, offs, buf])


def _fixed(values: np.ndarray, width: int) -> pa.LargeBinaryArray:
    """Values of ``width`` bytes each (already little-endian) as one binary value each."""
    n = len(values)
    return _binary(np.arange(n + 1, dtype=np.int64) * width, np.ascontiguousarray(values).view(np.uint8))


_VARINT_LIMITS: Final = np.array([1 << (7 * k) for k in range(1, 10)], dtype=np.uint64)


def varints(values: np.ndarray) -> pa.LargeBinaryArray:
    """Avro's zig-zag varint of every int64 in ``values``, one binary value each."""
    v = np.ascontiguousarray(values, dtype=np.int64)
    z = ((v << 1) ^ (v >> 63)).view(np.uint64)
    lengths = np.searchsorted(_VARINT_LIMITS, z, side="right").astype(np.int64) + 1
    offsets = np.zeros(len(z) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.empty(int(offsets[-1]), np.uint8)
    # Byte j of every value at least j + 1 bytes long, one pass per byte position (most values
    # take a few bytes; the passes narrow to the values still going).
    positions, rest, left = offsets[:-1], z, lengths
    for j in range(int(lengths.max()) if len(z) else 0):
        if j:
            going = left > j
            if not going.all():
                positions, rest, left = positions[going], rest[going], left[going]
        byte = (rest >> np.uint64(7 * j)).astype(np.uint8) & np.uint8(0x7F)
        byte |= (left > j + 1).astype(np.uint8) << np.uint8(7)
        data[positions + j] = byte
    return _binary(offsets, data)


def _join(pieces: Sequence[pa.Array]) -> pa.LargeBinaryArray:
    if len(pieces) == 1:
        return pieces[0]
    return pc.binary_join_element_wise(*pieces, _EMPTY)


def _decimal_bytes(arr: pa.Array) -> pa.LargeBinaryArray:
    """Each decimal's unscaled value as the fewest big-endian two's-complement bytes (Java's
    ``BigInteger.toByteArray``), prefixed by their count."""
    n = len(arr)
    if n == 0:
        return _binary(np.zeros(1, np.int64), np.zeros(0, np.uint8))
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * 16 : (arr.offset + n) * 16]
    big = raw.reshape(n, 16)[:, ::-1]  # little-endian int128 -> big-endian
    sign = np.where(big[:, :1] >= 0x80, np.uint8(0xFF), np.uint8(0))
    # A leading byte is redundant while it is all sign bits and the next byte keeps the sign.
    redundant = (big[:, :-1] == sign) & ((big[:, 1:] >= 0x80) == (sign == 0xFF))
    drop = np.where(redundant.all(axis=1), 15, np.argmin(redundant, axis=1))
    lengths = 16 - drop
    data = big[np.arange(16)[None, :] >= drop[:, None]]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return _join([varints(lengths), _binary(offsets, data)])


def _numbers(arr: pa.Array, dtype: Any) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False)).astype(dtype, copy=False)


def _tagged(tags: np.ndarray, piece: pa.Array, present: np.ndarray | None) -> pa.LargeBinaryArray:
    """Row i: the byte ``tags[i]``, then (where ``present`` is True, or always when None) the
    next value of ``piece``, which holds the present rows' values only."""
    offsets, data = _parts(piece)
    lengths = np.diff(offsets)
    if present is not None:
        full = np.zeros(len(tags), dtype=np.int64)
        full[present] = lengths
        lengths = full
    out_offsets = np.zeros(len(tags) + 1, dtype=np.int64)
    np.cumsum(lengths + 1, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
    heads = out_offsets[:-1]
    values = np.ones(len(out), dtype=bool)
    values[heads] = False
    out[heads] = tags
    out[values] = np.frombuffer(data, dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])]
    return _binary(out_offsets, out)


def _encode(schema: Any, arr: pa.Array, where: str) -> pa.LargeBinaryArray:
    """Every value of ``arr`` encoded as Avro type ``schema``; nulls only under a union."""
    if isinstance(schema, list):
        inner, null_index, value_index = _nullable_branch(schema)
        if not arr.null_count:
            return _tagged(np.full(len(arr), 2 * value_index, np.uint8), _encode(inner, arr, where), None)
        # Only the present rows are encoded: a null row's slot (and a null struct's children, a
        # null list's items) is no value of the file's.
        valid = arr.is_valid()
        present = valid.to_numpy(zero_copy_only=False)
        tags = np.where(present, 2 * value_index, 2 * null_index).astype(np.uint8)
        return _tagged(tags, _encode(inner, arr.filter(valid), where), present)
    if arr.null_count:
        raise ValueError(f"column {where} holds nulls but its Avro type {json.dumps(schema)} is not nullable")
    if isinstance(schema, dict):
        kind = schema.get("type")
        if schema.get("logicalType") == "decimal":
            return _decimal_bytes(arr)
        if kind == "record":
            assert isinstance(arr, pa.StructArray)
            return _join(
                [_encode(f["type"], arr.field(f["name"]), f"{where}.{f['name']}") for f in schema["fields"]]
            )
        if kind == "array" or kind == "map":
            return _encode_array(schema, arr, where)
        return _encode(kind, arr, where)
    if schema in ("int", "long"):
        return varints(_numbers(arr, np.int64))
    if schema == "boolean":
        return _fixed(_numbers(arr, np.uint8), 1)
    if schema == "float":
        return _fixed(_numbers(arr, "<f4"), 4)
    if schema == "double":
        return _fixed(_numbers(arr, "<f8"), 8)
    if schema in ("string", "bytes"):
        values = arr.cast(pa.large_binary())
        lengths = pc.binary_length(values).to_numpy(zero_copy_only=False)
        return _join([varints(lengths), values])
    raise UnsupportedError(f"column {where}: Avro type {schema!r} is not written by stratalake")


def _encode_array(schema: dict[str, Any], arr: pa.Array, where: str) -> pa.LargeBinaryArray:
    """Arrays (and maps: both are blocks of items) as one block of all items, then 0."""
    assert isinstance(arr, pa.ListArray | pa.LargeListArray)
    offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    values = arr.values.slice(first, last - first)
    counts = np.diff(offsets)
    if schema["type"] == "map":
        # A map's item is its key (a string) then its value: a (key, value) record's encoding.
        assert isinstance(values, pa.StructArray)
        items = _join(
            [
                _encode("string", values.field("key"), f"{where}.key"),
                _encode(schema["values"], values.field("value"), f"{where}.value"),
            ]
        )
    else:
        items = _encode(schema["items"], values, f"{where}[]")
    item_offsets, item_data = _parts(items)
    content = _binary(item_offsets[offsets - first], item_data)
    # A count, the items, and the 0 that ends the array; an empty array is the 0 alone.
    heads = varints(counts)
    if (counts == 0).any():
        heads = pc.if_else(pa.array(counts == 0), _EMPTY, heads)
    ends = _fixed(np.zeros(len(counts), np.uint8), 1)
    return _join([heads, content, ends])


def encode_records(schema: dict[str, Any], batch: pa.RecordBatch) -> pa.LargeBinaryArray:
    """Every row of ``batch`` as the bytes of an Avro record of ``schema`` (a record whose fields
    name ``batch``'s columns; temporal columns as the integers Avro stores)."""
    if len(batch) == 0:
        return _binary(np.zeros(1, np.int64), np.zeros(0, np.uint8))
    rows = pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema))
    return _encode(schema, rows, str(schema.get("name", "record")))


# -- decoding ------------------------------------------------------------------------------------


def _for_polars(schema: Any, names: Iterator[str]) -> Any:
    """``schema`` as polars' Avro reader takes it: maps as arrays of (key, value) records (the
    same bytes: a map's item is its key then its value)."""
    if isinstance(schema, list):
        return [_for_polars(s, names) for s in schema]
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if kind == "record":
        return {**schema, "fields": [{**f, "type": _for_polars(f["type"], names)} for f in schema["fields"]]}
    if kind == "map":
        entry = {
            "type": "record",
            "name": next(names),
            "fields": [
                {"name": "key", "type": "string"},
                {"name": "value", "type": _for_polars(schema["values"], names)},
            ],
        }
        return {"type": "array", "items": entry}
    if kind == "array":
        return {**schema, "items": _for_polars(schema["items"], names)}
    return schema


def _conform(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """A column polars decoded, as the Arrow type :func:`arrow_type` gives its Avro type."""
    if isinstance(arr, pa.ChunkedArray):
        raise TypeError("chunks are conformed one by one")
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_map(t) or pa.types.is_list(t):
        assert isinstance(arr, pa.ListArray | pa.LargeListArray)
        offsets = arr.offsets.cast(pa.int32())
        if pa.types.is_map(t):
            entries = arr.values
            assert isinstance(entries, pa.StructArray)
            keys = _conform(entries.field("key"), t.key_type)
            items = _conform(entries.field("value"), t.item_type)
            return pa.MapArray.from_arrays(offsets, keys, items, type=t, mask=mask)
        return pa.ListArray.from_arrays(offsets, _conform(arr.values, t.value_type), type=t, mask=mask)
    if pa.types.is_struct(t):
        assert isinstance(arr, pa.StructArray)
        children = [_conform(arr.field(f.name), f.type) for f in t]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_timestamp(t):
        # polars names Avro's timestamps UTC and its local-timestamps naive: the stored
        # integers are what Paimon means, only the zone is swapped.
        return arr.view(pa.int64()).view(t) if arr.type.bit_width == 64 else arr.cast(t)
    return arr.cast(t)


def _container(schema: Any, blocks: Sequence[Block]) -> io.BytesIO:
    """An uncompressed container of ``blocks``' records under ``schema``, for a reader to decode."""
    sync = bytes(SYNC_SIZE)
    container = io.BytesIO()
    container.write(_header(schema, "null", sync))
    for block in blocks:
        container.write(_varint(block.count) + _varint(len(block.records)))
        container.write(block.records)
        container.write(sync)
    container.seek(0)
    return container


def decode_blocks(
    schema: Any, blocks: Sequence[Block], columns: Sequence[str], target: pa.Schema
) -> pa.Table:
    """The ``columns`` of the records in ``blocks`` (of a container whose writer schema is
    ``schema``: a record, or a union of null and a record) as ``target``'s types.

    Decoded by polars; where polars is not installed (Spark executors given stratalake as a zip,
    ``session(ship_packages=True)``, whose Python holds only pyspark's dependencies), by fastavro's
    records, as slow as that is. ValueError for records the bytes do not hold, or a null row of a
    union schema."""
    try:
        import polars as pl
    except ImportError:
        return _decode_records(schema, blocks, columns, target)
    wrapped = isinstance(schema, list)
    names = (f"stratalake_entry_{i}" for i in itertools.count())
    readable = _for_polars(schema, names)
    if wrapped:
        # A record of one field whose type is the union: the same bytes as the union itself.
        readable = {"type": "record", "name": "stratalake_row", "fields": [{"name": "row", "type": readable}]}
    expected = sum(b.count for b in blocks)
    try:
        frame = pl.read_avro(_container(readable, blocks), columns=["row"] if wrapped else list(columns))
    except BaseException as e:  # a polars panic is a BaseException (pyo3's PanicException)
        if isinstance(e, KeyboardInterrupt | SystemExit | MemoryError):
            raise
        raise ValueError(
            f"its records do not decode: {type(e).__name__}: {str(e).splitlines()[0][:300]}"
        ) from None
    table = frame.to_arrow()
    if table.num_rows != expected:
        raise ValueError(f"its blocks declare {expected} records but {table.num_rows} decode")
    if expected == 0:
        return target.empty_table()
    if wrapped:
        rows = table.column("row")
        if rows.null_count:
            raise ValueError("it holds a null row (the union's null branch)")
        table = pa.Table.from_batches([pa.RecordBatch.from_struct_array(c) for c in rows.chunks])
        table = table.select(list(columns))
    arrays = []
    for name, field in zip(columns, target, strict=True):
        column = table.column(name)
        arrays.append(pa.chunked_array([_conform(c, field.type) for c in column.chunks], type=field.type))
    return pa.Table.from_arrays(arrays, schema=target)


def _py_value(value: Any, t: pa.DataType) -> Any:
    """A fastavro value as pyarrow takes it for ``t`` (maps as key/value pairs)."""
    if value is None:
        return None
    if pa.types.is_map(t):
        if isinstance(value, dict):
            return [(k, _py_value(v, t.item_type)) for k, v in value.items()]
        return [(e["key"], _py_value(e["value"], t.item_type)) for e in value]
    if pa.types.is_struct(t):
        return {f.name: _py_value(value.get(f.name), f.type) for f in t}
    if pa.types.is_list(t):
        return [_py_value(v, t.value_type) for v in value]
    return value


def _decode_records(
    schema: Any, blocks: Sequence[Block], columns: Sequence[str], target: pa.Schema
) -> pa.Table:
    """:func:`decode_blocks` through fastavro's records (a Python object a value)."""
    import fastavro

    try:
        rows: list[Any] = list(fastavro.reader(_container(schema, blocks)))
    except Exception as e:  # fastavro raises ValueError, EOFError, its own errors...
        raise ValueError(f"its records do not decode: {type(e).__name__}: {e}") from None
    if len(rows) != sum(b.count for b in blocks):
        raise ValueError(f"its blocks declare {sum(b.count for b in blocks)} records but {len(rows)} decode")
    if any(r is None for r in rows):
        raise ValueError("it holds a null row (the union's null branch)")
    arrays = []
    for name, field in zip(columns, target, strict=True):
        values = [_py_value(r[name], field.type) for r in rows]
        arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, schema=target)
