"""ORC and Avro data files, and tables holding several formats, between pypaimon and stratalake.

Each test keeps a dict model (key -> row) of the table and checks that stratalake and pypaimon both
read exactly it (one row per key) after writes by either side, upserts and compactions. Only +I rows
are written, so pypaimon's raw-convertible reader bug (paimon_oracle docstring) never applies.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from stratalake.catalog.schema_change import SchemaChange
from stratalake.exceptions import UnsupportedError

from .paimon_oracle import paimon_create_table, paimon_read, paimon_write, rust_read

pytestmark = pytest.mark.interop

Row = dict[str, Any]

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string()),
        pa.field("n", pa.int32()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("amount", pa.decimal128(12, 2)),
        pa.field("day", pa.date32()),
    ]
)


def make_rows(keys: Sequence[int], version: int) -> list[Row]:
    return [
        {
            "id": k,
            "v": None if (k + version) % 7 == 0 else f"v{version}-{k}",
            "n": None if k % 5 == 0 else k * 10 + version,
            "ts": dt.datetime(2024, 1, 1) + dt.timedelta(seconds=k, microseconds=version),
            "amount": Decimal(k * 100 + version) / 100,
            "day": dt.date(2024, 1, 1) + dt.timedelta(days=k % 30),
        }
        for k in keys
    ]


def batch(rows: Sequence[Row]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=SCHEMA)


def as_model(table: pa.Table, who: str) -> dict[int, Row]:
    rows = table.select(SCHEMA.names).to_pylist()
    model = {r["id"]: r for r in rows}
    assert len(model) == len(rows), f"{who} returned duplicate keys"
    return model


class Model:
    def __init__(self) -> None:
        self.rows: dict[int, Row] = {}

    def apply(self, rows: Sequence[Row]) -> None:
        for r in rows:
            self.rows[r["id"]] = dict(r)


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "wh"


def sl_table(warehouse: Path, ident: str) -> Any:
    return stratalake.Catalog(str(warehouse)).get_table(ident)


def check_both(warehouse: Path, ident: str, model: Model) -> None:
    assert as_model(sl_table(warehouse, ident).read(), "stratalake") == model.rows
    assert as_model(paimon_read(warehouse, ident), "pypaimon") == model.rows
    assert as_model(rust_read(warehouse, ident), "pypaimon-rust") == model.rows


def live_formats(warehouse: Path, ident: str) -> dict[int, set[str]]:
    """Extensions of the live data files, by level."""
    t = sl_table(warehouse, ident)
    out: dict[int, set[str]] = {}
    for e in t.live_entries(t.latest_snapshot()):
        out.setdefault(e.file.level, set()).add(e.file.file_name.rsplit(".", 1)[-1])
    return out


def sl_write(warehouse: Path, ident: str, rows: Sequence[Row], model: Model) -> None:
    sl_table(warehouse, ident).write(batch(rows))
    model.apply(rows)


def pp_write(warehouse: Path, ident: str, rows: Sequence[Row], model: Model) -> None:
    paimon_write(warehouse, ident, batch(rows))
    model.apply(rows)


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_format_round_trip(warehouse: Path, fmt: str) -> None:
    ident = f"db.t_{fmt}"
    paimon_create_table(warehouse, ident, SCHEMA, ["id"], options={"bucket": "2", "file.format": fmt})
    model = Model()
    pp_write(warehouse, ident, make_rows(range(0, 60), 1), model)
    assert as_model(sl_table(warehouse, ident).read(), "stratalake") == model.rows
    assert {f for fs in live_formats(warehouse, ident).values() for f in fs} == {fmt}

    # stratalake upserts (overlapping keys) and a full compaction: files stay in the table's format.
    sl_write(warehouse, ident, make_rows(range(30, 90), 2), model)
    sl_write(warehouse, ident, make_rows(range(0, 90, 3), 3), model)
    check_both(warehouse, ident, model)
    assert sl_table(warehouse, ident).compact(full=True) is not None
    formats = live_formats(warehouse, ident)
    assert set(formats) == {max(formats)} and formats[max(formats)] == {fmt}
    check_both(warehouse, ident, model)

    pp_write(warehouse, ident, make_rows(range(80, 120), 4), model)
    check_both(warehouse, ident, model)


def test_mixed_formats_when_the_option_changes(warehouse: Path) -> None:
    ident = "db.mixed"
    paimon_create_table(warehouse, ident, SCHEMA, ["id"], options={"bucket": "1"})
    model = Model()
    pp_write(warehouse, ident, make_rows(range(0, 40), 1), model)  # parquet
    cat = stratalake.Catalog(str(warehouse))
    cat.alter_table(ident, [SchemaChange.set_option("file.format", "orc")])
    sl_write(warehouse, ident, make_rows(range(20, 60), 2), model)  # orc
    pp_write(warehouse, ident, make_rows(range(50, 70), 3), model)  # orc (pypaimon reads the option)
    check_both(warehouse, ident, model)
    assert {f for fs in live_formats(warehouse, ident).values() for f in fs} == {"parquet", "orc"}

    cat.alter_table(ident, [SchemaChange.set_option("file.format", "avro")])
    sl_write(warehouse, ident, make_rows(range(0, 70, 2), 4), model)  # avro
    assert {f for fs in live_formats(warehouse, ident).values() for f in fs} == {"parquet", "orc", "avro"}
    check_both(warehouse, ident, model)

    # Compaction reads every format and writes the current one.
    assert sl_table(warehouse, ident).compact(full=True) is not None
    assert {f for fs in live_formats(warehouse, ident).values() for f in fs} == {"avro"}
    check_both(warehouse, ident, model)
    pp_write(warehouse, ident, make_rows(range(65, 75), 5), model)
    check_both(warehouse, ident, model)


def test_stratalake_created_orc_table_read_by_pypaimon(warehouse: Path) -> None:
    ident = "db.sl_orc"
    cat = stratalake.Catalog(str(warehouse))
    cat.create_database("db", ignore_if_exists=True)
    cat.create_table(ident, schema=SCHEMA, primary_key=["id"], options={"bucket": "2", "file.format": "orc"})
    model = Model()
    sl_write(warehouse, ident, make_rows(range(0, 50), 1), model)
    sl_write(warehouse, ident, make_rows(range(25, 75), 2), model)
    check_both(warehouse, ident, model)
    pp_write(warehouse, ident, make_rows(range(70, 80), 3), model)
    check_both(warehouse, ident, model)


# -- tables stratalake recognises but does not support yet ---------------------------------------


def test_pypaimon_append_table_with_deletion_vectors_is_read_written_and_compacted(warehouse: Path) -> None:
    paimon_create_table(
        warehouse, "db.events", SCHEMA, [], options={"bucket": "-1", "deletion-vectors.enabled": "true"}
    )
    paimon_write(warehouse, "db.events", batch(make_rows(range(5), 1)))
    cat = stratalake.Catalog(str(warehouse))
    t = cat.get_table("db.events")
    assert not t.unsupported_features  # append tables with deletion vectors are supported
    t.write(batch(make_rows([7], 2)))
    t = t.refresh()
    assert t.read().num_rows == 6
    t.compact(full=True)
    assert paimon_read(warehouse, "db.events").num_rows == 6


def test_pypaimon_table_with_unsupported_option_is_refused_by_name(warehouse: Path) -> None:
    ident = "db.bitmap64"
    paimon_create_table(
        warehouse,
        ident,
        SCHEMA,
        ["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", "deletion-vectors.bitmap64": "true"},
    )
    cat = stratalake.Catalog(str(warehouse))
    assert "bitmap64" in cat.list_tables("db")
    t = cat.get_table(ident)
    assert t.options()["deletion-vectors.bitmap64"] == "true"
    with pytest.raises(UnsupportedError, match=r"table db\.bitmap64 .*'deletion-vectors\.bitmap64'"):
        t.new_scan()
    with pytest.raises(UnsupportedError, match=r"'deletion-vectors\.bitmap64'.*cannot write"):
        t.write(batch(make_rows([1], 1)))


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_nested_and_temporal_columns_written_by_stratalake_read_by_pypaimon(
    warehouse: Path, fmt: str
) -> None:
    cat = stratalake.Catalog(str(warehouse))
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(
        f"db.nested_{fmt}",
        schema=[
            ("id", "BIGINT NOT NULL"),
            ("arr", "ARRAY<INT>"),
            ("r", "ROW<a INT, t TIMESTAMP(3)>"),
            ("m", "MAP<STRING, BIGINT>"),
            ("tm", "TIME"),
            ("ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
        ],
        primary_key=["id"],
        options={"file.format": fmt},
    )
    rows = [
        {
            "id": 1,
            "arr": [1, None],
            "r": {"a": 1, "t": dt.datetime(2020, 1, 1, 0, 0, 0, 5000)},
            "m": [("x", 1)],
            "tm": dt.time(1, 2, 3, 4000),
            "ltz": dt.datetime(2020, 1, 1, 0, 0, 0, 7, tzinfo=dt.UTC),
        },
        {"id": 2, "arr": None, "r": None, "m": None, "tm": None, "ltz": None},
    ]
    t.write(pa.Table.from_pylist(rows, schema=t.arrow_schema()))
    ours = sorted(t.read().to_pylist(), key=lambda r: r["id"])
    theirs = sorted(paimon_read(warehouse, f"db.nested_{fmt}").to_pylist(), key=lambda r: r["id"])
    rust = sorted(rust_read(warehouse, f"db.nested_{fmt}").to_pylist(), key=lambda r: r["id"])
    assert ours == theirs == rows
    assert rust == rows
