"""The catalog's Python worker outlives a pause in the user's work.

Spark stops the idle Python workers of a worker factory that served nothing for 60 seconds; the
bridge's next call then starts a worker that imports stratalake again (~1 s on the first query
after a pause). ``BridgeKeepAlive`` calls the bridge after 40 s of quiet so the worker stays.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

pytestmark = pytest.mark.spark

KEY = "stratalake.bridge.keep-alive"


def _keep_alive_calls(spark: Any) -> int:
    counts = json.loads(spark._jvm.org.stratalake.spark.bridge.BridgeContract.callCounts())
    return int(counts.get("keep_alive", 0))


def test_the_bridge_worker_outlives_a_pause_longer_than_spark_keeps_idle_workers(spark: Any) -> None:
    keeper = spark._jvm.org.stratalake.spark.bridge.BridgeKeepAlive
    spark.sql("SHOW NAMESPACES IN lake").collect()  # a user's call: its session is the one kept
    worker = keeper.call()
    made = _keep_alive_calls(spark)
    time.sleep(75)  # Spark stops a factory's idle workers after 60 s without a request
    assert _keep_alive_calls(spark) > made, "no keep-alive call during the pause"
    assert keeper.call() == worker, "the bridge's worker was stopped and started again"


def test_a_keep_alive_that_is_not_a_duration_is_refused_by_name(spark: Any) -> None:
    spark.conf.set(KEY, "soon")
    try:
        with pytest.raises(Exception, match=f"{KEY}=soon is not a duration"):
            spark.sql("SHOW NAMESPACES IN lake").collect()
    finally:
        spark.conf.unset(KEY)
    assert spark.sql("SHOW NAMESPACES IN lake").collect() is not None
