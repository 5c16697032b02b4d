#!/usr/bin/env bash
# The standard Python build from a fresh clone, as a user runs it (issue 31): `python -m build` in
# pip's isolated build environment (sdist, then a wheel from that sdist), then `pip install` of the
# sdist into a fresh venv (a second isolated build), then the Spark smoke test with the installed
# package only. The build environment gets pyspark from `[build-system] requires`; nothing is
# pre-installed and isolation is never turned off.
# Usage: bash tests/build/isolated_build.sh <python3.11+>
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
python="${1:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# A fresh clone of the committed tree: no jar, no venv, no build output.
git clone -q --no-local "$root" "$work/src"
test ! -e "$work/src/python/stratalake/jars/stratalake-spark-shim.jar"
"$python" -m venv "$work/build-tools"
"$work/build-tools/bin/pip" install -q build
echo "python -m build (isolated) ..."
"$work/build-tools/bin/python" -m build -q "$work/src" --outdir "$work/dist" > "$work/build.log" 2>&1 || {
  tail -n 40 "$work/build.log" >&2; echo "isolated build FAILED" >&2; exit 1; }
sdist="$(ls "$work"/dist/stratalake-*.tar.gz)"
wheel="$(ls "$work"/dist/stratalake-*.whl)"
# (the listing goes to a file first: `grep -q` closing the pipe early fails it under pipefail)
unzip -l "$wheel" > "$work/wheel.txt"
grep -q "stratalake/jars/stratalake-spark-shim.jar" "$work/wheel.txt" || {
  echo "the wheel lacks the shim jar" >&2; exit 1; }
echo "built $(basename "$sdist") and $(basename "$wheel") (with the shim jar)"
"$python" -m venv "$work/user"
echo "pip install of the sdist (isolated build) ..."
"$work/user/bin/pip" install -q "$sdist" > "$work/install.log" 2>&1 || {
  tail -n 40 "$work/install.log" >&2; echo "pip install of the sdist FAILED" >&2; exit 1; }
# Outside the checkout, without PYTHONPATH: only the installed package can be imported.
cd "$work"
env -u PYTHONPATH PYSPARK_PYTHON="$work/user/bin/python" "$work/user/bin/python" \
  "$root/tests/spark/smoke_app.py" "$work/smoke" --steps ddl,insert,merged_select,merge_into \
  > "$work/out.txt" 2> "$work/err.txt" || {
  tail -c 4000 "$work/err.txt" >&2; tail -n 1 "$work/out.txt"; echo "smoke test FAILED" >&2; exit 1; }
tail -n 1 "$work/out.txt"
