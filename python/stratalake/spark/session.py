"""Configure Spark for stratalake: one place that knows every setting it needs.

>>> from stratalake.spark import session
>>> spark = session("/tmp/warehouse")                       # doctest: +SKIP
>>> spark.sql("CREATE TABLE lake.default.t (id INT, PRIMARY KEY (id) NOT ENFORCED)")  # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXTENSIONS = "org.stratalake.spark.StrataLakeSparkSessionExtensions"
CATALOG_CLASS = "org.stratalake.spark.StrataLakeCatalog"
JAR_NAME = "stratalake-spark-shim.jar"


def shim_jar() -> str:
    """Path of the JVM shim jar shipped inside the package (build it with jvm-shim/build.sh)."""
    path = Path(str(resources.files("stratalake") / "jars" / JAR_NAME))
    if not path.exists():
        raise FileNotFoundError(
            f"stratalake's Spark shim jar is missing at {path}; build it with `bash jvm-shim/build.sh`"
        )
    return str(path)


def python_path() -> str:
    """The directory holding the ``stratalake`` and ``pyspark_stratalake`` packages."""
    return str(Path(str(resources.files("stratalake"))).parent)


def spark_conf(warehouse: str, catalog: str = "lake", local: bool = True) -> dict[str, str]:
    """Every Spark setting stratalake needs, as a dict (also used by ``stratalake sql``)."""
    if "://" not in warehouse:
        warehouse = str(Path(warehouse).expanduser().resolve())
    conf = {
        "spark.jars": shim_jar(),
        "spark.sql.extensions": EXTENSIONS,
        f"spark.sql.catalog.{catalog}": CATALOG_CLASS,
        f"spark.sql.catalog.{catalog}.warehouse": warehouse,
        # Key and partition filters prune files before the merge.
        "spark.sql.python.filterPushdown.enabled": "true",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
    }
    if local:
        conf.update(
            {
                "spark.sql.shuffle.partitions": "4",
                "spark.default.parallelism": "4",
                "spark.ui.enabled": "false",
                "spark.sql.session.timeZone": "UTC",
            }
        )
    return conf


def _export_python_env() -> None:
    # Spark's Python workers (planner, bridge, tasks) start with PYSPARK_PYTHON, read from the
    # environment of the JVM, which inherits ours: set it before the JVM starts.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    path = python_path()
    current = os.environ.get("PYTHONPATH", "")
    if path not in current.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (path, current) if p)


def configure(builder: Any, warehouse: str, catalog: str = "lake", local: bool = True) -> Any:
    """Adds stratalake's settings to a ``SparkSession.Builder`` and returns it.

    ``local=True`` adds small-machine defaults (few shuffle partitions, no UI, UTC session time
    zone); pass ``local=False`` on a cluster.
    """
    _export_python_env()
    for key, value in spark_conf(warehouse, catalog, local).items():
        builder = builder.config(key, value)
    return builder


def session(warehouse: str, catalog: str = "lake", master: str = "local[2]", **conf: str) -> SparkSession:
    """A SparkSession with the stratalake catalog ``catalog`` over ``warehouse``.

    Extra keyword arguments are Spark settings with dots written as underscores, e.g.
    ``session("/wh", spark_sql_shuffle_partitions="8")``.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName("stratalake")
    builder = configure(builder, warehouse, catalog, local=master.startswith("local"))
    for key, value in conf.items():
        builder = builder.config(key if "." in key else key.replace("_", "."), value)
    spark: SparkSession = builder.getOrCreate()
    return spark
