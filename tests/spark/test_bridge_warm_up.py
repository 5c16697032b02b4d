"""A new session starts the catalog's Python worker in the background (``BridgeWarmUp``).

The first bridge call of a JVM starts Spark's Python daemon for the catalog and a worker that
imports stratalake (~1.8 s). The session extensions start that call as the session is created;
a first query made meanwhile waits for it and is answered by the same worker, rather than forking
a second one that imports stratalake again. Runs in its own process: the shared session of the
other tests warmed up long ago.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

APP = r"""
import json, os, sys, time
from stratalake.spark import session

spark = session(sys.argv[1], spark_ui_enabled="false")
jvm = spark._jvm.org.stratalake.spark.bridge
deadline = time.time() + 120
while not jvm.BridgeWarmUp.callBegun() and time.time() < deadline:
    time.sleep(0.01)
begun = jvm.BridgeWarmUp.callBegun()
calls_before_query = json.loads(jvm.BridgeContract.callCounts())
# The first query, while the warm-up call most likely still runs (it takes ~2 s).
spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.db").collect()
spark.sql("CREATE TABLE lake.db.t (k INT, v STRING) TBLPROPERTIES ('primary-key' = 'k', 'bucket' = '1')")
spark.sql("INSERT INTO lake.db.t VALUES (1, 'a')")
rows = [tuple(r) for r in spark.sql("SELECT * FROM lake.db.t").collect()]
warm = jvm.BridgeWarmUp.workerPid()
calls_after_query = json.loads(jvm.BridgeContract.callCounts())


def parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


daemon = parent(warm) if warm > 0 else -1
workers = [
    int(p) for p in os.listdir("/proc") if p.isdigit() and os.path.exists(f"/proc/{p}/stat") and parent(int(p)) == daemon
] if daemon > 0 else []
print("RESULT " + json.dumps({
    "begun": begun,
    "calls_before_query": calls_before_query,
    "calls_after_query": calls_after_query,
    "warm": warm,
    "workers": workers,
    "rows": rows,
}))
spark.stop()
"""


def test_a_new_session_starts_the_bridge_worker_its_first_query_uses(tmp_path: Path) -> None:
    from tests.spark.conftest import _build_jar_if_missing

    _build_jar_if_missing()
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", APP, str(tmp_path / "wh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    out = json.loads(lines[0][len("RESULT ") :])
    assert out["begun"], "the warm-up call did not begin without a query"
    # Before any query, the only bridge call was the warm-up's (counted as it starts).
    assert set(out["calls_before_query"]) <= {"keep_alive"}
    assert out["calls_after_query"]["keep_alive"] == 1
    assert out["calls_after_query"]["load_table"] >= 1
    assert out["warm"] > 0, "the warm-up call failed"
    # The first query's calls were answered by the warm-up's worker: the bridge's daemon forked
    # no other one.
    assert out["workers"] == [out["warm"]]
    assert out["rows"] == [[1, "a"]]
