"""The JDBC catalog on SQLite: Paimon's catalog tables, the Catalog API, the distributed lock,
commits on a store without create-if-absent, and pypaimon's JdbcCatalog on the same metastore."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import time
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.catalog.jdbc import JdbcCatalog, JdbcConnectionError, parse_duration_ms
from stratalake.exceptions import (
    CommitConflictError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidIdentifierError,
    InvalidOptionError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from stratalake.io.fileio import AtomicCreateUnsupportedError
from tests.catalog import racy_store
from tests.catalog.jdbc_child import assert_all_committed, finish, spawn, start_together

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def options(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}", **extra}


def open_catalog(tmp_path: Path, **extra: str) -> JdbcCatalog:
    cat = stratalake.Catalog(str(tmp_path / "wh"), options(tmp_path, **extra))
    assert isinstance(cat, JdbcCatalog)
    return cat


def rows(tmp_path: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(tmp_path / "catalog.db") as conn:
        return sorted(conn.execute(sql).fetchall())


def batch(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "v": [f"row {i}" for i in ids]})


# -- Paimon's tables and the Catalog API -------------------------------------------------------


def test_paimon_tables_and_rows(tmp_path):
    cat = open_catalog(tmp_path, **{"lock.enabled": "true"})
    cat.create_database("db", properties={"owner": "ops"})
    cat.create_table("db.t", SCHEMA, primary_key=["id"])
    with sqlite3.connect(tmp_path / "catalog.db") as conn:
        columns = {
            t: [(c[1], c[2], c[3], c[5]) for c in conn.execute(f"PRAGMA table_info({t})")]
            for t in ("paimon_tables", "paimon_database_properties", "paimon_distributed_locks")
        }
    # name, type, not null, position in the primary key: Paimon's JdbcUtils and lock dialects.
    assert columns["paimon_tables"] == [
        ("catalog_key", "VARCHAR(255)", 1, 1),
        ("database_name", "VARCHAR(255)", 1, 2),
        ("table_name", "VARCHAR(255)", 1, 3),
    ]
    assert columns["paimon_database_properties"] == [
        ("catalog_key", "VARCHAR(255)", 1, 1),
        ("database_name", "VARCHAR(255)", 1, 2),
        ("property_key", "VARCHAR(255)", 0, 3),
        ("property_value", "VARCHAR(1000)", 0, 0),
    ]
    assert columns["paimon_distributed_locks"] == [
        ("lock_id", "VARCHAR(255)", 1, 1),
        ("acquired_at", "TIMESTAMP", 1, 0),
        ("expire_time_seconds", "BIGINT", 1, 0),
        ("lock_owner", "VARCHAR(36)", 0, 0),
    ]
    assert rows(tmp_path, "SELECT * FROM paimon_tables") == [("jdbc", "db", "t")]
    assert rows(tmp_path, "SELECT * FROM paimon_database_properties") == [
        ("jdbc", "db", "exists", "true"),
        ("jdbc", "db", "location", str(tmp_path / "wh" / "db.db")),
        ("jdbc", "db", "owner", "ops"),
    ]
    # Data where Paimon keeps it; the lock table is empty after the create's commit.
    assert (tmp_path / "wh" / "db.db" / "t" / "schema" / "schema-0").exists()
    assert rows(tmp_path, "SELECT * FROM paimon_distributed_locks") == []


def test_databases(tmp_path):
    cat = open_catalog(tmp_path)
    assert cat.list_databases() == []
    cat.create_database("a", properties={"k": "v"})
    cat.create_database("b")
    cat.create_database("b", ignore_if_exists=True)
    with pytest.raises(DatabaseAlreadyExistsError, match="'b'"):
        cat.create_database("b")
    assert cat.list_databases() == ["a", "b"]
    assert cat.database_exists("a") and not cat.database_exists("c")
    assert cat.database_properties("a") == {"k": "v", "location": str(tmp_path / "wh" / "a.db")}
    with pytest.raises(InvalidOptionError, match="'location'"):
        cat.create_database("c", properties={"location": "/elsewhere"})
    assert not cat.database_exists("c")
    cat.create_table("a.t", SCHEMA, primary_key=["id"])
    with pytest.raises(DatabaseNotEmptyError, match=r"\['t'\]"):
        cat.drop_database("a")
    assert cat.table_exists("a.t")
    cat.drop_database("a", cascade=True)
    assert cat.list_databases() == ["b"]
    assert not (tmp_path / "wh" / "a.db" / "t").exists()
    with pytest.raises(DatabaseNotFoundError, match="'a'"):
        cat.drop_database("a")
    cat.drop_database("a", ignore_if_not_exists=True)
    assert rows(tmp_path, "SELECT DISTINCT database_name FROM paimon_database_properties") == [("b",)]


def test_tables(tmp_path):
    cat = open_catalog(tmp_path)
    cat.create_database("db")
    cat.create_database("other")
    with pytest.raises(DatabaseNotFoundError, match="'nodb'"):
        cat.create_table("nodb.t", SCHEMA, primary_key=["id"])
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    assert t.write(batch(range(10))) == 1
    with pytest.raises(TableAlreadyExistsError, match="db\\.t"):
        cat.create_table("db.t", SCHEMA, primary_key=["id"])
    assert cat.create_table("db.t", SCHEMA, primary_key=["id"], ignore_if_exists=True).read().num_rows == 10
    cat.create_table("db.t2", SCHEMA)
    assert cat.list_tables("db") == ["t", "t2"]
    with pytest.raises(DatabaseNotFoundError):
        cat.list_tables("nodb")
    # alter: a new schema version
    t = cat.alter_table("db.t", [stratalake.SchemaChange.add_column("w", "INT")])
    assert list(t.schema().field_names) == ["id", "v", "w"]
    # rename within and across databases: the row and the directory move, as Paimon's
    cat.rename_table("db.t", "db.u")
    assert cat.list_tables("db") == ["t2", "u"]
    assert not (tmp_path / "wh" / "db.db" / "t").exists()
    assert cat.get_table("db.u").read().num_rows == 10
    cat.rename_table("db.u", "other.u")
    assert cat.list_tables("other") == ["u"] and cat.get_table("other.u").read().num_rows == 10
    with pytest.raises(TableAlreadyExistsError, match="db\\.t2"):
        cat.rename_table("other.u", "db.t2")
    with pytest.raises(TableNotFoundError, match="db\\.nope"):
        cat.rename_table("db.nope", "db.x")
    with pytest.raises(DatabaseNotFoundError, match="'nodb'"):
        cat.rename_table("other.u", "nodb.u")
    assert cat.get_table("other.u").read().num_rows == 10
    # drop: the row and the files go
    cat.drop_table("other.u")
    assert not cat.table_exists("other.u") and not (tmp_path / "wh" / "other.db" / "u").exists()
    with pytest.raises(TableNotFoundError, match="other\\.u"):
        cat.drop_table("other.u")
    cat.drop_table("other.u", ignore_if_not_exists=True)
    with pytest.raises(TableNotFoundError, match="other\\.u"):
        cat.get_table("other.u")


def test_what_is_registered_is_what_exists(tmp_path):
    cat = open_catalog(tmp_path)
    cat.create_database("db")
    # A table directory the catalog does not register (a filesystem catalog's) is not a table here,
    # and creating that name refuses to take over its files.
    fs = stratalake.Catalog(str(tmp_path / "wh"))
    fs.create_database("db")
    fs.create_table("db.stray", SCHEMA, primary_key=["id"]).write(batch(range(3)))
    assert cat.list_tables("db") == [] and not cat.table_exists("db.stray")
    with pytest.raises(TableAlreadyExistsError, match="does not register"):
        cat.create_table("db.stray", SCHEMA, primary_key=["id"])
    assert fs.get_table("db.stray").read().num_rows == 3
    # A registered table whose files are gone is reported as such.
    cat.create_table("db.gone", SCHEMA, primary_key=["id"])
    fs.drop_table("db.gone")
    with pytest.raises(TableNotFoundError, match="holds no schema"):
        cat.get_table("db.gone")


def test_catalog_key_scopes_rows(tmp_path):
    a = open_catalog(tmp_path)
    b = open_catalog(tmp_path, **{"catalog-key": "other"})
    a.create_database("db")
    a.create_table("db.t", SCHEMA, primary_key=["id"])
    assert b.list_databases() == [] and not b.table_exists("db.t")
    b.create_database("db")
    assert b.list_tables("db") == []
    assert rows(
        tmp_path,
        "SELECT catalog_key, database_name FROM paimon_database_properties WHERE property_key = 'exists'",
    ) == [
        ("jdbc", "db"),
        ("other", "db"),
    ]


def test_system_database_is_reserved(tmp_path):
    with pytest.raises(InvalidIdentifierError, match="sys"):
        open_catalog(tmp_path).create_database("sys")


def test_options_refused_by_name(tmp_path):
    wh = str(tmp_path / "wh")
    with pytest.raises(InvalidOptionError, match="'uri' is required"):
        stratalake.Catalog(wh, {"metastore": "jdbc"})
    with pytest.raises(InvalidOptionError, match=r"mysql.*jdbc:sqlite:<path> or jdbc:postgresql"):
        stratalake.Catalog(wh, {"metastore": "jdbc", "uri": "jdbc:mysql://h/db?password=secret"})
    with pytest.raises(InvalidOptionError, match="password=\\*\\*\\*"):
        stratalake.Catalog(wh, {"metastore": "jdbc", "uri": "jdbc:mysql://h/db?password=secret"})
    with pytest.raises(InvalidOptionError, match="URL parameters are not honoured"):
        stratalake.Catalog(wh, {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path}/c.db?journal_mode=WAL"})
    with pytest.raises(InvalidOptionError, match=r"jdbc\.journal_mode"):
        stratalake.Catalog(wh, options(tmp_path, **{"jdbc.journal_mode": "wal"}))
    with pytest.raises(InvalidOptionError, match=r"'lock.type' = 'zookeeper'"):
        stratalake.Catalog(wh, options(tmp_path, **{"lock.type": "zookeeper"}))
    with pytest.raises(InvalidOptionError, match="'lock-acquire-timeout' = 'soon'"):
        stratalake.Catalog(wh, options(tmp_path, **{"lock-acquire-timeout": "soon"}))
    with pytest.raises(InvalidOptionError, match=r"'lock\.enabled' = 'yes'"):
        stratalake.Catalog(wh, options(tmp_path, **{"lock.enabled": "yes"}))
    with pytest.raises(InvalidOptionError, match=r"unknownprop.*PostgreSQL"):
        stratalake.Catalog(wh, {"metastore": "jdbc", "uri": "jdbc:postgresql://127.0.0.1:1/db?unknownprop=1"})
    with pytest.raises(JdbcConnectionError, match=r"'uri' = 'jdbc:sqlite:.*nodir/c\.db'"):
        stratalake.Catalog(wh, {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'nodir' / 'c.db'}"})
    assert not (tmp_path / "catalog.db").exists()
    assert parse_duration_ms("k", "8 min") == 480_000 and parse_duration_ms("k", "30s") == 30_000
    assert parse_duration_ms("k", "250") == 250


# -- names --------------------------------------------------------------------------------------

HOSTILE = ["it's", 'say "hi"', "a; DROP TABLE paimon_tables; --", "x' OR '1'='1", "Robert'); --"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_stored_as_data(tmp_path, name):
    cat = open_catalog(tmp_path, **{"lock.enabled": "true"})
    cat.create_database(name, properties={name: name})
    cat.create_table(f"{name}.{name}", SCHEMA, primary_key=["id"])
    cat.get_table(f"{name}.{name}").write(batch(range(2)))
    assert cat.list_databases() == [name] and cat.list_tables(name) == [name]
    assert cat.database_properties(name)[name] == name
    assert rows(tmp_path, "SELECT * FROM paimon_tables") == [("jdbc", name, name)]
    assert (tmp_path / "wh" / f"{name}.db" / name / "snapshot" / "snapshot-1").exists()
    cat.drop_database(name, cascade=True)
    assert cat.list_databases() == []


@pytest.mark.parametrize("name", ["..", "a/b", "../x", "a.b", "", "%2e%2e", "x\\y"])
def test_names_that_would_escape_are_refused(tmp_path, name):
    cat = open_catalog(tmp_path)
    cat.create_database("db")
    with pytest.raises(InvalidIdentifierError):
        cat.create_database(name)
    with contextlib.suppress(InvalidIdentifierError):  # reading checks fewer rules than creating
        assert not cat.database_exists(name)
    with pytest.raises(InvalidIdentifierError):
        cat.create_table(f"db.{name}", SCHEMA)
    cat.create_table("db.t", SCHEMA, primary_key=["id"])
    with pytest.raises(InvalidIdentifierError):
        cat.rename_table("db.t", f"db.{name}")
    assert cat.list_databases() == ["db"] and cat.list_tables("db") == ["t"]
    assert sorted(p.name for p in (tmp_path / "wh").iterdir()) == ["db.db"]


# -- the lock -----------------------------------------------------------------------------------


@pytest.mark.parametrize("store", ["local", "racy"])
def test_two_processes_commit_under_the_lock(tmp_path, store):
    """Every commit of two concurrent writers lands, on the local disk and on a store whose
    publish is check-then-move (racy://, with a pause in the window)."""
    warehouse = str(tmp_path / "wh") if store == "local" else f"{racy_store.SCHEME}://{tmp_path / 'wh'}"
    opts = options(tmp_path, **{"lock.enabled": "true", "lock-check-max-sleep": "200 ms"})
    cat = stratalake.Catalog(warehouse, opts)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    n = 6
    go = str(tmp_path / "go")
    procs = [spawn("commit", warehouse, opts, "db.t", str(start), str(n), go=go) for start in (0, n)]
    start_together(procs, go)
    for p in procs:
        assert finish(p).strip() == "done"
    table = cat.get_table("db.t")
    assert_all_committed(table, 2 * n)
    appends = [s for s in table.snapshot_manager.snapshots() if s.commit_kind == "APPEND"]
    assert len(appends) == 2 * n
    assert rows(tmp_path, "SELECT * FROM paimon_distributed_locks") == []


def test_control_a_lock_that_excludes_no_one_loses_commits_on_the_racy_store(tmp_path):
    """The control of the test above: racy:// really races, so the lock is what saves commits."""
    for attempt in range(3):  # two processes that never overlap would lose nothing: try again
        warehouse = f"{racy_store.SCHEME}://{tmp_path / str(attempt) / 'wh'}"
        opts = {
            "metastore": "jdbc",
            "uri": f"jdbc:sqlite:{tmp_path / f'{attempt}.db'}",
            "lock.enabled": "true",
        }
        cat = stratalake.Catalog(warehouse, opts)
        cat.create_database("db")
        cat.create_table("db.t", SCHEMA, primary_key=["id"])
        go = str(tmp_path / f"go{attempt}")
        procs = [
            spawn("commit-unlocked", warehouse, opts, "db.t", str(start), "6", go=go) for start in (0, 6)
        ]
        start_together(procs, go)
        for p in procs:
            finish(p)
        if len(set(cat.get_table("db.t").read().column("id").to_pylist())) < 12:
            return
    pytest.fail("two unexcluded writers on racy:// lost no commit in 3 attempts: the store does not race")


def test_without_the_lock_a_store_without_conditional_writes_refuses_commits(tmp_path):
    warehouse = f"{racy_store.SCHEME}://{tmp_path / 'wh'}"
    cat = stratalake.Catalog(warehouse, options(tmp_path, **{"lock.enabled": "false"}))
    cat.create_database("db")
    with pytest.raises(AtomicCreateUnsupportedError, match=r"'lock\.enabled'"):
        cat.create_table("db.t", SCHEMA, primary_key=["id"])
    assert (
        cat.list_tables("db") == [] and not (tmp_path / "wh" / "db.db" / "t" / "schema" / "schema-0").exists()
    )
    locked = stratalake.Catalog(warehouse, options(tmp_path, **{"lock.enabled": "true"}))
    locked.create_table("db.t", SCHEMA, primary_key=["id"]).write(batch(range(3)))
    with pytest.raises(AtomicCreateUnsupportedError, match=r"'lock\.enabled'"):
        cat.get_table("db.t").write(batch(range(3, 6)))
    assert [s.id for s in locked.get_table("db.t").snapshot_manager.snapshots()] == [1]


def test_lock_rows_as_paimon_and_timeout_names_the_table(tmp_path):
    # The holder's row expires after its own lock-acquire-timeout (30 s), the waiter gives up after 1 s.
    cat = open_catalog(tmp_path, **{"lock.enabled": "true", "lock-acquire-timeout": "30 s"})
    other = open_catalog(
        tmp_path, **{"lock.enabled": "true", "lock-acquire-timeout": "1 s", "lock-check-max-sleep": "100 ms"}
    )
    assert cat.lock is not None and other.lock is not None
    with cat.lock.hold("db", "t"):
        lock_id, expire = rows(tmp_path, "SELECT lock_id, expire_time_seconds FROM paimon_distributed_locks")[
            0
        ]
        assert (lock_id, expire) == ("jdbc.db.t", 30)
        started = time.monotonic()
        with (
            pytest.raises(CommitConflictError, match=r"table db\.t.*'lock-acquire-timeout' = 1000 ms"),
            other.lock.hold("db", "t"),
        ):
            pass
        assert 1.0 <= time.monotonic() - started < 5
        with other.lock.hold("db", "t2"):  # another table's lock is another row
            pass
    assert rows(tmp_path, "SELECT * FROM paimon_distributed_locks") == []


def test_a_late_holder_does_not_release_its_successors_lock(tmp_path):
    cat = open_catalog(tmp_path, **{"lock.enabled": "true", "lock-acquire-timeout": "1 s"})
    assert cat.lock is not None
    assert cat.lock.try_acquire("jdbc.db.t", "first")
    # Backdate the first holder's row past its expiry, as time would.
    with sqlite3.connect(tmp_path / "catalog.db") as conn:
        conn.execute("UPDATE paimon_distributed_locks SET acquired_at = datetime('now', '-10 seconds')")
    assert cat.lock.try_acquire("jdbc.db.t", "second")
    assert not cat.lock.release("jdbc.db.t", "first")
    assert rows(tmp_path, "SELECT lock_owner FROM paimon_distributed_locks") == [("second",)]


def test_a_killed_holder_expires_and_nothing_is_lost(tmp_path):
    opts = options(tmp_path, **{"lock.enabled": "true", "lock-check-max-sleep": "200 ms"})
    cat = stratalake.Catalog(str(tmp_path / "wh"), {**opts, "lock-acquire-timeout": "20 s"})
    cat.create_database("db")
    table = cat.create_table("db.t", SCHEMA, primary_key=["id"])
    table.write(batch(range(5)))
    # The dying writer holds the lock with a 2 s expiry (its own lock-acquire-timeout, as Paimon).
    holder = spawn("hold", str(tmp_path / "wh"), {**opts, "lock-acquire-timeout": "2 s"}, "db.t")
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    assert rows(tmp_path, "SELECT lock_id FROM paimon_distributed_locks") == [("jdbc.db.t",)]
    started = time.monotonic()
    assert table.write(batch(range(5, 10))) == 2
    waited = time.monotonic() - started
    assert 1.0 < waited < 15, waited  # it waited for the expiry (SQLite counts whole seconds)
    assert_all_committed(cat.get_table("db.t"), 10)
    assert rows(tmp_path, "SELECT * FROM paimon_distributed_locks") == []


# -- pypaimon's JdbcCatalog on the same metastore -----------------------------------------------


@pytest.mark.interop
def test_pypaimon_reads_ours_and_we_read_pypaimons(tmp_path):
    from pypaimon import CatalogFactory, Schema

    opts = options(tmp_path)
    cat = open_catalog(tmp_path)
    cat.create_database("ours", properties={"team": "a"})
    cat.create_table("ours.t", SCHEMA, primary_key=["id"], options={"bucket": "2"}).write(batch(range(20)))
    cat.get_table("ours.t").write(batch(range(10, 30)))

    theirs = CatalogFactory.create({**opts, "warehouse": str(tmp_path / "wh")})
    assert type(theirs).__name__ == "JdbcCatalog"
    assert theirs.list_databases() == ["ours"] and theirs.list_tables("ours") == ["t"]
    assert theirs.get_database("ours").options["team"] == "a"
    pt = theirs.get_table("ours.t")
    rb = pt.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert sorted(got.column("id").to_pylist()) == list(range(30))

    theirs.create_database("mine", False, {"team": "b"})
    theirs.create_table(
        "mine.p", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options={"bucket": "1"}), False
    )
    pt = theirs.get_table("mine.p")
    wb = pt.new_batch_write_builder()
    write, commit = wb.new_write(), wb.new_commit()
    write.write_arrow(
        batch(range(7)).cast(pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())]))
    )
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()
    theirs.close()

    assert cat.list_databases() == ["mine", "ours"] and cat.list_tables("mine") == ["p"]
    assert cat.database_properties("mine") == {"team": "b", "location": str(tmp_path / "wh" / "mine.db")}
    assert sorted(cat.get_table("mine.p").read().column("id").to_pylist()) == list(range(7))
    # What we rename and drop, pypaimon no longer finds (and the other way round).
    synced = "SELECT DISTINCT database_name, table_name FROM paimon_table_properties"
    assert rows(tmp_path, synced) == [("mine", "p")]  # pypaimon's sync-all-properties (default on)
    cat.rename_table("mine.p", "mine.q")
    assert rows(tmp_path, synced) == [("mine", "q")]  # the synced properties follow, as pypaimon's rename
    again = CatalogFactory.create({**opts, "warehouse": str(tmp_path / "wh")})
    assert again.list_tables("mine") == ["q"]
    assert again.get_table("mine.q").table_schema.primary_keys == ["id"]
    again.drop_table("ours.t", False)
    again.close()
    assert cat.list_tables("ours") == [] and not (tmp_path / "wh" / "ours.db" / "t").exists()
    cat.drop_table("mine.q")
    assert rows(tmp_path, synced) == []
