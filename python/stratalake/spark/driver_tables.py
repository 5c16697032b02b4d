"""System tables answered on the Spark driver (``t$snapshots``, ``sys.tables``...).

A metadata system table is a few rows computed from the table's metadata files: reading it
through the Python data source cost a planning call, a Spark task and a Python worker for the
rows (about 0.2-0.3 s of a ``SELECT max(snapshot_id) FROM t$snapshots``). The shim asks here
instead while it plans (bridge op ``read_system_table``) and gets the rows as one Arrow IPC
stream, which Spark then scans as a local relation (``scan/DriverSystemTables.java``).

Python decides what stays a distributed read (None): the row system tables (``$audit_log``,
``$binlog``, ``$ro``: the table's rows), incremental reads, the per-file tables (``$files``,
``$file_key_ranges``: one row per data file) and any answer larger than :data:`MAX_BYTES`.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from stratalake.spark import read_options
from stratalake.spark import source_options as keys
from stratalake.spark.system_tables import GlobalSystemTableReader, SystemTableReader
from stratalake.table import system_tables

#: The largest answer the driver holds (Arrow bytes); a larger one is read by a Spark task.
MAX_BYTES = 32 * 1024 * 1024

#: System tables with a row per data file or per row: their size follows the data, not metadata.
DISTRIBUTED = frozenset(
    {system_tables.AUDIT_LOG, system_tables.BINLOG, system_tables.READ_OPTIMIZED, "files", "file_key_ranges"}
)

#: The one input partition of a metadata system table (as the readers plan it).
_WHOLE = InputPartition(b"")


def read(options: Mapping[str, str], schema: dict[str, object]) -> str | None:
    """The rows of the system table the source ``options`` name, in the Spark ``schema``, as a
    base64 Arrow IPC stream; None when a Spark task reads them instead (module docstring)."""
    spark_schema = StructType.fromJson(schema)
    opts = dict(options)
    if keys.GLOBAL_SYSTEM_TABLE in opts:
        batches = list(GlobalSystemTableReader(opts, spark_schema).read(_WHOLE))
    else:
        name = opts.get(keys.SYSTEM_TABLE)
        if name is None or name in DISTRIBUTED or read_options.is_incremental(opts):
            return None
        reader = SystemTableReader(opts, spark_schema)
        batches = list(reader.read(_WHOLE))
    target = to_arrow_schema(spark_schema, timezone="UTC")
    if sum(b.nbytes for b in batches) > MAX_BYTES:
        return None
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, target) as out:
        for batch in batches:
            out.write_batch(batch)
    return base64.b64encode(sink.getvalue().to_pybytes()).decode("ascii")
