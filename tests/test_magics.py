"""The notebook magics' pieces that need no SparkSession: SQL splitting, rendering, session checks,
the LSM layout and its picture. The magics themselves run in tests/spark/test_magics.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from stratalake.magics import (
    LakeResult,
    SessionNotConfiguredError,
    check_session,
    lsm_layout,
    split_statements,
)
from stratalake.spark.session import CATALOG_CLASS, EXTENSIONS


def test_split_statements_respects_quotes_and_comments() -> None:
    sql = """
    CREATE TABLE t (a STRING COMMENT 'x;y');  -- a comment; with a semicolon
    INSERT INTO t VALUES ('it''s; fine'), ("a;b") /* c; d */ ;
    SELECT `we;ird` FROM t
    """
    assert split_statements(sql) == [
        "CREATE TABLE t (a STRING COMMENT 'x;y')",
        "INSERT INTO t VALUES ('it''s; fine'), (\"a;b\")",
        "SELECT `we;ird` FROM t",
    ]
    assert split_statements(" ;\n; ") == []


def test_result_renders_as_html_and_text() -> None:
    r = LakeResult(["id", "v"], [(1, "<a>"), (2, None)], truncated=True)
    html = r._repr_html_()
    assert "<th>id</th>" in html and "&lt;a&gt;" in html and "NULL" in html
    assert "showing the first 2 rows" in html
    text = repr(r).splitlines()
    assert text[1] == "| id | v    |"
    assert text[3] == "| 1  | <a>  |"
    assert repr(LakeResult([], [], note="OK")) == "OK"


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.getAll = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.getAll.get(key, default)


class _Session:
    def __init__(self, values: dict[str, str]) -> None:
        self.conf = _Conf(values)


def test_unconfigured_session_gets_a_clear_message() -> None:
    with pytest.raises(SessionNotConfiguredError, match=r"extensions are static.*spark\.stop\(\)"):
        check_session(_Session({"spark.master": "local[1]"}))
    ok = {
        "spark.sql.extensions": EXTENSIONS,
        "spark.sql.catalog.lake": CATALOG_CLASS,
        "spark.sql.catalog.lake.warehouse": "/wh",
    }
    assert check_session(_Session(ok)) == {"lake": "/wh"}


def test_lsm_layout_and_picture(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from stratalake.magics import draw_lsm

    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=pa.schema([("id", pa.int64()), ("v", pa.string())]),
        primary_key=["id"],
        options={"bucket": "2", "num-sorted-run.compaction-trigger": "10", "num-levels": "4"},
    )
    for i in range(3):
        t.write(pa.table({"id": list(range(i, i + 20)), "v": ["x"] * 20}))
    layout = lsm_layout(t)
    assert layout.snapshot_id == 3 and [s[1] for s in layout.snapshots] == ["APPEND"] * 3
    assert {b.bucket for b in layout.buckets} == {0, 1}
    assert all(b.sorted_runs == 3 and len(b.files[0]) == 3 for b in layout.buckets)
    t.compact(full=True)
    after = lsm_layout(t)
    assert all(b.sorted_runs == 1 and 0 not in b.files for b in after.buckets)
    fig = draw_lsm(after)
    assert len(fig.axes) == 2
    fig.savefig(tmp_path / "lsm.png")
    assert (tmp_path / "lsm.png").stat().st_size > 1000
