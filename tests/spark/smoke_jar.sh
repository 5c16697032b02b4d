#!/usr/bin/env bash
# Runs the Spark smoke test (tests/spark/smoke_app.py) with a given shim jar (e.g. the one sbt builds):
# the package is copied to a temporary directory with that jar in place of its own.
# Usage: bash tests/spark/smoke_jar.sh <project python> <jar>
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
vpy="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
jar="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$root/python" "$work/python"
rm -rf "$work/python/stratalake/jars"
mkdir -p "$work/python/stratalake/jars"
cp "$jar" "$work/python/stratalake/jars/stratalake-spark-shim.jar"
cd "$work"
echo "smoke test with $jar"
PYTHONPATH="$work/python" PYSPARK_PYTHON="$vpy" "$vpy" "$root/tests/spark/smoke_app.py" "$work" \
  > "$work/out.txt" 2> "$work/err.txt" || {
  tail -c 5000 "$work/err.txt" >&2
  tail -n 1 "$work/out.txt"
  echo "smoke test FAILED with $jar" >&2
  exit 1
}
tail -n 1 "$work/out.txt"
