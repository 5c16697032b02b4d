"""Schema changes for :meth:`Catalog.alter_table`, applied by a side-effect-free function."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from stratalake import option_support
from stratalake.exceptions import SchemaError
from stratalake.spec.schema import TableSchema
from stratalake.types import ArrayType, DataField, DataType, MapType, MultisetType, RowType, is_widening


@dataclass(frozen=True)
class SchemaChange:
    """One change. Build with the static constructors, e.g. ``SchemaChange.add_column("c", "INT")``."""

    action: str
    name: str | None = None
    new_name: str | None = None
    type: str | None = None
    value: str | None = None
    comment: str | None = None
    #: where a column goes (add_column, update_column_position): ``("first", None)`` or
    #: ``("after", <column>)``; None keeps it where it is (a new column goes last).
    move: tuple[str, str | None] | None = None

    @staticmethod
    def add_column(
        name: str,
        type: str | DataType,
        comment: str | None = None,
        first: bool = False,
        after: str | None = None,
    ) -> SchemaChange:
        """A new nullable column, last unless ``first`` or ``after`` another column."""
        return SchemaChange("add_column", name=name, type=str(type), comment=comment, move=_move(first, after))

    @staticmethod
    def update_column_position(name: str, first: bool = False, after: str | None = None) -> SchemaChange:
        """Move a column first or after another (Paimon's ``SchemaChange.Move``); files are read
        by field id, so existing data is unaffected."""
        move = _move(first, after)
        if move is None:
            raise SchemaError(f"moving column '{name}': say where (first, or after another column)")
        return SchemaChange("update_column_position", name=name, move=move)

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
    def update_column_default_value(name: str, default: str | None) -> SchemaChange:
        """Set a column's DEFAULT to the SQL literal ``default`` (e.g. ``"0"``, ``"'n/a'"``), or drop
        it with None (Paimon's ``SchemaChange.updateColumnDefaultValue``). Writes fill the default
        into every null of the column; rows already written keep their values."""
        return SchemaChange("update_column_default_value", name=name, value=default)

    @staticmethod
    def set_option(key: str, value: str) -> SchemaChange:
        return SchemaChange("set_option", name=key, value=str(value))

    @staticmethod
    def remove_option(key: str) -> SchemaChange:
        return SchemaChange("remove_option", name=key)

    @staticmethod
    def update_comment(comment: str | None) -> SchemaChange:
        return SchemaChange("update_comment", comment=comment)


def _move(first: bool, after: str | None) -> tuple[str, str | None] | None:
    if first and after is not None:
        raise SchemaError(f"a column goes first or after '{after}', not both")
    return ("first", None) if first else ("after", after) if after is not None else None


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
            top = highest
            # Fields inside a new ROW get fresh ids after the column's own (SchemaManager's AddColumn).
            dt, highest = reassign_ids(dt, highest)
            fields.append(DataField(top, ch.name, dt, ch.comment))
            if ch.move is not None:
                _place(fields, len(fields) - 1, ch.move, index_of, table)
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
        elif ch.action == "update_column_default_value":
            i = index_of(ch.name)
            fields[i] = replace(fields[i], default_value=ch.value)
        elif ch.action == "set_option":
            assert ch.name is not None and ch.value is not None
            option_support.check_option_change(options, ch.name, ch.value, table)
            options[ch.name] = ch.value
        elif ch.action == "remove_option":
            assert ch.name is not None
            option_support.check_option_change(options, ch.name, None, table)
            options.pop(ch.name, None)
        elif ch.action == "update_column_position":
            assert ch.move is not None
            _place(fields, index_of(ch.name), ch.move, index_of, table)
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


def _place(
    fields: list[DataField],
    i: int,
    move: tuple[str, str | None],
    index_of: Callable[[str | None], int],
    table: str,
) -> None:
    """Move ``fields[i]`` first or right after the column ``move`` names."""
    kind, reference = move
    if kind == "after" and reference == fields[i].name:
        raise SchemaError(f"table {table}: column '{reference}' cannot go after itself")
    if kind == "after":
        index_of(reference)  # SchemaError naming the columns when the reference does not exist
    field = fields.pop(i)
    target = 0 if kind == "first" else index_of(reference) + 1
    fields.insert(target, field)


def reassign_ids(dt: DataType, highest: int) -> tuple[DataType, int]:
    """``dt`` with every ROW field numbered on from ``highest`` (each field after the fields inside
    it, as Paimon's ``ReassignFieldId`` numbers them), and the new highest id."""
    if isinstance(dt, RowType):
        fields = []
        for f in dt.fields:
            inner, highest = reassign_ids(f.type, highest)
            highest += 1
            fields.append(replace(f, id=highest, type=inner))
        return replace(dt, fields=tuple(fields)), highest
    if isinstance(dt, ArrayType | MultisetType):
        element, highest = reassign_ids(dt.element, highest)
        return replace(dt, element=element), highest
    if isinstance(dt, MapType):
        key, highest = reassign_ids(dt.key, highest)
        value, highest = reassign_ids(dt.value, highest)
        return replace(dt, key=key, value=value), highest
    return dt, highest
