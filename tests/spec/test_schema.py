"""Schema files (docs/format.md section 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from stratalake.exceptions import CorruptFileError, SchemaError
from stratalake.spec.schema import DataField, TableSchema
from stratalake.types import DataType

FORMAT_MD_EXAMPLE = """{
  "version": 3,
  "id": 0,
  "fields": [
    {"id": 0, "name": "id", "type": "BIGINT NOT NULL"},
    {"id": 1, "name": "v",  "type": "STRING"},
    {"id": 2, "name": "n",  "type": "BIGINT"},
    {"id": 3, "name": "dt", "type": "STRING NOT NULL"}
  ],
  "highestFieldId": 3,
  "partitionKeys": ["dt"],
  "primaryKeys": ["id", "dt"],
  "options": {"bucket": "4", "changelog-producer": "input"},
  "comment": null,
  "timeMillis": 1795311141316
}"""


def field(i: int, name: str, type_: str, description: str | None = None) -> DataField:
    return DataField(i, name, DataType.parse(type_), description)


def example() -> TableSchema:
    return TableSchema(
        id=0,
        fields=(
            field(0, "id", "BIGINT NOT NULL"),
            field(1, "v", "STRING"),
            field(2, "n", "BIGINT"),
            field(3, "dt", "STRING NOT NULL"),
        ),
        highest_field_id=3,
        partition_keys=("dt",),
        primary_keys=("id", "dt"),
        options={"bucket": "4", "changelog-producer": "input"},
        comment=None,
        time_millis=1795311141316,
    )


def test_parses_format_md_example() -> None:
    assert TableSchema.from_json(FORMAT_MD_EXAMPLE, "schema-0") == example()


def test_to_json_key_order_and_layout() -> None:
    text = example().to_json()
    raw = json.loads(text)
    assert list(raw) == [
        "version",
        "id",
        "fields",
        "highestFieldId",
        "partitionKeys",
        "primaryKeys",
        "options",
        "timeMillis",
    ]  # comment omitted when null, as Java does
    assert raw["fields"][0] == {"id": 0, "name": "id", "type": "BIGINT NOT NULL"}
    assert text.startswith('{\n  "version": 3,\n  "id": 0,\n  "fields": [\n    {\n      "id": 0,')
    assert TableSchema.from_json(text) == example()


def test_comment_description_and_nested_types_round_trip() -> None:
    nested = {
        "type": "ROW",
        "fields": [
            {"id": 5, "name": "a", "type": "INT"},
            {"id": 6, "name": "b", "type": {"type": "ARRAY NOT NULL", "element": "STRING"}},
        ],
    }
    raw = {
        "version": 3,
        "id": 2,
        "fields": [
            {"id": 0, "name": "k", "type": "INT NOT NULL", "description": "the key"},
            {"id": 4, "name": "r", "type": nested},
            {"id": 7, "name": "m", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": "DOUBLE"}},
            {"id": 8, "name": "d", "type": "DECIMAL(10, 2)", "defaultValue": "0"},
        ],
        "highestFieldId": 8,
        "partitionKeys": [],
        "primaryKeys": ["k"],
        "options": {"bucket": "-1"},
        "comment": "a table",
        "timeMillis": 5,
    }
    s = TableSchema.from_json(json.dumps(raw))
    assert s.comment == "a table" and s.field("k").description == "the key"
    assert json.loads(s.to_json()) == raw
    assert TableSchema.from_json(s.to_json()) == s


def test_reads_older_versions_like_java() -> None:
    raw = json.loads(FORMAT_MD_EXAMPLE)
    del raw["version"]
    raw["options"] = {}
    s = TableSchema.from_json(json.dumps(raw))
    assert s.version == 1
    assert dict(s.options) == {"bucket": "1", "file.format": "orc"}


def test_helpers() -> None:
    s = example()
    assert s.field_names == ("id", "v", "n", "dt")
    assert s.field("n").type == DataType.parse("BIGINT")
    with pytest.raises(SchemaError, match=r"'nope'.*columns are"):
        s.field("nope")
    assert s.trimmed_primary_keys == ("id",)
    assert s.bucket_keys == ("id",)
    with_bucket_key = TableSchema.from_json(
        FORMAT_MD_EXAMPLE.replace('"bucket": "4"', '"bucket-key": "v, n"')
    )
    assert with_bucket_key.bucket_keys == ("v", "n")


def test_logical_arrow_schema() -> None:
    assert example().logical_arrow_schema() == pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("v", _arrow("STRING")),
            pa.field("n", pa.int64()),
            pa.field("dt", _arrow("STRING"), nullable=False),
        ]
    )


def _arrow(type_: str) -> pa.DataType:
    from stratalake.types import to_arrow

    return to_arrow(DataType.parse(type_))


def test_immutable() -> None:
    options = {"bucket": "4"}
    s = dataclass_replace_options(options)
    options["bucket"] = "5"
    assert s.options["bucket"] == "4"
    with pytest.raises(TypeError):
        s.options["bucket"] = "6"  # type: ignore[index]
    with pytest.raises(AttributeError):
        s.id = 3  # type: ignore[misc]
    assert hash(s) == hash(dataclass_replace_options({"other": "x"}))  # options are not hashed


def dataclass_replace_options(options: dict[str, str]) -> TableSchema:
    e = example()
    return TableSchema(e.id, e.fields, e.highest_field_id, e.partition_keys, e.primary_keys, options)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r["fields"].append({"id": 9, "name": "v", "type": "INT"}), "duplicate column"),
        (lambda r: r["fields"].append({"id": 1, "name": "w", "type": "INT"}), "duplicate field ids"),
        (lambda r: r.update(highestFieldId=2), "exceeds highestFieldId"),
        (lambda r: r.update(primaryKeys=["id", "zz"]), "primary key columns \\['zz'\\]"),
        (lambda r: r.update(partitionKeys=["zz"]), "partition key columns"),
    ],
)
def test_invalid_schema(change: Any, message: str) -> None:
    raw = json.loads(FORMAT_MD_EXAMPLE)
    change(raw)
    with pytest.raises(CorruptFileError, match=f"schema-9 .*{message}"):
        TableSchema.from_json(json.dumps(raw), "schema-9")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[]",
        "{}",
        '{"id": 0}',
        FORMAT_MD_EXAMPLE.replace('"BIGINT NOT NULL"', '"NOT A TYPE"'),
        FORMAT_MD_EXAMPLE.replace('"options": {', '"options": {"x": [1], '),
        FORMAT_MD_EXAMPLE.replace('"partitionKeys": ["dt"]', '"partitionKeys": "dt"'),
        FORMAT_MD_EXAMPLE[:100],
    ],
)
def test_garbage_is_corrupt(text: str) -> None:
    with pytest.raises(CorruptFileError, match="/wh/t/schema/schema-0"):
        TableSchema.from_json(text, "/wh/t/schema/schema-0")


@pytest.mark.interop
def test_pypaimon_schema_file_and_reader(tmp_path: Path) -> None:
    """Parse a schema file pypaimon wrote; pypaimon parses ours to the same schema."""
    pypaimon = pytest.importorskip("pypaimon")
    from pypaimon.schema.table_schema import TableSchema as PaimonSchema

    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path)})
    catalog.create_database("db", False)
    arrow = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("v", pa.string()),
            pa.field("d", pa.decimal128(12, 3)),
            pa.field("ts", pa.timestamp("ms")),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("dt", pa.string(), nullable=False),
        ]
    )
    catalog.create_table(
        "db.t",
        pypaimon.Schema.from_pyarrow_schema(
            arrow, partition_keys=["dt"], primary_keys=["id", "dt"], options={"bucket": "2"}
        ),
        False,
    )
    text = (tmp_path / "db.db" / "t" / "schema" / "schema-0").read_text()
    ours = TableSchema.from_json(text, "schema-0")
    assert ours.field_names == ("id", "v", "d", "ts", "tags", "dt")
    assert ours.primary_keys == ("id", "dt") and ours.trimmed_primary_keys == ("id",)
    assert dict(ours.options) == {"bucket": "2"}
    assert str(ours.field("d").type) == "DECIMAL(12, 3)"
    # Same JSON apart from the null comment and the nested types' "nullable" key that pypaimon
    # writes and Java neither writes nor reads.
    theirs_raw = json.loads(text)
    assert theirs_raw.pop("comment") is None
    assert theirs_raw["fields"][4]["type"].pop("nullable") is True
    assert json.loads(ours.to_json()) == theirs_raw

    theirs = PaimonSchema.from_json(text)
    back = PaimonSchema.from_json(ours.to_json())
    assert back.fields == theirs.fields
    assert (back.partition_keys, back.primary_keys, back.options, back.comment) == (
        theirs.partition_keys,
        theirs.primary_keys,
        theirs.options,
        theirs.comment,
    )
