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

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from stratalake.exceptions import StrataLakeError

if TYPE_CHECKING:
    from stratalake.catalog import Catalog, SchemaChange
    from stratalake.expressions import field
    from stratalake.table import Table

__version__ = "0.1.0"

__all__ = ["Catalog", "SchemaChange", "StrataLakeError", "Table", "__version__", "field"]

# Imported on first use: a Spark driver imports stratalake only to configure its session
# (stratalake.spark), and the table API below pulls in the whole format (pyarrow.parquet, Avro,
# the catalogs' clients): ~19 MiB the driver would hold for nothing.
_LAZY = {
    "Catalog": "stratalake.catalog",
    "SchemaChange": "stratalake.catalog",
    "Table": "stratalake.table",
    "field": "stratalake.expressions",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        # A submodule (stratalake.types...): importing the package imported it before it was lazy.
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module 'stratalake' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
