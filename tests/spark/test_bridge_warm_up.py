"""A new session starts the catalog's Python worker in the background (``BridgeWarmUp``).

The first bridge call of a JVM starts Spark's Python daemon for the catalog and a worker that
imports stratalake (~1.8 s). The session extensions start that call as the session is created;
a first query made meanwhile waits for it and is answered by the same worker, rather than forking
a second one that imports stratalake again. Then, in the same background thread, Spark's search for
Python data sources (its own Python process) runs, which the first write needs. Beside the call, a
second thread warms up Spark's query classes until the user's first statement. Each test runs in
its own process: the shared session of the other tests warmed up long ago.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def children(pid):
    out = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and parent(int(p)) == pid:
                out.append(int(p))
        except OSError:
            pass  # the process ended meanwhile
    return out


def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode()


# Then, before anything needs a Python data source, Spark's search for them (its own daemon).
jvm_pid = spark._jvm.java.lang.ProcessHandle.current().pid()
lookup_daemons = []
soon = time.time() + 30  # (within the bridge's 40 s of quiet before a keep-alive call)
while not lookup_daemons and time.time() < soon:
    lookup_daemons = [p for p in children(jvm_pid) if "lookup_data_sources" in cmdline(p)]
    time.sleep(0.05)
spark.sql("CREATE TABLE lake.db.t (k INT, v STRING) TBLPROPERTIES ('primary-key' = 'k', 'bucket' = '1')")
spark.sql("INSERT INTO lake.db.t VALUES (1, 'a')")
rows = [tuple(r) for r in spark.sql("SELECT * FROM lake.db.t").collect()]
warm = jvm.BridgeWarmUp.workerPid()
calls_after_query = json.loads(jvm.BridgeContract.callCounts())
queries = jvm.BridgeWarmUp.queries()

daemon = parent(warm) if warm > 0 else -1
workers = children(daemon) if daemon > 0 else []
print("RESULT " + json.dumps({
    "begun": begun,
    "calls_before_query": calls_before_query,
    "calls_after_query": calls_after_query,
    "warm": warm,
    "workers": workers,
    "daemon_of_jvm": daemon > 0 and parent(daemon) == jvm_pid,
    "lookup_daemons": lookup_daemons,
    "rows": rows,
    "queries": queries,
}))
spark.stop()
"""

# No statement until the warm-up of Spark's query classes has ended: it runs all its steps and no
# Spark job.
QUIET_APP = r"""
import json, sys, time
from stratalake.spark import session

spark = session(sys.argv[1], spark_ui_enabled="false")
warm_up = spark._jvm.org.stratalake.spark.bridge.BridgeWarmUp
deadline = time.time() + 120
while warm_up.queries() in ("not run", "running") and time.time() < deadline:
    time.sleep(0.05)
queries = warm_up.queries()
jobs = list(spark.sparkContext.statusTracker().getJobIdsForGroup())
rows = [tuple(r) for r in spark.sql("SELECT id FROM VALUES (1L), (2L) AS t(id) WHERE id = 2").collect()]
print("RESULT " + json.dumps({"queries": queries, "jobs": jobs, "rows": rows}))
spark.stop()
"""


def _run(app: str, tmp_path: Path) -> dict[str, Any]:
    from tests.spark.conftest import _build_jar_if_missing

    _build_jar_if_missing()
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", app, str(tmp_path / "wh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(lines[0][len("RESULT ") :])
    return out


def test_a_new_session_starts_the_bridge_worker_its_first_query_uses(tmp_path: Path) -> None:
    out = _run(APP, tmp_path)
    assert out["begun"], "the warm-up call did not begin without a query"
    # Spark's search for Python data sources ran in the background too, before the first write.
    assert len(out["lookup_daemons"]) == 1
    # Before any query, the only bridge call was the warm-up's (counted as it starts).
    assert set(out["calls_before_query"]) <= {"keep_alive"}
    assert out["calls_after_query"]["keep_alive"] == 1
    assert out["calls_after_query"]["load_table"] >= 1
    assert out["warm"] > 0, "the warm-up call failed"
    # The first query's calls were answered by the warm-up's worker: the bridge's daemon forked
    # no other one.
    assert out["workers"] == [out["warm"]] and out["daemon_of_jvm"]
    assert out["rows"] == [[1, "a"]]
    # The first statement stopped the warm-up of Spark's query classes (they would compete).
    assert out["queries"] == "stopped"


def test_a_quiet_new_session_warms_up_sparks_query_classes_without_a_job(tmp_path: Path) -> None:
    out = _run(QUIET_APP, tmp_path)
    assert out["queries"] == "done"
    assert out["jobs"] == [], "the warm-up ran a Spark job"
    assert out["rows"] == [[2]]
