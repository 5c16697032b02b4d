"""Per-column merge options (``fields.<col>.*``), parsed once for engines and validation alike."""

from __future__ import annotations

from dataclasses import dataclass

from stratalake.exceptions import InvalidOptionError
from stratalake.merge.context import MergeContext

FIELDS_PREFIX = "fields."
SEQUENCE_GROUP_SUFFIX = ".sequence-group"
DEFAULT_AGG_OPTION = "fields.default-aggregate-function"


@dataclass(frozen=True)
class SequenceGroup:
    """``fields.<s1>,<s2>.sequence-group = <c1>,<c2>``: columns ``fields`` ordered by ``sequence``."""

    option: str
    sequence: tuple[str, ...]
    fields: tuple[str, ...]


def _names(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def sequence_groups(ctx: MergeContext) -> list[SequenceGroup]:
    """Every sequence group declared in the table options, in option-key order."""
    groups = []
    for key in sorted(ctx.options):
        if key.startswith(FIELDS_PREFIX) and key.endswith(SEQUENCE_GROUP_SUFFIX):
            seq = _names(key[len(FIELDS_PREFIX) : -len(SEQUENCE_GROUP_SUFFIX)])
            groups.append(SequenceGroup(key, seq, _names(ctx.options[key])))
    return groups


def field_bool(ctx: MergeContext, column: str, name: str, default: bool = False) -> bool:
    """Boolean ``fields.<column>.<name>``; InvalidOptionError naming the option if malformed."""
    text = ctx.options.field_option(column, name)
    if text is None:
        return default
    low = text.strip().lower()
    if low not in ("true", "false"):
        raise InvalidOptionError(
            f"table {ctx.table_name}: option 'fields.{column}.{name}'='{text}' must be true or false"
        )
    return low == "true"


def bool_option(ctx: MergeContext, key: str, fallback_keys: tuple[str, ...] = ()) -> bool:
    """A boolean table option read from ``key`` or a legacy fallback key."""
    for k in (key, *fallback_keys):
        text = ctx.options.get(k)
        if text is None:
            continue
        low = text.strip().lower()
        if low not in ("true", "false"):
            raise InvalidOptionError(f"table {ctx.table_name}: option '{k}'='{text}' must be true or false")
        return low == "true"
    return False


def ignore_delete(ctx: MergeContext) -> bool:
    """``ignore-delete``, or the per-engine keys older Paimon versions wrote."""
    return bool_option(
        ctx,
        "ignore-delete",
        ("first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete"),
    )


def list_agg_delimiter(ctx: MergeContext, column: str) -> str:
    text = ctx.options.field_option(column, "list-agg-delimiter")
    return "," if text is None else text


def explicit_agg_function(ctx: MergeContext, column: str) -> str | None:
    """``fields.<column>.aggregate-function``, else ``fields.default-aggregate-function``."""
    name = ctx.options.field_option(column, "aggregate-function")
    if name is None:
        name = ctx.options.get(DEFAULT_AGG_OPTION)
    return name.strip().lower() if name is not None and name.strip() else None


def agg_function_option(ctx: MergeContext, column: str) -> str:
    """The option key that set a column's aggregate function (for error messages)."""
    key = f"fields.{column}.aggregate-function"
    return key if key in ctx.options else DEFAULT_AGG_OPTION
