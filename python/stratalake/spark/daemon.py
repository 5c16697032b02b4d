"""Spark's Python worker daemon with stratalake's task modules imported before it forks.

Spark starts one daemon per kind of Python worker (``spark.python.daemon.module``, default
``pyspark.daemon``); the daemon forks a worker for each task slot, and Spark stops a worker idle
for a minute (``PythonWorkerFactory``'s fixed idle limit). Every new worker then imports pyspark's
worker, pyarrow, pandas (pyarrow loads it on its first array) and stratalake again: about 1.3
CPU-seconds before it reads a row, paid by the first statement after each idle minute and by
every extra task slot. Forked from this daemon, a worker starts with those modules loaded, and
shares their pages with the daemon and its siblings until it writes to them.

Spark's own daemon imports its worker module only after the fork because pyarrow and pandas
start threads when imported, and a fork copies only the forking thread. The threads started here
(checked in ``tests/spark/test_worker_daemon.py``) are numpy's OpenBLAS pool and jemalloc's
background thread, both of which re-create their state in the child (pthread_atfork handlers).
Arrow's CPU and I/O thread pools, which have no such handlers, start on first use; importing
starts neither.

:func:`stratalake.spark.session.spark_conf` names this module for local sessions, where the
workers run the driver's interpreter; a cluster's executors keep Spark's daemon (their Python
may not have stratalake installed, and a daemon that cannot start fails every Python task).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence

from stratalake.spark.worker_gc import freeze_imports

#: What a stratalake task imports on entry: pyspark's worker and pyarrow's modules, pandas
#: (pyarrow imports it on its first array) and the modules that hold the task entry points.
PRELOAD: tuple[str, ...] = (
    "pyspark.worker",
    "pyarrow",
    "pyarrow.compute",
    "pyarrow.parquet",
    "pandas",
    "stratalake.spark.source",
    "stratalake.spark.streaming",
    "stratalake.spark.procedures",
    "stratalake.spark.delete_job",
)

#: Set in the daemon's environment (and so in every worker it forks) to the modules it loaded.
PRELOADED_ENV = "STRATALAKE_DAEMON_PRELOADED"


def preload(modules: Sequence[str] = PRELOAD) -> list[str]:
    """Imports ``modules`` and returns those that loaded. A module that fails to import is
    skipped: the worker imports it itself later, or reports the error in the task that needs it,
    as under Spark's own daemon; the daemon must start either way, since every Python task of
    the session (not only stratalake's) runs in its workers."""
    loaded = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # any failure: the worker imports the module itself, as before
            continue
        loaded.append(name)
    return loaded


def main() -> None:
    os.environ[PRELOADED_ENV] = ",".join(preload())
    # The loaded modules' objects move to the collector's permanent generation: a worker's
    # collections (Spark's daemon runs one after every request) then never write to them, so
    # their pages stay shared with the daemon instead of being copied into every worker.
    freeze_imports()
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()
