"""The JDBC catalog on a real PostgreSQL: Paimon's tables, the Catalog API, the distributed lock
between processes, and pypaimon's JdbcCatalog on the same metastore.

The server is started by the ``pg_server`` fixture (tests/metastore/postgres.py); each test uses
its own ``catalog-key``, which is also what keeps their rows apart in the one database.
"""

from __future__ import annotations

import uuid

import psycopg
import pyarrow as pa
import pytest

import stratalake
from stratalake.catalog.jdbc import JdbcCatalog, JdbcConnectionError
from stratalake.exceptions import (
    CommitConflictError,
    DatabaseNotEmptyError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from tests.catalog import racy_store
from tests.catalog.jdbc_child import assert_all_committed, finish, spawn, start_together
from tests.metastore import postgres

pytestmark = pytest.mark.metastore_server

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def batch(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "v": [f"row {i}" for i in ids]})


@pytest.fixture
def opts(pg_server: postgres.Server) -> dict[str, str]:
    return {**pg_server.options(), "catalog-key": f"k{uuid.uuid4().hex[:12]}"}


def sql(server: postgres.Server, query: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with psycopg.connect(
        host=server.host,
        port=server.port,
        user=postgres.USER,
        password=postgres.PASSWORD,
        dbname=postgres.DATABASE,
    ) as conn:
        return sorted(tuple(r) for r in conn.execute(query, args or None).fetchall())


def test_catalog_api_and_paimon_tables(tmp_path, pg_server, opts):
    cat = stratalake.Catalog(str(tmp_path / "wh"), {**opts, "lock.enabled": "true"})
    assert isinstance(cat, JdbcCatalog) and cat.connection.dialect == "postgresql"
    key = opts["catalog-key"]
    cat.create_database("db", properties={"owner": "it's me"})
    cat.create_database("db2")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    t.write(batch(range(10)))
    cat.get_table("db.t").write(batch(range(5, 15)))
    assert cat.list_databases() == ["db", "db2"] and cat.list_tables("db") == ["t"]
    assert cat.database_properties("db") == {"owner": "it's me", "location": str(tmp_path / "wh" / "db.db")}
    # Paimon's columns (PostgreSQL's information schema) and rows.
    columns = sql(
        pg_server,
        "SELECT table_name, column_name, data_type, character_maximum_length, is_nullable "
        "FROM information_schema.columns WHERE table_name LIKE 'paimon_%'",
    )
    assert ("paimon_tables", "table_name", "character varying", 255, "NO") in columns
    assert ("paimon_database_properties", "property_value", "character varying", 1000, "YES") in columns
    assert ("paimon_distributed_locks", "lock_id", "character varying", 255, "NO") in columns
    assert ("paimon_distributed_locks", "acquired_at", "timestamp without time zone", None, "NO") in columns
    assert ("paimon_distributed_locks", "expire_time_seconds", "bigint", None, "NO") in columns
    assert sql(pg_server, "SELECT * FROM paimon_tables WHERE catalog_key = %s", (key,)) == [(key, "db", "t")]
    # rename across databases, alter, drop
    cat.rename_table("db.t", "db2.u")
    assert cat.list_tables("db") == [] and sorted(
        cat.get_table("db2.u").read().column("id").to_pylist()
    ) == list(range(15))
    cat.alter_table("db2.u", [stratalake.SchemaChange.set_option("snapshot.num-retained.max", "50")])
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table("db2.u", SCHEMA, primary_key=["id"])
    with pytest.raises(DatabaseNotEmptyError):
        cat.drop_database("db2")
    cat.drop_table("db2.u")
    with pytest.raises(TableNotFoundError):
        cat.get_table("db2.u")
    cat.drop_database("db2")
    cat.drop_database("db", cascade=True)
    assert cat.list_databases() == []
    assert sql(pg_server, "SELECT * FROM paimon_database_properties WHERE catalog_key = %s", (key,)) == []
    cat.close()


def test_wrong_password_is_a_clear_error(tmp_path, pg_server, opts):
    with pytest.raises(JdbcConnectionError, match=r"'jdbc\.password'") as info:
        stratalake.Catalog(str(tmp_path / "wh"), {**opts, "jdbc.password": "not-it"})
    assert "not-it" not in str(info.value) and "authentication failed" in str(info.value)


def test_hostile_names_are_bound_parameters(tmp_path, pg_server, opts):
    cat = stratalake.Catalog(str(tmp_path / "wh"), opts)
    name = "x'); DROP TABLE paimon_tables; --"
    cat.create_database(name)
    cat.create_table(f"{name}.{name}", SCHEMA, primary_key=["id"]).write(batch(range(2)))
    assert cat.list_tables(name) == [name]
    assert sql(
        pg_server,
        "SELECT database_name, table_name FROM paimon_tables WHERE catalog_key = %s",
        (opts["catalog-key"],),
    ) == [(name, name)]


def test_two_processes_commit_under_the_lock(tmp_path, pg_server, opts):
    warehouse = f"{racy_store.SCHEME}://{tmp_path / 'wh'}"
    lock_opts = {**opts, "lock.enabled": "true", "lock-check-max-sleep": "200 ms"}
    cat = stratalake.Catalog(warehouse, lock_opts)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, primary_key=["id"])
    n = 6
    go = str(tmp_path / "go")
    procs = [spawn("commit", warehouse, lock_opts, "db.t", str(start), str(n), go=go) for start in (0, n)]
    start_together(procs, go)
    for p in procs:
        assert finish(p).strip() == "done"
    table = cat.get_table("db.t")
    assert_all_committed(table, 2 * n)
    assert len([s for s in table.snapshot_manager.snapshots() if s.commit_kind == "APPEND"]) == 2 * n


def test_lock_expiry_and_owner_on_postgres(tmp_path, pg_server, opts):
    holder = stratalake.Catalog(
        str(tmp_path / "wh"), {**opts, "lock.enabled": "true", "lock-acquire-timeout": "60 s"}
    )
    waiter = stratalake.Catalog(
        str(tmp_path / "wh"),
        {**opts, "lock.enabled": "true", "lock-acquire-timeout": "1 s", "lock-check-max-sleep": "100 ms"},
    )
    assert isinstance(holder, JdbcCatalog) and isinstance(waiter, JdbcCatalog)
    assert holder.lock is not None and waiter.lock is not None
    lock_id = f"{opts['catalog-key']}.db.t"
    with holder.lock.hold("db", "t"):
        assert sql(
            pg_server,
            "SELECT lock_id, expire_time_seconds FROM paimon_distributed_locks WHERE lock_id = %s",
            (lock_id,),
        ) == [(lock_id, 60)]
        with pytest.raises(CommitConflictError, match=r"db\.t"), waiter.lock.hold("db", "t"):
            pass
        # Past its expiry (by PostgreSQL's clock) the row is taken over; the late holder's
        # release then leaves the new holder's row alone.
        sql(
            pg_server,
            "UPDATE paimon_distributed_locks SET acquired_at = acquired_at - interval '2 minutes' "
            "WHERE lock_id = %s RETURNING lock_id",
            (lock_id,),
        )
        assert waiter.lock.try_acquire(lock_id, "successor")
    assert sql(
        pg_server, "SELECT lock_owner FROM paimon_distributed_locks WHERE lock_id = %s", (lock_id,)
    ) == [("successor",)]
    assert waiter.lock.release(lock_id, "successor")


@pytest.mark.interop
def test_pypaimon_jdbc_catalog_on_postgres(tmp_path, pg_server, opts):
    from pypaimon import CatalogFactory, Schema

    warehouse = str(tmp_path / "wh")
    cat = stratalake.Catalog(warehouse, opts)
    cat.create_database("ours", properties={"team": "a"})
    cat.create_table("ours.t", SCHEMA, primary_key=["id"]).write(batch(range(12)))

    theirs = CatalogFactory.create({**opts, "warehouse": warehouse})
    assert theirs.list_databases() == ["ours"] and theirs.list_tables("ours") == ["t"]
    pt = theirs.get_table("ours.t")
    rb = pt.new_read_builder()
    assert sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).column("id").to_pylist()) == list(
        range(12)
    )

    theirs.create_database("mine", False, {"team": "b"})
    theirs.create_table(
        "mine.p", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options={"bucket": "1"}), False
    )
    wb = theirs.get_table("mine.p").new_batch_write_builder()
    write, commit = wb.new_write(), wb.new_commit()
    write.write_arrow(
        batch(range(4)).cast(pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())]))
    )
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()
    theirs.close()
    assert cat.list_databases() == ["mine", "ours"]
    assert cat.database_properties("mine")["team"] == "b"
    assert sorted(cat.get_table("mine.p").read().column("id").to_pylist()) == list(range(4))
