"""Column default values: a schema field's ``defaultValue`` text and the value it stands for.

Paimon (1.2+) keeps a column's default as the SQL text in its schema field (``DataField``'s
``defaultValue``) and fills it in on write: its table writer (``TableWriteImpl`` with
``DefaultValueRow``) replaces every null written to such a column by the default, whether the
column was left out or given as NULL; reads never apply it. The text becomes a value as
Paimon's ``DefaultValueUtils.convertDefaultValue`` makes it: one pair of enclosing single quotes
is dropped, then the rest is cast from STRING to the column's type with Paimon's string casts
(``BinaryStringUtils``: integers with an optional sign and a truncated fraction, no blanks;
booleans as true/t/yes/y/1 and false/f/no/n/0; CHAR/VARCHAR and BINARY/VARBINARY cut or padded
to their length; dates and timestamps in ISO form or as a number since the epoch).

Types stratalake does not cast defaults to (TIME, TIMESTAMP WITH LOCAL TIME ZONE, whose text is
read in the session time zone, and nested types) are refused by name, as is a text that does
not cast; ``DEFAULT NULL`` is refused too: Paimon stores it as the text "NULL", which a
STRING column would then write as the four-letter string.

>>> from stratalake.types import DataType
>>> default_value(DataType.parse("INT"), "-12.7"), default_value(DataType.parse("CHAR(3)"), "'ab'")
(-12, 'ab ')
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import SchemaError
from stratalake.types import (
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataField,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    SmallIntType,
    TimestampType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
    to_arrow,
)

__all__ = ["check_default", "column_defaults", "default_value", "fill_defaults"]

_TRUE = frozenset({"t", "true", "y", "yes", "1"})
_FALSE = frozenset({"f", "false", "n", "no", "0"})
_INT_RANGES = {
    TinyIntType: (-(2**7), 2**7 - 1),
    SmallIntType: (-(2**15), 2**15 - 1),
    IntType: (-(2**31), 2**31 - 1),
    BigIntType: (-(2**63), 2**63 - 1),
}
_INTEGER = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?")
# Java's Double.parseDouble: blanks around, an optional d/f suffix, NaN and Infinity spelled so.
_FLOAT = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[dDfF]?")
# Paimon's DEFAULT_TIMESTAMP_FORMATTER: a date, then " H:m:s[.f]" or "'T'H:m[:s[.f]]"; no blanks.
_TIMESTAMP = re.compile(
    r"([0-9]{4,})-([0-9]{1,2})-([0-9]{1,2})"
    r"(?: ([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:\.([0-9]{0,9}))?"
    r"|T([0-9]{1,2}):([0-9]{1,2})(?::([0-9]{1,2})(?:\.([0-9]{0,9}))?)?)?"
)
_DIGITS = re.compile(r"[0-9]+")
_EPOCH = datetime.date(1970, 1, 1)
_UNIT_NANOS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


class _Unsupported(ValueError):
    """The default's type has no cast from STRING here (as opposed to a text that does not cast)."""


def default_value(dt: DataType, text: str) -> Any:
    """The Python value of the default ``text`` for a column of type ``dt`` (Arrow's value form:
    days for DATE, an integer in the Arrow unit for TIMESTAMP); ValueError when it does not cast."""
    if len(text) >= 2 and text.startswith("'") and text.endswith("'"):
        text = text[1:-1]
    if isinstance(dt, BooleanType):
        low = text.lower()
        if low in _TRUE or low in _FALSE:
            return low in _TRUE
        raise ValueError(f"cannot parse '{text}' as BOOLEAN")
    for kind, (lo, hi) in _INT_RANGES.items():
        if isinstance(dt, kind):
            return _integer(text, lo, hi)
    if isinstance(dt, FloatType | DoubleType):
        stripped = text.strip()
        if not _FLOAT.fullmatch(stripped):
            raise ValueError(f"'{text}' is not a number")
        number = float(stripped.rstrip("dDfF").replace("Infinity", "inf"))
        if isinstance(dt, FloatType) and math.isfinite(number) and abs(number) > 3.4028234663852886e38:
            number = math.copysign(math.inf, number)  # Float.parseFloat overflows to infinity
        return number
    if isinstance(dt, DecimalType):
        try:
            value = decimal.Decimal(text.strip())
        except decimal.InvalidOperation:
            raise ValueError(f"'{text}' is not a decimal number") from None
        if not value.is_finite():
            raise ValueError(f"'{text}' is not a decimal number")
        quantum = decimal.Decimal(1).scaleb(-dt.scale)
        value = value.quantize(quantum, rounding=decimal.ROUND_HALF_UP, context=decimal.Context(prec=80))
        if len(value.as_tuple().digits) > dt.precision and value != 0:
            raise ValueError(f"'{text}' does not fit {dt}")  # Paimon would make it null
        return value
    if isinstance(dt, CharType | VarCharType):
        chars = text[: dt.length]
        return chars.ljust(dt.length) if isinstance(dt, CharType) else chars
    if isinstance(dt, BinaryType | VarBinaryType):
        raw = text.encode("utf-8")[: dt.length]
        return raw.ljust(dt.length, b"\0") if isinstance(dt, BinaryType) else raw
    if isinstance(dt, DateType):
        if _DIGITS.fullmatch(text):  # a number is days since the epoch
            return _integer(text, -(2**31), 2**31 - 1)
        return (_date(text) - _EPOCH).days
    if isinstance(dt, TimestampType):
        return _timestamp(dt, text)
    raise _Unsupported(f"stratalake casts no default to {dt.copy(nullable=True)}")


def _integer(text: str, lo: int, hi: int) -> int:
    m = _INTEGER.fullmatch(text)
    if not m or text in ("", "+", "-"):  # Paimon's toInt/toLong: a lone "." reads as 0
        raise ValueError(f"'{text}' is not an integer")
    digits = m.group(2) or "0"
    value = int(digits) * (-1 if m.group(1) == "-" else 1)
    if not lo <= value <= hi:
        raise ValueError(f"'{text}' overflows")
    return value


def _date(text: str) -> datetime.date:
    """Paimon's ``DateTimeUtils.parseDate``: what precedes a blank, as y[-m[-d]] (parts trimmed)."""
    blank = text.find(" ")
    s = text[:blank] if blank > 0 else text
    parts = s.split("-", 2)
    if not all(_DIGITS.fullmatch(p.strip()) for p in parts):
        raise ValueError(f"'{text}' is not a date (yyyy-mm-dd)")
    y, m, d = [int(p) for p in parts] + [1] * (3 - len(parts))
    try:
        return datetime.date(y, m, d)
    except ValueError:
        raise ValueError(f"'{text}' is not a valid date") from None


def _timestamp(dt: TimestampType, text: str) -> int:
    unit = to_arrow(dt).unit
    if _DIGITS.fullmatch(text):
        # Paimon reads a number as seconds, millis, micros or nanos by the precision (0/3/6/9).
        per = {0: 10**9, 3: 10**6, 6: 10**3, 9: 1}.get(dt.precision)
        if per is None:
            raise _Unsupported(
                f"a numeric default for {dt.copy(nullable=True)} (precision 0, 3, 6 or 9 only)"
            )
        nanos = _integer(text, -(2**63), 2**63 - 1) * per
    else:
        m = _TIMESTAMP.fullmatch(text)
        if not m:
            raise ValueError(f"'{text}' is not a timestamp (yyyy-mm-dd hh:mm:ss[.fffffffff])")
        g = m.groups()
        y, mo, d = (int(x) for x in g[:3])
        h, mi, sec, frac = g[3:7] if g[3] is not None else g[7:11]
        try:
            moment = datetime.datetime(y, mo, d, int(h or 0), int(mi or 0), int(sec or 0))
        except ValueError:
            raise ValueError(f"'{text}' is not a valid timestamp") from None
        seconds = (
            (moment.date() - _EPOCH).days * 86400 + moment.hour * 3600 + moment.minute * 60 + moment.second
        )
        keep = 10 ** (9 - dt.precision)  # Paimon floors the fraction to the precision
        nanos = seconds * 10**9 + int((frac or "").ljust(9, "0")) // keep * keep
    return nanos // _UNIT_NANOS[unit]


def check_default(table: str, field: DataField) -> None:
    """SchemaError naming ``table`` and the column when ``field``'s default does not cast to its type."""
    text = field.default_value
    if text is None:
        return
    what = f"table {table}: column '{field.name}' has DEFAULT {text}"
    if text.strip().upper() == "NULL":
        raise SchemaError(f"{what}; a column without a default already takes NULL, so drop the DEFAULT NULL")
    try:
        default_value(field.type, text)
    except _Unsupported as e:
        raise SchemaError(f"{what}: {e}; remove the default") from None
    except (ValueError, ArithmeticError, OverflowError) as e:
        raise SchemaError(
            f"{what}, which is not a literal of its type {field.type.copy(nullable=True)} ({e}); "
            "give a constant such as 42, 'text', 1.5 or '2024-01-31'"
        ) from None


def column_defaults(table: str, fields: Sequence[DataField]) -> dict[str, pa.Scalar]:
    """The Arrow default of every column of ``fields`` that has one (SchemaError if one does not cast)."""
    out: dict[str, pa.Scalar] = {}
    for f in fields:
        if f.default_value is None:
            continue
        check_default(table, f)
        out[f.name] = pa.scalar(default_value(f.type, f.default_value), type=to_arrow(f.type))
    return out


def fill_defaults(data: pa.Table, defaults: Mapping[str, pa.Scalar]) -> pa.Table:
    """``data`` with each null of a column in ``defaults`` replaced by its default (Paimon's
    ``DefaultValueRow``: a written null takes the default)."""
    for name, value in defaults.items():
        i = data.schema.get_field_index(name)
        col = data.column(i)
        if col.null_count:
            data = data.set_column(i, data.schema.field(i), pc.fill_null(col, value.cast(col.type)))
    return data
