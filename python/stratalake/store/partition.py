"""Partition values: BinaryRow bytes, directory names, and vectorized grouping of rows."""

from __future__ import annotations

import datetime
import unicodedata
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import SchemaError
from stratalake.spec.binary_row import decode_row, encode_row
from stratalake.spec.schema import TableSchema
from stratalake.types import DataType, to_arrow

# Characters Paimon's PartitionPathUtils escapes in partition directory names, as %XX: control
# characters and a few path and glob specials. Everything else, spaces and non-ASCII
# characters included, is kept as it is.
_ESCAPED = frozenset(chr(c) for c in range(0x20)) | frozenset("\"#%'*/:=?\\\x7f{}[]^")


def escape_path_name(text: str) -> str:
    """``text`` as Paimon writes it in a partition directory name."""
    if not any(c in _ESCAPED for c in text):
        return text
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def _blank(text: str) -> bool:
    """Empty or only whitespace as Java's ``Character.isWhitespace`` sees it (Paimon's test)."""
    return all(
        c in "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"
        or (unicodedata.category(c) in ("Zs", "Zl", "Zp") and c not in "\xa0\u2007\u202f")
        for c in text
    )


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (datetime.date, datetime.time, Decimal)):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


class PartitionCodec:
    """Converts partition values between Python tuples, BinaryRow bytes and paths."""

    def __init__(self, schema: TableSchema, default_name: str = "__DEFAULT_PARTITION__") -> None:
        self.keys: tuple[str, ...] = tuple(schema.partition_keys)
        self.types: tuple[DataType, ...] = tuple(schema.field(k).type for k in self.keys)
        self.default_name = default_name
        self._decoded: dict[bytes, tuple[Any, ...]] = {}

    @property
    def is_partitioned(self) -> bool:
        return bool(self.keys)

    def to_bytes(self, values: Sequence[Any]) -> bytes:
        return encode_row(list(values), list(self.types))

    def from_bytes(self, data: bytes) -> tuple[Any, ...]:
        cached = self._decoded.get(data)
        if cached is None:
            cached = tuple(decode_row(data, list(self.types)))
            self._decoded[data] = cached
        return cached

    def to_dict(self, data: bytes) -> dict[str, Any]:
        return dict(zip(self.keys, self.from_bytes(data), strict=True))

    def path(self, values: Sequence[Any]) -> str:
        """``k1=v1/k2=v2`` as Paimon names partition directories: escaped as
        :func:`escape_path_name`, null and empty or whitespace-only values as the default
        partition name; '' for an unpartitioned table."""
        parts = []
        for key, value in zip(self.keys, values, strict=True):
            text = None if value is None else _format_value(value)
            if text is None or _blank(text):
                text = self.default_name
            parts.append(f"{escape_path_name(key)}={escape_path_name(text)}")
        return "/".join(parts)

    def strings(self, values: Sequence[Any]) -> dict[str, str]:
        """The partition as ``{key: text}`` in key order, unescaped (what a metastore holds for a
        partition, as Paimon's partition computer makes it): null and blank values are the
        default partition name."""
        out = {}
        for key, value in zip(self.keys, values, strict=True):
            text = None if value is None else _format_value(value)
            out[key] = self.default_name if text is None or _blank(text) else text
        return out

    def spec_to_values(self, spec: Mapping[str, Any], table: str) -> tuple[Any, ...]:
        """A user partition spec ({'dt': '2024-01-01'}) as typed values in key order."""
        unknown = set(spec) - set(self.keys)
        if unknown or len(spec) != len(self.keys):
            raise SchemaError(
                f"table {table}: partition spec {dict(spec)} must name exactly the partition "
                f"columns {list(self.keys)}"
            )
        out = []
        for key, dt in zip(self.keys, self.types, strict=True):
            value = spec[key]
            if value is not None:
                value = pa.array([value]).cast(to_arrow(dt))[0].as_py()
            out.append(value)
        return tuple(out)


def group_rows(
    table: pa.Table, columns: Sequence[str], extra_codes: np.ndarray | None = None, extra_card: int = 1
) -> list[tuple[np.ndarray, int]]:
    """Group row indices by the values of ``columns`` (and an optional int code such as a bucket).

    Returns ``[(row_indices, extra_code), ...]``; row indices keep input order within a group.
    Vectorized: dictionary-encodes each column and sorts one combined int64 code.
    """
    n = table.num_rows
    code = np.zeros(n, dtype=np.int64)
    for name in columns:
        col = table.column(name)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        enc = pc.dictionary_encode(col, null_encoding="encode")
        idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        card = max(len(enc.dictionary), 1)
        code = code * card + idx
    if extra_codes is not None:
        code = code * extra_card + extra_codes.astype(np.int64)
    if n == 0:
        return []
    order = np.argsort(code, kind="stable")
    sorted_codes = code[order]
    bounds = np.flatnonzero(sorted_codes[1:] != sorted_codes[:-1]) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.append(bounds, n)
    groups = []
    for s, e in zip(starts, ends, strict=True):
        rows = order[s:e]
        extra = int(extra_codes[rows[0]]) if extra_codes is not None else 0
        groups.append((rows, extra))
    return groups
