"""Configure Spark for stratalake: one place that knows every setting it needs.

>>> from stratalake.spark import session
>>> spark = session("/tmp/warehouse")                       # doctest: +SKIP
>>> spark.sql("CREATE TABLE lake.default.t (id INT, PRIMARY KEY (id) NOT ENFORCED)")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import ipaddress
import os
import re
import secrets
import sys
import tempfile
import zipfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from stratalake.exceptions import StrataLakeError
from stratalake.notebook import in_notebook

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXTENSIONS = "org.stratalake.spark.StrataLakeSparkSessionExtensions"
CATALOG_CLASS = "org.stratalake.spark.StrataLakeCatalog"
#: Spark's session catalog with stratalake tables beside Spark's own (``catalog="spark_catalog"``).
SESSION_CATALOG_CLASS = "org.stratalake.spark.StrataLakeSessionCatalog"
SESSION_CATALOG = "spark_catalog"
JAR_NAME = "stratalake-spark-shim.jar"

# Spark minor versions stratalake runs on: the shim compiled against either runs on both (the
# smoke test tests/spark/smoke_app.py passes on each, `make test-spark-versions`).
SUPPORTED_SPARK = ((4, 2), (4, 3))
# What an older Spark lacks, found by running the smoke test on it.
_MISSING: dict[tuple[int, ...], str] = {
    (4, 1): (
        "pyspark.sql.worker.utils (the planner-worker frame of the catalog bridge), "
        "pyspark.sql.streaming.datasource (streaming reads), the timezone argument of "
        "pyspark.sql.pandas.types.to_arrow_schema (system tables, CALL procedures) and the "
        "7-argument AppendData constructor (the shim's row-level rewrites)"
    ),
}


class UnsupportedSparkVersionError(StrataLakeError):
    """The installed pyspark is not a Spark version stratalake runs on."""


def check_spark_version(version: str | None = None) -> None:
    """Raises :class:`UnsupportedSparkVersionError` unless ``version`` (default: the installed
    pyspark's) is a supported Spark minor version."""
    if version is None:
        import pyspark

        version = str(pyspark.__version__)
    try:
        minor = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        minor = ()
    if minor in SUPPORTED_SPARK:
        return
    supported = " and ".join(f"{a}.{b}" for a, b in SUPPORTED_SPARK)
    missing = _MISSING.get(minor)
    why = f"it lacks {missing}" if missing else "it was not built or tested against it"
    raise UnsupportedSparkVersionError(
        f"stratalake does not support Spark {version} (pyspark {version}): {why}. Supported Spark "
        f"versions: {supported}; install one, e.g. pip install 'pyspark>=4.2,<4.4'"
    )


def shim_jar() -> str:
    """Path of the JVM shim jar shipped inside the package (build it with jvm-shim/build.sh)."""
    path = Path(str(resources.files("stratalake") / "jars" / JAR_NAME))
    if not path.exists():
        raise FileNotFoundError(
            f"stratalake's Spark shim jar is missing at {path}; build it with `bash jvm-shim/build.sh`"
        )
    return str(path)


def python_path() -> str:
    """The directory holding the ``stratalake`` and ``pyspark_stratalake`` packages."""
    return str(Path(str(resources.files("stratalake"))).parent)


def spark_conf(
    warehouse: str, catalog: str = "lake", local: bool = True, master: str | None = None
) -> dict[str, str]:
    """Every Spark setting stratalake needs, as a dict (also used by ``stratalake sql``); refuses
    an unsupported Spark (:func:`check_spark_version`). ``master``, where known, lets a local
    master fork its Python workers from :data:`WORKER_DAEMON`.

    ``catalog="spark_catalog"`` makes stratalake Spark's session catalog: stratalake tables
    (``USING stratalake``) beside Spark's own (Hive or in-memory) in one catalog."""
    check_spark_version()
    if "://" not in warehouse:
        warehouse = str(Path(warehouse).expanduser().resolve())
    conf = {
        "spark.jars": shim_jar(),
        "spark.sql.extensions": EXTENSIONS,
        f"spark.sql.catalog.{catalog}": SESSION_CATALOG_CLASS if catalog == SESSION_CATALOG else CATALOG_CLASS,
        f"spark.sql.catalog.{catalog}.warehouse": warehouse,
        # Key and partition filters prune files before the merge.
        "spark.sql.python.filterPushdown.enabled": "true",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
    }
    if local:
        conf.update(
            {
                "spark.sql.shuffle.partitions": "4",
                "spark.default.parallelism": "4",
                "spark.ui.enabled": "false",
                "spark.sql.session.timeZone": "UTC",
            }
        )
    if local and master is not None and in_process_master(master):
        # Python workers forked with stratalake's task modules already imported: the first
        # statement after Spark stopped idle workers does not wait for imports. Only where the
        # workers surely run this interpreter, whose stratalake the daemon imports: a daemon that
        # cannot start fails every Python task of the session.
        conf["spark.python.daemon.module"] = WORKER_DAEMON
    return conf


#: The daemon module of local sessions' Python task workers (see :mod:`stratalake.spark.daemon`).
WORKER_DAEMON = "stratalake.spark.daemon"


def in_process_master(master: str) -> bool:
    """Whether ``master`` runs the executors in the driver's JVM (``local``, ``local[N]``,
    ``local[*]``, ``local[N,F]``), whose Python workers run ``spark.pyspark.python`` with the
    driver's environment; not ``local-cluster``, whose executors have their own."""
    return re.fullmatch(r"local(\[[^\]]*\])?", master.strip()) is not None


def _export_python_env() -> None:
    # Spark's Python workers (planner, bridge, tasks) start with PYSPARK_PYTHON, read from the
    # environment of the JVM, which inherits ours: set it before the JVM starts.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    path = python_path()
    current = os.environ.get("PYTHONPATH", "")
    if path not in current.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (path, current) if p)


def _tree_files(tops: list[Path], skip_suffixes: tuple[str, ...]) -> list[tuple[str, Path]]:
    """(name in the zip, file) of every file under ``tops`` that executors need, sorted."""
    out = []
    for top in tops:
        for path in top.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in skip_suffixes:
                out.append((str(path.relative_to(top.parent)), path))
    return sorted(out)


def _content_digest(members: list[tuple[str, bytes]]) -> str:
    digest = hashlib.sha256()
    for name, data in sorted(members):
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def _zip_digest(path: Path) -> str | None:
    """The content digest of the zip at ``path``; None if it is missing or unreadable."""
    try:
        with zipfile.ZipFile(path) as z:
            return _content_digest([(i.filename, z.read(i)) for i in z.infolist() if not i.is_dir()])
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError):
        return None


def executor_py_files(directory: str | None = None) -> list[str]:
    """Zips of what Spark executors need beyond pyspark's own dependencies (pyarrow, numpy), for
    ``spark.submit.pyFiles``: ``stratalake`` with ``pyspark_stratalake``, and ``fastavro``
    without its compiled modules (it falls back to its pure-Python ones, which executors use only
    for Avro data files). Built from the installed packages into ``directory`` (default: a
    per-user cache, ``<tmp>/stratalake-pyfiles-<uid>``), named by a hash of their contents.

    Every executor runs these zips, so ``directory`` must be private (this user's, mode 0700:
    else :class:`~stratalake.exceptions.UnsafeDirectoryError`), and a zip is reused only if its
    contents hash to that of the installed packages; otherwise it is built again.
    """
    import fastavro

    # Local: stratalake.io loads pyarrow's filesystems and S3's client (~3 MiB), which a driver
    # that ships no packages (a local master) never needs.
    from stratalake.io.private import check_private, private_dir

    trees = {
        "stratalake": (
            [Path(str(resources.files("stratalake"))), _package_dir("pyspark_stratalake")],
            (".jar", ".pyc"),
        ),
        "fastavro": ([Path(fastavro.__file__).parent], (".so", ".pyd", ".pyc", ".c", ".pyx")),
    }
    if directory is None:
        root = private_dir("stratalake-pyfiles")
    else:
        root = Path(directory)
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        check_private(root)
    out = []
    for name, (tops, skip) in trees.items():
        files = _tree_files(tops, skip)
        contents = [(arcname, path.read_bytes()) for arcname, path in files]
        digest = _content_digest(contents)
        target = root / f"{name}-{digest[:16]}.zip"
        if _zip_digest(target) != digest:
            fd, tmp = tempfile.mkstemp(dir=root, prefix=f".{name}-", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as z:
                    for arcname, data in contents:  # exactly the bytes hashed above
                        z.writestr(arcname, data)
                os.replace(tmp, target)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.remove(tmp)
                raise
        out.append(str(target))
    return out


def configure(
    builder: Any,
    warehouse: str,
    catalog: str = "lake",
    local: bool = True,
    ship_packages: bool | None = None,
) -> Any:
    """Adds stratalake's settings to a ``SparkSession.Builder`` and returns it.

    ``local=True`` adds small-machine defaults (few shuffle partitions, no UI, UTC session time
    zone); pass ``local=False`` on a cluster. ``ship_packages`` (default: ``not local``) sends
    stratalake to the executors with ``spark.submit.pyFiles`` (see :func:`executor_py_files`), so
    their Python needs only pyspark's own dependencies (pyarrow, numpy).
    """
    _export_python_env()
    # The builder's master, if it was given one (``SparkSession.Builder`` keeps its settings in
    # ``_options``; unknown -> Spark's own worker daemon).
    master = getattr(builder, "_options", {}).get("spark.master")
    conf = spark_conf(warehouse, catalog, local, master if isinstance(master, str) else None)
    if not local:
        # On a cluster the executors' Python is theirs (spark.pyspark.python or PYSPARK_PYTHON
        # there); the driver's interpreter path means nothing on other machines.
        conf.pop("spark.pyspark.python")
        conf.pop("spark.pyspark.driver.python")
    if ship_packages if ship_packages is not None else not local:
        # spark-submit turns --py-files into both; a builder must set both itself: spark.files
        # has the JVM fetch the zips to every executor, spark.submit.pyFiles puts them on the
        # Python path of the tasks.
        zips = ",".join(executor_py_files())
        conf["spark.submit.pyFiles"] = zips
        conf["spark.files"] = zips
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder


def session(
    warehouse: str,
    catalog: str = "lake",
    master: str = "local[2]",
    remote: str | None = None,
    ship_packages: bool | None = None,
    **conf: str,
) -> SparkSession:
    """A SparkSession with the stratalake catalog ``catalog`` over ``warehouse``.

    Extra keyword arguments are Spark settings with dots written as underscores, e.g.
    ``session("/wh", spark_sql_shuffle_partitions="8")``.

    ``remote`` gives a Spark Connect session instead: ``remote="local[2]"`` starts a local Connect
    server in this process with every stratalake setting (static ones at server start);
    ``remote="sc://host:15002"`` connects to a running server, which must have been started with
    the shim jar and the session extensions (see :func:`connect_server_conf`); the catalog itself
    is then set up by this client.
    """
    from pyspark.sql import SparkSession

    extra = {key if "." in key else key.replace("_", "."): value for key, value in conf.items()}
    if remote is not None and not remote.startswith("local"):
        return _remote_session(remote, warehouse, catalog, extra)
    if in_notebook():
        # A Jupyter kernel prints the JVM's console progress bar as text, line after line (also
        # that of an in-process Connect server); %%lake shows one updating bar instead.
        extra.setdefault("spark.ui.showConsoleProgress", "false")
    if remote is not None:
        master = remote
    if "spark.pyspark.python" in extra:
        # Another interpreter for the workers may lack stratalake: Spark's own daemon, unless
        # the caller names one.
        extra.setdefault("spark.python.daemon.module", "pyspark.daemon")
    builder = SparkSession.builder.master(master).appName("stratalake")
    builder = configure(
        builder, warehouse, catalog, local=master.startswith("local"), ship_packages=ship_packages
    )
    if remote is not None:
        # A Spark Connect server in this process: a classic session started with every setting
        # (static ones included) and Spark's Connect plugin; the client session then carries no
        # settings of its own, so Spark warns about none. Port 0 has the server pick its port
        # when it binds, so no other process can take the port between choosing and binding it.
        address = _loopback_address(extra.get("spark.connect.grpc.binding.address", "127.0.0.1"))
        token = os.environ.setdefault("SPARK_CONNECT_AUTHENTICATE_TOKEN", secrets.token_hex(16))
        builder = builder.config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
        extra["spark.connect.grpc.binding.address"] = address
        builder = builder.config("spark.connect.grpc.binding.port", "0")
        # The server reads the token from its conf, which holds also when the JVM does not
        # inherit this process's environment (Spark redacts the key in its UI and logs).
        builder = builder.config("spark.connect.authenticate.token", token)
    for key, value in extra.items():
        builder = builder.config(key, value)
    spark: SparkSession = builder.getOrCreate()
    if remote is None:
        return spark
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    # The port the server bound (0 asked it to choose one).
    service = getattr(cast(Any, spark)._jvm, "org.apache.spark.sql.connect.service.SparkConnectService$")
    port = int(getattr(service, "MODULE$").localPort())
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"  # SparkSession.getActiveSession(): the client
    channel = _loopback_channel(address, port, token)
    client: Any = ConnectSession.builder.channelBuilder(channel).getOrCreate()
    return cast("SparkSession", client)


def _loopback_address(address: str) -> str:
    """``address`` if it is a loopback IP address (the only kind a local server may bind)."""
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        ip = None
    if ip is None or not ip.is_loopback:
        raise StrataLakeError(
            f"spark.connect.grpc.binding.address={address!r}: a local Spark Connect server "
            "(remote='local[...]') listens on a loopback IP address only, such as 127.0.0.1 or ::1; "
            "to serve other machines, start a server with start-connect-server.sh and connect "
            "with remote='sc://host:port'"
        )
    return str(ip)


def _loopback_channel(address: str, port: int, token: str) -> Any:
    # Defined here: pyspark.sql.connect needs grpc, which only Connect users install.
    from pyspark.sql.connect.client import DefaultChannelBuilder

    class LoopbackChannel(DefaultChannelBuilder):
        """A Connect channel to the exact IP address and port the local server bound.

        Not ``sc://localhost``: gRPC resolves ``localhost`` to ``[::1]`` first, where another
        local user may listen on the same port and receive the token. Local channel credentials
        let gRPC send the token without TLS only to a loopback peer.
        """

        def __init__(self, address: str, port: int, token: str) -> None:
            host = f"[{address}]" if ":" in address else address
            super().__init__(f"sc://{host}:{port}")
            self.set(DefaultChannelBuilder.PARAM_TOKEN, token)

        def toChannel(self) -> Any:
            import grpc  # type: ignore[import-untyped]

            creds = grpc.composite_channel_credentials(
                grpc.local_channel_credentials(grpc.LocalConnectionType.LOCAL_TCP),
                grpc.access_token_call_credentials(self.token),
            )
            return self._secure_channel(self.endpoint, creds)

    return LoopbackChannel(address, port, token)


def _redact_url(url: str) -> str:
    """``url`` without its ``;key=value`` parameters, which may carry ``token=``."""
    return url.split(";", 1)[0].rstrip("/")


def connect_server_conf() -> dict[str, str]:
    """The static settings a Spark Connect server needs to serve stratalake catalogs (give them
    to ``start-connect-server.sh --conf``); clients add the catalog with ``session(remote=...)``."""
    return {"spark.jars": shim_jar(), "spark.sql.extensions": EXTENSIONS}


def _remote_session(remote: str, warehouse: str, catalog: str, extra: dict[str, str]) -> SparkSession:
    from pyspark.sql import SparkSession

    spark: SparkSession = SparkSession.builder.remote(remote).getOrCreate()
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    if EXTENSIONS not in extensions:
        raise StrataLakeError(
            f"the Spark Connect server at {_redact_url(remote)} was not started with stratalake's session "
            f"extensions; start it with --conf spark.sql.extensions={EXTENSIONS} and the shim jar "
            "(--jars <stratalake/jars/stratalake-spark-shim.jar>, see "
            "stratalake.spark.session.connect_server_conf()), and stratalake installed for its Python"
        )
    if "://" not in warehouse and not os.path.isabs(warehouse):
        raise StrataLakeError(
            f"a remote server resolves the warehouse itself: give an absolute path or URI, not {warehouse!r}"
        )
    spark.conf.set(
        f"spark.sql.catalog.{catalog}", SESSION_CATALOG_CLASS if catalog == SESSION_CATALOG else CATALOG_CLASS
    )
    spark.conf.set(f"spark.sql.catalog.{catalog}.warehouse", warehouse)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    for key, value in extra.items():
        spark.conf.set(key, value)
    return spark


def _package_dir(name: str) -> Path:
    """The directory of installed package ``name``, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise StrataLakeError(f"package {name} is not installed")
    return Path(spec.origin).parent
