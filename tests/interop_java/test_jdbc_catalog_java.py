"""Apache Paimon's Java JdbcCatalog (SQLite, through ``org.xerial:sqlite-jdbc``) and stratalake's
share one metastore: each lists, loads and reads what the other registered and wrote, and their
commit locks (rows of ``paimon_distributed_locks``) exclude each other."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from tests.interop_java import paimon_java

pytestmark = pytest.mark.paimon_java

RELEASE = "1.3.1"  # the newest release the harness checks
SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.46.1.3"
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _class_path() -> str:
    base = paimon_java.class_path(RELEASE)
    out = paimon_java.CACHE / f"{RELEASE}-jdbc"
    source = paimon_java.HERE / "PaimonJdbc.java"
    compiled = out / "PaimonJdbc.class"
    bundle = base.split(os.pathsep)[0]
    if not compiled.exists() or compiled.stat().st_mtime < source.stat().st_mtime:
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-d", str(out), "-cp", bundle, str(source)], check=True, timeout=300)
    # _jar fetches the driver from Maven Central on first use, as the harness does its jars.
    return os.pathsep.join([base, str(paimon_java._jar(SQLITE_JDBC)), str(out)])


def _java(args: list[str], options: dict[str, str]) -> list[str]:
    return [
        "java",
        "-cp",
        _class_path(),
        "PaimonJdbc",
        *args,
        "--",
        *(f"{k}={v}" for k, v in options.items()),
    ]


def _run(args: list[str], options: dict[str, str]) -> str:
    proc = subprocess.run(_java(args, options), capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"Paimon {RELEASE}'s JdbcCatalog failed: {proc.stderr[-3000:]}")
    return proc.stdout


def _options(tmp_path: Path) -> dict[str, str]:
    return {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}", "lock.enabled": "true"}


def _wal(tmp_path: Path) -> None:
    """Put the catalog database in WAL mode, where a reader never blocks a writer.

    Paimon 1.3.1's lock-table check (``AbstractDistributedLockDialect.createTable``) leaves the
    ``DatabaseMetaData.getTables`` result set open when the table already exists; in SQLite's
    default rollback journal that open read keeps a SHARED lock, so the commit lock's own
    connection then fails with SQLITE_BUSY on every attempt, and Paimon's commit gives up after
    about 50 s (measured: any second Paimon writer with ``lock.enabled`` on one file, with or
    without stratalake). WAL lets that writer through; newer Paimon sources close the result set.
    """
    with sqlite3.connect(tmp_path / "catalog.db") as conn:
        assert conn.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)


def test_paimon_java_reads_what_we_registered_and_we_read_what_it_registered(tmp_path):
    warehouse = str(tmp_path / "wh")
    opts = _options(tmp_path)
    cat = stratalake.Catalog(warehouse, opts)
    _wal(tmp_path)
    cat.create_database("ours", properties={"team": "a"})
    t = cat.create_table("ours.t", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": pa.array(range(10), pa.int64()), "v": [f"py {i}" for i in range(10)]}))
    cat.get_table("ours.t").write(pa.table({"id": pa.array([3], pa.int64()), "v": ["py again"]}))

    java_opts = {**opts, "warehouse": warehouse}
    assert _run(["list"], java_opts).split("\n") == ["db ours", "table ours.t", ""]
    rows = sorted(line.split("\t") for line in _run(["read", "ours.t"], java_opts).splitlines())
    expected = sorted([str(i), "py again" if i == 3 else f"py {i}"] for i in range(10))
    assert rows == expected

    _run(["write", "java.w", "0", "6"], java_opts)
    _run(["write", "java.w", "4", "8"], java_opts)
    assert cat.list_databases() == ["java", "ours"] and cat.list_tables("java") == ["w"]
    got = cat.get_table("java.w").read().sort_by("id").to_pylist()
    assert got == [{"id": i, "v": f"java {i}"} for i in range(8)]
    # We write on, Java reads it back.
    cat.get_table("java.w").write(pa.table({"id": pa.array([100], pa.int64()), "v": ["py 100"]}))
    assert "100\tpy 100" in _run(["read", "java.w"], java_opts).splitlines()


def test_paimon_java_lock_and_ours_exclude_each_other(tmp_path):
    warehouse = str(tmp_path / "wh")
    opts = _options(tmp_path)
    cat = stratalake.Catalog(warehouse, opts)
    _wal(tmp_path)
    cat.create_database("db")
    table = cat.create_table("db.t", SCHEMA, primary_key=["id"])
    java_opts = {**opts, "warehouse": warehouse}

    # Java holds the table's lock for 4 s: our commit waits for it.
    hold_ms = 4000
    java = subprocess.Popen(
        _java(["hold", "db", "t", str(hold_ms)], java_opts), stdout=subprocess.PIPE, text=True
    )
    try:
        assert java.stdout is not None and java.stdout.readline().strip() == "held"
        held_at = time.monotonic()
        assert table.write(pa.table({"id": pa.array([1], pa.int64()), "v": ["py"]})) == 1
        waited = time.monotonic() - held_at
        assert java.wait(timeout=60) == 0
    finally:
        java.kill()
    assert waited >= hold_ms / 1000 - 0.5, waited

    # We hold it: Java's commit (lock.enabled) waits until we let go.
    assert cat.lock is not None
    with cat.lock.hold("db", "t"):
        writer = subprocess.Popen(
            _java(["write", "db.t", "10", "12"], java_opts), stderr=subprocess.PIPE, text=True
        )
        time.sleep(8)  # the JVM starts (~2 s) and keeps retrying the lock meanwhile
        assert writer.poll() is None, "Paimon's commit finished while we held the lock"
        assert table.snapshot_manager.latest_snapshot_id() == 1
    _, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err[-3000:]
    assert sorted(cat.get_table("db.t").read().column("id").to_pylist()) == [1, 10, 11]
