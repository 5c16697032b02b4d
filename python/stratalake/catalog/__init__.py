"""Catalogs: where databases and tables live."""

# Metastore catalogs register themselves with the registry when imported (hive: its Thrift
# bindings load on first use; jdbc: psycopg only for PostgreSQL URIs).
from stratalake.catalog import hive  # noqa: F401
from stratalake.catalog import jdbc as _jdbc  # noqa: F401
from stratalake.catalog.filesystem import Catalog, build_schema, parse_identifier
from stratalake.catalog.schema_change import SchemaChange

# Imported for its registration of ``metastore = rest`` (catalog/registry.py).
from stratalake.catalog import rest as _rest  # noqa: F401  isort: skip

__all__ = ["Catalog", "SchemaChange", "build_schema", "parse_identifier"]
