"""Java ``BinaryRow`` codec (docs/format.md section 7).

Serialized rows (partitions, min/max keys, stats) are a 4-byte big-endian arity followed by the
row bytes; the bucket hash runs over the row bytes alone. Layout of the row bytes:

* header + null bits: ``((arity + 63 + 8) // 64) * 8`` bytes; byte 0 is the row kind (always 0
  here), field ``i`` is null when bit ``i + 8`` is set (LSB first);
* one 8-byte little-endian slot per field (fixed-width values, inline strings of <= 7 bytes, or
  ``(offset << 32) | length`` pointing into the variable part);
* the variable part: long strings/bytes padded to 8 bytes, non-compact decimals (16 bytes) and
  non-compact timestamps (8 bytes of epoch millis; the slot keeps the nanos of the milli).

:func:`encode_row` / :func:`decode_row` work on Python values, one row at a time (metadata).
:func:`encode_arrow_rows` encodes whole Arrow columns with numpy for bucket hashing.

>>> from stratalake.types import BigIntType
>>> encode_row_body([4], [BigIntType()]).hex()
'00000000000000000400000000000000'
>>> decode_row(encode_row([4, None], [BigIntType(), BigIntType()]), [BigIntType(), BigIntType()])
(4, None)
"""

from __future__ import annotations

import datetime as _dt
import decimal
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import CorruptFileError, InvalidDataError, UnsupportedError
from stratalake.types import (
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    RowType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
    to_arrow,
)

__all__ = [
    "EMPTY_ROW",
    "EncodedRows",
    "decode_row",
    "decode_row_body",
    "encode_arrow_rows",
    "encode_row",
    "encode_row_body",
    "fixed_part_size",
    "null_bits_size",
    "row_arity",
]

#: The serialized row of arity 0 (arity prefix + 8-byte header).
EMPTY_ROW: bytes = b"\x00\x00\x00\x00" + bytes(8)

_MAX_INLINE = 7  # strings/bytes up to this many bytes live in the slot itself
_EPOCH = _dt.datetime(1970, 1, 1)
_EXACT = decimal.Context(prec=80)  # the default context (28 digits) would round DECIMAL(38, s)
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_NESTED = (ArrayType, MapType, MultisetType, RowType)
_UNIT_NANOS = {
    "D": 86_400_000_000_000,
    "h": 3_600_000_000_000,
    "m": 60_000_000_000,
    "s": 1_000_000_000,
    "ms": 1_000_000,
    "us": 1000,
    "ns": 1,
}


def null_bits_size(arity: int) -> int:
    """Bytes of the header + null bit set of a row with ``arity`` fields."""
    return ((arity + 63 + 8) // 64) * 8


def fixed_part_size(arity: int) -> int:
    """Bytes of the fixed part (header, null bits and one 8-byte slot per field)."""
    return null_bits_size(arity) + 8 * arity


def row_arity(data: bytes) -> int:
    """The arity of a serialized row (its 4-byte big-endian prefix)."""
    if len(data) < 4:
        raise CorruptFileError(f"binary row of {len(data)} bytes has no arity prefix")
    return int.from_bytes(data[:4], "big", signed=True)


def _is_string(dt: DataType) -> bool:
    return isinstance(dt, CharType | VarCharType)


def _is_binary(dt: DataType) -> bool:
    return isinstance(dt, BinaryType | VarBinaryType)


def _is_noncompact(dt: DataType) -> bool:
    """Types whose value (and even null) takes room in the variable part, as in Java's RowHelper."""
    if isinstance(dt, DecimalType | TimestampType | LocalZonedTimestampType):
        return not dt.is_compact
    return False


# --------------------------------------------------------------------------------------------
# Python values <-> internal values


def _epoch_nanos(value: object, dt: DataType) -> int:
    """Nanoseconds since the epoch of a datetime (wall clock for TIMESTAMP, UTC instant for LTZ).

    ``numpy.datetime64`` values are read exactly, whatever their unit (stats pass them so that
    nanoseconds survive without pandas).
    """
    if isinstance(value, np.datetime64):
        unit, count = np.datetime_data(value.dtype)
        if unit not in _UNIT_NANOS:
            raise InvalidDataError(f"unsupported datetime64 unit {unit!r} for {dt}")
        return int(value.astype(np.int64)) * count * _UNIT_NANOS[unit]
    if not isinstance(value, _dt.datetime):
        raise InvalidDataError(f"expected a datetime for {dt}, got {value!r}")
    if value.tzinfo is not None:
        # An aware value is an instant; store it as UTC, as pyarrow does for both kinds.
        value = value.astimezone(_dt.UTC).replace(tzinfo=None)
    delta = value - _EPOCH
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    # pandas.Timestamp (a datetime subclass) carries sub-microsecond digits here.
    return micros * 1000 + int(getattr(value, "nanosecond", 0))


def _from_epoch_nanos(nanos: int, dt: DataType) -> _dt.datetime:
    value = _EPOCH + _dt.timedelta(microseconds=nanos // 1000)
    return value.replace(tzinfo=_dt.UTC) if isinstance(dt, LocalZonedTimestampType) else value


def _unscaled(value: object, dt: DecimalType) -> int:
    if isinstance(value, float):
        value = decimal.Decimal(repr(value))
    if not isinstance(value, decimal.Decimal | int):
        raise InvalidDataError(f"expected a Decimal for {dt}, got {value!r}")
    # Java's Decimal.fromBigDecimal rounds HALF_UP to the type's scale.
    scaled = decimal.Decimal(value).scaleb(dt.scale, _EXACT)
    unscaled = int(scaled.quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP, context=_EXACT))
    if abs(unscaled) >= 10**dt.precision:
        raise InvalidDataError(f"value {value} does not fit {dt}")
    return unscaled


def _java_big_integer_bytes(v: int) -> bytes:
    """``BigInteger.toByteArray()``: minimal big-endian two's complement."""
    n = (v if v >= 0 else ~v).bit_length() // 8 + 1
    return v.to_bytes(n, "big", signed=True)


def _fixed_slot(value: object, dt: DataType) -> bytes:
    """The 8 slot bytes of a non-null fixed-width value."""
    if isinstance(dt, BooleanType):
        return b"\x01" + bytes(7) if value else bytes(8)
    if isinstance(dt, TinyIntType):
        return struct.pack("<b", value) + bytes(7)
    if isinstance(dt, SmallIntType):
        return struct.pack("<h", value) + bytes(6)
    if isinstance(dt, IntType):
        return struct.pack("<i", value) + bytes(4)
    if isinstance(dt, BigIntType):
        return _I64.pack(value)
    if isinstance(dt, FloatType):
        return struct.pack("<f", value) + bytes(4)
    if isinstance(dt, DoubleType):
        return struct.pack("<d", value)
    if isinstance(dt, DateType):
        if isinstance(value, _dt.datetime) or not isinstance(value, _dt.date | int):
            raise InvalidDataError(f"expected a date for {dt}, got {value!r}")
        days = value if isinstance(value, int) else value.toordinal() - _EPOCH_ORDINAL
        return struct.pack("<i", days) + bytes(4)
    if isinstance(dt, TimeType):
        if isinstance(value, _dt.time):
            millis = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
        elif isinstance(value, int):
            millis = value
        else:
            raise InvalidDataError(f"expected a time for {dt}, got {value!r}")
        return struct.pack("<i", millis) + bytes(4)
    if isinstance(dt, DecimalType):  # compact
        return _I64.pack(_unscaled(value, dt))
    if isinstance(dt, TimestampType | LocalZonedTimestampType):  # compact
        return _I64.pack(_epoch_nanos(value, dt) // 1_000_000)
    raise UnsupportedError(f"binary rows do not support values of type {dt}")


def _check_types(n_values: int, types: Sequence[DataType]) -> None:
    if n_values != len(types):
        raise InvalidDataError(f"{n_values} values for a row of {len(types)} types")


def encode_row_body(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """Java BinaryRow bytes of one row, without the arity prefix (what the bucket hash reads)."""
    _check_types(len(values), types)
    arity = len(types)
    header = null_bits_size(arity)
    fixed = bytearray(header + 8 * arity)
    var = bytearray()
    for i, (value, dt) in enumerate(zip(values, types, strict=True)):
        slot = header + 8 * i
        if value is None:
            bit = i + 8
            fixed[bit // 8] |= 1 << (bit % 8)
            if _is_noncompact(dt):
                # Java reserves the variable-length room even for null (RowHelper.writeNulls).
                size = 16 if isinstance(dt, DecimalType) else 8
                fixed[slot : slot + 8] = _U64.pack((len(fixed) + len(var)) << 32)
                var += bytes(size)
            continue
        if _is_string(dt) or _is_binary(dt):
            if _is_string(dt):
                if not isinstance(value, str):
                    raise InvalidDataError(f"expected a str for {dt}, got {value!r}")
                raw = value.encode("utf-8")
            else:
                if not isinstance(value, bytes | bytearray | memoryview):
                    raise InvalidDataError(f"expected bytes for {dt}, got {value!r}")
                raw = bytes(value)
            if len(raw) <= _MAX_INLINE:
                fixed[slot : slot + len(raw)] = raw
                fixed[slot + 7] = 0x80 | len(raw)
            else:
                fixed[slot : slot + 8] = _U64.pack(((len(fixed) + len(var)) << 32) | len(raw))
                var += raw + bytes(-len(raw) % 8)
        elif isinstance(dt, DecimalType) and not dt.is_compact:
            raw = _java_big_integer_bytes(_unscaled(value, dt))
            fixed[slot : slot + 8] = _U64.pack(((len(fixed) + len(var)) << 32) | len(raw))
            var += raw + bytes(16 - len(raw))
        elif isinstance(dt, TimestampType | LocalZonedTimestampType) and not dt.is_compact:
            millis, nano_of_milli = divmod(_epoch_nanos(value, dt), 1_000_000)
            fixed[slot : slot + 8] = _U64.pack(((len(fixed) + len(var)) << 32) | nano_of_milli)
            var += _I64.pack(millis)
        elif isinstance(dt, _NESTED):
            raise UnsupportedError(f"binary rows of nested type {dt} are not supported")
        else:
            fixed[slot : slot + 8] = _fixed_slot(value, dt)
    return bytes(fixed + var)


def encode_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """Serialized BinaryRow of one row: 4-byte big-endian arity + the row bytes.

    Values: bool, int, float, str, bytes, Decimal, datetime.date / .time / .datetime, or None.
    """
    return struct.pack(">i", len(types)) + encode_row_body(values, types)


def decode_row_body(body: bytes, types: Sequence[DataType]) -> tuple[object, ...]:
    """Python values of the row bytes (without arity prefix) read with ``types``."""
    arity = len(types)
    header = null_bits_size(arity)
    if len(body) < header + 8 * arity:
        raise CorruptFileError(f"binary row of {len(body)} bytes is too short for {arity} fields")
    out: list[object] = []
    for i, dt in enumerate(types):
        bit = i + 8
        if body[bit // 8] & (1 << (bit % 8)):
            out.append(None)
            continue
        slot = header + 8 * i
        word = _U64.unpack_from(body, slot)[0]
        try:
            out.append(_decode_value(body, slot, word, dt))
        except (UnicodeDecodeError, ValueError, OverflowError, struct.error) as e:
            # Garbage bytes: invalid UTF-8, out-of-range dates/times, offsets past the end.
            raise CorruptFileError(f"binary row field {i} ({dt}) cannot be decoded: {e}") from e
    return tuple(out)


def _var_bytes(body: bytes, word: int) -> bytes:
    offset, length = word >> 32, word & 0xFFFFFFFF
    if offset + length > len(body):
        raise CorruptFileError(f"binary row field points past the row end ({offset}+{length} > {len(body)})")
    return body[offset : offset + length]


def _decode_value(body: bytes, slot: int, word: int, dt: DataType) -> object:
    if _is_string(dt) or _is_binary(dt):
        inline = word & (0x80 << 56)
        raw = body[slot : slot + ((word >> 56) & 0x7F)] if inline else _var_bytes(body, word)
        return raw.decode("utf-8") if _is_string(dt) else bytes(raw)
    if isinstance(dt, BooleanType):
        return body[slot] != 0
    if isinstance(dt, TinyIntType):
        return struct.unpack_from("<b", body, slot)[0]
    if isinstance(dt, SmallIntType):
        return struct.unpack_from("<h", body, slot)[0]
    if isinstance(dt, IntType):
        return struct.unpack_from("<i", body, slot)[0]
    if isinstance(dt, BigIntType):
        return _I64.unpack_from(body, slot)[0]
    if isinstance(dt, FloatType):
        return struct.unpack_from("<f", body, slot)[0]
    if isinstance(dt, DoubleType):
        return struct.unpack_from("<d", body, slot)[0]
    if isinstance(dt, DateType):
        return _dt.date.fromordinal(struct.unpack_from("<i", body, slot)[0] + _EPOCH_ORDINAL)
    if isinstance(dt, TimeType):
        millis = struct.unpack_from("<i", body, slot)[0]
        if not 0 <= millis < 86_400_000:
            raise ValueError(f"time of day {millis} ms is outside 0..86399999")
        return (_dt.datetime.min + _dt.timedelta(milliseconds=millis)).time()
    if isinstance(dt, DecimalType):
        if dt.is_compact:
            unscaled = _I64.unpack_from(body, slot)[0]
        else:
            unscaled = int.from_bytes(_var_bytes(body, word), "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-dt.scale, _EXACT)
    if isinstance(dt, TimestampType | LocalZonedTimestampType):
        if dt.is_compact:
            nanos = _I64.unpack_from(body, slot)[0] * 1_000_000
        else:
            offset = word >> 32
            nanos = _I64.unpack_from(body, offset)[0] * 1_000_000 + (word & 0xFFFFFFFF)
        return _from_epoch_nanos(nanos, dt)
    raise UnsupportedError(f"binary rows of type {dt} cannot be decoded")


def decode_row(data: bytes, types: Sequence[DataType]) -> tuple[object, ...]:
    """Python values of a serialized row (with arity prefix); the arity must match ``types``."""
    arity = row_arity(data)
    if arity != len(types):
        raise CorruptFileError(f"binary row has arity {arity} but {len(types)} types were given")
    return decode_row_body(data[4:], types)


# --------------------------------------------------------------------------------------------
# Vectorized encoding of Arrow columns


@dataclass(frozen=True, slots=True)
class EncodedRows:
    """Rows of one byte length: ``data[j]`` is the row bytes (no arity prefix) of input row ``rows[j]``."""

    rows: npt.NDArray[np.int64]  # indices into the input columns
    data: npt.NDArray[np.uint8]  # shape (len(rows), length), C-contiguous

    @property
    def length(self) -> int:
        return int(self.data.shape[1])

    @property
    def words(self) -> npt.NDArray[np.uint32]:
        """The rows as little-endian 32-bit words, shape (len(rows), length // 4)."""
        return self.data.view("<u4")

    def row_bytes(self, j: int) -> bytes:
        return bytes(self.data[j])


def _as_array(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _primitive(arr: pa.Array, dtype: npt.DTypeLike) -> npt.NDArray[Any]:
    """Zero-copy numpy view of a fixed-width array's values (null slots hold garbage)."""
    width = np.dtype(dtype).itemsize
    buf = arr.buffers()[1]
    if buf is None:  # all-null arrays may have no value buffer
        return np.zeros(len(arr), dtype=dtype)
    start = arr.offset * width
    return np.frombuffer(buf, dtype=dtype, count=len(arr), offset=start)


def _null_mask(arr: pa.Array) -> npt.NDArray[np.bool_] | None:
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_null(), dtype=np.bool_)


def _millis_and_nanos(arr: pa.Array) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(epoch millis floored, nanos of the milli) of a timestamp array, without int64 overflow."""
    unit = arr.type.unit
    raw = _primitive(arr, np.int64)
    if unit == "s":
        return raw * 1000, np.zeros(len(raw), np.int64)
    if unit == "ms":
        return raw.copy(), np.zeros(len(raw), np.int64)
    per_milli = 1000 if unit == "us" else 1_000_000
    millis, rest = np.divmod(raw, per_milli)
    return millis, rest * (1_000_000 // per_milli)


def _epoch_millis_array(arr: pa.Array) -> npt.NDArray[np.int64]:
    unit = arr.type.unit
    raw = _primitive(arr, np.int64)
    if unit == "s":
        return raw * 1000
    if unit == "ms":
        return raw
    return raw // (1000 if unit == "us" else 1_000_000)  # floor, as Java's Timestamp.getMillisecond


def _prepare(col: pa.Array | pa.ChunkedArray, dt: DataType) -> pa.Array:
    """The column in the physical form the encoder reads."""
    arr = _as_array(col)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = arr.type
    if _is_string(dt) or _is_binary(dt):
        ok = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
        if not any(f(t) for f in ok):
            arr = arr.cast(pa.large_binary())
        return arr
    if isinstance(dt, TimestampType | LocalZonedTimestampType):
        return arr if pa.types.is_timestamp(t) else arr.cast(to_arrow(dt))
    if isinstance(dt, TimeType):
        return arr if pa.types.is_time(t) else arr.cast(to_arrow(dt))
    target = to_arrow(dt)
    if isinstance(dt, _NESTED):
        raise UnsupportedError(f"binary rows of nested type {dt} are not supported")
    return arr if t == target else arr.cast(target)


def _bool_values(arr: pa.Array) -> npt.NDArray[np.uint64]:
    filled = pc.fill_null(arr, False) if arr.null_count else arr
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.uint64)


def _fixed_slots(arr: pa.Array, dt: DataType) -> npt.NDArray[np.uint64]:
    """Slot words of a fixed-width column (not yet masked for nulls)."""
    if isinstance(dt, BooleanType):
        return _bool_values(arr)
    if isinstance(dt, TinyIntType):
        return _primitive(arr, np.uint8).astype(np.uint64)
    if isinstance(dt, SmallIntType):
        return _primitive(arr, np.uint16).astype(np.uint64)
    if isinstance(dt, TimeType):
        unit = arr.type.unit
        raw = _primitive(arr, np.int32 if pa.types.is_time32(arr.type) else np.int64).astype(np.int64)
        # Paimon keeps millis of the day; finer units are floored.
        millis = (
            raw * 1000
            if unit == "s"
            else raw
            if unit == "ms"
            else raw // (1000 if unit == "us" else 1_000_000)
        )
        return millis.astype(np.uint32).astype(np.uint64)
    if isinstance(dt, IntType | DateType | FloatType):
        # 4 value bytes then 4 zero bytes: zero-extend the raw 32 bits (no sign extension).
        return _primitive(arr, np.uint32).astype(np.uint64)
    if isinstance(dt, BigIntType | DoubleType):
        return _primitive(arr, np.uint64)
    if isinstance(dt, DecimalType):  # compact: the low 64 bits of the 128-bit unscaled value
        return _decimal_words(arr)[:, 0].copy()
    if isinstance(dt, TimestampType | LocalZonedTimestampType):  # compact
        return _epoch_millis_array(arr).view(np.uint64)
    raise UnsupportedError(f"binary rows do not support columns of type {dt}")


def _decimal_words(arr: pa.Array) -> npt.NDArray[np.uint64]:
    """The decimal128 values as (n, 2) uint64: [low, high] little-endian words."""
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros((len(arr), 2), dtype=np.uint64)
    return np.frombuffer(buf, dtype=np.uint64, count=2 * len(arr), offset=16 * arr.offset).reshape(-1, 2)


def _decimal_var_bytes(arr: pa.Array) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Java ``BigInteger.toByteArray()`` of each value, left-aligned in 16 bytes, and its length."""
    words = _decimal_words(arr)
    be = np.ascontiguousarray(words).view(np.uint8)[:, ::-1].copy()  # 128-bit LE reversed = BE
    negative = (be[:, 0] & 0x80) != 0
    mag = np.where(negative[:, None], ~be, be)  # ~v for negatives: same minimal length
    nonzero = mag != 0
    first = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), 15)  # first significant byte
    # One more byte when the top bit of the first significant byte is set (sign room).
    top_set = (mag[np.arange(len(mag)), first] & 0x80) != 0
    start = first - top_set.astype(np.int64)
    length = 16 - start
    idx = np.arange(16)[None, :] + start[:, None]
    out = np.take_along_axis(be, np.minimum(idx, 15), axis=1)
    out[idx > 15] = 0
    return out, length.astype(np.int64)


def _padding(bin_type: pa.DataType) -> pa.Array:
    """``bytes(k)`` for k in 0..7, to be picked per row with ``take``."""
    return pa.array([bytes(k) for k in range(8)], bin_type)


def _join(bin_type: pa.DataType, *parts: pa.Array) -> pa.Array:
    joined = pc.binary_join_element_wise(*parts, pa.scalar(b"", bin_type))
    assert isinstance(joined, pa.Array)
    return joined


def _string_column(
    arr: pa.Array, nulls: npt.NDArray[np.bool_] | None
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64], pa.Array]:
    """Slots of a string/binary column, the byte lengths, and the column as binary.

    Arrow kernels do the byte shuffling: every value is cut to 7 bytes, zero-padded and suffixed
    with its tag byte, so the joined data buffer is exactly one little-endian slot per row.
    """
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    bin_type = pa.large_binary() if large else pa.binary()
    b = arr.cast(bin_type)  # zero-copy
    if nulls is not None:
        b = pc.fill_null(b, pa.scalar(b"", bin_type))
    n = len(b)
    offsets = np.frombuffer(
        b.buffers()[1],
        dtype=np.int64 if large else np.int32,
        count=n + 1,
        offset=b.offset * (8 if large else 4),
    )
    lengths = np.diff(offsets).astype(np.int64)
    short_len = np.minimum(lengths, _MAX_INLINE)
    tags = pa.array([bytes([0x80 | k]) for k in range(8)], bin_type)
    joined = _join(
        bin_type,
        pc.binary_slice(b, 0, _MAX_INLINE),
        _padding(bin_type).take(pa.array(_MAX_INLINE - short_len)),
        tags.take(pa.array(short_len)),
    )
    slots = np.frombuffer(joined.buffers()[2], dtype=np.uint64, count=n).copy()
    return slots, lengths, b


def _padded_words(
    values: pa.Array, lengths: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """The values zero-padded to 8 bytes as one flat uint64 buffer, and each value's first word."""
    bin_type = values.type
    padded = _join(bin_type, values, _padding(bin_type).take(pa.array(-lengths % 8)))
    large = pa.types.is_large_binary(bin_type)
    offsets = np.frombuffer(
        padded.buffers()[1],
        dtype=np.int64 if large else np.int32,
        count=len(padded) + 1,
        offset=padded.offset * (8 if large else 4),
    )
    data = padded.buffers()[2]
    words = (
        np.frombuffer(data, dtype=np.uint64, count=int(offsets[-1] - offsets[0]) // 8, offset=int(offsets[0]))
        if data is not None
        else np.zeros(0, np.uint64)
    )
    return words, (offsets[:-1] - offsets[0]).astype(np.int64) // 8


def _ragged_copy(
    out: npt.NDArray[np.uint64],
    dest_starts: npt.NDArray[np.int64],
    src: npt.NDArray[np.uint64],
    src_starts: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
) -> None:
    """out[dest_starts[i] : +lengths[i]] = src[src_starts[i] : +lengths[i]] for all i, no loop."""
    total = int(lengths.sum())
    if total == 0:
        return
    if np.all(lengths == lengths[0]):  # the common case of same-size values: a 2D gather
        within = np.arange(int(lengths[0]), dtype=np.int64)[None, :]
        out[dest_starts[:, None] + within] = src[src_starts[:, None] + within]
        return
    ends = np.cumsum(lengths)
    within1 = np.arange(total, dtype=np.int64) - np.repeat(ends - lengths, lengths)
    out[np.repeat(dest_starts, lengths) + within1] = src[np.repeat(src_starts, lengths) + within1]


def encode_arrow_rows(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType]
) -> list[EncodedRows]:
    """Row bytes (no arity prefix) of every row of ``columns``, grouped by row length.

    Fixed-width keys give one group; strings longer than 7 bytes (and non-compact decimals and
    timestamps) add a variable part, so rows may differ in length. Every input row appears in
    exactly one group. No Python loop per row: numpy over whole columns and Arrow kernels.
    """
    _check_types(len(columns), types)
    arrays = [_prepare(c, dt) for c, dt in zip(columns, types, strict=True)]
    n = len(arrays[0]) if arrays else 0
    if any(len(a) != n for a in arrays):
        raise InvalidDataError("columns of one batch must have the same length")
    arity = len(types)
    header_words = null_bits_size(arity) // 8
    fixed_words = header_words + arity
    fixed = np.zeros((n, fixed_words), dtype=np.uint64)
    var_words = np.zeros(n, dtype=np.int64)  # size of each row's variable part so far, in words
    # Deferred copies into the variable part: (rows, word offset in row, source words, source
    # word starts, word counts).
    pending: list[
        tuple[
            npt.NDArray[np.int64],
            npt.NDArray[np.int64],
            npt.NDArray[np.uint64],
            npt.NDArray[np.int64],
            npt.NDArray[np.int64],
        ]
    ] = []
    all_rows = np.arange(n, dtype=np.int64)

    for i, (arr, dt) in enumerate(zip(arrays, types, strict=True)):
        nulls = _null_mask(arr)
        if nulls is not None:
            bit = i + 8
            fixed[nulls, bit // 64] |= np.uint64(1 << (bit % 64))
        slot_col = header_words + i
        var_off = fixed_words + var_words  # this field's offset (words) in each row's bytes
        if _is_string(dt) or _is_binary(dt):
            slot, lengths, b = _string_column(arr, nulls)
            lr = np.flatnonzero(lengths > _MAX_INLINE)
            if len(lr):
                slot[lr] = (var_off[lr].astype(np.uint64) << np.uint64(35)) | lengths[lr].astype(np.uint64)
                long_values = b if len(lr) == n else b.take(pa.array(lr))
                words, starts = _padded_words(long_values, lengths[lr])
                n_words = (lengths[lr] + 7) // 8
                pending.append((lr, var_off[lr], words, starts, n_words))
                var_words[lr] += n_words
            if nulls is not None:
                slot[nulls] = 0
            fixed[:, slot_col] = slot
        elif isinstance(dt, DecimalType) and not dt.is_compact:
            payload, lengths = _decimal_var_bytes(arr)
            if nulls is not None:
                lengths[nulls] = 0
                payload[nulls] = 0
            fixed[:, slot_col] = (var_off.astype(np.uint64) << np.uint64(35)) | lengths.astype(np.uint64)
            pending.append(
                (
                    all_rows,
                    var_off,
                    payload.view(np.uint64).reshape(-1),
                    2 * all_rows,
                    np.full(n, 2, np.int64),
                )
            )
            var_words += 2
        elif isinstance(dt, TimestampType | LocalZonedTimestampType) and not dt.is_compact:
            millis, nano_of_milli = _millis_and_nanos(arr)
            if nulls is not None:
                millis[nulls] = 0
                nano_of_milli[nulls] = 0
            fixed[:, slot_col] = (var_off.astype(np.uint64) << np.uint64(35)) | nano_of_milli.astype(
                np.uint64
            )
            pending.append((all_rows, var_off, millis.view(np.uint64), all_rows, np.ones(n, np.int64)))
            var_words += 1
        else:
            slot = _fixed_slots(arr, dt)
            if nulls is not None:
                slot = np.where(nulls, np.uint64(0), slot)
            fixed[:, slot_col] = slot

    if not n:
        return []
    if not pending:
        return [EncodedRows(all_rows, fixed.view(np.uint8))]

    total = fixed_words + var_words
    if np.all(total == total[0]):  # one row length: no sorting, no gathers
        width = int(total[0])
        uniform = np.zeros((n, width), dtype=np.uint64)
        uniform[:, :fixed_words] = fixed
        flat = uniform.reshape(-1)
        for rows, off, src, src_starts, counts in pending:
            _ragged_copy(flat, rows * width + off, src, src_starts, counts)
        return [EncodedRows(all_rows, uniform.view(np.uint8))]
    order = np.argsort(total, kind="stable")
    sorted_total = total[order]
    row_start = np.empty(n, dtype=np.int64)
    row_start[order] = np.cumsum(sorted_total) - sorted_total
    out = np.zeros(int(sorted_total.sum()), dtype=np.uint64)
    for rows, off, src, src_starts, counts in pending:
        _ragged_copy(out, row_start[rows] + off, src, src_starts, counts)

    groups: list[EncodedRows] = []
    boundaries = np.flatnonzero(np.diff(sorted_total)) + 1
    for seg in np.split(all_rows, boundaries):
        rows = order[seg]
        width = int(sorted_total[seg[0]])
        begin = int(row_start[rows[0]])
        block = out[begin : begin + width * len(rows)].reshape(len(rows), width)
        block[:, :fixed_words] = fixed[rows]
        groups.append(EncodedRows(rows, block.view(np.uint8)))
    return groups
