"""Avro codecs for manifests, manifest lists and index manifests (docs/format.md sections 4, 5, 10).

Files are Avro object containers compressed with zstandard, as Paimon writes them. The record
schemas mirror what Java Paimon derives from its row types (``AvroSchemaConverter``): the top-level
record is ``org.apache.paimon.avro.generated.record``, nested records are named
``record_<FIELD>`` after the path to them, nullable fields are ``["null", T]`` with default null.

Decoding resolves fields by name, so files from older writers (fewer trailing nullable fields) and
newer writers (extra fields) both decode; a missing required field or a malformed container raises
:class:`~stratalake.exceptions.CorruptFileError` naming the file.
"""

from __future__ import annotations

import io
import json
import zlib
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final, TypeVar

import fastavro

from stratalake.exceptions import CorruptFileError, UnsupportedError
from stratalake.spec.avro_columns import Cursor, min_record_size, read_header
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

__all__ = [
    "decode_index_manifest_entries",
    "decode_manifest_blocks",
    "decode_manifest_entries",
    "decode_manifest_file_metas",
    "encode_index_manifest_entries",
    "encode_manifest_entries",
    "encode_manifest_file_metas",
]

Record = dict[str, Any]
T = TypeVar("T")

# Permanent on-disk format identifiers (Java: *Serializer.FORMAT_IDENTIFIER).
MANIFEST_ENTRY_VERSION: Final = 2
MANIFEST_FILE_META_VERSION: Final = 2
INDEX_MANIFEST_ENTRY_VERSION: Final = 1

CODEC: Final = "zstandard"
# Java Paimon's default `file.compression.zstd-level`.
ZSTD_LEVEL: Final = 1
# Avro Java's default sync interval: one block per ~64 KB of uncompressed records.
SYNC_INTERVAL: Final = 64_000

_NAMESPACE: Final = "org.apache.paimon.avro.generated"
_ROOT: Final = "record"


# --------------------------------------------------------------------------------------------
# Schemas
# --------------------------------------------------------------------------------------------


def _req(name: str, avro_type: Any) -> Record:
    return {"name": name, "type": avro_type}


def _opt(name: str, avro_type: Any) -> Record:
    return {"name": name, "type": ["null", avro_type], "default": None}


def _string_array() -> Record:
    return {"type": "array", "items": "string"}


def _stats_record(name: str) -> Record:
    return {
        "type": "record",
        "name": name,
        "fields": [
            _req("_MIN_VALUES", "bytes"),
            _req("_MAX_VALUES", "bytes"),
            _opt("_NULL_COUNTS", {"type": "array", "items": ["null", "long"]}),
        ],
    }


def _root(fields: list[Record]) -> Record:
    return {"type": "record", "name": _ROOT, "namespace": _NAMESPACE, "fields": fields}


_FILE_RECORD = f"{_ROOT}__FILE"

MANIFEST_ENTRY_SCHEMA: Final[Record] = _root(
    [
        _req("_VERSION", "int"),
        _req("_KIND", "int"),
        _req("_PARTITION", "bytes"),
        _req("_BUCKET", "int"),
        _req("_TOTAL_BUCKETS", "int"),
        _req(
            "_FILE",
            {
                "type": "record",
                "name": _FILE_RECORD,
                "fields": [
                    _req("_FILE_NAME", "string"),
                    _req("_FILE_SIZE", "long"),
                    _req("_ROW_COUNT", "long"),
                    _req("_MIN_KEY", "bytes"),
                    _req("_MAX_KEY", "bytes"),
                    _req("_KEY_STATS", _stats_record(f"{_FILE_RECORD}__KEY_STATS")),
                    _req("_VALUE_STATS", _stats_record(f"{_FILE_RECORD}__VALUE_STATS")),
                    _req("_MIN_SEQUENCE_NUMBER", "long"),
                    _req("_MAX_SEQUENCE_NUMBER", "long"),
                    _req("_SCHEMA_ID", "long"),
                    _req("_LEVEL", "int"),
                    _req("_EXTRA_FILES", _string_array()),
                    _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
                    _opt("_DELETE_ROW_COUNT", "long"),
                    _opt("_EMBEDDED_FILE_INDEX", "bytes"),
                    _opt("_FILE_SOURCE", "int"),
                    _opt("_VALUE_STATS_COLS", _string_array()),
                    _opt("_EXTERNAL_PATH", "string"),
                    _opt("_FIRST_ROW_ID", "long"),
                    _opt("_WRITE_COLS", _string_array()),
                    _opt("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}),
                ],
            },
        ),
    ]
)

# Java Paimon stops at _MAX_ROW_ID; pypaimon 2.1 appends _TOTAL_BUCKETS and _EXTRA_FILES
# (docs/format.md section 4). Java resolves fields by name and skips the extra nullable ones.
MANIFEST_FILE_META_SCHEMA: Final[Record] = _root(
    [
        _req("_VERSION", "int"),
        _req("_FILE_NAME", "string"),
        _req("_FILE_SIZE", "long"),
        _req("_NUM_ADDED_FILES", "long"),
        _req("_NUM_DELETED_FILES", "long"),
        _req("_PARTITION_STATS", _stats_record(f"{_ROOT}__PARTITION_STATS")),
        _req("_SCHEMA_ID", "long"),
        _opt("_MIN_BUCKET", "int"),
        _opt("_MAX_BUCKET", "int"),
        _opt("_MIN_LEVEL", "int"),
        _opt("_MAX_LEVEL", "int"),
        _opt("_MIN_ROW_ID", "long"),
        _opt("_MAX_ROW_ID", "long"),
        _opt("_TOTAL_BUCKETS", "int"),
        _opt("_EXTRA_FILES", _string_array()),
    ]
)

INDEX_MANIFEST_ENTRY_SCHEMA: Final[Record] = _root(
    [
        _req("_VERSION", "int"),
        _req("_KIND", "int"),
        _req("_PARTITION", "bytes"),
        _req("_BUCKET", "int"),
        _req("_INDEX_TYPE", "string"),
        _req("_FILE_NAME", "string"),
        _req("_FILE_SIZE", "long"),
        _req("_ROW_COUNT", "long"),
        _opt(
            "_DELETIONS_VECTORS_RANGES",
            {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": f"{_ROOT}__DELETIONS_VECTORS_RANGES",
                    "fields": [
                        _req("f0", "string"),
                        _req("f1", "int"),
                        _req("f2", "int"),
                        _opt("_CARDINALITY", "long"),
                    ],
                },
            },
        ),
        _opt("_EXTERNAL_PATH", "string"),
        _opt(
            "_GLOBAL_INDEX",
            {
                "type": "record",
                "name": f"{_ROOT}__GLOBAL_INDEX",
                "fields": [
                    _req("_ROW_RANGE_START", "long"),
                    _req("_ROW_RANGE_END", "long"),
                    _req("_INDEX_FIELD_ID", "int"),
                    _opt("_EXTRA_FIELD_IDS", {"type": "array", "items": "int"}),
                    _opt("_INDEX_META", "bytes"),
                    _opt("_SOURCE_META", "bytes"),
                ],
            },
        ),
    ]
)

_PARSED_ENTRY = fastavro.parse_schema(MANIFEST_ENTRY_SCHEMA)
_PARSED_META = fastavro.parse_schema(MANIFEST_FILE_META_SCHEMA)
_PARSED_INDEX = fastavro.parse_schema(INDEX_MANIFEST_ENTRY_SCHEMA)


# --------------------------------------------------------------------------------------------
# Container I/O
# --------------------------------------------------------------------------------------------


def _write(parsed_schema: Any, records: Iterable[Record]) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(
        buf,
        parsed_schema,
        records,
        codec=CODEC,
        codec_compression_level=ZSTD_LEVEL,
        sync_interval=SYNC_INTERVAL,
        validator=False,
    )
    return buf.getvalue()


def _decode(data: bytes, origin: str, what: str, convert: Callable[[Record], T]) -> list[T]:
    """Read every record of an Avro container and convert it; any failure is a corrupt file."""
    return _checked_decode(
        data,
        origin,
        what,
        lambda: [convert(record) for record in fastavro.reader(io.BytesIO(data))],  # type: ignore[arg-type]
    )


def _checked_decode(data: bytes, origin: str, what: str, decode: Callable[[], T]) -> T:
    """``decode()`` of a container :func:`check_container` accepts; any failure is a corrupt
    file named by ``origin`` (the file's own errors keep their type)."""
    try:
        check_container(data)
    except (ValueError, IndexError, TypeError, RecursionError, zlib.error) as e:
        raise CorruptFileError(f"{origin} is not a valid {what} file: {e}") from None
    try:
        return decode()
    except (CorruptFileError, UnsupportedError) as e:
        raise type(e)(f"{origin}: {e}") from e
    except Exception as e:  # fastavro, zstandard and conversions raise many unrelated types
        raise CorruptFileError(f"{origin} is not a valid {what} file: {type(e).__name__}: {e}") from e


# -- checks before fastavro decodes a file ------------------------------------------------------
# fastavro trusts the file: its schema (an array of nulls takes no bytes per item, so a count in a
# few bytes makes billions of Nones), its block counts and its compressed blocks (a zstd block of a
# few hundred bytes can inflate to gigabytes). A manifest is written by whoever may write the table
# and read by every job on it, so these are checked first, from the bytes, without decoding.

MAX_DECODED_BYTES: Final = 256 * 1024 * 1024  # uncompressed records of one file
_CHUNK: Final = 1 << 20  # decompressed and dropped piece by piece: only sizes are needed here


def _inflated_size(codec: str, block: bytes, limit: int) -> int:
    """The uncompressed size of one block, decompressing at most ``limit + 1`` bytes."""
    if codec == "null":
        return len(block)
    total = 0
    if codec == "zstandard":
        # Imported here: executors that only read data files (Spark's Python workers, which may
        # lack zstandard) import this module without decoding a manifest.
        import zstandard

        try:
            with zstandard.ZstdDecompressor().stream_reader(block) as reader:
                while total <= limit and (chunk := reader.read(_CHUNK)):
                    total += len(chunk)
        except zstandard.ZstdError as e:
            raise ValueError(f"zstandard block: {e}") from None
        return total
    if codec == "deflate":
        d = zlib.decompressobj(-15)
        pending = block
        while total <= limit and pending:
            total += len(d.decompress(pending, _CHUNK))
            pending = d.unconsumed_tail
        return total
    raise ValueError(f"codec {codec!r} is not one Paimon writes (zstandard, deflate, null)")


def check_container(data: bytes, limit: int | None = None) -> None:
    """Refuse an Avro container fastavro should not be given (ValueError saying why): a writer
    schema that is not a record or whose arrays could hold values of no bytes, block counts the
    block's bytes cannot hold, or more than ``limit`` (default :data:`MAX_DECODED_BYTES`) bytes
    once decompressed."""
    limit = MAX_DECODED_BYTES if limit is None else limit
    r = Cursor(data)
    meta, sync = read_header(r)
    schema = json.loads(meta.get("avro.schema", b"null"))
    # A record, or (paimon-rust) a union of null and a record at the top level.
    branches = schema if isinstance(schema, list) else [schema]
    if not any(isinstance(b, dict) and b.get("type") == "record" for b in branches) or not all(
        b == "null" or (isinstance(b, dict) and b.get("type") == "record") for b in branches
    ):
        raise ValueError("its writer schema is not a record")
    record_size = min_record_size(schema)
    if record_size == 0:
        raise ValueError("its records take no bytes")
    codec = meta.get("avro.codec", b"null").decode("utf-8", "replace")
    total = 0
    while r.pos < len(data):
        count, size = r.long(), r.long()
        block = r.take(size)
        inflated = _inflated_size(codec, block, limit - total)
        total += inflated
        if total > limit:
            raise ValueError(f"it inflates to more than {limit} bytes")
        if count < 0 or count > inflated // record_size:
            raise ValueError(f"a block of {inflated} bytes cannot hold {count} records")
        if r.take(16) != sync:
            raise ValueError("a block's sync marker does not match the header's")


def _check_version(record: Record, expected: int, what: str) -> None:
    version = record["_VERSION"]
    if version != expected:
        raise UnsupportedError(
            f"{what} format version {version} is not supported (expected {expected}); "
            "the table was written by an incompatible Paimon version, recreate it"
        )


# --------------------------------------------------------------------------------------------
# Field conversions
# --------------------------------------------------------------------------------------------

_EPOCH_UTC: Final = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_NAIVE: Final = datetime(1970, 1, 1)
_MILLI: Final = timedelta(milliseconds=1)


def _millis(value: Any) -> int | None:
    """fastavro turns timestamp-millis into a datetime; the objects keep Paimon's raw long."""
    if value is None or isinstance(value, int):
        return value
    if isinstance(value, datetime):
        epoch = _EPOCH_NAIVE if value.tzinfo is None else _EPOCH_UTC
        return (value - epoch) // _MILLI
    raise TypeError(f"_CREATION_TIME has unexpected value {value!r}")


def _tuple_or_none(value: list[T] | None) -> tuple[T, ...] | None:
    return None if value is None else tuple(value)


def _stats_from(record: Record, shared: Callable[[Any], Any] = lambda v: v) -> SimpleStats:
    return SimpleStats(
        shared(record["_MIN_VALUES"]),
        shared(record["_MAX_VALUES"]),
        shared(_tuple_or_none(record.get("_NULL_COUNTS"))),
    )


def _stats_to(stats: SimpleStats) -> Record:
    return {
        "_MIN_VALUES": stats.min_values,
        "_MAX_VALUES": stats.max_values,
        "_NULL_COUNTS": None if stats.null_counts is None else list(stats.null_counts),
    }


def _list_or_none(value: Sequence[T] | None) -> list[T] | None:
    return None if value is None else list(value)


# --------------------------------------------------------------------------------------------
# ManifestEntry
# --------------------------------------------------------------------------------------------


def _file_to(f: DataFileMeta) -> Record:
    return {
        "_FILE_NAME": f.file_name,
        "_FILE_SIZE": f.file_size,
        "_ROW_COUNT": f.row_count,
        "_MIN_KEY": f.min_key,
        "_MAX_KEY": f.max_key,
        "_KEY_STATS": _stats_to(f.key_stats),
        "_VALUE_STATS": _stats_to(f.value_stats),
        "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
        "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
        "_SCHEMA_ID": f.schema_id,
        "_LEVEL": f.level,
        "_EXTRA_FILES": list(f.extra_files),
        "_CREATION_TIME": f.creation_time,
        "_DELETE_ROW_COUNT": f.delete_row_count,
        "_EMBEDDED_FILE_INDEX": f.embedded_file_index,
        "_FILE_SOURCE": None if f.file_source is None else int(f.file_source),
        "_VALUE_STATS_COLS": _list_or_none(f.value_stats_cols),
        "_EXTERNAL_PATH": f.external_path,
        "_FIRST_ROW_ID": f.first_row_id,
        "_WRITE_COLS": _list_or_none(f.write_cols),
        "_WRITE_COLS_SEQUENCES": _list_or_none(f.write_cols_sequences),
    }


def _file_from(r: Record, shared: Callable[[Any], Any] = lambda v: v) -> DataFileMeta:
    get = r.get  # optional trailing fields are absent in files from older writers
    min_key = shared(r["_MIN_KEY"])
    max_key = shared(r["_MAX_KEY"])
    return DataFileMeta(
        r["_FILE_NAME"],
        r["_FILE_SIZE"],
        r["_ROW_COUNT"],
        min_key,
        max_key,
        _stats_from(r["_KEY_STATS"], shared),
        _stats_from(r["_VALUE_STATS"], shared),
        r["_MIN_SEQUENCE_NUMBER"],
        r["_MAX_SEQUENCE_NUMBER"],
        r["_SCHEMA_ID"],
        r["_LEVEL"],
        tuple(r["_EXTRA_FILES"]),
        _millis(get("_CREATION_TIME")),
        get("_DELETE_ROW_COUNT"),
        get("_EMBEDDED_FILE_INDEX"),
        get("_FILE_SOURCE"),
        _tuple_or_none(get("_VALUE_STATS_COLS")),
        get("_EXTERNAL_PATH"),
        get("_FIRST_ROW_ID"),
        _tuple_or_none(get("_WRITE_COLS")),
        _tuple_or_none(get("_WRITE_COLS_SEQUENCES")),
    )


_KINDS: Final = {k.value: k for k in FileKind}


def _kind(value: int) -> FileKind:
    try:
        return _KINDS[value]
    except KeyError:
        raise CorruptFileError(f"unknown _KIND {value}") from None


def _entry_from(r: Record, shared: Callable[[Any], Any] = lambda v: v) -> ManifestEntry:
    _check_version(r, MANIFEST_ENTRY_VERSION, "manifest")
    return ManifestEntry(
        _kind(r["_KIND"]),
        shared(r["_PARTITION"]),
        r["_BUCKET"],
        r["_TOTAL_BUCKETS"],
        _file_from(r["_FILE"], shared),
        r["_VERSION"],
    )


def _entry_decoder() -> Callable[[Record], ManifestEntry]:
    """:func:`_entry_from` with equal values shared among the entries it decodes.

    A live file's metadata stays in memory while a scan is planned and while its manifest is
    cached (``store/manifests.py``), ~1 KB per file, a third of it in small byte strings and
    tuples that repeat: every entry of a partition has its partition's bytes, most have the
    same null counts, and a key's statistics are its file's min and max key. One object per
    distinct value, for one manifest (the table of values is dropped with the decoder)."""
    seen: dict[Any, Any] = {}
    return lambda r: _entry_from(r, lambda v: seen.setdefault(v, v))


def encode_manifest_entries(entries: Sequence[ManifestEntry]) -> bytes:
    """Encode a manifest file: one ``ManifestEntry`` record per entry.

    >>> from stratalake.spec.manifest import SimpleStats
    >>> stats = SimpleStats(b"\\0\\0\\0\\0" + bytes(8), b"\\0\\0\\0\\0" + bytes(8), ())
    >>> f = DataFileMeta("data-1.parquet", 10, 1, b"k", b"k", stats, stats, 0, 0, 0, 0)
    >>> e = ManifestEntry(FileKind.ADD, stats.min_values, 0, 1, f)
    >>> decode_manifest_entries(encode_manifest_entries([e]), "m") == [e]
    True
    """
    return _write(
        _PARSED_ENTRY,
        (
            {
                "_VERSION": e.version,
                "_KIND": int(e.kind),
                "_PARTITION": e.partition,
                "_BUCKET": e.bucket,
                "_TOTAL_BUCKETS": e.total_buckets,
                "_FILE": _file_to(e.file),
            }
            for e in entries
        ),
    )


def decode_manifest_entries(data: bytes, origin: str) -> list[ManifestEntry]:
    """Decode a manifest file written by stratalake, pypaimon or Java Paimon."""
    return _decode(data, origin, "manifest", _entry_decoder())


def _zigzag_varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _entry_needles(writer_schema: Any, wanted: Collection[tuple[bytes, int | None]]) -> set[bytes] | None:
    """Byte strings one of which the encoding of every entry of a ``(partition, bucket)`` in
    ``wanted`` (bucket None: any) contains, from the file's own writer schema; None if it lays
    entries out otherwise (then every block is decoded).

    ``_PARTITION`` is Avro ``bytes``: its length, then the partition's bytes. When the writer put
    ``_BUCKET`` (an ``int``) right after it, as Paimon does, the bucket's varint follows.
    """
    branches = writer_schema if isinstance(writer_schema, list) else [writer_schema]
    records = [b for b in branches if isinstance(b, dict) and b.get("type") == "record"]
    if len(records) != 1:
        return None
    fields = records[0].get("fields") or []
    names = [f.get("name") if isinstance(f, dict) else None for f in fields]
    if "_PARTITION" not in names:
        return None
    i = names.index("_PARTITION")
    if fields[i].get("type") != "bytes":
        return None
    bucket_follows = i + 1 < len(fields) and names[i + 1] == "_BUCKET" and fields[i + 1].get("type") == "int"
    out = set()
    for partition, bucket in wanted:
        needle = _zigzag_varint(len(partition)) + partition
        out.add(needle + _zigzag_varint(bucket) if bucket is not None and bucket_follows else needle)
    return out


def decode_manifest_blocks(
    data: bytes, origin: str, wanted: Collection[tuple[bytes, int | None]]
) -> tuple[list[ManifestEntry], bool]:
    """The entries of the manifest's Avro blocks that may hold an entry of a ``(partition,
    bucket)`` in ``wanted`` (bucket None: any bucket), and whether that was every block.

    A superset (the searched bytes may also occur in other fields): the caller still filters
    each entry. A block whose decompressed records do not contain a wanted entry's encoded
    partition (and bucket) is searched but not decoded, and decoding is most of the cost of a
    manifest (fastavro's records, then frozen objects); so reading a few partitions of a
    partition-clustered manifest costs the blocks holding them. The container is checked whole
    first, as :func:`decode_manifest_entries` does.
    """

    def decode() -> tuple[list[ManifestEntry], bool]:
        out: list[ManifestEntry] = []
        every = True
        blocks = fastavro.block_reader(io.BytesIO(data))
        needles = _entry_needles(blocks.writer_schema, wanted)
        entry_from = _entry_decoder()
        for block in blocks:
            # The decompressed records (fastavro's Block keeps them in ``bytes_``, a BytesIO).
            raw = block.bytes_.getvalue()  # type: ignore[attr-defined]
            if needles is None or any(n in raw for n in needles):
                out += [entry_from(r) for r in block]  # type: ignore[arg-type]
            else:
                every = False
        return out, every

    return _checked_decode(data, origin, "manifest", decode)


# --------------------------------------------------------------------------------------------
# ManifestFileMeta
# --------------------------------------------------------------------------------------------


def _meta_to(m: ManifestFileMeta) -> Record:
    return {
        "_VERSION": m.version,
        "_FILE_NAME": m.file_name,
        "_FILE_SIZE": m.file_size,
        "_NUM_ADDED_FILES": m.num_added_files,
        "_NUM_DELETED_FILES": m.num_deleted_files,
        "_PARTITION_STATS": _stats_to(m.partition_stats),
        "_SCHEMA_ID": m.schema_id,
        "_MIN_BUCKET": m.min_bucket,
        "_MAX_BUCKET": m.max_bucket,
        "_MIN_LEVEL": m.min_level,
        "_MAX_LEVEL": m.max_level,
        "_MIN_ROW_ID": m.min_row_id,
        "_MAX_ROW_ID": m.max_row_id,
        "_TOTAL_BUCKETS": m.total_buckets,
        "_EXTRA_FILES": _list_or_none(m.extra_files),
    }


def _meta_from(r: Record) -> ManifestFileMeta:
    _check_version(r, MANIFEST_FILE_META_VERSION, "manifest list")
    get = r.get
    return ManifestFileMeta(
        r["_FILE_NAME"],
        r["_FILE_SIZE"],
        r["_NUM_ADDED_FILES"],
        r["_NUM_DELETED_FILES"],
        _stats_from(r["_PARTITION_STATS"]),
        r["_SCHEMA_ID"],
        get("_MIN_BUCKET"),
        get("_MAX_BUCKET"),
        get("_MIN_LEVEL"),
        get("_MAX_LEVEL"),
        get("_MIN_ROW_ID"),
        get("_MAX_ROW_ID"),
        get("_TOTAL_BUCKETS"),
        _tuple_or_none(get("_EXTRA_FILES")),
        r["_VERSION"],
    )


def encode_manifest_file_metas(metas: Sequence[ManifestFileMeta]) -> bytes:
    """Encode a manifest list: one ``ManifestFileMeta`` record per manifest file."""
    return _write(_PARSED_META, (_meta_to(m) for m in metas))


def decode_manifest_file_metas(data: bytes, origin: str) -> list[ManifestFileMeta]:
    """Decode a manifest list written by stratalake, pypaimon or Java Paimon."""
    return _decode(data, origin, "manifest list", _meta_from)


# --------------------------------------------------------------------------------------------
# IndexManifestEntry
# --------------------------------------------------------------------------------------------


def _dv_to(d: DeletionVectorRange) -> Record:
    return {"f0": d.data_file, "f1": d.offset, "f2": d.length, "_CARDINALITY": d.cardinality}


def _dv_from(r: Record) -> DeletionVectorRange:
    return DeletionVectorRange(r["f0"], r["f1"], r["f2"], r.get("_CARDINALITY"))


def _global_to(g: GlobalIndexMeta | None) -> Record | None:
    if g is None:
        return None
    return {
        "_ROW_RANGE_START": g.row_range_start,
        "_ROW_RANGE_END": g.row_range_end,
        "_INDEX_FIELD_ID": g.index_field_id,
        "_EXTRA_FIELD_IDS": _list_or_none(g.extra_field_ids),
        "_INDEX_META": g.index_meta,
        "_SOURCE_META": g.source_meta,
    }


def _global_from(r: Record | None) -> GlobalIndexMeta | None:
    if r is None:
        return None
    return GlobalIndexMeta(
        r["_ROW_RANGE_START"],
        r["_ROW_RANGE_END"],
        r["_INDEX_FIELD_ID"],
        _tuple_or_none(r.get("_EXTRA_FIELD_IDS")),
        r.get("_INDEX_META"),
        r.get("_SOURCE_META"),
    )


def _index_to(e: IndexManifestEntry) -> Record:
    return {
        "_VERSION": e.version,
        "_KIND": int(e.kind),
        "_PARTITION": e.partition,
        "_BUCKET": e.bucket,
        "_INDEX_TYPE": e.index_type,
        "_FILE_NAME": e.file_name,
        "_FILE_SIZE": e.file_size,
        "_ROW_COUNT": e.row_count,
        "_DELETIONS_VECTORS_RANGES": None if e.dv_ranges is None else [_dv_to(d) for d in e.dv_ranges],
        "_EXTERNAL_PATH": e.external_path,
        "_GLOBAL_INDEX": _global_to(e.global_index),
    }


def _index_from(r: Record) -> IndexManifestEntry:
    _check_version(r, INDEX_MANIFEST_ENTRY_VERSION, "index manifest")
    ranges = r.get("_DELETIONS_VECTORS_RANGES")
    return IndexManifestEntry(
        _kind(r["_KIND"]),
        r["_PARTITION"],
        r["_BUCKET"],
        r["_INDEX_TYPE"],
        r["_FILE_NAME"],
        r["_FILE_SIZE"],
        r["_ROW_COUNT"],
        None if ranges is None else tuple(_dv_from(d) for d in ranges),
        r.get("_EXTERNAL_PATH"),
        _global_from(r.get("_GLOBAL_INDEX")),
        r["_VERSION"],
    )


def encode_index_manifest_entries(entries: Sequence[IndexManifestEntry]) -> bytes:
    """Encode an index manifest (deletion-vector and hash index files)."""
    return _write(_PARSED_INDEX, (_index_to(e) for e in entries))


def decode_index_manifest_entries(data: bytes, origin: str) -> list[IndexManifestEntry]:
    """Decode an index manifest written by stratalake, pypaimon or Java Paimon."""
    return _decode(data, origin, "index manifest", _index_from)
