"""Consumers across engines: Paimon's Java ``ConsumerManager`` reads the consumers stratalake
writes, Java's snapshot expiration keeps the snapshots our consumer pins, and stratalake honours a
consumer Java wrote. Run by ``make test-paimon-java``."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from tests.interop_java.paimon_java import RELEASES, consumer, read_tables
from tests.spark.test_stream_source import Driver

pytestmark = pytest.mark.paimon_java


@pytest.mark.parametrize("release", [RELEASES[0], RELEASES[-1]])
def test_consumers_across_engines(tmp_path: Path, release: str) -> None:
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = cat.create_table("db.t", schema=schema, primary_key=["id"], options={"bucket": "1"})
    for i in range(6):
        t.write(pa.table({"id": [i], "v": [f"v{i}"]}))
    latest = t.latest_snapshot().id  # type: ignore[union-attr]
    t.reset_consumer("ours", 3)
    assert consumer(release, wh, "db.t", "list") == "ours\t3\n"

    # Java's expiration (keep 1 snapshot, any age) stops at our consumer's snapshot 3.
    assert consumer(release, wh, "db.t", "expire", "1").strip() == "2"
    t = t.refresh()
    assert [s.id for s in t.snapshots()] == list(range(3, latest + 1))
    assert read_tables(release, wh, ["db.t"])["db.t"] == [(str(i), f"v{i}") for i in range(6)]

    # A consumer Java wrote pins our expiration, and a stream with its id starts there.
    consumer(release, wh, "db.t", "reset", "theirs", "5")
    t.reset_consumer("ours")
    assert t.consumers() == {"theirs": 5}
    stream = Driver(t, **{"consumer-id": "theirs"})  # a new stream with Java's consumer id
    assert stream.offset == {"snapshot": 5, "full": False, "index": 0}
    assert t.expire_snapshots(retain_max=1, retain_min=1) == 2
    assert [s.id for s in t.refresh().snapshots()] == list(range(5, latest + 1))
    assert consumer(release, wh, "db.t", "list") == "theirs\t5\n"
