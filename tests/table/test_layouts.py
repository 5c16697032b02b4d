"""The reader accepts both physical layouts of data files (docs/format.md section 6)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import stratalake


def test_files_without_key_columns_and_with_field_ids_read_the_same(tmp_path: Path) -> None:
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_key=["id"], options={"bucket": "1"}
    )
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    t.write(pa.table({"id": [2, 4], "v": ["B", "d"], "k": ["-D", "+I"]}), row_kind="k")
    expected = t.read().sort_by("id")
    field_ids = {f.name: f.id for f in t.schema().fields}
    for path in Path(t.location).rglob("data-*.parquet"):
        data = pq.read_table(path)
        assert data.column_names[:3] == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND"]
        # Rewrite as pypaimon's Rust writer does: no _KEY_ columns, Parquet field ids set.
        rust = data.drop_columns(["_KEY_id"])
        fields = [
            f.with_metadata({b"PARQUET:field_id": str(field_ids.get(f.name, 2**31 - 1 - i)).encode()})
            for i, f in enumerate(rust.schema)
        ]
        pq.write_table(rust.cast(pa.schema(fields)), path)
    assert cat.get_table("db.t").read().sort_by("id").equals(expected)
