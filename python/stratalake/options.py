"""Table options (Paimon's names and defaults), parsed and validated in one place.

Options arrive as strings (schema files, TBLPROPERTIES, ``WITH (...)``). :class:`CoreOptions` gives
typed access; :meth:`CoreOptions.validate` rejects malformed values with an error that names the
table and the option. Unknown keys are kept and ignored, as Paimon does, so tables written by newer
Paimon versions stay readable.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any

from stratalake.exceptions import InvalidOptionError, UnsupportedError


class MergeEngine(StrEnum):
    DEDUPLICATE = "deduplicate"
    PARTIAL_UPDATE = "partial-update"
    AGGREGATE = "aggregation"
    FIRST_ROW = "first-row"


class ChangelogProducer(StrEnum):
    NONE = "none"
    INPUT = "input"
    LOOKUP = "lookup"
    FULL_COMPACTION = "full-compaction"


class SortOrder(StrEnum):
    ASCENDING = "ascending"
    DESCENDING = "descending"


_MEMORY_UNITS = {
    "": 1,
    "b": 1,
    "bytes": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "gib": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "tib": 1 << 40,
}

_DURATION_UNITS_MS = {
    "": 1,
    "ms": 1,
    "milli": 1,
    "millis": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "secs": 1000,
    "second": 1000,
    "seconds": 1000,
    "min": 60_000,
    "mins": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}

_SIZE_RE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")


def parse_memory_size(text: str) -> int:
    """Parse Paimon memory sizes such as ``128 mb`` or ``1gb`` into bytes."""
    m = _SIZE_RE.match(text)
    if not m or m.group(2).lower() not in _MEMORY_UNITS:
        raise ValueError(f"'{text}' is not a memory size (e.g. '128 mb')")
    return int(m.group(1)) * _MEMORY_UNITS[m.group(2).lower()]


def parse_duration_ms(text: str) -> int:
    """Parse Paimon durations such as ``1 h``, ``30 min`` or ``500 ms`` into milliseconds."""
    m = _SIZE_RE.match(text)
    if not m or m.group(2).lower() not in _DURATION_UNITS_MS:
        raise ValueError(f"'{text}' is not a duration (e.g. '1 h', '30 min')")
    return int(m.group(1)) * _DURATION_UNITS_MS[m.group(2).lower()]


def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    raise ValueError(f"'{text}' is not a boolean (true or false)")


def _parse_int(text: str) -> int:
    return int(text.strip())


def _parse_page_size(text: str) -> int:
    # parquet-mr reads the key as a Java int of bytes (Configuration.getInt), so only that is
    # accepted: a value Paimon's writer cannot parse must not be stored.
    value = int(text.strip())
    if not 0 < value < 2**31:
        raise ValueError(f"'{text}' is not a positive number of bytes below 2^31")
    return value


def parse_level_map(text: str) -> dict[int, str]:
    """Paimon's per-level map option: ``'0:avro,5:parquet'`` -> ``{0: 'avro', 5: 'parquet'}``."""
    out: dict[int, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        level, sep, value = part.partition(":")
        if not sep or not level.strip().isdigit() or not value.strip():
            raise ValueError(f"'{text}' is not a per-level map (e.g. '0:avro,5:parquet')")
        out[int(level)] = value.strip()
    return out


#: Data file formats stratalake reads and writes (Paimon's identifiers and file name extensions).
FILE_FORMATS = ("parquet", "orc", "avro")

#: Compression codecs of each format, by the names the options accept (``lsm/file_format.py`` maps
#: them to the libraries' names).
FORMAT_COMPRESSIONS: dict[str, tuple[str, ...]] = {
    "parquet": ("zstd", "snappy", "gzip", "lz4", "brotli", "none", "uncompressed"),
    "orc": ("zstd", "snappy", "lz4", "zlib", "none", "uncompressed"),
    "avro": ("zstd", "zstandard", "snappy", "deflate", "bzip2", "xz", "none", "null", "uncompressed"),
}


@dataclass(frozen=True)
class _Spec:
    parse: object  # Callable[[str], object]; kept loose to allow enums
    default: str | None
    doc: str


def _enum_parser(enum: type[Enum]) -> object:
    def parse(text: str) -> Enum:
        try:
            return enum(text.strip().lower())
        except ValueError:
            allowed = ", ".join(str(e.value) for e in enum)
            raise ValueError(f"'{text}' is not one of: {allowed}") from None

    return parse


def _choice(*values: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in values:
            raise ValueError(f"must be one of {', '.join(values)}")
        return value

    return parse


# Options stratalake interprets, with Paimon's defaults. Values are validated on create/alter/load.
KNOWN_OPTIONS: dict[str, _Spec] = {
    # Paimon's default -1: dynamic bucket mode for primary-key tables (tables stratalake creates
    # get an explicit 'bucket', see catalog create_table; schema files of Paimon <= 0.7 default to 1).
    "bucket": _Spec(_parse_int, "-1", "number of fixed buckets (> 0), -1 (dynamic) or -2 (postpone)"),
    "dynamic-bucket.target-row-num": _Spec(_parse_int, "2000000", "keys per dynamic bucket (> 0)"),
    "dynamic-bucket.max-buckets": _Spec(_parse_int, "-1", "dynamic buckets per partition (-1: unbounded)"),
    "dynamic-bucket.initial-buckets": _Spec(_parse_int, None, "dynamic-bucket assigners (initial buckets)"),
    "dynamic-bucket.assigner-parallelism": _Spec(
        _parse_int, None, "dynamic-bucket assigner tasks of a Spark write (default: shuffle partitions)"
    ),
    "bucket-key": _Spec(str, None, "comma-separated bucket key columns (default: trimmed primary key)"),
    "merge-engine": _Spec(_enum_parser(MergeEngine), "deduplicate", "how rows with the same key merge"),
    "ignore-delete": _Spec(_parse_bool, "false", "drop -U/-D input records"),
    "sequence.field": _Spec(str, None, "columns ordering records of a key before the system sequence"),
    "sequence.field.sort-order": _Spec(_enum_parser(SortOrder), "ascending", "order of sequence.field"),
    "rowkind.field": _Spec(str, None, "string column holding +I/-U/+U/-D of each input row"),
    "changelog-producer": _Spec(_enum_parser(ChangelogProducer), "none", "changelog production"),
    "changelog-producer.row-deduplicate": _Spec(_parse_bool, "false", "drop -U/+U pairs with equal rows"),
    "target-file-size": _Spec(parse_memory_size, "128 mb", "rolling size of data files"),
    "write-buffer-size": _Spec(parse_memory_size, "256 mb", "memory of the write buffer before a flush"),
    "write-buffer-spillable": _Spec(
        _parse_bool,
        "false",
        "a full write buffer spills sorted runs to local disk (one level-0 run per commit)",
    ),
    "write-buffer-spill.max-disk-size": _Spec(
        parse_memory_size, str(2**62), "local disk the spilled runs of one writer may use, then it flushes"
    ),
    "file.format": _Spec(str, "parquet", "data file format (parquet, orc or avro)"),
    "file.format.per.level": _Spec(parse_level_map, "", "format per LSM level, e.g. '0:avro,5:parquet'"),
    "file.compression": _Spec(str, "zstd", "compression codec of data files (e.g. zstd, snappy, lz4, none)"),
    "file.compression.per.level": _Spec(parse_level_map, "", "compression per LSM level, e.g. '0:lz4'"),
    "file.compression.zstd-level": _Spec(_parse_int, "1", "zstd level of Parquet and Avro data files"),
    "parquet.delta-keys": _Spec(
        _parse_bool,
        "false",
        "Parquet key-value files store integer keys and sequence numbers DELTA_BINARY_PACKED (smaller "
        "files, faster merges); off by default, as Paimon's own writer: Paimon Java 0.9's reader "
        "decodes only PLAIN and dictionary pages",
    ),
    "parquet.page.size": _Spec(
        _parse_page_size,
        None,
        "bytes per Parquet data page before compression (Paimon hands the key to parquet-mr); "
        "unset: 163840 (20,000 values of 8 bytes) for stratalake's writer, parquet-mr's 1 MiB "
        "or 20,000 rows for Spark's writer of append tables",
    ),
    "changelog-file.format": _Spec(str, None, "format of changelog files (default: as data files)"),
    "changelog-file.compression": _Spec(str, None, "compression of changelog files (default: as data files)"),
    "metadata.stats-mode": _Spec(str, "truncate(16)", "none, counts, full or truncate(N)"),
    "num-levels": _Spec(_parse_int, None, "LSM levels (default: num-sorted-run.compaction-trigger + 1)"),
    "num-sorted-run.compaction-trigger": _Spec(_parse_int, "5", "sorted runs that trigger compaction"),
    "num-sorted-run.stop-trigger": _Spec(_parse_int, None, "sorted runs that stall writes"),
    "compaction.size-ratio": _Spec(_parse_int, "1", "universal compaction size ratio (percent)"),
    "compaction.max-size-amplification-percent": _Spec(_parse_int, "200", "size amplification bound"),
    "write-only": _Spec(_parse_bool, "false", "skip compaction and snapshot expiration on write"),
    "compaction.min.file-num": _Spec(_parse_int, "5", "append tables: small files that trigger a compaction"),
    "compaction.max.file-num": _Spec(_parse_int, "50", "append tables: most files one compaction rewrites"),
    "compaction.force-up-level-0": _Spec(_parse_bool, "false", "always compact every level-0 file"),
    "force-lookup": _Spec(_parse_bool, "false", "compact with lookup even without a lookup changelog"),
    "lookup.cache-max-memory-size": _Spec(parse_memory_size, "256 mb", "memory of the lookup cache"),
    # stratalake's own (Paimon ignores it): bucket/key_index_cache.py, bucket/dynamic.py HASH_FILES.
    "stratalake.key-index-cache.max-memory": _Spec(
        parse_memory_size,
        "256 mb",
        "memory of each per-process cache of writers' key indexes: cross-partition keys, "
        "dynamic-bucket HASH files (0: off)",
    ),
    "lookup.cache-max-disk-size": _Spec(parse_memory_size, str(2**63 - 1), "local disk of the lookup cache"),
    "lookup.cache-file-retention": _Spec(parse_duration_ms, "1 h", "how long local lookup copies live"),
    "full-compaction.delta-commits": _Spec(_parse_int, None, "full compaction every N commits"),
    "deletion-vectors.enabled": _Spec(_parse_bool, "false", "produce deletion vectors on compaction"),
    "deletion-vectors.merge-on-read": _Spec(_parse_bool, "false", "batch reads also merge level-0 files"),
    "deletion-vector.index-file.target-size": _Spec(parse_memory_size, "2 mb", "rolling size of DV files"),
    "source.split.target-size": _Spec(parse_memory_size, "128 mb", "data bytes per split of raw reads"),
    "source.split.open-file-cost": _Spec(parse_memory_size, "4 mb", "minimum weight of a file in a split"),
    "snapshot.num-retained.min": _Spec(_parse_int, "10", "snapshots always kept"),
    "snapshot.num-retained.max": _Spec(_parse_int, str(2**31 - 1), "snapshots kept at most"),
    "snapshot.time-retained": _Spec(parse_duration_ms, "1 h", "age before a snapshot may expire"),
    "snapshot.expire.limit": _Spec(_parse_int, "50", "snapshots one expiration may delete at most"),
    "changelog.num-retained.min": _Spec(_parse_int, None, "changelogs always kept (default: snapshot's)"),
    "changelog.num-retained.max": _Spec(_parse_int, None, "changelogs kept at most (default: snapshot's)"),
    "changelog.time-retained": _Spec(parse_duration_ms, None, "age before a changelog may expire"),
    "consumer.expiration-time": _Spec(
        parse_duration_ms, None, "age of a consumer file's last change after which the consumer expires"
    ),
    "consumer.changelog-only": _Spec(_parse_bool, "false", "consumers pin changelogs only, not snapshots"),
    "consumer.ignore-progress": _Spec(_parse_bool, "false", "a new streaming query ignores its consumer"),
    "consumer.mode": _Spec(str, "exactly-once", "exactly-once or at-least-once"),
    "partition.default-name": _Spec(str, "__DEFAULT_PARTITION__", "directory name of a null partition"),
    "commit.max-retries": _Spec(_parse_int, "10", "retries of a commit that lost a race"),
    "manifest.target-file-size": _Spec(parse_memory_size, "8 mb", "target size of manifest files"),
    "manifest.merge-min-count": _Spec(_parse_int, "30", "manifests that trigger a merge"),
    "manifest.full-compaction-threshold-size": _Spec(
        parse_memory_size, "16 mb", "size that forces a full merge"
    ),
    "partial-update.remove-record-on-delete": _Spec(_parse_bool, "false", "a -D removes the row"),
    "partial-update.remove-record-on-sequence-group": _Spec(str, None, "sequence groups whose -D removes"),
    "aggregation.remove-record-on-delete": _Spec(_parse_bool, "false", "a -D removes the row"),
    "delete.force-produce-changelog": _Spec(
        _parse_bool, "false", "a DELETE on partition columns writes -D records instead of dropping partitions"
    ),
    "fields.default-aggregate-function": _Spec(str, None, "aggregate function of unnamed columns"),
    "scan.mode": _Spec(str, "default", "startup mode of scans"),
    "scan.snapshot-id": _Spec(_parse_int, None, "snapshot of from-snapshot scans"),
    "scan.timestamp-millis": _Spec(_parse_int, None, "timestamp of from-timestamp scans"),
    "primary-key": _Spec(str, None, "primary key columns, when given as a table property"),
    # Automatic tags after commits (maintenance/auto_tags.py).
    "tag.automatic-creation": _Spec(
        _choice("none", "process-time", "watermark", "batch"), "none", "automatic tags after commits"
    ),
    "tag.creation-period": _Spec(
        _choice("daily", "hourly", "two-hours"), "daily", "period of automatic tags"
    ),
    "tag.creation-period-duration": _Spec(parse_duration_ms, None, "period of automatic tags (overrides)"),
    "tag.creation-delay": _Spec(parse_duration_ms, "0 ms", "delay after a period before its tag"),
    "tag.period-formatter": _Spec(
        _choice("with_dashes", "without_dashes", "without_dashes_and_spaces"),
        "with_dashes",
        "tag name format",
    ),
    "tag.num-retained-max": _Spec(_parse_int, None, "automatic tags kept at most"),
    "tag.default-time-retained": _Spec(parse_duration_ms, None, "retention of tags created without one"),
    "tag.automatic-completion": _Spec(_parse_bool, "false", "tag every missed period in turn"),
    "tag.time-expire-enabled": _Spec(_parse_bool, "true", "expire tags past their retention after commits"),
    "tag.batch.customized-name": _Spec(str, None, "name of the batch-mode tag"),
    # Partition expiration after commits (operation/commit/partition_expire.py).
    "partition.expiration-time": _Spec(parse_duration_ms, None, "age after which a partition expires"),
    "partition.expiration-check-interval": _Spec(parse_duration_ms, "1 h", "how often commits check expiry"),
    "partition.expiration-max-num": _Spec(_parse_int, "100", "partitions one expiry drops at most"),
    "partition.expiration-batch-size": _Spec(_parse_int, None, "partitions dropped per commit"),
    "end-input.check-partition-expire": _Spec(_parse_bool, "false", "check expiry after each batch write"),
}


#: Paimon's ``consumer.mode`` values. A Spark stream plans every batch on the driver and records
#: its consumer once per committed batch, so it meets exactly-once (and so at-least-once) alike.
CONSUMER_MODES = ("exactly-once", "at-least-once")


class CoreOptions(Mapping[str, str]):
    """Typed, validated view over a table's string options."""

    def __init__(self, options: Mapping[str, str] | None = None, table: str = "table") -> None:
        self._raw: dict[str, str] = {str(k): str(v) for k, v in (options or {}).items()}
        self._table = table

    # Mapping protocol over the raw strings.
    def __getitem__(self, key: str) -> str:
        return self._raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def to_dict(self) -> dict[str, str]:
        return dict(self._raw)

    def _parsed(self, key: str) -> Any:
        spec = KNOWN_OPTIONS[key]
        text = self._raw.get(key, spec.default)
        if text is None:
            return None
        try:
            return spec.parse(text)  # type: ignore[operator]
        except (ValueError, TypeError) as e:
            raise InvalidOptionError(
                f"table {self._table}: option '{key}' has an invalid value: {e}. Expected {spec.doc}."
            ) from None

    def validate(self) -> None:
        """Parse every known option; raise :class:`InvalidOptionError` on the first bad one."""
        for key in KNOWN_OPTIONS:
            self._parsed(key)
        # -1: dynamic bucket mode (bucket/dynamic.py); -2: postpone buckets (read only).
        if self.bucket <= 0 and self.bucket not in (-1, -2):
            raise InvalidOptionError(
                f"table {self._table}: option 'bucket' must be a number of buckets > 0, -1 (dynamic "
                f"bucket mode) or -2 (postpone bucket mode), got {self.bucket}"
            )
        if self.bucket == -1:
            self._validate_dynamic_bucket()
        for key, fmt in self._format_settings():
            if fmt not in FILE_FORMATS:
                raise UnsupportedError(
                    f"table {self._table}: '{key}'='{fmt}' is not supported; stratalake reads and writes "
                    f"data files in {', '.join(FILE_FORMATS)}"
                )
        self._validate_compressions()
        consumer_mode = str(self._parsed("consumer.mode")).strip().lower()
        if consumer_mode not in CONSUMER_MODES:
            raise InvalidOptionError(
                f"table {self._table}: option 'consumer.mode'='{consumer_mode}' must be one of "
                f"{', '.join(CONSUMER_MODES)}"
            )
        mode = self.stats_mode
        if mode not in ("none", "counts", "full") and not re.fullmatch(r"truncate\(\d+\)", mode):
            raise InvalidOptionError(
                f"table {self._table}: option 'metadata.stats-mode'='{mode}' must be none, counts, "
                "full or truncate(N)"
            )
        if self.num_levels < 2:
            raise InvalidOptionError(f"table {self._table}: option 'num-levels' must be >= 2")
        if self.deletion_vectors_enabled:
            # As Paimon's schema validation: the full-compaction rewriter merges without looking
            # old records up, so it could not mask them; first-row never deletes old records.
            if self.changelog_producer is ChangelogProducer.FULL_COMPACTION:
                raise InvalidOptionError(
                    f"table {self._table}: 'deletion-vectors.enabled'='true' works with "
                    "'changelog-producer' none, input or lookup, not 'full-compaction'; use 'lookup' "
                    "for a changelog, or disable deletion vectors"
                )
            if self.merge_engine is MergeEngine.FIRST_ROW:
                raise InvalidOptionError(
                    f"table {self._table}: 'merge-engine'='first-row' needs no deletion vectors (it never "
                    "deletes old records, and its batch reads already skip level 0); remove "
                    "'deletion-vectors.enabled'"
                )

    def _validate_dynamic_bucket(self) -> None:
        """Paimon's schema validation of dynamic bucket mode."""
        target = int(self._parsed("dynamic-bucket.target-row-num"))
        max_buckets = int(self._parsed("dynamic-bucket.max-buckets"))
        initial = self._parsed("dynamic-bucket.initial-buckets")
        if target <= 0:
            raise InvalidOptionError(
                f"table {self._table}: option 'dynamic-bucket.target-row-num' must be > 0, got {target}"
            )
        if max_buckets != -1 and not 1 <= max_buckets <= 32768:
            raise InvalidOptionError(
                f"table {self._table}: option 'dynamic-bucket.max-buckets' must be -1 (unbounded) or "
                f"between 1 and 32768, got {max_buckets}"
            )
        if initial is not None and int(initial) <= 0:
            raise InvalidOptionError(
                f"table {self._table}: option 'dynamic-bucket.initial-buckets' must be > 0, got {initial}"
            )
        parallelism = self._parsed("dynamic-bucket.assigner-parallelism")
        if parallelism is not None and not 1 <= int(parallelism) <= 32767:
            raise InvalidOptionError(
                f"table {self._table}: option 'dynamic-bucket.assigner-parallelism' must be between 1 "
                f"and 32767, got {parallelism}"
            )
        if self._raw.get("bucket-key"):
            raise InvalidOptionError(
                f"table {self._table}: 'bucket-key' cannot be set with 'bucket'='-1' (dynamic bucket "
                "mode assigns buckets by the primary key); remove 'bucket-key' or set a fixed number "
                "of buckets"
            )

    # Typed accessors. Each parses on access; options are small and accessed rarely per batch.
    @property
    def table_name(self) -> str:
        return self._table

    @property
    def bucket(self) -> int:
        return int(self._parsed("bucket"))

    @property
    def merge_engine(self) -> MergeEngine:
        value = self._parsed("merge-engine")
        assert isinstance(value, MergeEngine)
        return value

    @property
    def ignore_delete(self) -> bool:
        return bool(self._parsed("ignore-delete"))

    @property
    def sequence_fields(self) -> list[str]:
        return _split_names(self._raw.get("sequence.field"))

    @property
    def sequence_descending(self) -> bool:
        return self._parsed("sequence.field.sort-order") is SortOrder.DESCENDING

    @property
    def rowkind_field(self) -> str | None:
        value = self._raw.get("rowkind.field")
        return value.strip() if value else None

    @property
    def changelog_producer(self) -> ChangelogProducer:
        value = self._parsed("changelog-producer")
        assert isinstance(value, ChangelogProducer)
        return value

    @property
    def target_file_size(self) -> int:
        return int(self._parsed("target-file-size"))

    @property
    def write_buffer_size(self) -> int:
        return int(self._parsed("write-buffer-size"))

    @property
    def file_format(self) -> str:
        return str(self._parsed("file.format")).lower()

    @property
    def file_compression(self) -> str:
        return str(self._parsed("file.compression")).lower()

    @property
    def zstd_level(self) -> int:
        return int(self._parsed("file.compression.zstd-level"))

    @property
    def parquet_page_size(self) -> int | None:
        page = self._parsed("parquet.page.size")
        return None if page is None else int(page)

    @property
    def parquet_delta_keys(self) -> bool:
        return bool(self._parsed("parquet.delta-keys"))

    def format_for_level(self, level: int, changelog: bool = False) -> str:
        """Format of a new data file of ``level`` (or changelog file written at ``level``), as
        Paimon picks it: ``changelog-file.format`` for changelog files, then
        ``file.format.per.level``, then ``file.format``."""
        if changelog and self._raw.get("changelog-file.format"):
            return self._raw["changelog-file.format"].strip().lower()
        per_level: dict[int, str] = self._parsed("file.format.per.level")
        return per_level.get(level, self.file_format).strip().lower()

    def compression_for_level(self, level: int, changelog: bool = False) -> str:
        """Compression of a new data (or changelog) file of ``level``, chosen like its format."""
        if changelog and self._raw.get("changelog-file.compression"):
            return self._raw["changelog-file.compression"].strip().lower()
        per_level: dict[int, str] = self._parsed("file.compression.per.level")
        return per_level.get(level, self.file_compression).strip().lower()

    def _validate_compressions(self) -> None:
        """Every (format, compression) pair a level or changelog file would use must exist."""
        formats: dict[int, str] = self._parsed("file.format.per.level")
        codecs: dict[int, str] = self._parsed("file.compression.per.level")
        levels = {-1, *formats, *codecs}  # -1: any level without a per-level entry
        for level in sorted(levels):
            for changelog in (False, True):
                fmt = self.format_for_level(level, changelog)
                codec = self.compression_for_level(level, changelog)
                if fmt in FORMAT_COMPRESSIONS and codec not in FORMAT_COMPRESSIONS[fmt]:
                    where = "data files" if level < 0 else f"level {level}"
                    where = "changelog files" if changelog else where
                    raise InvalidOptionError(
                        f"table {self._table}: compression '{codec}' (options 'file.compression', "
                        f"'file.compression.per.level', 'changelog-file.compression') is not available for "
                        f"{fmt} {where}; use one of {', '.join(FORMAT_COMPRESSIONS[fmt])}"
                    )

    def _format_settings(self) -> list[tuple[str, str]]:
        """Every format the options name, with the option naming it."""
        out = [("file.format", self.file_format)]
        per_level: dict[int, str] = self._parsed("file.format.per.level")
        out += [("file.format.per.level", f.strip().lower()) for f in per_level.values()]
        if self._raw.get("changelog-file.format"):
            out.append(("changelog-file.format", self._raw["changelog-file.format"].strip().lower()))
        return out

    @property
    def stats_mode(self) -> str:
        return str(self._parsed("metadata.stats-mode")).strip().lower()

    @property
    def num_levels(self) -> int:
        # Paimon: one more than the compaction trigger, so compaction never has to output level 0.
        value = self._parsed("num-levels")
        if value is None:
            return int(self._parsed("num-sorted-run.compaction-trigger")) + 1
        return int(value)

    @property
    def partition_default_name(self) -> str:
        return str(self._parsed("partition.default-name"))

    @property
    def commit_max_retries(self) -> int:
        return int(self._parsed("commit.max-retries"))

    @property
    def deletion_vectors_enabled(self) -> bool:
        return bool(self._parsed("deletion-vectors.enabled"))

    def get_int(self, key: str) -> int | None:
        value = self._parsed(key)
        return None if value is None else int(value)

    def get_bool(self, key: str) -> bool:
        return bool(self._parsed(key))

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return self._raw.get(key, default)

    def field_option(self, column: str, name: str) -> str | None:
        """``fields.<column>.<name>``, e.g. ``fields.price.aggregate-function``."""
        return self._raw.get(f"fields.{column}.{name}")


def _split_names(text: str | None) -> list[str]:
    if not text:
        return []
    return [part.strip() for part in text.split(",") if part.strip()]
