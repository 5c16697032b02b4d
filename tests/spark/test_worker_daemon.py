"""Spark's Python worker daemon with stratalake's task modules preloaded (stratalake.spark.daemon):
local sessions use it, its workers start with the modules loaded, the preload starts no thread
of its own, and a forked child can use every library the daemon loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from stratalake.spark.daemon import PRELOAD, PRELOADED_ENV
from stratalake.spark.session import WORKER_DAEMON, configure, spark_conf

DAEMON = WORKER_DAEMON


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120
    )
    return out.stdout


def test_in_process_masters_name_the_daemon_others_keep_sparks(tmp_path: Any) -> None:
    wh = str(tmp_path)
    for master in ("local", "local[2]", "local[*]", "local[4,2]"):
        assert spark_conf(wh, master=master)["spark.python.daemon.module"] == DAEMON, master
    # Executors with their own Python (which may lack stratalake), or a master not known here.
    for master in ("local-cluster[2,1,1024]", "spark://host:7077", "yarn", None):
        assert "spark.python.daemon.module" not in spark_conf(wh, master=master), master
    assert "spark.python.daemon.module" not in spark_conf(wh, local=False, master="local[2]")
    builder = SparkSession.builder.master("local[2]")
    assert configure(builder, wh)._options["spark.python.daemon.module"] == DAEMON
    assert (
        "spark.python.daemon.module"
        not in configure(SparkSession.builder.master("yarn"), wh, local=False)._options
    )


def test_a_module_that_fails_to_import_is_skipped() -> None:
    # A missing module and one that raises while importing: the daemon starts either way.
    code = (
        "import sys, types\n"
        "from stratalake.spark.daemon import preload\n"
        "class Boom:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'boom_on_import':\n"
        "            raise RuntimeError('boom')\n"
        "sys.meta_path.insert(0, Boom())\n"
        "print(','.join(preload(['json', 'no_such_module_anywhere', 'boom_on_import', 'zlib'])))\n"
    )
    assert _run(code).strip() == "json,zlib"


def test_the_preload_starts_no_thread_of_its_own() -> None:
    # numpy (OpenBLAS) and pyarrow (jemalloc's background thread) start threads with fork
    # handlers; nothing else the daemon imports may start one, since the fork copies only the
    # forking thread.
    code = (
        "import os\n"
        "count = lambda: len(os.listdir('/proc/self/task'))\n"
        "import numpy, pyarrow\n"
        "libraries = count()\n"
        "from stratalake.spark.daemon import preload, PRELOAD\n"
        "assert preload() == list(PRELOAD), preload()\n"
        "print(libraries, count())\n"
    )
    libraries, after = map(int, _run(code).split())
    assert after == libraries


def test_a_forked_child_uses_what_the_daemon_loaded(tmp_path: Any) -> None:
    # What a worker does after the fork: Arrow's thread pools (sort, Parquet with threads),
    # jemalloc, numpy's BLAS and pandas, several children in turn, each of which must exit
    # cleanly (a deadlock would hit the timeout).
    code = (
        "import os, sys\n"
        "from stratalake.spark.daemon import preload\n"
        "preload()\n"
        "import numpy as np, pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq, pandas as pd\n"
        "np.dot(np.ones((200, 200)), np.ones((200, 200)))\n"
        "for i in range(3):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        pa.set_memory_pool(pa.jemalloc_memory_pool())\n"
        "        t = pa.table({'k': np.random.permutation(2_000_000), 'v': np.arange(2_000_000) * 0.5})\n"
        "        t = t.take(pc.sort_indices(t, sort_keys=[('k', 'ascending')]))\n"
        f"        path = os.path.join({str(tmp_path)!r}, f'{{i}}.parquet')\n"
        "        pq.write_table(t, path)\n"
        "        back = pq.read_table(path, use_threads=True)\n"
        "        ok = back.column('k').to_numpy()[-1] == 1_999_999 and len(pd.DataFrame({'a': [1]})) == 1\n"
        "        ok = ok and np.dot(np.ones((300, 300)), np.ones((300, 300)))[0, 0] == 300\n"
        "        os._exit(0 if ok else 3)\n"
        "    _, status = os.waitpid(pid, 0)\n"
        "    assert os.waitstatus_to_exitcode(status) == 0, status\n"
        "print('ok')\n"
    )
    assert _run(code).strip() == "ok"


def test_spark_workers_start_with_the_modules_loaded(spark: Any) -> None:
    def probe(batches: Any) -> Any:
        # Nothing here imports stratalake: its modules are in the worker because the daemon
        # that forked it loaded them.
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            parent = f.read().replace(b"\0", b" ").decode()
        loaded = os.environ.get(PRELOADED_ENV, "")
        missing = [m for m in loaded.split(",") if m and m not in sys.modules]
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict(
            {"parent": [parent], "loaded": [loaded], "missing": [",".join(missing)]}
        )

    rows = spark.range(0, 2, 1, 2).mapInArrow(probe, "parent string, loaded string, missing string").collect()
    assert rows
    for row in rows:
        assert DAEMON in row.parent
        assert row.loaded.split(",") == list(PRELOAD)
        assert row.missing == ""
