"""Paimon's logical types: an immutable parsed model, its JSON form, and the Arrow mapping.

A schema file stores each field's type either as a SQL type string (``"BIGINT NOT NULL"``,
``"DECIMAL(10, 2)"``) or, for ARRAY / MAP / MULTISET / ROW, as a JSON object such as
``{"type": "ARRAY", "element": "INT"}``. :meth:`DataType.parse` reads both;
:meth:`DataType.to_json` writes exactly what Java Paimon's ``serializeJson`` writes.

>>> t = DataType.parse({"type": "ARRAY NOT NULL", "element": "VARCHAR(20)"})
>>> str(t)
'ARRAY<VARCHAR(20)> NOT NULL'
>>> t.to_json()
{'type': 'ARRAY NOT NULL', 'element': 'VARCHAR(20)'}
>>> to_arrow(DataType.parse("TIMESTAMP(3) WITH LOCAL TIME ZONE"))
TimestampType(timestamp[ms, tz=UTC])
"""

from __future__ import annotations

import dataclasses
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pyarrow as pa

from stratalake.exceptions import SchemaError

__all__ = [
    "ATOMIC_TYPES",
    "MAX_LENGTH",
    "ArrayType",
    "BigIntType",
    "BinaryType",
    "BooleanType",
    "CharType",
    "DataField",
    "DataType",
    "DateType",
    "DecimalType",
    "DoubleType",
    "FloatType",
    "IntType",
    "LocalZonedTimestampType",
    "MapType",
    "MultisetType",
    "RowType",
    "SmallIntType",
    "TimeType",
    "TimestampType",
    "TinyIntType",
    "VarBinaryType",
    "VarCharType",
    "arrow_field",
    "arrow_schema",
    "from_arrow",
    "is_widening",
    "to_arrow",
]

#: Length of STRING (= VARCHAR(MAX_LENGTH)) and BYTES (= VARBINARY(MAX_LENGTH)), as in Java.
MAX_LENGTH = 2147483647

JsonType = str | dict[str, Any]


@dataclass(frozen=True, slots=True)
class DataType(ABC):
    """An immutable Paimon logical type; ``nullable`` is part of the type, as in Paimon."""

    nullable: bool = field(default=True, kw_only=True)

    @staticmethod
    def parse(obj: str | Mapping[str, Any]) -> DataType:
        """Parse a schema field's ``"type"``: a SQL type string or a nested JSON object.

        >>> DataType.parse("DECIMAL(10, 2) NOT NULL")
        DecimalType(nullable=False, precision=10, scale=2)
        """
        if isinstance(obj, str):
            return _Parser(obj).parse()
        if isinstance(obj, Mapping):
            return _parse_json_object(obj)
        raise SchemaError(f"cannot parse data type {obj!r}: expected a type string or a JSON object")

    def to_json(self) -> JsonType:
        """The JSON form Java Paimon writes into schema files (a string for atomic types)."""
        return str(self)

    @abstractmethod
    def _sql(self) -> str:
        """The SQL type string without the nullability suffix."""

    def __str__(self) -> str:
        return self._sql() if self.nullable else self._sql() + " NOT NULL"

    def copy(self, nullable: bool) -> DataType:
        """This type with the given nullability."""
        return dataclasses.replace(self, nullable=nullable)


# --------------------------------------------------------------------------------------------
# Atomic types


@dataclass(frozen=True, slots=True)
class BooleanType(DataType):
    def _sql(self) -> str:
        return "BOOLEAN"


@dataclass(frozen=True, slots=True)
class TinyIntType(DataType):
    def _sql(self) -> str:
        return "TINYINT"


@dataclass(frozen=True, slots=True)
class SmallIntType(DataType):
    def _sql(self) -> str:
        return "SMALLINT"


@dataclass(frozen=True, slots=True)
class IntType(DataType):
    def _sql(self) -> str:
        return "INT"


@dataclass(frozen=True, slots=True)
class BigIntType(DataType):
    def _sql(self) -> str:
        return "BIGINT"


@dataclass(frozen=True, slots=True)
class FloatType(DataType):
    def _sql(self) -> str:
        return "FLOAT"


@dataclass(frozen=True, slots=True)
class DoubleType(DataType):
    def _sql(self) -> str:
        return "DOUBLE"


@dataclass(frozen=True, slots=True)
class DecimalType(DataType):
    """DECIMAL(p, s); p <= 18 is stored "compact" (as an unscaled long) in binary rows."""

    MAX_COMPACT_PRECISION: ClassVar[int] = 18

    precision: int = 10
    scale: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.precision <= 38 or not 0 <= self.scale <= self.precision:
            raise SchemaError(
                f"invalid type DECIMAL({self.precision}, {self.scale}): precision must be in "
                "[1, 38] and scale in [0, precision]"
            )

    @property
    def is_compact(self) -> bool:
        return self.precision <= self.MAX_COMPACT_PRECISION

    def _sql(self) -> str:
        return f"DECIMAL({self.precision}, {self.scale})"


def _check_length(kind: str, length: int) -> None:
    if not 1 <= length <= MAX_LENGTH:
        raise SchemaError(f"invalid type {kind}({length}): length must be in [1, {MAX_LENGTH}]")


@dataclass(frozen=True, slots=True)
class CharType(DataType):
    length: int = 1

    def __post_init__(self) -> None:
        _check_length("CHAR", self.length)

    def _sql(self) -> str:
        return f"CHAR({self.length})"


@dataclass(frozen=True, slots=True)
class VarCharType(DataType):
    """VARCHAR(n); ``VarCharType()`` is STRING."""

    length: int = MAX_LENGTH

    def __post_init__(self) -> None:
        _check_length("VARCHAR", self.length)

    def _sql(self) -> str:
        return "STRING" if self.length == MAX_LENGTH else f"VARCHAR({self.length})"


@dataclass(frozen=True, slots=True)
class BinaryType(DataType):
    length: int = 1

    def __post_init__(self) -> None:
        _check_length("BINARY", self.length)

    def _sql(self) -> str:
        return f"BINARY({self.length})"


@dataclass(frozen=True, slots=True)
class VarBinaryType(DataType):
    """VARBINARY(n); ``VarBinaryType()`` is BYTES."""

    length: int = MAX_LENGTH

    def __post_init__(self) -> None:
        _check_length("VARBINARY", self.length)

    def _sql(self) -> str:
        return "BYTES" if self.length == MAX_LENGTH else f"VARBINARY({self.length})"


@dataclass(frozen=True, slots=True)
class DateType(DataType):
    def _sql(self) -> str:
        return "DATE"


def _check_precision(kind: str, precision: int) -> None:
    if not 0 <= precision <= 9:
        raise SchemaError(f"invalid type {kind}({precision}): precision must be in [0, 9]")


@dataclass(frozen=True, slots=True)
class TimeType(DataType):
    """TIME(p); values are milliseconds of the day whatever the precision (as in Paimon)."""

    precision: int = 0

    def __post_init__(self) -> None:
        _check_precision("TIME", self.precision)

    def _sql(self) -> str:
        return f"TIME({self.precision})"


@dataclass(frozen=True, slots=True)
class TimestampType(DataType):
    """TIMESTAMP(p) without time zone; p <= 3 is stored compact (epoch millis) in binary rows."""

    precision: int = 6

    def __post_init__(self) -> None:
        _check_precision("TIMESTAMP", self.precision)

    @property
    def is_compact(self) -> bool:
        return self.precision <= 3

    def _sql(self) -> str:
        return f"TIMESTAMP({self.precision})"


@dataclass(frozen=True, slots=True)
class LocalZonedTimestampType(DataType):
    """TIMESTAMP(p) WITH LOCAL TIME ZONE: an instant, stored as UTC epoch time."""

    precision: int = 6

    def __post_init__(self) -> None:
        _check_precision("TIMESTAMP WITH LOCAL TIME ZONE", self.precision)

    @property
    def is_compact(self) -> bool:
        return self.precision <= 3

    def _sql(self) -> str:
        return f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"


#: The atomic types stratalake reads and writes, one of each kind (Paimon's default parameters);
#: with ARRAY, MULTISET, MAP and ROW over them, every type it supports (others, such as VARIANT, are
#: refused by name when parsed). The one list: ``spark/types.py`` maps each to Spark (TIME has no
#: Spark type) and ``tests/spark/test_types.py`` holds the shim's bucket-key types to it.
ATOMIC_TYPES: tuple[DataType, ...] = (
    BooleanType(),
    TinyIntType(),
    SmallIntType(),
    IntType(),
    BigIntType(),
    FloatType(),
    DoubleType(),
    DecimalType(),
    CharType(),
    VarCharType(),
    BinaryType(),
    VarBinaryType(),
    DateType(),
    TimeType(),
    TimestampType(),
    LocalZonedTimestampType(),
)


# --------------------------------------------------------------------------------------------
# Nested types


@dataclass(frozen=True, slots=True)
class ArrayType(DataType):
    element: DataType

    def _sql(self) -> str:
        return f"ARRAY<{self.element}>"

    def to_json(self) -> JsonType:
        return {"type": _nullable_name("ARRAY", self.nullable), "element": self.element.to_json()}


@dataclass(frozen=True, slots=True)
class MultisetType(DataType):
    element: DataType

    def _sql(self) -> str:
        return f"MULTISET<{self.element}>"

    def to_json(self) -> JsonType:
        return {"type": _nullable_name("MULTISET", self.nullable), "element": self.element.to_json()}


@dataclass(frozen=True, slots=True)
class MapType(DataType):
    key: DataType
    value: DataType

    def _sql(self) -> str:
        return f"MAP<{self.key}, {self.value}>"

    def to_json(self) -> JsonType:
        return {
            "type": _nullable_name("MAP", self.nullable),
            "key": self.key.to_json(),
            "value": self.value.to_json(),
        }


@dataclass(frozen=True, slots=True)
class DataField:
    """A named field with a stable id: a schema column or a ROW member."""

    id: int
    name: str
    type: DataType
    description: str | None = None
    default_value: str | None = None

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> DataField:
        """Parse ``{"id": .., "name": .., "type": .., "description"?: .., "defaultValue"?: ..}``."""
        try:
            return DataField(
                int(obj["id"]),
                str(obj["name"]),
                DataType.parse(obj["type"]),
                obj.get("description"),
                obj.get("defaultValue"),
            )
        except KeyError as e:
            raise SchemaError(f"field {dict(obj)!r} has no {e.args[0]!r}") from None

    def to_json(self) -> dict[str, Any]:
        """The JSON object Java Paimon writes (optional keys only when set)."""
        out: dict[str, Any] = {"id": self.id, "name": self.name, "type": self.type.to_json()}
        if self.description is not None:
            out["description"] = self.description
        if self.default_value is not None:
            out["defaultValue"] = self.default_value
        return out

    def __str__(self) -> str:
        s = f"{_escape_identifier(self.name)} {self.type}"
        if self.description:
            s += " COMMENT '" + self.description.replace("'", "''") + "'"
        if self.default_value is not None:
            s += f" DEFAULT {self.default_value}"
        return s


@dataclass(frozen=True, slots=True)
class RowType(DataType):
    fields: tuple[DataField, ...]

    def _sql(self) -> str:
        return "ROW<" + ", ".join(str(f) for f in self.fields) + ">"

    def to_json(self) -> JsonType:
        return {
            "type": _nullable_name("ROW", self.nullable),
            "fields": [f.to_json() for f in self.fields],
        }

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]


def _nullable_name(name: str, nullable: bool) -> str:
    return name if nullable else name + " NOT NULL"


def _escape_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# --------------------------------------------------------------------------------------------
# Parsing


def _parse_json_object(obj: Mapping[str, Any]) -> DataType:
    type_string = obj.get("type")
    if not isinstance(type_string, str):
        raise SchemaError(f"cannot parse data type {dict(obj)!r}: no 'type' string")
    # Java decides nullability by `contains("NOT NULL")`; pypaimon's extra "nullable" key agrees.
    nullable = "NOT NULL" not in type_string.upper()
    kind = type_string.strip().split(" ", 1)[0].upper()
    try:
        if kind == "ARRAY":
            return ArrayType(DataType.parse(obj["element"]), nullable=nullable)
        if kind == "MULTISET":
            return MultisetType(DataType.parse(obj["element"]), nullable=nullable)
        if kind == "MAP":
            return MapType(DataType.parse(obj["key"]), DataType.parse(obj["value"]), nullable=nullable)
        if kind == "ROW":
            return RowType(tuple(DataField.from_json(f) for f in obj["fields"]), nullable=nullable)
    except KeyError as e:
        raise SchemaError(f"cannot parse data type {dict(obj)!r}: missing {e.args[0]!r}") from None
    # Java only writes objects for nested types, but an atomic type in object form is harmless.
    return _Parser(type_string).parse()


_TOKEN = re.compile(
    r"\s*(?:(?P<int>\d+)|(?P<ident>[A-Za-z_][A-Za-z0-9_$]*)|`(?P<quoted>(?:[^`]|``)*)`"
    r"|'(?P<string>(?:[^']|'')*)'|(?P<punct>[<>(),:]))"
)

_UNSUPPORTED = {"VARIANT", "BLOB", "VECTOR", "GEOMETRY", "GEOGRAPHY", "INTERVAL", "RAW"}


class _Parser:
    """Recursive-descent parser for Paimon SQL type strings (superset of Java's atomic parser:
    it also reads ``ARRAY<..>``, ``MAP<..>``, ``MULTISET<..>`` and ``ROW<name type, ..>``)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        stripped = text.rstrip()
        while pos < len(stripped):
            m = _TOKEN.match(stripped, pos)
            if m is None or m.end() == pos:
                raise self.error(f"unexpected character {stripped[pos:].lstrip()[:1]!r}")
            kind = m.lastgroup
            assert kind is not None
            value = m.group(kind)
            if kind == "quoted":
                kind, value = "ident", value.replace("``", "`")
            elif kind == "string":
                value = value.replace("''", "'")
            self.tokens.append((kind, value))
            pos = m.end()
        self.i = 0

    def error(self, why: str) -> SchemaError:
        return SchemaError(f"cannot parse data type {self.text!r}: {why}")

    def peek(self, offset: int = 0) -> tuple[str, str] | None:
        j = self.i + offset
        return self.tokens[j] if j < len(self.tokens) else None

    def peek_keyword(self, *words: str) -> bool:
        for k, w in enumerate(words):
            tok = self.peek(k)
            if tok is None or tok[0] != "ident" or tok[1].upper() != w:
                return False
        return True

    def next(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise self.error("unexpected end")
        self.i += 1
        return tok

    def expect(self, value: str) -> None:
        tok = self.next()
        if tok[1].upper() != value:
            raise self.error(f"expected {value!r} but found {tok[1]!r}")

    def keyword(self, *words: str) -> bool:
        if self.peek_keyword(*words):
            self.i += len(words)
            return True
        return False

    def parse(self) -> DataType:
        if not self.tokens:
            raise self.error("empty type string")
        try:
            dt = self.type_with_nullability()
        except SchemaError as e:
            if repr(self.text) in str(e):
                raise
            raise self.error(str(e)) from None  # an invalid parameter: name the whole string
        if self.peek() is not None:
            raise self.error(f"unexpected token {self.next()[1]!r}")
        return dt

    def nullability(self) -> bool:
        if self.keyword("NOT", "NULL"):
            return False
        self.keyword("NULL")
        return True

    def type_with_nullability(self) -> DataType:
        dt = self.type_by_keyword()
        dt = dt.copy(self.nullability())
        # Java's suffix notation: "INT ARRAY", "STRING NOT NULL MULTISET NOT NULL".
        while True:
            if self.keyword("ARRAY"):
                dt = ArrayType(dt, nullable=self.nullability())
            elif self.keyword("MULTISET"):
                dt = MultisetType(dt, nullable=self.nullability())
            else:
                return dt

    def int_params(self, most: int) -> list[int]:
        if self.peek() is None or self.peek() != ("punct", "("):
            return []
        self.next()
        values: list[int] = []
        while True:
            kind, value = self.next()
            if kind != "int":
                raise self.error(f"expected an integer but found {value!r}")
            values.append(int(value))
            if len(values) > most:
                raise self.error(f"too many parameters ({len(values)})")
            if self.next()[1] == ")":
                return values

    def type_by_keyword(self) -> DataType:
        kind, word = self.next()
        if kind != "ident":
            raise self.error(f"expected a type name but found {word!r}")
        name = word.upper()
        if name in ("BOOLEAN",):
            return BooleanType()
        if name == "TINYINT":
            return TinyIntType()
        if name == "SMALLINT":
            return SmallIntType()
        if name in ("INT", "INTEGER"):
            return IntType()
        if name == "BIGINT":
            return BigIntType()
        if name == "FLOAT":
            return FloatType()
        if name == "DOUBLE":
            self.keyword("PRECISION")
            return DoubleType()
        if name in ("DECIMAL", "NUMERIC", "DEC"):
            p = self.int_params(2)
            return DecimalType(p[0] if p else 10, p[1] if len(p) > 1 else 0)
        if name == "STRING":
            return VarCharType(MAX_LENGTH)
        if name in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            p = self.int_params(1)
            length = p[0] if p else 1
            if name == "CHAR":
                return CharType(length)
            if name == "VARCHAR":
                return VarCharType(length)
            return BinaryType(length) if name == "BINARY" else VarBinaryType(length)
        if name == "BYTES":
            return VarBinaryType(MAX_LENGTH)
        if name == "DATE":
            return DateType()
        if name == "TIME":
            p = self.int_params(1)
            self.keyword("WITHOUT", "TIME", "ZONE")
            return TimeType(p[0] if p else 0)
        if name == "TIMESTAMP":
            p = self.int_params(1)
            precision = p[0] if p else 6
            if self.keyword("WITH", "LOCAL", "TIME", "ZONE"):
                return LocalZonedTimestampType(precision)
            self.keyword("WITHOUT", "TIME", "ZONE")
            return TimestampType(precision)
        if name == "TIMESTAMP_LTZ":
            p = self.int_params(1)
            return LocalZonedTimestampType(p[0] if p else 6)
        if name in ("ARRAY", "MULTISET"):
            self.expect("<")
            element = self.type_with_nullability()
            self.expect(">")
            return ArrayType(element) if name == "ARRAY" else MultisetType(element)
        if name == "MAP":
            self.expect("<")
            key = self.type_with_nullability()
            self.expect(",")
            value = self.type_with_nullability()
            self.expect(">")
            return MapType(key, value)
        if name == "ROW":
            return self.row_type()
        if name in _UNSUPPORTED:
            raise self.error(f"type {name} is not supported by stratalake")
        raise self.error(f"unknown type {word!r}")

    def row_type(self) -> RowType:
        self.expect("<")
        fields: list[DataField] = []
        if self.peek() == ("punct", ">"):
            self.next()
            return RowType(())
        while True:
            kind, name = self.next()
            if kind != "ident":
                raise self.error(f"expected a field name but found {name!r}")
            if self.peek() == ("punct", ":"):  # pypaimon's str() form "ROW<a: INT>"
                self.next()
            dt = self.type_with_nullability()
            description = None
            default = None
            if self.keyword("COMMENT"):
                kind, description = self.next()
                if kind != "string":
                    raise self.error("expected a quoted comment after COMMENT")
            elif (self.peek() or ("", ""))[0] == "string":  # Java's asSQLString: "`f` INT 'comment'"
                description = self.next()[1]
            if self.keyword("DEFAULT"):
                default = self.next()[1]
            # A string carries no field ids; number the members in order, as Java does for
            # id-less JSON fields. Schema creation reassigns ids anyway.
            fields.append(DataField(len(fields), name, dt, description, default))
            sep = self.next()[1]
            if sep == ">":
                return RowType(tuple(fields))
            if sep != ",":
                raise self.error(f"expected ',' or '>' but found {sep!r}")


# --------------------------------------------------------------------------------------------
# Arrow mapping


def _timestamp_unit(precision: int) -> str:
    if precision == 0:
        return "s"
    if precision <= 3:
        return "ms"
    if precision <= 6:
        return "us"
    return "ns"


def to_arrow(dt: DataType) -> pa.DataType:
    """The Arrow type stratalake (and pypaimon) uses for ``dt`` in memory and in Parquet.

    >>> to_arrow(DataType.parse("MAP<STRING, BIGINT>"))
    MapType(map<string, int64>)
    """
    if isinstance(dt, BooleanType):
        return pa.bool_()
    if isinstance(dt, TinyIntType):
        return pa.int8()
    if isinstance(dt, SmallIntType):
        return pa.int16()
    if isinstance(dt, IntType):
        return pa.int32()
    if isinstance(dt, BigIntType):
        return pa.int64()
    if isinstance(dt, FloatType):
        return pa.float32()
    if isinstance(dt, DoubleType):
        return pa.float64()
    if isinstance(dt, DecimalType):
        return pa.decimal128(dt.precision, dt.scale)
    if isinstance(dt, CharType | VarCharType):
        return pa.string()
    if isinstance(dt, BinaryType | VarBinaryType):
        return pa.binary()
    if isinstance(dt, DateType):
        return pa.date32()
    if isinstance(dt, TimeType):
        return pa.time32("ms")  # Paimon keeps TIME as int millis whatever the precision
    if isinstance(dt, TimestampType):
        return pa.timestamp(_timestamp_unit(dt.precision))
    if isinstance(dt, LocalZonedTimestampType):
        return pa.timestamp(_timestamp_unit(dt.precision), tz="UTC")
    if isinstance(dt, ArrayType):
        return pa.list_(pa.field("item", to_arrow(dt.element), nullable=dt.element.nullable))
    if isinstance(dt, MultisetType):
        # Paimon represents a multiset as MAP<element, INT NOT NULL> (element -> count).
        return pa.map_(
            pa.field("key", to_arrow(dt.element), nullable=False),
            pa.field("value", pa.int32(), nullable=False),
        )
    if isinstance(dt, MapType):
        return pa.map_(
            pa.field("key", to_arrow(dt.key), nullable=False),
            pa.field("value", to_arrow(dt.value), nullable=dt.value.nullable),
        )
    if isinstance(dt, RowType):
        return pa.struct([arrow_field(f.name, f.type) for f in dt.fields])
    raise SchemaError(f"type {dt} has no Arrow mapping")


def arrow_field(name: str, dt: DataType) -> pa.Field:
    """An Arrow field named ``name`` of type ``to_arrow(dt)`` with ``dt``'s nullability."""
    return pa.field(name, to_arrow(dt), nullable=dt.nullable)


def arrow_schema(fields: Sequence[DataField]) -> pa.Schema:
    """The Arrow schema of a list of Paimon fields (in order)."""
    return pa.schema([arrow_field(f.name, f.type) for f in fields])


_ARROW_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def from_arrow(pa_type: pa.DataType, nullable: bool = True) -> DataType:
    """The Paimon type for an Arrow type (the inverse of :func:`to_arrow` on its image).

    Struct members get ids 0..n-1; schema creation assigns the real, table-wide ids.

    >>> str(from_arrow(pa.large_string(), nullable=False))
    'STRING NOT NULL'
    """
    t = pa.types
    if t.is_dictionary(pa_type):
        return from_arrow(pa_type.value_type, nullable)
    simple: DataType | None = None
    if t.is_boolean(pa_type):
        simple = BooleanType()
    elif t.is_int8(pa_type):
        simple = TinyIntType()
    elif t.is_int16(pa_type):
        simple = SmallIntType()
    elif t.is_int32(pa_type):
        simple = IntType()
    elif t.is_int64(pa_type):
        simple = BigIntType()
    elif t.is_float32(pa_type):
        simple = FloatType()
    elif t.is_float64(pa_type):
        simple = DoubleType()
    elif t.is_decimal(pa_type):
        if pa_type.precision > 38:
            raise SchemaError(f"Arrow type {pa_type} does not fit Paimon's DECIMAL (precision <= 38)")
        simple = DecimalType(pa_type.precision, pa_type.scale)
    elif t.is_string(pa_type) or t.is_large_string(pa_type) or t.is_string_view(pa_type):
        simple = VarCharType(MAX_LENGTH)
    elif t.is_fixed_size_binary(pa_type):
        simple = BinaryType(pa_type.byte_width)
    elif t.is_binary(pa_type) or t.is_large_binary(pa_type) or t.is_binary_view(pa_type):
        simple = VarBinaryType(MAX_LENGTH)
    elif t.is_date(pa_type):
        simple = DateType()
    elif t.is_time(pa_type):
        simple = TimeType(_ARROW_UNIT_PRECISION[pa_type.unit])
    elif t.is_timestamp(pa_type):
        precision = _ARROW_UNIT_PRECISION[pa_type.unit]
        simple = TimestampType(precision) if pa_type.tz is None else LocalZonedTimestampType(precision)
    if simple is not None:
        return simple.copy(nullable)
    if (
        t.is_list(pa_type)
        or t.is_large_list(pa_type)
        or t.is_fixed_size_list(pa_type)
        or t.is_list_view(pa_type)
    ):
        vf = pa_type.value_field
        return ArrayType(from_arrow(vf.type, vf.nullable), nullable=nullable)
    if t.is_map(pa_type):
        key = from_arrow(pa_type.key_field.type, False)
        value = from_arrow(pa_type.item_field.type, pa_type.item_field.nullable)
        return MapType(key, value, nullable=nullable)
    if t.is_struct(pa_type):
        members = tuple(
            DataField(i, pa_type.field(i).name, from_arrow(pa_type.field(i).type, pa_type.field(i).nullable))
            for i in range(pa_type.num_fields)
        )
        return RowType(members, nullable=nullable)
    raise SchemaError(
        f"Arrow type {pa_type} has no Paimon equivalent; cast the column to a supported type "
        "(e.g. unsigned integers to a wider signed integer)"
    )


# --------------------------------------------------------------------------------------------
# Type widening


_INTEGER_RANK: dict[type[DataType], int] = {TinyIntType: 0, SmallIntType: 1, IntType: 2, BigIntType: 3}
# Decimal digits needed to hold every value of each integer type.
_INTEGER_DIGITS: dict[type[DataType], int] = {TinyIntType: 3, SmallIntType: 5, IntType: 10, BigIntType: 19}


def is_widening(old: DataType, new: DataType) -> bool:
    """Whether every value of ``old`` converts to ``new`` without loss (ALTER COLUMN TYPE).

    Lossless subset of Paimon's implicit casts: wider integers, integers into FLOAT/DOUBLE when
    exact, FLOAT -> DOUBLE, integers and decimals into decimals with enough integer and fraction
    digits, longer (VAR)CHAR -> VARCHAR/STRING, longer (VAR)BINARY -> VARBINARY/BYTES, higher
    TIME / TIMESTAMP precision, DATE -> TIMESTAMP, and element-wise widening of nested types.
    A NOT NULL column may become nullable, not the other way round.

    >>> is_widening(IntType(), BigIntType()), is_widening(BigIntType(), IntType())
    (True, False)
    """
    if old.nullable and not new.nullable:
        return False
    if old.copy(True) == new.copy(True):
        return True
    o, n = type(old), type(new)
    if o in _INTEGER_RANK:
        if n in _INTEGER_RANK:
            return _INTEGER_RANK[o] <= _INTEGER_RANK[n]
        if n is FloatType:
            return o in (TinyIntType, SmallIntType)  # float's 24-bit mantissa
        if n is DoubleType:
            return o is not BigIntType  # double's 53-bit mantissa
        if isinstance(new, DecimalType):
            return new.precision - new.scale >= _INTEGER_DIGITS[o]
        return False
    if isinstance(old, FloatType):
        return n is DoubleType
    if isinstance(old, DecimalType):
        return (
            isinstance(new, DecimalType)
            and new.scale >= old.scale
            and new.precision - new.scale >= old.precision - old.scale
        )
    if isinstance(old, CharType | VarCharType):
        return isinstance(new, VarCharType) and new.length >= old.length
    if isinstance(old, BinaryType | VarBinaryType):
        return isinstance(new, VarBinaryType) and new.length >= old.length
    if isinstance(old, TimeType):
        return isinstance(new, TimeType) and new.precision >= old.precision
    if isinstance(old, DateType):
        return isinstance(new, TimestampType)
    if isinstance(old, TimestampType):
        return isinstance(new, TimestampType) and new.precision >= old.precision
    if isinstance(old, LocalZonedTimestampType):
        return isinstance(new, LocalZonedTimestampType) and new.precision >= old.precision
    if isinstance(old, ArrayType):
        return isinstance(new, ArrayType) and is_widening(old.element, new.element)
    if isinstance(old, MultisetType):
        return isinstance(new, MultisetType) and is_widening(old.element, new.element)
    if isinstance(old, MapType):
        return (
            isinstance(new, MapType) and is_widening(old.key, new.key) and is_widening(old.value, new.value)
        )
    if isinstance(old, RowType):
        return (
            isinstance(new, RowType)
            and len(old.fields) == len(new.fields)
            and all(
                a.id == b.id and a.name == b.name and is_widening(a.type, b.type)
                for a, b in zip(old.fields, new.fields, strict=True)
            )
        )
    return False
