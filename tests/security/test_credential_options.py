"""Item 7 of issue 36: credentials are refused as table options (they would be stored in
``schema-<n>`` and shown by ``t$options``, readable by anyone who may read the table)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.catalog.schema_change import SchemaChange
from stratalake.exceptions import InvalidOptionError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
SECRET = "wJalrXUtnFEMI-K7MDENG"


@pytest.mark.parametrize(
    "key", ["s3.secret-key", "fs.s3a.secret.key", "fs.s3a.access.key", "s3.session-token", "FS.S3A.Secret.Key"]
)
def test_credential_keys_are_refused_at_create_and_alter(tmp_path: Path, key: str) -> None:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    with pytest.raises(InvalidOptionError, match=rf"table db\.t: option '{key}' is a credential") as info:
        cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={key: SECRET})
    assert SECRET not in str(info.value)
    assert not cat.table_exists("db.t")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"])
    with pytest.raises(InvalidOptionError, match="is a credential"):
        cat.alter_table("db.t", [SchemaChange.set_option(key, SECRET)])
    schemas = list((Path(t.location) / "schema").iterdir())
    assert all(SECRET not in p.read_text() for p in schemas)


def test_ordinary_options_still_pass(tmp_path: Path) -> None:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"s3.region": "eu-west-1"})
    assert t.core_options.get("s3.region") == "eu-west-1"
