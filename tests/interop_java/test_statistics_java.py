"""Table statistics across engines: Paimon Java 1.3.1's ``table.statistics()`` reads the statistics
stratalake's ANALYZE commits, and stratalake reads (and carries forward) the statistics Paimon's
``TableCommit.updateStatistics`` commits. Run by ``make test-paimon-java``."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.spec.snapshot import CommitKind
from stratalake.spec.statistics import ColStats, deserialize_value
from tests.interop_java.paimon_java import RELEASES, read_tables, statistics

pytestmark = pytest.mark.paimon_java
RELEASE = RELEASES[-1]

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("i", pa.int32()),
        ("d", pa.float64()),
        ("f", pa.float32()),
        ("dec", pa.decimal128(10, 5)),
        ("ts", pa.timestamp("ms")),
        ("day", pa.date32()),
        ("s", pa.string()),
    ]
)


def _table(tmp_path: Path) -> tuple[str, stratalake.Table]:
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2"})
    rows = [
        ("a", -7, 0.0001, 0.1, "1.5", datetime.datetime(2020, 1, 1, 0, 0, 0, 120000), 18262, "x"),
        ("b", 42, 2.5e10, 1e7, "12.12345", datetime.datetime(2020, 1, 2), 18263, "hello"),
        ("c", None, 0.0001, 0.1, "1.5", datetime.datetime(2020, 1, 1, 0, 0, 0, 120000), 18262, "yy"),
    ]
    for r in rows:
        values = [
            *r[:4],
            decimal.Decimal(r[4]),
            r[5],
            datetime.date(1970, 1, 1) + datetime.timedelta(r[6]),
            r[7],
        ]
        t.write(pa.Table.from_pylist([dict(zip(SCHEMA.names, values, strict=True))], schema=SCHEMA))
    return wh, t


def test_paimon_java_reads_our_statistics(tmp_path: Path) -> None:
    wh, t = _table(tmp_path)
    t.analyze(all_columns=True)
    stats = t.statistics()
    assert stats is not None
    out = statistics(RELEASE, wh, "db.t", "read").splitlines()
    assert out[0] == f"stats\t3\t0\t3\t{stats.merged_record_size}"
    cols = {line.split("\t")[1]: line.split("\t")[2:] for line in out[1:]}
    # Java deserialised every min/max with its own serializers and printed the objects.
    assert cols["i"] == ["1", "2", "-7", "42", "1", "4", "4"]
    assert cols["d"] == ["2", "2", "1.0E-4", "2.5E10", "0", "8", "8"]
    assert cols["f"] == ["3", "2", "0.1", "1.0E7", "0", "4", "4"]
    assert cols["dec"] == ["4", "2", "1.50000", "12.12345", "0", "8", "8"]
    assert cols["ts"] == ["5", "2", "2020-01-01T00:00:00.120", "2020-01-02T00:00", "0", "8", "8"]
    assert cols["day"] == ["6", "2", "18262", "18263", "0", "4", "4"]
    assert cols["s"] == ["7", "3", "null", "null", "0", "3", "5"]
    assert cols["id"] == ["0", "3", "null", "null", "0", "1", "1"]
    # Java reads the rows of the ANALYZE snapshot, and the statistics stay after our next write.
    assert len(read_tables(RELEASE, wh, ["db.t"])["db.t"]) == 3
    t.write(pa.Table.from_pylist([{"id": "z", "i": 1}], schema=SCHEMA))
    assert statistics(RELEASE, wh, "db.t", "read").splitlines()[0] == out[0]


def test_we_read_paimon_javas_statistics(tmp_path: Path) -> None:
    wh, t = _table(tmp_path)
    statistics(RELEASE, wh, "db.t", "commit")
    t = t.refresh()
    snap = t.latest_snapshot()
    assert snap is not None and snap.commit_kind is CommitKind.ANALYZE and snap.id == 4
    stats = t.statistics()
    assert stats is not None
    assert (stats.snapshot_id, stats.schema_id, stats.merged_record_count, stats.merged_record_size) == (
        3,
        0,
        3,
        1234,
    )
    got = stats.col_stats
    assert got["i"] == ColStats(1, 2, "-7", "42", 1, 4, 4)
    assert got["d"] == ColStats(2, 2, "1.0E-4", "2.5E10", 0, 8, 8)
    assert got["f"] == ColStats(3, 2, "0.1", "1.0E7", 0, 4, 4)
    assert got["dec"] == ColStats(4, 2, "1.50000", "12.12345", 0, 8, 8)
    assert got["ts"] == ColStats(5, 2, "2020-01-01 00:00:00.120", "2020-01-02 00:00:00.000", 0, 8, 8)
    assert got["day"] == ColStats(6, 2, "18262", "18263", 0, 4, 4)
    assert got["s"] == ColStats(7, 3, None, None, 0, 3, 5)
    schema = t.schema()
    assert deserialize_value(schema.field("ts").type, got["ts"].min or "") == datetime.datetime(
        2020, 1, 1, 0, 0, 0, 120000
    )
    # What we compute for the same rows is what Java committed (sizes aside).
    ours = t.analyze(all_columns=True)
    assert ours is not None
    mine = t.statistics()
    assert mine is not None
    for name in ("i", "d", "f", "dec", "ts", "day", "s"):
        assert mine.col_stats[name] == got[name], name
    # A later commit of ours carries Java's statistics forward.
    statistics(RELEASE, wh, "db.t", "commit")
    t = t.refresh()
    java_snapshot = t.latest_snapshot()
    assert java_snapshot is not None and java_snapshot.statistics is not None
    t.write(pa.Table.from_pylist([{"id": "z", "i": 1}], schema=SCHEMA))
    assert t.latest_snapshot().statistics == java_snapshot.statistics  # type: ignore[union-attr]
