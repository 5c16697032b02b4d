"""Issue 31: stratalake against the table formats a Spark user would pick instead, side by side.

``make bench-peers`` (``--quick``: ``make bench-peers-quick``) prepares a venv with the pyspark the
peers support and their jars from Maven Central (``prepare.sh``), then ``run.py`` runs
``workload.py`` once per system, each in its own process, and ``report.py`` turns the JSON into the
table at the top of BENCHMARKS.md. ``workload.py`` imports only pyspark and the standard library
(and stratalake for the stratalake system), so it runs in the peers' venv too.
"""
