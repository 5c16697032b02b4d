"""Paimon's REST catalog protocol: the JSON of its messages and its error codes, shared by the
stratalake REST client (:mod:`stratalake.catalog.rest`) and server (:mod:`stratalake.server`).

The wire format follows Paimon's OpenAPI document (``docs/static/rest-catalog-open-api.yaml``)
as Paimon Java's ``RESTCatalog`` and pypaimon 2.1's ``RESTApi`` speak it: resource names are one
URL path segment each, form-encoded (Java's ``URLEncoder``: ``+`` for a space, ``/`` escaped);
a table's ``schema`` is Paimon's ``Schema`` (fields with ids, keys, options, comment); a schema
change is an object with an ``action`` (``setOption``, ``addColumn``...); errors are an
``ErrorResponse`` (``code``, ``message``, ``resourceType``, ``resourceName``).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote_plus, unquote_plus

from stratalake.catalog.schema_change import SchemaChange
from stratalake.exceptions import (
    CommitConflictError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidIdentifierError,
    InvalidOptionError,
    SchemaError,
    SnapshotNotFoundError,
    StrataLakeError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
    UnsupportedError,
)
from stratalake.spec.schema import TableSchema
from stratalake.store.table_store import TableStore
from stratalake.types import ArrayType, DataField, DataType, MapType, MultisetType, RowType

V1 = "v1"
DATABASES = "databases"
TABLES = "tables"

# ErrorResponse.resourceType values (Paimon's ErrorResponse constants).
DATABASE = "DATABASE"
TABLE = "TABLE"
SNAPSHOT = "SNAPSHOT"
TAG = "TAG"

# The query parameters of paged lists.
MAX_RESULTS = "maxResults"
PAGE_TOKEN = "pageToken"
DATABASE_NAME_PATTERN = "databaseNamePattern"
TABLE_NAME_PATTERN = "tableNamePattern"
PARTITION_NAME_PATTERN = "partitionNamePattern"


class RestError(StrataLakeError):
    """An error a REST catalog server answered with (an ``ErrorResponse``)."""

    def __init__(
        self, code: int, message: str, resource_type: str | None = None, resource_name: str | None = None
    ):
        super().__init__(message)
        self.code = code
        self.resource_type = resource_type
        self.resource_name = resource_name


class BadRequestError(InvalidOptionError, SchemaError, InvalidIdentifierError):
    """The server refused a request as invalid (HTTP 400): a bad name, option or schema. The
    protocol's ErrorResponse does not say which, so this is each of those errors."""


def encode(name: str) -> str:
    """``name`` as one URL path segment, as Paimon's clients encode it (Java ``URLEncoder``)."""
    return quote_plus(name, safe="*").replace("~", "%7E")


def decode(segment: str) -> str:
    """The name a path segment encodes (``+`` is a space, as Java's ``URLDecoder`` reads it)."""
    return unquote_plus(segment, errors="strict")


# -- errors ------------------------------------------------------------------------------------------


def error_of(exc: BaseException) -> tuple[int, str | None]:
    """The HTTP code and ``resourceType`` a server answers a catalog error with."""
    if isinstance(exc, DatabaseNotFoundError):
        return 404, DATABASE
    if isinstance(exc, TableNotFoundError):
        return 404, TABLE
    if isinstance(exc, TagNotFoundError):
        return 404, TAG
    if isinstance(exc, SnapshotNotFoundError):
        return 404, SNAPSHOT
    if isinstance(exc, DatabaseAlreadyExistsError):
        return 409, DATABASE
    if isinstance(exc, TableAlreadyExistsError):
        return 409, TABLE
    if isinstance(exc, TagAlreadyExistsError):
        return 409, TAG
    if isinstance(exc, CommitConflictError):
        return 409, TABLE
    if isinstance(exc, UnsupportedError):
        return 501, None
    if isinstance(
        exc, (InvalidIdentifierError, InvalidOptionError, SchemaError, DatabaseNotEmptyError, ValueError)
    ):
        return 400, None
    return 500, None


def exception_of(error: RestError, what: str) -> StrataLakeError:
    """The stratalake exception for an ``ErrorResponse`` (``what``: the request, for the message)."""
    message = f"REST catalog: {what}: {error}"
    if error.code == 404:
        if error.resource_type == DATABASE:
            return DatabaseNotFoundError(message)
        if error.resource_type == SNAPSHOT:
            return SnapshotNotFoundError(message)
        if error.resource_type == TAG:
            return TagNotFoundError(message)
        if error.resource_type == TABLE:
            return TableNotFoundError(message)
        return RestError(404, message, error.resource_type)
    if error.code == 409:
        if error.resource_type == DATABASE:
            return DatabaseAlreadyExistsError(message)
        if error.resource_type == TAG:
            return TagAlreadyExistsError(message)
        return TableAlreadyExistsError(message)
    if error.code == 400:
        return BadRequestError(message)
    if error.code == 501:
        return UnsupportedError(message)
    return error if error.code in (401, 403) else RestError(error.code, message, error.resource_type)


# -- paging -----------------------------------------------------------------------------------------


def like_pattern(pattern: str) -> re.Pattern[str]:
    """A name pattern of Paimon's list calls (SQL ``LIKE``: ``%`` any run, ``_`` one character)."""
    out = []
    for ch in pattern:
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
    return re.compile("".join(out), re.DOTALL)


def page(names: Sequence[str], max_results: int | None, token: str | None) -> tuple[list[str], str | None]:
    """One page of sorted ``names`` after ``token`` (the last name of the previous page)."""
    rest = [n for n in sorted(names) if token is None or n > token]
    if max_results is None or max_results <= 0 or len(rest) <= max_results:
        return rest, None
    chosen = rest[:max_results]
    return chosen, chosen[-1]


# -- schemas ----------------------------------------------------------------------------------------


def schema_to_json(schema: TableSchema) -> dict[str, Any]:
    """A table schema as the REST ``Schema`` object (no id or version: those are the server's)."""
    out: dict[str, Any] = {
        "fields": [f.to_json() for f in schema.fields],
        "partitionKeys": list(schema.partition_keys),
        "primaryKeys": list(schema.primary_keys),
        "options": dict(schema.options),
    }
    if schema.comment is not None:
        out["comment"] = schema.comment
    return out


def schema_from_json(raw: Mapping[str, Any], schema_id: int, table: str) -> TableSchema:
    """The :class:`TableSchema` a ``GetTableResponse`` describes (``schema_id`` from its ``schemaId``)."""
    try:
        fields = tuple(DataField.from_json(f) for f in raw.get("fields") or [])
        return TableSchema(
            id=schema_id,
            fields=fields,
            highest_field_id=_highest_id(fields),
            partition_keys=tuple(str(k) for k in raw.get("partitionKeys") or []),
            primary_keys=tuple(str(k) for k in raw.get("primaryKeys") or []),
            options={str(k): str(v) for k, v in (raw.get("options") or {}).items()},
            comment=raw.get("comment"),
            time_millis=int(time.time() * 1000),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise SchemaError(
            f"table {table}: the REST catalog returned a schema stratalake cannot read: {e}"
        ) from e


def columns_from_json(
    raw: Mapping[str, Any], table: str
) -> list[tuple[str, DataType, str | None, str | None]]:
    """The ``(name, type, comment, default)`` columns of a ``CreateTableRequest`` schema."""
    fields = raw.get("fields")
    if not isinstance(fields, list) or not fields:
        raise SchemaError(f"table {table}: the request's schema has no 'fields'")
    out: list[tuple[str, DataType, str | None, str | None]] = []
    for f in fields:
        field = DataField.from_json(f)
        out.append((field.name, field.type, field.description, field.default_value))
    return out


def _highest_id(fields: Sequence[DataField]) -> int:
    best = -1

    def visit(dt: DataType) -> None:
        nonlocal best
        if isinstance(dt, RowType):
            for m in dt.fields:
                best = max(best, m.id)
                visit(m.type)
        elif isinstance(dt, (ArrayType, MultisetType)):
            visit(dt.element)
        elif isinstance(dt, MapType):
            visit(dt.key)
            visit(dt.value)

    for f in fields:
        best = max(best, f.id)
        visit(f.type)
    return best


# -- schema changes ---------------------------------------------------------------------------------

_UNSUPPORTED_ACTIONS = {
    "updateColumnNullability": "changing a column's nullability",
    "updateColumnPosition": "moving a column",
}


def change_to_json(change: SchemaChange) -> dict[str, Any]:
    """One stratalake :class:`SchemaChange` as Paimon's REST ``SchemaChange`` object."""
    a = change.action
    if a == "set_option":
        return {"action": "setOption", "key": change.name, "value": change.value}
    if a == "remove_option":
        return {"action": "removeOption", "key": change.name}
    if a == "update_comment":
        return {"action": "updateComment", "comment": change.comment}
    if a == "add_column":
        assert change.type is not None
        out: dict[str, Any] = {
            "action": "addColumn",
            "fieldNames": [change.name],
            "dataType": DataType.parse(change.type).to_json(),
        }
        if change.comment is not None:
            out["comment"] = change.comment
        return out
    if a == "rename_column":
        return {"action": "renameColumn", "fieldNames": [change.name], "newName": change.new_name}
    if a == "drop_column":
        return {"action": "dropColumn", "fieldNames": [change.name]}
    if a == "update_column_type":
        assert change.type is not None
        return {
            "action": "updateColumnType",
            "fieldNames": [change.name],
            "newDataType": DataType.parse(change.type).to_json(),
            "keepNullability": True,
        }
    if a == "update_column_comment":
        return {"action": "updateColumnComment", "fieldNames": [change.name], "newComment": change.comment}
    if a == "update_column_default_value":
        return {"action": "updateColumnDefaultValue", "fieldNames": [change.name], "newDefaultValue": change.value}
    raise SchemaError(f"unknown schema change '{a}'")


def change_from_json(raw: Mapping[str, Any], table: str) -> SchemaChange:
    """A Paimon REST ``SchemaChange`` object as a stratalake :class:`SchemaChange`; changes
    stratalake does not make (nested columns, moves, nullability) refused by name."""
    action = raw.get("action")
    if action in _UNSUPPORTED_ACTIONS:
        raise UnsupportedError(
            f"table {table}: schema change '{action}' ({_UNSUPPORTED_ACTIONS[action]}) is not supported"
        )
    if action == "setOption":
        return SchemaChange.set_option(str(raw["key"]), str(raw["value"]))
    if action == "removeOption":
        return SchemaChange.remove_option(str(raw["key"]))
    if action == "updateComment":
        return SchemaChange.update_comment(raw.get("comment"))
    name = _column(raw, table, str(action))
    if action == "addColumn":
        if raw.get("move") is not None:
            raise UnsupportedError(
                f"table {table}: adding column '{name}' at a position ('move') is not supported"
            )
        return SchemaChange.add_column(name, DataType.parse(raw["dataType"]), raw.get("comment"))
    if action == "renameColumn":
        return SchemaChange.rename_column(name, str(raw["newName"]))
    if action == "dropColumn":
        return SchemaChange.drop_column(name)
    if action == "updateColumnType":
        new = DataType.parse(raw["newDataType"])
        if raw.get("keepNullability") is False:
            raise UnsupportedError(
                f"table {table}: changing the nullability of column '{name}' with its type "
                "('keepNullability' = false) is not supported"
            )
        return SchemaChange.update_column_type(name, new)
    if action == "updateColumnComment":
        return SchemaChange.update_column_comment(name, raw.get("newComment"))
    if action == "updateColumnDefaultValue":
        value = raw.get("newDefaultValue")
        return SchemaChange.update_column_default_value(name, None if value is None else str(value))
    raise UnsupportedError(f"table {table}: schema change action {action!r} is not one stratalake knows")


def _column(raw: Mapping[str, Any], table: str, action: str) -> str:
    names = raw.get("fieldNames")
    if not isinstance(names, list) or not names:
        raise SchemaError(f"table {table}: schema change '{action}' has no 'fieldNames'")
    if len(names) != 1:
        raise UnsupportedError(
            f"table {table}: schema change '{action}' on nested column {'.'.join(map(str, names))} is not supported"
        )
    return str(names[0])


# -- table facts ------------------------------------------------------------------------------------


def table_uuid(table: TableStore) -> str:
    """A stable id of the table at its location: it changes when the table is dropped and made
    again (schema-0's creation time is part of it), so a commit for the old table is refused."""
    ids = table.schema_manager.list_ids()
    first = table.schema_manager.schema(ids[0]).time_millis if ids else 0
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{table.location}#{first}"))
