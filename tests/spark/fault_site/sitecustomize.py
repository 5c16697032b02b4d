"""Fault injection for ``tests/spark/fault_app.py`` (imported by every Python process of that app).

The app puts this directory first on ``PYTHONPATH`` and names a control file in
``STRATALAKE_FAULT_FILE``; Spark's Python workers inherit both. When set, ``TableWrite.write`` is
wrapped: inside a Spark write task whose partition and attempt match the control file, once the
writer has been given ``after_rows`` rows (and has flushed data files), it fails the way the
control file says — ``raise`` (an exception in the task), ``exit`` (the Python worker dies) or
``kill_executor`` (SIGKILL to the executor JVM running the task). Each fault is logged to
``<control file>.log`` first. Nothing happens in processes without the variable.
"""

from __future__ import annotations

import json
import os
import signal
import time
from typing import Any


def _control(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data: dict[str, Any] = json.load(f)
            return data
    except (OSError, ValueError):
        return {"mode": "none"}


def _log(path: str, record: dict[str, Any]) -> None:
    with open(path + ".log", "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _executor_jvm() -> int | None:
    """The pid of the executor JVM (CoarseGrainedExecutorBackend) this process descends from."""
    pid = os.getpid()
    for _ in range(8):
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
        if pid <= 1:
            return None
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"CoarseGrainedExecutorBackend" in f.read():
                return pid
    return None


def _install(path: str) -> None:
    from pyspark import TaskContext

    from stratalake.operation.write import TableWrite

    original = TableWrite.write
    rows_seen: dict[int, int] = {}  # per writer: rows given to it in a task the fault applies to

    def write(self: TableWrite, data: Any, row_kind: str | None = None) -> None:
        original(self, data, row_kind)
        ctx = TaskContext.get()
        if ctx is None:
            return
        control = _control(path)
        mode = control.get("mode", "none")
        if mode == "none" or ctx.partitionId() != control.get("partition"):
            return
        # One fault per statement (the app clears the log before each), unless every attempt fails:
        # a stage that Spark resubmits numbers its tasks' attempts from 0 again.
        once = control.get("attempts") != "all"
        if once and (ctx.attemptNumber() != 0 or os.path.exists(path + ".log")):
            return
        seen = rows_seen[id(self)] = rows_seen.get(id(self), 0) + data.num_rows
        files = len(getattr(self, "_written", ()))
        if seen < control.get("after_rows", 0) or files == 0:
            return
        record = {
            "mode": mode,
            "partition": ctx.partitionId(),
            "attempt": ctx.attemptNumber(),
            "stage": ctx.stageId(),
            "rows": seen,
            "files": files,
            "pid": os.getpid(),
        }
        if mode == "kill_executor":
            jvm = _executor_jvm()
            record["executor_pid"] = jvm
            _log(path, record)
            if jvm is None:
                raise RuntimeError("injected fault: no executor JVM above this Python worker")
            os.kill(jvm, signal.SIGKILL)
            time.sleep(5)  # the worker dies with its executor's sockets
            os._exit(1)
        _log(path, record)
        if mode == "exit":
            os._exit(1)
        raise RuntimeError(f"injected fault in partition {ctx.partitionId()} attempt {ctx.attemptNumber()}")

    TableWrite.write = write  # type: ignore[method-assign]


_PATH = os.environ.get("STRATALAKE_FAULT_FILE")
if _PATH:
    _install(_PATH)
