"""Spark task failures and a killed executor during INSERT (issue #9).

The shared session runs with ``spark.task.maxFailures`` 1, so these cases run in their own Spark
application (``fault_app.py``) with task retries allowed. A ``sitecustomize`` hook
(``fault_site/``) makes a write task fail for real *after* the writer was given rows and had
flushed data files: an exception in the task, the Python worker dying (``os._exit``), or the
executor JVM being SIGKILLed. The statement must commit everything exactly once (one snapshot) or
nothing; the failed attempts' files never become visible, and ``remove_orphan_files`` clears them.
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ROWS = 20_000
ALL = {
    "rows": ROWS,
    "distinct": ROWS,
    "min": 0,
    "max": ROWS - 1,
    "sum": ROWS * (ROWS - 1) // 2,
    "bad_values": 0,
}


def run_app(tmp_path: Path, master: str, cases: list[str], timeout: float) -> dict[str, Any]:
    from tests.spark.conftest import _build_jar_if_missing

    _build_jar_if_missing()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE / "fault_site"), str(ROOT), str(ROOT / "python")]),
        "PYSPARK_PYTHON": sys.executable,
        "STRATALAKE_FAULT_FILE": str(tmp_path / "control.json"),
    }
    proc = subprocess.run(
        [sys.executable, str(HERE / "fault_app.py"), master, str(tmp_path), ",".join(cases)],
        env=env,
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    results_file = tmp_path / "results.json"
    assert proc.returncode == 0 and results_file.exists(), proc.stderr[-5000:]
    results: dict[str, Any] = json.loads(results_file.read_text())
    crashed = {k: v["crash"] for k, v in results.items() if isinstance(v, dict) and "crash" in v}
    assert not crashed, crashed
    for name, case in results.items():  # shown with -s: what happened, and how long it took
        if isinstance(case, dict):
            error = (case["error"] or "").splitlines()[:1]
            print(f"{name}: {case['seconds']:.1f} s, faults {case['faults']}, error {error}")
        else:
            print(f"{name}: {case:.1f} s")
    return results


def _subset(state: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    return {k: state[k] for k in expected}


def check_committed_once(
    case: dict[str, Any], expected: dict[str, Any], kind: str = "APPEND", fault: str | None = None
) -> None:
    """The statement succeeded despite the fault: every row once, exactly one new snapshot."""
    assert case["error"] is None, case["error"]
    if fault is not None:  # the fault really happened, after the writer had rows and files
        assert len(case["faults"]) == 1, case["faults"]
        f = case["faults"][0]
        assert f["mode"] == fault and f["attempt"] == 0 and f["rows"] >= 2000 and f["files"] >= 1, f
    before, after = case["before"]["snapshots"], case["after"]["snapshots"]
    assert after[: len(before)] == before and len(after) == len(before) + 1, (before, after)
    assert after[-1][1] == kind
    assert _subset(case["after"], expected) == expected
    # Leftovers of failed attempts are never live; orphan removal leaves the table as it was.
    assert case["after_cleanup"] == {**case["after"], "unreferenced_files": 0}


def test_task_failures_during_insert_commit_everything_once_or_nothing(tmp_path: Path) -> None:
    """One application (master local[2,4]: task retries allowed) for all local cases."""
    r = run_app(tmp_path, "local[2,4]", ["raise", "exit", "overwrite", "upstream", "always"], timeout=600)

    # A write task raises after 2,000 rows and some flushed files; its retry succeeds.
    check_committed_once(r["raise"], ALL, fault="raise")
    assert r["raise"]["after"]["unreferenced_files"] == 0  # the raising task aborted its writer

    # The Python worker of a write task dies mid-write (no cleanup runs): its files stay behind
    # as orphans until remove_orphan_files, but are never committed.
    exit_case = r["exit"]
    check_committed_once(
        exit_case,
        {**ALL, "rows": ROWS + 1, "distinct": ROWS + 1, "min": -1, "sum": ALL["sum"] - 1},
        fault="exit",
    )
    assert exit_case["after"]["unreferenced_files"] >= exit_case["faults"][0]["files"]
    assert exit_case["orphans_removed"] >= exit_case["faults"][0]["files"]

    # INSERT OVERWRITE with a failed task: the old rows go and the new ones land, each once.
    check_committed_once(r["overwrite"], ALL, kind="OVERWRITE", fault="raise")
    assert r["overwrite"]["before"]["rows"] == 100

    # A failure in the stage before the write (the source's Python UDF) is retried there.
    up = r["upstream"]
    check_committed_once(up, ALL)
    assert up["faults"] == [{"mode": "udf", "partition": 0, "attempt": 0}]

    # Every attempt of one task fails: the statement fails and commits nothing; a new writer works.
    always = r["always"]
    assert always["error"] is not None and "injected fault" in always["error"]
    assert len(always["faults"]) == 4  # local[2,4]: four attempts of the task
    assert {f["attempt"] for f in always["faults"]} == {0, 1, 2, 3}
    assert always["after"] == {
        **always["before"],
        "unreferenced_files": always["after"]["unreferenced_files"],
    }
    nxt = always["next_write"]
    assert len(nxt["snapshots"]) == len(always["before"]["snapshots"]) + 1
    assert nxt["rows"] == ROWS + 1 and nxt["distinct"] == ROWS + 1 and nxt["bad_values"] == 0
    assert always["after_cleanup"]["unreferenced_files"] == 0


@pytest.mark.slow
def test_killed_executor_during_insert_commits_everything_once(tmp_path: Path) -> None:
    """master local-cluster[2,1,1024]: two executor JVMs; a write task SIGKILLs its own executor
    after passing rows to the writer. Spark reruns what was lost on a new executor."""
    r = run_app(tmp_path, "local-cluster[2,1,1024]", ["kill_executor"], timeout=900)
    case = r["kill_executor"]
    check_committed_once(case, ALL, fault="kill_executor")
    assert case["faults"][0]["executor_pid"] is not None
