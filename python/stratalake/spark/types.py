"""Spark <-> Paimon type conversion.

Spark types arrive as Spark's JSON (``StructType.json()``), Paimon types as SQL type strings
(``str(DataType)``, e.g. ``"DECIMAL(10, 2) NOT NULL"``), parsed by :mod:`stratalake.types`, which
lists the supported types (``ATOMIC_TYPES``); this module only names their Spark types.

>>> spark_to_paimon("long", nullable=False)
'BIGINT NOT NULL'
>>> paimon_to_spark("ARRAY<INT NOT NULL>")
{'type': 'array', 'elementType': 'integer', 'containsNull': False}
"""

from __future__ import annotations

import re
from typing import Any

from stratalake.exceptions import UnsupportedError
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
    TinyIntType,
    VarBinaryType,
    VarCharType,
)

SparkType = Any  # Spark's JSON type: a str ("integer") or a dict ({"type": "array", ...})

# Spark's name of each atomic type of stratalake.types.ATOMIC_TYPES but DECIMAL (parameters) and
# TIME (Spark has none). The first type of each Spark name is the one Spark's values are stored as.
_SPARK_NAMES: dict[type[DataType], str] = {
    BooleanType: "boolean",
    TinyIntType: "byte",
    SmallIntType: "short",
    IntType: "integer",
    BigIntType: "long",
    FloatType: "float",
    DoubleType: "double",
    VarCharType: "string",
    CharType: "string",
    VarBinaryType: "binary",
    BinaryType: "binary",
    DateType: "date",
    LocalZonedTimestampType: "timestamp",
    TimestampType: "timestamp_ntz",
}

# Spark name -> Paimon type string (STRING, BYTES, TIMESTAMP(6)...): reversed, so the first wins.
_SPARK_ATOMIC = {name: str(cls()) for cls, name in reversed(_SPARK_NAMES.items())}


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def spark_to_paimon(spark_type: SparkType, nullable: bool = True) -> str:
    """The Paimon SQL type string for a Spark JSON type."""
    suffix = "" if nullable else " NOT NULL"
    if isinstance(spark_type, str):
        m = re.fullmatch(r"string collate (\w+)", spark_type, re.IGNORECASE)
        if m:
            # Spark 4 spells out the default collation (e.g. in SHOW CREATE TABLE); Paimon has no others.
            if m.group(1).upper() != "UTF8_BINARY":
                raise UnsupportedError(f"collation {m.group(1)} is not supported; use UTF8_BINARY")
            spark_type = "string"
        if spark_type in _SPARK_ATOMIC:
            return _SPARK_ATOMIC[spark_type] + suffix
        m = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", spark_type)
        if m:
            return f"DECIMAL({m.group(1)}, {m.group(2)}){suffix}"
        m = re.fullmatch(r"(char|varchar)\((\d+)\)", spark_type)
        if m:
            return f"{m.group(1).upper()}({m.group(2)}){suffix}"
        raise UnsupportedError(f"Spark type {spark_type!r} has no stratalake equivalent")
    kind = spark_type.get("type")
    if kind == "array":
        element = spark_to_paimon(spark_type["elementType"], spark_type.get("containsNull", True))
        return f"ARRAY<{element}>{suffix}"
    if kind == "map":
        key = spark_to_paimon(spark_type["keyType"], False)
        value = spark_to_paimon(spark_type["valueType"], spark_type.get("valueContainsNull", True))
        return f"MAP<{key}, {value}>{suffix}"
    if kind == "struct":
        fields = []
        for f in spark_type["fields"]:
            field = f"{_quote(f['name'])} {spark_to_paimon(f['type'], f.get('nullable', True))}"
            comment = (f.get("metadata") or {}).get("comment")
            if comment:
                field += " '" + comment.replace("'", "''") + "'"
            fields.append(field)
        return f"ROW<{', '.join(fields)}>{suffix}"
    raise UnsupportedError(f"Spark type {spark_type!r} has no stratalake equivalent")


def _to_spark(dt: DataType, text: str) -> SparkType:
    if isinstance(dt, ArrayType):
        return {
            "type": "array",
            "elementType": _to_spark(dt.element, text),
            "containsNull": dt.element.nullable,
        }
    if isinstance(dt, MultisetType):  # Paimon's MULTISET<T> is stored as MAP<T, INT NOT NULL>
        return {
            "type": "map",
            "keyType": _to_spark(dt.element, text),
            "valueType": "integer",
            "valueContainsNull": False,
        }
    if isinstance(dt, MapType):
        return {
            "type": "map",
            "keyType": _to_spark(dt.key, text),
            "valueType": _to_spark(dt.value, text),
            "valueContainsNull": dt.value.nullable,
        }
    if isinstance(dt, RowType):
        fields = [
            {
                "name": f.name,
                "type": _to_spark(f.type, text),
                "nullable": f.type.nullable,
                "metadata": {"comment": f.description} if f.description else {},
            }
            for f in dt.fields
        ]
        return {"type": "struct", "fields": fields}
    if isinstance(dt, DecimalType):
        return f"decimal({dt.precision},{dt.scale})"
    name = _SPARK_NAMES.get(type(dt))
    if name is None:
        raise UnsupportedError(f"Paimon type {text!r} cannot be read by Spark")
    return name


def paimon_to_spark(paimon_type: str) -> SparkType:
    """The Spark JSON type of a Paimon SQL type string (its top-level nullability dropped)."""
    return paimon_to_spark_field(paimon_type)[0]


def paimon_to_spark_field(paimon_type: str) -> tuple[SparkType, bool]:
    """(Spark JSON type, nullable) of a Paimon SQL type string."""
    dt = DataType.parse(paimon_type)
    return _to_spark(dt, paimon_type), dt.nullable
