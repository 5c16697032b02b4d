"""Data file formats: Parquet, ORC and Avro, behind one small interface (docs/format.md section 6).

A data or changelog file's format is the extension of its name (``data-<uuid>-<n>.orc``); the table
options only decide the format of files written from now on (``file.format``,
``file.format.per.level``, ``changelog-file.format``), so a table may hold files of several formats.

Everything here works on Arrow tables with the physical (file) layout; which columns a KV file holds
and how they map to table columns is ``lsm/data_file.py``'s business. Readers return columns in the
format's natural Arrow types (e.g. ``int32`` for a TINYINT stored as Avro ``int``, ``timestamp[ns]``
for an ORC timestamp); callers cast to the table's types.

Example::

    fmt = file_format("orc")
    fmt.write(file_io, "/t/bucket-0/data-x-0.orc", table, compression="zstd")
    reader = open_data_file(file_io, "/t/bucket-0/data-x-0.orc")
    reader.schema.names, reader.read(["id", "v"])
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from stratalake.exceptions import CorruptFileError, InvalidDataError, InvalidOptionError, UnsupportedError
from stratalake.io import FileIO
from stratalake.options import FILE_FORMATS
from stratalake.spec.avro_columns import (
    Block,
    ContainerReader,
    ContainerWriter,
    arrow_type,
    compress_block,
    decode_blocks,
    encode_records,
)

PARQUET = "parquet"
ORC = "orc"
AVRO = "avro"
#: The formats stratalake reads and writes (Paimon's identifiers, also the file name extensions).
SUPPORTED_FORMATS = FILE_FORMATS

DEFAULT_BATCH_ROWS = 64 * 1024
PARQUET_PAGE_BYTES = 160 * 1024
"""Encoded bytes per Parquet data page (pyarrow counts them before compression): 20,000 values of
8 bytes, the pages Paimon's Java writer makes (parquet-mr's 20,000-row page limit)."""

# Paimon's Avro record name for a file's rows; nested ROW records are "<parent>_<field>".
_AVRO_NAMESPACE = "org.apache.paimon.avro.generated"
_AVRO_RECORD = "record"


class FormatReader(ABC):
    """An opened data file: one subclass per format, constructed by :meth:`FileFormat.open`.

    ``expected_rows`` (the manifest's row count) is for formats that cannot tell a truncated file
    from a shorter one (Avro); the others ignore it.
    """

    #: The format's name, in the :class:`CorruptFileError` of a file it cannot read.
    format: ClassVar[str]
    #: What the format's library raises for a damaged file or one of another format.
    errors: ClassVar[tuple[type[Exception], ...]] = (OSError, pa.ArrowException)

    def __init__(self, file_io: FileIO, path: str, expected_rows: int | None = None) -> None:
        self.path = path
        self._schema: pa.Schema | None = None

    @property
    def schema(self) -> pa.Schema:
        """Arrow schema of the file's columns (in the format's natural types)."""
        assert self._schema is not None
        return self._schema

    @abstractmethod
    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The file's ``columns`` (all when None), in the given order."""

    @abstractmethod
    def iter_batches(
        self, columns: Sequence[str] | None = None, batch_rows: int = DEFAULT_BATCH_ROWS
    ) -> Iterator[pa.RecordBatch]:
        """The file's ``columns`` batch by batch, in file order."""

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """The library's errors as a :class:`CorruptFileError` naming the file; a missing file
        stays a ``FileNotFoundError`` (callers tell the two apart)."""
        try:
            yield
        except (FileNotFoundError, CorruptFileError):
            raise
        except self.errors as e:
            raise CorruptFileError(f"data file {self.path} cannot be read as {self.format}: {e}") from None


@dataclass(frozen=True)
class WriterSettings:
    """How a file is encoded: the library's name of the codec and the zstd level; for Parquet only,
    ``delta_keys`` (:func:`delta_encoded_columns`, option ``parquet.delta-keys``) and ``page_size``,
    bytes per data page (option ``parquet.page.size``; None: :data:`PARQUET_PAGE_BYTES`)."""

    codec: str
    zstd_level: int = 1
    delta_keys: bool = False
    page_size: int | None = None


class FormatWriter(ABC):
    """A data file being written, table by table (all of one schema): one subclass per format,
    constructed by :meth:`FileFormat.open_writer`."""

    def __init__(self, file_io: FileIO, path: str, schema: pa.Schema, settings: WriterSettings) -> None:
        self.path = path
        self._schema = schema
        self._sink = file_io.open_output_stream(path)

    @abstractmethod
    def write(self, table: pa.Table) -> None: ...

    def position(self) -> int:
        """Bytes written to the file so far (buffered bytes not included)."""
        return int(self._sink.tell())

    def close(self) -> None:
        """Finish the file and close its stream."""
        try:
            self._finish()
        finally:
            self._sink.close()

    def abort(self) -> None:
        """Close the stream without finishing the file (the caller deletes it)."""
        try:
            self._release()
        finally:
            self._sink.close()

    @abstractmethod
    def _finish(self) -> None:
        """Write what the format still holds (footer, last block) to the stream."""

    def _release(self) -> None:
        """Let go of the format's writer without finishing the file (most hold nothing)."""
        return None


@dataclass(frozen=True)
class FileFormat:
    """One data file format: its name (also the files' extension), its compression codecs and its
    reader and writer; everything the three formats share lives here and in the two bases."""

    name: str
    #: Codec names the options accept (``options.FORMAT_COMPRESSIONS``) -> the library's names.
    codecs: Mapping[str, str]
    reader: type[FormatReader]
    writer: type[FormatWriter]

    def codec(self, compression: str) -> str:
        """The library's name of ``compression`` (Paimon's codec names: zstd, snappy, lz4,
        gzip/zlib/deflate, none...); :class:`InvalidOptionError` when this format has no such codec."""
        codec = self.codecs.get(compression.strip().lower())
        if codec is None:
            raise InvalidOptionError(
                f"compression '{compression}' is not available for {self.name} files; use one of "
                f"{', '.join(sorted(self.codecs))}"
            )
        return codec

    def open_writer(
        self,
        file_io: FileIO,
        path: str,
        schema: pa.Schema,
        compression: str,
        zstd_level: int = 1,
        delta_keys: bool = False,
        page_size: int | None = None,
    ) -> FormatWriter:
        """Start a file at ``path`` holding rows of ``schema``, compressed with ``compression``
        (checked before the file is created); the other arguments are :class:`WriterSettings`'."""
        settings = WriterSettings(self.codec(compression), zstd_level, delta_keys, page_size)
        return self.writer(file_io, path, schema, settings)

    def write(
        self,
        file_io: FileIO,
        path: str,
        table: pa.Table,
        compression: str,
        zstd_level: int = 1,
        delta_keys: bool = False,
        page_size: int | None = None,
    ) -> None:
        """Write ``table`` as one file at ``path`` (the arguments as :meth:`open_writer`'s)."""
        writer = self.open_writer(file_io, path, table.schema, compression, zstd_level, delta_keys, page_size)
        try:
            writer.write(table)
        except BaseException:
            writer.abort()
            raise
        writer.close()

    def open(self, file_io: FileIO, path: str, expected_rows: int | None = None) -> FormatReader:
        """Open ``path``; :class:`CorruptFileError` naming it when it is not a file of this format."""
        return self.reader(file_io, path, expected_rows)


def format_of_file(file_name: str) -> str:
    """The format of a data file, from its name's extension (Paimon names every file that way)."""
    base = file_name.rsplit("/", 1)[-1]
    ext = base.rsplit(".", 1)[-1].lower() if "." in base else ""
    return ext if ext else PARQUET


def file_format(name: str) -> FileFormat:
    """The format called ``name`` (``parquet``, ``orc``, ``avro``)."""
    fmt = _FORMATS.get(name.strip().lower())
    if fmt is None:
        raise UnsupportedError(
            f"file format '{name}' is not supported; stratalake reads and writes {', '.join(SUPPORTED_FORMATS)}"
        )
    return fmt


def open_data_file(file_io: FileIO, path: str, expected_rows: int | None = None) -> FormatReader:
    """Open a data file in the format its name says. ``expected_rows`` (the manifest's row count)
    lets a reading of the whole file detect truncation where the format cannot (an Avro file cut
    between blocks is a valid shorter file; Parquet and ORC footers hold their row counts)."""
    fmt = format_of_file(path)
    if fmt not in _FORMATS:
        raise UnsupportedError(
            f"data file {path} is in format '{fmt}', which stratalake cannot read "
            f"(it reads {', '.join(SUPPORTED_FORMATS)})"
        )
    return _FORMATS[fmt].open(file_io, path, expected_rows)


# -- Parquet -------------------------------------------------------------------------------------
_PARQUET_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4",
    "brotli": "brotli",
    "none": "none",
    "uncompressed": "none",
}


def dictionary_columns(table: pa.Table) -> list[str]:
    """Columns worth dictionary-encoding: few distinct values in a sample.

    Dictionary-encoding a high-cardinality column costs twice the write time and makes the file
    larger; for low-cardinality columns (row kinds, partition-like strings) it is a big win.
    """
    out = [n for n in table.column_names if n == "_VALUE_KIND"]
    sample = table.slice(0, 4096) if table.num_rows > 4096 else table
    for name in table.column_names:
        t = sample.column(name).type
        if name in out or not (
            pa.types.is_string(t)
            or pa.types.is_large_string(t)
            or pa.types.is_binary(t)
            or pa.types.is_boolean(t)
        ):
            continue
        distinct = pc.count_distinct(sample.column(name)).as_py() or 0
        if distinct <= max(sample.num_rows // 4, 1):
            out.append(name)
    return out


# Key-value data files (see ``lsm/data_file.py``) hold ``_KEY_<k>`` copies of the primary key and
# ``_SEQUENCE_NUMBER``; a file is sorted by its key.
_KEY_COLUMN_PREFIX = "_KEY_"
_SEQUENCE_COLUMN = "_SEQUENCE_NUMBER"


def delta_encoded_columns(schema: pa.Schema) -> dict[str, str]:
    """``column_encoding`` for a key-value file: DELTA_BINARY_PACKED for its integer key columns
    (``_KEY_<k>`` and the value column ``<k>`` of the same key) and its sequence numbers.

    A file is sorted by key, so consecutive integer keys differ by little and bit-pack into a
    few bits each; sequence numbers span about the file's row count. Merges read exactly these
    columns: measured on a 625k-row file (zstd), the key decodes 3.7x faster than PLAIN and
    the file is 14% smaller, and the write is faster too (less left for zstd). It is a standard
    Parquet encoding (parquet-mr writes it for its v2 writer; Spark's and Paimon's vectorized
    readers, Arrow C++ and arrow-rs read it).
    """
    out: dict[str, str] = {}
    for field in schema:
        name = field.name
        if name == _SEQUENCE_COLUMN and pa.types.is_int64(field.type):
            out[name] = "DELTA_BINARY_PACKED"
        elif name.startswith(_KEY_COLUMN_PREFIX) and pa.types.is_signed_integer(field.type):
            out[name] = "DELTA_BINARY_PACKED"
            value = name[len(_KEY_COLUMN_PREFIX) :]
            i = schema.get_field_index(value)
            if i >= 0 and schema.field(i).type == field.type:
                out[value] = "DELTA_BINARY_PACKED"
    return out


class _ParquetReader(FormatReader):
    format = PARQUET

    def __init__(self, file_io: FileIO, path: str, expected_rows: int | None = None) -> None:
        super().__init__(file_io, path)
        with self._reading():
            self._file = pq.ParquetFile(file_io.open_input_file(path))

    @property
    def schema(self) -> pa.Schema:
        return self._file.schema_arrow

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        with self._reading():
            return self._file.read(columns=None if columns is None else list(columns), use_threads=False)

    def iter_batches(
        self, columns: Sequence[str] | None = None, batch_rows: int = DEFAULT_BATCH_ROWS
    ) -> Iterator[pa.RecordBatch]:
        with self._reading():
            yield from self._file.iter_batches(
                batch_size=batch_rows, columns=None if columns is None else list(columns), use_threads=False
            )


class _ParquetWriter(FormatWriter):
    def __init__(self, file_io: FileIO, path: str, schema: pa.Schema, settings: WriterSettings) -> None:
        super().__init__(file_io, path, schema, settings)
        self._codec = settings.codec
        self._zstd_level = settings.zstd_level
        self._delta = delta_encoded_columns(schema) if settings.delta_keys else {}
        self._page_size = PARQUET_PAGE_BYTES if settings.page_size is None else settings.page_size
        self._writer: pq.ParquetWriter | None = None

    def write(self, table: pa.Table) -> None:
        if self._writer is None:  # dictionary columns are chosen from the first rows written
            self._writer = pq.ParquetWriter(
                self._sink,
                self._schema,
                compression=self._codec,
                compression_level=self._zstd_level if self._codec == "zstd" else None,
                use_dictionary=[c for c in dictionary_columns(table) if c not in self._delta],
                column_encoding=self._delta or None,
                # Row-group min/max/null counts: Spark's Parquet reader prunes row groups with
                # them on native reads (the manifest's statistics stay computed from the rows).
                # Measured: no write cost above noise (2M rows, 7 columns, zstd).
                write_statistics=True,
                # Page min/max (the column index) with pages of at most PARQUET_PAGE_BYTES encoded:
                # Spark's reader skips the pages a pushed filter rules out, which for the key
                # columns (the file is sorted by them) leaves a point lookup a page of a row group.
                # Why not smaller: a full scan pays per page. Measured on the 20M-row bench table after a
                # full compaction (the bench's queries, median of 13): 32 KiB pages made the
                # aggregate 1.17x Spark's Parquet and 160 KiB 1.01x, for +5-8 ms on a point lookup
                # (~55 ms, bucket-pruned); pyarrow writes a 1.25M-row file with 13% less CPU and
                # reads it with 31% less.
                write_page_index=True,
                data_page_size=self._page_size,
            )
        self._writer.write_table(table, row_group_size=max(table.num_rows, 1))

    def _finish(self) -> None:
        if self._writer is None:
            self.write(self._schema.empty_table())
        assert self._writer is not None
        self._writer.close()

    def _release(self) -> None:
        if self._writer is not None:
            self._writer.close()


# -- ORC -----------------------------------------------------------------------------------------
# Paimon passes file.compression to ORC's "orc.compress" (NONE, ZLIB, SNAPPY, LZO, LZ4, ZSTD).
_ORC_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "lz4": "lz4",
    "zlib": "zlib",
    "none": "uncompressed",
    "uncompressed": "uncompressed",
}


def _orc_writable(table: pa.Table) -> pa.Table:
    """``table`` as Arrow's ORC writer stores it correctly.

    Paimon stores TIME in ORC as an int (millis of day); Arrow's ORC writer has no TIME type. And
    Arrow's ORC writer misplaces the children of a *sliced* nested array with nulls (pyarrow 19:
    a struct sliced at offset 4 comes back shifted), so nested columns are copied unsliced first.
    """
    if not any(pa.types.is_time(f.type) or pa.types.is_nested(f.type) for f in table.schema):
        return table
    arrays, fields = [], []
    for f, col in zip(table.schema, table.columns, strict=True):
        if pa.types.is_time(f.type):
            col = col.cast(pa.time32("ms")).cast(pa.int32())
            f = pa.field(f.name, pa.int32(), nullable=f.nullable)
        elif pa.types.is_nested(f.type):
            whole = col.combine_chunks()
            col = pa.chunked_array([whole.take(pa.array(range(len(whole)), pa.int64()))], type=f.type)
        arrays.append(col)
        fields.append(f)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


class _OrcReader(FormatReader):
    format = ORC

    def __init__(self, file_io: FileIO, path: str, expected_rows: int | None = None) -> None:
        import pyarrow.orc as orc

        super().__init__(file_io, path)
        with self._reading():
            self._file = orc.ORCFile(file_io.open_input_file(path))
            self._schema = self._file.schema

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        with self._reading():
            table = self._file.read(columns=None if columns is None else list(columns))
        return table if columns is None else table.select(list(columns))

    def iter_batches(
        self, columns: Sequence[str] | None = None, batch_rows: int = DEFAULT_BATCH_ROWS
    ) -> Iterator[pa.RecordBatch]:
        for i in range(self._file.nstripes):
            with self._reading():
                stripe = self._file.read_stripe(i, columns=None if columns is None else list(columns))
            table = pa.Table.from_batches([stripe])
            if columns is not None:
                table = table.select(list(columns))
            yield from table.to_batches(max_chunksize=batch_rows)


class _OrcWriter(FormatWriter):
    def __init__(self, file_io: FileIO, path: str, schema: pa.Schema, settings: WriterSettings) -> None:
        import pyarrow.orc as orc

        super().__init__(file_io, path, schema, settings)
        self._writer = orc.ORCWriter(self._sink, compression=settings.codec)

    def write(self, table: pa.Table) -> None:
        self._writer.write(_orc_writable(table))

    def _finish(self) -> None:
        self._writer.close()


# -- Avro ----------------------------------------------------------------------------------------
# Paimon's Avro codecs are Avro's own (CodecFactory.fromString); zstd is "zstandard" at
# file.compression.zstd-level.
_AVRO_CODECS = {
    "zstd": "zstandard",
    "zstandard": "zstandard",
    "snappy": "snappy",
    "deflate": "deflate",
    "bzip2": "bzip2",
    "xz": "xz",
    "none": "null",
    "null": "null",
    "uncompressed": "null",
}


def _avro_type(t: pa.DataType, record_name: str) -> Any:
    """Avro schema of Arrow type ``t`` (not nullable), as Paimon's AvroSchemaConverter builds it."""
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "bytes"
    if pa.types.is_decimal(t):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    if pa.types.is_date(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_time(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            raise UnsupportedError(
                "Avro data files hold timestamps of precision 6 at most (as Paimon's); use 'file.format' "
                "parquet or orc for TIMESTAMP(7..9) columns"
            )
        unit = "millis" if t.unit in ("s", "ms") else "micros"
        # TIMESTAMP WITH LOCAL TIME ZONE (tz-aware in Arrow) uses Avro's local-timestamp types.
        return {"type": "long", "logicalType": f"{'local-timestamp' if t.tz else 'timestamp'}-{unit}"}
    if pa.types.is_struct(t):
        fields = []
        for child in t:
            field: dict[str, Any] = {
                "name": child.name,
                "type": _avro_field_type(child, f"{record_name}_{child.name}"),
            }
            if child.nullable:
                field["default"] = None
            fields.append(field)
        return {"type": "record", "name": record_name, "namespace": _AVRO_NAMESPACE, "fields": fields}
    if pa.types.is_map(t):
        key_t = t.key_type
        if pa.types.is_string(key_t) or pa.types.is_large_string(key_t):
            return {"type": "map", "values": _avro_field_type(t.item_field, record_name)}
        # Avro maps have string keys only: Paimon stores other maps as an array of key/value records.
        value: dict[str, Any] = {
            "name": "value",
            "type": _avro_field_type(t.item_field, f"{record_name}_value"),
        }
        if t.item_field.nullable:
            value["default"] = None
        entry = {
            "type": "record",
            "name": record_name,
            "namespace": _AVRO_NAMESPACE,
            "fields": [{"name": "key", "type": _avro_type(key_t, f"{record_name}_key")}, value],
        }
        return {"type": "array", "items": entry, "logicalType": "map"}
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return {"type": "array", "items": _avro_field_type(t.value_field, record_name)}
    raise UnsupportedError(f"Arrow type {t} cannot be written to an Avro data file")


def _avro_field_type(f: pa.Field, record_name: str) -> Any:
    inner = _avro_type(f.type, record_name)
    return ["null", inner] if f.nullable else inner


def avro_schema(schema: pa.Schema) -> dict[str, Any]:
    """The Avro record of rows of ``schema``, as Paimon names its fields and types."""
    return _avro_type(pa.struct(list(schema)), _AVRO_RECORD)  # type: ignore[no-any-return]


def _avro_row_record(schema: Any) -> dict[str, Any] | None:
    """The record of a data file's top-level writer schema: a record (stratalake's, pypaimon's,
    Paimon Java 1.3's files), or ``["null", record]`` (Paimon Java 1.0 declares the row nullable)."""
    if isinstance(schema, dict) and schema.get("type") == "record":
        return schema
    if isinstance(schema, list) and len(schema) == 2 and "null" in schema:
        other = schema[1] if schema[0] == "null" else schema[0]
        if isinstance(other, dict) and other.get("type") == "record":
            return other
    return None


def _raw_for_avro(arr: pa.Array) -> pa.Array:
    """``arr`` with temporal values as the integers Avro stores (so no datetime goes through the
    host's time zone), recursively through nested types."""
    t = arr.type
    if pa.types.is_timestamp(t):
        unit = "ms" if t.unit in ("s", "ms") else "us"
        return arr.cast(pa.timestamp(unit, tz=t.tz)).cast(pa.int64())
    if pa.types.is_date(t):
        return arr.cast(pa.date32()).cast(pa.int32())
    if pa.types.is_time(t):
        return arr.cast(pa.time32("ms")).cast(pa.int32())
    if pa.types.is_struct(t):
        assert isinstance(arr, pa.StructArray)
        children = [_raw_for_avro(arr.field(i)) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(
            children,
            fields=[pa.field(t.field(i).name, c.type) for i, c in enumerate(children)],
            mask=arr.is_null(),
        )
    if pa.types.is_map(t):
        assert isinstance(arr, pa.MapArray)
        flat = arr if arr.offset == 0 else pa.concat_arrays([arr])  # a slice's offsets start past 0
        assert isinstance(flat, pa.MapArray)
        entries = pa.StructArray.from_arrays(
            [_raw_for_avro(flat.keys), _raw_for_avro(flat.items)], names=["key", "value"]
        )
        return pa.ListArray.from_arrays(flat.offsets, entries, mask=flat.is_null())
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        assert isinstance(arr, pa.ListArray | pa.LargeListArray)
        flat = arr if arr.offset == 0 else pa.concat_arrays([arr])
        return type(flat).from_arrays(flat.offsets, _raw_for_avro(flat.values), mask=flat.is_null())
    return arr


class _AvroReader(FormatReader):
    """Avro container framing and checks in ``spec/avro_columns.py``; records decoded a run of
    blocks at a time into Arrow (polars' reader), never row by row in Python."""

    format = AVRO
    errors = (ValueError,)  # what spec/avro_columns raises for bytes it cannot take

    def __init__(self, file_io: FileIO, path: str, expected_rows: int | None = None) -> None:
        super().__init__(file_io, path)
        self._expected_rows = expected_rows
        with self._reading():
            with file_io.open_input_file(path) as f:
                self._container = ContainerReader(f.read())
            self._writer_schema: Any = self._container.schema
            record = _avro_row_record(self._writer_schema)
            if record is None:
                raise CorruptFileError(
                    f"data file {path} is an Avro file but not of records (nor of a nullable record, "
                    f"as Paimon Java writes them): {self._writer_schema}"
                )
        try:
            t, _ = arrow_type(record)
        except UnsupportedError as e:
            raise UnsupportedError(f"data file {path}: {e}") from None
        except ValueError as e:
            raise CorruptFileError(f"data file {path} cannot be read as avro: {e}") from None
        self._schema = pa.schema(list(t))

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        names = self.schema.names if columns is None else list(columns)
        batches = list(self.iter_batches(columns, DEFAULT_BATCH_ROWS))
        target = pa.schema([self.schema.field(n) for n in names])
        if not names:
            return pa.table({"_": pa.nulls(sum(b.num_rows for b in batches))}).select([])
        return pa.Table.from_batches(batches, schema=target) if batches else target.empty_table()

    def iter_batches(
        self, columns: Sequence[str] | None = None, batch_rows: int = DEFAULT_BATCH_ROWS
    ) -> Iterator[pa.RecordBatch]:
        names = self.schema.names if columns is None else list(columns)
        target = pa.schema([self.schema.field(n) for n in names])
        with self._reading():
            counts = self._container.block_counts()
            if self._expected_rows is not None and sum(counts) != self._expected_rows:
                # An Avro container has no footer: a file cut right after a block's sync marker
                # reads as a valid, shorter file. The manifest's row count tells, before decoding.
                raise CorruptFileError(
                    f"data file {self.path} holds {sum(counts)} rows but the table's manifest records "
                    f"{self._expected_rows}: the file is truncated or was replaced"
                )
            if not names:
                for start in range(0, sum(counts), batch_rows):
                    rows = min(batch_rows, sum(counts) - start)
                    yield pa.RecordBatch.from_arrays([pa.nulls(rows)], names=["_"]).select([])
                return
            run: list[Block] = []
            rows = 0
            for block in self._container.blocks():
                run.append(block)
                rows += block.count
                if rows >= batch_rows:
                    yield from self._decode(run, names, target, batch_rows)
                    run, rows = [], 0
            if rows:
                yield from self._decode(run, names, target, batch_rows)

    def _decode(
        self, run: list[Block], names: list[str], target: pa.Schema, batch_rows: int
    ) -> Iterator[pa.RecordBatch]:
        table = decode_blocks(self._writer_schema, run, names, target)
        yield from table.combine_chunks().to_batches(max_chunksize=batch_rows)


class _AvroWriter(FormatWriter):
    """Rows encoded column by column (``spec/avro_columns.py``), in blocks of ~64 KB as Avro
    Java's writer cuts them."""

    def __init__(self, file_io: FileIO, path: str, schema: pa.Schema, settings: WriterSettings) -> None:
        self._avro = avro_schema(schema)  # before the file exists: a type Avro lacks is refused
        compress_block(settings.codec, b"")  # and a codec this installation cannot write
        super().__init__(file_io, path, schema, settings)
        level = settings.zstd_level if settings.codec == "zstandard" else None
        self._writer = ContainerWriter(self._sink, self._avro, settings.codec, level)

    def write(self, table: pa.Table) -> None:
        for batch in table.to_batches(max_chunksize=DEFAULT_BATCH_ROWS):
            raw = pa.RecordBatch.from_arrays(
                [_raw_for_avro(c) for c in batch.columns], names=batch.schema.names
            )
            try:
                self._writer.write(encode_records(self._avro, raw))
            except ValueError as e:
                raise InvalidDataError(f"data file {self.path}: {e}") from None

    def _finish(self) -> None:
        self._writer.flush()


_FORMATS: dict[str, FileFormat] = {
    f.name: f
    for f in (
        FileFormat(PARQUET, _PARQUET_CODECS, _ParquetReader, _ParquetWriter),
        FileFormat(ORC, _ORC_CODECS, _OrcReader, _OrcWriter),
        FileFormat(AVRO, _AVRO_CODECS, _AvroReader, _AvroWriter),
    )
}

__all__ = [
    "AVRO",
    "DEFAULT_BATCH_ROWS",
    "ORC",
    "PARQUET",
    "SUPPORTED_FORMATS",
    "FileFormat",
    "FormatReader",
    "FormatWriter",
    "avro_schema",
    "dictionary_columns",
    "file_format",
    "format_of_file",
    "open_data_file",
]
