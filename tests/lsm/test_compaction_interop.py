"""pypaimon reads compacted tables (levels > 0, COMPACT snapshots, upgraded files) like stratalake."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from tests.interop.paimon_oracle import paimon_read, sorted_rows

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("producer", ["none", "lookup", "full-compaction"])
def test_pypaimon_reads_compacted_table(tmp_path: Path, producer: str) -> None:
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
    t = cat.create_table(
        "db.t",
        schema=schema,
        primary_key=["k", "dt"],
        partition_keys=["dt"],
        options={"bucket": "3", "num-sorted-run.compaction-trigger": "2", "changelog-producer": producer},
    )
    for i in range(5):
        keys = list(range(i * 7, i * 7 + 40))
        t.write(pa.table({"k": keys, "v": [f"v{i}"] * 40, "dt": ["d1" if k % 2 else "d2" for k in keys]}))
        t.write(
            pa.table({"k": [i], "v": ["x"], "dt": ["d1" if i % 2 else "d2"], "op": ["-D"]}), row_kind="op"
        )
    expected = sorted_rows(t.read(), ["k", "dt"])
    assert sorted_rows(paimon_read(wh, "db.t"), ["k", "dt"]) == expected
    t.compact(full=True)
    levels = {e.file.level for e in t.live_entries(t.latest_snapshot())}
    assert levels == {t.core_options.num_levels - 1}
    assert sorted_rows(paimon_read(wh, "db.t"), ["k", "dt"]) == expected
