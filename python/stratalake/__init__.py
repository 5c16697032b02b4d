"""stratalake: Apache Paimon-style primary-key tables for Apache Spark, in Python.

Example::

    import pyarrow as pa
    import stratalake

    cat = stratalake.Catalog("/tmp/warehouse")
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.orders", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]),
                         primary_key=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.read()
"""

from __future__ import annotations

from stratalake.catalog import Catalog, SchemaChange
from stratalake.exceptions import StrataLakeError
from stratalake.expressions import field
from stratalake.table import Table

__version__ = "0.1.0"

__all__ = ["Catalog", "SchemaChange", "StrataLakeError", "Table", "__version__", "field"]
