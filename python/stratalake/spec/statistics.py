"""Table statistics files (``statistics/stat-<uuid>-<n>``), Paimon's ``Statistics`` JSON. No I/O.

An ANALYZE commit writes one such file and names it in its snapshot's ``statistics`` field; later
commits carry the name forward while the schema stays the same. The JSON is Jackson's pretty
print of Paimon's ``org.apache.paimon.stats.Statistics``: ``snapshotId``, ``schemaId``,
``mergedRecordCount``, ``mergedRecordSize`` (both left out when unknown) and ``colStats``, a map
from column name to ``ColStats`` (``colId``, then ``distinctCount``, ``min``, ``max``,
``nullCount``, ``avgLen``, ``maxLen``, each left out when unknown). ``min``/``max`` are strings,
serialised per type as Paimon's ``InternalSerializers`` ``serializeToString`` does
(:func:`serialize_value`).
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stratalake.exceptions import CorruptFileError
from stratalake.types import (
    MAX_LENGTH,
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
)

STATISTICS_DIR = "statistics"
STATISTICS_PREFIX = "stat-"
_EPOCH = datetime.date(1970, 1, 1)


@dataclass(frozen=True, slots=True)
class ColStats:
    """One column's statistics; ``min``/``max`` as serialised in the file (:func:`serialize_value`)."""

    col_id: int
    distinct_count: int | None = None
    min: str | None = None
    max: str | None = None
    null_count: int | None = None
    avg_len: int | None = None
    max_len: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"colId": self.col_id}
        for key, value in (
            ("distinctCount", self.distinct_count),
            ("min", self.min),
            ("max", self.max),
            ("nullCount", self.null_count),
            ("avgLen", self.avg_len),
            ("maxLen", self.max_len),
        ):
            if value is not None:
                out[key] = value
        return out

    @staticmethod
    def from_dict(raw: Mapping[str, Any]) -> ColStats:
        return ColStats(
            col_id=_int(raw, "colId", required=True),  # type: ignore[arg-type]
            distinct_count=_int(raw, "distinctCount"),
            min=_str(raw, "min"),
            max=_str(raw, "max"),
            null_count=_int(raw, "nullCount"),
            avg_len=_int(raw, "avgLen"),
            max_len=_int(raw, "maxLen"),
        )


@dataclass(frozen=True, slots=True)
class Statistics:
    """Statistics of the merged rows of snapshot ``snapshot_id`` (schema ``schema_id``)."""

    snapshot_id: int
    schema_id: int
    merged_record_count: int | None = None
    merged_record_size: int | None = None
    col_stats: Mapping[str, ColStats] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"snapshotId": self.snapshot_id, "schemaId": self.schema_id}
        if self.merged_record_count is not None:
            out["mergedRecordCount"] = self.merged_record_count
        if self.merged_record_size is not None:
            out["mergedRecordSize"] = self.merged_record_size
        out["colStats"] = {name: cs.to_dict() for name, cs in self.col_stats.items()}
        return out

    def to_json(self) -> str:
        """The file's text, as Paimon's ``JsonSerdeUtil.toJson`` (Jackson's pretty printer) writes it."""
        return jackson_pretty(self.to_dict())

    def col_stats_json(self) -> str:
        """``colStats`` alone, Jackson-pretty: the ``colstat`` column of ``$statistics``."""
        return jackson_pretty({name: cs.to_dict() for name, cs in self.col_stats.items()})

    @staticmethod
    def from_json(text: str | bytes, origin: str = "statistics file") -> Statistics:
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict):
                raise TypeError(f"expected a JSON object, got {type(raw).__name__}")
            cols = raw.get("colStats") or {}
            if not isinstance(cols, dict):
                raise TypeError("colStats is not a JSON object")
            return Statistics(
                snapshot_id=_int(raw, "snapshotId", required=True),  # type: ignore[arg-type]
                schema_id=_int(raw, "schemaId", required=True),  # type: ignore[arg-type]
                merged_record_count=_int(raw, "mergedRecordCount"),
                merged_record_size=_int(raw, "mergedRecordSize"),
                col_stats={str(k): ColStats.from_dict(v) for k, v in cols.items()},
            )
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
            raise CorruptFileError(f"{origin} is not a valid statistics file: {type(e).__name__}: {e}") from e


def _int(raw: Mapping[str, Any], key: str, required: bool = False) -> int | None:
    value = raw.get(key)
    if value is None:
        if required:
            raise KeyError(f"field {key!r} is missing")
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"field {key!r} is not an integer: {value!r:.40}")
    return value


def _str(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise TypeError(f"field {key!r} is not a string: {value!r:.40}")
    return value


def jackson_pretty(value: Any, indent: int = 0) -> str:
    """``value`` (dicts, strings, integers) as Jackson's ``DefaultPrettyPrinter`` prints it:
    two-space indents, ``"key" : value``, and ``{ }`` for an empty object."""
    if isinstance(value, Mapping):
        if not value:
            return "{ }"
        pad = " " * (indent + 2)
        items = [
            f"{pad}{json.dumps(str(k), ensure_ascii=False)} : {jackson_pretty(v, indent + 2)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"cannot print {value!r:.40} as statistics JSON")
    return str(value)


def paimon_default_size(dt: DataType) -> int:
    """Paimon's ``DataType.defaultSize()``: the bytes a value is assumed to take when statistics
    give no average length (Paimon's Spark scan estimates row sizes with it)."""
    if isinstance(dt, BooleanType | TinyIntType):
        return 1
    if isinstance(dt, SmallIntType):
        return 2
    if isinstance(dt, IntType | FloatType | DateType | TimeType):
        return 4
    if isinstance(dt, BigIntType | DoubleType | TimestampType | LocalZonedTimestampType):
        return 8
    if isinstance(dt, DecimalType):
        return 8 if dt.precision <= 18 else 16
    if isinstance(dt, CharType | BinaryType):
        return dt.length
    if isinstance(dt, VarCharType | VarBinaryType):
        return 20 if dt.length == MAX_LENGTH else dt.length
    if isinstance(dt, ArrayType):
        return paimon_default_size(dt.element)
    if isinstance(dt, MultisetType):
        return paimon_default_size(dt.element) + 4
    if isinstance(dt, MapType):
        return paimon_default_size(dt.key) + paimon_default_size(dt.value)
    if isinstance(dt, RowType):
        return sum(paimon_default_size(f.type) for f in dt.fields)
    raise TypeError(f"type {dt} has no default size")


# -- min / max strings ----------------------------------------------------------------------------
def has_min_max(dt: DataType) -> bool:
    """Whether ANALYZE keeps min/max of a column of type ``dt`` (Paimon's ``PaimonStatsUtils.
    hasMinMax``: numbers, booleans, dates and timestamps; not strings or binaries)."""
    return isinstance(
        dt,
        BooleanType
        | TinyIntType
        | SmallIntType
        | IntType
        | BigIntType
        | FloatType
        | DoubleType
        | DecimalType
        | DateType
        | TimestampType
        | LocalZonedTimestampType,
    )


def _java_floating(value: float, single: bool) -> str:
    """Java's ``Float.toString`` / ``Double.toString`` of ``value`` (shortest round-trip digits)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    text = np.format_float_scientific(np.float32(value), unique=True) if single else repr(float(value))
    sign, digit_tuple, exponent = decimal.Decimal(text).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    exponent = int(exponent) + len(digit_tuple) - len(digits)
    e10 = len(digits) - 1 + exponent  # the decimal exponent of the first digit
    prefix = "-" if sign else ""
    if -3 <= e10 < 7:  # Java prints 1e-3 <= |v| < 1e7 plainly
        if e10 >= 0:
            whole = digits[: e10 + 1].ljust(e10 + 1, "0")
            frac = digits[e10 + 1 :] or "0"
            return f"{prefix}{whole}.{frac}"
        return f"{prefix}0.{'0' * (-e10 - 1)}{digits}"
    return f"{prefix}{digits[0]}.{digits[1:] or '0'}E{e10}"


def _format_timestamp(epoch_nanos: int, precision: int) -> str:
    """Paimon's ``DateTimeUtils.formatTimestamp(ts, precision)``: ``yyyy-MM-dd HH:mm:ss`` and the
    nanosecond fraction with trailing zeros cut down to ``precision`` digits."""
    seconds, nanos = divmod(epoch_nanos, 1_000_000_000)
    wall = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds)
    fraction = f"{nanos:09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    text = wall.strftime("%Y-%m-%d %H:%M:%S")
    if wall.year < 1000:
        text = f"{wall.year:04d}" + text[text.index("-") :]
    return f"{text}.{fraction}" if fraction else text


def serialize_value(dt: DataType, value: Any) -> str:
    """``value`` (as Arrow gives it: int, float, bool, Decimal, date; timestamps as epoch
    nanoseconds) as Paimon serialises a min/max of type ``dt``: Java's ``toString`` of the
    internal value (dates: days since epoch; decimals: plain string; timestamps: wall clock of
    the internal value)."""
    if isinstance(dt, BooleanType):
        return "true" if value else "false"
    if isinstance(dt, TinyIntType | SmallIntType | IntType | BigIntType):
        return str(int(value))
    if isinstance(dt, FloatType | DoubleType):
        return _java_floating(float(value), isinstance(dt, FloatType))
    if isinstance(dt, DecimalType):
        return format(decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-dt.scale)), "f")
    if isinstance(dt, DateType):
        return str((value - _EPOCH).days if isinstance(value, datetime.date) else int(value))
    if isinstance(dt, TimestampType | LocalZonedTimestampType):
        return _format_timestamp(int(value), dt.precision)
    raise TypeError(f"type {dt} has no min/max in statistics")


def timestamp_micros(text: str) -> int:
    """Microseconds since the epoch of a serialised timestamp's wall clock (read as UTC, as the
    internal value is), nanoseconds cut."""
    date_part, _, fraction = text.partition(".")
    wall = datetime.datetime.fromisoformat(date_part.replace(" ", "T"))
    micros = int((fraction + "000000")[:6]) if fraction else 0
    return (wall - datetime.datetime(1970, 1, 1)) // datetime.timedelta(microseconds=1) + micros


def deserialize_value(dt: DataType, text: str) -> Any:
    """The inverse of :func:`serialize_value` (timestamps as naive wall-clock datetimes)."""
    if isinstance(dt, BooleanType):
        return text.lower() == "true"  # Java's Boolean.valueOf
    if isinstance(dt, TinyIntType | SmallIntType | IntType | BigIntType):
        return int(text)
    if isinstance(dt, FloatType | DoubleType):
        return float(text.replace("Infinity", "inf"))
    if isinstance(dt, DecimalType):
        return decimal.Decimal(text)
    if isinstance(dt, DateType):
        return _EPOCH + datetime.timedelta(days=int(text))
    if isinstance(dt, TimestampType | LocalZonedTimestampType):
        return datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=timestamp_micros(text))
    raise TypeError(f"type {dt} has no min/max in statistics")
