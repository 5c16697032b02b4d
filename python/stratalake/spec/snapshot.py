"""Snapshot files (docs/format.md section 3): a frozen object and its JSON codec. No I/O."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from stratalake.exceptions import CorruptFileError
from stratalake.spec.names import check_file_name

BATCH_COMMIT_IDENTIFIER = 2**63 - 1  # Long.MAX_VALUE: batch commits
NO_WATERMARK = -(2**63)


class CommitKind(StrEnum):
    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"


# (json key, attribute) in the order Java Paimon writes them.
_FIELDS: tuple[tuple[str, str], ...] = (
    ("version", "version"),
    ("id", "id"),
    ("schemaId", "schema_id"),
    ("baseManifestList", "base_manifest_list"),
    ("deltaManifestList", "delta_manifest_list"),
    ("changelogManifestList", "changelog_manifest_list"),
    ("indexManifest", "index_manifest"),
    ("commitUser", "commit_user"),
    ("commitIdentifier", "commit_identifier"),
    ("commitKind", "commit_kind"),
    ("timeMillis", "time_millis"),
    ("logOffsets", "log_offsets"),
    ("totalRecordCount", "total_record_count"),
    ("deltaRecordCount", "delta_record_count"),
    ("changelogRecordCount", "changelog_record_count"),
    ("watermark", "watermark"),
    ("statistics", "statistics"),
    ("properties", "properties"),
    ("nextRowId", "next_row_id"),
    ("baseManifestListSize", "base_manifest_list_size"),
    ("deltaManifestListSize", "delta_manifest_list_size"),
    ("changelogManifestListSize", "changelog_manifest_list_size"),
    ("writerVersion", "writer_version"),
    ("operation", "operation"),
    ("uuid", "uuid"),
)
SNAPSHOT_KEYS = frozenset(key for key, _ in _FIELDS)  # every key of a snapshot file stratalake keeps


_STRING_KEYS = frozenset(
    {
        "baseManifestList",
        "deltaManifestList",
        "changelogManifestList",
        "indexManifest",
        "commitUser",
        "commitKind",
        "statistics",
        "writerVersion",
        "operation",
        "uuid",
    }
)
_MAP_KEYS = frozenset({"logOffsets", "properties"})


def _checked(key: str, value: Any) -> Any:
    """``value`` if it has the JSON type ``key`` needs (a string, a map, else an integer)."""
    if key in _STRING_KEYS:
        ok = isinstance(value, str)
    elif key in _MAP_KEYS:
        ok = isinstance(value, dict)
    else:
        ok = isinstance(value, int) and not isinstance(value, bool)
    if not ok:
        raise TypeError(f"field {key!r} has the wrong type: {value!r:.80}")
    return value


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One committed version of a table."""

    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: CommitKind
    time_millis: int
    total_record_count: int | None = None
    delta_record_count: int | None = None
    changelog_record_count: int | None = None
    changelog_manifest_list: str | None = None
    index_manifest: str | None = None
    watermark: int | None = None
    log_offsets: dict[str, int] | None = None
    statistics: str | None = None
    properties: dict[str, str] | None = None
    next_row_id: int | None = None
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list_size: int | None = None
    version: int = 3
    writer_version: str | None = None  # Java's writerVersion; we don't write it, but keep it
    operation: str | None = None  # Java's Snapshot.Operation name (WRITE, OVERWRITE...), if any
    uuid: str | None = None  # pypaimon's snapshot uuid (a REST commit's base snapshot is named by it)

    def to_json(self) -> str:
        out: dict[str, Any] = {}
        for key, attr in _FIELDS:
            value = getattr(self, attr)
            if value is None:
                continue
            out[key] = value.value if isinstance(value, CommitKind) else value
        return json.dumps(out, indent=2)

    @staticmethod
    def from_json(text: str | bytes, origin: str = "snapshot") -> Snapshot:
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict):
                raise TypeError(f"expected a JSON object, got {type(raw).__name__}")
            kwargs: dict[str, Any] = {}
            for key, attr in _FIELDS:
                if key in raw and raw[key] is not None:
                    kwargs[attr] = _checked(key, raw[key])
            kwargs["commit_kind"] = CommitKind(kwargs["commit_kind"])
            snap = Snapshot(**kwargs)
        except (ValueError, ArithmeticError, KeyError, TypeError, RecursionError) as e:
            # RecursionError: absurdly deep JSON nesting.
            raise CorruptFileError(f"{origin} is not a valid snapshot file: {type(e).__name__}: {e}") from e
        try:
            for what, name in snap.file_names():
                check_file_name(name, what)
        except CorruptFileError as e:
            raise CorruptFileError(f"{origin}: {e}") from None
        return snap

    def file_names(self) -> list[tuple[str, str]]:
        """(what, name) of every file under ``manifest/`` or ``statistics/`` this snapshot names."""
        out = [
            ("base manifest list", self.base_manifest_list),
            ("delta manifest list", self.delta_manifest_list),
        ]
        if self.changelog_manifest_list is not None:
            out.append(("changelog manifest list", self.changelog_manifest_list))
        if self.index_manifest is not None:
            out.append(("index manifest", self.index_manifest))
        if self.statistics is not None:
            out.append(("statistics file", self.statistics))
        return out
