"""Write options of Spark writes: the few stratalake honours, and every other one refused by name.

``df.writeTo("lake.db.t").option("write.merge-schema", "true").append()`` used to write as if the
option were absent, and ``.option("bucket", "8")`` on an existing table changed nothing: an
ignored option looks like an answer and is not the one asked for. So a write accepts only:

- the data source's own locators and Spark's generic write options (``path``, ``warehouse``,
  ``table``, ``checkpointLocation``, ``partitionOverwriteMode``), and the internal options
  the catalog and the shim add (``source_options.INTERNAL``; any other ``stratalake.*`` key is
  refused like any unknown option);
- ``commit.user`` on streaming writes (:mod:`stratalake.spark.streaming`);
- the table's own options with the values it stores: ``CREATE TABLE ... AS SELECT`` and
  ``df.write.option("bucket", "2").saveAsTable(...)`` hand their table options to the write too.

Schema evolution on write (Paimon's ``write.merge-schema`` and ``write.merge-schema.type-widening``,
Spark's ``mergeSchema`` as a synonym) is accepted on batch writes: the shim's analyzer rule
(``sql/MergeSchemaWrites.scala``) evolves the table before the write. ``explicit-cast`` is refused
(stratalake only widens types losslessly), and so is merge-schema on streaming writes. A table
option with another value than the table's is refused (a write cannot change a table option;
``ALTER TABLE ... SET TBLPROPERTIES`` does).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from stratalake.exceptions import InvalidOptionError, UnsupportedError
from stratalake.options import KNOWN_OPTIONS
from stratalake.paimon_options import CONNECTOR_OPTIONS, CORE_OPTIONS, PREFIXES
from stratalake.spark import source_options

if TYPE_CHECKING:
    from stratalake.table.table import Table

COMMIT_USER = "commit.user"  # explicit commit user of a streaming write (advanced)

#: Spark's own write options and the data source's locators.
_GENERIC = (
    "path",
    "paths",
    "warehouse",
    "table",
    "checkpointLocation",
    "path.checkpointLocation",
    "partitionOverwriteMode",
)
#: Schema evolution on write (booleans): the switches batch writes honour.
MERGE_SCHEMA = ("write.merge-schema", "mergeSchema")
TYPE_WIDENING = "write.merge-schema.type-widening"
EXPLICIT_CAST = "write.merge-schema.explicit-cast"
_MERGE_SCHEMA = (*MERGE_SCHEMA, TYPE_WIDENING, EXPLICIT_CAST)


def _known(streaming: bool) -> list[str]:
    return [*_GENERIC, *((COMMIT_USER,) if streaming else ())]


_TABLE_OPTIONS = frozenset(k.lower() for k in (*KNOWN_OPTIONS, *CORE_OPTIONS, *CONNECTOR_OPTIONS))


def _is_table_option(key: str) -> bool:
    # Spark hands write options over lower-cased (a case-insensitive map).
    return key.lower() in _TABLE_OPTIONS or key.lower().startswith(PREFIXES)


def _stored(table: Table, key: str) -> str | None:
    """The value the table holds for ``key`` (its options, or its keys for ``primary-key`` /
    ``partition``, which CREATE TABLE ... AS SELECT may carry as options)."""
    schema = table.schema()
    key = key.lower()
    if key == "primary-key":
        return ",".join(schema.primary_keys)
    if key == "partition":
        return ",".join(schema.partition_keys)
    return next((v for k, v in schema.options.items() if k.lower() == key.lower()), None)


def check_write_options(table: Table, options: Mapping[str, str], streaming: bool = False) -> None:
    """Refuse, by name, a write option stratalake does not honour (module docstring)."""
    accepted = {k.lower() for k in _known(streaming)}
    for key, value in options.items():
        lowered = key.lower()
        if lowered in source_options.INTERNAL or lowered in accepted:
            continue
        text = str(value).strip()
        if lowered in {k.lower() for k in _MERGE_SCHEMA}:
            _check_merge_schema(table, key, text, streaming)
            continue
        if lowered == COMMIT_USER:
            raise InvalidOptionError(
                f"table {table.identifier}: write option '{key}' is for streaming writes; a batch write "
                "commits under a user of its own"
            )
        stored = _stored(table, key)
        if stored is not None and stored.strip() == text:
            continue  # the table's own option, handed to the write by CREATE TABLE ... AS SELECT
        if _is_table_option(key):
            now = f"'{stored}'" if stored is not None else "unset"
            raise InvalidOptionError(
                f"table {table.identifier}: write option '{key}'='{text}' is a table option (the table has "
                f"it {now}); a write cannot change it: set it with ALTER TABLE ... SET TBLPROPERTIES"
            )
        spelled = {k.lower(): k for k in _known(streaming)}
        close = difflib.get_close_matches(lowered, sorted(spelled), n=1)
        hint = f" (did you mean '{spelled[close[0]]}'?)" if close else ""
        raise InvalidOptionError(
            f"table {table.identifier}: unknown write option '{key}'{hint}; stratalake writes take "
            f"{', '.join(_known(streaming))} and the table's own options"
        )


def _check_merge_schema(table: Table, key: str, text: str, streaming: bool) -> None:
    """A schema-evolution switch: a boolean; on, it is refused where stratalake cannot honour it."""
    if text.lower() not in ("true", "false"):
        raise InvalidOptionError(
            f"table {table.identifier}: write option '{key}'='{text}' must be 'true' or 'false'"
        )
    if text.lower() == "false":
        return  # off, as by default
    if key.lower() == EXPLICIT_CAST:
        raise UnsupportedError(
            f"table {table.identifier}: write option '{key}' is not supported: stratalake changes column "
            "types only by lossless widening; cast the data to the column's type instead"
        )
    if streaming:
        raise UnsupportedError(
            f"table {table.identifier}: write option '{key}' (schema evolution on write) is not supported "
            "on streaming writes; add the new columns first (ALTER TABLE ... ADD COLUMNS)"
        )
