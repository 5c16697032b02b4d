"""Static registration of the ``stratalake`` Python data source.

Spark imports every top-level ``pyspark_*`` module to find a ``DefaultSource``, in every planning
worker, so this module stays tiny: the implementation is imported only when Spark actually uses
the source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource

if TYPE_CHECKING:
    from pyspark.sql.datasource import (
        DataSourceReader,
        DataSourceStreamReader,
        DataSourceStreamWriter,
        DataSourceWriter,
    )
    from pyspark.sql.types import StructType


class DefaultSource(DataSource):
    """The ``stratalake`` data source; see :mod:`stratalake.spark.source`."""

    @classmethod
    def name(cls) -> str:
        return "stratalake"

    def schema(self) -> StructType:
        from stratalake.spark.source import infer_schema

        return infer_schema(dict(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        options = dict(self.options)
        if "stratalake.job" in options:  # a procedure's distributed job, e.g. CALL sys.compact
            from stratalake.spark.procedures import CompactJobReader

            return CompactJobReader(options)
        if "stratalake.system-table" in options:  # t$snapshots, t$files, ...
            from stratalake.spark.system_tables import SystemTableReader

            return SystemTableReader(options, schema)
        from stratalake.spark.source import StrataLakeReader

        return StrataLakeReader(options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from stratalake.spark.source import StrataLakeWriter

        return StrataLakeWriter(dict(self.options), schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from stratalake.spark.streaming import StrataLakeStreamReader

        return StrataLakeStreamReader(dict(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from stratalake.spark.streaming import StrataLakeStreamWriter

        return StrataLakeStreamWriter(dict(self.options), schema, overwrite)
