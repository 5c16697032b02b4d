"""Apache Paimon's Java implementation and stratalake on one table over its life: schema
evolution, tags made by either engine, expiration, and Java writing on top of stratalake's
compaction. Each step is checked by reading with both engines.

Run by ``make test-paimon-java`` (and CI); the jars are fetched by Maven on first use.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake import SchemaChange
from tests.interop_java.paimon_java import RELEASES, read_tables, tag, write_table

pytestmark = pytest.mark.paimon_java


def _printed(table: pa.Table, columns: list[str]) -> list[tuple[str, ...]]:
    """Rows as PaimonRead.java prints them (String.valueOf, "null"), sorted."""
    cols = [table.column(c).to_pylist() for c in columns]
    return sorted(tuple("null" if v is None else str(v) for v in row) for row in zip(*cols, strict=True))


@pytest.mark.parametrize("release", RELEASES)
def test_schema_evolution_and_tags_across_engines(tmp_path: Path, release: str) -> None:
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int32())])
    t = cat.create_table("db.t", schema=schema, primary_key=["id"], options={"bucket": "2"})
    t.write(
        pa.table(
            {
                "id": pa.array(range(30), pa.int64()),
                "v": [f"a{k}" for k in range(30)],
                "n": pa.array([k % 5 for k in range(30)], pa.int32()),
            },
            schema=schema,
        )
    )
    t.create_tag("before", 1)
    before = _printed(t.read(snapshot_id=1), ["id", "v", "n"])
    # Rename, widen, add: old files keep their field ids and types; readers project by field id.
    t = cat.alter_table(
        "db.t",
        [
            SchemaChange.rename_column("v", "w"),
            SchemaChange.update_column_type("n", "BIGINT"),
            SchemaChange.add_column("x", "DOUBLE"),
        ],
    )
    t.write(
        pa.table(
            {
                "id": pa.array(range(20, 40), pa.int64()),
                "w": [f"b{k}" for k in range(20, 40)],
                "n": pa.array(range(20, 40), pa.int64()),
                "x": [k * 0.5 if k % 3 else None for k in range(20, 40)],
            }
        )
    )
    latest = _printed(t.read(), ["id", "w", "n", "x"])
    assert len(latest) == 40 and ("5", "a5", "0", "null") in latest and ("22", "b22", "22", "11.0") in latest
    got = read_tables(release, wh, ["db.t", "db.t@scan.tag-name=before", "db.t@scan.snapshot-id=2"])
    assert got["db.t"] == latest
    assert got["db.t@scan.snapshot-id=2"] == latest
    # The tag reads the columns it was written with (Paimon's time travel uses the snapshot's schema).
    assert got["db.t@scan.tag-name=before"] == before

    # A tag made by Java is one stratalake reads, and keeps its files through stratalake's expiration.
    tag(release, wh, "db.t", "create", "java", 2)
    t = cat.get_table("db.t")
    assert {name: s.id for name, s in t.tags().items()} == {"before": 1, "java": 2}
    for k in range(3):
        t.write(
            pa.table(
                {"id": pa.array([k], pa.int64()), "w": [f"c{k}"], "n": pa.array([k], pa.int64()), "x": [1.0]}
            )
        )
    assert t.expire_snapshots(retain_max=1, retain_min=1) >= 3
    after = read_tables(release, wh, ["db.t", "db.t@scan.tag-name=before", "db.t@scan.tag-name=java"])
    assert after["db.t@scan.tag-name=before"] == before
    assert after["db.t@scan.tag-name=java"] == latest
    assert after["db.t"] == _printed(t.read(), ["id", "w", "n", "x"])
    # A tag Java deletes is gone for stratalake, which still reads the table and the other tag.
    tag(release, wh, "db.t", "delete", "before")
    t = cat.get_table("db.t")
    assert set(t.tags()) == {"java"}
    assert _printed(t.read(tag="java"), ["id", "w", "n", "x"]) == latest


OPTIONS: dict[str, dict[str, str]] = {
    "deduplicate": {"bucket": "2"},
    "deletion_vectors": {"bucket": "2", "deletion-vectors.enabled": "true"},
    "lookup_changelog": {"bucket": "2", "changelog-producer": "lookup"},
}


@pytest.mark.parametrize("release", ["1.0.1", "1.3.1"])
@pytest.mark.parametrize("kind", sorted(OPTIONS))
def test_paimon_java_writes_on_top_of_stratalake_compaction(tmp_path: Path, release: str, kind: str) -> None:
    """stratalake writes and fully compacts (files at the top level, vectors, changelog); Paimon
    Java then upserts into the same buckets, compacting as its writer does; both read the same rows."""
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = cat.create_table("db.t", schema=schema, primary_key=["id"], options=OPTIONS[kind])
    model: dict[int, str | None] = {}
    for ids, prefix in ((range(0, 50), "a"), (range(30, 80), "b")):
        t.write(
            pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{prefix}{k}" for k in ids]}, schema=schema)
        )
        model.update({k: f"{prefix}{k}" for k in ids})
    t.compact(full=True)
    write_table(release, wh, "db.t", True, range(60, 100), "j", OPTIONS[kind])
    model.update({k: None if k % 7 == 0 else f"j{k}" for k in range(60, 100)})
    want = sorted((str(k), "null" if v is None else v) for k, v in model.items())
    assert _printed(cat.get_table("db.t").read(), ["id", "v"]) == want
    assert read_tables(release, wh, ["db.t"])["db.t"] == want
    # And stratalake writes and compacts again on top of Java's files.
    t = cat.get_table("db.t")
    t.write(pa.table({"id": pa.array([1, 61, 200], pa.int64()), "v": ["s1", "s61", "s200"]}, schema=schema))
    t.compact(full=True)
    model.update({1: "s1", 61: "s61", 200: "s200"})
    want = sorted((str(k), "null" if v is None else v) for k, v in model.items())
    assert read_tables(release, wh, ["db.t"])["db.t"] == want
    assert _printed(cat.get_table("db.t").read(), ["id", "v"]) == want
