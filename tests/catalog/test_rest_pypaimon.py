"""pypaimon's ``RESTCatalog`` (the REST client Paimon users have in Python) against stratalake's
REST server: the proof that the server follows Paimon's protocol.

Both ways: pypaimon creates, writes (committing through the server's ``commit`` endpoint, as its
``CatalogSnapshotCommit`` does) and stratalake reads, through the filesystem catalog on the same
warehouse and through its REST client; stratalake creates and writes, and pypaimon lists, loads
(with the latest snapshot from the ``snapshot`` endpoint) and reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from stratalake import SchemaChange
from stratalake.server import RestCatalogServer

pypaimon = pytest.importorskip("pypaimon")
from pypaimon import CatalogFactory, Schema  # noqa: E402

pytestmark = pytest.mark.interop

TOKEN = "interop-token"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RestCatalogServer]:
    with RestCatalogServer(stratalake.Catalog(str(tmp_path)), token=TOKEN) as srv:
        yield srv


@pytest.fixture
def paimon(server: RestCatalogServer) -> Any:
    return CatalogFactory.create(
        {
            "metastore": "rest",
            "uri": server.url,
            "warehouse": "lake",
            "token.provider": "bear",
            "token": TOKEN,
        }
    )


@pytest.fixture
def ours(server: RestCatalogServer) -> stratalake.Catalog:
    return stratalake.Catalog(
        "lake", {"metastore": "rest", "uri": server.url, "token.provider": "bear", "token": TOKEN}
    )


def paimon_write(table: Any, data: pa.Table) -> None:
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    write.write_arrow(data)
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()


def paimon_read(table: Any) -> list[dict[str, Any]]:
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()


def by_id(rows: list[dict[str, Any]], key: str = "id") -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r[key])


def test_pypaimon_creates_and_writes_stratalake_reads(
    paimon: Any, ours: stratalake.Catalog, tmp_path: Path
) -> None:
    paimon.create_database("pdb", False)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
    paimon.create_table(
        "pdb.t",
        Schema.from_pyarrow_schema(
            schema, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "2"}
        ),
        False,
    )
    t = paimon.get_table("pdb.t")
    paimon_write(t, pa.table({"dt": ["a", "a", "b"], "id": [1, 2, 3], "v": ["x", "y", "z"]}, schema=schema))
    paimon_write(paimon.get_table("pdb.t"), pa.table({"dt": ["a"], "id": [2], "v": ["Y"]}, schema=schema))
    want = [{"dt": "a", "id": 1, "v": "x"}, {"dt": "a", "id": 2, "v": "Y"}, {"dt": "b", "id": 3, "v": "z"}]
    assert by_id(ours.get_table("pdb.t").read().to_pylist()) == want
    fs = stratalake.Catalog(str(tmp_path)).get_table("pdb.t")
    assert by_id(fs.read().to_pylist()) == want
    assert fs.latest_snapshot().id == 2  # type: ignore[union-attr]
    assert fs.schema().partition_keys == ("dt",) and fs.schema().primary_keys == ("dt", "id")
    assert ours.list_databases() == ["pdb"] and ours.list_tables("pdb") == ["t"]
    # pypaimon sees its own rows too (latest snapshot from the server's snapshot endpoint).
    assert by_id(paimon_read(paimon.get_table("pdb.t"))) == want
    snap = paimon.load_snapshot("pdb.t")
    assert snap.snapshot.id == 2 and snap.record_count == 4
    parts = paimon.list_partitions_paged("pdb.t")
    assert sorted(p.spec["dt"] for p in parts.elements) == ["a", "b"]


def test_stratalake_creates_and_writes_pypaimon_reads(paimon: Any, ours: stratalake.Catalog) -> None:
    ours.create_database("sdb")
    t = ours.create_table(
        "sdb.orders", [("id", "BIGINT"), ("v", "STRING")], primary_key=["id"], options={"bucket": "1"}
    )
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    t.write(pa.table({"id": [3], "v": ["C"]}))
    ours.create_table("sdb.log", pa.schema([("id", pa.int64()), ("msg", pa.string())])).write(
        pa.table({"id": [7], "msg": ["hello"]})
    )
    assert paimon.list_databases() == ["sdb"]
    assert sorted(paimon.list_tables("sdb")) == ["log", "orders"]
    assert by_id(paimon_read(paimon.get_table("sdb.orders"))) == [
        {"id": 1, "v": "a"},
        {"id": 2, "v": "b"},
        {"id": 3, "v": "C"},
    ]
    assert paimon_read(paimon.get_table("sdb.log")) == [{"id": 7, "msg": "hello"}]
    # pypaimon writes on top of stratalake's snapshots; stratalake reads the result.
    paimon_write(paimon.get_table("sdb.orders"), pa.table({"id": [4], "v": ["d"]}, schema=t.arrow_schema()))
    assert [r["id"] for r in by_id(ours.get_table("sdb.orders").read().to_pylist())] == [1, 2, 3, 4]


def test_pypaimon_catalog_operations(paimon: Any, ours: stratalake.Catalog) -> None:
    from pypaimon.catalog.catalog_exception import (
        DatabaseAlreadyExistException,
        DatabaseNotExistException,
        TableAlreadyExistException,
        TableNotExistException,
    )
    from pypaimon.schema.schema_change import SchemaChange as PaimonChange

    paimon.create_database("d", False)
    with pytest.raises(DatabaseAlreadyExistException):
        paimon.create_database("d", False)
    paimon.create_database("d", True)
    with pytest.raises(DatabaseNotExistException):
        paimon.get_database("nope")
    assert paimon.get_database("d").name == "d"
    schema = Schema.from_pyarrow_schema(
        pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"]
    )
    paimon.create_table("d.t", schema, False)
    with pytest.raises(TableAlreadyExistException):
        paimon.create_table("d.t", schema, False)
    with pytest.raises(TableNotExistException):
        paimon.get_table("d.nope")
    paimon.alter_table(
        "d.t",
        [
            PaimonChange.add_column("n", pypaimon.schema.data_types.AtomicType("INT")),
            PaimonChange.set_option("k1", "v1"),
        ],
        False,
    )
    s = ours.get_table("d.t").schema()
    assert s.field_names == ("id", "v", "n") and s.options["k1"] == "v1"
    ours.alter_table("d.t", [SchemaChange.remove_option("k1")])
    assert "k1" not in paimon.get_table("d.t").table_schema.options
    paimon.rename_table("d.t", "d.u")
    assert ours.list_tables("d") == ["u"]
    paimon.drop_table("d.u", False)
    assert ours.list_tables("d") == []
    paimon.drop_database("d", False)
    assert ours.list_databases() == []


def test_pypaimon_tags_through_the_server(
    paimon: Any, ours: stratalake.Catalog, server: RestCatalogServer
) -> None:
    from pypaimon.catalog.catalog_exception import TagAlreadyExistException, TagNotExistException

    ours.create_database("d")
    t = ours.create_table("d.t", [("id", "BIGINT"), ("v", "STRING")], primary_key=["id"])
    t.write(pa.table({"id": [1], "v": ["a"]}))
    t.write(pa.table({"id": [2], "v": ["b"]}))
    paimon.create_tag("d.t", "first", snapshot_id=1)
    paimon.create_tag("d.t", "latest", time_retained="1 d")
    with pytest.raises(TagAlreadyExistException):
        paimon.create_tag("d.t", "first", snapshot_id=2)
    paimon.create_tag("d.t", "first", snapshot_id=2, ignore_if_exists=True)
    with pytest.raises(ValueError, match="Snapshot"):
        paimon.create_tag("d.t", "gone", snapshot_id=9)
    assert {n: s.id for n, s in ours.get_table("d.t").tags().items()} == {"first": 1, "latest": 2}
    assert paimon.list_tags_paged("d.t").elements == ["first", "latest"]
    assert paimon.list_tags_paged("d.t", max_results=1).elements == ["first"]
    assert paimon.list_tags_paged("d.t", tag_name_prefix="la").elements == ["latest"]
    tag = paimon.get_tag("d.t", "latest")
    assert tag.tag_name == "latest" and tag.snapshot.id == 2 and tag.tag_create_time > 0
    with pytest.raises(TagNotExistException):
        paimon.get_tag("d.t", "nope")
    paimon.delete_tag("d.t", "first")
    assert list(ours.get_table("d.t").tags()) == ["latest"]
    with pytest.raises(TagNotExistException):
        paimon.delete_tag("d.t", "first")
    with pytest.raises(Exception, match="tag name"):
        paimon.create_tag("d.t", "../escape")
