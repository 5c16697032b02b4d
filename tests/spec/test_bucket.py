"""Fixed-bucket assignment (docs/format.md section 8)."""

from __future__ import annotations

import datetime as dt
import decimal
import random
import time
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pytest
from pypaimon.schema.data_types import DataField as PaimonField
from pypaimon.schema.data_types import DataTypeParser
from pypaimon.write.row_key_extractor import RowKeyExtractor, _bucket_from_hash

from stratalake.exceptions import InvalidOptionError
from stratalake.spec.binary_row import encode_row_body
from stratalake.spec.bucket import bucket_ids, bucket_of_values, hash_bytes, hash_rows
from stratalake.types import (
    BigIntType,
    DataType,
    DateType,
    DecimalType,
    IntType,
    TimestampType,
    VarCharType,
    to_arrow,
)

EXACT = decimal.Context(prec=80)  # the default 28 digits would round DECIMAL(38, s)


def test_format_md_vectors() -> None:
    assert bucket_ids([pa.array(range(1, 9))], [BigIntType()], 4).tolist() == [2, 0, 1, 2, 0, 0, 3, 0]
    assert bucket_ids([pa.array([0, 1, -1, 42, 2**40])], [BigIntType()], 16).tolist() == [11, 14, 0, 5, 6]
    keys = ["a", "abcdefg", "abcdefgh", "a-much-longer-string-key"]
    assert bucket_ids([pa.array(keys)], [VarCharType()], 7).tolist() == [5, 0, 2, 6]
    assert [bucket_of_values([k], [VarCharType()], 7) for k in keys] == [5, 0, 2, 6]


def test_result_dtype_and_chunked_input() -> None:
    col = pa.chunked_array([pa.array([1, 2]), pa.array([3])])
    out = bucket_ids([col], [BigIntType()], 4)
    assert (
        out.dtype == np.int32
        and out.tolist() == bucket_ids([pa.array([1, 2, 3])], [BigIntType()], 4).tolist()
    )
    assert hash_rows([col], [BigIntType()]).dtype == np.int32


def test_hash_rows_is_binary_row_hash_code() -> None:
    values = ["short", "a string longer than seven bytes", None]
    hashes = hash_rows([pa.array(values)], [VarCharType()]).tolist()
    assert hashes == [hash_bytes(encode_row_body([v], [VarCharType()])) for v in values]


def test_negative_hashes_use_java_remainder() -> None:
    hashes = hash_rows([pa.array(range(200))], [BigIntType()])
    buckets = bucket_ids([pa.array(range(200))], [BigIntType()], 7)
    assert (hashes < 0).any()
    assert buckets.tolist() == [abs(int(h) - int(h / 7) * 7) for h in hashes.tolist()]


def test_invalid_bucket_count() -> None:
    with pytest.raises(InvalidOptionError, match="bucket"):
        bucket_ids([pa.array([1])], [BigIntType()], 0)


# --------------------------------------------------------------------------------------------
# cross-check with pypaimon's own bucket computation


def _pypaimon_buckets(rows: Sequence[Sequence[object]], types: Sequence[DataType], n: int) -> list[int]:
    fields = [
        PaimonField(i, f"k{i}", DataTypeParser.parse_data_type(t.to_json())) for i, t in enumerate(types)
    ]
    return [_bucket_from_hash(RowKeyExtractor._binary_row_hash_code(tuple(r), fields), n) for r in rows]


def _random_string(rng: random.Random) -> str:
    return "".join(
        rng.choice("abcxyzé漢0123456789") for _ in range(rng.choice([0, 1, 3, 7, 8, 9, 15, 16, 17, 40]))
    )


Gen = Callable[[random.Random], object]
GENERATORS: dict[str, tuple[DataType, Gen]] = {
    "int": (IntType(nullable=False), lambda r: r.randint(-(2**31), 2**31 - 1)),
    "bigint": (BigIntType(nullable=False), lambda r: r.randint(-(2**63), 2**63 - 1)),
    "string": (VarCharType(nullable=False), _random_string),
    "decimal": (
        DecimalType(12, 3),
        lambda r: decimal.Decimal(r.randint(-(10**12) + 1, 10**12 - 1)).scaleb(-3, EXACT),
    ),
    "wide_decimal": (
        DecimalType(30, 5),
        lambda r: decimal.Decimal(r.randint(-(10**30) + 1, 10**30 - 1)).scaleb(-5, EXACT),
    ),
    "date": (DateType(), lambda r: dt.date(1970, 1, 1) + dt.timedelta(days=r.randint(-50_000, 50_000))),
    "timestamp3": (
        TimestampType(3),
        lambda r: dt.datetime(2000, 1, 1) + dt.timedelta(milliseconds=r.randint(-(10**12), 10**12)),
    ),
}


@pytest.mark.parametrize(
    "kinds",
    [["int"], ["bigint"], ["string"], ["decimal"], ["wide_decimal"], ["date"], ["timestamp3"],
     ["string", "bigint"], ["date", "string", "int"], ["decimal", "string", "string"]],
)  # fmt: skip
@pytest.mark.parametrize("num_buckets", [1, 3, 16])
def test_matches_pypaimon_on_random_keys(kinds: list[str], num_buckets: int) -> None:
    rng = random.Random(f"{kinds}-{num_buckets}")  # deterministic across runs
    types = [GENERATORS[k][0] for k in kinds]
    rows = [[GENERATORS[k][1](rng) for k in kinds] for _ in range(300)]
    columns = [pa.array([r[i] for r in rows], type=to_arrow(t)) for i, t in enumerate(types)]
    assert bucket_ids(columns, types, num_buckets).tolist() == _pypaimon_buckets(rows, types, num_buckets)


# --------------------------------------------------------------------------------------------
# speed (generous bounds: shared CI machines; the report has the measured numbers)


def _best_of(f: Callable[[], object], times: int = 5) -> float:
    best = float("inf")
    for _ in range(times):
        start = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.timing
def test_one_million_keys_hash_fast() -> None:
    keys = pa.array(np.random.default_rng(1).integers(-(2**62), 2**62, 1_000_000))
    assert _best_of(lambda: bucket_ids([keys], [BigIntType()], 16)) < 0.2
    strings = pa.array([f"k{i}" for i in range(1_000_000)])
    assert _best_of(lambda: bucket_ids([strings], [VarCharType()], 16)) < 0.6
