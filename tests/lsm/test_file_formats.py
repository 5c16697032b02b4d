"""Data file formats inside stratalake: every column type in Parquet, ORC and Avro, formats and
compression per level, changelog file formats, statistics independent of the format, damaged files."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pytest

import stratalake
from stratalake.catalog.schema_change import SchemaChange
from stratalake.exceptions import CorruptFileError, InvalidOptionError, UnsupportedError
from stratalake.io import FileIO
from stratalake.lsm.file_format import avro_schema, format_of_file, open_data_file
from stratalake.table import Table

FORMATS = ["parquet", "orc", "avro"]

COLUMNS = [
    ("id", "BIGINT NOT NULL"),
    ("k2", "STRING NOT NULL"),
    ("b", "BOOLEAN"),
    ("ti", "TINYINT"),
    ("si", "SMALLINT"),
    ("i", "INT"),
    ("f", "FLOAT"),
    ("d", "DOUBLE"),
    ("dec", "DECIMAL(20, 4)"),
    ("s", "STRING"),
    ("bin", "BYTES"),
    ("day", "DATE"),
    ("tm", "TIME"),
    ("ts3", "TIMESTAMP(3)"),
    ("ts6", "TIMESTAMP(6)"),
    ("ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("arr", "ARRAY<INT>"),
    ("m", "MAP<STRING, BIGINT>"),
    ("mi", "MAP<INT, STRING>"),
    ("r", "ROW<a INT, t TIMESTAMP(3), tags ARRAY<STRING>>"),
]


def row(k: int, version: int) -> dict[str, Any]:
    null = (k + version) % 4 == 0
    return {
        "id": k,
        "k2": f"key{k % 3}",
        "b": None if null else k % 2 == 0,
        "ti": None if null else (k % 100) - 50,
        "si": k * 3,
        "i": k * version,
        "f": float(k) / 2,
        "d": None if null else k / 3,
        "dec": Decimal(k * 10007 + version).scaleb(-4),
        "s": None if null else f"s{version}-{k}",
        "bin": bytes([k % 256, version % 256]),
        "day": dt.date(1969, 12, 1) + dt.timedelta(days=k),
        "tm": dt.time(k % 24, version % 60, 1, 123000),
        "ts3": dt.datetime(1965, 1, 1) + dt.timedelta(days=k, milliseconds=version),
        "ts6": dt.datetime(2024, 1, 1) + dt.timedelta(seconds=k, microseconds=version),
        "ltz": dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=k),
        "arr": None if null else [k, version, k + version],
        "m": {"a": k, "b": None} if not null else None,
        "mi": [(k, f"x{version}")],
        "r": None
        if null
        else {"a": k, "t": dt.datetime(2000, 1, 1) + dt.timedelta(hours=k), "tags": ["p", None]},
    }


def create(tmp_path: Path, name: str, options: Mapping[str, str]) -> Table:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table(f"db.{name}", schema=COLUMNS, primary_key=["id", "k2"], options=dict(options))


def data(t: Table, keys: range, version: int) -> pa.Table:
    return pa.Table.from_pylist([row(k, version) for k in keys], schema=t.arrow_schema())


def by_key(table: pa.Table) -> dict[tuple[int, str], dict[str, Any]]:
    rows = table.to_pylist()
    out = {(r["id"], r["k2"]): r for r in rows}
    assert len(out) == len(rows), "duplicate keys"
    return out


def normalized(rows: Mapping[Any, dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """Maps as sorted pairs (Arrow gives maps back as lists of pairs)."""
    out = {}
    for key, r in rows.items():
        r = dict(r)
        for name in ("m", "mi"):
            v = r[name]
            if isinstance(v, dict):
                v = list(v.items())
            r[name] = None if v is None else sorted(v, key=lambda kv: kv[0])
        out[key] = r
    return out


def live_files(t: Table) -> list[Any]:
    t = t.refresh()
    snap = t.latest_snapshot()
    assert snap is not None
    return [e.file for e in t.live_entries(snap)]


def file_path(t: Table, name: str) -> Path:
    (path,) = Path(t.location).rglob(name)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_column_type_round_trips(tmp_path: Path, fmt: str) -> None:
    t = create(tmp_path, f"t_{fmt}", {"bucket": "2", "file.format": fmt})
    expected: dict[tuple[int, str], dict[str, Any]] = {}
    for version, keys in ((1, range(0, 40)), (2, range(20, 60)), (3, range(0, 60, 7))):
        batch = data(t, keys, version)
        t.write(batch)
        expected.update(by_key(batch))
    assert normalized(by_key(t.read())) == normalized(expected)
    assert {format_of_file(f.file_name) for f in live_files(t)} == {fmt}
    t.compact(full=True)
    assert {format_of_file(f.file_name) for f in live_files(t)} == {fmt}
    assert normalized(by_key(t.refresh().read())) == normalized(expected)
    # Projection reads only some columns, whatever the format.
    assert t.read(columns=["id", "k2", "ltz"]).column_names == ["id", "k2", "ltz"]


def test_format_per_level_and_compaction_across_formats(tmp_path: Path) -> None:
    t = create(
        tmp_path,
        "per_level",
        {"bucket": "1", "file.format": "parquet", "file.format.per.level": "0:avro", "write-only": "true"},
    )
    expected: dict[Any, dict[str, Any]] = {}
    for version in range(1, 4):
        batch = data(t, range(version * 10, version * 10 + 30), version)
        t.write(batch)
        expected.update(by_key(batch))
    files = live_files(t)
    assert {(f.level, format_of_file(f.file_name)) for f in files} == {(0, "avro")}
    t.compact(full=True)
    files = live_files(t)
    assert {format_of_file(f.file_name) for f in files} == {"parquet"} and all(f.level > 0 for f in files)
    assert normalized(by_key(t.refresh().read())) == normalized(expected)

    # Change the formats: new level-0 files are ORC, compaction merges Parquet + ORC into Avro.
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    t = cat.alter_table(
        "db.per_level",
        [
            SchemaChange.set_option("file.format", "avro"),
            SchemaChange.set_option("file.format.per.level", "0:orc"),
        ],
    )
    batch = data(t, range(0, 25), 9)
    t.write(batch)
    expected.update(by_key(batch))
    assert {format_of_file(f.file_name) for f in live_files(t)} == {"parquet", "orc"}
    assert normalized(by_key(t.refresh().read())) == normalized(expected)
    t.compact(full=True)
    assert {format_of_file(f.file_name) for f in live_files(t)} == {"avro"}
    assert normalized(by_key(t.refresh().read())) == normalized(expected)


def test_compression_per_level(tmp_path: Path) -> None:
    t = create(
        tmp_path,
        "codecs",
        {
            "bucket": "1",
            "file.format": "avro",
            "file.compression.per.level": "0:none",
            "write-only": "true",
        },
    )
    t.write(data(t, range(0, 50), 1))
    t.write(data(t, range(25, 75), 2))
    for f0 in live_files(t):
        with file_path(t, f0.file_name).open("rb") as fh:
            assert fastavro.reader(fh).metadata["avro.codec"] == "null"
    t.compact(full=True)  # two overlapping files: rewritten (not upgraded) into the top level
    (top,) = live_files(t)
    with file_path(t, top.file_name).open("rb") as fh:
        assert fastavro.reader(fh).metadata["avro.codec"] == "zstandard"

    o = create(tmp_path, "orc_codec", {"bucket": "1", "file.format": "orc", "file.compression": "snappy"})
    o.write(data(o, range(0, 10), 1))
    (f,) = live_files(o)
    assert orc.ORCFile(str(file_path(o, f.file_name))).compression == "SNAPPY"


def test_unknown_compression_is_refused_with_the_table_name(tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match=r"table db\.bad_codec: compression 'lz4'.*avro data files"):
        create(tmp_path, "bad_codec", {"bucket": "1", "file.format": "avro", "file.compression": "lz4"})
    orc_level_0 = {"bucket": "1", "file.format.per.level": "0:orc"}
    with pytest.raises(InvalidOptionError, match=r"compression 'zlib'.*parquet level 5"):
        create(tmp_path, "bad_level", {**orc_level_0, "file.compression.per.level": "0:zlib,5:zlib"})
    t = create(tmp_path, "ok_codec", {**orc_level_0, "file.compression.per.level": "0:zlib"})
    t.write(data(t, range(3), 1))


def test_codec_names_match_the_format_layer() -> None:
    from stratalake.lsm.file_format import SUPPORTED_FORMATS, file_format
    from stratalake.options import FORMAT_COMPRESSIONS

    assert set(FORMAT_COMPRESSIONS) == set(SUPPORTED_FORMATS)
    for fmt in SUPPORTED_FORMATS:
        assert set(FORMAT_COMPRESSIONS[fmt]) == set(file_format(fmt).codecs), fmt


def test_changelog_files_in_their_own_format(tmp_path: Path) -> None:
    t = create(
        tmp_path,
        "cl",
        {"bucket": "1", "changelog-producer": "input", "file.format": "orc", "changelog-file.format": "avro"},
    )
    t.write(data(t, range(0, 10), 1))
    t.write(data(t, range(5, 15), 2))
    root = Path(t.location)
    assert {p.suffix for p in root.rglob("changelog-*")} == {".avro"}
    assert {p.suffix for p in root.rglob("data-*")} == {".orc"}
    changes = t.changelog()
    assert changes.num_rows == 20


def test_statistics_are_the_same_whatever_the_format(tmp_path: Path) -> None:
    metas = {}
    for fmt in FORMATS:
        t = create(
            tmp_path, f"stats_{fmt}", {"bucket": "1", "file.format": fmt, "metadata.stats-mode": "full"}
        )
        t.write(data(t, range(0, 30), 1))
        (meta,) = live_files(t)
        metas[fmt] = meta
    fields = (
        "row_count",
        "min_key",
        "max_key",
        "key_stats",
        "value_stats",
        "min_sequence_number",
        "max_sequence_number",
        "delete_row_count",
        "level",
    )
    for fmt in ("orc", "avro"):
        for name in fields:
            assert getattr(metas[fmt], name) == getattr(metas["parquet"], name), (fmt, name)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("keep", [0.5, 0.1])
def test_truncated_data_file_raises_corrupt_file_error_naming_it(
    tmp_path: Path, fmt: str, keep: float
) -> None:
    t = create(tmp_path, f"trunc_{fmt}", {"bucket": "1", "file.format": fmt})
    t.write(data(t, range(0, 200), 1))
    (meta,) = live_files(t)
    path = file_path(t, meta.file_name)
    content = path.read_bytes()
    path.write_bytes(content[: int(len(content) * keep)])
    with pytest.raises(CorruptFileError, match=re.escape(meta.file_name)):
        t.refresh().read()


def test_avro_file_cut_between_blocks_raises_corrupt_file_error(tmp_path: Path) -> None:
    """An Avro container cut right after a block's sync marker is a valid, shorter file: only the
    manifest's row count shows it lost rows, for reads and compaction alike."""
    t = create(tmp_path, "cut_avro", {"bucket": "1", "file.format": "avro"})
    t.write(data(t, range(0, 5000), 1))
    (meta,) = live_files(t)
    path = file_path(t, meta.file_name)
    content = path.read_bytes()
    with path.open("rb") as f:
        sync = fastavro.reader(f)._header["sync"]
    ends = [m.end() for m in re.finditer(re.escape(sync), content)]
    assert len(ends) > 2, "the file should hold several blocks"
    path.write_bytes(content[: ends[1]])  # the header and the first block, nothing broken
    with path.open("rb") as f:
        assert 0 < sum(1 for _ in fastavro.reader(f)) < meta.row_count  # fastavro reads it silently
    with pytest.raises(CorruptFileError, match=re.escape(meta.file_name) + ".*manifest records 5000"):
        t.refresh().read()
    t.write(data(t, range(0, 10), 2))
    with pytest.raises(CorruptFileError, match=re.escape(meta.file_name)):
        t.refresh().compact(full=True)


def test_append_table_avro_file_cut_between_blocks_raises_corrupt_file_error(tmp_path: Path) -> None:
    """The same check for append tables (no primary key), whose files have no key columns."""
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = cat.create_table("db.events", schema=schema, options={"file.format": "avro"})
    t.write(pa.table({"id": list(range(20_000)), "v": [f"v{i}" for i in range(20_000)]}, schema=schema))
    (meta,) = live_files(t)
    # Two more small files, so that a full compaction has work here and reads the cut file.
    for i in range(2):
        t.write(pa.table({"id": [10_000 + i], "v": ["x"]}, schema=schema))
    path = file_path(t, meta.file_name)
    content = path.read_bytes()
    with path.open("rb") as f:
        sync = fastavro.reader(f)._header["sync"]
    ends = [m.end() for m in re.finditer(re.escape(sync), content)]
    assert len(ends) > 2, "the file should hold several blocks"
    path.write_bytes(content[: ends[1]])
    with pytest.raises(CorruptFileError, match=re.escape(meta.file_name) + ".*manifest records 20000"):
        t.refresh().read()
    with pytest.raises(CorruptFileError, match=re.escape(meta.file_name)):
        t.refresh().compact(full=True)


def test_unknown_formats_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedError, match=r"'file\.format'='lance'"):
        create(tmp_path, "lance", {"bucket": "1", "file.format": "lance"})
    with pytest.raises(UnsupportedError, match=r"'file\.format\.per\.level'='vortex'"):
        create(tmp_path, "vortex", {"bucket": "1", "file.format.per.level": "0:vortex"})
    with pytest.raises(InvalidOptionError, match=r"file\.format\.per\.level"):
        create(tmp_path, "bad_map", {"bucket": "1", "file.format.per.level": "zero:avro"})
    fio = FileIO.get(str(tmp_path), {})
    with pytest.raises(UnsupportedError, match=r"data-1\.lance"):
        open_data_file(fio, f"{tmp_path}/data-1.lance")


def test_avro_schema_follows_paimon() -> None:
    schema = pa.schema(
        [
            pa.field("_KEY_id", pa.int64(), nullable=False),
            pa.field("_VALUE_KIND", pa.int8(), nullable=False),
            pa.field("ts", pa.timestamp("ms")),
            pa.field("r", pa.struct([pa.field("a", pa.int32())])),
        ]
    )
    avro = avro_schema(schema)
    assert avro["name"] == "record" and avro["namespace"] == "org.apache.paimon.avro.generated"
    fields = {f["name"]: f for f in avro["fields"]}
    assert fields["_KEY_id"]["type"] == "long" and fields["_VALUE_KIND"]["type"] == "int"
    assert fields["ts"]["type"] == ["null", {"type": "long", "logicalType": "timestamp-millis"}]
    assert fields["ts"]["default"] is None
    assert fields["r"]["type"][1]["name"] == "record_r"
    with pytest.raises(UnsupportedError, match="precision 6"):
        avro_schema(pa.schema([pa.field("ns", pa.timestamp("ns"))]))


@pytest.mark.parametrize("fmt", FORMATS)
def test_sliced_nested_columns_written_in_pieces(tmp_path: Path, fmt: str) -> None:
    from stratalake.lsm.file_format import file_format

    table = pa.table(
        {
            "x": list(range(10)),
            "r": pa.array(
                [None if i % 3 == 0 else {"a": i, "l": [i, None] if i % 2 else None} for i in range(10)]
            ),
            "l": pa.array([None if i % 4 == 0 else [{"q": i}] for i in range(10)]),
        }
    )
    fio = FileIO.get(str(tmp_path), {})
    path = f"{tmp_path}/data-x-0.{fmt}"
    writer = file_format(fmt).open_writer(fio, path, table.schema, "zstd")
    writer.write(pa.concat_tables([table.slice(0, 3), table.slice(3, 2)]))
    writer.write(table.slice(5))
    writer.close()
    reader = open_data_file(fio, path)
    assert reader.read().to_pylist() == table.to_pylist()
    assert (
        pa.Table.from_batches(list(reader.iter_batches(["l", "x"], 3))).to_pylist()
        == table.select(["l", "x"]).to_pylist()
    )


@pytest.mark.parametrize(
    ("key_type", "delta"),
    [("TINYINT", True), ("SMALLINT", True), ("INT", True), ("BIGINT", True), ("BIGINT", False), ("BIGINT", None)],
)
def test_integer_keys_and_sequence_numbers_are_delta_encoded(
    tmp_path: Path, key_type: str, delta: bool | None
) -> None:
    """With ``'parquet.delta-keys' = 'true'`` Parquet key-value files store integer key columns
    (their ``_KEY_`` copy and the value column) and sequence numbers DELTA_BINARY_PACKED: a file
    is sorted by key, so they pack into few bits and decode fast. Other columns keep their
    encodings; the rows read back. By default (None here) and with ``'false'`` no column is
    delta-encoded, as Paimon's own writer does (its 0.9 reader decodes PLAIN and
    dictionary pages only)."""
    import pyarrow.parquet as pq

    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=[("k", f"{key_type} NOT NULL"), ("s", "STRING NOT NULL"), ("v", "BIGINT")],
        primary_key=["k", "s"],
        options={"bucket": "1"} if delta is None else {"bucket": "1", "parquet.delta-keys": str(delta).lower()},
    )
    delta = bool(delta)
    rows = pa.Table.from_pylist(
        [{"k": k, "s": f"s{k % 3}", "v": k * 7} for k in range(-100, 100)], schema=t.arrow_schema()
    )
    t.write(rows)
    (meta,) = live_files(t)
    md = pq.ParquetFile(file_path(t, meta.file_name)).metadata.row_group(0)
    encodings = {md.column(i).path_in_schema: set(md.column(i).encodings) for i in range(md.num_columns)}
    for name in ("_KEY_k", "k", "_SEQUENCE_NUMBER"):
        assert ("DELTA_BINARY_PACKED" in encodings[name]) == delta, name
    t.write(rows)
    t.compact(full=True)  # two runs merged: compaction writes through the same option
    (meta,) = live_files(t)
    md = pq.ParquetFile(file_path(t, meta.file_name)).metadata.row_group(0)
    encodings = {md.column(i).path_in_schema: set(md.column(i).encodings) for i in range(md.num_columns)}
    assert ("DELTA_BINARY_PACKED" in encodings["_KEY_k"]) == delta
    for name in ("_KEY_s", "s", "v"):
        assert "DELTA_BINARY_PACKED" not in encodings[name], name
    assert sorted(t.read().to_pylist(), key=lambda r: (r["k"], r["s"])) == sorted(
        rows.to_pylist(), key=lambda r: (r["k"], r["s"])
    )


@pytest.mark.parametrize("primary_key", [["k"], None])
def test_avro_data_files_with_paimon_javas_nullable_row_schema_read(tmp_path: Path, primary_key: list[str] | None) -> None:
    """Paimon Java's Avro writer declares the row nullable: a data file's top-level writer schema
    is the union ``["null", record]``. Such files (the same records, re-encoded with that schema
    here) read like stratalake's own plain-record files; a null row is refused as corrupt."""
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=[("k", "BIGINT NOT NULL"), ("v", "STRING"), ("d", "DECIMAL(10, 2)")],
        primary_key=primary_key,
        options={"bucket": "1" if primary_key else "-1", "file.format": "avro"},
    )
    rows = pa.table(
        {"k": pa.array(range(50), pa.int64()), "v": [f"v{i}" if i % 5 else None for i in range(50)],
         "d": pa.array([Decimal(i) / 4 for i in range(50)], pa.decimal128(10, 2))}
    )
    t.write(rows)
    expected = sorted(t.read().to_pylist(), key=lambda r: r["k"])
    (meta,) = live_files(t)
    path = file_path(t, meta.file_name)
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        record, codec, records = reader.writer_schema, reader.codec, list(reader)
    assert isinstance(record, dict) and record["type"] == "record"  # stratalake writes the plain record
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(["null", record]), records, codec=codec)
    fresh = cat.get_table("db.t")
    assert sorted(fresh.read().to_pylist(), key=lambda r: r["k"]) == expected
    assert fresh.read(columns=["v"]).num_rows == 50  # a projection prunes inside the union's record
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(["null", record]), [*records[:-1], None], codec=codec)
    with pytest.raises(CorruptFileError, match="null row"):
        cat.get_table("db.t").read()


@pytest.mark.parametrize("paimon", stratalake.types.ATOMIC_TYPES, ids=str)
def test_every_supported_type_has_its_avro_type(paimon: stratalake.types.DataType) -> None:
    """Each type of the one list (``types.ATOMIC_TYPES``) has an Avro type, and a row in the table
    of docs/format.md section 6.5 that says which."""
    schema = avro_schema(pa.schema([stratalake.types.arrow_field("c", paimon)]))
    assert schema["fields"][0]["name"] == "c"
    doc = (Path(__file__).parents[2] / "docs" / "format.md").read_text()
    table = doc[doc.index("### 6.5 Avro") : doc.index("### 6.6")]
    documented = {
        re.split(r"[(<\s]", name.strip())[0]
        for row in re.findall(r"^\| ([^|`]+) \|", table, re.MULTILINE)
        for name in row.split(",")
    }
    root = re.split(r"[(\s]", str(paimon))[0]
    ltz = isinstance(paimon, stratalake.types.LocalZonedTimestampType)
    assert ("TIMESTAMP_LTZ" if ltz else root) in documented, (root, documented)
