"""Reads and commits schema files (``schema/schema-<id>``)."""

from __future__ import annotations

import re

from stratalake.exceptions import CorruptFileError, TableNotFoundError
from stratalake.io import FileIO
from stratalake.spec.schema import TableSchema

_SCHEMA_RE = re.compile(r"^schema-(\d+)$")


class SchemaManager:
    """All schema-file I/O of one table. Schema files are immutable, so they are cached."""

    def __init__(self, file_io: FileIO, table_path: str, table_name: str = "table") -> None:
        self.file_io = file_io
        self.table_path = table_path.rstrip("/")
        self.table_name = table_name
        self.schema_dir = f"{self.table_path}/schema"
        self._cache: dict[int, TableSchema] = {}

    def schema_path(self, schema_id: int) -> str:
        return f"{self.schema_dir}/schema-{schema_id}"

    def list_ids(self) -> list[int]:
        ids = []
        for status in self.file_io.list_status(self.schema_dir):
            m = _SCHEMA_RE.match(status.name)
            if m:
                ids.append(int(m.group(1)))
        return sorted(ids)

    def latest(self) -> TableSchema:
        ids = self.list_ids()
        if not ids:
            raise TableNotFoundError(
                f"table {self.table_name} does not exist (no schema at {self.schema_dir})"
            )
        return self.schema(ids[-1])

    def schema(self, schema_id: int) -> TableSchema:
        cached = self._cache.get(schema_id)
        if cached is not None:
            return cached
        path = self.schema_path(schema_id)
        try:
            text = self.file_io.read_text(path)
        except (FileNotFoundError, OSError) as e:
            raise CorruptFileError(f"table {self.table_name}: schema file {path} is missing: {e}") from None
        schema = TableSchema.from_json(text, origin=path)
        self._cache[schema_id] = schema
        return schema

    def forget_all(self) -> None:
        """Drop every cached schema (after a fast-forward replaced schema files)."""
        self._cache.clear()

    def try_commit(self, schema: TableSchema) -> bool:
        """Atomically create ``schema-<id>``; False when a concurrent change took that id."""
        ok = self.file_io.try_create_atomic(self.schema_path(schema.id), schema.to_json().encode())
        if ok:
            self._cache[schema.id] = schema
        return ok
