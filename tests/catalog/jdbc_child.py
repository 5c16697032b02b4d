"""A second process for the JDBC catalog tests: ``python -m tests.catalog.jdbc_child ACTION ...``.

* ``commit WAREHOUSE OPTIONS_JSON IDENT START COUNT``: COUNT commits of one row each (ids START..),
  printing ``done`` at the end; ``commit-unlocked``: the same with a lock that excludes no one;
* ``hold WAREHOUSE OPTIONS_JSON IDENT``: take the table's catalog lock, print ``held`` and sleep
  (the test kills it).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa

import stratalake
from tests.catalog import racy_store  # noqa: F401  (registers racy://)

ROOT = Path(__file__).resolve().parents[2]


def spawn(
    action: str, warehouse: str, opts: dict[str, str], *args: str, go: str = ""
) -> subprocess.Popen[str]:
    """Start this module as a child process running ``action`` (a ``commit`` waits for the file
    ``go`` to appear, after printing ``ready``, when one is given)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), str(ROOT)]),
        "JDBC_CHILD_GO": go,
    }
    cmd = [sys.executable, "-m", "tests.catalog.jdbc_child", action, warehouse, json.dumps(opts), *args]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def start_together(procs: list[subprocess.Popen[str]], go: str) -> None:
    """Wait until every committing child is ready, then let them all go at once."""
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    with open(go, "w"):
        pass


def finish(proc: subprocess.Popen[str]) -> str:
    """Wait for a child; its output, after asserting it succeeded."""
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-3000:]
    return out


def assert_all_committed(table: stratalake.Table, n: int) -> None:
    """Snapshot ids 1..N with no gap, and rows 0..n-1 all there."""
    ids = [s.id for s in table.snapshot_manager.snapshots()]
    assert ids == list(range(1, len(ids) + 1))
    assert sorted(table.read().column("id").to_pylist()) == list(range(n))


def main(argv: list[str]) -> None:
    action, warehouse, options = argv[0], argv[1], json.loads(argv[2])
    catalog = stratalake.Catalog(warehouse, options)
    if action == "commit-unlocked":
        # The control experiment: the table's FileIO still goes through create_under_lock, but the
        # lock no longer excludes anyone.
        catalog.lock.hold = lambda database, table: contextlib.nullcontext()
        action = "commit"
    ident = argv[3]
    if action == "commit":
        start, count = int(argv[4]), int(argv[5])
        table = catalog.get_table(ident)
        go = os.environ.get("JDBC_CHILD_GO")
        if go:  # start together with the other writer: the parent creates this file
            print("ready", flush=True)
            while not os.path.exists(go):
                time.sleep(0.005)
        for i in range(start, start + count):
            table.write(pa.table({"id": pa.array([i], pa.int64()), "v": [f"row {i}"]}))
        print("done", flush=True)
    elif action == "hold":
        db, name = ident.split(".")
        with catalog.lock.hold(db, name):
            print("held", flush=True)
            time.sleep(3600)
    else:
        raise SystemExit(f"unknown action {action}")


if __name__ == "__main__":
    main(sys.argv[1:])
