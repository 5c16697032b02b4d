"""Apache Paimon Java's ``RESTCatalog`` against stratalake's REST catalog server.

Paimon Java (``PaimonRest.java`` beside this file, compiled against a release's bundle) lists the
databases and tables, reads a table stratalake wrote, and creates and writes a table (committing
through the server's ``commit`` endpoint, as its ``CatalogSnapshotCommit`` does) that stratalake
then reads. Run by ``make test-paimon-java``; the jars are fetched by Maven on first use.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.server import RestCatalogServer
from tests.interop_java.paimon_java import CACHE, HERE, JavaUnavailable, class_path

pytestmark = pytest.mark.paimon_java

TOKEN = "java-token"
#: Releases whose RESTCatalog speaks the protocol the server serves (pypaimon 2.1's generation).
REST_RELEASES = ("1.3.1",)


def _rest_class_path(release: str) -> str:
    cp = class_path(release)
    out = CACHE / f"rest-{release}"
    source = HERE / "PaimonRest.java"
    compiled = out / "PaimonRest.class"
    if not compiled.exists() or compiled.stat().st_mtime < source.stat().st_mtime:
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-d", str(out), "-cp", cp, str(source)], check=True, timeout=300)
    return os.pathsep.join([cp, str(out)])


def paimon_rest(release: str, server: RestCatalogServer, *command: str, token: str = TOKEN) -> str:
    options = ["metastore=rest", f"uri={server.url}", "warehouse=lake", "token.provider=bear", f"token={token}"]
    cmd = ["java", "-cp", _rest_class_path(release), "PaimonRest", *options, "--", *command]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"Paimon {release}'s RESTCatalog failed ({' '.join(command)}): {proc.stderr[-3000:]}")
    return proc.stdout


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RestCatalogServer]:
    with RestCatalogServer(stratalake.Catalog(str(tmp_path)), token=TOKEN) as srv:
        yield srv


@pytest.fixture(params=REST_RELEASES)
def release(request: pytest.FixtureRequest) -> str:
    try:
        _rest_class_path(request.param)
    except JavaUnavailable as e:
        pytest.skip(str(e))
    return str(request.param)


def test_paimon_java_lists_reads_creates_and_writes(release: str, server: RestCatalogServer, tmp_path: Path) -> None:
    ours = stratalake.Catalog("lake", {"metastore": "rest", "uri": server.url, "token.provider": "bear", "token": TOKEN})
    ours.create_database("sdb")
    t = ours.create_table("sdb.orders", [("id", "BIGINT"), ("v", "STRING")], primary_key=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", None]}))
    t.write(pa.table({"id": [2], "v": ["B"]}))
    ours.create_table("sdb.log", [("id", "BIGINT"), ("msg", "STRING")]).write(pa.table({"id": [9], "msg": ["hi"]}))

    listed = paimon_rest(release, server, "list").splitlines()
    assert listed == ["DB sdb", "TABLE sdb.log", "TABLE sdb.orders"]
    rows = sorted(line.split("\t") for line in paimon_rest(release, server, "read", "sdb.orders").splitlines())
    assert rows == [["1", "a"], ["2", "B"], ["3", "null"]]
    assert paimon_rest(release, server, "read", "sdb.log").splitlines() == ["9\thi"]

    paimon_rest(release, server, "write", "jdb.j", "0", "4", "x")
    paimon_rest(release, server, "write", "jdb.j", "2", "6", "y")  # upserts 2, 3 on top
    assert "jdb" in ours.list_databases() and ours.list_tables("jdb") == ["j"]
    want = [{"id": 0, "v": "x0"}, {"id": 1, "v": "x1"}] + [{"id": i, "v": f"y{i}"} for i in range(2, 6)]
    assert sorted(ours.get_table("jdb.j").read().to_pylist(), key=lambda r: r["id"]) == want
    fs = stratalake.Catalog(str(tmp_path)).get_table("jdb.j")
    assert sorted(fs.read().to_pylist(), key=lambda r: r["id"]) == want
    assert fs.latest_snapshot().id == 2  # type: ignore[union-attr]

    # stratalake writes on top of Java's snapshots; Java reads the result.
    ours.get_table("jdb.j").write(pa.table({"id": [0], "v": ["z0"]}))
    assert paimon_rest(release, server, "read", "jdb.j").splitlines()[0] == "0\tz0"


def test_paimon_java_with_a_wrong_token_is_refused(release: str, server: RestCatalogServer) -> None:
    with pytest.raises(RuntimeError, match="(?i)not authorized|401"):
        paimon_rest(release, server, "list", token="wrong")
