#!/usr/bin/env bash
# Prepares the peers of issue 31 (cached; a second run does nothing): a venv with the pyspark the
# peers support, and their jars copied from Maven Central (via ~/.m2) into one folder that Spark
# loads with spark.jars, so a run never resolves packages itself.
#   bash bench/spark_peers/prepare.sh VENV_DIR JAR_DIR SPARK_MINOR
set -euo pipefail
venv=$1 jars=$2 minor=$3
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import pyspark, sys; sys.exit(not pyspark.__version__.startswith('$minor.'))" 2>/dev/null; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
fi
# pyspark's `sql` extra (pandas, pyarrow, numpy) at the versions stratalake's venv holds (SAME_AS,
# its python): pyspark loads them in the driver when they are installed (its py4j converters
# import pyspark.testing.utils), ~90 MiB that would otherwise count against stratalake's driver
# alone. Same packages, so the systems differ in their table format only.
pins=("pandas<3")
if [ -n "${SAME_AS:-}" ]; then
  if ! same=$("$SAME_AS" -c "import importlib.metadata as m; print(' '.join(f'{p}=={m.version(p)}' for p in ('pandas', 'pyarrow', 'numpy')))"); then
    echo "SAME_AS=$SAME_AS: cannot read its pandas, pyarrow and numpy versions (run make setup first, or unset SAME_AS)" >&2
    exit 1
  fi
  read -r -a pins <<<"$same"
fi
if ! "$venv/bin/python" - "${pins[@]}" 2>/dev/null <<'PY'
import importlib.metadata as m, sys
import numpy, pandas, pyarrow  # noqa: F401 (installed)
want = dict(p.split("==") for p in sys.argv[1:] if "==" in p)
sys.exit(any(m.version(k) != v for k, v in want.items()))
PY
then
  "$venv/bin/pip" install -q "pyspark[sql]==$minor.*" "${pins[@]}"
fi

# Delta 4.0.0 and Iceberg 1.10.0 are the releases built for Spark 4.0 (delta-storage is
# delta-spark's one dependency that Spark does not ship).
case "$minor" in
  4.0) artifacts="io.delta:delta-spark_2.13:4.0.0 io.delta:delta-storage:4.0.0 org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.10.0" ;;
  *) echo "no peer jars known for Spark $minor" >&2; exit 1 ;;
esac
mkdir -p "$jars"
for a in $artifacts; do
  IFS=: read -r group artifact version <<<"$a"
  [ -s "$jars/$artifact-$version.jar" ] && continue
  mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
    -Dartifact="$a" -DoutputDirectory="$jars" >/dev/null
  [ -s "$jars/$artifact-$version.jar" ] || { echo "could not fetch $a" >&2; exit 1; }
done
echo "peers ready: $("$venv/bin/python" -c 'import pyspark; print("pyspark", pyspark.__version__)'), jars in $jars"
