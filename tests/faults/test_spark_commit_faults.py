"""Faults in the commit of Spark statements (batch INSERT, INSERT OVERWRITE, DELETE / UPDATE on
primary-key and append tables, a streaming micro-batch), run in their own Spark application
(``spark_commit_app.py``) so that the driver's Python commit meets an injected fault.

Whatever the fault, no file a snapshot references may go missing, the rows are all-or-nothing,
an error says what is known, and Spark's abort after a failed commit deletes nothing the commit
kept (the shim leaves the files to the commit once it began).
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


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from tests.spark.conftest import _build_jar_if_missing

    _build_jar_if_missing()
    workdir = tmp_path_factory.mktemp("commit-faults")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE / "spark_site"), str(ROOT), str(ROOT / "python")]),
        "PYSPARK_PYTHON": sys.executable,
        "STRATALAKE_COMMIT_FAULT_FILE": str(workdir / "control.json"),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "tests.faults.spark_commit_app", str(workdir)],
        env=env,
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = workdir / "results.json"
    assert proc.returncode == 0 and out.exists(), proc.stderr[-5000:]
    data: dict[str, Any] = json.loads(out.read_text())
    crashed = {k: v["crash"] for k, v in data.items() if "crash" in v}
    assert not crashed, crashed
    return data


def _intact(state: dict[str, Any]) -> None:
    assert state["missing"] == [], state["missing"]


def _fired(case: dict[str, Any]) -> None:
    assert case["fired"] and case["fired"][0]["fired"] is not None, case["fired"]


def test_writers_compaction_failing_after_the_append_snapshot_keeps_the_data(results: dict[str, Any]) -> None:
    case = results["compact_fails_after_append"]
    _fired(case)
    assert case["error"] is None  # the data is committed; the compaction is dropped with a warning
    after = case["after"]
    _intact(after)
    # With deletion vectors the new level-0 rows wait for the next compaction to be read.
    assert after["rows"] == after["distinct"] == 2000
    assert after["snapshots"][-1][1] == "APPEND" and len(after["snapshots"]) == len(case["before"]["snapshots"]) + 1
    # The dropped compaction's outputs were known not committed: removed, no orphans left.
    assert after["unreferenced"] == [], after["unreferenced"]
    assert case["after_cleanup"]["rows"] == 2000


def test_a_failed_read_back_after_the_publish_is_retried(results: dict[str, Any]) -> None:
    case = results["confirm_read_fails"]
    _fired(case)
    assert case["fired"][0]["fired"][0] == "read"
    assert case["error"] is None
    _intact(case["after"])
    assert case["after"]["rows"] == 3000


def test_lost_answer_of_the_snapshot_publish_is_resolved_as_committed(results: dict[str, Any]) -> None:
    case = results["publish_answer_lost"]
    _fired(case)
    assert case["error"] is None
    _intact(case["after"])
    assert case["after"]["rows"] == 3000
    assert len(case["after"]["snapshots"]) == len(case["before"]["snapshots"]) + 1


@pytest.mark.parametrize("name", ["publish_unknown", "overwrite_unknown"])
def test_unknown_outcome_fails_the_statement_and_keeps_every_file(results: dict[str, Any], name: str) -> None:
    case = results[name]
    _fired(case)
    assert case["error"] is not None and "CommitStateUnknownError" in case["error"], case["error"]
    assert "$snapshots" in case["error"]
    # The publish did land: Spark's abort after the failed commit must not have deleted its files.
    _intact(case["after"])
    assert len(case["after"]["snapshots"]) > len(case["before"]["snapshots"])
    # Re-running the primary-key statement gives its clean result (with deletion vectors the
    # committed level-0 rows become visible once compacted, which the re-run does).
    rerun = case["rerun"]
    _intact(rerun)
    assert rerun["rows"] == rerun["distinct"] == {"publish_unknown": 3000, "overwrite_unknown": 500}[name]
    _intact(case["after_cleanup"])
    assert case["after_cleanup"]["unreferenced"] == []


def test_refused_publish_commits_nothing_and_removes_its_files(results: dict[str, Any]) -> None:
    case = results["publish_refused"]
    _fired(case)
    assert case["error"] is not None and "injected fault before publish" in case["error"]
    after = case["after"]
    assert (after["rows"], after["checksum"], after["snapshots"]) == (
        case["before"]["rows"],
        case["before"]["checksum"],
        case["before"]["snapshots"],
    )
    # Known not committed: the commit's abort removed the files (no orphan removal needed).
    assert after["unreferenced"] == [], after["unreferenced"]


@pytest.mark.parametrize("name", ["delete_pk_answer_lost", "delete_append_unknown", "update_append_after_publish"])
def test_row_level_statements(results: dict[str, Any], name: str) -> None:
    case = results[name]
    _fired(case)
    _intact(case["after"])
    before, after = case["before"], case["after"]
    if name == "delete_append_unknown":
        assert case["error"] is not None and "CommitStateUnknownError" in case["error"]
    else:
        assert case["error"] is None, case["error"]
    if name.startswith("delete"):
        assert after["rows"] == before["rows"] - 100  # the publish landed: the rows are gone
    else:
        assert after["rows"] == before["rows"] and after["checksum"] != before["checksum"]
    _intact(case["after_cleanup"])
    assert case["after_cleanup"]["unreferenced"] == []


def test_streaming_batch_with_unknown_commit_is_not_applied_twice(results: dict[str, Any]) -> None:
    case = results["stream"]
    assert case["error"] is not None and "CommitStateUnknownError" in case["error"], case["error"]
    _intact(case["first"])
    assert case["first"]["rows"] == 500  # the batch's publish landed
    assert case["replayed"]["rows"] == case["replayed"]["distinct"] == 500  # the replay was skipped
    _intact(case["replayed"])
    assert case["next"]["rows"] == case["next"]["distinct"] == 800


def test_native_append_insert_with_unknown_outcome_keeps_its_files(results: dict[str, Any]) -> None:
    """Spark's Parquet writer wrote the files (native append write); the commit's outcome is
    unknown and the publish did land: Spark's abort must not delete them."""
    case = results["append_insert_unknown"]
    _fired(case)
    assert case["error"] is not None and "CommitStateUnknownError" in case["error"], case["error"]
    _intact(case["after"])
    assert case["after"]["rows"] == case["before"]["rows"] + 500
    _intact(case["after_cleanup"])
    assert case["after_cleanup"]["rows"] == case["before"]["rows"] + 500
    assert case["after_cleanup"]["unreferenced"] == []


def test_copy_on_write_rewrites_by_a_job_follow_the_commit_outcome(results: dict[str, Any]) -> None:
    """An UPDATE of a copy-on-write append table: Spark tasks rewrite the touched files (staged
    under the table), the driver commits them with the updated rows. Unknown: every file stays
    (the publish landed); refused: the table is unchanged and nothing the statement wrote, the
    staged units included, is left."""
    unknown = results["update_cow_unknown"]
    _fired(unknown)
    assert unknown["error"] is not None and "CommitStateUnknownError" in unknown["error"], unknown["error"]
    _intact(unknown["after"])
    before, after = unknown["before"], unknown["after"]
    assert after["rows"] == before["rows"] and after["checksum"] != before["checksum"]
    assert not [f for f in after["unreferenced"] if f.startswith(".stratalake-staging")]
    for name in ("update_cow_refused", "delete_cow_job_refused"):
        _refused_unchanged(results[name])


def _refused_unchanged(refused: dict[str, Any]) -> None:
    _fired(refused)
    assert refused["error"] is not None and "injected fault before publish" in refused["error"]
    before, after = refused["before"], refused["after"]
    assert (after["rows"], after["checksum"], after["snapshots"]) == (
        before["rows"],
        before["checksum"],
        before["snapshots"],
    )
    assert after["unreferenced"] == [], after["unreferenced"]
