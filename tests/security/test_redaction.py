"""Item 7 of issue 36 (redaction): credentials given as options are never shown or logged in the
clear, where anyone who may read the table, the log or the plan would see them."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.spark import bridge_contract, bridge_handlers, source_options

SECRET = "wJalrXUtnFEMI-K7MDENG"
CREDENTIALS = {
    "s3.secret-key": SECRET,
    "fs.s3a.secret.key": SECRET,
    "fs.s3a.access.key": SECRET,
    "s3.session-token": SECRET,
    "jdbc.password": SECRET,
}


def _table(tmp_path: Path) -> stratalake.Table:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]), primary_key=["id"])


def test_bridge_log_redacts_catalog_and_source_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """STRATALAKE_BRIDGE_LOG logs every request; requests carry the catalog's options (the
    session's spark.sql.catalog.<name>.* settings), as an object and, inside a scan's source
    options, as a JSON string."""
    t = _table(tmp_path)
    log = tmp_path / "bridge.log"
    monkeypatch.setenv("STRATALAKE_BRIDGE_LOG", str(log))
    catalog = {"warehouse": str(tmp_path / "wh"), "options": {**CREDENTIALS, "s3.region": "eu-west-1"}}
    load = {
        "op": "load_table",
        "protocol": bridge_contract.PROTOCOL_VERSION,
        "catalog": catalog,
        "database": "db",
        "table": "t",
        "version": None,
        "timestamp_micros": None,
    }
    answer = json.loads(bridge_handlers.handle(json.dumps(load)))
    assert "result" in answer, answer
    scan = {
        "op": "count_rows",
        "protocol": bridge_contract.PROTOCOL_VERSION,
        "source_options": {
            source_options.WAREHOUSE: catalog["warehouse"],
            source_options.CATALOG_OPTIONS: json.dumps(catalog["options"]),
            source_options.TABLE: t.identifier,
        },
    }
    assert "result" in json.loads(bridge_handlers.handle(json.dumps(scan)))
    text = log.read_text()
    assert len(text.splitlines()) == 2
    assert SECRET not in text
    assert "eu-west-1" in text and "load_table" in text and "count_rows" in text  # the rest is logged
    assert text.count("*********(redacted)") == 2 * len(CREDENTIALS)
    assert log.stat().st_mode & 0o077 == 0


def test_options_and_schemas_system_tables_redact_stored_credentials(tmp_path: Path) -> None:
    """Credentials are refused as table options now, but a table written before, or by another
    tool, may hold some in its schema file: t$options and t$schemas must not show them."""
    t = _table(tmp_path)
    (schema_file,) = (Path(t.location) / "schema").iterdir()
    raw = json.loads(schema_file.read_text())
    raw["options"] = {**raw.get("options", {}), **CREDENTIALS, "s3.region": "eu-west-1"}
    schema_file.write_text(json.dumps(raw))
    t = stratalake.Catalog(str(tmp_path / "wh")).get_table("db.t")
    options = dict(zip(*(t.system_table("options").column(c).to_pylist() for c in ("key", "value")), strict=True))
    assert options["s3.region"] == "eu-west-1"
    assert {k: options[k] for k in CREDENTIALS} == dict.fromkeys(CREDENTIALS, "*********(redacted)")
    schemas = json.dumps(t.system_table("schemas").to_pylist(), default=str)
    assert SECRET not in schemas and "eu-west-1" in schemas
