"""The work stratalake's commits do after themselves, read by Paimon's Java implementation:
automatic tags ('tag.automatic-creation' = 'batch') and partition expiry (values-time) write an
ordinary tag file and an OVERWRITE snapshot, which Paimon's reader takes as its own. Run by
``make test-paimon-java``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.operation.commit import partition_expire
from tests.interop_java.paimon_java import read_tables

pytestmark = pytest.mark.paimon_java


def _printed(table: pa.Table) -> list[tuple[str, ...]]:
    return sorted(tuple(str(v) for v in row.values()) for row in table.to_pylist())


@pytest.mark.parametrize("release", ["1.0.1", "1.3.1"])
def test_automatic_tags_and_expired_partitions_as_java_reads_them(tmp_path: Path, release: str) -> None:
    partition_expire._LAST_CHECK.clear()  # the first check of a process waits otherwise
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
    t = cat.create_table(
        "db.t",
        schema=schema,
        primary_key=["id", "dt"],
        partition_keys=["dt"],
        options={
            "bucket": "1",
            "tag.automatic-creation": "batch",
            "tag.batch.customized-name": "nightly",
            "partition.expiration-time": "1 d",
            "partition.expiration-check-interval": "0 s",
        },
    )
    today = dt.date.today().isoformat()
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "dt": [today, today]}, schema=schema))
    tagged = _printed(t.read())
    t.write(pa.table({"id": [3], "v": ["c"], "dt": ["2020-01-01"]}, schema=schema))  # expires at once
    t = t.refresh()
    assert t.latest_snapshot().commit_kind.value == "OVERWRITE"  # type: ignore[union-attr]
    assert set(t.tags()) == {"nightly"}
    latest = _printed(t.read())
    assert latest == [("1", "a", today), ("2", "b", today)]

    got = read_tables(release, wh, ["db.t", "db.t@scan.tag-name=nightly"])
    assert got["db.t"] == latest  # the expired partition is gone for Java too
    assert got["db.t@scan.tag-name=nightly"] == _printed(t.read(tag="nightly"))
    assert _printed(t.read(tag="nightly")) in (tagged, [*tagged, ("3", "c", "2020-01-01")])
