#!/usr/bin/env bash
# Builds Apache Paimon's Spark 4.0 connector (the shaded jar Paimon releases, paimon-bundle inside)
# from Paimon's released source at a tag, for issue 31's peers. Maven Central does not serve any
# paimon-spark artifact here (bench/spark_peers/run.py, PAIMON_TRIED), but it serves the Paimon
# core modules of the same release, so only the Spark modules are compiled; the rest (paimon-bundle
# and the modules it shades) comes from Maven Central at the tag's version. Cached: a second run
# with the jar in place does nothing.
#   bash bench/spark_peers/build_paimon.sh SOURCE TAG OUT_JAR_DIR
# SOURCE: a Paimon git repository (bare or a checkout; the tag is exported with `git archive`) or a
# source tree of that release without git. TAG: e.g. release-1.3.1 (measured: 77 s on the busy
# 2-core machine with a warm ~/.m2). The build tree and its log are in PAIMON_BUILD_DIR (default
# OUT_JAR_DIR/../paimon-build/TAG).
#
# Known to build: release-1.3.1 (module layout of 1.3.x: profile spark4, Scala 2.13, artifact
# paimon-spark-4.0). Not here: release-1.4.2 (Maven Central serves its paimon-bundle but not its
# paimon-common, which paimon-hive-common needs) and release-2.0.0 (paimon-spark-4.1_2.13: no 2.0.0
# core module on Maven Central, and building them with -am needs lumina-jni and Jindo from Aliyun's
# repositories, which are not reachable).
set -euo pipefail
source=${1:-} tag=${2:-} out=${3:-}
if [ -z "$source" ] || [ -z "$tag" ] || [ -z "$out" ]; then
  echo "build_paimon.sh: Paimon is not measured: no Paimon source given (set PAIMON_SOURCE to a Paimon" \
    "git repository or source tree; usage: build_paimon.sh SOURCE TAG OUT_JAR_DIR)" >&2
  exit 2
fi
fail() {
  echo "build_paimon.sh: Paimon's Spark connector was not built from $source at $tag: $*" >&2
  exit 1
}
version=${tag#release-}
jar_name="paimon-spark-4.0-$version.jar"
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -s "$out/$jar_name" ]; then
  echo "paimon connector cached: $out/$jar_name"
  exit 0
fi
build=${PAIMON_BUILD_DIR:-$(dirname "$out")/paimon-build/$tag}
# the build tree is emptied first: only one this script made (it marks it) or an empty folder
if [ -n "$(ls -A "$build" 2>/dev/null)" ] && [ ! -f "$build/.build_paimon" ]; then
  fail "$build is not empty and not a build tree of this script; set PAIMON_BUILD_DIR to a new folder"
fi
rm -rf "$build"
mkdir -p "$build"
touch "$build/.build_paimon"
if git --git-dir="$source" rev-parse --git-dir >/dev/null 2>&1; then
  git_dir=$source
elif git -C "$source" rev-parse --git-dir >/dev/null 2>&1; then
  git_dir=$(git -C "$source" rev-parse --absolute-git-dir)
else
  git_dir=
fi
if [ -n "$git_dir" ]; then
  commit=$(git --git-dir="$git_dir" rev-parse --verify -q "$tag^{commit}") || fail "no tag $tag in $git_dir"
  git --git-dir="$git_dir" archive "$commit" | tar -x -C "$build"
elif [ -f "$source/pom.xml" ]; then
  commit="no git: source tree $source"
  cp -a "$source/." "$build/"
else
  fail "$source is neither a git repository nor a source tree with a pom.xml"
fi
# the project's version: the first <version> after <artifactId>paimon-parent</artifactId>
pom_version=$(sed -n '/<artifactId>paimon-parent<\/artifactId>/,$ s:.*<version>\(.*\)</version>.*:\1:p' \
  "$build/pom.xml" | head -1)
[ "$pom_version" = "$version" ] || fail "the source's version is '$pom_version', expected $version (tag $tag)"
for m in paimon-spark/paimon-spark-common paimon-spark/paimon-spark4-common paimon-spark/paimon-spark-ut \
  paimon-spark/paimon-spark-4.0 paimon-hive/paimon-hive-common paimon-test-utils; do
  [ -f "$build/$m/pom.xml" ] || fail "no module $m: this script knows the layout of 1.3.x"
done

# Only the Spark modules, without -am: paimon-bundle and the core modules come from Maven Central at
# $version. paimon-hive-common and paimon-test-utils are not served there (the Spark modules depend
# on them, at compile and test scope), so they are built too; so is paimon-spark-ut, whose test jar
# paimon-spark-4.0 declares at test scope. No test is compiled or run: Maven is asked for the phases
# up to test-compile (with maven.test.skip, so the test sources are skipped; a reactor module's
# test jar then resolves to its empty test-classes folder, which nothing reads) and then for the two
# goals the package phase would run, the jar and Paimon's own shade execution (shade-paimon), which
# puts paimon-bundle, paimon-spark-common and paimon-spark4-common into the connector's jar. (The
# package phase itself would also run the test-jar goal, whose test jars are absent: Maven would
# then look for paimon-hive-common's test jar on Maven Central and fail.) Style checks are skipped.
modules=paimon-test-utils,paimon-hive/paimon-hive-common,paimon-spark/paimon-spark-common
modules=$modules,paimon-spark/paimon-spark4-common,paimon-spark/paimon-spark-ut,paimon-spark/paimon-spark-4.0
cmd=(mvn -B -Pspark4 -pl "$modules" -Dmaven.test.skip=true -DskipTests -Drat.skip=true -Dcheckstyle.skip=true
  -Dspotless.check.skip=true -Denforcer.skip=true test-compile jar:jar shade:shade@shade-paimon)
echo "building Paimon's Spark connector $version from $tag ($commit) in $build; log: $build/build.log"
start=$(date +%s)
(cd "$build" && "${cmd[@]}") >"$build/build.log" 2>&1 || {
  grep -m3 -E '\[ERROR\] [A-Z]' "$build/build.log" >&2 || tail -5 "$build/build.log" >&2
  fail "mvn failed (log: $build/build.log)"
}
took=$(($(date +%s) - start))
built="$build/paimon-spark/paimon-spark-4.0/target/$jar_name"
[ -s "$built" ] || fail "mvn succeeded but made no $built"
unzip -l "$built" >"$build/jar-contents.txt"
grep -q 'org/apache/paimon/spark/SparkCatalog.class' "$build/jar-contents.txt" || fail "$built has no SparkCatalog"
grep -q 'org/apache/paimon/table/FileStoreTable.class' "$build/jar-contents.txt" || fail "$built has no paimon-bundle"
# one connector in the folder: a build of another tag replaces the previous one
rm -f "$out"/paimon-spark-*.jar "$out"/paimon-spark-*.jar.txt
cp "$built" "$out/$jar_name.tmp"
mv "$out/$jar_name.tmp" "$out/$jar_name"
{
  echo "Paimon's Spark connector $version built from tag $tag, commit $commit, in ${took}s:"
  echo "  (cd $build && ${cmd[*]})"
  echo "sha256 $(sha256sum "$out/$jar_name" | cut -d' ' -f1)"
} | tee "$out/$jar_name.txt"
