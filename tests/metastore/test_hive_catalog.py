"""The Hive catalog against a real Hive Metastore (started once per session, conftest.py).

What the metastore holds after our create is compared field by field with what Paimon's
HiveCatalog registers (HiveCatalog.newHmsTable / updateHmsTable / convertToHiveDatabase).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.catalog import SchemaChange
from stratalake.catalog.hive import HiveCatalog
from stratalake.exceptions import (
    CommitConflictError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidIdentifierError,
    InvalidOptionError,
    StrataLakeError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from tests.interop.paimon_oracle import paimon_create_table, paimon_read, paimon_write
from tests.metastore import hive_server
from tests.metastore.conftest import LOCK_TIMEOUT_S

pytestmark = pytest.mark.metastore_server

_names = itertools.count()
ROOT = Path(__file__).resolve().parents[2]


def unique(prefix: str) -> str:
    """A name no other test of the session uses (they share one metastore)."""
    return f"{prefix}_{os.getpid()}_{next(_names)}"


def catalog(hms: hive_server.HiveMetastore, warehouse: Path, **options: str) -> HiveCatalog:
    cat = stratalake.Catalog(str(warehouse), {"metastore": "hive", "uri": hms.uri, **options})
    assert isinstance(cat, HiveCatalog)
    return cat


SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


def rows(n: int, dt: str = "2024-01-01", start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids], "dt": [dt] * n}, schema=SCHEMA)


# -- databases --------------------------------------------------------------------------------------
def test_databases_live_in_the_metastore(hive_metastore: hive_server.HiveMetastore, tmp_path: Path) -> None:
    cat = catalog(hive_metastore, tmp_path)
    db = unique("db")
    cat.create_database(db, properties={"comment": "orders", "owner": "alice", "k": "v"})
    assert cat.database_exists(db) and db in cat.list_databases()
    hms_db = cat.client.call("get_database", db)
    # As Paimon's convertToHiveDatabase: comment -> description, owner -> ownerName, rest -> parameters.
    assert hms_db.description == "orders" and hms_db.ownerName == "alice"
    assert hms_db.parameters == {"k": "v"}
    assert hive_server_path(hms_db.locationUri) == str(tmp_path / f"{db}.db")
    assert (tmp_path / f"{db}.db").is_dir()
    props = cat.database_properties(db)
    assert props["comment"] == "orders" and props["owner"] == "alice" and props["k"] == "v"
    # A second catalog (another process would be the same) sees it through the metastore only.
    assert db in catalog(hive_metastore, tmp_path / "elsewhere").list_databases()

    with pytest.raises(DatabaseAlreadyExistsError, match=db):
        cat.create_database(db)
    cat.create_database(db, ignore_if_exists=True)

    cat.create_table(f"{db}.t", SCHEMA, primary_key=["id"])
    with pytest.raises(DatabaseNotEmptyError, match=r"\['t'\]"):
        cat.drop_database(db)
    assert cat.table_exists(f"{db}.t")  # unchanged
    cat.drop_database(db, cascade=True)
    assert not cat.database_exists(db)
    assert not (tmp_path / f"{db}.db").exists()
    with pytest.raises(DatabaseNotFoundError, match=db):
        cat.drop_database(db)
    cat.drop_database(db, ignore_if_not_exists=True)


def hive_server_path(location: str) -> str:
    from stratalake.catalog.hive import local_path

    return local_path(location).rstrip("/")


# -- tables: what the metastore holds -----------------------------------------------------------------
def test_table_is_registered_as_paimon_registers_it(
    hive_metastore: hive_server.HiveMetastore, tmp_path: Path
) -> None:
    cat = catalog(hive_metastore, tmp_path)
    db = unique("reg")
    cat.create_database(db)
    schema = [
        ("id", "BIGINT"),
        ("b", "BOOLEAN"),
        ("i8", "TINYINT"),
        ("i16", "SMALLINT"),
        ("i32", "INT", "an int"),
        ("f", "FLOAT"),
        ("d", "DOUBLE"),
        ("amount", "DECIMAL(10, 2)"),
        ("s", "STRING"),
        ("vc", "VARCHAR(5)"),
        ("c", "CHAR(3)"),
        ("bin", "BYTES"),
        ("day", "DATE"),
        ("ts", "TIMESTAMP(6)"),
        ("tags", "ARRAY<INT>"),
        ("attrs", "MAP<STRING, BIGINT>"),
        ("point", "ROW<x DOUBLE, y DOUBLE>"),
        ("dt", "STRING"),
    ]
    t = cat.create_table(
        f"{db}.orders",
        schema,
        primary_key=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "2", "metastore.partitioned-table": "true", "hive.owner-team": "x"},
        comment="the orders",
    )
    hms = cat.client.call("get_table", db, "orders")
    assert hms.tableName == "orders" and hms.dbName == db
    assert hms.tableType == "MANAGED_TABLE"
    assert hms.retention == 2**31 - 1
    assert hms.parameters["table_type"] == "PAIMON"
    assert hms.parameters["storage_handler"] == "org.apache.paimon.hive.PaimonStorageHandler"
    # sync-all-properties (Paimon's default: true): every option, plus the keys.
    for key, value in t.options().items():
        assert hms.parameters[key] == value
    assert hms.parameters["primary-key"] == "id,dt"
    assert hms.parameters["partition"] == "dt"
    assert hms.parameters["bucket-key"] == "id"  # Paimon's bucketKeys(): the trimmed primary key
    assert hms.parameters["comment"] == "the orders"
    sd = hms.sd
    assert sd.inputFormat == "org.apache.paimon.hive.mapred.PaimonInputFormat"
    assert sd.outputFormat == "org.apache.paimon.hive.mapred.PaimonOutputFormat"
    assert sd.serdeInfo.serializationLib == "org.apache.paimon.hive.PaimonSerDe"
    assert sd.serdeInfo.parameters == {}
    assert hive_server_path(sd.location) == str(tmp_path / f"{db}.db" / "orders") == t.location
    # metastore.partitioned-table: the partition column is a Hive partition key, not a column.
    assert [(c.name, c.type) for c in hms.partitionKeys] == [("dt", "string")]
    assert [(c.name, c.type) for c in sd.cols] == [
        ("id", "bigint"),
        ("b", "boolean"),
        ("i8", "tinyint"),
        ("i16", "smallint"),
        ("i32", "int"),
        ("f", "float"),
        ("d", "double"),
        ("amount", "decimal(10,2)"),
        ("s", "string"),
        ("vc", "varchar(5)"),
        ("c", "char(3)"),
        ("bin", "binary"),
        ("day", "date"),
        ("ts", "timestamp"),
        ("tags", "array<int>"),
        ("attrs", "map<string,bigint>"),
        ("point", "struct<x:double,y:double>"),
    ]
    assert [c.comment for c in sd.cols if c.name == "i32"] == ["an int"]
    # The schema on storage is the filesystem catalog's (Paimon's layout).
    assert (Path(t.location) / "schema" / "schema-0").is_file()
    assert stratalake.Catalog(str(tmp_path)).get_table(f"{db}.orders").schema().fields == t.schema().fields


def test_without_partitioned_table_and_without_sync_all(
    hive_metastore: hive_server.HiveMetastore, tmp_path: Path
) -> None:
    cat = catalog(hive_metastore, tmp_path, **{"sync-all-properties": "false"})
    db = unique("plain")
    cat.create_database(db)
    cat.create_table(
        f"{db}.t", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options={"hive.team": "sales"}
    )
    hms = cat.client.call("get_table", db, "t")
    # Not metastore-partitioned: every column is a column, no partition keys (Paimon's default).
    assert hms.partitionKeys == []
    assert [c.name for c in hms.sd.cols] == ["id", "v", "dt"]
    # sync-all-properties = false: only 'hive.'-prefixed options, prefix dropped.
    # (the metastore adds its own: the DDL time, and file statistics it gathers from the directory)
    own = {"transient_lastDdlTime", "numFiles", "totalSize"}
    params = {k: v for k, v in hms.parameters.items() if k not in own}
    assert params == {
        "team": "sales",
        "table_type": "PAIMON",
        "storage_handler": "org.apache.paimon.hive.PaimonStorageHandler",
    }
    cat.get_table(f"{db}.t").write(rows(3))
    assert cat.client.call("get_partition_names", db, "t", -1) == []


# -- tables: the catalog API ------------------------------------------------------------------------
def test_create_write_read_drop(hive_metastore: hive_server.HiveMetastore, tmp_path: Path) -> None:
    cat = catalog(hive_metastore, tmp_path)
    db = unique("api")
    cat.create_database(db)
    t = cat.create_table(f"{db}.t", SCHEMA, primary_key=["id"])
    assert cat.list_tables(db) == ["t"] and cat.table_exists(f"{db}.t")
    t.write(rows(5))
    t.write(rows(2, start=3))  # upserts 3, 4
    other = catalog(hive_metastore, tmp_path)  # a fresh catalog finds it through the metastore
    assert other.get_table(f"{db}.t").read().sort_by("id").column("id").to_pylist() == [0, 1, 2, 3, 4]
    with pytest.raises(TableAlreadyExistsError, match=f"{db}.t"):
        cat.create_table(f"{db}.t", SCHEMA, primary_key=["id"])
    assert cat.create_table(f"{db}.t", SCHEMA, primary_key=["id"], ignore_if_exists=True).location == t.location

    cat.drop_table(f"{db}.t")
    assert not cat.table_exists(f"{db}.t") and cat.list_tables(db) == []
    assert not Path(t.location).exists()
    with pytest.raises(TableNotFoundError, match=f"{db}.t"):
        cat.get_table(f"{db}.t")
    with pytest.raises(TableNotFoundError):
        cat.drop_table(f"{db}.t")
    cat.drop_table(f"{db}.t", ignore_if_not_exists=True)


def test_rename_moves_metastore_entry_and_directory(
    hive_metastore: hive_server.HiveMetastore, tmp_path: Path
) -> None:
    cat = catalog(hive_metastore, tmp_path)
    db = unique("ren")
    cat.create_database(db)
    cat.create_table(f"{db}.a", SCHEMA, primary_key=["id"]).write(rows(3))
    cat.create_table(f"{db}.c", SCHEMA, primary_key=["id"])
    with pytest.raises(TableAlreadyExistsError, match=f"{db}.c"):
        cat.rename_table(f"{db}.a", f"{db}.c")
    cat.rename_table(f"{db}.a", f"{db}.b")
    assert cat.list_tables(db) == ["b", "c"]
    hms = cat.client.call("get_table", db, "b")
    assert hive_server_path(hms.sd.location) == str(tmp_path / f"{db}.db" / "b")
    assert not (tmp_path / f"{db}.db" / "a").exists()
    assert cat.get_table(f"{db}.b").read().num_rows == 3
    with pytest.raises(TableNotFoundError):
        cat.rename_table(f"{db}.a", f"{db}.d")


def test_alter_keeps_metastore_columns_and_parameters_in_step(
    hive_metastore: hive_server.HiveMetastore, tmp_path: Path
) -> None:
    cat = catalog(hive_metastore, tmp_path)
    db = unique("alt")
    cat.create_database(db)
    cat.create_table(f"{db}.t", SCHEMA, primary_key=["id"], options={"snapshot.num-retained.max": "20"})
    t = cat.alter_table(
        f"{db}.t",
        [
            SchemaChange.add_column("qty", "INT"),
            SchemaChange.rename_column("v", "label"),
            SchemaChange.set_option("snapshot.num-retained.min", "5"),
            SchemaChange.remove_option("snapshot.num-retained.max"),
        ],
    )
    assert t.schema().id == 1
    hms = cat.client.call("get_table", db, "t")
    assert [(c.name, c.type) for c in hms.sd.cols] == [
        ("id", "bigint"),
        ("label", "string"),
        ("dt", "string"),
        ("qty", "int"),
    ]
    assert hms.parameters["snapshot.num-retained.min"] == "5"
    assert "snapshot.num-retained.max" not in hms.parameters
    with pytest.raises(InvalidIdentifierError, match="Qty2"):
        cat.alter_table(f"{db}.t", [SchemaChange.add_column("Qty2", "INT")])
    assert cat.get_table(f"{db}.t").schema().id == 1  # refused before anything was written


def test_foreign_tables_are_not_paimon_tables(hive_metastore: hive_server.HiveMetastore, tmp_path: Path) -> None:
    cat = catalog(hive_metastore, tmp_path)
    db = unique("foreign")
    cat.create_database(db)
    t = cat.client.types
    hive_table = t.Table(
        tableName="csv",
        dbName=db,
        tableType="EXTERNAL_TABLE",
        parameters={"EXTERNAL": "TRUE"},
        partitionKeys=[],
        sd=t.StorageDescriptor(
            cols=[t.FieldSchema(name="a", type="int")],
            location=(tmp_path / "csv").as_uri(),
            inputFormat="org.apache.hadoop.mapred.TextInputFormat",
            outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
            serdeInfo=t.SerDeInfo(serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"),
        ),
    )
    cat.client.call("create_table", hive_table)
    assert cat.list_tables(db) == [] and not cat.table_exists(f"{db}.csv")
    with pytest.raises(TableNotFoundError, match="not a Paimon table"):
        cat.get_table(f"{db}.csv")
    with pytest.raises(TableAlreadyExistsError, match="not a Paimon table"):
        cat.create_table(f"{db}.csv", SCHEMA, primary_key=["id"])
    with pytest.raises(DatabaseNotEmptyError):
        cat.drop_database(db)


def test_a_table_registered_by_another_paimon_engine_is_seen(
    hive_metastore: hive_server.HiveMetastore, tmp_path: Path
) -> None:
    """pypaimon writes a table in Paimon's layout; it is registered in the metastore the way
    Paimon's HiveCatalog registers one (formats, serde, location): our catalog lists and reads it,
    and pypaimon reads what we then write to it."""
    db = unique("peer")
    cat = catalog(hive_metastore, tmp_path)
    cat.create_database(db)
    paimon_create_table(tmp_path, f"{db}.events", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    paimon_write(tmp_path, f"{db}.events", rows(4))
    t = cat.client.types
    cat.client.call(
        "create_table",
        t.Table(
            tableName="events",
            dbName=db,
            tableType="MANAGED_TABLE",
            partitionKeys=[],
            parameters={"table_type": "PAIMON", "storage_handler": "org.apache.paimon.hive.PaimonStorageHandler"},
            sd=t.StorageDescriptor(
                cols=[t.FieldSchema(name=f.name, type="string") for f in SCHEMA],
                location=(tmp_path / f"{db}.db" / "events").as_uri(),
                inputFormat="org.apache.paimon.hive.mapred.PaimonInputFormat",
                outputFormat="org.apache.paimon.hive.mapred.PaimonOutputFormat",
                serdeInfo=t.SerDeInfo(serializationLib="org.apache.paimon.hive.PaimonSerDe", parameters={}),
            ),
        ),
    )
    assert cat.list_tables(db) == ["events"]
    ours = cat.get_table(f"{db}.events")
    assert ours.read().num_rows == 4
    ours.write(rows(2, start=10))
    assert sorted(paimon_read(tmp_path, f"{db}.events").column("id").to_pylist()) == [0, 1, 2, 3, 10, 11]


# -- partitions ---------------------------------------------------------------------------------------
def test_commits_add_partitions_and_drop_partition_removes_them(
    hive_metastore: hive_server.HiveMetastore, tmp_path: Path
) -> None:
    cat = catalog(hive_metastore, tmp_path)
    db = unique("parts")
    cat.create_database(db)
    t = cat.create_table(
        f"{db}.t",
        SCHEMA,
        primary_key=["id", "dt"],
        partition_keys=["dt"],
        options={"metastore.partitioned-table": "true"},
    )
    assert cat.client.call("get_partition_names", db, "t", -1) == []
    t.write(rows(2, "2024-01-01"))
    t.write(pa.concat_tables([rows(2, "2024-01-01"), rows(1, "2024-01-02"), rows(1, "a b/c")]))
    names = cat.client.call("get_partition_names", db, "t", -1)
    assert sorted(names) == ["dt=2024-01-01", "dt=2024-01-02", "dt=a b%2Fc"]
    part = cat.client.call("get_partition", db, "t", ["a b/c"])
    # As Paimon's AddPartitionCommitCallback: the table's storage descriptor, located at the
    # partition's directory (escaped as Paimon names it).
    assert hive_server_path(part.sd.location) == f"{t.location}/dt=a b%2Fc"
    assert part.sd.inputFormat == "org.apache.paimon.hive.mapred.PaimonInputFormat"
    assert (Path(t.location) / "dt=a b%2Fc").is_dir()

    cat.get_table(f"{db}.t").drop_partitions([{"dt": "2024-01-01"}])
    assert sorted(cat.client.call("get_partition_names", db, "t", -1)) == ["dt=2024-01-02", "dt=a b%2Fc"]
    assert sorted(set(cat.get_table(f"{db}.t").read().column("dt").to_pylist())) == ["2024-01-02", "a b/c"]


def test_partition_sync_failure_does_not_fail_the_commit(
    hive_metastore: hive_server.HiveMetastore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Best-effort, as Paimon's callback: the data is committed even if the metastore refuses."""
    cat = catalog(hive_metastore, tmp_path)
    db = unique("besteffort")
    cat.create_database(db)
    t = cat.create_table(
        f"{db}.t", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"],
        options={"metastore.partitioned-table": "true"},
    )
    cat.client.call("drop_table", db, "t", False)  # the metastore lost the table
    snapshot = t.write(rows(1))
    assert snapshot == 1 and t.read().num_rows == 1
    assert "could not be added to the metastore" in caplog.text


# -- names and options --------------------------------------------------------------------------------
def test_identifier_rules(hive_metastore: hive_server.HiveMetastore, tmp_path: Path) -> None:
    cat = catalog(hive_metastore, tmp_path)
    db = unique("names")
    cat.create_database(db)
    before = set(cat.list_databases())
    for bad in ("Upper", "../escape", "a/b", "sys", ""):
        with pytest.raises(InvalidIdentifierError):
            cat.create_database(bad)
    with pytest.raises(InvalidIdentifierError, match="upper case"):
        cat.create_table(f"{db}.Orders", SCHEMA, primary_key=["id"])
    with pytest.raises(InvalidIdentifierError, match=r"\['ID'\]"):
        cat.create_table(f"{db}.t", [("ID", "BIGINT")], primary_key=["ID"])
    for bad in ("../t", "x$y", "a.b.c"):
        with pytest.raises(InvalidIdentifierError):
            cat.create_table(f"{db}.{bad}", SCHEMA, primary_key=["id"])
    # A name our rules allow but the metastore's do not (Hive 3: letters, digits, '_'): the
    # metastore's refusal is reported by name, and nothing is left behind on storage.
    with pytest.raises(InvalidIdentifierError, match="Hive Metastore refused"):
        cat.create_database("semi;colon")
    assert not (tmp_path / "semi;colon.db").exists()
    with pytest.raises(InvalidIdentifierError, match="Hive Metastore refused"):
        cat.create_table(f"{db}.'quoted'", SCHEMA, primary_key=["id"])
    assert not (tmp_path / f"{db}.db" / "'quoted'").exists()
    assert set(cat.list_databases()) == before and cat.list_tables(db) == []
    # Lookups fold case, as the metastore does.
    cat.create_table(f"{db}.orders", SCHEMA, primary_key=["id"])
    assert cat.table_exists(f"{db.upper()}.ORDERS")


def test_options_are_checked(hive_metastore: hive_server.HiveMetastore, tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match="'uri' is required"):
        stratalake.Catalog(str(tmp_path), {"metastore": "hive"})
    with pytest.raises(InvalidOptionError, match="thrift://host:port"):
        stratalake.Catalog(str(tmp_path), {"metastore": "hive", "uri": "http://127.0.0.1:9083"})
    for key, value in (("hive-conf-dir", "/etc/hive"), ("location-in-properties", "true"), ("table.type", "external")):
        with pytest.raises(InvalidOptionError, match=key):
            catalog(hive_metastore, tmp_path, **{key: value})
    with pytest.raises(InvalidOptionError, match=r"lock\.enabled"):
        catalog(hive_metastore, tmp_path, **{"lock.enabled": "yes"})
    cat = catalog(hive_metastore, tmp_path)
    db = unique("opts")
    cat.create_database(db)
    with pytest.raises(InvalidOptionError, match="'path'"):
        cat.create_table(f"{db}.t", SCHEMA, primary_key=["id"], options={"path": "/elsewhere"})
    with pytest.raises(InvalidOptionError, match="'location'"):
        cat.create_database(unique("loc"), properties={"location": "/elsewhere"})
    # Nobody listening: a clear error naming the address.
    port = hive_server.free_port()
    dead = stratalake.Catalog(str(tmp_path), {"metastore": "hive", "uri": f"thrift://127.0.0.1:{port}"})
    with pytest.raises(StrataLakeError, match=f"127.0.0.1:{port}"):
        dead.list_databases()


# -- the commit lock ----------------------------------------------------------------------------------
_HOLDER = textwrap.dedent(
    """
    import sys, time, stratalake
    uri, warehouse, db, table, seconds, ready = sys.argv[1:]
    cat = stratalake.Catalog(warehouse, {"metastore": "hive", "uri": uri, "lock.enabled": "true"})
    with cat.lock.hold(db, table):
        open(ready, "w").write(str(time.time()))
        time.sleep(float(seconds))
    print(time.time())
    """
)


def _holder(hms: hive_server.HiveMetastore, tmp_path: Path, db: str, seconds: float) -> tuple[subprocess.Popen[str], Path]:
    ready = tmp_path / f"ready-{next(_names)}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), str(ROOT)])}
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, hms.uri, str(tmp_path), db, "t", str(seconds), str(ready)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert proc.poll() is None, "the lock holder exited early"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return proc, ready


def test_lock_excludes_another_process(hive_metastore: hive_server.HiveMetastore, tmp_path: Path) -> None:
    db = unique("lock")
    holder, _ = _holder(hive_metastore, tmp_path, db, seconds=3)
    cat = catalog(hive_metastore, tmp_path, **{"lock.enabled": "true", "lock.acquire-timeout": "500 ms"})
    with pytest.raises(CommitConflictError, match=f"{db}.t"), cat.lock.hold(db, "t"):
        pass
    patient = catalog(hive_metastore, tmp_path, **{"lock.enabled": "true", "lock.check-max-sleep": "100 ms"})
    with patient.lock.hold(db, "t"):
        acquired = time.time()
    released = float(holder.communicate(timeout=30)[0].strip())
    assert acquired >= released - 0.05  # only once the other process let go
    with patient.lock.hold(db, "other"):  # another table's lock is independent
        pass


def test_lock_of_a_killed_holder_expires(hive_metastore: hive_server.HiveMetastore, tmp_path: Path) -> None:
    db = unique("dead")
    holder, _ = _holder(hive_metastore, tmp_path, db, seconds=600)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    cat = catalog(hive_metastore, tmp_path, **{"lock.enabled": "true", "lock.check-max-sleep": "500 ms"})
    started = time.monotonic()
    with cat.lock.hold(db, "t"):
        waited = time.monotonic() - started
    assert waited < LOCK_TIMEOUT_S * 4


def _write_many(uri: str, warehouse: str, identifier: str, worker: int, n: int) -> None:
    cat = stratalake.Catalog(warehouse, {"metastore": "hive", "uri": uri, "lock.enabled": "true"})
    for i in range(n):
        cat.get_table(identifier).write(rows(1, start=worker * 100 + i))


def test_locked_commits_from_two_processes(hive_metastore: hive_server.HiveMetastore, tmp_path: Path) -> None:
    cat = catalog(hive_metastore, tmp_path, **{"lock.enabled": "true"})
    db = unique("locked")
    cat.create_database(db)
    t = cat.create_table(f"{db}.t", SCHEMA, options={"bucket": "-1"})
    from stratalake.catalog.lock import LockedFileIO

    assert isinstance(t.file_io, LockedFileIO)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(hive_metastore.uri, str(tmp_path), f"{db}.t", w, 4)) for w in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
        assert p.exitcode == 0
    table = cat.get_table(f"{db}.t")
    assert table.read().num_rows == 8
    assert len(table.snapshots()) == 8
