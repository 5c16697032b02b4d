"""``stratalake`` command line.

``stratalake sql [--warehouse DIR] [-e SQL | -f FILE]`` runs Spark's own ``spark-sql`` shell
(from the installed pyspark) with the stratalake catalog as the default catalog, the parser
extension, and the Python environment its workers need. Without ``-e`` or ``-f`` it is
interactive. Extra arguments after ``--`` go to spark-sql unchanged.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from stratalake.io.private import private_dir
from stratalake.spark.session import python_path, spark_conf

# Spark's shell logs every WARN to the terminal; a demo wants results, not noise.
_QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
"""


def spark_sql_command(
    warehouse: str,
    execute: str | None = None,
    file: str | None = None,
    catalog: str = "lake",
    verbose: bool = False,
    extra: Sequence[str] = (),
) -> tuple[list[str], dict[str, str]]:
    """The spark-sql command line and environment for ``stratalake sql``."""
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    cmd = [str(spark_home / "bin" / "spark-sql"), "--master", "local[2]"]
    conf = spark_conf(warehouse, catalog)
    conf["spark.sql.defaultCatalog"] = catalog
    # The shell's own (Hive) session catalog is not used: keep its files out of the cwd, in a
    # directory of this user's (a shared one could be created first by another user, with a link
    # where the log4j config is written, or a config that the shell then loads).
    scratch = private_dir("stratalake-spark-sql")
    conf["spark.sql.warehouse.dir"] = str(scratch / "spark-warehouse")
    conf["spark.sql.catalogImplementation"] = "in-memory"
    for key, value in conf.items():
        cmd += ["--conf", f"{key}={value}"]
    if not verbose:
        log4j = scratch / "log4j2.properties"
        tmp = scratch / f".log4j2.properties.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(_QUIET_LOG4J)
        os.replace(tmp, log4j)  # replaces a link there too, never writes through it
        cmd += ["--driver-java-options", f"-Dlog4j2.configurationFile=file:{log4j}", "--silent"]
    if execute is not None:
        cmd += ["-e", execute]
    if file is not None:
        cmd += ["-f", file]
    cmd += list(extra)

    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.pop("SPARK_HOME", None)  # always the Spark of the installed pyspark
    path = python_path()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (path, env.get("PYTHONPATH", "")) if p)
    return cmd, env


def _sql(args: argparse.Namespace, extra: Sequence[str]) -> int:
    cmd, env = spark_sql_command(args.warehouse, args.execute, args.file, args.catalog, args.verbose, extra)
    os.execve(cmd[0], cmd, env)  # hand the terminal to spark-sql (interactive shell included)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    parser = argparse.ArgumentParser(prog="stratalake", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    sql = commands.add_parser("sql", help="run Spark SQL (spark-sql shell) on a stratalake warehouse")
    sql.add_argument(
        "--warehouse",
        default=os.environ.get("STRATALAKE_WAREHOUSE", "./warehouse"),
        help="warehouse directory or URI (default: ./warehouse or $STRATALAKE_WAREHOUSE)",
    )
    sql.add_argument("--catalog", default="lake", help="catalog name (default: lake)")
    group = sql.add_mutually_exclusive_group()
    group.add_argument("-e", dest="execute", metavar="SQL", help="run these statements and exit")
    group.add_argument("-f", dest="file", metavar="FILE", help="run the statements of FILE and exit")
    sql.add_argument("-v", "--verbose", action="store_true", help="show Spark's log output")
    args = parser.parse_args(argv)
    if args.command == "sql":
        return _sql(args, extra)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
