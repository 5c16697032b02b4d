"""Table statistics (Paimon's ``statistics/`` files, ANALYZE snapshots, ``$statistics``), no Spark.

Expected answers are those of Paimon's Spark tests (``AnalyzeTableTestBase``): the same rows give
the same merged count and column statistics. The statistics file is checked against the text
Paimon's ``JsonSerdeUtil.toJson`` (Jackson's default pretty printer) writes for the same object.
"""

from __future__ import annotations

import datetime
import decimal
import math
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratalake
import stratalake.operation.commit
from stratalake import SchemaChange
from stratalake.exceptions import CorruptFileError, SchemaError, UnsupportedError
from stratalake.spec.snapshot import CommitKind
from stratalake.spec.statistics import ColStats, Statistics, deserialize_value, serialize_value
from stratalake.table import statistics as table_statistics
from stratalake.types import DataType
from tests.interop.paimon_oracle import paimon_read, sorted_rows


def _catalog(tmp_path: Path) -> stratalake.Catalog:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    return cat


def _simple(tmp_path: Path, bucket: str = "1") -> stratalake.Table:
    """Paimon's test table ``T (id STRING, name STRING, i INT, l LONG)`` with two inserts."""
    t = _catalog(tmp_path).create_table(
        "db.t",
        schema=pa.schema([("id", pa.string()), ("name", pa.string()), ("i", pa.int32()), ("l", pa.int64())]),
        primary_key=["id"],
        options={"bucket": bucket},
    )
    t.write(pa.table({"id": ["1"], "name": ["a"], "i": pa.array([1], pa.int32()), "l": [1]}))
    t.write(pa.table({"id": ["2"], "name": ["aaa"], "i": pa.array([1], pa.int32()), "l": [2]}))
    return t


def _stats_files(t: stratalake.Table) -> list[str]:
    d = Path(t.location) / "statistics"
    return sorted(os.listdir(d)) if d.exists() else []


def test_analyze_table_only(tmp_path: Path) -> None:
    """``ANALYZE TABLE T COMPUTE STATISTICS``: merged count and size, no column statistics, an
    ANALYZE snapshot after the analyzed one (Paimon's "analyze table only")."""
    t = _simple(tmp_path)
    sid = t.analyze()
    assert sid == 3
    snap = t.latest_snapshot()
    assert snap is not None and snap.commit_kind is CommitKind.ANALYZE
    assert snap.delta_record_count == 0 and snap.total_record_count == 2
    stats = t.statistics()
    assert stats is not None
    assert (stats.snapshot_id, stats.schema_id, stats.merged_record_count) == (2, 0, 2)
    live = t.live_entries(snap)
    assert stats.merged_record_size == sum(e.file.file_size for e in live)  # nothing merged away
    assert stats.col_stats == {}
    assert snap.statistics == _stats_files(t)[0]
    # $statistics, as Paimon's test answers it.
    rows = t.system_table("statistics").select(["snapshot_id", "schema_id", "mergedRecordCount", "colstat"])
    assert rows.to_pylist() == [{"snapshot_id": 2, "schema_id": 0, "mergedRecordCount": 2, "colstat": "{ }"}]


def test_merged_record_size_scales_by_merged_rows(tmp_path: Path) -> None:
    """Three versions of one key: mergedRecordCount 1, size = file bytes x 1 / 3, truncated."""
    t = _catalog(tmp_path).create_table(
        "db.t",
        schema=pa.schema([("id", pa.string()), ("name", pa.string())]),
        primary_key=["id"],
        options={"bucket": "1"},
    )
    for name in ("a", "bb", "ccc"):
        t.write(pa.table({"id": ["1"], "name": [name]}))
    t.analyze()
    stats = t.statistics()
    assert stats is not None and stats.merged_record_count == 1
    snap = t.snapshot(3)
    total = sum(e.file.file_size for e in t.live_entries(snap))
    assert stats.merged_record_size == int(total * 1 / 3) > 0


def _all_types_table(tmp_path: Path) -> stratalake.Table:
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("name", pa.string()),
            ("byte_col", pa.int8()),
            ("short_col", pa.int16()),
            ("int_col", pa.int32()),
            ("long_col", pa.int64()),
            ("float_col", pa.float32()),
            ("double_col", pa.float64()),
            ("decimal_col", pa.decimal128(10, 5)),
            ("boolean_col", pa.bool_()),
            ("date_col", pa.date32()),
            ("timestamp_col", pa.timestamp("us")),
            ("binary", pa.binary()),
            ("varchar_col", pa.string()),
        ]
    )
    t = _catalog(tmp_path).create_table("db.t", schema=schema, primary_key=["id"], options={"bucket": "2"})
    d = decimal.Decimal
    rows = [
        ("1", "a", 1, 1, 1, 1, 1.0, 1.0, d("12.12345"), True, 1, b"example binary1", "a"),
        ("2", "aaa", 1, None, 1, 1, 1.0, 1.0, d("12.12345"), True, 2, b"example binary1", "aaa"),
        ("3", "bbbb", 2, 1, 1, 1, 1.0, 1.0, d("22.12345"), True, 2, None, "bbbb"),
        ("4", "bbbbbbbb", 2, 2, 2, 2, 2.0, 2.0, d("22.12345"), False, 1, b"example binary2", "bbbbbbbb"),
    ]
    for r in rows:  # one commit per row, as Paimon's test inserts them
        day = datetime.date(2019, 12, 31) + datetime.timedelta(days=r[10])
        values = [*r[:10], day, datetime.datetime.combine(day, datetime.time()), r[11], r[12]]
        t.write(pa.Table.from_pylist([dict(zip(schema.names, values, strict=True))], schema=schema))
    return t


def test_all_supported_columns_match_paimons_answers(tmp_path: Path) -> None:
    """Paimon's "analyze all supported cols": the same rows, the same ColStats (min/max compared
    as Paimon's serializers print them)."""
    t = _all_types_table(tmp_path)
    t.analyze(all_columns=True)
    stats = t.statistics()
    assert stats is not None and stats.merged_record_count == 4
    got = stats.col_stats
    assert got["id"] == ColStats(0, 4, None, None, 0, 1, 1)
    assert got["name"] == ColStats(1, 4, None, None, 0, 4, 8)
    assert got["byte_col"] == ColStats(2, 2, "1", "2", 0, 1, 1)
    assert got["short_col"] == ColStats(3, 2, "1", "2", 1, 2, 2)
    assert got["int_col"] == ColStats(4, 2, "1", "2", 0, 4, 4)
    assert got["long_col"] == ColStats(5, 2, "1", "2", 0, 8, 8)
    assert got["float_col"] == ColStats(6, 2, "1.0", "2.0", 0, 4, 4)
    assert got["double_col"] == ColStats(7, 2, "1.0", "2.0", 0, 8, 8)
    assert got["decimal_col"] == ColStats(8, 2, "12.12345", "22.12345", 0, 8, 8)
    assert got["boolean_col"] == ColStats(9, 2, "false", "true", 0, 1, 1)
    assert got["date_col"] == ColStats(10, 2, "18262", "18263", 0, 4, 4)
    # TIMESTAMP(6): Paimon's formatTimestamp keeps `precision` fraction digits.
    assert got["timestamp_col"] == ColStats(
        11, 2, "2020-01-01 00:00:00.000000", "2020-01-02 00:00:00.000000", 0, 8, 8
    )
    assert got["binary"] == ColStats(12, 2, None, None, 1, 15, 15)
    assert got["varchar_col"] == ColStats(13, 4, None, None, 0, 4, 8)

    # A fifth row, analyzed again (Paimon's second half of the same test).
    schema = t.arrow_schema()
    t.write(
        pa.Table.from_pylist(
            [
                dict(
                    zip(
                        schema.names,
                        [
                            "5",
                            "b" * 16,
                            3,
                            3,
                            3,
                            3,
                            3.0,
                            3.0,
                            decimal.Decimal("32.12345"),
                            False,
                            datetime.date(2020, 1, 3),
                            datetime.datetime(2020, 1, 3),
                            b"binary3",
                            "b" * 16,
                        ],
                        strict=True,
                    )
                )
            ],
            schema=schema,
        )
    )
    t.analyze(all_columns=True)
    stats = t.statistics()
    assert stats is not None and stats.merged_record_count == 5
    got = stats.col_stats
    assert got["name"] == ColStats(1, 5, None, None, 0, 7, 16)
    assert got["short_col"] == ColStats(3, 3, "1", "3", 1, 2, 2)
    assert got["boolean_col"] == ColStats(9, 2, "false", "true", 0, 1, 1)
    assert got["date_col"] == ColStats(10, 3, "18262", "18264", 0, 4, 4)
    assert got["binary"] == ColStats(12, 3, None, None, 1, 13, 15)
    assert got["varchar_col"] == ColStats(13, 5, None, None, 0, 7, 16)


def test_specialized_columns(tmp_path: Path) -> None:
    """``FOR COLUMNS name, i``: only those (Paimon's "analyze specialized cols"); the data reads
    as before."""
    t = _simple(tmp_path)
    t.analyze(columns=["name", "I"])  # Spark's resolver ignores case
    stats = t.statistics()
    assert stats is not None
    assert dict(stats.col_stats) == {
        "name": ColStats(1, 2, None, None, 0, 2, 3),
        "i": ColStats(2, 1, "1", "1", 0, 4, 4),
    }
    assert sorted(t.read().column("id").to_pylist()) == ["1", "2"]


def test_file_text_is_jacksons_pretty_print(tmp_path: Path) -> None:
    """The file holds exactly what Paimon's ``StatsFile.write`` writes for the same object:
    ``JsonSerdeUtil.toJson`` (``writerWithDefaultPrettyPrinter``), properties in the order of
    ``Statistics``/``ColStats``'s creators, null ones left out (``@JsonInclude(NON_NULL)``)."""
    t = _simple(tmp_path)
    t.analyze(columns=["i", "name"])
    (name,) = _stats_files(t)
    text = (Path(t.location) / "statistics" / name).read_text()
    stats = t.statistics()
    assert stats is not None
    size = stats.merged_record_size
    expected = (
        "{\n"
        '  "snapshotId" : 2,\n'
        '  "schemaId" : 0,\n'
        '  "mergedRecordCount" : 2,\n'
        f'  "mergedRecordSize" : {size},\n'
        '  "colStats" : {\n'
        '    "i" : {\n'
        '      "colId" : 2,\n'
        '      "distinctCount" : 1,\n'
        '      "min" : "1",\n'
        '      "max" : "1",\n'
        '      "nullCount" : 0,\n'
        '      "avgLen" : 4,\n'
        '      "maxLen" : 4\n'
        "    },\n"
        '    "name" : {\n'
        '      "colId" : 1,\n'
        '      "distinctCount" : 2,\n'
        '      "nullCount" : 0,\n'
        '      "avgLen" : 2,\n'
        '      "maxLen" : 3\n'
        "    }\n"
        "  }\n"
        "}"
    )
    assert text == expected
    assert name.startswith("stat-") and Statistics.from_json(text) == stats
    # Without column statistics Jackson prints the empty map as "{ }".
    empty = Statistics(5, 1, 3, 10, {})
    assert empty.to_json() == (
        '{\n  "snapshotId" : 5,\n  "schemaId" : 1,\n  "mergedRecordCount" : 3,\n'
        '  "mergedRecordSize" : 10,\n  "colStats" : { }\n}'
    )
    # Unknown fields are ignored and missing optional ones stay unknown (Jackson's settings).
    parsed = Statistics.from_json(
        '{"snapshotId": 1, "schemaId": 0, "future": 1, "colStats": {"a": {"colId": 3}}}'
    )
    assert parsed == Statistics(1, 0, None, None, {"a": ColStats(3)})


@pytest.mark.parametrize(
    ("type_string", "value", "text"),
    [
        ("DOUBLE", 1.0, "1.0"),
        ("DOUBLE", 1e7, "1.0E7"),
        ("DOUBLE", 9999999.0, "9999999.0"),
        ("DOUBLE", 0.001, "0.001"),
        ("DOUBLE", 0.0001, "1.0E-4"),
        ("DOUBLE", -123.25, "-123.25"),
        ("DOUBLE", 2.5e10, "2.5E10"),
        ("DOUBLE", -0.0, "-0.0"),
        ("DOUBLE", math.inf, "Infinity"),
        ("DOUBLE", math.nan, "NaN"),
        ("FLOAT", 0.1, "0.1"),  # Float.toString: the float's shortest digits, not the double's
        ("FLOAT", 3.4e38, "3.4E38"),
        ("DECIMAL(10, 5)", decimal.Decimal("1.5"), "1.50000"),
        ("DECIMAL(38, 0)", decimal.Decimal("12345678901234567890123"), "12345678901234567890123"),
        ("DATE", datetime.date(1969, 12, 31), "-1"),
        ("BOOLEAN", True, "true"),
        ("TIMESTAMP(3)", 1_577_836_800_120_000_000, "2020-01-01 00:00:00.120"),
        ("TIMESTAMP(0)", 1_577_836_800_000_000_000, "2020-01-01 00:00:00"),
        ("TIMESTAMP(9)", 1_577_836_800_000_000_001, "2020-01-01 00:00:00.000000001"),
        ("TIMESTAMP(0)", 1_577_836_800_500_000_000, "2020-01-01 00:00:00.5"),
        ("TIMESTAMP(6) WITH LOCAL TIME ZONE", -1_000, "1969-12-31 23:59:59.999999"),
    ],
)
def test_min_max_strings_are_javas(type_string: str, value: object, text: str) -> None:
    """Paimon's serializers: Java's ``toString`` of the internal value (Float/Double, BigDecimal's
    plain string, dates as epoch days, ``DateTimeUtils.formatTimestamp``)."""
    dt = DataType.parse(type_string)
    assert serialize_value(dt, value) == text
    back = deserialize_value(dt, text)
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(back)
    elif "TIMESTAMP" not in type_string and "DECIMAL" not in type_string:
        assert back == (pytest.approx(value, rel=1e-7) if type_string == "FLOAT" else value)


def test_carried_forward_until_the_schema_changes(tmp_path: Path) -> None:
    """Later commits (appends, compactions) name the same statistics file; after a schema change
    the next commit drops them (Paimon's FileStoreCommitImpl: "Schema changed, stats will not be
    inherited"). Each snapshot's $statistics is what it carries (Paimon's time-travel test)."""
    t = _simple(tmp_path)
    t.analyze()
    name = t.latest_snapshot().statistics  # type: ignore[union-attr]
    t.write(pa.table({"id": ["3"], "name": ["b"], "i": pa.array([2], pa.int32()), "l": [1]}))
    t.compact(full=True)
    assert [s.statistics for s in t.snapshots()] == [None, None, name, name, name]
    assert t.system_table("statistics", snapshot_id=1).num_rows == 0
    assert t.system_table("statistics", snapshot_id=4).column("snapshot_id").to_pylist() == [2]
    t.analyze()
    assert t.statistics().snapshot_id == 5  # type: ignore[union-attr]
    cat = _catalog(tmp_path)
    cat.alter_table("db.t", [SchemaChange.add_column("note", "STRING")])
    t = cat.get_table("db.t")
    t.write(pa.table({"id": ["4"], "name": ["c"], "i": pa.array([3], pa.int32()), "l": [1], "note": ["x"]}))
    assert t.latest_snapshot().statistics is None  # type: ignore[union-attr]
    assert t.system_table("statistics").num_rows == 0


def test_expire_and_orphan_cleaning(tmp_path: Path) -> None:
    """Paimon's "statistics expire and clean": expiring the snapshots that name a statistics file
    deletes it; an orphan under statistics/ goes with remove_orphan_files."""
    t = _catalog(tmp_path).create_table(
        "db.t",
        schema=pa.schema([("id", pa.string()), ("name", pa.string())]),
        primary_key=["id"],
        options={"bucket": "1"},
    )
    t.write(pa.table({"id": ["1"], "name": ["a"]}))
    t.analyze()
    t.write(pa.table({"id": ["2"], "name": ["b"]}))
    t.analyze()
    assert len(_stats_files(t)) == 2
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert _stats_files(t) == [t.latest_snapshot().statistics]  # type: ignore[union-attr]
    orphan = Path(t.location) / "statistics" / "stats-orphan-0"
    orphan.write_text("x")
    os.utime(orphan, (0, 0))
    t.remove_orphan_files(older_than_ms=10**13)
    assert len(_stats_files(t)) == 1


def test_bad_arguments_are_refused_and_leave_the_table_unchanged(tmp_path: Path) -> None:
    t = _catalog(tmp_path).create_table(
        "db.t",
        schema=pa.schema([("id", pa.string()), ("m", pa.map_(pa.int32(), pa.string())), ("n", pa.int64())]),
        primary_key=["id"],
        options={"bucket": "1"},
    )
    t.write(pa.table({"id": ["1"], "m": pa.array([[(1, "a")]], pa.map_(pa.int32(), pa.string())), "n": [1]}))
    with pytest.raises(SchemaError, match=r"db\.t.*column 'fake_col' not found"):
        t.analyze(columns=["fake_col"])
    with pytest.raises(
        UnsupportedError, match=r"db\.t.*column 'm' \(type MAP<INT NOT NULL, STRING>\) is not supported"
    ):
        t.analyze(columns=["n", "m"])
    with pytest.raises(UnsupportedError, match="not supported"):
        t.analyze(all_columns=True)
    with pytest.raises(ValueError, match="mutually exclusive"):
        t.analyze(columns=["n"], all_columns=True)
    assert [s.id for s in t.snapshots()] == [1]
    assert _stats_files(t) == []


def test_table_without_snapshot(tmp_path: Path) -> None:
    """Paimon's "analyze table without snapshot": nothing is written, $statistics is empty."""
    t = _catalog(tmp_path).create_table(
        "db.t", schema=pa.schema([("id", pa.string()), ("name", pa.string())])
    )
    assert t.analyze() is None and t.analyze(all_columns=True) is None
    assert t.snapshots() == [] and _stats_files(t) == []
    assert t.system_table("statistics").num_rows == 0


def test_pypaimon_reads_the_table_after_analyze(tmp_path: Path) -> None:
    """pypaimon 2.1.0 reads the ANALYZE snapshot (empty delta, a statistics field) and the
    snapshots after it."""
    t = _simple(tmp_path, bucket="2")
    t.analyze(all_columns=True)
    wh = str(tmp_path / "wh")
    assert sorted_rows(paimon_read(wh, "db.t"), ["id"]) == sorted_rows(t.read(), ["id"])
    t.write(pa.table({"id": ["9"], "name": ["z"], "i": pa.array([9], pa.int32()), "l": [9]}))
    assert sorted_rows(paimon_read(wh, "db.t"), ["id"]) == sorted_rows(t.read(), ["id"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.tuples(
            st.integers(0, 40),
            st.one_of(st.none(), st.integers(-5, 5)),
            st.one_of(st.none(), st.text(alphabet="abé\u4e2d", max_size=5)),
            st.one_of(st.none(), st.floats(-1e9, 1e9, allow_nan=False, width=32)),
        ),
        min_size=1,
        max_size=60,
    ),
    chunks=st.integers(1, 4),
    tiny_compaction=st.booleans(),
)
def test_model_statistics_of_the_merged_rows(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    rows: list[tuple[int, int | None, str | None, float | None]],
    chunks: int,
    tiny_compaction: bool,
) -> None:
    """Model: the statistics equal those of the merged read computed in one go (upserts over
    several commits and buckets; distinct values re-deduplicated at any threshold)."""
    if tiny_compaction:
        monkeypatch.setattr(table_statistics, "_DISTINCT_COMPACT", 1)
    tmp = tmp_path_factory.mktemp("model")
    schema = pa.schema([("k", pa.int64()), ("v", pa.int32()), ("s", pa.string()), ("f", pa.float32())])
    t = _catalog(tmp).create_table("db.t", schema=schema, primary_key=["k"], options={"bucket": "3"})
    size = -(-len(rows) // chunks)
    for i in range(0, len(rows), size):
        part = {}
        for k, v, s, f in rows[i : i + size]:
            part[k] = (k, v, s, f)  # one version per key per commit
        t.write(
            pa.Table.from_pylist(
                [dict(zip(schema.names, r, strict=True)) for r in part.values()], schema=schema
            )
        )
    t.analyze(all_columns=True)
    stats = t.statistics()
    assert stats is not None
    merged = t.read()
    assert stats.merged_record_count == merged.num_rows
    for name in ("v", "s", "f"):
        col = merged.column(name)
        present = col.drop_null()
        cs = stats.col_stats[name]
        assert cs.null_count == col.null_count
        assert cs.distinct_count == len(pc.unique(present))
        if name == "s":
            lengths = pc.utf8_length(present).to_pylist()
            assert cs.avg_len == (math.ceil(sum(lengths) / len(lengths)) if lengths else 20)
            assert cs.max_len == (max(lengths) if lengths else 20)
            assert cs.min is None and cs.max is None
        else:
            dt = t.schema().field(name).type
            low = min(present.to_pylist()) if len(present) else None
            high = max(present.to_pylist()) if len(present) else None
            assert cs.min == (serialize_value(dt, low) if low is not None else None)
            assert cs.max == (serialize_value(dt, high) if high is not None else None)


def test_a_failed_analyze_commit_leaves_no_file_and_no_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit known not to have happened deletes its statistics file; the table is unchanged."""
    t = _simple(tmp_path)

    def refuse(self: object, stats_file: str) -> int:
        raise OSError("disk full")

    monkeypatch.setattr(stratalake.operation.commit.TableCommit, "commit_statistics", refuse)
    with pytest.raises(OSError, match="disk full"):
        t.analyze()
    assert [s.id for s in t.snapshots()] == [1, 2]
    assert _stats_files(t) == []


def test_a_corrupt_statistics_file_is_named(tmp_path: Path) -> None:
    t = _simple(tmp_path)
    t.analyze()
    (name,) = _stats_files(t)
    (Path(t.location) / "statistics" / name).write_text("{not json")
    with pytest.raises(CorruptFileError, match=rf"db\.t.*{name}.*not a valid statistics file"):
        t.statistics()
