"""The streaming k-way merge equals the in-memory merge of whole runs, in bounded chunks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratalake.io import LocalFileIO
from stratalake.lsm.compaction.rewriter import BucketFiles, merge_runs
from stratalake.lsm.data_file import DataFileWriter, FileNamer, kv_schema
from stratalake.lsm.deletion_vector import DeletionVector, DeletionVectorsMaintainer
from stratalake.lsm.lookup import LookupMergeFunction, with_level
from stratalake.lsm.merge_reader import (
    dv_keep_mask,
    int_key_parts,
    key_complete_chunks,
    merge_sorted_runs,
    replaced_in_newer_parts,
    slices,
    sorted_runs,
)
from stratalake.merge import SEQUENCE_NUMBER, VALUE_KIND, MergeContext, MergeFunction, create_merge_function
from stratalake.options import CoreOptions
from tests.merge.helpers import make_ctx

VALUES = [("v", "BIGINT"), ("s", "STRING"), ("g", "BIGINT")]
KEYS: dict[str, list[tuple[str, str]]] = {
    "int": [("k", "BIGINT NOT NULL")],
    "string": [("k", "STRING NOT NULL")],
    "two": [("k", "INT NOT NULL"), ("k2", "STRING NOT NULL")],
}
ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update", "ignore-delete": "true"},
    "partial-update-groups": {"merge-engine": "partial-update", "fields.g.sequence-group": "v,s"},
    "aggregation": {
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": "sum",
        "fields.s.aggregate-function": "last_non_null_value",
        "fields.s.ignore-retract": "true",
        "fields.g.aggregate-function": "max",
        "fields.g.ignore-retract": "true",
    },
    "first-row": {"merge-engine": "first-row", "ignore-delete": "true"},
}
# Non-ASCII letters: strings must order bytewise (UTF-8), as the files are sorted.
ALPHABET = "abzé€"


def _ctx(key: str, engine: str) -> MergeContext:
    return make_ctx(KEYS[key] + VALUES, [name for name, _ in KEYS[key]], ENGINES[engine])


def _key_columns(ctx: MergeContext, raw: list[int]) -> dict[str, pa.Array]:
    """Key columns from distinct ints: as is, as strings over :data:`ALPHABET` (whose bytewise
    order differs from the ints'), or as two columns (x // 3, str(x % 3)) that both matter."""
    names = list(ctx.key_names)
    if names == ["k", "k2"]:
        return {"k": pa.array([x // 3 for x in raw], pa.int32()), "k2": pa.array([str(x % 3) for x in raw])}
    if str(ctx.schema.field("k").type).startswith("STRING"):
        return {"k": pa.array(["".join(ALPHABET[(x // 5**i) % 5] for i in range(3)) for x in raw])}
    return {"k": pa.array(raw, pa.int64())}


@st.composite
def runs_of(draw: st.DrawFn, ctx: MergeContext) -> list[tuple[pa.Table, int]]:
    """Sorted runs (unique keys each, key order) with levels, oldest first: sequence numbers
    grow from older runs to newer ones; levels >= 1 hold one run each."""
    n_runs = draw(st.integers(1, 5))
    high = sorted(set(draw(st.lists(st.integers(1, 3), max_size=n_runs))), reverse=True)
    levels = high + [0] * (n_runs - len(high))
    schema = kv_schema(ctx.schema)
    seq = 0
    out = []
    for level in levels:
        raw = draw(st.lists(st.integers(0, 40), max_size=25, unique=True))
        rows = len(raw)
        data: dict[str, Any] = _key_columns(ctx, raw)
        ints = st.one_of(st.none(), st.integers(-5, 5))
        data["v"] = pa.array(draw(st.lists(ints, min_size=rows, max_size=rows)), pa.int64())
        texts = st.one_of(st.none(), st.text(ALPHABET, max_size=3))
        data["s"] = pa.array(draw(st.lists(texts, min_size=rows, max_size=rows)), pa.string())
        small = st.one_of(st.none(), st.integers(0, 3))
        data["g"] = pa.array(draw(st.lists(small, min_size=rows, max_size=rows)), pa.int64())
        data[SEQUENCE_NUMBER] = pa.array(draw(st.permutations(list(range(seq, seq + rows)))), pa.int64())
        seq += rows
        kinds = draw(st.lists(st.sampled_from([0, 0, 0, 2, 3]), min_size=rows, max_size=rows))
        data[VALUE_KIND] = pa.array(kinds, pa.int8())
        table = pa.table(data).select(schema.names).cast(schema)
        order = pc.sort_indices(table, sort_keys=[(k, "ascending") for k in ctx.key_names])
        out.append((table.take(order), level))
    return out


def _mf(ctx: MergeContext, lookup: bool) -> MergeFunction:
    inner = create_merge_function(ctx)
    return LookupMergeFunction(inner) if lookup else inner


def _reference(runs: list[pa.Table], ctx: MergeContext, mf: MergeFunction) -> pa.Table:
    kv = pa.concat_tables(runs)
    return merge_runs(kv, ctx, mf)


def _stream(runs: list[pa.Table], ctx: MergeContext, mf: MergeFunction, batch: int) -> list[pa.Table]:
    key_names = list(ctx.key_names)
    return list(
        merge_sorted_runs([slices(r, batch) for r in runs], key_names, lambda kv: merge_runs(kv, ctx, mf))
    )


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("key", sorted(KEYS))
@pytest.mark.parametrize("lookup", [False, True])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_streaming_merge_equals_in_memory(engine: str, key: str, lookup: bool, data: st.DataObject) -> None:
    ctx = _ctx(key, engine)
    runs = data.draw(runs_of(ctx))
    batch = data.draw(st.sampled_from([1, 2, 3, 7, 1000]))
    tables = [with_level(t, level) if lookup else t for t, level in runs]
    mf = _mf(ctx, lookup)
    try:
        expected = _reference(tables, ctx, mf)
    except Exception as e:  # an engine refusing its input must refuse it streamed too
        with pytest.raises(type(e)):
            _stream(tables, ctx, mf, batch)
        return
    chunks = _stream(tables, ctx, mf, batch)
    got = pa.concat_tables(chunks).cast(expected.schema) if chunks else expected.slice(0, 0)
    assert got.to_pylist() == expected.to_pylist()
    # Bounded: a chunk never holds more than one batch per run.
    for chunk in key_complete_chunks([slices(t, batch) for t in tables], list(ctx.key_names)):
        assert chunk.num_rows <= batch * len(tables)


def test_chunks_are_key_complete_and_ordered() -> None:
    rng = np.random.default_rng(7)
    runs = []
    seq = 0
    for n in (5000, 3000, 4000):
        keys = np.sort(rng.choice(20000, n, replace=False))
        runs.append(
            pa.table(
                {
                    "k": keys,
                    "v": keys,
                    "s": pa.nulls(n, pa.string()),
                    "g": pa.nulls(n, pa.int64()),
                    SEQUENCE_NUMBER: np.arange(seq, seq + n),
                    VALUE_KIND: np.zeros(n, np.int8),
                }
            )
        )
        seq += n
    seen: set[int] = set()
    last = -1
    max_rows = 0
    for chunk in key_complete_chunks([slices(r, 256) for r in runs], ["k"]):
        keys = set(chunk.column("k").to_pylist())
        assert not keys & seen  # no key spans two chunks
        assert min(keys) > last
        last = max(keys)
        seen |= keys
        max_rows = max(max_rows, chunk.num_rows)
    assert max_rows <= 3 * 256
    assert len(seen) == len(set(np.concatenate([r.column("k").to_numpy() for r in runs]).tolist()))


@settings(max_examples=150, deadline=None)
@given(
    runs=st.lists(st.lists(st.integers(-50, 50), max_size=40, unique=True), min_size=1, max_size=4),
    batch=st.integers(1, 9),
)
def test_int_key_parts_against_a_model(runs: list[list[int]], batch: int) -> None:
    """Every record comes back once, at its file position, in key-complete chunks, and the
    replaced ones are exactly the records of keys a newer run holds (batches down to 1 row)."""

    def batches(r: int, keys: list[int]) -> list[tuple[np.ndarray, int, int]]:
        arr = np.array(sorted(keys), dtype=np.int64)
        return [(arr[i : i + batch], r, i) for i in range(0, len(arr), batch)] or [(arr, r, 0)]

    seen: list[tuple[int, int, int]] = []
    replaced: set[tuple[int, int]] = set()
    last = None
    for parts in int_key_parts([batches(r, keys) for r, keys in enumerate(runs)]):
        assert [p[1] for p in parts] == sorted(p[1] for p in parts)  # oldest run first
        keys = set(np.concatenate([p[0] for p in parts]).tolist())
        assert last is None or min(keys) > last  # in key order, no key in two chunks
        last = max(keys)
        assert all(len(p[0]) <= batch for p in parts)
        for keys_, run, start in parts:
            seen += [(run, start + i, int(k)) for i, k in enumerate(keys_)]
        for (_, run, start), hits in zip(parts, replaced_in_newer_parts([p[0] for p in parts]), strict=True):
            replaced |= {(run, start + int(h)) for h in hits}
    expected = [(r, i, k) for r, keys in enumerate(runs) for i, k in enumerate(sorted(keys))]
    assert sorted(seen) == sorted(expected)
    newest = {k: r for r, keys in enumerate(runs) for k in keys}
    assert replaced == {(r, i) for r, i, k in expected if newest[k] != r}


def test_dv_keep_mask() -> None:
    positions = np.array([0, 3, 4, 9], dtype=np.uint32)
    assert dv_keep_mask(positions, 5, 4) is None
    mask = dv_keep_mask(positions, 2, 4)
    assert mask is not None and mask.tolist() == [True, False, False, True]


# -- through files: batch-wise reads, sorted runs of file metadata, deletion vectors ---------------
def _write_runs(
    tmp: Path, ctx: MergeContext, runs: list[tuple[pa.Table, int]], options: dict[str, str]
) -> tuple[BucketFiles, list[Any]]:
    opts = CoreOptions({**ctx.schema.options, **options}, "db.t")
    io = LocalFileIO()
    directory = str(tmp / "bucket-0")
    writer = DataFileWriter(io, ctx.schema, opts, directory, FileNamer("data"))
    metas = []
    for table, level in runs:
        # Several files per run of a level >= 1: the run is streamed file after file.
        for piece in slices(table, 4) if level > 0 else [table]:
            metas += writer.write(piece, level=level)
    files = BucketFiles(io, directory, ctx.schema, opts, lambda _: ctx.schema)
    return files, metas


@pytest.mark.parametrize("engine", ["deduplicate", "aggregation", "partial-update-groups"])
@pytest.mark.parametrize("key", sorted(KEYS))
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_bucket_streaming_merge_with_deletion_vectors(
    tmp_path_factory: pytest.TempPathFactory, engine: str, key: str, data: st.DataObject
) -> None:
    ctx = _ctx(key, engine)
    runs = [(t, lvl) for t, lvl in data.draw(runs_of(ctx)) if t.num_rows]
    if not runs:
        return
    files, metas = _write_runs(tmp_path_factory.mktemp("b"), ctx, runs, {})
    dvs = DeletionVectorsMaintainer("unused", b"", 0)
    for m in metas:
        if m.row_count > 1 and data.draw(st.booleans()):
            pos = data.draw(st.lists(st.integers(0, m.row_count - 1), max_size=m.row_count))
            dvs.vectors[m.file_name] = DeletionVector.of(pos)
    files.deletion_vectors = dvs
    mf = create_merge_function(ctx)
    expected = merge_runs(files.read_all(metas), ctx, mf)
    files.batch_rows = data.draw(st.sampled_from([1, 2, 5, 1000]))
    got_chunks = list(files.merged(metas, ctx, mf))
    got = pa.concat_tables(got_chunks) if got_chunks else expected.slice(0, 0)
    assert got.to_pylist() == expected.to_pylist()


def test_sorted_runs_orders_oldest_first_and_splits_overlaps() -> None:
    from stratalake.spec.binary_row import encode_row
    from stratalake.spec.manifest import DataFileMeta, SimpleStats
    from stratalake.types import DataType

    t = [DataType.parse("BIGINT NOT NULL")]

    def meta(name: str, level: int, lo: int, hi: int, seq: int) -> DataFileMeta:
        return DataFileMeta(
            name, 1, 1, encode_row([lo], t), encode_row([hi], t), SimpleStats.empty(), SimpleStats.empty(),
            0, seq, 0, level,
        )  # fmt: skip

    from stratalake.spec.binary_row import decode_row

    def key_of(b: bytes) -> tuple[Any, ...]:
        return decode_row(b, t)

    files = [
        meta("l0-new", 0, 0, 9, 50),
        meta("l0-old", 0, 0, 9, 40),
        meta("l1-b", 1, 10, 19, 30),
        meta("l1-a", 1, 0, 9, 31),
        meta("l2-x", 2, 0, 5, 10),
        meta("l2-overlap", 2, 3, 8, 11),
    ]
    runs = [[f.file_name for f in r] for r in sorted_runs(files, key_of)]
    assert runs == [["l2-x"], ["l2-overlap"], ["l1-a", "l1-b"], ["l0-old"], ["l0-new"]]
    # Consecutive disjoint level-0 files (e.g. one flush rolled into several files) are one run.
    flush = [meta("f-b", 0, 20, 29, 61), meta("f-a", 0, 10, 19, 62), meta("late", 0, 15, 25, 70)]
    runs = [[f.file_name for f in r] for r in sorted_runs(files + flush, key_of)]
    assert runs[-3:] == [["l0-old"], ["l0-new", "f-a", "f-b"], ["late"]]
