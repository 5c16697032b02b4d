"""Option keys neither Paimon nor stratalake knows: kept (as Paimon keeps them), with a warning
naming the closest known key, at CREATE and ALTER ... SET only."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.catalog.schema_change import SchemaChange

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_unknown_keys_warn_with_the_closest_key_and_are_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    with caplog.at_level(logging.WARNING, logger="stratalake"):
        t = cat.create_table(
            "db.t",
            schema=SCHEMA,
            primary_key=["id"],
            options={
                "changelog-prodcuer": "input",  # a typo: silently no changelog without the warning
                "zzz-unrelated": "1",
                # Known: Paimon's core and connector keys, prefixed keys, stratalake's own.
                "consumer.expiration-time": "1 d",
                "sink.parallelism": "2",
                "fields.v.aggregate-function": "last_value",
                "parquet.block.size": "1048576",
                "parquet.delta-keys": "false",
            },
        )
    messages = _warnings(caplog)
    assert len(messages) == 3, messages
    assert (
        "option 'changelog-prodcuer'" in messages[0] and "did you mean 'changelog-producer'?" in messages[0]
    )
    assert "table db.t" in messages[0]
    assert "option 'zzz-unrelated'" in messages[1] and "did you mean" not in messages[1]
    # A known key of Paimon's Parquet library: kept, and named as changing nothing here.
    assert "option(s) 'parquet.block.size' tune" in messages[2] and "change nothing" in messages[2]
    assert t.options()["changelog-prodcuer"] == "input"  # kept, as Paimon keeps unknown keys

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="stratalake"):
        t = cat.alter_table(
            "db.t",
            [
                SchemaChange.set_option("bucket-keys", "id"),
                SchemaChange.set_option("snapshot.num-retained.max", "5"),
            ],
        )
    messages = _warnings(caplog)
    assert len(messages) == 1 and "option 'bucket-keys'" in messages[0] and "'bucket-key'" in messages[0]
    assert t.options()["bucket-keys"] == "id"

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="stratalake"):
        cat.get_table("db.t").read()
    assert _warnings(caplog) == []  # loads and reads stay quiet: the user heard it when setting it
