"""CREATE/ALTER TABLE checks of the merge options, so bad tables fail before any data is written."""

from __future__ import annotations

from stratalake.exceptions import InvalidOptionError
from stratalake.merge.aggregation import REMOVE_ON_DELETE as AGG_REMOVE_ON_DELETE
from stratalake.merge.aggregation import aggregate_function_name
from stratalake.merge.aggregators import AGGREGATORS, PrimaryKeyValue, aggregator_class
from stratalake.merge.context import MergeContext
from stratalake.merge.field_options import (
    DEFAULT_AGG_OPTION,
    FIELDS_PREFIX,
    agg_function_option,
    explicit_agg_function,
    field_bool,
    ignore_delete,
    sequence_groups,
)
from stratalake.merge.partial_update import REMOVE_ON_DELETE as PU_REMOVE_ON_DELETE
from stratalake.merge.partial_update import REMOVE_ON_SEQUENCE_GROUP
from stratalake.options import MergeEngine
from stratalake.types import ArrayType, DataType, MapType, MultisetType, RowType

_PER_FIELD = ("aggregate-function", "ignore-retract", "distinct", "list-agg-delimiter")


def validate_merge_options(ctx: MergeContext) -> None:
    """Raise :class:`InvalidOptionError` naming table, column and option for any bad merge option."""
    v = _Validator(ctx)
    v.common()
    engine = ctx.options.merge_engine
    if engine is MergeEngine.AGGREGATE:
        v.aggregation()
    elif engine is MergeEngine.PARTIAL_UPDATE:
        v.partial_update()
    elif engine is MergeEngine.FIRST_ROW:
        v.first_row()


class _Validator:
    def __init__(self, ctx: MergeContext) -> None:
        self.ctx = ctx
        self.table = ctx.table_name
        self.types: dict[str, DataType] = {f.name: f.type for f in ctx.schema.fields}

    def error(self, text: str) -> InvalidOptionError:
        return InvalidOptionError(f"table {self.table}: {text}")

    def require_column(self, column: str, option: str) -> DataType:
        if column not in self.types:
            raise self.error(
                f"option '{option}' names column '{column}', which does not exist; "
                f"columns are {list(self.types)}"
            )
        return self.types[column]

    def common(self) -> None:
        for col in self.ctx.sequence_fields:
            dtype = self.require_column(col, "sequence.field")
            if not _comparable(dtype):
                raise self.error(f"'sequence.field' column '{col}' has type {dtype}, which cannot be ordered")
        ignore_delete(self.ctx)  # parses the boolean
        for col in self.types:
            for flag in ("ignore-retract", "distinct"):
                field_bool(self.ctx, col, flag)

    def _check_function(self, column: str, function: str, option: str) -> None:
        cls = aggregator_class(function)
        if cls is None:
            raise self.error(
                f"option '{option}' names unknown aggregate function '{function}' for column "
                f"'{column}'; use one of {', '.join(sorted(AGGREGATORS))}"
            )
        why = cls.type_error(self.types[column])
        if why is not None:
            raise self.error(
                f"aggregate function '{cls.name}' cannot aggregate column '{column}' of type "
                f"{self.types[column]} ({option}): {why}"
            )

    def _check_field_options(self) -> None:
        """Every ``fields.<col>.<agg option>`` names a column; the default function is known."""
        for key in self.ctx.options:
            if not key.startswith(FIELDS_PREFIX):
                continue
            for suffix in _PER_FIELD:
                if key.endswith("." + suffix):
                    column = key[len(FIELDS_PREFIX) : -len(suffix) - 1]
                    if column != "default":
                        self.require_column(column, key)
        default = self.ctx.options.get(DEFAULT_AGG_OPTION)
        if default is not None and aggregator_class(default) is None:
            raise self.error(
                f"option '{DEFAULT_AGG_OPTION}'='{default}' is not an aggregate function; use one of "
                f"{', '.join(sorted(AGGREGATORS))}"
            )

    def _no_key_function(self, column: str) -> None:
        if (
            column in self.ctx.schema.primary_keys
            and f"fields.{column}.aggregate-function" in self.ctx.options
        ):
            raise self.error(
                f"column '{column}' is part of the primary key and is never aggregated; remove option "
                f"'fields.{column}.aggregate-function'"
            )

    def aggregation(self) -> None:
        self._check_field_options()
        remove_on_delete = self.ctx.options.get_bool(AGG_REMOVE_ON_DELETE)
        for column in self.types:
            self._no_key_function(column)
            function = aggregate_function_name(self.ctx, column)
            if function != PrimaryKeyValue.name:
                self._check_function(column, function, agg_function_option(self.ctx, column))
            if remove_on_delete and field_bool(self.ctx, column, "ignore-retract"):
                raise self.error(
                    f"'{AGG_REMOVE_ON_DELETE}' and 'fields.{column}.ignore-retract' conflict; "
                    "set only one of them"
                )

    def partial_update(self) -> None:
        self._check_field_options()
        keys = set(self.ctx.schema.primary_keys)
        owner: dict[str, str] = {}
        sequence_fields: set[str] = set()
        for group in sequence_groups(self.ctx):
            if not group.sequence or not group.fields:
                raise self.error(f"option '{group.option}' needs sequence columns and a list of columns")
            for col in group.sequence:
                dtype = self.require_column(col, group.option)
                if not _comparable(dtype):
                    raise self.error(
                        f"sequence column '{col}' of '{group.option}' has type {dtype}, which cannot be ordered"
                    )
                sequence_fields.add(col)
            for col in (*group.sequence, *group.fields):
                self.require_column(col, group.option)
                if col in keys:
                    raise self.error(
                        f"option '{group.option}' contains primary-key column '{col}'; primary-key "
                        "columns cannot be in a sequence group"
                    )
            for col in group.fields:
                if col in owner and owner[col] != group.option:
                    raise self.error(
                        f"column '{col}' is in two sequence groups ('{owner[col]}' and "
                        f"'{group.option}'); put it in only one"
                    )
                owner[col] = group.option
        for column in self.types:
            self._no_key_function(column)
            if column in keys or column in sequence_fields:
                continue
            function = explicit_agg_function(self.ctx, column)
            if function is None:
                continue
            option = agg_function_option(self.ctx, column)
            self._check_function(column, function, option)
            if column not in owner and aggregator_class(function) is not AGGREGATORS["last_non_null_value"]:
                raise self.error(
                    f"aggregate function '{function}' of column '{column}' ({option}) needs the column "
                    "to be in a sequence group: add 'fields.<seq-col>.sequence-group'='"
                    f"{column}' or remove the function"
                )
        self._partial_update_deletes(sequence_fields, bool(owner))

    def _partial_update_deletes(self, sequence_fields: set[str], has_groups: bool) -> None:
        ignore = ignore_delete(self.ctx)
        remove = self.ctx.options.get_bool(PU_REMOVE_ON_DELETE)
        on_group = self.ctx.options.get(REMOVE_ON_SEQUENCE_GROUP)
        if ignore and remove:
            raise self.error(f"'ignore-delete' and '{PU_REMOVE_ON_DELETE}' conflict; set only one of them")
        if ignore and on_group:
            raise self.error(
                f"'ignore-delete' and '{REMOVE_ON_SEQUENCE_GROUP}' conflict; set only one of them"
            )
        if remove and has_groups:
            raise self.error(
                f"'{PU_REMOVE_ON_DELETE}' cannot be combined with sequence groups; use "
                f"'{REMOVE_ON_SEQUENCE_GROUP}' to remove rows on a group's -D instead"
            )
        if on_group:
            for col in (c.strip() for c in on_group.split(",") if c.strip()):
                if col not in sequence_fields:
                    raise self.error(
                        f"option '{REMOVE_ON_SEQUENCE_GROUP}' names '{col}', which is not a sequence "
                        f"column of any sequence group; sequence columns are {sorted(sequence_fields)}"
                    )

    def first_row(self) -> None:
        if self.ctx.sequence_fields:
            raise self.error(
                "the first-row merge engine keeps the first record by input order and does not "
                "support 'sequence.field'; remove the option or use another merge engine"
            )


def _comparable(dtype: DataType) -> bool:
    return not isinstance(dtype, ArrayType | MapType | MultisetType | RowType)
