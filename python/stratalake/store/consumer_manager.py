"""Consumers: ``consumer/consumer-<id>`` files recording how far a named reader has read.

A consumer file holds Paimon's JSON ``{"nextSnapshot" : n}``: the first snapshot whose changes
the reader has not wholly consumed. A streaming read with ``consumer-id`` starts there, and
snapshot expiration keeps every snapshot from the smallest ``nextSnapshot`` on
(:mod:`stratalake.maintenance.expire`). The layout, JSON and the rules (a consumer expires when
its file was last modified longer than ``consumer.expiration-time`` ago; ``clear_consumers``
patterns must match the whole id) follow Paimon's ``ConsumerManager`` and ``Consumer``.

Writes replace the file whole (the table's FileIO writes a temp file and renames it, or makes
one PUT on object stores), so a reader never sees half a file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from stratalake.exceptions import CorruptFileError, InvalidOptionError
from stratalake.io import FileIO

CONSUMER_PREFIX = "consumer-"


@dataclass(frozen=True)
class Consumer:
    """A consumer's progress: the next snapshot it will read."""

    next_snapshot: int

    def to_json(self) -> str:
        # Jackson's default pretty printer, as Paimon's JsonSerdeUtil.toJson writes it.
        return f'{{\n  "nextSnapshot" : {self.next_snapshot}\n}}'

    @staticmethod
    def from_json(text: str) -> Consumer:
        """Parse a consumer file; unknown fields are ignored, as Paimon's reader does."""
        data = json.loads(text)
        value = data.get("nextSnapshot") if isinstance(data, dict) else None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"'nextSnapshot' must be an integer, got {value!r}")
        return Consumer(value)


def check_consumer_id(consumer_id: object, table: str = "table") -> str:
    """``consumer_id`` if ``consumer-<id>`` names one file in the consumer directory.

    Paimon accepts any id; only what could leave the directory (or name nothing) is refused.
    """
    if not isinstance(consumer_id, str) or not consumer_id.strip() or any(c in consumer_id for c in "/\\\x00"):
        raise InvalidOptionError(
            f"table {table}: {consumer_id!r} is not a valid consumer id; a consumer id must be "
            "non-blank and must not contain '/', '\\' or NUL (it names one file in the table's "
            "consumer directory)"
        )
    return consumer_id


class ConsumerManager:
    """Reads and writes the consumer files of one table."""

    def __init__(self, file_io: FileIO, table_path: str, table_name: str = "table") -> None:
        self.file_io = file_io
        self.table_name = table_name
        self.consumer_dir = f"{table_path.rstrip('/')}/consumer"

    def consumer_path(self, consumer_id: str) -> str:
        return f"{self.consumer_dir}/{CONSUMER_PREFIX}{check_consumer_id(consumer_id, self.table_name)}"

    def consumer(self, consumer_id: str) -> Consumer | None:
        """The consumer's progress, or None if it has no file."""
        return self._read(self.consumer_path(consumer_id))

    def _read(self, path: str) -> Consumer | None:
        try:
            text = self.file_io.read_text(path)
        except FileNotFoundError:
            return None
        try:
            return Consumer.from_json(text)
        except (ValueError, RecursionError) as e:
            raise CorruptFileError(
                f"table {self.table_name}: consumer file {path} is not a consumer ({e}); reset it "
                "with reset_consumer or delete it with reset_consumer without a snapshot id"
            ) from None

    def reset_consumer(self, consumer_id: str, next_snapshot: int) -> None:
        """Write (or replace) the consumer's progress."""
        self.file_io.write_bytes(self.consumer_path(consumer_id), Consumer(next_snapshot).to_json().encode())

    def delete_consumer(self, consumer_id: str) -> None:
        self.file_io.delete_quietly(self.consumer_path(consumer_id))

    def ids(self) -> list[str]:
        """Every consumer id, sorted."""
        return [
            s.name[len(CONSUMER_PREFIX) :]
            for s in self.file_io.list_status(self.consumer_dir)
            if s.name.startswith(CONSUMER_PREFIX) and not s.is_dir
        ]

    def consumers(self) -> dict[str, int]:
        """Consumer id to ``nextSnapshot``, by id (a file deleted while listing is left out)."""
        out: dict[str, int] = {}
        for consumer_id in self.ids():
            found = self._read(f"{self.consumer_dir}/{CONSUMER_PREFIX}{consumer_id}")
            if found is not None:
                out[consumer_id] = found.next_snapshot
        return out

    def min_next_snapshot(self) -> int | None:
        """The smallest ``nextSnapshot`` of all consumers; None without consumers."""
        return min(self.consumers().values(), default=None)

    def expire(self, older_than_ms: int) -> list[str]:
        """Delete the consumers whose file was last modified before ``older_than_ms`` (epoch
        millis); returns their ids."""
        gone = []
        for s in self.file_io.list_status(self.consumer_dir):
            if s.name.startswith(CONSUMER_PREFIX) and not s.is_dir and s.mtime_ms < older_than_ms:
                self.file_io.delete_quietly(s.path)
                gone.append(s.name[len(CONSUMER_PREFIX) :])
        return gone

    def clear_consumers(self, including: str | None = None, excluding: str | None = None) -> list[str]:
        """Delete the consumers whose whole id matches ``including`` (blank: every one) and not
        ``excluding``; returns their ids. Patterns are regular expressions."""
        inc = _pattern(self.table_name, "including", including) or re.compile(".*", re.DOTALL)
        exc = _pattern(self.table_name, "excluding", excluding)
        gone = []
        for consumer_id in self.ids():
            if inc.fullmatch(consumer_id) and not (exc is not None and exc.fullmatch(consumer_id)):
                self.delete_consumer(consumer_id)
                gone.append(consumer_id)
        return gone


def _pattern(table: str, what: str, text: str | None) -> re.Pattern[str] | None:
    if text is None or not text.strip():
        return None
    try:
        return re.compile(text)
    except re.error as e:
        raise InvalidOptionError(
            f"table {table}: the {what} consumers pattern {text!r} is not a regular expression: {e}"
        ) from None
