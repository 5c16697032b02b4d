"""Which tables stratalake can read and write: the one place that says what it does not support yet.

A Paimon warehouse may hold tables whose layout or options change what the files on disk mean in
ways stratalake does not implement (postpone buckets, data files elsewhere, other
file formats...). Such a table is still listed and described (schema, options, snapshots): the
refusal comes from :meth:`Table.new_scan`/``new_read``/``new_write``/``new_commit``, with a message
naming the table, the option and what to do.

Amend :func:`unsupported_features` when a feature lands or a new one must be refused.
"""

from __future__ import annotations

from collections.abc import Mapping

from stratalake import option_support
from stratalake.exceptions import UnsupportedError
from stratalake.options import FILE_FORMATS, ChangelogProducer, MergeEngine, parse_level_map
from stratalake.spec.schema import TableSchema

_TRUE = "true"
# Reads of postpone-bucket tables work (as Paimon's batch reads, they see only rows compacted into
# real buckets); writes and compaction are refused.
_POSTPONE = (
    "uses postpone bucket mode ('bucket'='-2'), which stratalake can read (rows not yet compacted "
    "into real buckets are invisible, as in Paimon) but not write; write and compact it with Paimon"
)


def _is_true(options: Mapping[str, str], key: str) -> bool:
    return options.get(key, "").strip().lower() == _TRUE


def unsupported_features(schema: TableSchema, options: Mapping[str, str]) -> list[str]:
    """One message per feature of a table (``schema`` with ``options``) that stratalake cannot read
    or write correctly yet; empty when it can. Each names the option (or layout) and what to do."""
    out: list[str] = []
    table_type = options.get("type", "table").strip().lower()
    if table_type != "table":
        out.append(f"is a Paimon '{table_type}' (option 'type'); only regular tables ('table') are supported")
    bucket = options.get("bucket", "").strip()
    if bucket == "-2":
        out.append(_POSTPONE)
    # 'bucket'='-1' (dynamic bucket mode) is handled by the dynamic-bucket support, not refused here.
    bucket_function = options.get("bucket-function.type", "default").strip().lower()
    if bucket_function != "default":
        out.append(
            f"assigns buckets with 'bucket-function.type'='{bucket_function}'; only Paimon's default "
            "bucket function is supported"
        )
    out += _format_problems(options)
    engine = options.get("merge-engine")
    if engine is not None and engine.strip().lower() not in {e.value for e in MergeEngine}:
        out.append(
            f"uses 'merge-engine'='{engine}', which stratalake does not implement (it implements "
            f"{', '.join(e.value for e in MergeEngine)})"
        )
    producer = options.get("changelog-producer")
    if producer is not None and producer.strip().lower() not in {p.value for p in ChangelogProducer}:
        out.append(
            f"uses 'changelog-producer'='{producer}', which stratalake does not implement (it implements "
            f"{', '.join(p.value for p in ChangelogProducer)})"
        )
    for key, what in (
        ("data-file.external-paths", "keeps data files outside the table directory"),
        ("data-file.path-directory", "keeps data files in a sub-directory of the table"),
        ("blob-field", "stores BLOB columns in separate blob files"),
        ("vector-field", "stores VECTOR columns in separate files"),
        ("variant.shreddingSchema", "shreds VARIANT columns"),
    ):
        if options.get(key, "").strip():
            out.append(f"{what} (option '{key}'), which is not supported yet; remove the option to use it")
    for key, what in (
        ("deletion-vectors.bitmap64", "writes 64-bit deletion vector bitmaps"),
        ("row-tracking.enabled", "tracks row ids (row tracking)"),
        ("data-evolution.enabled", "uses data evolution (files holding some columns of rows)"),
        ("index-file-in-data-file-dir", "keeps index files in the data file directories"),
    ):
        if _is_true(options, key):
            out.append(f"{what} ('{key}'='true'), which is not supported yet")
    for key in sorted(options):
        if key.startswith("fields.") and key.endswith(".default-value"):
            column = key[len("fields.") : -len(".default-value")]
            # Paimon up to 1.2 filled this into nulls on read; 1.3+ ignores it (defaults are filled
            # on write from the column's DEFAULT since 1.2): a reader cannot agree with both.
            out.append(
                f"sets '{key}', Paimon's pre-1.3 default applied on read, which stratalake does not "
                f"apply; give column '{column}' a DEFAULT instead (ALTER TABLE ... ALTER COLUMN "
                f"{column} SET DEFAULT ..., or SchemaChange.update_column_default_value) and remove "
                "the option"
            )
    if schema.partition_keys and options.get("partition.legacy-name", _TRUE).strip().lower() != _TRUE:
        out.append(
            "names partition directories with 'partition.legacy-name'='false', which is not supported yet"
        )
    for key, value, what in option_support.unhonoured(options, "read"):
        out.append(f"sets '{key}'='{value}' (in Paimon it {what}), which stratalake does not implement")
    return out + _write_only(options)


def _write_only(options: Mapping[str, str]) -> list[str]:
    """Features a read does not depend on: such a table is read, not written."""
    return [
        f"sets '{key}'='{value}' (in Paimon it {what}), which stratalake's writes do not implement; "
        "write it with Paimon"
        for key, value, what in option_support.unhonoured(options, "write")
    ]


def _format_problems(options: Mapping[str, str]) -> list[str]:
    formats = [("file.format", options.get("file.format", "parquet"))]
    if options.get("changelog-file.format", "").strip():
        formats.append(("changelog-file.format", options["changelog-file.format"]))
    try:
        per_level = parse_level_map(options.get("file.format.per.level", ""))
    except ValueError as e:
        return [f"has an invalid 'file.format.per.level': {e}"]
    formats += [("file.format.per.level", f) for f in per_level.values()]
    return [
        f"writes data files in format '{fmt}' ('{key}'), which stratalake cannot read or write (it "
        f"supports {', '.join(FILE_FORMATS)})"
        for key, fmt in formats
        if fmt.strip().lower() not in FILE_FORMATS
    ]


def check_supported(identifier: str, schema: TableSchema, action: str = "use") -> None:
    """Raise :class:`UnsupportedError` naming table ``identifier`` and every unsupported feature."""
    problems = unsupported_features(schema, schema.options)
    if action == "read":
        read_safe = {_POSTPONE, *_write_only(schema.options)}
        problems = [p for p in problems if p not in read_safe]
    if not problems:
        return
    many = len(problems) > 1
    detail = "; ".join(f"({i}) {p}" for i, p in enumerate(problems, 1)) if many else problems[0]
    raise UnsupportedError(f"table {identifier} {detail}. stratalake cannot {action} it")
