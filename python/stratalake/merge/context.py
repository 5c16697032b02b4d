"""What every merge function needs to know about the table: keys, ordering, options."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from stratalake.options import CoreOptions
from stratalake.spec.schema import TableSchema

SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"


class RowKind(IntEnum):
    """``_VALUE_KIND`` values (Paimon's RowKind byte)."""

    INSERT = 0  # +I
    UPDATE_BEFORE = 1  # -U
    UPDATE_AFTER = 2  # +U
    DELETE = 3  # -D

    @property
    def short_string(self) -> str:
        return ("+I", "-U", "+U", "-D")[self.value]


@dataclass(frozen=True)
class MergeContext:
    """The table facts a merge needs, computed once per table schema."""

    table_name: str
    schema: TableSchema
    options: CoreOptions
    key_names: tuple[str, ...]  # trimmed primary key: the merge/sort key
    sequence_fields: tuple[str, ...]  # sequence.field columns, compared before _SEQUENCE_NUMBER
    sequence_descending: bool

    @staticmethod
    def of(
        schema: TableSchema, options: CoreOptions | None = None, table_name: str = "table"
    ) -> MergeContext:
        opts = options if options is not None else CoreOptions(schema.options, table_name)
        return MergeContext(
            table_name=table_name,
            schema=schema,
            options=opts,
            key_names=tuple(schema.trimmed_primary_keys),
            sequence_fields=tuple(opts.sequence_fields),
            sequence_descending=opts.sequence_descending,
        )

    @property
    def value_names(self) -> tuple[str, ...]:
        """Every table column in schema order (the KV table's leading columns)."""
        return tuple(f.name for f in self.schema.fields)
