"""Paimon Java's own HiveCatalog (paimon-hive-connector-3.1) and stratalake's Hive catalog on one
real Hive Metastore: each lists and reads the other's tables, and what Paimon registers in the
metastore is what we register, field by field."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from stratalake.catalog.hive import HiveCatalog, local_path
from tests.interop_java.paimon_java import CACHE, HERE, M2, JavaUnavailable
from tests.metastore import hive_server

pytestmark = [pytest.mark.paimon_java, pytest.mark.metastore_server]

RELEASE = "1.2.0"  # the newest paimon-hive-connector-3.1 on Maven Central
_JARS = (
    f"org.apache.paimon:paimon-hive-connector-3.1:{RELEASE}",
    "org.apache.hive:hive-common:3.1.3",
    "org.apache.hive:hive-serde:3.1.3",  # HiveTypeUtils maps types through its TypeInfo
)


def _jar(coordinates: str) -> Path:
    """One jar from Maven Central, without its dependencies (the metastore's class path has them;
    Hive's poms name artifacts Maven Central does not serve, such as jdk.tools)."""
    group, artifact, version = coordinates.split(":")
    path = M2.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}.jar")
    if not path.exists():
        proc = subprocess.run(
            ["mvn", "-q", "-B", "dependency:get", f"-Dartifact={coordinates}", "-Dtransitive=false"],
            capture_output=True, text=True, timeout=900,
        )
        if proc.returncode != 0 or not path.exists():
            raise JavaUnavailable(f"mvn could not fetch {coordinates}: {proc.stdout[-2000:]}")
    return path


@pytest.fixture(scope="module")
def hms() -> Iterator[hive_server.HiveMetastore]:
    server = hive_server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def class_path() -> str:
    try:
        jars = [str(_jar(c)) for c in _JARS]
        hive_server.fetch()
    except (JavaUnavailable, hive_server.MetastoreUnavailable) as e:
        pytest.fail(f"Paimon's Hive catalog cannot run here: {e}")
    out = CACHE / f"hive-{RELEASE}"
    source = HERE / "PaimonHive.java"
    compiled = out / "PaimonHive.class"
    cp = os.pathsep.join([*jars, str(hive_server.LIB / "*")])
    if not compiled.exists() or compiled.stat().st_mtime < source.stat().st_mtime:
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-d", str(out), "-cp", cp, str(source)], check=True, timeout=300)
    return os.pathsep.join([cp, str(out)])


def paimon_hive(class_path: str, *args: str) -> str:
    proc = subprocess.run(
        ["java", "-cp", class_path, "PaimonHive", *args], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def catalog(hms: hive_server.HiveMetastore, warehouse: Path) -> HiveCatalog:
    cat = stratalake.Catalog(str(warehouse), {"metastore": "hive", "uri": hms.uri})
    assert isinstance(cat, HiveCatalog)
    return cat


SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), pa.field("dt", pa.string(), nullable=False)]
)


def test_paimon_java_lists_and_reads_our_table(hms: hive_server.HiveMetastore, class_path: str, tmp_path: Path) -> None:
    cat = catalog(hms, tmp_path)
    cat.create_database("ours")
    t = cat.create_table("ours.t", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"],
                         options={"metastore.partitioned-table": "true"})
    t.write(pa.table({"id": [3, 1, 2], "v": ["c", "a", "b"], "dt": ["d1", "d1", "d2"]}, schema=SCHEMA))
    out = paimon_hive(class_path, "read", hms.uri, str(tmp_path), "ours", "t")
    assert "TABLES t\n" in out and "IDS [1, 2, 3]" in out


def _comparable(hms_table: Any) -> dict[str, Any]:
    """What both catalogs decide about a table's metastore entry (names, times, owner, location and
    the metastore's own statistics aside)."""
    own = {"transient_lastDdlTime", "numFiles", "totalSize", "numRows", "rawDataSize", "COLUMN_STATS_ACCURATE"}
    sd = hms_table.sd
    return {
        "tableType": hms_table.tableType,
        "retention": hms_table.retention,
        "parameters": {k: v for k, v in hms_table.parameters.items() if k not in own},
        "partitionKeys": [(c.name, c.type, c.comment) for c in hms_table.partitionKeys],
        "cols": [(c.name, c.type, c.comment) for c in sd.cols],
        "inputFormat": sd.inputFormat,
        "outputFormat": sd.outputFormat,
        "serde": (sd.serdeInfo.serializationLib, sd.serdeInfo.parameters),
        "location_tail": local_path(sd.location).rsplit("/", 2)[-2:],
    }


def test_we_register_as_paimon_registers_and_read_its_table(
    hms: hive_server.HiveMetastore, class_path: str, tmp_path: Path
) -> None:
    assert "CREATED" in paimon_hive(class_path, "create", hms.uri, str(tmp_path), "theirs", "t")
    cat = catalog(hms, tmp_path)
    assert cat.list_tables("theirs") == ["t"]
    theirs = cat.get_table("theirs.t")
    assert sorted(theirs.read().column("id").to_pylist()) == [1, 2, 3]
    # The same table created by us in a database of ours: the metastore entries agree.
    cat.create_database("mine")
    mine = cat.create_table("mine.t", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"],
                            options={"bucket": "1", "metastore.partitioned-table": "true"})
    mine.write(pa.table({"id": [1, 2, 3], "v": ["v1", "v2", "v3"], "dt": ["d1"] * 3}, schema=SCHEMA))
    paimon_entry = _comparable(cat.client.call("get_table", "theirs", "t"))
    our_entry = _comparable(cat.client.call("get_table", "mine", "t"))
    assert our_entry["location_tail"] == ["mine.db", "t"] and paimon_entry["location_tail"] == ["theirs.db", "t"]
    paimon_entry.pop("location_tail"), our_entry.pop("location_tail")
    assert our_entry == paimon_entry
    # The partition its commit callback added, and the one ours added.
    for db in ("theirs", "mine"):
        assert cat.client.call("get_partition_names", db, "t", -1) == ["dt=d1"]
    p_theirs = cat.client.call("get_partition", "theirs", "t", ["d1"])
    p_mine = cat.client.call("get_partition", "mine", "t", ["d1"])
    assert local_path(p_theirs.sd.location).endswith("theirs.db/t/dt=d1")
    assert local_path(p_mine.sd.location).endswith("mine.db/t/dt=d1")
    assert (p_mine.sd.inputFormat, p_mine.sd.serdeInfo.serializationLib) == (
        p_theirs.sd.inputFormat, p_theirs.sd.serdeInfo.serializationLib)
    # And Paimon reads what we then write to its table.
    theirs.write(pa.table({"id": [4], "v": ["v4"], "dt": ["d2"]}, schema=SCHEMA))
    assert "IDS [1, 2, 3, 4]" in paimon_hive(class_path, "read", hms.uri, str(tmp_path), "theirs", "t")
    assert sorted(cat.client.call("get_partition_names", "theirs", "t", -1)) == ["dt=d1", "dt=d2"]
