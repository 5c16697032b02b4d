"""Avro data files column by column (spec/avro_columns.py), held to fastavro, an independent
record-by-record implementation of the same specification: what one writes the other reads, for
random schemas of every type Paimon's Avro files use, every codec, and damaged containers."""

from __future__ import annotations

import datetime as dt
import io
import sys
import zlib
from decimal import Context, Decimal
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratalake.lsm.file_format import _raw_for_avro, avro_schema
from stratalake.spec import avro_columns as ac

CODECS = ["null", "zstandard", "deflate", "snappy", "bzip2", "xz"]

# -- random Arrow schemas and values ---------------------------------------------------------------

_LEAVES: list[tuple[pa.DataType, st.SearchStrategy[Any]]] = [
    (pa.bool_(), st.booleans()),
    (pa.int8(), st.integers(-128, 127)),
    (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    (pa.float32(), st.floats(width=32, allow_nan=False)),
    (pa.float64(), st.floats(allow_nan=False)),
    (pa.string(), st.text(max_size=12)),
    (pa.binary(), st.binary(max_size=12)),
    (pa.date32(), st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))),
    (pa.time32("ms"), st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (pa.timestamp("ms"), st.datetimes().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (pa.timestamp("us"), st.datetimes()),
    (pa.timestamp("us", tz="UTC"), st.datetimes(timezones=st.just(dt.UTC))),
]


@st.composite
def decimals(draw: st.DrawFn) -> tuple[pa.DataType, st.SearchStrategy[Any]]:
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, precision))
    bound = 10**precision - 1
    values = st.integers(-bound, bound).map(lambda u: Decimal(u).scaleb(-scale, Context(prec=80)))
    return pa.decimal128(precision, scale), values


def _field(name: str, t: pa.DataType, values: st.SearchStrategy[Any], nullable: bool) -> Any:
    return (pa.field(name, t, nullable=nullable), st.none() | values if nullable else values)


@st.composite
def typed(draw: st.DrawFn, depth: int = 0) -> tuple[pa.DataType, st.SearchStrategy[Any]]:
    """An Arrow type Paimon stores in Avro, and a strategy of its (non-null) values."""
    kinds = ["leaf", "decimal"] + (["struct", "list", "map", "map_int"] if depth < 2 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "leaf":
        return draw(st.sampled_from(_LEAVES))
    if kind == "decimal":
        return draw(decimals())
    if kind == "struct":
        n = draw(st.integers(1, 3))
        fields, strategies = [], {}
        for i in range(n):
            t, values = draw(typed(depth + 1))
            nullable = draw(st.booleans())
            fields.append(pa.field(f"f{i}", t, nullable=nullable))
            strategies[f"f{i}"] = st.none() | values if nullable else values
        return pa.struct(fields), st.fixed_dictionaries(strategies)
    item_t, item_values = draw(typed(depth + 1))
    nullable = draw(st.booleans())
    items = st.none() | item_values if nullable else item_values
    if kind == "list":
        return pa.list_(pa.field("item", item_t, nullable=nullable)), st.lists(items, max_size=4)
    key_t, keys = (pa.string(), st.text(max_size=5)) if kind == "map" else (pa.int32(), st.integers(-5, 5))
    t = pa.map_(pa.field("key", key_t, nullable=False), pa.field("value", item_t, nullable=nullable))
    return t, st.dictionaries(keys, items, max_size=4).map(lambda d: list(d.items()))


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    n_cols = draw(st.integers(1, 4))
    rows = draw(st.integers(0, 30))
    fields, columns = [], []
    for i in range(n_cols):
        t, values = draw(typed())
        nullable = draw(st.booleans())
        fields.append(pa.field(f"c{i}", t, nullable=nullable))
        strategy = st.none() | values if nullable else values
        columns.append(pa.array(draw(st.lists(strategy, min_size=rows, max_size=rows)), type=t))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


# -- the oracle: fastavro, record by record --------------------------------------------------------


def _py(value: Any, t: pa.DataType) -> Any:
    """A value of a _raw_for_avro column as fastavro takes it (string-keyed maps as dicts)."""
    if value is None:
        return None
    if pa.types.is_map(t):
        if pa.types.is_string(t.key_type):
            return {k: _py(v, t.item_type) for k, v in value}
        return [{"key": k, "value": _py(v, t.item_type)} for k, v in value]
    if pa.types.is_struct(t):
        return {f.name: _py(value[f.name], f.type) for f in t}
    if pa.types.is_list(t):
        return [_py(v, t.value_type) for v in value]
    return value


def _raw(table: pa.Table) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [_raw_for_avro(c.combine_chunks()) for c in table.columns], names=table.column_names
    )


def fastavro_file(table: pa.Table, codec: str = "null") -> bytes:
    raw = _raw(table)
    names = table.column_names
    columns = [[_py(v, table.schema.field(n).type) for v in table.column(n).to_pylist()] for n in names]
    # fastavro takes temporal values as the stored integers once the columns are raw.
    records = []
    raw_lists = [c.to_pylist() for c in raw.columns]
    for i in range(table.num_rows):
        rec = {}
        for j, name in enumerate(names):
            t = table.schema.field(name).type
            rec[name] = columns[j][i] if pa.types.is_nested(t) else raw_lists[j][i]
        records.append(rec)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(avro_schema(table.schema)), records, codec=codec)
    return buf.getvalue()


def ours_file(table: pa.Table, codec: str = "null", pieces: int = 1) -> bytes:
    schema = avro_schema(table.schema)
    buf = io.BytesIO()
    writer = ac.ContainerWriter(buf, schema, codec)
    step = max(1, -(-table.num_rows // pieces))
    for start in range(0, table.num_rows, step):
        writer.write(ac.encode_records(schema, _raw(table.slice(start, step))))
    writer.flush()
    return buf.getvalue()


def records(data: bytes) -> list[Any]:
    return list(fastavro.reader(io.BytesIO(data)))


def decode(data: bytes, columns: list[str] | None = None) -> pa.Table:
    reader = ac.ContainerReader(data)
    fields = [pa.field(f["name"], *ac.arrow_type(f["type"])) for f in reader.schema["fields"]]
    target = pa.schema([f for f in fields if columns is None or f.name in columns])
    blocks = list(reader.blocks())
    if not blocks:
        return target.empty_table()
    return ac.decode_blocks(reader.schema, blocks, target.names, target)


def _expected(table: pa.Table) -> pa.Table:
    """``table`` in the types the Avro reader gives (TINYINT as int32)."""
    fields = [pa.field(f.name, *ac.arrow_type(t)) for f, t in zip(table.schema, _types(table), strict=True)]
    return table.cast(pa.schema(fields))


def _types(table: pa.Table) -> list[Any]:
    return [f["type"] for f in avro_schema(table.schema)["fields"]]


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(tables(), st.integers(1, 3))
def test_fastavro_reads_what_we_write_as_it_reads_its_own(table: pa.Table, pieces: int) -> None:
    assert records(ours_file(table, pieces=pieces)) == records(fastavro_file(table))


@SETTINGS
@given(tables())
def test_we_read_what_fastavro_writes(table: pa.Table) -> None:
    assert decode(fastavro_file(table)).equals(_expected(table))


@SETTINGS
@given(tables())
def test_round_trip(table: pa.Table) -> None:
    assert decode(ours_file(table)).equals(_expected(table))


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_both_ways(codec: str) -> None:
    n = 50_000
    table = pa.table({"k": pa.array(np.arange(n)), "s": pa.array([f"v{i % 97}" for i in range(n)])})
    ours = ours_file(table, codec)
    assert fastavro.reader(io.BytesIO(ours)).metadata["avro.codec"] == codec
    assert records(ours) == records(fastavro_file(table, codec))
    assert decode(fastavro_file(table, codec)).equals(_expected(table))
    # Blocks are cut as Avro Java cuts them: ~64,000 bytes of records each.
    counts = ac.ContainerReader(ours).block_counts()
    assert len(counts) > 2 and sum(counts) == n
    sizes = [len(b.records) for b in ac.ContainerReader(ours).blocks()]
    assert all(ac.BLOCK_BYTES <= s < ac.BLOCK_BYTES + 64 for s in sizes[:-1])


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50))
def test_varints_are_avros_longs(values: list[int]) -> None:
    encoded = ac.varints(np.array(values, dtype=np.int64)).to_pylist()
    for value, got in zip(values, encoded, strict=True):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, "long", value)
        assert got == buf.getvalue()


@given(st.integers(-(10**38) + 1, 10**38 - 1))
def test_decimals_take_the_fewest_bytes_as_java_writes_them(unscaled: int) -> None:
    """BigInteger.toByteArray: the shortest two's-complement big-endian form."""
    arr = pa.array([Decimal(unscaled)], pa.decimal128(38, 0))
    (got,) = ac._decimal_bytes(arr).to_pylist()
    size = (unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()) // 8 + 1
    body = unscaled.to_bytes(size, "big", signed=True)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, "long", len(body))
    assert got == buf.getvalue() + body


def test_a_null_in_a_not_null_column_is_refused_by_name() -> None:
    table = pa.table({"k": pa.array([1, None], pa.int64())})
    schema = avro_schema(pa.schema([pa.field("k", pa.int64(), nullable=False)]))
    with pytest.raises(ValueError, match=r"column record\.k holds nulls"):
        ac.encode_records(schema, _raw(table))


def test_a_not_null_child_of_a_null_row_needs_no_value() -> None:
    """Arrow keeps a slot for a null struct's children; they may be null even where not nullable."""
    child = pa.array([1, None], pa.int32())
    rows = pa.StructArray.from_arrays(
        [child], fields=[pa.field("x", pa.int32(), nullable=False)], mask=pa.array([False, True])
    )
    table = pa.table({"r": rows})
    assert records(ours_file(table)) == [{"r": {"x": 1}}, {"r": None}]


def test_paimon_java_10s_nullable_row_schema_is_read() -> None:
    """Paimon Java 1.0 declares the row ["null", record]: the same bytes plus a branch index."""
    table = pa.table({"k": pa.array([1, 2], pa.int64()), "s": pa.array(["a", None])})
    record = avro_schema(table.schema)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(["null", record]), table.to_pylist())
    reader = ac.ContainerReader(buf.getvalue())
    target = pa.schema([pa.field("s", pa.string())])
    got = ac.decode_blocks(reader.schema, list(reader.blocks()), ["s"], target)
    assert got.column("s").to_pylist() == ["a", None]
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(["null", record]), [table.to_pylist()[0], None])
    reader = ac.ContainerReader(buf.getvalue())
    with pytest.raises(ValueError, match="null row"):
        ac.decode_blocks(reader.schema, list(reader.blocks()), ["s"], target)


# -- damaged and crafted containers ----------------------------------------------------------------


def _one_block(schema: Any, count: int, body: bytes, codec: str = "null") -> bytes:
    sync = b"S" * 16
    return ac._header(schema, codec, sync) + ac._varint(count) + ac._varint(len(body)) + body + sync


LONGS = {"type": "record", "name": "r", "fields": [{"name": "k", "type": "long"}]}


def test_a_count_its_bytes_cannot_hold_is_refused_before_decoding() -> None:
    data = _one_block(LONGS, 1_000_000, b"\x02" * 10)
    with pytest.raises(ValueError, match="cannot hold 1000000 records"):
        list(ac.ContainerReader(data).blocks())


def test_a_wrong_sync_marker_is_refused() -> None:
    data = bytearray(_one_block(LONGS, 1, b"\x02"))
    data[-1] ^= 0xFF
    with pytest.raises(ValueError, match="sync marker"):
        ac.ContainerReader(bytes(data)).block_counts()


def test_a_block_inflating_past_the_limit_is_refused() -> None:
    body = zlib.compressobj(9, zlib.DEFLATED, -15)
    bomb = body.compress(bytes(4 << 20)) + body.flush()
    with pytest.raises(ValueError, match="inflates to more than"):
        ac.inflate_block("deflate", bomb, limit=1 << 20)


def test_records_that_do_not_decode_are_a_value_error_not_a_crash() -> None:
    """Bytes polars cannot decode (a string length past the block) fail as ValueError, whatever
    polars raises (its panics are BaseExceptions)."""
    schema = {"type": "record", "name": "r", "fields": [{"name": "s", "type": "string"}]}
    data = _one_block(schema, 2, ac._varint(100) + b"abc")
    reader = ac.ContainerReader(data)
    with pytest.raises(ValueError):
        ac.decode_blocks(reader.schema, list(reader.blocks()), ["s"], pa.schema([pa.field("s", pa.string())]))


def test_a_block_holding_fewer_records_than_declared_is_refused() -> None:
    data = _one_block(LONGS, 3, b"\x02\x04")
    reader = ac.ContainerReader(data)
    with pytest.raises(ValueError):
        ac.decode_blocks(reader.schema, list(reader.blocks()), ["k"], pa.schema([pa.field("k", pa.int64())]))


@pytest.mark.parametrize(
    "avro_type",
    [
        {"type": "enum", "name": "e", "symbols": ["A"]},
        {"type": "fixed", "name": "f", "size": 4},
        ["null", "int", "string"],
        {"type": "long", "logicalType": "time-micros"},
    ],
)
def test_types_paimon_does_not_write_are_refused(avro_type: Any) -> None:
    with pytest.raises(ac.UnsupportedError):
        ac.arrow_type(avro_type)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_without_polars_records_decode_through_fastavro(table: pa.Table) -> None:
    """Executors given stratalake as a zip (their Python holds only pyspark's dependencies) have
    no polars: the same blocks decode through fastavro's records, to the same table."""
    data = ours_file(table)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "polars", None)  # `import polars` raises ImportError
        assert decode(data).equals(_expected(table))
