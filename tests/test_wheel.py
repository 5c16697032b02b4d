"""The wheel's build hook (setup.py) when the build environment lacks pyspark: a clear message.

The standard build itself (`python -m build` and `pip install` of the sdist in pip's isolated
build environment, from a fresh clone, then the Spark smoke test with the installed package) is
`make test-build` (tests/build/isolated_build.sh), which CI runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]


def _source_copy(dest: Path) -> Path:
    src = dest / "src"
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md"):
        src.mkdir(exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.jar", "target")
    shutil.copytree(ROOT / "python", src / "python", ignore=ignore)
    shutil.copytree(ROOT / "jvm-shim", src / "jvm-shim", ignore=ignore)
    return src


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
