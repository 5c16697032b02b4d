"""Install it like a library (issue 18): build the wheel, install it into a fresh venv, use Spark.

The wheel is built from a copy of the source tree without the shim jar, so its build hook
(setup.py) compiles the jar against the build environment's pyspark. The fresh venv gets the wheel
with ``--no-deps`` and reaches pyspark, pyarrow, numpy... of this test environment through a .pth
file (no download); the Spark application runs from a directory outside the checkout, so only the
installed package can be imported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "spark" / "smoke_app.py"


def _source_copy(dest: Path) -> Path:
    src = dest / "src"
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md"):
        src.mkdir(exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.jar", "target")
    shutil.copytree(ROOT / "python", src / "python", ignore=ignore)
    shutil.copytree(ROOT / "jvm-shim", src / "jvm-shim", ignore=ignore)
    return src


def _clean_env() -> dict[str, str]:
    """This process's environment without the paths a Spark session added (``configure()`` puts
    the checkout's python/ on PYTHONPATH for Spark's workers): pip would take the checkout's
    metadata for an installed stratalake and skip the wheel."""
    drop = ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
    return {k: v for k, v in os.environ.items() if k not in drop}


def test_wheel_installs_into_a_fresh_venv_and_runs_spark(tmp_path: Path) -> None:
    src = _source_copy(tmp_path)
    assert not list((src / "python" / "stratalake").rglob("*.jar"))
    dist = tmp_path / "dist"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(src),
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=_clean_env(),
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (wheel,) = dist.glob("stratalake-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "stratalake/jars/stratalake-spark-shim.jar" in names
    assert "pyspark_stratalake/bridge.py" in names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_clean_env(),
    )
    assert install.returncode == 0, install.stderr[-3000:]
    # pyspark and the other dependencies: this environment's, after the venv's own site-packages
    # (a .pth path line adds the directory, without running that directory's own .pth files, so
    # this checkout's editable install stays invisible).
    site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = elsewhere / "app.py"
    shutil.copy2(SMOKE, script)
    env = _clean_env()
    run = subprocess.run(
        [str(py), str(script), str(tmp_path / "work"), "--steps", "ddl,insert,merged_select"],
        cwd=str(elsewhere),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["ok"] == ["ddl", "insert", "merged_select"], result
    assert result["stratalake"] == str(site / "stratalake"), result  # the installed package, not the checkout


def test_wheel_build_without_pyspark_says_what_is_missing(tmp_path: Path) -> None:
    """A build whose Pythons have no pyspark 4.3 fails with a message naming it, not a javac error."""
    src = _source_copy(tmp_path)
    venv = tmp_path / "no-pyspark"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    here = Path(sysconfig.get_paths()["purelib"])
    tools = tmp_path / "build-tools"
    tools.mkdir()
    for path in [here / "setuptools", here / "_distutils_hack", *here.glob("setuptools-*.dist-info")]:
        (tools / path.name).symlink_to(path)
    (site / "tools.pth").write_text(f"{tools}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "STRATALAKE_BUILD_PYTHON")}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if "venv" not in p and "pyenv" not in p
    )
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "wheel",
            str(src),
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert build.returncode != 0
    assert "building the Spark shim jar needs pyspark 4.3.x" in build.stdout + build.stderr, build.stderr[
        -3000:
    ]
