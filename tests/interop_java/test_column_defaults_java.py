"""Column DEFAULT values against Apache Paimon's Java implementation: every release reads a table
whose schema carries ``defaultValue`` (the form Paimon 1.2 introduced); Paimon's writer (1.2.0,
1.3.1), which fills defaults into written nulls (``TableWriteImpl`` / ``DefaultValueRow``), writes
into our table the rows stratalake's writer wrote, and the two give the same stored values.

Run by ``make test-paimon-java``; the jars are fetched by Maven on first use.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake import SchemaChange
from stratalake.exceptions import UnsupportedError
from tests.interop_java.paimon_java import read_tables, write_table

pytestmark = pytest.mark.paimon_java


def _printed(table: pa.Table) -> list[tuple[str, ...]]:
    rows = zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True)
    return sorted((str(k), "null" if v is None else str(v)) for k, v in rows)


@pytest.mark.parametrize("release", ["1.2.0", "1.3.1"])
@pytest.mark.parametrize("primary_key", [True, False], ids=["primary-key", "append"])
def test_paimon_java_fills_defaults_as_stratalake_does(
    tmp_path: Path, primary_key: bool, release: str
) -> None:
    """Paimon fills the default into the nulls it writes, as stratalake does: 1.2.0 (where the
    field's ``defaultValue`` and defaults on write arrived) and 1.3.1 alike."""
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=[("id", "BIGINT"), ("v", "STRING", None, "'dflt'")],
        primary_key=["id"] if primary_key else None,
    )
    # PaimonWrite.java's rows: v = prefix + id, null when id % 7 == 0.
    ids = range(0, 20)
    t.write(pa.table({"id": pa.array(ids, pa.int64()), "v": [None if k % 7 == 0 else f"s{k}" for k in ids]}))
    write_table(release, wh, "db.t", primary_key, range(20, 40), "j", {})
    want = sorted((str(k), "dflt" if k % 7 == 0 else f"{'s' if k < 20 else 'j'}{k}") for k in range(0, 40))
    assert _printed(cat.get_table("db.t").read()) == want
    assert read_tables(release, wh, ["db.t"])["db.t"] == want


@pytest.mark.parametrize("release", ["0.9.0", "1.0.1"])
def test_older_releases_read_a_table_with_defaults(tmp_path: Path, release: str) -> None:
    """Before 1.2 a field's ``defaultValue`` key is unknown and skipped; defaults are in the files
    (filled on write), so these releases read the same rows."""
    wh = str(tmp_path / "wh")
    cat = stratalake.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=[("id", "BIGINT"), ("v", "STRING", None, "'dflt'")], primary_key=["id"]
    )
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", None]}))
    assert read_tables(release, wh, ["db.t"])["db.t"] == [("1", "a"), ("2", "dflt")]


def test_the_pre_13_option_is_read_differently_by_paimon_releases(tmp_path: Path) -> None:
    """Why stratalake refuses a table with ``fields.<c>.default-value`` rather than pick a side:
    Paimon 1.2 fills it into nulls on read, Paimon 1.3 ignores it. One schema change turns it into
    a column DEFAULT, after which the table is read (old rows keep their nulls, as in 1.3)."""
    wh = str(tmp_path / "wh")
    write_table(
        "1.2.0", wh, "db.t", True, range(0, 8), "j", {"bucket": "1", "fields.v.default-value": "dflt"}
    )
    assert read_tables("1.2.0", wh, ["db.t"])["db.t"][0] == ("0", "dflt")
    assert read_tables("1.3.1", wh, ["db.t"])["db.t"][0] == ("0", "null")
    cat = stratalake.Catalog(wh)
    with pytest.raises(UnsupportedError, match=r"'fields\.v\.default-value'.*cannot read it"):
        cat.get_table("db.t").read()
    t = cat.alter_table(
        "db.t",
        [
            SchemaChange.update_column_default_value("v", "dflt"),
            SchemaChange.remove_option("fields.v.default-value"),
        ],
    )
    t.write(pa.table({"id": pa.array([100], pa.int64()), "v": pa.array([None], pa.string())}))
    want = sorted([("0", "null"), ("7", "null"), ("100", "dflt")] + [(str(k), f"j{k}") for k in range(1, 7)])
    assert _printed(cat.get_table("db.t").read()) == want
    assert read_tables("1.3.1", wh, ["db.t"])["db.t"] == want
