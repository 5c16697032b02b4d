"""Spark error text back to stratalake exceptions (no Spark session needed)."""

from __future__ import annotations

import pytest

from stratalake.exceptions import InvalidDataError, InvalidOptionError
from stratalake.spark.errors import stratalake_errors, translate


def test_catalog_error() -> None:
    error = ValueError("[STRATALAKE:InvalidOptionError] table db.t: option 'bucket' is invalid")
    translated = translate(error)
    assert isinstance(translated, InvalidOptionError)
    assert str(translated) == "table db.t: option 'bucket' is invalid"
    assert translated.__cause__ is error


def test_task_error() -> None:
    text = (
        "Job aborted.\nTraceback (most recent call last):\n  File ...\n"
        "stratalake.exceptions.InvalidDataError: table db.t: null primary key in column 'id'\n\n"
        "\tat org.apache.spark..."
    )
    with pytest.raises(InvalidDataError, match="null primary key"), stratalake_errors():
        raise RuntimeError(text)


def test_other_errors_pass_through() -> None:
    error = RuntimeError("[STRATALAKE:NoSuchClass] x")
    assert translate(error) is error
    with pytest.raises(KeyError), stratalake_errors():
        raise KeyError("k")
