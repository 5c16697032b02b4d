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

__all__ = ["DefaultSource"]


class DefaultSource(DataSource):
    """The ``stratalake`` data source; see :mod:`stratalake.spark.source`."""

    @classmethod
    def name(cls) -> str:
        return "stratalake"

    def schema(self) -> StructType:
        # Deferred import cost: importing stratalake loads pyarrow and the table code.
        from stratalake.spark import entry

        return entry.infer_schema(dict(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        # Deferred import cost: importing stratalake loads pyarrow and the table code.
        from stratalake.spark import entry

        return entry.reader(dict(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        # Deferred import cost: importing stratalake loads pyarrow and the table code.
        from stratalake.spark import entry

        return entry.writer(dict(self.options), schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        # Deferred import cost: importing stratalake loads pyarrow and the table code.
        from stratalake.spark import entry

        return entry.stream_reader(dict(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        # Deferred import cost: importing stratalake loads pyarrow and the table code.
        from stratalake.spark import entry

        return entry.stream_writer(dict(self.options), schema, overwrite)
