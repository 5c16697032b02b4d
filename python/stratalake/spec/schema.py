"""Table schema files (docs/format.md section 2): a frozen object and its JSON codec. No I/O.

:class:`DataField` is :class:`stratalake.types.DataField` (ROW members and table columns share
one class, as in Paimon); it is re-exported here because a schema is made of them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

import pyarrow as pa

from stratalake.exceptions import CorruptFileError, SchemaError, StrataLakeError
from stratalake.types import DataField, arrow_schema

__all__ = ["CURRENT_VERSION", "DataField", "TableSchema"]

#: Schema file version Paimon writes today (1.0+).
CURRENT_VERSION: Final = 3
# Java SchemaSerializer fills in what older versions defaulted to.
_PAIMON_07_VERSION: Final = 1
_PAIMON_08_VERSION: Final = 2


@dataclass(frozen=True, slots=True)
class TableSchema:
    """One version of a table's schema (``schema/schema-<id>``).

    >>> from stratalake.types import DataType
    >>> s = TableSchema(
    ...     id=0,
    ...     fields=(
    ...         DataField(0, "id", DataType.parse("BIGINT NOT NULL")),
    ...         DataField(1, "dt", DataType.parse("STRING NOT NULL")),
    ...     ),
    ...     highest_field_id=1,
    ...     partition_keys=("dt",),
    ...     primary_keys=("id", "dt"),
    ...     options={"bucket": "2"},
    ... )
    >>> s.trimmed_primary_keys, s.bucket_keys
    (('id',), ('id',))
    >>> TableSchema.from_json(s.to_json(), "schema-0") == s
    True
    """

    id: int
    fields: tuple[DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    # Stored read-only; excluded from hashing because mappings are unhashable.
    options: Mapping[str, str] = field(default_factory=dict, hash=False)
    comment: str | None = None
    time_millis: int = 0
    version: int = CURRENT_VERSION

    def __post_init__(self) -> None:
        # Accept lists and plain dicts from callers, keep the object immutable.
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "partition_keys", tuple(self.partition_keys))
        object.__setattr__(self, "primary_keys", tuple(self.primary_keys))
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        self._validate()

    def _validate(self) -> None:
        names = self.field_names
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise SchemaError(f"schema {self.id}: duplicate column names {dupes}")
        ids = [f.id for f in self.fields]
        if len(set(ids)) != len(ids):
            raise SchemaError(f"schema {self.id}: duplicate field ids {sorted(ids)}")
        if ids and max(ids) > self.highest_field_id:
            raise SchemaError(
                f"schema {self.id}: field id {max(ids)} exceeds highestFieldId {self.highest_field_id}"
            )
        for kind, keys in (("partition key", self.partition_keys), ("primary key", self.primary_keys)):
            missing = [k for k in keys if k not in names]
            if missing:
                raise SchemaError(
                    f"schema {self.id}: {kind} columns {missing} are not among the columns {list(names)}"
                )

    # ---------------------------------------------------------------- helpers

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def field(self, name: str) -> DataField:
        """The column called ``name``; SchemaError naming the columns if there is none."""
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaError(f"column {name!r} does not exist; columns are {list(self.field_names)}")

    @property
    def trimmed_primary_keys(self) -> tuple[str, ...]:
        """The primary key without partition columns: the merge and sort key of a bucket."""
        partition = set(self.partition_keys)
        return tuple(k for k in self.primary_keys if k not in partition)

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        """Columns hashed to pick a bucket: option ``bucket-key``, else the trimmed primary key."""
        option = self.options.get("bucket-key")
        if option is None or not option.strip():
            return self.trimmed_primary_keys
        return tuple(k.strip() for k in option.split(","))

    def logical_arrow_schema(self) -> pa.Schema:
        """Arrow schema of the table's columns; NOT NULL types give non-nullable fields."""
        return arrow_schema(self.fields)

    # ---------------------------------------------------------------- JSON

    def to_json(self) -> str:
        """The schema file text, keys in Java Paimon's order, pretty-printed with indent 2.

        Like Java, ``comment`` is left out when null: Java reads a JSON null comment back as the
        string "null".
        """
        out: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "fields": [f.to_json() for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        if self.comment is not None:
            out["comment"] = self.comment
        out["timeMillis"] = self.time_millis
        return json.dumps(out, indent=2, ensure_ascii=False)

    @staticmethod
    def from_json(text: str | bytes, origin: str = "schema") -> TableSchema:
        """Parse a schema file written by stratalake, pypaimon or Java Paimon.

        ``origin`` (the file path) is named in the CorruptFileError raised for malformed input.
        """
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict):
                raise TypeError(f"expected a JSON object, got {type(raw).__name__}")
            version = int(raw.get("version", _PAIMON_07_VERSION))
            options = {str(k): _option_text(v) for k, v in raw["options"].items()}
            if version <= _PAIMON_07_VERSION:
                options.setdefault("bucket", "1")
            if version <= _PAIMON_08_VERSION:
                options.setdefault("file.format", "orc")
            return TableSchema(
                id=int(raw["id"]),
                fields=tuple(DataField.from_json(f) for f in raw["fields"]),
                highest_field_id=int(raw["highestFieldId"]),
                partition_keys=_strings(raw["partitionKeys"]),
                primary_keys=_strings(raw["primaryKeys"]),
                options=options,
                comment=raw.get("comment"),
                time_millis=int(raw.get("timeMillis") or 0),
                version=version,
            )
        except (
            ValueError,
            ArithmeticError,
            KeyError,
            TypeError,
            AttributeError,
            RecursionError,
            StrataLakeError,
        ) as e:
            # RecursionError: absurdly deep JSON nesting (json and the type parser recurse).
            raise CorruptFileError(f"{origin} is not a valid schema file: {type(e).__name__}: {e}") from e


def _strings(values: Sequence[Any]) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, list):
        raise TypeError(f"expected a list of column names, got {values!r}")
    return tuple(str(v) for v in values)


def _option_text(value: Any) -> str:
    # Options are strings on disk; tolerate hand-written numbers and booleans like Java's asText.
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    raise TypeError(f"option value {value!r} is not a string")
