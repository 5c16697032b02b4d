"""Avro codecs of manifests, manifest lists and index manifests (docs/format.md sections 4, 5, 10)."""

from __future__ import annotations

import copy
import dataclasses
import io
import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratalake.exceptions import CorruptFileError, UnsupportedError
from stratalake.spec import avro
from stratalake.spec.avro import (
    decode_index_manifest_entries,
    decode_manifest_entries,
    decode_manifest_file_metas,
    encode_index_manifest_entries,
    encode_manifest_entries,
    encode_manifest_file_metas,
)
from stratalake.spec.manifest import (
    DataFileMeta,
    DeletionVectorRange,
    FileKind,
    GlobalIndexMeta,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)
from stratalake.spec.schema import TableSchema
from stratalake.spec.snapshot import Snapshot

EMPTY = b"\x00\x00\x00\x00" + bytes(8)
ROW = b"\x00\x00\x00\x01" + bytes(8) + (4).to_bytes(8, "little")
STATS = SimpleStats(ROW, ROW, (0,))


def make_file(i: int = 0, **kw: Any) -> DataFileMeta:
    base: dict[str, Any] = dict(
        file_name=f"data-{i}.parquet",
        file_size=1000 + i,
        row_count=10,
        min_key=ROW,
        max_key=ROW,
        key_stats=STATS,
        value_stats=SimpleStats(EMPTY, EMPTY, ()),
        min_sequence_number=i,
        max_sequence_number=i + 9,
        schema_id=0,
        level=0,
        creation_time=1_700_000_000_123 + i,
        delete_row_count=0,
        file_source=0,
        value_stats_cols=(),
    )
    base.update(kw)
    return DataFileMeta(**base)


def make_entry(i: int = 0, **file_kw: Any) -> ManifestEntry:
    return ManifestEntry(FileKind.ADD, ROW, i % 2, 2, make_file(i, **file_kw))


def full_entry() -> ManifestEntry:
    """Every optional field set, to catch a field that is dropped or swapped."""
    f = make_file(
        7,
        extra_files=("data-7.parquet.index",),
        embedded_file_index=b"\x01\x02",
        value_stats_cols=("a", "b"),
        external_path="s3://bucket/ext/data-7.parquet",
        first_row_id=123,
        write_cols=("a",),
        write_cols_sequences=(5, 6),
        key_stats=SimpleStats(ROW, ROW, (None,)),
        value_stats=SimpleStats(ROW, ROW, None),
        level=3,
        file_source=1,
        delete_row_count=4,
    )
    return ManifestEntry(FileKind.DELETE, EMPTY, 1, 4, f)


def make_meta(i: int = 0, **kw: Any) -> ManifestFileMeta:
    base: dict[str, Any] = dict(
        file_name=f"manifest-{i}",
        file_size=2000 + i,
        num_added_files=3,
        num_deleted_files=1,
        partition_stats=SimpleStats(ROW, ROW, (0,)),
        schema_id=0,
        min_bucket=0,
        max_bucket=1,
        min_level=0,
        max_level=5,
    )
    base.update(kw)
    return ManifestFileMeta(**base)


def make_index(i: int = 0) -> IndexManifestEntry:
    return IndexManifestEntry(
        FileKind.ADD,
        ROW,
        i,
        "DELETION_VECTORS",
        f"index-{i}",
        100,
        2,
        dv_ranges=(
            DeletionVectorRange("data-1.parquet", 1, 24, 3),
            DeletionVectorRange("data-2.parquet", 25, 20),
        ),
    )


def header_schema(data: bytes) -> dict[str, Any]:
    schema: Any = fastavro.reader(io.BytesIO(data)).writer_schema
    return dict(schema)


# ------------------------------------------------------------------------------------------ round trips


def test_manifest_entries_round_trip() -> None:
    entries = [make_entry(i) for i in range(5)] + [full_entry()]
    assert decode_manifest_entries(encode_manifest_entries(entries), "m") == entries


def test_manifest_file_metas_round_trip() -> None:
    metas = [
        make_meta(0),
        make_meta(1, min_row_id=0, max_row_id=99, total_buckets=2, extra_files=("x",)),
        make_meta(2, min_bucket=None, max_bucket=None, min_level=None, max_level=None),
    ]
    assert decode_manifest_file_metas(encode_manifest_file_metas(metas), "l") == metas


def test_index_manifest_entries_round_trip() -> None:
    hash_entry = IndexManifestEntry(FileKind.DELETE, EMPTY, 0, "HASH", "index-h", 40, 10)
    global_entry = dataclasses.replace(
        make_index(2),
        dv_ranges=None,
        external_path="s3://b/index-2",
        global_index=GlobalIndexMeta(0, 99, 3, (4, 5), b"m", None),
    )
    entries = [make_index(0), hash_entry, global_entry]
    assert decode_index_manifest_entries(encode_index_manifest_entries(entries), "i") == entries


def test_empty_files_round_trip() -> None:
    assert decode_manifest_entries(encode_manifest_entries([]), "m") == []
    assert decode_manifest_file_metas(encode_manifest_file_metas([]), "l") == []
    assert decode_index_manifest_entries(encode_index_manifest_entries([]), "i") == []


_opt_int = st.none() | st.integers(0, 2**31 - 1)
_names = st.lists(st.text(max_size=8), max_size=3).map(tuple)
_stats = st.builds(
    SimpleStats,
    st.binary(max_size=24),
    st.binary(max_size=24),
    st.none() | st.lists(st.none() | st.integers(0, 2**62), max_size=4).map(tuple),
)


@st.composite
def _entries(draw: st.DrawFn) -> ManifestEntry:
    lo = draw(st.integers(-(2**62), 2**62))
    f = DataFileMeta(
        file_name=draw(st.text(min_size=1, max_size=20)),
        file_size=draw(st.integers(0, 2**62)),
        row_count=draw(st.integers(0, 2**62)),
        min_key=draw(st.binary(max_size=24)),
        max_key=draw(st.binary(max_size=24)),
        key_stats=draw(_stats),
        value_stats=draw(_stats),
        min_sequence_number=lo,
        max_sequence_number=lo + draw(st.integers(0, 1000)),
        schema_id=draw(st.integers(0, 100)),
        level=draw(st.integers(0, 9)),
        extra_files=draw(_names),
        creation_time=draw(st.none() | st.integers(0, 2**41)),
        delete_row_count=draw(st.none() | st.integers(0, 2**40)),
        embedded_file_index=draw(st.none() | st.binary(max_size=8)),
        file_source=draw(st.none() | st.sampled_from([0, 1])),
        value_stats_cols=draw(st.none() | _names),
        external_path=draw(st.none() | st.text(max_size=10)),
        first_row_id=draw(st.none() | st.integers(0, 2**62)),
        write_cols=draw(st.none() | _names),
        write_cols_sequences=draw(st.none() | st.lists(st.integers(-(2**62), 2**62), max_size=3).map(tuple)),
    )
    return ManifestEntry(
        draw(st.sampled_from(list(FileKind))),
        draw(st.binary(max_size=24)),
        draw(st.integers(-2, 2**31 - 1)),
        draw(st.integers(-2, 2**31 - 1)),
        f,
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(_entries(), max_size=6))
def test_manifest_entries_round_trip_property(entries: list[ManifestEntry]) -> None:
    assert decode_manifest_entries(encode_manifest_entries(entries), "m") == entries


# ------------------------------------------------------------------------------------------ on-disk layout


def test_container_uses_zstandard_and_java_record_names() -> None:
    data = encode_manifest_entries([make_entry()])
    reader = fastavro.reader(io.BytesIO(data))
    assert reader.codec == "zstandard"
    schema: Any = reader.writer_schema
    assert schema["name"] == "org.apache.paimon.avro.generated.record"
    file_type = next(f["type"] for f in schema["fields"] if f["name"] == "_FILE")
    assert file_type["name"] == "org.apache.paimon.avro.generated.record__FILE"
    key_stats = next(f["type"] for f in file_type["fields"] if f["name"] == "_KEY_STATS")
    assert key_stats["name"] == "org.apache.paimon.avro.generated.record__FILE__KEY_STATS"


def _names_of(schema: dict[str, Any]) -> list[str]:
    return [f["name"] for f in schema["fields"]]


def test_manifest_entry_field_order() -> None:
    schema = header_schema(encode_manifest_entries([make_entry()]))
    assert _names_of(schema) == ["_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS", "_FILE"]
    file_schema = schema["fields"][5]["type"]
    assert _names_of(file_schema) == [
        "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS", "_VALUE_STATS",
        "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL", "_EXTRA_FILES",
        "_CREATION_TIME", "_DELETE_ROW_COUNT", "_EMBEDDED_FILE_INDEX", "_FILE_SOURCE",
        "_VALUE_STATS_COLS", "_EXTERNAL_PATH", "_FIRST_ROW_ID", "_WRITE_COLS", "_WRITE_COLS_SEQUENCES",
    ]  # fmt: skip
    creation = next(f for f in file_schema["fields"] if f["name"] == "_CREATION_TIME")
    assert creation["type"] == ["null", {"type": "long", "logicalType": "timestamp-millis"}]
    assert creation["default"] is None


def test_every_union_defaults_to_null() -> None:
    def walk(schema: Any) -> Iterator[dict[str, Any]]:
        if isinstance(schema, dict):
            for f in schema.get("fields", []):
                yield f
                yield from walk(f["type"])
            yield from walk(schema.get("items"))
        elif isinstance(schema, list):
            for s in schema:
                yield from walk(s)

    for schema in (
        avro.MANIFEST_ENTRY_SCHEMA,
        avro.MANIFEST_FILE_META_SCHEMA,
        avro.INDEX_MANIFEST_ENTRY_SCHEMA,
    ):
        for f in walk(schema):
            if isinstance(f["type"], list):
                assert f["type"][0] == "null" and f.get("default", "missing") is None, f["name"]
            else:
                assert "default" not in f, f["name"]


def test_creation_time_is_epoch_millis_on_disk() -> None:
    data = encode_manifest_entries([make_entry(creation_time=1_700_000_000_123)])
    record: Any
    (record,) = fastavro.reader(io.BytesIO(data))
    # fastavro maps the timestamp-millis long to a UTC datetime, exactly.
    assert record["_FILE"]["_CREATION_TIME"] == datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)


# ------------------------------------------------------------------------------------------ other writers


def _rewrite(data: bytes, mutate: Any) -> bytes:
    """Re-encode ``data`` under a schema changed by ``mutate(schema, records)``."""
    reader = fastavro.reader(io.BytesIO(data))
    schema = copy.deepcopy(reader.writer_schema)
    records = list(reader)
    schema = mutate(schema, records) or schema
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec="null")
    return buf.getvalue()


def test_decodes_older_writer_without_trailing_optional_fields() -> None:
    entry = make_entry(3, value_stats_cols=None, file_source=None, delete_row_count=None)

    def drop(schema: dict[str, Any], records: list[Any]) -> None:
        file_schema = schema["fields"][5]["type"]
        # A Paimon 0.8-era DataFileMeta: nothing after _CREATION_TIME... except _DELETE_ROW_COUNT.
        keep = file_schema["fields"][:14]
        file_schema["fields"] = keep
        for r in records:
            r["_FILE"] = {k: v for k, v in r["_FILE"].items() if k in {f["name"] for f in keep}}

    (decoded,) = decode_manifest_entries(_rewrite(encode_manifest_entries([entry]), drop), "old")
    assert decoded == dataclasses.replace(entry, file=dataclasses.replace(entry.file, value_stats_cols=None))

    meta = make_meta(0)

    def drop_meta(schema: dict[str, Any], records: list[Any]) -> None:
        schema["fields"] = schema["fields"][:7]  # Paimon 0.9: no bucket/level/row-id stats

    (m,) = decode_manifest_file_metas(_rewrite(encode_manifest_file_metas([meta]), drop_meta), "old")
    assert m == dataclasses.replace(meta, min_bucket=None, max_bucket=None, min_level=None, max_level=None)

    def drop_index(schema: dict[str, Any], records: list[Any]) -> None:
        schema["fields"] = schema["fields"][:9]  # before _EXTERNAL_PATH and _GLOBAL_INDEX

    (ix,) = decode_index_manifest_entries(
        _rewrite(encode_index_manifest_entries([make_index()]), drop_index), "o"
    )
    assert ix == make_index()


def test_decodes_newer_writer_with_unknown_fields_and_other_record_names() -> None:
    entry = make_entry(1)

    def extend(schema: dict[str, Any], records: list[Any]) -> None:
        schema["name"] = "ManifestEntry"  # pypaimon's name
        schema.pop("namespace", None)
        schema["fields"][5]["type"]["fields"].append(
            {"name": "_FUTURE", "type": ["null", "long"], "default": None}
        )
        schema["fields"].append({"name": "_ALSO_FUTURE", "type": "string"})
        for r in records:
            r["_FILE"]["_FUTURE"] = 5
            r["_ALSO_FUTURE"] = "x"

    assert decode_manifest_entries(_rewrite(encode_manifest_entries([entry]), extend), "new") == [entry]


def test_decodes_top_level_nullable_union() -> None:
    # paimon-rust writes ["null", record] at the top level.
    entry = make_entry(2)

    def wrap(schema: dict[str, Any], records: list[Any]) -> list[Any]:
        return ["null", schema]

    assert decode_manifest_entries(_rewrite(encode_manifest_entries([entry]), wrap), "rust") == [entry]


def test_unsupported_version() -> None:
    def bump(schema: dict[str, Any], records: list[Any]) -> None:
        for r in records:
            r["_VERSION"] = 1

    with pytest.raises(UnsupportedError, match=r"manifest-x.*version 1"):
        decode_manifest_entries(_rewrite(encode_manifest_entries([make_entry()]), bump), "manifest-x")


def test_missing_required_field_is_corrupt() -> None:
    def drop(schema: dict[str, Any], records: list[Any]) -> None:
        schema["fields"] = [f for f in schema["fields"] if f["name"] != "_BUCKET"]

    with pytest.raises(CorruptFileError, match="manifest-y"):
        decode_manifest_entries(_rewrite(encode_manifest_entries([make_entry()]), drop), "manifest-y")


# ------------------------------------------------------------------------------------------ corruption


@pytest.mark.parametrize(
    ("encode", "decode", "value"),
    [
        (encode_manifest_entries, decode_manifest_entries, make_entry()),
        (encode_manifest_file_metas, decode_manifest_file_metas, make_meta()),
        (encode_index_manifest_entries, decode_index_manifest_entries, make_index()),
    ],
)
def test_truncated_input_is_corrupt(encode: Any, decode: Any, value: Any) -> None:
    data = encode([value] * 3)
    # The header ends with the sync marker that also ends every block. A cut exactly there leaves
    # a valid container without blocks; Avro has no footer, so that one cannot be detected.
    header_end = data.index(data[-16:]) + 16
    for cut in range(len(data)):
        if cut != header_end:
            with pytest.raises(CorruptFileError, match="/wh/manifest/f"):
                decode(data[:cut], "/wh/manifest/f")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"garbage",
        b"Obj\x01garbage",
        b"{}",
        random.Random(0).randbytes(300),
        encode_manifest_file_metas([make_meta()]),
    ],
)
def test_garbage_is_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptFileError, match="manifest-z"):
        decode_manifest_entries(data, "manifest-z")


def test_flipped_byte_in_block_is_corrupt() -> None:
    data = bytearray(encode_manifest_entries([make_entry(i) for i in range(20)]))
    data[len(data) - 40] ^= 0xFF  # inside the compressed block
    with pytest.raises(CorruptFileError):
        decode_manifest_entries(bytes(data), "m")


# ------------------------------------------------------------------------------------------ speed


@pytest.mark.timing
def test_decode_10k_entries_speed() -> None:
    entries = [make_entry(i, value_stats=SimpleStats(ROW, ROW, (0, 1, None))) for i in range(10_000)]
    data = encode_manifest_entries(entries)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        decoded = decode_manifest_entries(data, "m")
        best = min(best, time.perf_counter() - start)
    assert decoded == entries
    print(f"decode 10k entries: {best * 1000:.0f} ms ({len(data)} bytes)")
    assert best < 2.0  # ~0.2 s on a laptop core


# ------------------------------------------------------------------------------------------ pypaimon


def _normalize(obj: Any) -> Any:
    """pypaimon objects as comparable plain values (its BinaryRow has no __eq__)."""
    name = type(obj).__name__
    if name == "BinaryRow":
        return ("BinaryRow", bytes(obj.data))
    if name == "GenericRow":
        return ("GenericRow", tuple(_normalize(v) for v in obj.values))
    if name == "Timestamp":
        return ("Timestamp", obj.get_millisecond(), obj.get_nano_of_millisecond())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return (name, tuple((f.name, _normalize(getattr(obj, f.name))) for f in dataclasses.fields(obj)))
    if isinstance(obj, list | tuple):
        return tuple(_normalize(v) for v in obj)
    if isinstance(obj, dict):
        return tuple(sorted((k, _normalize(v)) for k, v in obj.items()))
    return obj


@pytest.fixture(scope="module")
def paimon_table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A pypaimon primary-key table: partitioned by dt, bucket=2, three commits."""
    pypaimon = pytest.importorskip("pypaimon")
    warehouse = tmp_path_factory.mktemp("wh")
    catalog = pypaimon.CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", False)
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("v", pa.string()),
            pa.field("dt", pa.string(), nullable=False),
        ]
    )
    catalog.create_table(
        "db.t",
        pypaimon.Schema.from_pyarrow_schema(
            schema, partition_keys=["dt"], primary_keys=["id", "dt"], options={"bucket": "2"}
        ),
        False,
    )
    table = catalog.get_table("db.t")
    for i in range(3):
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        write.write_arrow(
            pa.table(
                {
                    "id": [1 + i, 2, 3, 10 + i],
                    "v": [f"a{i}", "b", None, "x"],
                    "dt": ["2024-01-01", "2024-01-01", "2024-01-02", "2024-01-02"],
                },
                schema=schema,
            )
        )
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()
    return table, Path(warehouse) / "db.db" / "t"


def _live_files(table_dir: Path) -> set[str]:
    return {p.name for p in table_dir.rglob("data-*.parquet")}


@pytest.mark.interop
def test_decodes_pypaimon_table(paimon_table: Any) -> None:
    _, table_dir = paimon_table
    snapshot = Snapshot.from_json((table_dir / "snapshot" / "snapshot-3").read_text(), "snapshot-3")
    assert snapshot.id == 3
    schema = TableSchema.from_json((table_dir / "schema" / "schema-0").read_text(), "schema-0")
    assert schema.primary_keys == ("id", "dt") and schema.partition_keys == ("dt",)
    assert schema.trimmed_primary_keys == ("id",) and schema.bucket_keys == ("id",)

    manifest_dir = table_dir / "manifest"
    metas = []
    for name, size in (
        (snapshot.base_manifest_list, snapshot.base_manifest_list_size),
        (snapshot.delta_manifest_list, snapshot.delta_manifest_list_size),
    ):
        data = (manifest_dir / name).read_bytes()
        assert size is None or size == len(data)
        metas += decode_manifest_file_metas(data, str(manifest_dir / name))
    assert len(metas) == 3  # pypaimon never merges manifests: one per commit

    live: dict[tuple[bytes, int, str], ManifestEntry] = {}
    for meta in metas:
        data = (manifest_dir / meta.file_name).read_bytes()
        assert meta.file_size == len(data)
        entries = decode_manifest_entries(data, meta.file_name)
        assert meta.num_added_files == sum(e.kind == FileKind.ADD for e in entries)
        assert meta.num_deleted_files == sum(e.kind == FileKind.DELETE for e in entries)
        assert meta.min_bucket == min(e.bucket for e in entries)
        assert meta.max_bucket == max(e.bucket for e in entries)
        for e in entries:
            assert e.version == 2 and e.total_buckets == 2 and e.bucket in (0, 1)
            assert e.file.schema_id == 0 and e.file.level == 0
            assert e.file.creation_time is not None
            assert abs(e.file.creation_time - snapshot.time_millis) < 86_400_000 * 2  # local-time skew
            assert b"2024-01-0" in e.partition
            assert (
                table_dir / _partition_dir(e.partition) / f"bucket-{e.bucket}" / e.file.file_name
            ).exists()
            if e.kind == FileKind.ADD:
                live[e.identifier()] = e
            else:
                del live[e.identifier()]
    assert {e.file.file_name for e in live.values()} == _live_files(table_dir)
    assert sum(e.file.row_count for e in live.values()) == snapshot.total_record_count


def _partition_dir(partition: bytes) -> str:
    # ('2024-01-0x') is stored inline-long: 10 bytes at offset 16 (docs/format.md section 7 vector).
    value = partition[4 + 16 : 4 + 26].decode()
    return f"dt={value}"


@pytest.mark.interop
def test_reencoded_manifests_read_back_identically_by_pypaimon(paimon_table: Any) -> None:
    from pypaimon.manifest.index_manifest_file import IndexManifestFile
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    table, table_dir = paimon_table
    manifest_dir = table_dir / "manifest"
    snapshot = Snapshot.from_json((table_dir / "snapshot" / "snapshot-3").read_text())
    lists, files = ManifestListManager(table), ManifestFileManager(table)

    for list_name in (snapshot.base_manifest_list, snapshot.delta_manifest_list):
        original = (manifest_dir / list_name).read_bytes()
        ours = encode_manifest_file_metas(decode_manifest_file_metas(original, list_name))
        (manifest_dir / f"{list_name}-reencoded").write_bytes(ours)
        assert _normalize(lists.read(f"{list_name}-reencoded")) == _normalize(lists.read(list_name))
        assert list(fastavro.reader(io.BytesIO(ours))) == list(fastavro.reader(io.BytesIO(original)))

        for meta in lists.read(list_name):
            original = (manifest_dir / meta.file_name).read_bytes()
            ours = encode_manifest_entries(decode_manifest_entries(original, meta.file_name))
            (manifest_dir / f"{meta.file_name}-reencoded").write_bytes(ours)
            theirs_a = files.read(meta.file_name, drop_stats=False)
            theirs_b = files.read(f"{meta.file_name}-reencoded", drop_stats=False)
            assert len(theirs_a) > 0
            assert _normalize(theirs_b) == _normalize(theirs_a)
            # pypaimon's bucket-pruning fast path parses our writer schema positionally.
            bucket_0 = {"early_entry_filter": lambda bucket, total: bucket == 0, "drop_stats": False}
            pruned_a = files.read(meta.file_name, **bucket_0)
            assert _normalize(files.read(f"{meta.file_name}-reencoded", **bucket_0)) == _normalize(pruned_a)
            # The decoded Avro records are equal value for value, creation time included.
            assert list(fastavro.reader(io.BytesIO(ours))) == list(fastavro.reader(io.BytesIO(original)))

    # Index manifests: pypaimon writes one from its own objects; we decode, re-encode, it reads.
    from pypaimon.index.deletion_vector_meta import DeletionVectorMeta
    from pypaimon.index.index_file_meta import IndexFileMeta
    from pypaimon.manifest.index_manifest_entry import IndexManifestEntry as PaimonIndexEntry
    from pypaimon.table.row.generic_row import GenericRow

    index_io = IndexManifestFile(table)
    partition = GenericRow(["2024-01-01"], table.partition_keys_fields)
    dv = {"data-1.parquet": DeletionVectorMeta("data-1.parquet", 1, 22, 3)}
    theirs = [
        PaimonIndexEntry(
            0, partition, 1, IndexFileMeta("DELETION_VECTORS", "index-a-0", 50, 1, dv_ranges=dv)
        ),
        PaimonIndexEntry(1, partition, 0, IndexFileMeta("HASH", "index-b-0", 40, 10)),
    ]
    name = index_io.write(theirs)
    original = (manifest_dir / name).read_bytes()
    decoded = decode_index_manifest_entries(original, name)
    assert [(e.kind, e.bucket, e.index_type, e.file_name) for e in decoded] == [
        (FileKind.ADD, 1, "DELETION_VECTORS", "index-a-0"),
        (FileKind.DELETE, 0, "HASH", "index-b-0"),
    ]
    assert decoded[0].dv_ranges == (DeletionVectorRange("data-1.parquet", 1, 22, 3),)
    (manifest_dir / "index-manifest-reencoded").write_bytes(encode_index_manifest_entries(decoded))
    assert _normalize(index_io.read("index-manifest-reencoded")) == _normalize(index_io.read(name))


@pytest.mark.interop
def test_schemas_match_pypaimon_structurally() -> None:
    """Same fields, types, order and defaults as pypaimon's schemas; only record names differ."""
    from pypaimon.manifest.index_manifest_file import INDEX_MANIFEST_ENTRY_SCHEMA
    from pypaimon.manifest.schema.manifest_entry import MANIFEST_ENTRY_SCHEMA
    from pypaimon.manifest.schema.manifest_file_meta import MANIFEST_FILE_META_SCHEMA

    def strip_records(schema: Any) -> Any:
        if isinstance(schema, dict):
            out = {k: strip_records(v) for k, v in schema.items()}
            if out.get("type") == "record":
                out.pop("name", None)
                out.pop("namespace", None)
            return out
        if isinstance(schema, list):
            return [strip_records(s) for s in schema]
        return schema

    assert strip_records(avro.MANIFEST_ENTRY_SCHEMA) == strip_records(MANIFEST_ENTRY_SCHEMA)
    assert strip_records(avro.MANIFEST_FILE_META_SCHEMA) == strip_records(MANIFEST_FILE_META_SCHEMA)
    assert strip_records(avro.INDEX_MANIFEST_ENTRY_SCHEMA) == strip_records(INDEX_MANIFEST_ENTRY_SCHEMA)
