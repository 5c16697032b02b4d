"""Static registration of the ``stratalake`` Python data source.

Spark imports every top-level ``pyspark_*`` module to find a ``DefaultSource``, in every planning
worker, so this module stays tiny: the implementation is imported only when Spark actually uses
the source.
"""

from __future__ import annotations

import gc
import sys
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


_frozen_modules = 0


def freeze_imports() -> None:
    """Hides long-lived objects from the cyclic garbage collector whenever new modules loaded.

    Spark's Python daemon runs a full ``gc.collect()`` after every request a reused worker
    serves (bridge calls, data source planning, tasks). With pyspark, pyarrow and stratalake
    loaded that walks every live object (~35 ms), and the worker cannot take its next request
    meanwhile, so the next round trip waits for it. Module contents live as long as the process:
    they are moved to the permanent generation (``gc.freeze``) each time the set of imported
    modules grew (a few times per worker); objects created afterwards are collected as usual.
    """
    global _frozen_modules
    count = len(sys.modules)
    if count != _frozen_modules:
        _frozen_modules = count
        gc.freeze()


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

        freeze_imports()
        return StrataLakeReader(options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from stratalake.spark.source import StrataLakeWriter

        freeze_imports()
        return StrataLakeWriter(dict(self.options), schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from stratalake.spark.streaming import StrataLakeStreamReader

        return StrataLakeStreamReader(dict(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from stratalake.spark.streaming import StrataLakeStreamWriter

        return StrataLakeStreamWriter(dict(self.options), schema, overwrite)
