"""Apache Paimon's Java readers (releases from Maven Central) read what stratalake writes with
its default options: every table kind, each compared row by row with stratalake's own read.

Run by ``make test-paimon-java`` (and CI); the jars are fetched by Maven on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from stratalake.table import Table
from tests.interop_java.paimon_java import RELEASES, JavaUnavailable, read_tables

pytestmark = pytest.mark.paimon_java

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string()), ("n", pa.int32())])


def _rows(ids: range, v: str, dt: str = "d1") -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "dt": [dt] * len(ids),
            "v": [f"{v}{i}" if i % 7 else None for i in ids],
            "n": pa.array([i % 5 for i in ids], pa.int32()),
        },
        schema=SCHEMA,
    )


def _upserts(t: Table) -> None:
    t.write(_rows(range(0, 40), "a"))
    t.write(_rows(range(20, 60), "b"))
    t.write(_rows(range(50, 70), "c", "d2"))


def _compacted(t: Table) -> None:
    _upserts(t)
    t.compact(full=True)


#: name -> (primary key, partitioned, options, how to fill it)
KINDS: dict[str, tuple[list[str] | None, bool, dict[str, str], Callable[[Table], None]]] = {
    "pk_deduplicate": (["id"], False, {"bucket": "2"}, _upserts),
    "pk_compacted": (["id"], False, {"bucket": "2"}, _compacted),
    "pk_partitioned": (["id", "dt"], True, {"bucket": "2"}, _upserts),
    "pk_deletion_vectors": (["id"], False, {"bucket": "2", "deletion-vectors.enabled": "true"}, _upserts),
    "pk_lookup_changelog": (["id"], False, {"bucket": "2", "changelog-producer": "lookup"}, _upserts),
    "pk_partial_update": (["id"], False, {"bucket": "2", "merge-engine": "partial-update"}, _upserts),
    "pk_aggregation": (
        ["id"],
        False,
        {"bucket": "2", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
        _upserts,
    ),
    "pk_first_row": (["id"], False, {"bucket": "2", "merge-engine": "first-row"}, _upserts),
    "pk_dynamic_bucket": (["id"], False, {"bucket": "-1"}, _upserts),
    "pk_orc": (["id"], False, {"bucket": "2", "file.format": "orc"}, _upserts),
    "pk_avro": (["id"], False, {"bucket": "2", "file.format": "avro"}, _upserts),
    "append_unaware": (None, False, {"bucket": "-1"}, _upserts),
    "append_fixed_bucket": (None, True, {"bucket": "2", "bucket-key": "id"}, _upserts),
}


def _as_java_prints(value: Any) -> str:
    return "null" if value is None else str(value)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, list[tuple[str, ...]]]]:
    wh = str(tmp_path_factory.mktemp("paimon-java") / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    expected = {}
    for name, (pk, partitioned, options, fill) in KINDS.items():
        t = cat.create_table(
            f"db.{name}",
            schema=SCHEMA,
            primary_key=pk,
            partition_keys=["dt"] if partitioned else None,
            options=options,
        )
        fill(t)
        data = cat.get_table(f"db.{name}").read()
        cols = [data.column(c).to_pylist() for c in SCHEMA.names]
        expected[f"db.{name}"] = sorted(
            tuple(_as_java_prints(v) for v in row) for row in zip(*cols, strict=True)
        )
    return wh, expected


@pytest.mark.parametrize("release", RELEASES)
def test_paimon_java_reads_every_table_kind(release: str, warehouse: tuple[str, dict[str, Any]]) -> None:
    wh, expected = warehouse
    try:
        got = read_tables(release, wh, sorted(expected))
    except JavaUnavailable as e:  # pragma: no cover - CI has Java and Maven
        pytest.fail(f"Paimon {release} could not be set up: {e}")
    failures = {name: got.get(name) for name in expected if got.get(name) != expected[name]}
    assert not failures, {
        k: (v if isinstance(v, str) else f"{len(v or [])} rows") for k, v in failures.items()
    }


def test_delta_encoded_keys_are_what_paimon_0_9_cannot_read(tmp_path: Path) -> None:
    """Why 'parquet.delta-keys' is off by default: Paimon 0.9's Parquet reader refuses it (1.0.1
    reads it)."""
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1", "parquet.delta-keys": "true"}
    )
    _upserts(t)
    got = read_tables("0.9.0", wh, ["db.t"])["db.t"]
    assert isinstance(got, str) and "DELTA_BINARY_PACKED" in got, got
    assert read_tables("1.0.1", wh, ["db.t"])["db.t"] == read_tables("1.3.1", wh, ["db.t"])["db.t"]


@pytest.mark.parametrize(
    ("release", "fmt"),
    [("1.0.1", "avro"), ("1.0.1", "parquet"), ("1.3.1", "avro"), ("1.3.1", "parquet"), ("1.3.1", "orc")],
)
@pytest.mark.parametrize("primary_key", [True, False])
def test_stratalake_reads_and_extends_tables_paimon_java_wrote(
    tmp_path: Path, release: str, fmt: str, primary_key: bool
) -> None:
    """Paimon Java writes a table in a file format; stratalake reads it, upserts into it, and
    Paimon Java reads the result. Paimon 1.0.1 writes Avro data files with a nullable row schema
    (['null', record]), which stratalake used to refuse; 1.3.1 writes a plain record."""
    from tests.interop_java.paimon_java import write_table

    wh = str(tmp_path / "wh")
    options = {"bucket": "1" if primary_key else "-1", "file.format": fmt}
    write_table(release, wh, "db.t", primary_key, range(0, 30), "j", options)
    write_table(release, wh, "db.t", primary_key, range(20, 40), "k", options)
    t = stratalake.Catalog(wh).get_table("db.t")

    def expected(ids: dict[int, str | None]) -> list[tuple[str, ...]]:
        return sorted((str(k), _as_java_prints(v)) for k, v in ids.items())

    model: dict[int, str | None] = {}
    rows_list: list[tuple[int, str | None]] = []
    for rng, p in ((range(0, 30), "j"), (range(20, 40), "k")):
        for k in rng:
            v = None if k % 7 == 0 else f"{p}{k}"
            model[k] = v
            rows_list.append((k, v))
    got = sorted(
        tuple(_as_java_prints(x) for x in r)
        for r in zip(*(t.read().column(c).to_pylist() for c in ("id", "v")), strict=True)
    )
    want = expected(model) if primary_key else sorted((str(k), _as_java_prints(v)) for k, v in rows_list)
    assert got == want
    t.write(pa.table({"id": pa.array([5, 100], pa.int64()), "v": ["s5", "s100"]}))
    if primary_key:
        model.update({5: "s5", 100: "s100"})
        want = expected(model)
    else:
        want = sorted([*want, ("5", "s5"), ("100", "s100")])
    assert read_tables(release, wh, ["db.t"])["db.t"] == want


def _apply(engine: str, state: dict[int, str | None], rows: list[tuple[int, str | None]]) -> None:
    """Merge ``rows`` into ``state`` as Paimon's merge engine ``engine`` does (aggregation's
    default function for a value column is last_non_null_value)."""
    for k, v in rows:
        if engine == "first-row":
            state.setdefault(k, v)
        elif engine in ("partial-update", "aggregation"):
            state[k] = v if v is not None else state.get(k)
        else:
            state[k] = v


def _java_rows(ids: range, prefix: str) -> list[tuple[int, str | None]]:
    return [(k, None if k % 7 == 0 else f"{prefix}{k}") for k in ids]  # as PaimonWrite.java writes


def _replay(changelog: pa.Table) -> dict[int, str | None]:
    """The state a consumer of ``changelog`` (``_row_kind`` first) ends with."""
    state: dict[int, str | None] = {}
    for kind, k, v in zip(*(changelog.column(c).to_pylist() for c in ("_row_kind", "id", "v")), strict=True):
        if kind in ("+I", "+U"):
            state[k] = v
        else:
            state.pop(k, None)
    return state


JAVA_KINDS: dict[str, dict[str, str]] = {
    "deduplicate": {"bucket": "2"},
    "partial_update": {"bucket": "2", "merge-engine": "partial-update"},
    "aggregation": {"bucket": "2", "merge-engine": "aggregation"},
    "first_row": {"bucket": "2", "merge-engine": "first-row"},
    "deletion_vectors": {"bucket": "2", "deletion-vectors.enabled": "true"},
    "input_changelog": {"bucket": "2", "changelog-producer": "input"},
    "lookup_changelog": {"bucket": "2", "changelog-producer": "lookup"},
    "full_compaction_changelog": {"bucket": "2", "changelog-producer": "full-compaction"},
    # Not "bucket" = "-1": Paimon's Java table API leaves dynamic bucket assignment to its Flink
    # and Spark writers (BatchTableWrite refuses rows without a bucket).
    "avro": {"bucket": "2", "file.format": "avro"},
    "orc": {"bucket": "2", "file.format": "orc"},
}


@pytest.mark.parametrize("kind", sorted(JAVA_KINDS))
def test_every_primary_key_kind_paimon_java_writes(tmp_path: Path, kind: str) -> None:
    """Paimon Java (newest release here) writes two upserting commits into a table of each kind;
    stratalake reads the merged rows (against a model of the merge engine), replays the
    changelog to the same state where the table keeps one, upserts and fully compacts, and
    Paimon Java reads the result."""
    from tests.interop_java.paimon_java import write_table

    release = RELEASES[-1]
    options = JAVA_KINDS[kind]
    engine = options.get("merge-engine", "deduplicate")
    wh = str(tmp_path / "wh")
    writes = [(range(0, 30), "j"), (range(20, 40), "k")]
    model: dict[int, str | None] = {}
    for ids, prefix in writes:
        write_table(release, wh, "db.t", True, ids, prefix, options)
        _apply(engine, model, _java_rows(ids, prefix))
    t = stratalake.Catalog(wh).get_table("db.t")
    got = {k: v for k, v in zip(*(t.read().column(c).to_pylist() for c in ("id", "v")), strict=True)}
    assert got == model
    producer = options.get("changelog-producer")
    if producer in ("input", "lookup"):  # full-compaction: none until a full compaction runs
        assert _replay(t.changelog()) == model
    ours: list[tuple[int, str | None]] = [(5, "s5"), (21, None), (100, "s100")]
    t.write(pa.table({"id": pa.array([k for k, _ in ours], pa.int64()), "v": [v for _, v in ours]}))
    _apply(engine, model, ours)
    t.compact(full=True)
    fresh = stratalake.Catalog(wh).get_table("db.t")
    got = {k: v for k, v in zip(*(fresh.read().column(c).to_pylist() for c in ("id", "v")), strict=True)}
    assert got == model
    if producer is not None:
        assert _replay(fresh.changelog()) == model
    assert read_tables(release, wh, ["db.t"])["db.t"] == sorted(
        (str(k), _as_java_prints(v)) for k, v in model.items()
    )
    if engine == "deduplicate" and "deletion-vectors.enabled" not in options:
        # A delete by stratalake; Paimon's $audit_log and stratalake's agree, retraction included.
        fresh.write(pa.table({"id": pa.array([3], pa.int64()), "v": [None], "op": ["-D"]}), row_kind="op")
        model.pop(3)
        java = read_tables(release, wh, ["db.t", "db.t$audit_log"])
        assert java["db.t"] == sorted((str(k), _as_java_prints(v)) for k, v in model.items())
        audit = stratalake.Catalog(wh).get_table("db.t").audit_log()
        ours_audit = sorted(
            tuple(_as_java_prints(x) for x in row)
            for row in zip(*(audit.column(c).to_pylist() for c in ("rowkind", "id", "v")), strict=True)
        )
        assert java["db.t$audit_log"] == ours_audit


def test_paimon_java_reads_the_lookup_changelog_of_upgraded_level0_files(tmp_path: Path) -> None:
    """A deletion-vector table with the lookup producer: stratalake moves level-0 files up without
    rewriting them, and a first load's changelog is the data file copied. Paimon Java's
    incremental changelog read returns the records stratalake's own read does."""
    release = RELEASES[-1]
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    options = {"bucket": "2", "changelog-producer": "lookup", "deletion-vectors.enabled": "true"}
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = cat.create_table("db.t", schema=schema, primary_key=["id"], options=options)
    t.write(pa.table({"id": pa.array(range(30), pa.int64()), "v": [f"a{i}" for i in range(30)]}))
    t.write(pa.table({"id": pa.array(range(20, 40), pa.int64()), "v": [f"b{i}" for i in range(20, 40)]}))
    last = t.latest_snapshot().id
    ours = sorted(
        (kind, str(k), v)
        for kind, k, v in zip(*(t.changelog().column(c).to_pylist() for c in ("_row_kind", "id", "v")), strict=True)
    )
    assert len(ours) == 30 + 2 * 10 + 10  # +I 0-29; -U/+U 20-29; +I 30-39
    between = f"db.t$audit_log@incremental-between=0,{last};incremental-between-scan-mode=changelog"
    java = read_tables(release, wh, [between, "db.t"])
    assert java[between] == ours
    assert java["db.t"] == sorted((str(i), f"a{i}" if i < 20 else f"b{i}") for i in range(40))
