"""Paimon's partition lifecycle on a real Hive Metastore: the ``done-partition`` and ``mark-event``
mark-done actions (AddDonePartitionAction, MarkPartitionDoneEventAction) and ``repair``
(HiveCatalog.repairCatalog / repairDatabase / repairTable)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from stratalake.catalog.hive import HiveCatalog
from stratalake.exceptions import DatabaseNotFoundError, InvalidOptionError, TableNotFoundError
from tests.metastore import hive_server
from tests.metastore.test_hive_catalog import catalog, hive_server_path, unique

pytestmark = pytest.mark.metastore_server

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("hr", pa.int32())])
PARTITIONED = {"metastore.partitioned-table": "true"}


def _rows(*parts: tuple[str, int]) -> pa.Table:
    return pa.table(
        {"id": list(range(len(parts))), "dt": [p[0] for p in parts], "hr": [p[1] for p in parts]}, schema=SCHEMA
    )


def _create(cat: HiveCatalog, name: str, **options: str) -> None:
    cat.create_table(name, SCHEMA, primary_key=["id", "dt", "hr"], partition_keys=["dt", "hr"], options=options)


def _marked(cat: HiveCatalog, db: str, table: str, spec: dict[str, str]) -> bool:
    load_done = cat.client.types.PartitionEventType.LOAD_DONE
    return bool(cat.client.call("isPartitionMarkedForEvent", db, table, spec, load_done))


def test_done_partition_and_mark_event_act_on_the_metastore(
    hive_metastore: hive_server.HiveMetastore, tmp_path: Path
) -> None:
    cat = catalog(hive_metastore, tmp_path)
    db = unique("done")
    cat.create_database(db)
    _create(cat, f"{db}.t", **PARTITIONED, **{"partition.mark-done-action": "success-file,done-partition,mark-event"})
    t = cat.get_table(f"{db}.t")
    t.write(_rows(("2024-01-01", 10), ("2024-01-01", 11), ("a/b", 1)))
    before = sorted(cat.client.call("get_partition_names", db, "t", -1))
    assert before == ["dt=2024-01-01/hr=10", "dt=2024-01-01/hr=11", "dt=a%2Fb/hr=1"]

    assert t.mark_partitions_done([{"dt": "2024-01-01", "hr": 10}, {"dt": "a/b", "hr": 1}]) == [
        "dt=2024-01-01/hr=10",
        "dt=a%2Fb/hr=1",
    ]
    # done-partition: a partition whose last value has the '.done' suffix, located as Paimon's
    # createPartitions locates it (no directory is made for it).
    names = sorted(cat.client.call("get_partition_names", db, "t", -1))
    assert names == sorted([*before, "dt=2024-01-01/hr=10.done", "dt=a%2Fb/hr=1.done"])
    done = cat.client.call("get_partition", db, "t", ["a/b", "1.done"])
    assert hive_server_path(done.sd.location) == f"{t.location}/dt=a%2Fb/hr=1.done"
    assert done.sd.inputFormat == "org.apache.paimon.hive.mapred.PaimonInputFormat"
    # mark-event: the LOAD_DONE event of exactly the partitions marked.
    assert _marked(cat, db, "t", {"dt": "2024-01-01", "hr": "10"})
    assert _marked(cat, db, "t", {"dt": "a/b", "hr": "1"})
    assert not _marked(cat, db, "t", {"dt": "2024-01-01", "hr": "11"})
    # t$partitions reports the events as Paimon's HiveCatalog.listPartitions does ('done').
    done_column = {r["partition"]: r["done"] for r in t.system_table("partitions").to_pylist()}
    assert done_column == {"dt=2024-01-01/hr=10": True, "dt=2024-01-01/hr=11": False, "dt=a/b/hr=1": True}
    # success-file ran too, and the table's data is untouched.
    assert (Path(t.location) / "dt=2024-01-01" / "hr=10" / "_SUCCESS").is_file()
    assert t.read().num_rows == 3
    # Marking again is harmless (the done partition exists already).
    t.mark_partitions_done([{"dt": "2024-01-01", "hr": 10}])
    assert len(cat.client.call("get_partition_names", db, "t", -1)) == 5

    # A table the metastore lost is named, with how to register it again; nothing is marked.
    cat.client.call("drop_table", db, "t", False)
    with pytest.raises(TableNotFoundError, match=rf"CALL sys\.repair\('{db}\.t'\)"):
        t.mark_partitions_done([{"dt": "2024-01-01", "hr": 11}])
    assert not (Path(t.location) / "dt=2024-01-01" / "hr=11" / "_SUCCESS").exists()


@pytest.mark.parametrize("action", ["done-partition", "mark-event"])
def test_metastore_actions_need_the_partitioned_table_option(
    hive_metastore: hive_server.HiveMetastore, tmp_path: Path, action: str
) -> None:
    cat = catalog(hive_metastore, tmp_path)
    db = unique("nopart")
    cat.create_database(db)
    _create(cat, f"{db}.t", **{"partition.mark-done-action": f"success-file,{action}"})
    t = cat.get_table(f"{db}.t")
    t.write(_rows(("d", 1)))
    with pytest.raises(InvalidOptionError, match=f"'{action}' needs the table option 'metastore.partitioned-table'"):
        t.mark_partitions_done([{"dt": "d", "hr": 1}])
    assert not list(Path(t.location).rglob("_SUCCESS"))  # nothing marked


def test_repair_table_recreates_the_entry_and_its_partitions(
    hive_metastore: hive_server.HiveMetastore, tmp_path: Path
) -> None:
    cat = catalog(hive_metastore, tmp_path)
    db = unique("repair")
    cat.create_database(db)
    _create(cat, f"{db}.t", **PARTITIONED, bucket="2")
    cat.get_table(f"{db}.t").write(_rows(("d1", 1), ("d2", 2)))
    cat.get_table(f"{db}.t").write(_rows(("", 3)))  # a blank value: the default partition
    registered = cat.client.call("get_table", db, "t")
    cat.client.call("drop_table", db, "t", False)  # the metastore lost it; storage keeps it
    assert not cat.table_exists(f"{db}.t")

    cat.repair(f"{db}.t")
    hms = cat.client.call("get_table", db, "t")
    assert hms.parameters["table_type"] == "PAIMON" and hms.parameters["bucket"] == "2"
    assert hms.sd.cols == registered.sd.cols and hms.partitionKeys == registered.partitionKeys
    assert hive_server_path(hms.sd.location) == hive_server_path(registered.sd.location)
    names = sorted(cat.client.call("get_partition_names", db, "t", -1))
    assert names == ["dt=__DEFAULT_PARTITION__/hr=3", "dt=d1/hr=1", "dt=d2/hr=2"]
    assert cat.get_table(f"{db}.t").read().num_rows == 3

    # An entry out of step with storage (a parameter lost, a partition dropped) is brought back.
    hms.parameters.pop("bucket")
    cat.client.call("alter_table", db, "t", hms)
    cat.client.call("drop_partition", db, "t", ["d1", "1"], False)
    cat.repair(f"{db}.t")
    assert cat.client.call("get_table", db, "t").parameters["bucket"] == "2"
    assert len(cat.client.call("get_partition_names", db, "t", -1)) == 3

    with pytest.raises(TableNotFoundError, match="no table schema"):
        cat.repair(f"{db}.nosuch")
    with pytest.raises(DatabaseNotFoundError, match="repair the database instead"):
        cat.repair("nosuchdb.t")


def test_repair_database_and_catalog_recreate_what_storage_holds(
    hive_metastore: hive_server.HiveMetastore, tmp_path: Path
) -> None:
    cat = catalog(hive_metastore, tmp_path)
    dbs = [unique("rdb"), unique("rdb")]
    for db in dbs:
        cat.create_database(db)
        _create(cat, f"{db}.a", **PARTITIONED)
        cat.get_table(f"{db}.a").write(_rows(("d", 1)))
        cat.create_table(f"{db}.b", pa.schema([("id", pa.int64())]), primary_key=["id"])
    (tmp_path / f"{dbs[0]}.db" / "not_a_table").mkdir()  # no schema: not repaired, as Paimon
    for db in dbs:
        cat.client.call("drop_database", db, False, True)  # entries gone, directories kept
        assert not cat.database_exists(db)

    cat.repair(dbs[0])
    assert cat.list_tables(dbs[0]) == ["a", "b"] and not cat.database_exists(dbs[1])
    assert cat.client.call("get_partition_names", dbs[0], "a", -1) == ["dt=d/hr=1"]
    assert hive_server_path(cat.client.call("get_database", dbs[0]).locationUri) == str(tmp_path / f"{dbs[0]}.db")

    cat.repair("")  # the whole catalog: every <db>.db directory of the warehouse
    assert cat.list_tables(dbs[1]) == ["a", "b"]
    assert cat.get_table(f"{dbs[1]}.a").read().num_rows == 1
