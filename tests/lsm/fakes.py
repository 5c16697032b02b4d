"""Fake data-file metadata for strategy and levels tests (no files behind them)."""

from __future__ import annotations

import itertools

from stratalake.lsm.levels import Levels, LevelSortedRun, SortedRun
from stratalake.spec.binary_row import decode_row, encode_row
from stratalake.spec.manifest import DataFileMeta, SimpleStats
from stratalake.types import DataType

BIGINT = DataType.parse("BIGINT NOT NULL")
_names = itertools.count()


def key_of(data: bytes) -> tuple[object, ...]:
    return decode_row(data, [BIGINT])


def meta(
    level: int = 0, size: int = 100, lo: int = 0, hi: int = 10, seq: int = 0, deletes: int | None = 0
) -> DataFileMeta:
    return DataFileMeta(
        file_name=f"data-fake-{next(_names)}.parquet",
        file_size=size,
        row_count=1,
        min_key=encode_row([lo], [BIGINT]),
        max_key=encode_row([hi], [BIGINT]),
        key_stats=SimpleStats.empty(),
        value_stats=SimpleStats.empty(),
        min_sequence_number=seq,
        max_sequence_number=seq,
        schema_id=0,
        level=level,
        delete_row_count=deletes,
    )


def runs(*spec: tuple[int, int]) -> list[LevelSortedRun]:
    """Runs from (level, size) pairs, newest first."""
    return [LevelSortedRun(level, SortedRun.from_single(meta(level, size))) for level, size in spec]


def levels_of(files: list[DataFileMeta], num_levels: int = 6) -> Levels:
    return Levels(key_of, files, num_levels)
