"""Partition management (stratalake.table.partitions): listing, and dropping in one OVERWRITE
commit, with typed values and refusals that leave the table unchanged."""

from __future__ import annotations

import datetime
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.exceptions import InvalidOptionError
from stratalake.table import Table


def _table(tmp_path: Path, primary_key: bool = True) -> Table:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("dt", pa.date32()), ("hr", pa.int32()), ("v", pa.string())])
    t = cat.create_table(
        "db.t",
        schema=schema,
        primary_key=["id", "dt", "hr"] if primary_key else None,
        partition_keys=["dt", "hr"],
        options={"bucket": "1"} if primary_key else {},
    )
    d1, d2 = datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)
    t.write(
        pa.table(
            {"id": [1, 2, 3, 4], "dt": [d1, d1, d2, d2], "hr": [0, 1, 0, 1], "v": list("abcd")}, schema=schema
        )
    )
    return t


@pytest.mark.parametrize("primary_key", [True, False])
def test_drop_partitions_is_one_overwrite_commit(tmp_path: Path, primary_key: bool) -> None:
    t = _table(tmp_path, primary_key)
    d1, d2 = datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)
    assert t.partitions() == [
        {"dt": d1, "hr": 0},
        {"dt": d1, "hr": 1},
        {"dt": d2, "hr": 0},
        {"dt": d2, "hr": 1},
    ]
    # Values given as text are cast to the column types; a partial spec matches every hr.
    sid = t.drop_partitions([{"dt": "2024-01-01"}, {"dt": d2, "hr": "1"}])
    snap = t.snapshot_manager.snapshot(sid)  # type: ignore[arg-type]
    assert (sid, snap.commit_kind) == (2, "OVERWRITE")
    assert t.partitions() == [{"dt": d2, "hr": 0}]
    assert t.read().to_pydict()["id"] == [3]
    # Nothing matches: no commit at all.
    assert t.drop_partitions([{"dt": d1}]) is None
    assert t.latest_snapshot().id == 2  # type: ignore[union-attr]


def test_bad_specs_are_refused_and_change_nothing(tmp_path: Path) -> None:
    t = _table(tmp_path)
    before = t.latest_snapshot().id  # type: ignore[union-attr]
    with pytest.raises(
        InvalidOptionError,
        match=r"table db\.t: partition spec \(v='a'\) names v, which is not a partition column; the partition columns are \['dt', 'hr'\]",
    ):
        t.drop_partitions([{"dt": "2024-01-01"}, {"v": "a"}])
    with pytest.raises(
        InvalidOptionError, match=r"table db\.t: partition spec \(dt='soon'\): value 'soon' is not a DATE"
    ):
        t.drop_partitions([{"dt": "soon"}])
    with pytest.raises(InvalidOptionError, match="at least one partition spec"):
        t.drop_partitions([])
    assert t.latest_snapshot().id == before  # type: ignore[union-attr]
    assert len(t.partitions()) == 4

    cat = stratalake.Catalog(str(tmp_path / "wh"))
    flat = cat.create_table("db.flat", schema=pa.schema([("id", pa.int64())]))
    flat.write(pa.table({"id": [1]}))
    assert flat.partitions() == []
    with pytest.raises(InvalidOptionError, match=r"table db\.flat is not partitioned"):
        flat.drop_partitions([{"id": 1}])
