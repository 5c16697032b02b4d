"""Schema changes for :meth:`Catalog.alter_table`, applied by a side-effect-free function."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from stratalake.exceptions import SchemaError
from stratalake.spec.schema import TableSchema
from stratalake.types import DataField, DataType, is_widening


@dataclass(frozen=True)
class SchemaChange:
    """One change. Build with the static constructors, e.g. ``SchemaChange.add_column("c", "INT")``."""

    action: str
    name: str | None = None
    new_name: str | None = None
    type: str | None = None
    value: str | None = None
    comment: str | None = None

    @staticmethod
    def add_column(name: str, type: str | DataType, comment: str | None = None) -> SchemaChange:
        return SchemaChange("add_column", name=name, type=str(type), comment=comment)

    @staticmethod
    def rename_column(name: str, new_name: str) -> SchemaChange:
        return SchemaChange("rename_column", name=name, new_name=new_name)

    @staticmethod
    def drop_column(name: str) -> SchemaChange:
        return SchemaChange("drop_column", name=name)

    @staticmethod
    def update_column_type(name: str, type: str | DataType) -> SchemaChange:
        return SchemaChange("update_column_type", name=name, type=str(type))

    @staticmethod
    def update_column_comment(name: str, comment: str | None) -> SchemaChange:
        return SchemaChange("update_column_comment", name=name, comment=comment)

    @staticmethod
    def set_option(key: str, value: str) -> SchemaChange:
        return SchemaChange("set_option", name=key, value=str(value))

    @staticmethod
    def remove_option(key: str) -> SchemaChange:
        return SchemaChange("remove_option", name=key)

    @staticmethod
    def update_comment(comment: str | None) -> SchemaChange:
        return SchemaChange("update_comment", comment=comment)


# Options fixed at creation: changing them would reinterpret existing files.
IMMUTABLE_OPTIONS = frozenset(
    {"bucket", "bucket-key", "merge-engine", "primary-key", "partition", "sequence.field"}
)


def apply_changes(schema: TableSchema, changes: Sequence[SchemaChange], table: str) -> TableSchema:
    """The schema after ``changes`` (a new id), or SchemaError naming the column/option at fault."""
    fields = list(schema.fields)
    options = dict(schema.options)
    comment = schema.comment
    highest = schema.highest_field_id
    keys = set(schema.primary_keys) | set(schema.partition_keys)

    def index_of(name: str | None) -> int:
        for i, f in enumerate(fields):
            if f.name == name:
                return i
        raise SchemaError(
            f"table {table}: column '{name}' does not exist; columns are {[f.name for f in fields]}"
        )

    for ch in changes:
        if ch.action == "add_column":
            assert ch.name is not None and ch.type is not None
            if any(f.name == ch.name for f in fields):
                raise SchemaError(f"table {table}: column '{ch.name}' already exists")
            dt = DataType.parse(ch.type)
            if not dt.nullable:
                raise SchemaError(
                    f"table {table}: new column '{ch.name}' must be nullable (existing rows have no value)"
                )
            highest += 1
            fields.append(DataField(highest, ch.name, dt, ch.comment))
        elif ch.action == "rename_column":
            i = index_of(ch.name)
            if ch.name in keys:
                raise SchemaError(f"table {table}: cannot rename primary-key or partition column '{ch.name}'")
            assert ch.new_name is not None
            if any(f.name == ch.new_name for f in fields):
                raise SchemaError(f"table {table}: cannot rename '{ch.name}': column '{ch.new_name}' exists")
            fields[i] = replace(fields[i], name=ch.new_name)
        elif ch.action == "drop_column":
            i = index_of(ch.name)
            if ch.name in keys:
                raise SchemaError(f"table {table}: cannot drop primary-key or partition column '{ch.name}'")
            if len(fields) == 1:
                raise SchemaError(f"table {table}: cannot drop the last column '{ch.name}'")
            fields.pop(i)
        elif ch.action == "update_column_type":
            i = index_of(ch.name)
            assert ch.type is not None
            old = fields[i].type
            new = DataType.parse(ch.type).copy(nullable=old.nullable)
            if ch.name in keys and str(new) != str(old):
                raise SchemaError(f"table {table}: cannot change the type of key column '{ch.name}'")
            if not is_widening(old.copy(nullable=True), new.copy(nullable=True)) and str(old) != str(new):
                raise SchemaError(
                    f"table {table}: cannot change column '{ch.name}' from {old} to {new}; only widening "
                    "changes (e.g. INT to BIGINT, FLOAT to DOUBLE) keep existing files readable"
                )
            fields[i] = replace(fields[i], type=new)
        elif ch.action == "update_column_comment":
            i = index_of(ch.name)
            fields[i] = replace(fields[i], description=ch.comment)
        elif ch.action == "set_option":
            assert ch.name is not None and ch.value is not None
            if ch.name in IMMUTABLE_OPTIONS and options.get(ch.name) != ch.value:
                raise SchemaError(f"table {table}: option '{ch.name}' cannot be changed after creation")
            options[ch.name] = ch.value
        elif ch.action == "remove_option":
            assert ch.name is not None
            if ch.name in IMMUTABLE_OPTIONS and ch.name in options:
                raise SchemaError(f"table {table}: option '{ch.name}' cannot be removed after creation")
            options.pop(ch.name, None)
        elif ch.action == "update_comment":
            comment = ch.comment
        else:
            raise SchemaError(f"table {table}: unknown schema change '{ch.action}'")
    return TableSchema(
        id=schema.id + 1,
        fields=tuple(fields),
        highest_field_id=highest,
        partition_keys=schema.partition_keys,
        primary_keys=schema.primary_keys,
        options=options,
        comment=comment,
        time_millis=int(time.time() * 1000),
    )
