# stratalake: every target sets itself up on a fresh machine (.venv, package, shim jar).
PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
JAR    := python/stratalake/jars/stratalake-spark-shim.jar
JAVA_SOURCES := $(shell find jvm-shim/src -name '*.java' -o -name '*.scala' 2>/dev/null)
WAREHOUSE ?= ./warehouse
PYTEST_ARGS ?=
# `make test` runs test files in this many pytest processes (pytest-xdist, whole files per process,
# each with its own Spark session): a Spark test leaves a core idle while it waits on the JVM.
TEST_WORKERS ?= 2
# Other Spark releases the smoke test runs on (the project venv's pyspark is covered by `make test`).
SPARK_VERSIONS ?= 4.2.1

.PHONY: setup jar jar-sbt test-jar-sbt test-build wheel test test-faults test-metastores test-paimon-java test-spark-versions test-fast lint demo bench bench-quick bench-metadata bench-metadata-quick bench-cdc bench-append-dml bench-avro bench-peers bench-peers-quick clean

$(STAMP): pyproject.toml setup.py
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	# The python/ layout gets a plain .pth path entry (no import hook), so Spark's scan for
	# pyspark_* modules finds ours; setup.py skips the jar here (the $(JAR) rule builds it).
	# The development environment pins pyspark 4.3 (the jar is built against it); the package
	# itself accepts 4.2 too, which `make test-spark-versions` checks.
	$(VPY) -m pip install -q -e '.[test,dev]' 'pyspark==4.3.*'
	touch $(STAMP)

$(JAR): $(STAMP) $(JAVA_SOURCES) jvm-shim/build.sh
	bash jvm-shim/build.sh $(VPY)

setup: $(STAMP) $(JAR)

# A wheel carrying the shim jar (setup.py compiles it against this venv's pyspark if stale): dist/
wheel: $(STAMP)
	$(VPY) -m pip wheel . --no-deps --no-build-isolation -w dist

jar: $(JAR)

# pytest exits 5 when nothing was collected; that is a failure of the suite, say so clearly.
# The shim built by sbt (build.sbt) with the launcher and every dependency from Maven Central only
# (project/repositories), into jvm-shim/target/sbt/; caches in ~/.m2, ~/.sbt and ~/.cache/coursier.
# Measured: ~1.5 min for the first boot's downloads, then ~40 s.
SBT_VERSION := 1.13.0
SBT_LAUNCHER := jvm-shim/target/sbt-launch-$(SBT_VERSION).jar
SBT_JAR := jvm-shim/target/sbt/stratalake-spark-shim.jar
$(SBT_LAUNCHER):
	mvn -q -B dependency:copy -Dartifact=org.scala-sbt:sbt-launch:$(SBT_VERSION) -DoutputDirectory=jvm-shim/target
jar-sbt: $(STAMP) $(SBT_LAUNCHER)
	STRATALAKE_BUILD_PYTHON=$(abspath $(VPY)) java -Xmx1g -Dsbt.repository.config=project/repositories \
	  -Dsbt.override.build.repos=true -Dsbt.log.noformat=true -Dsbt.supershell=false \
	  -Dsbt.server.autostart=false -jar $(SBT_LAUNCHER) package </dev/null
# The sbt-built jar passes the Spark smoke test (tests/spark/smoke_jar.sh puts it in a copy of python/).
test-jar-sbt: jar-sbt
	bash tests/spark/smoke_jar.sh $(VPY) $(SBT_JAR)

# `python -m build` and `pip install` of the sdist from a fresh clone, in pip's isolated build
# environment (no pre-installed pyspark, isolation on), then the smoke test with the installed package.
test-build:
	bash tests/build/isolated_build.sh $(PYTHON)

test: setup
	PYSPARK_PYTHON=$(abspath $(VPY)) $(VPY) -m pytest -m "not paimon_java and not timing and not metastore_server" -n $(TEST_WORKERS) --dist loadfile \
	  --durations=25 $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "no tests were collected"; exit 1; fi; exit $$rc

# Every commit fault point: each write and maintenance kind with a fault at every file-system
# operation of its statement (before and after it acts), and process deaths at a spread of them
# (tests/faults; `make test` runs a sample of the same points). About 8 minutes; .ci/run runs it.
test-faults: setup
	STRATALAKE_FAULT_SWEEP=all PYSPARK_PYTHON=$(abspath $(VPY)) $(VPY) -m pytest tests/faults -m "not spark" $(PYTEST_ARGS)

# Apache Paimon's Java readers (releases 0.9.0 to 1.3.1, jars fetched from Maven Central by mvn on
# first use) read every table kind stratalake writes with default options (needs java, javac, mvn).
test-paimon-java: setup
	$(VPY) -m pytest tests/interop_java -m paimon_java $(PYTEST_ARGS)

# Catalogs against real metastore servers (marker metastore_server, tests/metastore), each started
# once per session on 127.0.0.1 by the tests' fixtures: a PostgreSQL (Debian's packages, installed
# when missing) for the JDBC catalog, and a standalone Hive Metastore 3.1.3 with embedded Derby,
# its jars fetched once by Maven into .hive-metastore/ (java and mvn installed when missing).
# About 4 minutes.
.PHONY: metastore-tools
metastore-tools:
	command -v javac >/dev/null && command -v mvn >/dev/null || \
	  (apt-get update -q && apt-get install -y -q openjdk-17-jdk-headless maven)
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; }
test-metastores: metastore-tools setup
	$(VPY) tests/metastore/hive_server.py
	PYSPARK_PYTHON=$(abspath $(VPY)) $(VPY) -m pytest tests/metastore -m metastore_server $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "no tests were collected"; exit 1; fi; exit $$rc

# The shim jar built against the project's pyspark, on every other supported Spark (~1.5 min each;
# venvs cached in .venv-spark-<minor>/). .ci/run runs it after `make test`.
test-spark-versions: setup
	for v in $(SPARK_VERSIONS); do bash tests/spark/spark_version.sh $(VPY) $$v || exit 1; done

test-fast: $(STAMP)
	$(VPY) -m pytest -m "not spark and not interop and not metastore_server" $(PYTEST_ARGS)

# The package layers and no circles between packages: tools/check_imports.py (stdlib only).
lint: $(STAMP)
	$(VENV)/bin/ruff check python tests bench tools
	$(VENV)/bin/mypy
	$(VPY) tools/check_imports.py --strict-local
	$(VPY) tools/check_java_packages.py

demo: setup
	PYSPARK_PYTHON=$(abspath $(VPY)) $(VENV)/bin/stratalake sql --warehouse $(WAREHOUSE) -f sql/quickstart.sql

bench: setup
	$(VPY) -m pip install -q -r bench/requirements.txt
	$(VPY) -m pytest -m timing -q tests/spec
	$(VPY) -m bench.run

bench-quick: setup
	$(VPY) -m pip install -q -r bench/requirements.txt
	$(VPY) -m bench.run --quick

# Issue 33: commit, planning and expiration cost at 1k, 10k and 100k live files (metadata only).
# BENCH_METADATA_ARGS='--paimon' also measures Paimon's Java core on the same tables (jars from Maven).
BENCH_METADATA_ARGS ?=
bench-metadata: setup
	$(VPY) -m bench.metadata_scale $(BENCH_METADATA_ARGS)

bench-metadata-quick: setup
	$(VPY) -m bench.metadata_scale --quick

# Issue 33: CDC micro-batches of 10,000 upserts into a cross-partition table (bench/cdc_cross_partition.py;
# BENCH_CDC_ARGS='--keys 2000000 --batches 200', default the full 20M keys and 200 batches).
BENCH_CDC_ARGS ?=
bench-cdc: setup
	$(VPY) -m bench.cdc_cross_partition $(BENCH_CDC_ARGS)

# Issue 33: DELETE and UPDATE of an append table through Spark SQL, and where their work runs
# (bench/append_dml.py; BENCH_APPEND_DML_ARGS='--rows 8000000 --deletion-vectors').
BENCH_APPEND_DML_ARGS ?=
bench-append-dml: setup
	$(VPY) -m bench.append_dml $(BENCH_APPEND_DML_ARGS)

# Issue 33: Avro data files, stratalake's column-by-column codec against Paimon Java's Avro format
# (its bundle from Maven Central) and fastavro's records (bench/avro_files.py; BENCH_AVRO_ARGS='--rows 1000000').
BENCH_AVRO_ARGS ?=
bench-avro: setup
	$(VPY) -m bench.avro_files $(BENCH_AVRO_ARGS)

# Issue 31: stratalake vs Apache Paimon, Delta Lake and Iceberg (and Spark's Parquet) on Spark, one
# process per system. The peers' venv (pyspark $(PEERS_SPARK)) and their jars from Maven Central are
# cached in $(PEERS_VENV) and $(PEERS_JARS). Maven Central does not serve Paimon's Spark connector
# here: with PAIMON_SOURCE (a Paimon git repository, bare or not, or a source tree of the release)
# it is built from Paimon's released source tag $(PAIMON_TAG) by bench/spark_peers/build_paimon.sh
# (the Spark modules only, the core modules from Maven Central; ~1.5 min, cached in $(PEERS_JARS)
# and used by later runs); without a connector there Paimon is not measured and the run says so. Sizes: BENCH_PEERS_ARGS='--rows 2000000'
# (default 20M rows); --report rewrites the latest-run section of BENCHMARKS.md. The quick run (200k
# rows) took 13 minutes on the busy 2-core machine without Paimon (Delta alone 6; each process
# warms up first): not in .ci/run.
PEERS_SPARK ?= 4.0
PEERS_VENV  := .venv-peers-$(PEERS_SPARK)
PEERS_JARS  := .bench-peers/jars
PAIMON_SOURCE ?=
PAIMON_TAG  ?= release-1.3.1
BENCH_PEERS_ARGS ?= --report
.PHONY: bench-peers-prepare
bench-peers-prepare:
	PYTHON=$(PYTHON) SAME_AS=$(VPY) bash bench/spark_peers/prepare.sh $(PEERS_VENV) $(PEERS_JARS) $(PEERS_SPARK)
	@if [ -n "$(PAIMON_SOURCE)" ]; then \
	  bash bench/spark_peers/build_paimon.sh "$(PAIMON_SOURCE)" $(PAIMON_TAG) $(PEERS_JARS); \
	elif ls $(PEERS_JARS)/paimon-spark-*.jar >/dev/null 2>&1; then \
	  echo "PAIMON_SOURCE is not set: Paimon is measured with the connector built before:"; \
	  cat $(PEERS_JARS)/paimon-spark-*.jar.txt 2>/dev/null || ls $(PEERS_JARS)/paimon-spark-*.jar; \
	else \
	  echo "Paimon is not measured: Maven Central does not serve its Spark connector here and PAIMON_SOURCE" \
	    "is not set (make $(MAKECMDGOALS) PAIMON_SOURCE=<Paimon git repository> builds it from $(PAIMON_TAG))"; \
	fi

bench-peers: setup bench-peers-prepare
	$(VPY) -m bench.spark_peers.run --peer-python $(abspath $(PEERS_VENV))/bin/python --jars $(PEERS_JARS) $(BENCH_PEERS_ARGS)

bench-peers-quick: setup bench-peers-prepare
	$(VPY) -m bench.spark_peers.run --peer-python $(abspath $(PEERS_VENV))/bin/python --jars $(PEERS_JARS) --quick

clean:
	rm -rf $(VENV) .venv-spark-* $(JAR) jvm-shim/target target project/target build dist *.egg-info
