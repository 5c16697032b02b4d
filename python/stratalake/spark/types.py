"""Spark <-> Paimon type conversion, on the string forms both sides already speak.

Spark types arrive as Spark's JSON (``StructType.json()``), Paimon types as SQL type strings
(``str(DataType)``, e.g. ``"DECIMAL(10, 2) NOT NULL"``). Working on those forms keeps this module
free of the JVM and of the core's type classes.

>>> spark_to_paimon("long", nullable=False)
'BIGINT NOT NULL'
>>> paimon_to_spark("ARRAY<INT NOT NULL>")
{'type': 'array', 'elementType': 'integer', 'containsNull': False}
"""

from __future__ import annotations

import re
from typing import Any

from stratalake.exceptions import SchemaError, UnsupportedError

SparkType = Any  # Spark's JSON type: a str ("integer") or a dict ({"type": "array", ...})

_SPARK_ATOMIC = {
    "boolean": "BOOLEAN",
    "byte": "TINYINT",
    "short": "SMALLINT",
    "integer": "INT",
    "long": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "string": "STRING",
    "binary": "BYTES",
    "date": "DATE",
    "timestamp": "TIMESTAMP(6) WITH LOCAL TIME ZONE",
    "timestamp_ntz": "TIMESTAMP(6)",
}

_PAIMON_ATOMIC = {
    "BOOLEAN": "boolean",
    "TINYINT": "byte",
    "SMALLINT": "short",
    "INT": "integer",
    "INTEGER": "integer",
    "BIGINT": "long",
    "FLOAT": "float",
    "DOUBLE": "double",
    "STRING": "string",
    "CHAR": "string",
    "VARCHAR": "string",
    "BYTES": "binary",
    "BINARY": "binary",
    "VARBINARY": "binary",
    "DATE": "date",
}


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


class _Parser:
    """Recursive-descent parser for Paimon SQL type strings."""

    _TOKEN = re.compile(r"\s*(`(?:[^`]|``)*`|'(?:[^']|'')*'|[A-Za-z_][A-Za-z0-9_]*|\d+|[<>(),])")

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = self._TOKEN.match(text, pos)
            if not m:
                raise SchemaError(f"cannot parse type {text!r} at position {pos}")
            self.tokens.append(m.group(1))
            pos = m.end()
        self.i = 0

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok.upper() != expected):
            raise SchemaError(f"cannot parse type {self.text!r}: expected {expected or 'more'}, got {tok}")
        self.i += 1
        return tok

    def accept(self, word: str) -> bool:
        tok = self.peek()
        if tok is not None and tok.upper() == word:
            self.i += 1
            return True
        return False

    def args(self) -> list[int]:
        out: list[int] = []
        if self.accept("("):
            out.append(int(self.take()))
            while self.accept(","):
                out.append(int(self.take()))
            self.take(")")
        return out

    def nullability(self) -> bool:
        if self.accept("NOT"):
            self.take("NULL")
            return False
        self.accept("NULL")
        return True

    def parse(self) -> tuple[SparkType, bool]:
        name = self.take().upper()
        spark: SparkType
        if name in ("ARRAY", "MULTISET"):
            self.take("<")
            element, element_nullable = self.parse()
            self.take(">")
            if name == "ARRAY":
                spark = {"type": "array", "elementType": element, "containsNull": element_nullable}
            else:  # Paimon's MULTISET<T> is stored as MAP<T, INT NOT NULL>
                spark = {
                    "type": "map",
                    "keyType": element,
                    "valueType": "integer",
                    "valueContainsNull": False,
                }
        elif name == "MAP":
            self.take("<")
            key, _ = self.parse()
            self.take(",")
            value, value_nullable = self.parse()
            self.take(">")
            spark = {"type": "map", "keyType": key, "valueType": value, "valueContainsNull": value_nullable}
        elif name == "ROW":
            self.take("<")
            fields: list[dict[str, Any]] = []
            while not self.accept(">"):
                if fields:
                    self.take(",")
                raw = self.take()
                fname = raw[1:-1].replace("``", "`") if raw.startswith("`") else raw
                ftype, fnullable = self.parse()
                metadata: dict[str, str] = {}
                nxt = self.peek()
                if nxt is not None and nxt.startswith("'"):
                    metadata["comment"] = self.take()[1:-1].replace("''", "'")
                fields.append({"name": fname, "type": ftype, "nullable": fnullable, "metadata": metadata})
            spark = {"type": "struct", "fields": fields}
        elif name == "DECIMAL":
            a = self.args() or [10, 0]
            spark = f"decimal({a[0]},{a[1] if len(a) > 1 else 0})"
        elif name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            self.args()
            ltz = name == "TIMESTAMP_LTZ"
            if self.accept("WITH"):
                self.take("LOCAL")
                self.take("TIME")
                self.take("ZONE")
                ltz = True
            elif self.accept("WITHOUT"):
                self.take("TIME")
                self.take("ZONE")
            spark = "timestamp" if ltz else "timestamp_ntz"
        elif name in _PAIMON_ATOMIC:
            self.args()
            spark = _PAIMON_ATOMIC[name]
        else:
            raise UnsupportedError(f"Paimon type {self.text!r} cannot be read by Spark")
        return spark, self.nullability()


def paimon_to_spark(paimon_type: str) -> SparkType:
    """The Spark JSON type of a Paimon SQL type string (its top-level nullability dropped)."""
    return paimon_to_spark_field(paimon_type)[0]


def paimon_to_spark_field(paimon_type: str) -> tuple[SparkType, bool]:
    """(Spark JSON type, nullable) of a Paimon SQL type string."""
    parser = _Parser(paimon_type)
    result = parser.parse()
    if parser.peek() is not None:
        raise SchemaError(f"cannot parse type {paimon_type!r}: unexpected {parser.peek()!r}")
    return result
