"""Catalogs: where databases and tables live."""

from stratalake.catalog.filesystem import Catalog, build_schema, parse_identifier
from stratalake.catalog.schema_change import SchemaChange

__all__ = ["Catalog", "SchemaChange", "build_schema", "parse_identifier"]
