"""Hostile database and table names through the Python API never reach a path outside the warehouse.

The warehouse is ``<tmp>/wh``; after every attempt ``<tmp>`` holds only ``wh`` and every path under
``wh`` is what the catalog made for accepted names. Rules: :mod:`stratalake.identifiers`.

Case: the Python catalog is case-sensitive, as Paimon's filesystem catalog (``Orders`` and
``orders`` are two tables on a case-sensitive filesystem). Spark passes names to the catalog as
written (a V2 catalog gets no lowercasing), so ``lake.db.Orders`` is table ``Orders`` there too
(tests/spark/test_identifiers.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratalake import Catalog, SchemaChange, identifiers
from stratalake.exceptions import (
    InvalidIdentifierError,
    InvalidOptionError,
    StrataLakeError,
    TableNotFoundError,
)

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])

# Names that must never be created, with a word the error must contain.
HOSTILE = [
    ("..", "'..'"),
    (".", "'..'"),
    ("../x", "separator"),
    ("../../escaped", "separator"),
    ("db/../../evil", "separator"),
    ("a/b", "separator"),
    ("a\\b", "separator"),
    ("/abs", "separator"),
    ("/tmp/abs", "separator"),
    ("C:\\abs", "separator"),
    ("%2e%2e", "URL escapes"),
    ("..%2Fx", "'.'"),
    ("a%2fb", "URL escapes"),
    ("%252e%252e", "URL escapes"),
    ("a\u2215b", "DIVISION SLASH"),
    ("a\uff0fb", "FULLWIDTH SOLIDUS"),
    ("a\u2044b", "FRACTION SLASH"),
    ("a\uff3cb", "FULLWIDTH REVERSE SOLIDUS"),
    ("\uff0e\uff0e", "NFKC"),
    ("\u2025", "NFKC"),
    ("a\x00b", "NUL"),
    ("\x00", "NUL"),
    ("a\nb", "control"),
    ("a\tb", "control"),
    ("a\x7fb", "control"),
    ("a\u202eb", "control"),  # RIGHT-TO-LEFT OVERRIDE (format character)
    ("a\u200bb", "control"),  # ZERO WIDTH SPACE
    ("t$files", "system tables"),
    ("t$snapshots", "system tables"),
    ("t\uff04files", "NFKC"),
    ("a.b", "'.'"),
    ("a:b", "URIs"),
    ("a?b", "URIs"),
    ("a#b", "URIs"),
    (" lead", "whitespace"),
    ("trail ", "whitespace"),
    ("", "empty"),
    ("x" * 256, "bytes of UTF-8"),
    ("\u00e9" * 128, "bytes of UTF-8"),  # 256 bytes of UTF-8
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "wh").mkdir()
    return tmp_path


@pytest.fixture
def cat(root: Path) -> Catalog:
    c = Catalog(str(root / "wh"))
    c.create_database("db")
    return c


def _assert_confined(root: Path) -> None:
    """Nothing beside the warehouse, and inside it only databases holding table directories."""
    assert sorted(os.listdir(root)) == ["wh"]
    for dirpath, dirnames, filenames in os.walk(root / "wh"):
        rel = Path(dirpath).relative_to(root / "wh")
        if rel == Path("."):
            assert all(d.endswith(".db") for d in dirnames), dirnames
            assert not filenames
        elif len(rel.parts) == 1:
            assert not filenames, (rel, filenames)


@pytest.mark.parametrize(("name", "rule"), HOSTILE, ids=[repr(n)[:40] for n, _ in HOSTILE])
def test_hostile_database_names(root: Path, cat: Catalog, name: str, rule: str) -> None:
    with pytest.raises(InvalidIdentifierError) as info:
        cat.create_database(name)
    message = str(info.value)
    assert rule in message
    assert "database name" in message or "not a table identifier" in message
    with pytest.raises(InvalidIdentifierError):
        cat.create_database(name, ignore_if_exists=True)
    _assert_confined(root)
    assert cat.list_databases() == ["db"]


@pytest.mark.parametrize(("name", "rule"), HOSTILE, ids=[repr(n)[:40] for n, _ in HOSTILE])
def test_hostile_table_names(root: Path, cat: Catalog, name: str, rule: str) -> None:
    with pytest.raises(InvalidIdentifierError) as info:
        cat.create_table(f"db.{name}", SCHEMA, primary_key=["id"])
    if "." not in name:  # otherwise "db.a.b" is not a 'database.table' identifier at all
        assert rule in str(info.value)
    _assert_confined(root)
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], ignore_if_exists=True)
    t.write(pa.table({"id": [1], "v": ["a"]}))
    with pytest.raises(InvalidIdentifierError):
        cat.rename_table("db.t", f"db.{name}")
    assert cat.list_tables("db") == ["t"]
    _assert_confined(root)


@pytest.mark.parametrize(
    "identifier",
    [
        "../x",
        "db/../../evil.t",
        "db.a/b",
        "db.a\\b",
        "db..",
        "..db",
        "db.t\x00",
        "/etc/passwd",
        "db.%2e%2e",
        "db.\uff0e\uff0e",
        "db." + "x" * 256,
    ],
)
def test_reads_drops_and_lookups_refuse_unsafe_names(root: Path, cat: Catalog, identifier: str) -> None:
    """get/drop/exists/alter with an unsafe name: an InvalidIdentifierError, never a path outside."""
    for call in (
        lambda: cat.get_table(identifier),
        lambda: cat.table_exists(identifier),
        lambda: cat.drop_table(identifier, ignore_if_not_exists=True),
        lambda: cat.alter_table(identifier, [SchemaChange.set_option("a", "b")]),
        lambda: cat.table_path(identifier),
    ):
        with pytest.raises(InvalidIdentifierError):
            call()
    _assert_confined(root)


@pytest.mark.parametrize("name", ["..", "../x", "a/b", "a\x00b", "x" * 253, "\uff0e\uff0e/x"])
def test_database_lookups_refuse_unsafe_names(root: Path, cat: Catalog, name: str) -> None:
    for call in (
        lambda: cat.database_exists(name),
        lambda: cat.drop_database(name, ignore_if_not_exists=True, cascade=True),
        lambda: cat.list_tables(name),
        lambda: cat.database_path(name),
    ):
        with pytest.raises(InvalidIdentifierError):
            call()
    assert (root / "wh" / "db.db").is_dir()
    _assert_confined(root)


def test_names_differing_in_case_are_two_tables(root: Path, cat: Catalog) -> None:
    """Case-sensitive, as Paimon's filesystem catalog (on a case-insensitive filesystem the second
    create would find the first and say it exists)."""
    cat.create_table("db.Orders", SCHEMA, primary_key=["id"])
    if (root / "wh" / "db.db" / "orders").exists():  # case-insensitive filesystem
        pytest.skip("case-insensitive filesystem")
    cat.create_table("db.orders", SCHEMA, primary_key=["id"])
    assert cat.list_tables("db") == ["Orders", "orders"]
    with pytest.raises(TableNotFoundError):
        cat.get_table("db.ORDERS")


def test_creation_rules_allow_ordinary_names(root: Path, cat: Catalog) -> None:
    for name in ["t", "T_1", "orders-2024", "caf\u00e9", "\u8868", "x" * 255, "with space", "a+b", "100%"]:
        cat.create_table(f"db.{name}", SCHEMA, primary_key=["id"])
    cat.create_database("y" * 252)
    assert (root / "wh" / ("y" * 252 + ".db")).is_dir()
    _assert_confined(root)


def test_existing_table_with_an_uncreatable_name_is_readable(root: Path, cat: Catalog) -> None:
    """A table directory made by another tool ('t$x', a leading space) loads and reads; creating
    that name says why it cannot be."""
    t = cat.create_table("db.src", SCHEMA, primary_key=["id"])
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    for odd in ("t$x", " lead", "a\nb", "a%2Fb"):  # as another tool could leave them
        shutil.copytree(root / "wh" / "db.db" / "src", root / "wh" / "db.db" / odd)
        assert cat.table_exists(f"db.{odd}")
        assert cat.get_table(f"db.{odd}").read().num_rows == 2
        assert odd in cat.list_tables("db")
        with pytest.raises(InvalidIdentifierError, match="cannot be created"):
            cat.create_table(f"db.{odd}", SCHEMA, primary_key=["id"], ignore_if_exists=True)


def test_reserved_system_database(cat: Catalog) -> None:
    with pytest.raises(InvalidIdentifierError, match="system database"):
        cat.create_database("sys")


# ---- options and columns ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("path", "/tmp/elsewhere"),
        ("PATH", "/tmp/elsewhere"),
        ("location", "/tmp/elsewhere"),
        ("branch", "../../x"),
        ("scan.fallback-branch", "../x"),
        ("data-file.external-paths", "file:///tmp/elsewhere"),
        ("data-file.path-directory", "../../x"),
        ("some.future.dir", "/tmp/x"),
        ("data-file.prefix", "../../x-"),
        ("changelog-file.prefix", "a/b"),
        ("data-file.prefix", "x%2f"),
    ],
)
def test_options_cannot_move_files(root: Path, cat: Catalog, key: str, value: str) -> None:
    with pytest.raises(InvalidOptionError, match=key.replace(".", r"\.")):
        cat.create_table("db.t", SCHEMA, primary_key=["id"], options={key: value})
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"])
    with pytest.raises(InvalidOptionError):
        cat.alter_table("db.t", [SchemaChange.set_option(key, value)])
    assert key not in t.options()
    _assert_confined(root)


def test_harmless_file_name_prefix_is_kept(cat: Catalog) -> None:
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"data-file.prefix": "part-"})
    assert t.options()["data-file.prefix"] == "part-"


@pytest.mark.parametrize("column", ["../../x", "a/b", "..", "/abs", "%2e%2e", "a\\b"])
def test_partition_column_names_stay_inside_the_table(root: Path, cat: Catalog, column: str) -> None:
    """Column names reach paths only as partition directories ``<col>=<value>``, escaped as Hive does."""
    schema = pa.schema([("id", pa.int64()), (column, pa.string())])
    t = cat.create_table("db.t", schema, primary_key=["id", column], partition_keys=[column])
    t.write(pa.table({"id": [1, 2], column: ["../../v", "/abs"]}))
    assert t.read().num_rows == 2
    assert sorted(os.listdir(root)) == ["wh"]
    table_dir = (root / "wh" / "db.db" / "t").resolve()
    for dirpath, _dirs, files in os.walk(root / "wh"):
        for f in files:
            assert Path(dirpath, f).resolve().is_relative_to(root / "wh")
    assert any(
        p.name.startswith(("..%2F", "%2F", "..=", "%252e", "a%2F", "a%5C")) for p in table_dir.iterdir()
    )


# ---- object stores: the path helper --------------------------------------------------------------


@pytest.mark.parametrize(
    "warehouse", ["s3://bucket/wh", "s3://bucket/wh/", "s3://bucket", "file:///tmp/wh", "hdfs://nn:8020/a/wh"]
)
@pytest.mark.parametrize(
    "segments",
    [
        ["..", "x"],
        ["%2e%2e"],
        ["db.db", "..%2F..%2Fx"],
        ["db.db", "%252e%252e"],
        ["\uff0e\uff0e"],
        ["db.db", "..\\..\\x"],
        ["a", "..", ".."],
        ["db.db", "\u2025"],
    ],
)
def test_resolve_refuses_escapes_from_uri_warehouses(warehouse: str, segments: list[str]) -> None:
    with pytest.raises(InvalidIdentifierError, match="outside the warehouse"):
        identifiers.resolve(warehouse, segments)


@pytest.mark.parametrize(
    ("warehouse", "expected"),
    [
        ("s3://bucket/wh", "s3://bucket/wh/db.db/t"),
        ("s3://bucket/wh/", "s3://bucket/wh/db.db/t"),
        ("s3://bucket", "s3://bucket/db.db/t"),
        ("file:///tmp/wh", "file:///tmp/wh/db.db/t"),
        ("/", "/db.db/t"),
    ],
)
def test_resolve_builds_catalog_paths(warehouse: str, expected: str) -> None:
    assert identifiers.resolve(warehouse, ["db.db", "t"]) == expected
    assert identifiers.table_dir(warehouse, "db", "t") == expected


# ---- the property ------------------------------------------------------------------------------

_ALPHABET = st.sampled_from(
    [
        "a",
        "b",
        "Z",
        "0",
        ".",
        "..",
        "/",
        "\\",
        "%",
        "%2F",
        "%2e",
        "$",
        ":",
        "?",
        "#",
        " ",
        "\x00",
        "\n",
        "\x7f",
        "\u2215",
        "\uff0f",
        "\uff0e",
        "\u2025",
        "\u202e",
        "\u00e9",
        "\u8868",
        "~",
        "-",
        "_",
    ]
)
_NAMES = st.one_of(st.text(max_size=12), st.lists(_ALPHABET, max_size=8).map("".join))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(db=_NAMES, table=_NAMES)
def test_any_name_is_refused_clearly_or_stays_inside(
    tmp_path_factory: pytest.TempPathFactory, db: str, table: str
) -> None:
    root = tmp_path_factory.mktemp("prop")
    (root / "wh").mkdir()
    cat = Catalog(str(root / "wh"))
    for action in (
        lambda: cat.create_database(db),
        lambda: cat.create_database("d", ignore_if_exists=True),
        lambda: cat.create_table(f"{db}.{table}", SCHEMA, primary_key=["id"]),
        lambda: cat.create_table(f"d.{table}", SCHEMA, primary_key=["id"]),
        lambda: cat.get_table(f"{db}.{table}").read(),
        lambda: cat.drop_table(f"d.{table}"),
        lambda: cat.drop_database(db, cascade=True),
    ):
        with contextlib.suppress(StrataLakeError):  # a stratalake error, never ArrowInvalid, OSError...
            action()
        assert sorted(os.listdir(root)) == ["wh"]
        for dirpath, dirnames, filenames in os.walk(root / "wh"):
            for entry in (*dirnames, *filenames):
                assert Path(dirpath, entry).resolve().is_relative_to((root / "wh").resolve())
