#!/usr/bin/env bash
# Builds the JVM shim without Maven: compiles against the Spark jars shipped inside the pyspark wheel.
# Usage: bash jvm-shim/build.sh [python]   (or PYTHON=/path/to/python bash jvm-shim/build.sh)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
python="${1:-${PYTHON:-python3}}"

pyspark_dir="$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
jars="$pyspark_dir/jars"
if [ ! -d "$jars" ]; then
  echo "build.sh: no jars under $jars (is pyspark installed for $python?)" >&2
  exit 1
fi

out="$root/python/stratalake/jars/stratalake-spark-shim.jar"
classes="$(mktemp -d)"
trap 'rm -rf "$classes"' EXIT

find "$here/src/main/java" -name '*.java' > "$classes/sources.txt"
find "$here/src/main/scala" -name '*.scala' > "$classes/scala.txt"
# The few Scala classes first, with Scala's compiler from the same wheel (a mixed compile: scalac
# reads the Java sources for their types and emits only the Scala classes), then the Java.
scala_jars="$(ls "$jars"/scala-compiler-*.jar "$jars"/scala-library-*.jar "$jars"/scala-reflect-*.jar | tr '\n' ':')"
java -cp "$scala_jars" scala.tools.nsc.Main -release 17 -nowarn -encoding UTF-8 -cp "$jars/*" \
  -d "$classes" @"$classes/scala.txt" @"$classes/sources.txt"
javac --release 17 -nowarn -encoding UTF-8 -cp "$jars/*:$classes" -d "$classes" @"$classes/sources.txt"
rm "$classes/sources.txt" "$classes/scala.txt"
mkdir -p "$(dirname "$out")"
# Build beside the target and rename: a running JVM keeps reading the old file (its own inode).
jar --create --file "$out.tmp.$$" -C "$classes" .
mv -f "$out.tmp.$$" "$out"
echo "built $out"
