"""The Hive catalog's parts that need no metastore (the server tests are in tests/metastore), and
the table's partition hook that it relies on."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.catalog import registry
from stratalake.catalog.hive import HiveCatalog, hive_type, local_path, parse_uris
from stratalake.exceptions import InvalidOptionError
from stratalake.store.table_store import TableStore
from stratalake.types import DataType


def test_registered_and_options_checked(tmp_path: Path) -> None:
    assert "hive" in registry.metastores()
    cat = stratalake.Catalog(str(tmp_path), {"metastore": "hive", "uri": "thrift://127.0.0.1:1"})
    assert isinstance(cat, HiveCatalog)  # no connection is made before the first call
    assert parse_uris("thrift://a:1, thrift://b:2") == [("a", 1), ("b", 2)]
    for bad in ("", "a:1", "thrift://a", "thrift://a:x", "http://a:1", "thrift://a:1/db"):
        with pytest.raises(InvalidOptionError, match="uri"):
            parse_uris(bad)
    for key, value in (("hadoop-conf-dir", "/x"), ("metastore.client.class", "X"), ("case-sensitive", "true")):
        with pytest.raises(InvalidOptionError, match=key):
            stratalake.Catalog(str(tmp_path), {"metastore": "hive", "uri": "thrift://a:1", key: value})
    with pytest.raises(InvalidOptionError, match=r"lock\.acquire-timeout"):
        stratalake.Catalog(str(tmp_path), {"metastore": "hive", "uri": "thrift://a:1", "lock.acquire-timeout": "soon"})


@pytest.mark.parametrize(
    ("paimon", "hive"),
    [
        ("BIGINT", "bigint"),
        ("STRING", "string"),
        ("VARCHAR(10)", "varchar(10)"),
        ("CHAR(300)", "string"),
        ("DECIMAL(38, 4)", "decimal(38,4)"),
        ("BYTES", "binary"),
        ("TIMESTAMP(3)", "timestamp"),
        ("TIMESTAMP_LTZ(6)", "timestamp"),
        ("TIME", "string"),
        ("ARRAY<ROW<a INT, b MAP<STRING, DOUBLE>>>", "array<struct<a:int,b:map<string,double>>>"),
        ("MULTISET<STRING>", "map<string,int>"),
    ],
)
def test_hive_types(paimon: str, hive: str) -> None:
    assert hive_type(DataType.parse(paimon)) == hive


def test_local_paths() -> None:
    assert local_path("file:/a/b") == "/a/b"
    assert local_path("file:///a/b") == "/a/b"
    assert local_path("s3://bucket/a") == "s3://bucket/a"


class Recorder:
    def __init__(self) -> None:
        self.created: list[list[dict[str, str]]] = []
        self.dropped: list[list[dict[str, str]]] = []

    def partitions_created(self, table: TableStore, partitions: list[dict[str, str]]) -> None:
        self.created.append(partitions)

    def partitions_dropped(self, table: TableStore, partitions: list[dict[str, str]]) -> None:
        self.dropped.append(partitions)


def test_partition_handler_hears_commits_and_drops(tmp_path: Path) -> None:
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("h", pa.int32())])
    t = cat.create_table("db.t", schema, partition_keys=["dt", "h"])  # an append table: null partitions
    recorder = Recorder()
    t.partition_handler = recorder
    t.write(pa.table({"id": [1, 2, 3], "dt": ["x", "x", None], "h": [1, 1, 2]}, schema=schema))
    assert len(recorder.created) == 1
    assert sorted(recorder.created[0], key=str) == [
        {"dt": "__DEFAULT_PARTITION__", "h": "2"},
        {"dt": "x", "h": "1"},
    ]
    assert t.refresh().partition_handler is recorder  # derived handles keep it
    t.drop_partitions([{"dt": "x", "h": 1}])
    assert recorder.dropped == [[{"dt": "x", "h": "1"}]]
    assert t.read().column("id").to_pylist() == [3]


def test_a_failing_handler_does_not_fail_the_commit(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    class Broken(Recorder):
        def partitions_created(self, table: TableStore, partitions: list[dict[str, str]]) -> None:
            raise OSError("metastore down")

    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    t = cat.create_table("db.t", schema, primary_key=["id", "dt"], partition_keys=["dt"])
    t.partition_handler = Broken()
    assert t.write(pa.table({"id": [1], "dt": ["x"]}, schema=schema)) == 1
    assert "metastore down" in caplog.text and t.read().num_rows == 1
