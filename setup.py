"""Build hook: every wheel carries the JVM shim jar, compiled against the build environment's pyspark.

All metadata lives in pyproject.toml; this file only adds a ``build_py`` step that runs
``jvm-shim/build.sh`` when ``python/stratalake/jars/stratalake-spark-shim.jar`` is missing or older
than the Java sources (``python -m build``, ``pip wheel .``, ``pip install .``). Editable installs
(``make setup``) skip it: the Makefile builds the jar in place.

The build needs ``javac`` (JDK 17+) and pyspark: the Python running the build, or the one named
by ``STRATALAKE_BUILD_PYTHON``, or ``python3`` on PATH, whichever imports pyspark first. An
isolated build (the default of ``pip wheel .`` and ``python -m build``) has no pyspark of its own;
it finds the one of an activated environment through PATH, or pass ``--no-build-isolation`` /
``--no-isolation``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
JAR = ROOT / "python" / "stratalake" / "jars" / "stratalake-spark-shim.jar"
SHIM = ROOT / "jvm-shim"


class ShimBuildError(RuntimeError):
    pass


def _stale() -> bool:
    if not JAR.exists():
        return True
    inputs = [SHIM / "build.sh", *(SHIM / "src").rglob("*.java"), *(SHIM / "src").rglob("*.scala")] if (SHIM / "src").exists() else []
    return any(p.stat().st_mtime > JAR.stat().st_mtime for p in inputs)


# The shim compiles against this Spark's API (its parser implements methods 4.3 added); the jar
# then runs on Spark 4.2 and 4.3 (`make test-spark-versions`).
BUILD_SPARK = "4.3"


def _python_with_pyspark() -> tuple[str | None, list[str]]:
    """The first candidate Python whose pyspark is Spark BUILD_SPARK, and what the others had."""
    candidates = [os.environ.get("STRATALAKE_BUILD_PYTHON"), sys.executable]
    candidates += [shutil.which(name) for name in ("python3", "python")]
    seen = []
    for python in dict.fromkeys(candidates):
        if not python:
            continue
        probe = subprocess.run(
            [
                python,
                "-c",
                "import pyspark, os; print(pyspark.__version__, os.path.dirname(pyspark.__file__))",
            ],
            capture_output=True,
            text=True,
        )
        if probe.returncode != 0:
            continue
        version, _, where = probe.stdout.strip().partition(" ")
        if Path(where, "jars").is_dir():
            if version.startswith(BUILD_SPARK + "."):
                return python, seen
            seen.append(f"pyspark {version} ({python})")
    return None, seen


def build_shim_jar() -> None:
    if not _stale():
        return
    if not (SHIM / "build.sh").exists():
        raise ShimBuildError(
            f"stratalake: the shim jar is missing at {JAR} and jvm-shim/ is not in the source tree"
        )
    missing = [tool for tool in ("javac", "jar") if shutil.which(tool) is None]
    if missing:
        raise ShimBuildError(
            f"stratalake: building the Spark shim jar needs a JDK 17+ ({' and '.join(missing)} not found on PATH); "
            "install one (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME/bin on PATH"
        )
    python, others = _python_with_pyspark()
    if python is None:
        found = f" (found only {', '.join(others)})" if others else ""
        raise ShimBuildError(
            f"stratalake: building the Spark shim jar needs pyspark {BUILD_SPARK}.x (the jar compiles against "
            f"its Spark jars, and runs on Spark 4.2 and 4.3), and none was found for this build{found}. "
            f"Install pyspark=={BUILD_SPARK}.* where the build runs and build with "
            "`pip wheel . --no-build-isolation` (or `python -m build --no-isolation`), or point "
            "STRATALAKE_BUILD_PYTHON at a Python that has it"
        )
    subprocess.run(["bash", str(SHIM / "build.sh"), python], check=True)


class BuildPyWithShim(build_py):
    """``build_py`` that first makes sure the shim jar exists and is current."""

    def run(self) -> None:
        if not getattr(self, "editable_mode", False):
            build_shim_jar()
            # The package-data list may have been computed before the jar existed.
            self.__dict__.pop("data_files", None)
        super().run()


setup(cmdclass={"build_py": BuildPyWithShim})
