"""Catalogs: where databases and tables live."""

# Imported for its registration of metastore = jdbc (the registry maps the option to the class).
from stratalake.catalog import jdbc as _jdbc  # noqa: F401
from stratalake.catalog.filesystem import Catalog, build_schema, parse_identifier
from stratalake.catalog.schema_change import SchemaChange

__all__ = ["Catalog", "SchemaChange", "build_schema", "parse_identifier"]
