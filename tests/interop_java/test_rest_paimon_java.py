"""Apache Paimon Java's ``RESTCatalog`` against stratalake's REST catalog server.

Paimon Java (``PaimonRest.java`` beside this file, compiled against a release's bundle) lists the
databases and tables, reads a table stratalake wrote, and creates and writes a table (committing
through the server's ``commit`` endpoint, as its ``CatalogSnapshotCommit`` does) that stratalake
then reads. And the other way round: stratalake's REST client against Paimon's own REST catalog
server (``RESTCatalogServer`` of paimon-core's test jar, ``PaimonRestServer.java``). Run by ``make test-paimon-java``; the jars are fetched by Maven on first use.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake import SchemaChange
from stratalake.catalog.rest_protocol import RestError
from stratalake.exceptions import DatabaseNotFoundError, TableAlreadyExistsError, TableNotFoundError
from stratalake.server import RestCatalogServer
from tests.interop_java.paimon_java import CACHE, HERE, M2, JavaUnavailable, class_path

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
    options = [
        "metastore=rest",
        f"uri={server.url}",
        "warehouse=lake",
        "token.provider=bear",
        f"token={token}",
    ]
    cmd = ["java", "-cp", _rest_class_path(release), "PaimonRest", *options, "--", *command]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(
            f"Paimon {release}'s RESTCatalog failed ({' '.join(command)}): {proc.stderr[-3000:]}"
        )
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


def test_paimon_java_lists_reads_creates_and_writes(
    release: str, server: RestCatalogServer, tmp_path: Path
) -> None:
    ours = stratalake.Catalog(
        "lake", {"metastore": "rest", "uri": server.url, "token.provider": "bear", "token": TOKEN}
    )
    ours.create_database("sdb")
    t = ours.create_table(
        "sdb.orders", [("id", "BIGINT"), ("v", "STRING")], primary_key=["id"], options={"bucket": "2"}
    )
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", None]}))
    t.write(pa.table({"id": [2], "v": ["B"]}))
    ours.create_table("sdb.log", [("id", "BIGINT"), ("msg", "STRING")]).write(
        pa.table({"id": [9], "msg": ["hi"]})
    )

    listed = paimon_rest(release, server, "list").splitlines()
    assert listed == ["DB sdb", "TABLE sdb.log", "TABLE sdb.orders"]
    rows = sorted(
        line.split("\t") for line in paimon_rest(release, server, "read", "sdb.orders").splitlines()
    )
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
    with pytest.raises(RuntimeError, match=r"(?i)not authorized|401"):
        paimon_rest(release, server, "list", token="wrong")


# -- stratalake's client against Paimon's own REST server -------------------------------------------

#: Paimon's REST catalog server (paimon-core's test jar, on OkHttp's MockWebServer) and what it needs.
_SERVER_JARS = (
    "org.apache.paimon:paimon-core:1.3.1:jar:tests",
    "com.squareup.okhttp3:mockwebserver:4.12.0",
    "com.squareup.okhttp3:okhttp:4.12.0",
    "com.squareup.okio:okio-jvm:3.6.0",
    "org.jetbrains.kotlin:kotlin-stdlib:1.8.21",
    "junit:junit:4.13.2",
)


def _maven_jar(coordinates: str) -> Path:
    parts = coordinates.split(":")
    group, artifact, version = parts[0], parts[1], parts[2]
    classifier = f"-{parts[4]}" if len(parts) == 5 else ""
    path = M2.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}{classifier}.jar")
    if not path.exists():
        proc = subprocess.run(
            ["mvn", "-q", "-B", "dependency:get", f"-Dartifact={coordinates}", "-Dtransitive=false"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if proc.returncode != 0 or not path.exists():
            raise JavaUnavailable(f"mvn could not fetch {coordinates}: {proc.stdout[-2000:]}")
    return path


@pytest.fixture
def paimon_server(tmp_path: Path) -> Iterator[str]:
    """Paimon 1.3.1's RESTCatalogServer on a free port, serving ``<tmp>/paimon``; its URL."""
    try:
        cp = class_path("1.3.1")
        extra = [str(_maven_jar(c)) for c in _SERVER_JARS]
    except JavaUnavailable as e:
        pytest.skip(str(e))
    out = CACHE / "rest-server-1.3.1"
    source = HERE / "PaimonRestServer.java"
    full = os.pathsep.join([cp, *extra])
    if (
        not (out / "PaimonRestServer.class").exists()
        or (out / "PaimonRestServer.class").stat().st_mtime < source.stat().st_mtime
    ):
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-d", str(out), "-cp", full, str(source)], check=True, timeout=300)
    data = tmp_path / "paimon"
    data.mkdir()
    proc = subprocess.Popen(
        ["java", "-cp", os.pathsep.join([full, str(out)]), "PaimonRestServer", str(data), "lake", TOKEN],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("URL "), f"Paimon's REST server did not start: {line!r}"
        yield line.split(" ", 1)[1].strip().rstrip("/")
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_stratalake_client_against_paimons_rest_server(paimon_server: str, tmp_path: Path) -> None:
    cat = stratalake.Catalog(
        "lake", {"metastore": "rest", "uri": paimon_server, "token.provider": "bear", "token": TOKEN}
    )
    assert cat.list_databases() == []
    cat.create_database("db")
    t = cat.create_table("db.t", [("id", "BIGINT"), ("v", "STRING")], primary_key=["id"])
    assert Path(t.location.removeprefix("file:")).is_relative_to(tmp_path / "paimon")
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    cat.get_table("db.t").write(pa.table({"id": [2], "v": ["B"]}))  # published by Paimon's commit endpoint
    assert sorted(cat.get_table("db.t").read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a"},
        {"id": 2, "v": "B"},
    ]
    assert cat.get_table("db.t").latest_snapshot().id == 2  # type: ignore[union-attr]
    assert cat.list_tables("db") == ["t"]
    cat.alter_table("db.t", [SchemaChange.add_column("n", "INT"), SchemaChange.set_option("k", "v")])
    schema = cat.get_table("db.t").schema()
    assert schema.field_names == ("id", "v", "n") and schema.options["k"] == "v"
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table("db.t", [("id", "BIGINT")], primary_key=["id"])
    with pytest.raises(TableNotFoundError):
        cat.get_table("db.nope")
    with pytest.raises(DatabaseNotFoundError):
        cat.list_tables("nope")
    cat.rename_table("db.t", "db.u")
    assert cat.list_tables("db") == ["u"]
    cat.drop_table("db.u")
    cat.drop_database("db")
    assert cat.list_databases() == []
    with pytest.raises(RestError, match="401"):
        stratalake.Catalog(
            "lake", {"metastore": "rest", "uri": paimon_server, "token.provider": "bear", "token": "no"}
        )
