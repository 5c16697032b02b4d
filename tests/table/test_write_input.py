"""Both writers (primary-key and append tables) take input through one conformer
(``operation/conform.py``): the same columns, casts and NOT NULL rules for both table kinds."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.exceptions import InvalidDataError, SchemaError
from stratalake.operation.conform import conform

KINDS = {
    "primary-key": {"primary_key": ["id"], "options": {"bucket": "2"}},
    "append": {"options": {}},
    "append-fixed-bucket": {"options": {"bucket": "2", "bucket-key": "id"}},
    "primary-key-dynamic": {"primary_key": ["id"], "options": {"bucket": "-1"}},
}


@pytest.fixture
def cat(tmp_path: Path) -> stratalake.Catalog:
    c = stratalake.Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def _table(cat: stratalake.Catalog, kind: str) -> stratalake.Table:
    spec = KINDS[kind]
    return cat.create_table(
        f"db.{kind.replace('-', '_')}",
        schema=[("id", "BIGINT NOT NULL"), ("v", "STRING NOT NULL"), ("note", "STRING")],
        primary_key=spec.get("primary_key"),
        options=spec["options"],
    )


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_not_null_value_column_is_enforced(cat: stratalake.Catalog, kind: str) -> None:
    t = _table(cat, kind)
    t.write(pa.table({"id": [1], "v": ["a"], "note": [None]}))
    before = t.latest_snapshot()
    bad = pa.table({"id": [2, 3], "v": ["b", None], "note": ["x", "y"]})
    name = kind.replace("-", "_")
    with pytest.raises(InvalidDataError, match=rf"table db\.{name}: column 'v' is NOT NULL but has 1 null"):
        t.write(bad)
    with t.new_write() as w, pytest.raises(InvalidDataError, match="column 'v' is NOT NULL"):
        w.write(bad.to_batches()[0])
    assert t.latest_snapshot() == before
    assert t.read().to_pylist() == [{"id": 1, "v": "a", "note": None}]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_same_column_rules(cat: stratalake.Catalog, kind: str) -> None:
    t = _table(cat, kind)
    with pytest.raises(SchemaError, match="lacks column"):
        t.write(pa.table({"id": [1], "note": ["x"]}))
    with pytest.raises(SchemaError, match="unknown column"):
        t.write(pa.table({"id": [1], "v": ["a"], "note": ["x"], "other": [1]}))
    with pytest.raises(SchemaError, match="cannot be safely cast"):
        t.write(pa.table({"id": [1.5], "v": ["a"], "note": ["x"]}))
    with pytest.raises(SchemaError, match="more than once"):
        t.write(
            pa.Table.from_arrays([pa.array([1]), pa.array(["a"]), pa.array(["b"])], names=["id", "v", "v"])
        )
    with pytest.raises(SchemaError, match="expected an Arrow table"):
        t.write({"id": [1]})  # type: ignore[arg-type]
    # Columns by name, in any order, cast safely.
    t.write(pa.table({"note": ["x"], "v": ["a"], "id": pa.array([1], pa.int32())}))
    assert t.read().to_pylist() == [{"id": 1, "v": "a", "note": "x"}]
    assert t.latest_snapshot() is not None and t.latest_snapshot().id == 1  # type: ignore[union-attr]


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_row_kinds_and_keys(cat: stratalake.Catalog, fmt: str) -> None:
    """NOT NULL holds for every row kind (no format's writer could store the null: before the one
    conformer the flush failed at the commit with the library's error); keys are never null."""
    t = cat.create_table(
        f"db.kinds_{fmt}",
        schema=[("id", "BIGINT NOT NULL"), ("v", "STRING NOT NULL"), ("note", "STRING")],
        primary_key=["id"],
        options={"bucket": "1", "file.format": fmt},
    )
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "note": [None, None]}))
    t.write(pa.table({"id": [1], "v": ["a"], "note": [None], "op": ["-D"]}), row_kind="op")
    assert t.read().to_pylist() == [{"id": 2, "v": "b", "note": None}]
    before = t.latest_snapshot()
    for op in ("+U", "-D"):
        bad = pa.table({"id": [2], "v": pa.array([None], pa.string()), "note": [None], "op": [op]})
        with pytest.raises(InvalidDataError, match=rf"table db\.kinds_{fmt}: column 'v' is NOT NULL"):
            t.write(bad, row_kind="op")
    with pytest.raises(InvalidDataError, match="primary-key column 'id' has 1 null"):
        t.write(pa.table({"id": pa.array([None], pa.int64()), "v": ["c"], "note": [None]}))
    assert t.latest_snapshot() == before
    assert t.read().to_pylist() == [{"id": 2, "v": "b", "note": None}]


def test_conform_orders_casts_and_checks() -> None:
    target = pa.schema(
        [pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string(), nullable=False)]
    )
    data = pa.table({"v": ["a", "b"], "k": pa.array([1, 2], pa.int32()), "op": ["+I", "-D"]})
    out = conform(data, target, "db.t", row_kind="op", primary_keys=["k"])
    assert out.schema == pa.schema([("k", pa.int64()), ("v", pa.string())])
    assert out.to_pydict() == {"k": [1, 2], "v": ["a", "b"]}
    nulls = data.set_column(0, "v", pa.array(["a", None]))
    with pytest.raises(InvalidDataError, match=r"table db\.t: column 'v' is NOT NULL but has 1 null"):
        conform(nulls, target, "db.t", row_kind="op", primary_keys=["k"])
    with pytest.raises(InvalidDataError, match=r"table db\.t: primary-key column 'k' has 1 null"):
        conform(
            data.set_column(1, "k", pa.array([1, None])),
            target,
            "db.t",
            row_kind="op",
            primary_keys=["k"],
        )
