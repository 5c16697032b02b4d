"""Issue 33: a read of known partitions decodes only the manifest blocks that may hold them.

A manifest is a sequence of compressed Avro blocks. A read that wants a small known set of
partitions (a commit's conflict check, a writer's restore, a scan whose filter pins every
partition column) searches each decompressed block for the encoded partition (and bucket) and
decodes only the blocks that contain one; the entries it plans must be exactly those that
decoding everything and filtering each entry gives.
"""

from __future__ import annotations

import datetime
import io
import random
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stratalake
from stratalake.catalog.schema_change import SchemaChange
from stratalake.expressions import And, Compare, In, Predicate
from stratalake.spec import avro
from stratalake.spec.manifest import FileKind, ManifestEntry
from stratalake.store import manifests
from stratalake.store.manifest_filter import ManifestFilter
from stratalake.store.manifests import filtered_entries
from stratalake.store.partition import PartitionCodec
from tests.table.metadata_helpers import _file, _split_files, _synthesize, _table, cold_manifest_cache
from tests.table.test_scan_pruning import _predicates

__all__ = ["cold_manifest_cache"]


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Avro blocks of a few entries each (Paimon's writers close one per ~64 KB of records)."""
    monkeypatch.setattr(avro, "SYNC_INTERVAL", 400)


class _Counting:
    """Counts the manifest entries decoded (the work skipping a block saves)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.decoded = 0
        real = avro._entry_from

        def counted(r: Any, *shared: Any) -> ManifestEntry:
            self.decoded += 1
            return real(r, *shared)

        monkeypatch.setattr(avro, "_entry_from", counted)


def _blocks(data: bytes) -> int:
    return sum(1 for _ in fastavro.block_reader(io.BytesIO(data)))


def test_cold_scan_of_one_partition_decodes_only_its_blocks(
    tmp_path: Any, small_blocks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(tmp_path)
    parts = [f"2024-01-{d:02d}" for d in range(1, 11) for _ in range(40)]  # clustered, one manifest
    _synthesize(table, parts, files_per_manifest=len(parts))
    snap = table.latest_snapshot()
    assert snap is not None
    (meta,) = table.manifest_io.read_list(snap.delta_manifest_list)
    assert _blocks(table.file_io.read_bytes(table.manifest_io.path(meta.file_name))) >= 20
    manifests._CACHE = manifests._LRU(2048)
    counting = _Counting(monkeypatch)
    splits = table.new_scan(filter=stratalake.field("dt") == "2024-01-05").plan()
    assert {s.partition_values for s in splits} == {("2024-01-05",)}
    assert sum(len(s.files) for s in splits) == 40
    assert counting.decoded < 100  # its 40 entries and the blocks they share, not 400
    # The partial read is cached under what it wanted; the whole manifest is decoded once a read
    # wants everything, and is then reused by reads of any partition.
    again = table.new_scan(filter=stratalake.field("dt") == "2024-01-05").plan()
    assert _split_files(again) == _split_files(splits)
    before = counting.decoded
    everything = table.new_scan().plan()
    assert counting.decoded - before == 400
    assert _split_files(splits) == {k for k in _split_files(everything) if k[0] == splits[0].partition}
    before = counting.decoded
    table.new_scan(filter=stratalake.field("dt") == "2024-01-07").plan()
    assert counting.decoded == before


def test_a_commit_checks_conflicts_against_the_blocks_of_its_partition(
    tmp_path: Any, small_blocks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real write and commit into one partition of a table whose manifest holds many (write-only:
    the synthetic data files do not exist, and the writer need not read them)."""
    table = _table(tmp_path)
    stratalake.Catalog(str(tmp_path)).alter_table("db.t", [SchemaChange.set_option("write-only", "true")])
    parts = [f"2024-01-{d:02d}" for d in range(1, 11) for _ in range(40)]
    _synthesize(table, parts, files_per_manifest=len(parts))
    counting = _Counting(monkeypatch)
    t = stratalake.Catalog(str(tmp_path)).get_table("db.t")
    t.write(pa.table({"id": pa.array([1], pa.int64()), "dt": ["2024-01-03"], "v": ["a"]}))  # one new file
    assert counting.decoded < 200
    manifests._CACHE = manifests._LRU(2048)
    got = stratalake.Catalog(str(tmp_path)).get_table("db.t").new_scan(filter=stratalake.field("dt") == "2024-01-03")
    assert sum(len(s.files) for s in got.plan()) == 41


@settings(max_examples=100, deadline=None)
@given(
    parts=st.lists(st.one_of(st.none(), st.integers(0, 6)), min_size=1, max_size=80),
    clustered=st.booleans(),
    # Half pin the partition (the filters whose reads skip blocks), half anything.
    predicate=st.one_of(
        st.builds(Compare, st.just("dt"), st.just("="), st.integers(0, 6)),
        st.builds(In, st.just("dt"), st.lists(st.integers(0, 6), max_size=3).map(tuple)),
        _predicates(),
    ),
    buckets=st.one_of(st.none(), st.sets(st.integers(0, 3), max_size=3)),
    bucket_run=st.sampled_from([1, 6]),
)
def test_block_reads_plan_what_decoding_everything_plans(
    tmp_path_factory: Any,
    parts: list[Any],
    clustered: bool,
    predicate: Predicate,
    buckets: set[int] | None,
    bucket_run: int,
) -> None:
    """Model: decode every entry and keep those whose partition and bucket pass the filter."""
    old = avro.SYNC_INTERVAL
    avro.SYNC_INTERVAL = 400
    try:
        table = _table(tmp_path_factory.mktemp("t"), partition_type=pa.int64())
        if clustered:
            parts = sorted(parts, key=lambda v: (v is not None, v or 0))
        _synthesize(table, parts, files_per_manifest=25, bucket_run=bucket_run)
    finally:
        avro.SYNC_INTERVAL = old
    codec = table.partition_codec
    snap = table.latest_snapshot()
    assert snap is not None
    metas = table.manifest_io.read_list(snap.delta_manifest_list)
    everything = list(filtered_entries(table.manifest_io, metas, None))
    manifests._CACHE = manifests._LRU(2048)
    where = ManifestFilter(codec, predicate, buckets=buckets)
    got = {e.identifier() for e in filtered_entries(table.manifest_io, metas, where)}
    want = {
        e.identifier()
        for e in everything
        if predicate.eval_values(codec.to_dict(e.partition)) is not False and (buckets is None or e.bucket in buckets)
    }
    assert got == want


def _codec(tmp_path: Any, columns: list[tuple[str, pa.DataType]]) -> PartitionCodec:
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db", ignore_if_exists=True)
    schema = pa.schema([("id", pa.int64()), *columns])
    keys = [name for name, _ in columns]
    t = cat.create_table("db.t", schema=schema, primary_key=["id", *keys], partition_keys=keys, options={"bucket": "2"})
    return t.partition_codec


def test_only_predicates_that_pin_every_column_to_exact_values_give_wanted_pairs(tmp_path: Any) -> None:
    codec = _codec(tmp_path, [("dt", pa.string()), ("h", pa.int32())])
    eq = Compare("dt", "=", "2024-01-01")
    assert ManifestFilter(codec, eq).wanted_pairs is None  # h is free
    both = And((eq, In("h", (1, 2))))
    pairs = ManifestFilter(codec, both, buckets={0}).wanted_pairs
    assert pairs == {(codec.to_bytes(["2024-01-01", h]), 0) for h in (1, 2)}
    assert ManifestFilter(codec, And((eq, In("h", (1, None))))).wanted_pairs is None  # null: not exact
    assert ManifestFilter(codec, And((eq, Compare("h", "=", True)))).wanted_pairs is None  # True == 1
    assert ManifestFilter(codec, And((eq, Compare("h", ">", 1)))).wanted_pairs is None
    # Contradictory equalities want nothing: every block may be skipped.
    contradiction = And((eq, Compare("dt", "=", "2024-01-02"), Compare("h", "=", 1)))
    assert ManifestFilter(codec, contradiction).wanted_pairs == frozenset()
    # Narrowing conjuncts on other columns do not stop the pinning.
    extra = And((both, Compare("h", "<", 2)))
    assert ManifestFilter(codec, extra).wanted_pairs == {(codec.to_bytes(["2024-01-01", h]), None) for h in (1, 2)}
    # Out of the column's range: no pairs (read everything), never an error.
    assert ManifestFilter(codec, And((eq, Compare("h", "=", 2**40)))).wanted_pairs is None


@pytest.mark.parametrize(
    ("arrow_type", "value"),
    [(pa.float64(), 0.0), (pa.decimal128(10, 2), None), (pa.timestamp("us"), datetime.datetime(2024, 1, 1))],
)
def test_types_whose_equal_values_may_encode_differently_give_no_pairs(
    tmp_path: Any, arrow_type: pa.DataType, value: Any
) -> None:
    import decimal

    codec = _codec(tmp_path, [("p", arrow_type)])
    literal = decimal.Decimal("1.0") if value is None else value  # 1.0 == 1.00, -0.0 == 0.0
    assert ManifestFilter(codec, Compare("p", "=", literal)).wanted_pairs is None


def test_dates_and_explicit_partitions_give_pairs(tmp_path: Any) -> None:
    codec = _codec(tmp_path, [("d", pa.date32())])
    day = datetime.date(2024, 1, 1)
    assert ManifestFilter(codec, Compare("d", "=", day)).wanted_pairs == {(codec.to_bytes([day]), None)}
    assert ManifestFilter(codec, Compare("d", "=", datetime.datetime(2024, 1, 1))).wanted_pairs is None
    raw = codec.to_bytes([day])
    assert ManifestFilter(codec, partitions={raw}, buckets={1, 3}).wanted_pairs == {(raw, 1), (raw, 3)}


def _entries(codec: PartitionCodec, n: int) -> list[ManifestEntry]:
    return [ManifestEntry(FileKind.ADD, codec.to_bytes([f"p{j // 50}"]), j % 4, 4, _file(j, j)) for j in range(n)]


def test_a_writer_laying_fields_out_otherwise_is_read_by_partition_alone(tmp_path: Any) -> None:
    """The bucket is searched right after the partition only where the file's writer schema puts
    it there; a file written with another field order is still read right."""
    codec = _codec(tmp_path, [("dt", pa.string())])
    entries = _entries(codec, 400)
    schema = dict(avro.MANIFEST_ENTRY_SCHEMA)
    fields = list(schema["fields"])
    bucket = next(f for f in fields if f["name"] == "_BUCKET")
    fields.remove(bucket)
    fields.append(bucket)  # after _FILE
    schema["fields"] = fields
    standard = avro.encode_manifest_entries(entries)
    recs = list(fastavro.reader(io.BytesIO(standard)))
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), recs, codec="zstandard", sync_interval=400)
    wanted = {(codec.to_bytes(["p3"]), 2)}
    for data in (standard, buf.getvalue()):
        got, _ = avro.decode_manifest_blocks(data, "m", wanted)
        keep = {e.file.file_name for e in got if (e.partition, e.bucket) in wanted}
        assert keep == {e.file.file_name for e in entries if (e.partition, e.bucket) in wanted}
    # Partition not a plain bytes field (here a union): every block is decoded.
    fields = [dict(f) for f in avro.MANIFEST_ENTRY_SCHEMA["fields"]]
    for f in fields:
        if f["name"] == "_PARTITION":
            f["type"] = ["null", "bytes"]
    union = dict(avro.MANIFEST_ENTRY_SCHEMA, fields=fields)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(union), recs, codec="zstandard", sync_interval=400)
    got, every = avro.decode_manifest_blocks(buf.getvalue(), "m", wanted)
    assert every and len(got) == len(entries)


def test_full_manifest_compaction_orders_entries_by_partition_values(tmp_path: Any) -> None:
    """Commits that each touch every partition leave partitions interleaved in their manifests;
    a full manifest compaction writes them ordered by partition value (not by bytes: 256 sorts
    after 2 though its little-endian bytes sort first), so each rewritten manifest covers a
    narrow range."""
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("p", pa.int64()), ("v", pa.string())])
    t = cat.create_table(
        "db.t",
        schema=schema,
        primary_key=["id", "p"],
        partition_keys=["p"],
        options={"bucket": "2", "write-only": "true", "manifest.full-compaction-threshold-size": "1"},
    )
    values = [256, 2, 1, 513, 3]
    rng = random.Random(5)
    for round_ in range(3):
        ps = values[:]
        rng.shuffle(ps)
        t.write(pa.table({"id": pa.array([round_] * 5, pa.int64()), "p": pa.array(ps, pa.int64()), "v": ["x"] * 5}))
    snap = t.latest_snapshot()
    assert snap is not None
    metas = t.manifest_io.read_list(snap.base_manifest_list)
    assert metas
    order = [t.partition_codec.from_bytes(e.partition)[0] for m in metas for e in t.manifest_io.read_entries(m.file_name)]
    assert order == sorted(order)
    assert t.read().num_rows == 15


def test_partial_reads_are_cached_only_under_small_wanted_sets(tmp_path: Any, small_blocks: None) -> None:
    table = _table(tmp_path)
    parts = [f"2024-01-{d:02d}" for d in range(1, 11) for _ in range(40)]
    _synthesize(table, parts, files_per_manifest=len(parts))
    snap = table.latest_snapshot()
    assert snap is not None
    (meta,) = table.manifest_io.read_list(snap.delta_manifest_list)
    codec = table.partition_codec
    one = frozenset({(codec.to_bytes(["2024-01-02"]), None)})
    many = frozenset({(codec.to_bytes(["2024-01-02"]), b) for b in range(manifests.MAX_CACHED_WANTED + 1)})
    path = table.manifest_io.path(meta.file_name)
    for wanted, cached in ((one, True), (many, False)):
        got = table.manifest_io.read_entries_of(meta.file_name, wanted)
        assert {e.file.file_name for e in got if e.partition == codec.to_bytes(["2024-01-02"])}
        assert (manifests._CACHE.get((path, wanted)) is not None) is cached
    assert manifests._CACHE.get(path) is None  # neither read decoded every block


def test_pinned_combinations() -> None:
    from stratalake.expressions import IsNull, pinned_combinations

    k, d = Compare("k", "=", 1), In("d", ("x", "y", "x"))
    assert pinned_combinations([k, d], ["k", "d"], 10) == [(1, "x"), (1, "y")]
    assert pinned_combinations([k, d, IsNull("z")], ["d"], 10) == [("x",), ("y",)]  # others ignored
    assert pinned_combinations([d, Compare("d", "=", "y")], ["d"], 10) == [("y",)]  # both must hold
    assert pinned_combinations([k, Compare("k", "=", 2)], ["k"], 10) == []  # nothing can match
    assert pinned_combinations([k], ["k", "d"], 10) is None  # d is free
    assert pinned_combinations([k, d], ["k", "d"], 1) is None  # over the limit


def test_a_corrupt_manifest_read_by_blocks_is_refused_naming_it(tmp_path: Any) -> None:
    from stratalake.exceptions import CorruptFileError

    codec = _codec(tmp_path, [("dt", pa.string())])
    data = avro.encode_manifest_entries(_entries(codec, 50))
    wanted = {(codec.to_bytes(["p0"]), None)}
    for bad in (data[: len(data) // 2], data[:40] + bytes(len(data) - 40)):
        with pytest.raises(CorruptFileError, match="manifest-x"):
            avro.decode_manifest_blocks(bad, "manifest-x", wanted)


def test_decoded_entries_share_their_repeated_values() -> None:
    """A decoded manifest holds one object per distinct partition, null counts and key bound:
    a scan keeps every live file's metadata in memory while it plans (issue 33)."""
    entries = [
        ManifestEntry(FileKind.ADD, f"p{i % 3}".encode(), i % 2, 2, _file(i % 5, seq=i))
        for i in range(60)
    ]
    decoded = avro.decode_manifest_entries(avro.encode_manifest_entries(entries), "m")
    assert decoded == entries
    assert len({id(e.partition) for e in decoded}) == 3
    assert len({id(e.file.key_stats.null_counts) for e in decoded}) == 1
    assert all(e.file.key_stats.min_values is e.file.min_key for e in decoded)
    assert len({id(e.file.min_key) for e in decoded}) == 5
    blocks, every = avro.decode_manifest_blocks(avro.encode_manifest_entries(entries), "m", {(b"p1", None)})
    assert every and blocks == entries


def test_manifest_cache_is_bounded_by_entries() -> None:
    """The process-wide cache of decoded manifests keeps at most its bound of entries, least
    recently used first out, and never a manifest larger than the whole bound."""
    cache = manifests._LRU(100, max_items=10)
    cache.put("a", [1] * 4)
    cache.put("b", [2] * 4)
    assert cache.get("a") is not None  # "b" is now the least recently used
    cache.put("c", [3] * 4)
    assert cache.get("b") is None and cache.get("a") == [1] * 4 and cache.items() == 8
    cache.put("a", [1] * 2)  # replaced, not counted twice
    assert cache.items() == 6
    cache.put("huge", [0] * 11)
    assert cache.get("huge") is None and cache.items() == 0
    bounded = manifests._LRU(2, max_items=100)
    for key in "xyz":
        bounded.put(key, [key])
    assert bounded.get("x") is None and bounded.items() == 2


def test_deletion_candidates_are_read_without_filling_the_manifest_cache(tmp_path: Any) -> None:
    """Expiration reads the manifests of the snapshots it deletes once; cached, they would push
    out the manifests that stay (at 100,000 files, the retained ones were then decoded twice)."""
    from stratalake.store.references import ReferenceCollector

    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=pa.schema([("k", pa.int64())]), primary_key=["k"], options={"bucket": "1"})
    for i in range(3):
        t.write(pa.table({"k": [i]}))
    snaps = list(t.snapshot_manager.snapshots())
    manifests._CACHE = manifests._LRU(2048)
    candidates = ReferenceCollector(t).snapshots(snaps[:2], strict=False)
    assert candidates.data and manifests._CACHE.items() == 0
    kept = ReferenceCollector(t).snapshots(snaps[2:], strict=True)
    assert kept.data and manifests._CACHE.items() > 0
    assert t.expire_snapshots(retain_max=1, retain_min=1, older_than_ms=2**62) == 2
    assert sorted(t.read().column("k").to_pylist()) == [0, 1, 2]
