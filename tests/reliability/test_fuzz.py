"""Fuzzing the decoders of on-disk bytes: binary rows, Avro manifests, snapshot and schema JSON.

Whatever the bytes, a decoder returns a value or raises a :class:`StrataLakeError` (in practice
``CorruptFileError``), never an unrelated exception, and never hangs (each example runs under an
alarm). Inputs are arbitrary bytes as well as mutations (bit flips, truncations, splices) of real
files written by a table, which reach much deeper into the decoders.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratalake.exceptions import StrataLakeError
from stratalake.io import FileIO
from stratalake.lsm.file_format import file_format, open_data_file
from stratalake.spec import avro
from stratalake.spec.binary_row import decode_row, encode_row
from stratalake.spec.schema import TableSchema
from stratalake.spec.snapshot import Snapshot
from stratalake.types import DataType
from tests.reliability.workload import batch, create_table

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TIME_LIMIT_S = 5


@contextlib.contextmanager
def time_limit(seconds: int = TIME_LIMIT_S) -> Iterator[None]:
    def on_alarm(signum: int, frame: Any) -> None:
        raise TimeoutError(f"decoder ran longer than {seconds}s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def decodes_or_raises_cleanly(decode: Callable[[], object]) -> None:
    with time_limit(), contextlib.suppress(StrataLakeError):
        decode()


@functools.cache
def real_files() -> dict[str, bytes]:
    """Bytes of real metadata files: manifests, manifest lists, a snapshot and a schema."""
    wh = tempfile.mkdtemp(prefix="stratalake-fuzz-")
    t = create_table(wh, bucket="2")
    for c in range(3):
        t.write(batch(0, c, 5))
    t.compact(full=True)
    snap = t.latest_snapshot()
    assert snap is not None
    root = Path(t.location)
    out = {
        "snapshot": (root / "snapshot" / f"snapshot-{snap.id}").read_bytes(),
        "schema": (root / "schema" / "schema-0").read_bytes(),
        "list": (root / "manifest" / snap.base_manifest_list).read_bytes(),
    }
    metas = t.manifest_io.read_list(snap.base_manifest_list) + t.manifest_io.read_list(
        snap.delta_manifest_list
    )
    out["manifest"] = (root / "manifest" / metas[0].file_name).read_bytes()
    out["avro-data"] = _avro_data_file(Path(wh) / "data-fuzz-0.avro")
    return out


def _avro_data_file(path: Path) -> bytes:
    """An Avro data file of nested and logical types, several blocks (the columnar codec's)."""
    n = 3000
    table = pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "s": pa.array([None if i % 5 == 0 else f"s{i}" for i in range(n)]),
            "dec": pa.array([i * 1001 for i in range(n)], pa.int64()).cast(pa.decimal128(22, 2)),
            "ts": pa.array(range(n), pa.int64()).cast(pa.timestamp("us")),
            "arr": pa.array([None if i % 4 == 0 else [i, None] for i in range(n)], pa.list_(pa.int32())),
            "m": pa.array([[("a", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
            "r": pa.array(
                [{"x": i, "y": str(i)} for i in range(n)], pa.struct([("x", pa.int32()), ("y", pa.string())])
            ),
        }
    )
    # Uncompressed: mutations then reach the records, not only a codec's checksum.
    file_format("avro").write(FileIO.get(str(path)), str(path), table, "none")
    return path.read_bytes()


def mutated(seed_name: str) -> st.SearchStrategy[bytes]:
    """A real file with random edits: byte flips, truncation, inserted garbage."""

    @st.composite
    def strategy(draw: st.DrawFn) -> bytes:
        data = bytearray(real_files()[seed_name])
        for _ in range(draw(st.integers(1, 6))):
            op = draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
            pos = draw(st.integers(0, max(len(data) - 1, 0)))
            if op == "flip" and data:
                data[pos] ^= 1 << draw(st.integers(0, 7))
            elif op == "truncate":
                del data[pos:]
            elif op == "insert":
                data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
            elif data:
                del data[pos : pos + draw(st.integers(1, 16))]
        return bytes(data)

    return strategy()


# -------------------------------------------------------------------------------------- binary rows
ROW_TYPES = [
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10, 2)",
    "DECIMAL(38, 4)", "STRING", "VARCHAR(5)", "BYTES", "DATE", "TIME", "TIMESTAMP(3)", "TIMESTAMP(6)",
    "TIMESTAMP(9)", "TIMESTAMP(6) WITH LOCAL TIME ZONE", "ARRAY<INT>",
]  # fmt: skip
types_st = st.lists(st.sampled_from(ROW_TYPES), min_size=0, max_size=5).map(
    lambda names: [DataType.parse(n) for n in names]
)


@FUZZ
@given(types=types_st, data=st.binary(max_size=200))
def test_binary_row_arbitrary_bytes(types: list[DataType], data: bytes) -> None:
    decodes_or_raises_cleanly(lambda: decode_row(data, types))


@FUZZ
@given(types=types_st, body=st.binary(max_size=160))
def test_binary_row_with_valid_arity(types: list[DataType], body: bytes) -> None:
    # The right arity prefix gets past the first check into the field decoders.
    data = len(types).to_bytes(4, "big") + body
    decodes_or_raises_cleanly(lambda: decode_row(data, types))


@FUZZ
@given(
    values=st.tuples(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), st.one_of(st.none(), st.text())),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 7)), max_size=4),
)
def test_binary_row_bit_flips(values: tuple[Any, Any], flips: list[tuple[int, int]]) -> None:
    types = [DataType.parse("BIGINT"), DataType.parse("STRING")]
    data = bytearray(encode_row(list(values), types))
    for pos, bit in flips:
        data[pos % len(data)] ^= 1 << bit
    decodes_or_raises_cleanly(lambda: decode_row(bytes(data), types))


# -------------------------------------------------------------------------------------- Avro
AVRO_DECODERS = {
    "manifest": avro.decode_manifest_entries,
    "list": avro.decode_manifest_file_metas,
    "index": avro.decode_index_manifest_entries,
}


@FUZZ
@given(kind=st.sampled_from(sorted(AVRO_DECODERS)), data=st.binary(max_size=400))
def test_avro_arbitrary_bytes(kind: str, data: bytes) -> None:
    decodes_or_raises_cleanly(lambda: AVRO_DECODERS[kind](data, "fuzz"))


@FUZZ
@given(data=st.one_of(st.binary(max_size=40).map(lambda b: b"Obj\x01" + b), st.just(b"Obj\x01")))
def test_avro_container_header_garbage(data: bytes) -> None:
    for decode in AVRO_DECODERS.values():
        decodes_or_raises_cleanly(lambda decode=decode: decode(data, "fuzz"))  # type: ignore[misc]


@FUZZ
@given(data=mutated("manifest"))
def test_avro_mutated_manifest(data: bytes) -> None:
    decodes_or_raises_cleanly(lambda: avro.decode_manifest_entries(data, "fuzz"))


@FUZZ
@given(data=mutated("list"))
def test_avro_mutated_manifest_list(data: bytes) -> None:
    decodes_or_raises_cleanly(lambda: avro.decode_manifest_file_metas(data, "fuzz"))


@FUZZ
@given(data=mutated("avro-data"))
def test_avro_mutated_data_file(data: bytes) -> None:
    """Data files decode through polars (Rust): whatever it meets (its panics included) is the
    file's CorruptFileError, and the container checks come first."""
    path = Path(tempfile.gettempdir()) / f"stratalake-fuzz-{os.getpid()}-data-0.avro"
    path.write_bytes(data)
    try:
        decodes_or_raises_cleanly(lambda: open_data_file(FileIO.get(str(path)), str(path)).read())
    finally:
        path.unlink()


# -------------------------------------------------------------------------------------- JSON
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def json_objects(seed_name: str) -> st.SearchStrategy[str]:
    """The real file's JSON object with some fields replaced by arbitrary JSON values or removed."""

    @st.composite
    def strategy(draw: st.DrawFn) -> str:
        obj = json.loads(real_files()[seed_name])
        keys = sorted(obj)
        for key in draw(st.lists(st.sampled_from(keys), max_size=4)):
            if draw(st.booleans()):
                obj[key] = draw(json_values)
            else:
                obj.pop(key, None)
        return json.dumps(obj)

    return strategy()


@FUZZ
@given(text=st.one_of(st.text(max_size=200), mutated("snapshot").map(lambda b: b.decode("latin-1"))))
def test_snapshot_json_arbitrary_text(text: str) -> None:
    decodes_or_raises_cleanly(lambda: Snapshot.from_json(text, "fuzz"))


@FUZZ
@given(text=json_objects("snapshot"))
def test_snapshot_json_wrong_field_types(text: str) -> None:
    def decode() -> None:
        snap = Snapshot.from_json(text, "fuzz")
        # What decodes is well-typed: the fields a reader uses are what they claim to be.
        assert isinstance(snap.id, int) and isinstance(snap.base_manifest_list, str)
        assert isinstance(snap.delta_manifest_list, str) and isinstance(snap.schema_id, int)

    decodes_or_raises_cleanly(decode)


@FUZZ
@given(data=st.one_of(st.binary(max_size=200), mutated("schema")))
def test_schema_json_arbitrary_bytes(data: bytes) -> None:
    decodes_or_raises_cleanly(lambda: TableSchema.from_json(data, "fuzz"))


@FUZZ
@given(text=json_objects("schema"))
def test_schema_json_wrong_field_types(text: str) -> None:
    decodes_or_raises_cleanly(lambda: TableSchema.from_json(text, "fuzz"))


def test_deeply_nested_json_is_corrupt_not_a_crash() -> None:
    for text in ("[" * 100_000, '{"a":' * 100_000):
        decodes_or_raises_cleanly(lambda text=text: Snapshot.from_json(text))  # type: ignore[misc]
        decodes_or_raises_cleanly(lambda text=text: TableSchema.from_json(text))  # type: ignore[misc]


def test_seed_files_decode() -> None:
    files = real_files()
    assert Snapshot.from_json(files["snapshot"].decode()).id >= 1
    assert TableSchema.from_json(files["schema"]).primary_keys == ("k",)
    assert avro.decode_manifest_entries(files["manifest"], "m")
    assert avro.decode_manifest_file_metas(files["list"], "l")
    assert pa.__version__  # pyarrow is what wrote the table
