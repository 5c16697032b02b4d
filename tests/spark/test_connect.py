"""Spark Connect (issue 18): ``stratalake.spark.session(warehouse, remote="local[2]")`` starts a
local Connect server with stratalake's settings and returns a Connect client session.

A Connect server cannot share the JVM of the shared classic test session, so the statements run in
their own application (``smoke_app.py --remote``): SQL (CREATE with PRIMARY KEY, INSERT, merged
SELECT, MERGE INTO), ``writeTo``, ``readStream``/``writeStream`` and the notebook magics, all
through the Connect client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
STEPS = "ddl,insert,merged_select,merge_into,time_travel,write_to,stream,magics"


def test_connect_session_runs_sql_writes_streams_and_magics(tmp_path: Path) -> None:
    pytest.importorskip("grpc")
    from tests.spark.conftest import _build_jar_if_missing

    _build_jar_if_missing()
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    proc = subprocess.run(
        [sys.executable, str(HERE / "smoke_app.py"), str(tmp_path), "--remote", "local[2]", "--steps", STEPS],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, proc.stderr[-5000:]
    result = json.loads(lines[-1])
    print(result["seconds"])
    assert result["failed"] == {}, result["failed"]
    assert result["ok"] == STEPS.split(","), result
    # Static settings went to the server at start: the client warned about none of them.
    assert "Cannot modify the value of the static Spark config" not in proc.stderr
    assert "CANNOT_MODIFY_CONFIG" not in proc.stderr
