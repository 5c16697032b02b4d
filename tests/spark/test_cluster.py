"""Executors without stratalake (issue 18): ``session(..., ship_packages=True)`` ships it.

A multi-process Spark (``local-cluster[2,1,1024]``: two executor JVMs) whose Python is a fresh venv
holding only pyspark's own dependencies (pyspark, py4j, pyarrow, numpy; linked from this
environment, nothing downloaded). The driver process adds stratalake, fastavro and zstandard
through PYTHONPATH; the executors' PYTHONPATH is replaced (``spark.executorEnv.PYTHONPATH``), so
their Python finds stratalake only in the zips the driver shipped. The application creates,
writes, reads and compacts a table there, and checks from inside the tasks that the executors'
stratalake is the shipped zip and that their interpreter alone cannot import it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXECUTOR_PACKAGES = ("pyspark", "py4j", "pyarrow", "numpy", "numpy.libs")
DRIVER_EXTRAS = ("fastavro", "zstandard", "backports")  # backports.zstd: fastavro's zstd codec
STEPS = "executor_env,ddl,insert,merged_select,compact,avro"


def _linked(target: Path, names: tuple[str, ...]) -> Path:
    site = Path(sysconfig.get_paths()["purelib"])
    target.mkdir(parents=True)
    for name in names:
        if (site / name).exists():
            (target / name).symlink_to(site / name)
    return target


def test_executors_without_stratalake_get_it_shipped(tmp_path: Path) -> None:
    from tests.spark.conftest import _build_jar_if_missing

    _build_jar_if_missing()
    venv = tmp_path / "executor-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    venv_site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (venv_site / "spark_deps.pth").write_text(str(_linked(tmp_path / "spark-deps", EXECUTOR_PACKAGES)) + "\n")
    # The executors' interpreter has pyspark but no stratalake. (Without PYTHONPATH: a local session
    # started earlier in this process put python/ on it for its own workers.)
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run(
        [str(py), "-c", "import pyspark, pyarrow, importlib.util; "
         "assert importlib.util.find_spec('stratalake') is None"],
        capture_output=True,
        env=bare,
    )
    assert probe.returncode == 0, probe.stderr

    driver_path = [str(ROOT / "python"), str(_linked(tmp_path / "driver-deps", DRIVER_EXTRAS)), str(ROOT)]
    empty = tmp_path / "nothing"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["PYTHONPATH"] = os.pathsep.join(driver_path)
    proc = subprocess.run(
        [
            str(py),
            str(HERE / "smoke_app.py"),
            str(tmp_path / "work"),
            "--master",
            "local-cluster[2,1,1024]",
            "--ship",
            "--steps",
            STEPS,
            "--conf",
            f"spark.executorEnv.PYTHONPATH={empty}",
            "--conf",
            "spark.executor.memory=768m",
        ],
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
    executors = next(json.loads(line)["executors"] for line in lines if line.startswith('{"executors"'))
    assert len(executors) == 2
    assert all("stratalake-" in e["stratalake"] and ".zip" in e["stratalake"] for e in executors), executors
    assert not any(e["zstandard"] or e["polars"] for e in executors), executors  # nothing else leaked in
