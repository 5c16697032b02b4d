"""Spark integration: the only stratalake package that imports pyspark.

- :func:`session` / :func:`configure`: a SparkSession with the stratalake catalog and extensions.
- :mod:`stratalake.spark.source`: the ``stratalake`` Python data source (scans and writes).
- :mod:`stratalake.spark.bridge_handlers`: answers the JVM catalog's requests.
- :mod:`stratalake.spark.errors`: Spark errors back into stratalake exceptions.
"""

from __future__ import annotations

from stratalake.spark.session import configure, session, shim_jar, spark_conf

__all__ = ["configure", "session", "shim_jar", "spark_conf"]
