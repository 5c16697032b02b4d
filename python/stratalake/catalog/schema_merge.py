"""Write-time schema evolution (Paimon's ``write.merge-schema``): the schema changes that let a
table take a write's columns, decided without I/O.

Paimon's ``SchemaMergingUtils.merge`` with stratalake's limits:

- a column of the data the table lacks is added, nullable, after the existing ones (in the data's
  order); a table column the data lacks stays (the write fills it with NULL), unless it is NOT
  NULL (a primary key), which is refused;
- an existing column keeps its type (the write casts the values to it) unless ``type_widening``:
  then a wider data type widens it (DECIMAL to the larger precision of the same scale, otherwise
  the lossless widening ALTER TABLE ... ALTER COLUMN TYPE allows); a type the column cannot widen
  to is refused, as are type changes of primary-key and partition columns and of fields inside
  ROW columns;
- names match case-insensitively unless ``case_sensitive`` (Spark's ``spark.sql.caseSensitive``);
- fields of the data missing from a ROW column are refused (Paimon adds nested fields; stratalake
  adds top-level columns only).

Every refusal is a :class:`SchemaError` or :class:`UnsupportedError` naming the table, the column
and the types, raised before anything is committed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from stratalake.catalog.schema_change import SchemaChange
from stratalake.exceptions import SchemaError, UnsupportedError
from stratalake.spec.schema import TableSchema
from stratalake.types import (
    ArrayType,
    DataField,
    DataType,
    DecimalType,
    MapType,
    MultisetType,
    RowType,
    is_widening,
)


def merge_changes(
    schema: TableSchema,
    data: Sequence[tuple[str, DataType]],
    table: str,
    *,
    type_widening: bool = False,
    case_sensitive: bool = False,
) -> list[SchemaChange]:
    """The changes (``add_column`` / ``update_column_type``) that make ``schema`` take rows of the
    columns ``data``; empty when it takes them already (module docstring for the rules)."""

    def key(name: str) -> str:
        return name if case_sensitive else name.lower()

    incoming: dict[str, tuple[str, DataType]] = {}
    for name, dt in data:
        if key(name) in incoming:
            raise SchemaError(
                f"table {table}: the data has two columns named '{incoming[key(name)][0]}' and '{name}'"
                + ("" if case_sensitive else " (names are case-insensitive: spark.sql.caseSensitive is off)")
            )
        incoming[key(name)] = (name, dt)
    keys = set(schema.primary_keys) | set(schema.partition_keys)
    existing = {key(f.name) for f in schema.fields}
    changes: list[SchemaChange] = []
    for f in schema.fields:
        match = incoming.get(key(f.name))
        if match is None:
            if not f.type.nullable or f.name in schema.primary_keys:
                raise SchemaError(
                    f"table {table}: column '{f.name}' ({f.type}) is missing from the data; a write that "
                    "evolves the schema fills missing columns with NULL, and this one is NOT NULL"
                )
            continue
        merged = _merge(f.type, match[1], f.name, table, type_widening, key)
        if _shape(merged) == _shape(f.type):
            continue
        if f.name in keys:
            raise SchemaError(
                f"table {table}: cannot change the type of {'primary-key' if f.name in schema.primary_keys else 'partition'} "
                f"column '{f.name}' from {f.type} to {merged} (write.merge-schema.type-widening); key and "
                "partition columns keep their types: write the column as it is typed"
            )
        changes.append(SchemaChange.update_column_type(f.name, merged))
    for k, (name, dt) in incoming.items():
        if k not in existing:
            # New columns are nullable (rows written before have no value), as Paimon adds them.
            changes.append(SchemaChange.add_column(name, dt.copy(nullable=True)))
    return changes


def _merge(
    base: DataType, update: DataType, path: str, table: str, widening: bool, key: Callable[[str], str]
) -> DataType:
    """``base`` merged with the data's ``update`` (SchemaMergingUtils.merge): the base's
    nullability, ids and comments stay."""
    if _shape(base) == _shape(update):
        return base
    if isinstance(base, RowType) and isinstance(update, RowType):
        fields = {key(f.name): f for f in update.fields}
        extra = [f.name for f in update.fields if key(f.name) not in {key(b.name) for b in base.fields}]
        if extra:
            raise UnsupportedError(
                f"table {table}: column '{path}' of the data has fields its ROW type lacks "
                f"({', '.join(f'{path}.{e}' for e in extra)}); write-time schema evolution adds top-level "
                "columns only, not fields inside a ROW column"
            )
        merged = []
        for b in base.fields:
            u = fields.get(key(b.name))
            if u is None:
                merged.append(b)
                continue
            t = _merge(b.type, u.type, f"{path}.{b.name}", table, widening, key)
            if _shape(t) != _shape(b.type):
                raise UnsupportedError(
                    f"table {table}: cannot widen field '{path}.{b.name}' from {b.type} to {u.type}: "
                    "write-time type widening changes top-level columns only, not fields inside a ROW column"
                )
            merged.append(b)
        return RowType(tuple(merged), nullable=base.nullable)
    if isinstance(base, MapType) and isinstance(update, MapType):
        return MapType(
            _merge(base.key, update.key, f"{path}.key", table, widening, key),
            _merge(base.value, update.value, f"{path}.value", table, widening, key),
            nullable=base.nullable,
        )
    if isinstance(base, ArrayType) and isinstance(update, ArrayType):
        return ArrayType(
            _merge(base.element, update.element, f"{path}.element", table, widening, key),
            nullable=base.nullable,
        )
    if isinstance(base, MultisetType) and isinstance(update, MultisetType):
        return MultisetType(
            _merge(base.element, update.element, f"{path}.element", table, widening, key),
            nullable=base.nullable,
        )
    if not widening:
        return base  # the column keeps its type; the write casts the values to it
    if isinstance(base, DecimalType) and isinstance(update, DecimalType):
        if base.scale != update.scale:
            raise SchemaError(
                f"table {table}: cannot merge column '{path}' of type {base} with the data's {update}: "
                "decimal types with different scales do not merge"
            )
        return DecimalType(max(base.precision, update.precision), base.scale, nullable=base.nullable)
    if is_widening(base.copy(True), update.copy(True)):
        return update.copy(base.nullable)
    raise SchemaError(
        f"table {table}: cannot widen column '{path}' from {base} to the data's {update}: only lossless "
        "widening (e.g. INT to BIGINT, FLOAT to DOUBLE, a longer VARCHAR) changes a column's type; "
        "cast the data to the column's type, or write without 'write.merge-schema.type-widening'"
    )


def _shape(dt: DataType) -> DataType:
    """``dt`` without what a type comparison of merging ignores: nullability at every level,
    field ids, comments and defaults."""
    if isinstance(dt, RowType):
        return RowType(tuple(DataField(0, f.name, _shape(f.type)) for f in dt.fields), nullable=True)
    if isinstance(dt, MapType):
        return MapType(_shape(dt.key), _shape(dt.value), nullable=True)
    if isinstance(dt, ArrayType):
        return ArrayType(_shape(dt.element), nullable=True)
    if isinstance(dt, MultisetType):
        return MultisetType(_shape(dt.element), nullable=True)
    return dt.copy(True)
