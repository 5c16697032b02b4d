"""``stratalake`` command line.

``stratalake serve --warehouse DIR [--catalog-option K=V ...] [--host H] [--port N] [--token T]``
serves the warehouse's catalog by Paimon's REST catalog protocol (:mod:`stratalake.server.rest`).

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
from stratalake.server.rest import DEFAULT_PREFIX, RestCatalogServer, serve
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
    master = "local[2]"
    cmd = [str(spark_home / "bin" / "spark-sql"), "--master", master]
    conf = spark_conf(warehouse, catalog, master=master)
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


def _catalog_options(pairs: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"stratalake serve: --catalog-option {pair!r} is not KEY=VALUE")
        out[key.strip()] = value
    return out


def _serve(args: argparse.Namespace) -> int:
    token = args.token if args.token is not None else os.environ.get("STRATALAKE_REST_TOKEN")

    def ready(server: RestCatalogServer) -> None:
        auth = "bearer token required" if token else "no authentication"
        print(f"stratalake REST catalog serving {args.warehouse} at {server.url} ({auth})", flush=True)

    serve(
        args.warehouse, _catalog_options(args.catalog_option), args.host, args.port, token, args.prefix, ready
    )
    return 0


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
    srv = commands.add_parser("serve", help="serve a warehouse's catalog by Paimon's REST catalog protocol")
    srv.add_argument("--warehouse", required=True, help="warehouse directory or URI to serve")
    srv.add_argument(
        "--catalog-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the served catalog (e.g. metastore=jdbc); repeatable",
    )
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    srv.add_argument(
        "--port", type=int, default=8080, help="port to listen on (default: 8080; 0: any free port)"
    )
    srv.add_argument(
        "--token",
        default=None,
        help="bearer token clients must send (token.provider=bear); default $STRATALAKE_REST_TOKEN, else none",
    )
    srv.add_argument("--prefix", default=DEFAULT_PREFIX, help=f"URL path prefix (default: {DEFAULT_PREFIX})")
    args = parser.parse_args(argv)
    if args.command == "sql":
        return _sql(args, extra)
    if args.command == "serve":
        return _serve(args)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
