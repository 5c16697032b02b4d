"""The entry the discovered ``pyspark_stratalake`` package calls: the only module it imports.

Spark imports every top-level ``pyspark_*`` module in every planning worker, so this module imports
nothing heavy at load; each function imports its implementation when Spark actually uses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stratalake.spark.worker_gc import freeze_imports

if TYPE_CHECKING:
    from pyspark.sql.datasource import (
        DataSourceReader,
        DataSourceStreamReader,
        DataSourceStreamWriter,
        DataSourceWriter,
    )
    from pyspark.sql.types import StructType

__all__ = ["freeze_imports", "infer_schema", "reader", "stream_reader", "stream_writer", "writer"]


def infer_schema(options: dict[str, str]) -> StructType:
    """The Spark schema of the table ``options`` name."""
    # Deferred import cost: the source loads pyarrow and the table code (see the module docstring).
    from stratalake.spark.source import infer_schema as infer

    return infer(options)


def reader(options: dict[str, str], schema: StructType) -> DataSourceReader:
    """The batch reader: a table scan, a procedure's distributed job or a system table."""
    if options.get("stratalake.job") == "units":  # DELETE / UPDATE / MERGE work on data files
        # Deferred import cost: loaded only when Spark uses the source (module docstring).
        from stratalake.spark.delete_job import StagedUnitsReader

        return StagedUnitsReader(options)
    if "stratalake.job" in options:  # a procedure's distributed job, e.g. CALL sys.compact
        # Deferred import cost: loaded only when Spark uses the source (module docstring).
        from stratalake.spark.procedures import CompactJobReader

        return CompactJobReader(options)
    if "stratalake.global-system-table" in options:  # sys.tables, sys.all_table_options, ...
        # Deferred import cost: loaded only when Spark uses the source (module docstring).
        from stratalake.spark.system_tables import GlobalSystemTableReader

        return GlobalSystemTableReader(options, schema)
    if "stratalake.system-table" in options:  # t$snapshots, t$files, ...
        # Deferred import cost: loaded only when Spark uses the source (module docstring).
        from stratalake.spark.system_tables import SystemTableReader

        return SystemTableReader(options, schema)
    # Deferred import cost: loaded only when Spark uses the source (module docstring).
    from stratalake.spark.source import StrataLakeReader

    freeze_imports()
    return StrataLakeReader(options, schema)


def writer(options: dict[str, str], schema: StructType, overwrite: bool) -> DataSourceWriter:
    """The batch writer."""
    # Deferred import cost: loaded only when Spark uses the source (module docstring).
    from stratalake.spark.source import StrataLakeWriter

    freeze_imports()
    return StrataLakeWriter(options, schema, overwrite)


def stream_reader(options: dict[str, str], schema: StructType) -> DataSourceStreamReader:
    """The streaming reader."""
    # Deferred import cost: loaded only when Spark uses the source (module docstring).
    from stratalake.spark.streaming import StrataLakeStreamReader

    return StrataLakeStreamReader(options, schema)


def stream_writer(options: dict[str, str], schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
    """The streaming writer."""
    # Deferred import cost: loaded only when Spark uses the source (module docstring).
    from stratalake.spark.streaming import StrataLakeStreamWriter

    return StrataLakeStreamWriter(options, schema, overwrite)
