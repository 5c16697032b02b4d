"""End to end: the real spark-sql shell through ``stratalake sql -f`` (no Python driver at all)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCRIPT = """
CREATE DATABASE IF NOT EXISTS shop;
CREATE TABLE shop.product (
  id BIGINT, price DOUBLE, sales BIGINT,
  PRIMARY KEY (id) NOT ENFORCED
) WITH ('merge-engine' = 'aggregation',
        'fields.price.aggregate-function' = 'max',
        'fields.sales.aggregate-function' = 'sum');
INSERT INTO shop.product VALUES (1, 23.0, 15);
INSERT INTO shop.product VALUES (1, 30.2, 20);
SELECT concat('result=', id, ',', price, ',', sales) FROM shop.product;
SELECT concat('v1=', sales) FROM shop.product VERSION AS OF 1;
SELECT concat('snapshots=', max(snapshot_id), ',', count(*)) FROM shop.`product$snapshots`;
SELECT concat('option=', value) FROM shop.`product$options` WHERE key = 'merge-engine';
CREATE TABLE shop.bad (id INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = 'x');
SELECT 'not reached';
"""


def test_stratalake_sql_runs_a_file(tmp_path: Path) -> None:
    """One shell run (a JVM start is slow): results, time travel, then a readable error."""
    script = tmp_path / "demo.sql"
    script.write_text(SCRIPT)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "stratalake.cli",
            "sql",
            "--warehouse",
            str(tmp_path / "wh"),
            "-f",
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert "result=1,30.2,35" in result.stdout, result.stderr[-3000:]
    assert "v1=15" in result.stdout
    # Metadata system tables, answered on the driver (an aggregate of them as one row)
    assert "snapshots=2,2" in result.stdout and "option=aggregation" in result.stdout
    # the failing statement stops the script with the core's message
    assert result.returncode != 0
    assert "[STRATALAKE:InvalidOptionError]" in result.stdout + result.stderr
    assert "not reached" not in result.stdout
    assert not (tmp_path / "metastore_db").exists()  # the shell's Hive catalog stays out of the way
