"""option_support: Paimon options stratalake does not honour are refused by name, not stored silently."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake import option_support
from stratalake.catalog import SchemaChange
from stratalake.exceptions import InvalidOptionError, SchemaError, UnsupportedError
from stratalake.operation.commit import partition_expire
from stratalake.paimon_options import CORE_OPTIONS
from stratalake.spec.schema import TableSchema
from stratalake.store.support import check_supported, unsupported_features
from stratalake.types import DataField, DataType

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture
def cat(tmp_path: Path) -> stratalake.Catalog:
    c = stratalake.Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def test_every_listed_option_is_paimons() -> None:
    listed = {*option_support.READ, *option_support.WRITE, *option_support.AUTOMATION}
    assert listed <= CORE_OPTIONS, listed - CORE_OPTIONS
    assert option_support.ENGINE_TUNING <= CORE_OPTIONS, option_support.ENGINE_TUNING - CORE_OPTIONS
    assert not listed & option_support.ENGINE_TUNING


def test_no_listed_option_is_one_stratalake_reads() -> None:
    """An option the code reads (its key quoted in a module) is honoured, so it must not be listed
    as unhonoured or as engine tuning (except a value check: only 'values-time' partition expiry)."""
    root = Path(stratalake.__file__).parent
    sources = {
        p.relative_to(root).as_posix(): p.read_text()
        for p in root.rglob("*.py")
        if p.name not in ("paimon_options.py", "option_support.py")
    }
    listed = {
        *option_support.READ,
        *option_support.WRITE,
        *option_support.AUTOMATION,
        *option_support.ENGINE_TUNING,
    }
    read = {
        (key, path)
        for key in listed
        for path, text in sources.items()
        if f'"{key}"' in text or f"'{key}'" in text
    }
    assert read <= {(partition_expire.STRATEGY, "operation/commit/partition_expire.py")}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("record-level.expire-time", "1 d"),
        ("tag.callbacks", "com.example.Callback"),
        ("partition.expiration-strategy", "update-time"),
        ("sequence.snapshot-ordering", "true"),
        ("scan.bucket", "1"),
        ("ignore-update-before", "true"),
        ("streaming-read-overwrite", "true"),
    ],
)
def test_create_refuses_an_unhonoured_option_by_name(cat: stratalake.Catalog, key: str, value: str) -> None:
    with pytest.raises(UnsupportedError, match=f"db.t.*'{key}'='{value}'.*does not implement"):
        cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={key: value})
    assert not cat.table_exists("db.t")


def test_paimon_defaults_are_accepted(cat: stratalake.Catalog) -> None:
    defaults = {"partition.end-input-to-done": "false", "ignore-update-before": "false", "stream-scan-mode": "NONE"}
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options=defaults)
    assert t.unsupported_features == []


def test_alter_set_is_refused_and_leaves_the_table_unchanged(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"])
    schema_id = t.schema().id
    with pytest.raises(UnsupportedError, match=r"'commit\.callbacks'='com\.x\.C'.*remove it"):
        cat.alter_table("db.t", [SchemaChange.set_option("commit.callbacks", "com.x.C")])
    assert cat.get_table("db.t").schema().id == schema_id


def test_engine_tuning_options_are_named_where_set(
    cat: stratalake.Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"page-size": "128 kb"})
    assert any("'page-size'" in r.getMessage() and "change nothing" in r.getMessage() for r in caplog.records)


def _paimon_schema(options: dict[str, str]) -> TableSchema:
    fields = (
        DataField(0, "id", DataType.parse("BIGINT NOT NULL")),
        DataField(1, "v", DataType.parse("STRING")),
    )
    return TableSchema(id=0, fields=fields, highest_field_id=1, primary_keys=("id",), options=options)


def test_a_table_paimon_wrote_with_a_read_option_is_neither_read_nor_written() -> None:
    s = _paimon_schema({"bucket": "1", "sequence.snapshot-ordering": "true"})
    assert any("'sequence.snapshot-ordering'='true'" in p for p in unsupported_features(s, s.options))
    for action in ("read", "write"):
        with pytest.raises(UnsupportedError, match=r"sequence\.snapshot-ordering"):
            check_supported("db.t", s, action)


def test_a_table_paimon_wrote_with_a_write_option_is_read_not_written() -> None:
    s = _paimon_schema({"bucket": "1", "record-level.expire-time": "1 d", "record-level.time-field": "v"})
    check_supported("db.t", s, "read")
    with pytest.raises(UnsupportedError, match=r"'record-level\.expire-time'='1 d'.*write it with Paimon"):
        check_supported("db.t", s, "write")


def test_a_table_paimon_wrote_with_automation_is_written_and_the_writer_says_what_it_skips(
    cat: stratalake.Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"])
    # As Paimon would have set it (stratalake refuses to): straight into a new schema file.
    schema = t.schema()
    changed = TableSchema(
        id=schema.id + 1,
        fields=schema.fields,
        highest_field_id=schema.highest_field_id,
        partition_keys=schema.partition_keys,
        primary_keys=schema.primary_keys,
        options={**schema.options, "commit.callbacks": "com.example.Callback"},
    )
    assert t.schema_manager.try_commit(changed)
    t = cat.get_table("db.t")
    assert t.unsupported_features == []
    with caplog.at_level(logging.WARNING):
        w = t.new_write()
        w.write(pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}, schema=SCHEMA))
        t.new_commit().commit(w.prepare_commit())
    assert t.read().num_rows == 1
    warned = [r.getMessage() for r in caplog.records if "commit.callbacks" in r.getMessage()]
    assert len(warned) == 1 and "do not do that" in warned[0]


def test_options_fixed_after_creation_and_the_deletion_vector_mode(cat: stratalake.Catalog) -> None:
    """Paimon's checkAlterTableOption, for ALTER and for a handle's dynamic options alike: options
    fixed at creation are refused, and so is flipping deletion vectors unless
    'deletion-vectors.modifiable' says the user knows (Paimon's readers of a deletion-vector table
    skip level-0 files, so a flip without full compaction hides or doubles rows)."""
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    for change in (
        SchemaChange.set_option("bucket", "2"),
        SchemaChange.set_option("merge-engine", "first-row"),
        SchemaChange.set_option("deletion-vectors.enabled", "true"),
    ):
        with pytest.raises(SchemaError, match=f"table db.t: .*'{change.name}'"):
            cat.alter_table("db.t", [change])
        with pytest.raises(SchemaError, match=f"table db.t: .*'{change.name}'"):
            t.copy({str(change.name): str(change.value)})
    assert cat.get_table("db.t").options() == {"bucket": "1"}
    cat.alter_table(
        "db.t",
        [
            SchemaChange.set_option("deletion-vectors.modifiable", "true"),
            SchemaChange.set_option("deletion-vectors.enabled", "true"),
        ],
    )
    assert cat.get_table("db.t").options()["deletion-vectors.enabled"] == "true"
    # Nothing of a copy is stored, so an unknown key could only do nothing: refused by name.
    with pytest.raises(InvalidOptionError, match=r"option 'target-file-sise' .*did you mean 'target-file-size'"):
        t.copy({"target-file-sise": "1 mb"})
    # A copy's options are its own: nothing is stored, the table keeps reading as before.
    copied = t.copy({"target-file-size": "1 mb"})
    assert copied.core_options.target_file_size == 1 << 20
    assert "target-file-size" not in cat.get_table("db.t").options()
    assert copied.read().num_rows == 2


def test_format_library_options_are_named_unless_honoured(cat: stratalake.Catalog) -> None:
    """Paimon hands ``parquet.*`` / ``orc.*`` keys to its format libraries; stratalake applies
    ``parquet.page.size`` (and its own ``parquet.delta-keys``) and names every other one where it
    is set, with the engine's tuning options, so nobody expects an effect."""
    from stratalake.options import KNOWN_OPTIONS

    assert {k for k in KNOWN_OPTIONS if k.startswith(option_support.FORMAT_PREFIXES)} == (
        option_support.HONOURED_FORMAT_OPTIONS
    )
    notice = option_support.engine_tuning_notice(
        {
            "parquet.page.size": "65536",
            "parquet.block.size": "1048576",
            "orc.bloom.filter.columns": "v",
            "file.block-size": "64 mb",
            "bucket": "2",
        },
        "db.t",
    )
    assert notice is not None and notice.startswith("table db.t: option(s) ")
    named = notice.split("option(s) ")[1].split(" tune")[0]
    assert named == "'file.block-size', 'orc.bloom.filter.columns', 'parquet.block.size'"
    assert option_support.engine_tuning_notice({"parquet.page.size": "65536"}, "db.t") is None


@pytest.mark.parametrize("value", ["1 mb", "0", "-5", "4294967296"])
def test_a_page_size_paimons_writer_cannot_read_is_refused(cat: stratalake.Catalog, value: str) -> None:
    """parquet-mr reads 'parquet.page.size' as a Java int of bytes: anything else is refused."""
    with pytest.raises(InvalidOptionError, match=f"db.t.*'parquet.page.size'.*'{value}'"):
        cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"parquet.page.size": value})
    assert not cat.table_exists("db.t")
