"""Option keys the JVM catalog passes to the ``stratalake`` data source.

The catalog's ``load_table`` answer computes them (:mod:`stratalake.spark.bridge_handlers`); the
shim adds them to every scan's and write's options; :mod:`stratalake.spark.source` reads them.
"""

from __future__ import annotations

from typing import Final

WAREHOUSE: Final = "stratalake.warehouse"
CATALOG_OPTIONS: Final = "stratalake.catalog-options"  # JSON object
TABLE: Final = "stratalake.table"  # "db.table"
LOCATION: Final = "stratalake.location"  # where the table lives, for logs and error messages
SNAPSHOT_ID: Final = "stratalake.snapshot-id"  # time travel; absent = latest at planning time
# With SNAPSHOT_ID, when TIMESTAMP AS OF chose it: the time (epoch millis) a table's fallback branch
# is read at (stratalake.read.fallback).
TIMESTAMP_MS: Final = "stratalake.timestamp-ms"
TAG: Final = "stratalake.tag"  # time travel to a tag: its own snapshot copy (read even once expired)
KEY_COLUMNS: Final = "stratalake.key-columns"  # JSON list: partition + primary-key columns
PARTITION_KEYS: Final = "stratalake.partition-keys"  # JSON list
# The latest snapshot id when Spark loaded the table ("0": none yet): where a streaming read in
# mode latest-full / latest starts, fixed when the query is defined (stratalake.spark.streaming).
STREAM_LATEST_SNAPSHOT: Final = "stratalake.stream.latest-snapshot"
# Set by the shim's write builder.
WRITE_MODE: Final = "stratalake.write.mode"  # append | truncate | static | dynamic
STATIC_PARTITION: Final = "stratalake.write.static-partition"  # JSON {col: {"value", "type"}}
DYNAMIC_ASSIGNERS: Final = "stratalake.write.dynamic-assigners"  # assigner slices of a dynamic-bucket write
# "true": a task may add level-0 files to buckets of other slices even where writers compact what
# they write (lookup, deletion vectors, first-row); the shim compacts them after the commit.
DYNAMIC_FOREIGN_LEVEL0: Final = "stratalake.write.dynamic-foreign-level0"
STREAM_QUERY_ID: Final = "stratalake.write.query-id"  # a streaming query's id (stable across restarts)
# Set by the shim's scan (org.stratalake.spark.scan.StrataLakeScan); see stratalake.spark.planning.
SCAN_PLANNED: Final = "stratalake.scan.planned"  # "true": the JVM supplies the input partitions
SCAN_FILTERS: Final = "stratalake.scan.filters"  # JSON list of filter trees pushed by Spark
SCAN_LIMIT: Final = "stratalake.scan.limit"  # rows each task may stop after (Spark re-limits)
# "true": a partially pushed COUNT(*): each input partition yields one row, its live row count
SCAN_COUNT: Final = "stratalake.scan.count"
# "true": each input partition yields the rows its split's merge drops, as (file index, position)
# (TableRead.superseded_positions); the shim then reads the split's files natively without them
SCAN_SUPERSEDED: Final = "stratalake.scan.superseded"
DELETE_KEYS: Final = "stratalake.write.delete-keys"  # JSON list: the key columns of a DELETE's key list
ROW_KIND_COLUMN: Final = "stratalake.write.row-kind-column"  # set by row-level DML: the change-record kind
# The scan of a row-level command (UPDATE, DELETE, MERGE): its Spark name. Read options that choose
# another version than the latest are refused there (stratalake.spark.read_options).
ROW_LEVEL_COMMAND: Final = "stratalake.scan.row-level-command"
SYSTEM_TABLE: Final = "stratalake.system-table"  # t$<name>: the system table to read
GLOBAL_SYSTEM_TABLE: Final = "stratalake.global-system-table"  # sys.<name>: catalog-wide tables

#: Every option above: the catalog's and the shim's own, accepted on any scan or write. Other
#: ``stratalake.*`` keys are no exception to the read and write option checks: an unknown one
#: would otherwise be ignored without a word (a stratalake table option given to a write is refused
#: as any table option is).
INTERNAL: Final = frozenset(
    value
    for name, value in list(globals().items())
    if name.isupper() and isinstance(value, str) and value.startswith("stratalake.")
)
