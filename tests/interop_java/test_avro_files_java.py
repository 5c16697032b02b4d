"""Avro data files both ways with Paimon Java's own Avro format (``PaimonAvroFiles.java``, Paimon
1.3.1's ``FileFormat`` "avro" as its table writers use it), at the file level, for every column
type Paimon stores in Avro: Paimon Java writes a file, stratalake reads it and writes the rows
again with its column-by-column encoder, and Paimon Java reads both files to the same checksum of
every value. Run by ``make test-paimon-java``."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from stratalake.io import FileIO
from stratalake.lsm.file_format import file_format, open_data_file
from stratalake.spec.avro_columns import BLOCK_BYTES, ContainerReader
from tests.interop_java.paimon_java import AVRO_FILES_RELEASES, avro_files

pytestmark = pytest.mark.paimon_java
RELEASE = AVRO_FILES_RELEASES[-1]


def paimon(*args: str) -> dict[str, Any]:
    return avro_files(RELEASE, *args)


@pytest.mark.parametrize("compression", ["zstd", "deflate", "snappy", "none"])
def test_every_type_both_ways_with_paimon_javas_avro_format(tmp_path: Path, compression: str) -> None:
    rows = 30_000  # several blocks of each writer
    java_file = str(tmp_path / "paimon-java.avro")
    ours_file = str(tmp_path / "stratalake.avro")
    paimon("write", java_file, str(rows), "1")
    io = FileIO.get(java_file)
    table = open_data_file(io, java_file, expected_rows=rows).read()
    assert table.num_rows == rows
    # Row i as PaimonAvroFiles.row(i) makes it, for a few rows: the values themselves, not only
    # a round trip.
    got = {r["k"]: r for r in table.slice(0, 8).to_pylist()}
    r3, r5 = got[3], got[5]
    assert r3["b"] is True and r3["i"] == 21 - 1000 and r3["d"] == 0.75 and r3["f"] == 0.375
    assert (
        r3["s"] == "name-3"
        and r3["bin"] == b"\x03\x00"
        and r3["n"] == 39
        and r3["day"] == dt.date(1970, 1, 1) + dt.timedelta(days=-19997)
    )
    assert r3["ts"] == dt.datetime(2024, 1, 1, 0, 0, 0, 3)
    assert r3["ltz"] == dt.datetime(2023, 12, 31, 23, 59, 59, 997000, tzinfo=dt.UTC)
    assert r3["dec"] == Decimal("3.0021") and r3["big"] == Decimal("-2700")
    assert r3["arr"] == [3, None, -3] and got[4]["arr"] is None and got[1]["arr"] == []
    assert sorted(r3["m"]) == [("a", 3), ("b0", -3)] and r3["mi"] == [(3, "x3")] and got[6]["mi"] is None
    assert r3["r"] == {"a": 3, "t": "t3"} and got[0]["r"] is None and got[5]["n"] is None
    assert r5["r"] == {"a": 5, "t": "t5"} and got[2]["r"] == {"a": None, "t": "t2"}

    file_format("avro").write(io, ours_file, table, compression, 1)
    blocks = ContainerReader(Path(ours_file).read_bytes())
    assert blocks.codec == {"zstd": "zstandard", "none": "null"}.get(compression, compression)
    sizes = [len(b.records) for b in blocks.blocks()]
    assert len(sizes) > 3 and all(s >= BLOCK_BYTES for s in sizes[:-1])

    theirs, ours = paimon("read", java_file, "1"), paimon("read", ours_file, "1")
    assert ours["rows"] == theirs["rows"] == rows
    assert ours["checksum"] == theirs["checksum"]
    assert open_data_file(io, ours_file, expected_rows=rows).read().equals(table)
