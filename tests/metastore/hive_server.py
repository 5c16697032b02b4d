"""A real standalone Hive Metastore (3.1.3) for tests, on 127.0.0.1 with embedded Derby.

Its jars come from Maven Central, fetched once by Maven into ``.hive-metastore/`` at the repo
root (git-ignored): ``org.apache.hive:hive-standalone-metastore:3.1.3`` with the Hadoop jars it
runs on (``mvn dependency:copy-dependencies`` of a generated pom), and the same artifact's ``bin``
tarball, for the Derby schema scripts the schema tool runs (``-initSchema``: the metastore's own
tables and the transaction tables its locks live in). Measured here: about 50 s to fetch once,
15 s to initialise a schema, 8 to 11 s until the server listens.

``python tests/metastore/hive_server.py`` fetches everything (``make test-metastores`` runs it).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".hive-metastore"
VERSION = "3.1.3"
HADOOP = "3.1.0"  # the Hadoop release Hive 3.1 is built against
LIB = CACHE / "lib"
SCRIPTS = CACHE / f"apache-hive-metastore-{VERSION}-bin"

_POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>stratalake.test</groupId><artifactId>hive-metastore</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.hive</groupId><artifactId>hive-standalone-metastore</artifactId>
      <version>{VERSION}</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-common</artifactId>
      <version>{HADOOP}</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-mapreduce-client-core</artifactId>
      <version>{HADOOP}</version></dependency>
  </dependencies>
</project>
"""

# The standalone 3.1 server's defaults name classes that live in hive-exec (the full Hive), so
# those two settings point at the metastore's own; locks need the transaction tables the schema
# tool creates; 'metastore.txn.timeout' is how long a lock outlives its last heartbeat.
_SITE = """<configuration>
{properties}
</configuration>
"""


class MetastoreUnavailable(RuntimeError):
    """No java/mvn, or Maven could not fetch the metastore, or it would not start."""


def _run(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None, timeout: int = 900) -> None:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise MetastoreUnavailable(f"{' '.join(cmd[:4])} failed: {(proc.stdout + proc.stderr)[-3000:]}")


def fetch() -> None:
    """The metastore's jars and schema scripts in :data:`CACHE` (Maven fetches them once)."""
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            raise MetastoreUnavailable(f"{tool} is not installed")
    CACHE.mkdir(exist_ok=True)
    if not (LIB / f"hive-standalone-metastore-{VERSION}.jar").exists():
        (CACHE / "pom.xml").write_text(_POM)
        _run(["mvn", "-q", "-B", "dependency:copy-dependencies", f"-DoutputDirectory={LIB}"], cwd=CACHE)
    if not (SCRIPTS / "scripts" / "metastore" / "upgrade" / "derby").is_dir():
        coords = f"org.apache.hive:hive-standalone-metastore:{VERSION}:tar.gz:bin"
        _run(["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={coords}", f"-DoutputDirectory={CACHE}"], cwd=CACHE)
        with tarfile.open(CACHE / f"hive-standalone-metastore-{VERSION}-bin.tar.gz") as tar:
            members = [m for m in tar.getmembers() if "/scripts/metastore/upgrade/derby/" in m.name]
            tar.extractall(CACHE, members=members, filter="data")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise MetastoreUnavailable(f"the metastore exited ({proc.returncode}): {log.read_text()[-3000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.25)
    raise MetastoreUnavailable(f"the metastore did not listen within {timeout_s} s: {log.read_text()[-3000:]}")


@dataclass
class HiveMetastore:
    """A running metastore: ``uri`` to give catalogs, ``warehouse`` its default database's root."""

    uri: str
    port: int
    home: Path
    warehouse: Path
    process: subprocess.Popen[bytes]
    started_in_s: float

    def stop(self) -> None:
        """Stop the server and remove its directory (Derby database, log, warehouse)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.home, ignore_errors=True)


def start(home: Path | None = None, txn_timeout_s: int = 300, extra: dict[str, str] | None = None) -> HiveMetastore:
    """Initialise a Derby metastore database in ``home`` (a new temp dir by default) and start the
    metastore on 127.0.0.1 at a free port; it lives until :meth:`HiveMetastore.stop`."""
    began = time.monotonic()
    fetch()
    home = Path(home or tempfile.mkdtemp(prefix="hms-"))
    conf = home / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    warehouse = home / "warehouse"
    warehouse.mkdir(exist_ok=True)
    port = free_port()
    properties = {
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true",
        "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        "metastore.warehouse.dir": warehouse.as_uri(),
        "metastore.thrift.bind.host": "127.0.0.1",
        "metastore.thrift.port": str(port),
        "metastore.schema.verification": "true",
        "metastore.expression.proxy": "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
        "metastore.task.threads.always": "org.apache.hadoop.hive.metastore.events.EventCleanerTask,"
        "org.apache.hadoop.hive.metastore.txn.AcidHouseKeeperService",
        # Measured: the 3.1.3 server honours the lock timeout and the reaper's interval under
        # their 'hive.' names (with only 'metastore.txn.timeout' a dead holder's lock lasted 3 min).
        "metastore.txn.timeout": f"{txn_timeout_s}s",
        "hive.txn.timeout": f"{txn_timeout_s}s",
        "metastore.timedout.txn.reaper.interval": "2s",
        "hive.timedout.txn.reaper.interval": "2s",
        "metastore.acid.housekeeper.interval": "2s",
        "metastore.event.db.notification.api.auth": "false",
        **(extra or {}),
    }
    body = "\n".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in properties.items())
    (conf / "metastore-site.xml").write_text(_SITE.format(properties=body))
    class_path = os.pathsep.join([str(conf), str(LIB / "*")])
    env = {**os.environ, "METASTORE_HOME": str(SCRIPTS)}
    _run(
        ["java", "-cp", class_path, "org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool",
         "-dbType", "derby", "-initSchema"],
        cwd=home,
        env=env,
    )
    log = home / "metastore.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            ["java", "-Xmx512m", "-cp", class_path, "org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", str(port)],
            cwd=home,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        _wait_listening(port, proc, log, timeout_s=120)
    except BaseException:
        proc.kill()
        raise
    return HiveMetastore(f"thrift://127.0.0.1:{port}", port, home, warehouse, proc, time.monotonic() - began)


if __name__ == "__main__":
    fetch()
    print(f"Hive Metastore {VERSION} jars in {LIB}")
