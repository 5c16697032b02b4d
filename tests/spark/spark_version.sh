#!/usr/bin/env bash
# Runs the Spark smoke test (tests/spark/smoke_app.py) on another pyspark release, with the shim jar
# built against the project's pyspark: `make test-spark-versions` calls it once per version.
# Usage: bash tests/spark/spark_version.sh <project python> <pyspark version, e.g. 4.2.1>
#
# The pyspark release goes into its own venv, .venv-spark-<minor>/ (kept between runs); the other
# dependencies (pyarrow, numpy, fastavro...) come from the project venv through a .pth line that
# sits after the venv's own site-packages, so its pyspark wins and nothing else is downloaded.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
vpy="$1"
version="$2"
minor="${version%.*}"
venv="$root/.venv-spark-$minor"
if ! "$venv/bin/python" -c "import pyspark, sys; sys.exit(pyspark.__version__ != '$version')" 2>/dev/null; then
  rm -rf "$venv"
  "$vpy" -m venv --without-pip "$venv"
  "$vpy" -m pip --python "$venv/bin/python" install -q --no-deps "pyspark==$version"
fi
site="$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")"
"$vpy" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > "$site/zz_project_deps.pth"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "smoke test on pyspark $version ($venv)"
PYTHONPATH="$root/python" PYSPARK_PYTHON="$venv/bin/python" "$venv/bin/python" "$root/tests/spark/smoke_app.py" "$work" \
  > "$work/out.txt" 2> "$work/err.txt" || {
  tail -c 5000 "$work/err.txt" >&2
  tail -n 1 "$work/out.txt"
  echo "smoke test FAILED on pyspark $version" >&2
  exit 1
}
tail -n 1 "$work/out.txt"
