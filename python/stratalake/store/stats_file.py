"""Statistics files of a table: ``<table>/statistics/stat-<uuid>-<n>`` (Paimon's ``StatsFile``)."""

from __future__ import annotations

import itertools
import uuid
from typing import TYPE_CHECKING

from stratalake.exceptions import CorruptFileError
from stratalake.spec.names import check_file_name
from stratalake.spec.snapshot import Snapshot
from stratalake.spec.statistics import STATISTICS_DIR, STATISTICS_PREFIX, Statistics

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

_UUID = str(uuid.uuid4())  # one per process, with a counter, as Paimon's path factory names them
_COUNTER = itertools.count()


def stats_path(table: TableStore, name: str) -> str:
    return f"{table.location}/{STATISTICS_DIR}/{check_file_name(name, 'statistics file')}"


def write_stats(table: TableStore, stats: Statistics) -> str:
    """Write ``stats`` to a new statistics file of ``table``; returns its name."""
    name = f"{STATISTICS_PREFIX}{_UUID}-{next(_COUNTER)}"
    table.file_io.write_bytes(stats_path(table, name), stats.to_json().encode("utf-8"))
    return name


def read_stats(table: TableStore, name: str) -> Statistics:
    """The statistics file ``name`` of ``table``."""
    path = stats_path(table, name)
    try:
        text = table.file_io.read_text(path)
    except FileNotFoundError as e:
        raise CorruptFileError(
            f"table {table.identifier}: statistics file {path} named by a snapshot is missing"
        ) from e
    return Statistics.from_json(text, origin=f"table {table.identifier}: {path}")


def snapshot_stats(table: TableStore, snapshot: Snapshot | None) -> Statistics | None:
    """The statistics ``snapshot`` names (None: it names none)."""
    if snapshot is None or snapshot.statistics is None:
        return None
    return read_stats(table, snapshot.statistics)
