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
KEY_COLUMNS: Final = "stratalake.key-columns"  # JSON list: partition + primary-key columns
PARTITION_KEYS: Final = "stratalake.partition-keys"  # JSON list
# Set by the shim's write builder.
WRITE_MODE: Final = "stratalake.write.mode"  # append | truncate | static | dynamic
STATIC_PARTITION: Final = "stratalake.write.static-partition"  # JSON {col: {"value", "type"}}
