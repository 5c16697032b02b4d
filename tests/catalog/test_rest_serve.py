"""``stratalake serve`` (the command line of the REST catalog server), and the paging rules its
paged lists follow (a model test)."""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import stratalake
from stratalake.catalog.rest_protocol import RestError, like_pattern, page

ROOT = Path(__file__).resolve().parents[2]


def test_stratalake_serve_serves_a_warehouse(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    stratalake.Catalog(str(wh)).create_database("db")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("STRATALAKE_REST_TOKEN", None)
    cmd = [
        sys.executable,
        "-m",
        "stratalake.cli",
        "serve",
        "--warehouse",
        str(wh),
        "--port",
        "0",
        "--token",
        "tk",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"serving {wh} at http://127.0.0.1:" in line and "bearer token required" in line, line
        url = line.split(" at ", 1)[1].split()[0]
        cat = stratalake.Catalog(
            "lake", {"metastore": "rest", "uri": url, "token.provider": "bear", "token": "tk"}
        )
        assert cat.list_databases() == ["db"]
        cat.create_table("db.t", pa.schema([("id", pa.int64())]), primary_key=["id"]).write(
            pa.table({"id": [1]})
        )
        assert stratalake.Catalog(str(wh)).get_table("db.t").read().to_pylist() == [{"id": 1}]
        with pytest.raises(RestError, match="401"):
            stratalake.Catalog(
                "lake", {"metastore": "rest", "uri": url, "token.provider": "bear", "token": "x"}
            )
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_serve_refuses_a_malformed_catalog_option(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [
        sys.executable,
        "-m",
        "stratalake.cli",
        "serve",
        "--warehouse",
        str(tmp_path),
        "--catalog-option",
        "nokey",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode != 0 and "--catalog-option 'nokey' is not KEY=VALUE" in proc.stderr


names = st.lists(st.text(alphabet="abcxyz_%0", min_size=1, max_size=4), unique=True, max_size=12)


@given(names=names, size=st.integers(min_value=0, max_value=6))
def test_pages_cover_every_name_once_in_order(names: list[str], size: int) -> None:
    seen: list[str] = []
    token = None
    for _ in range(len(names) + 2):
        chosen, token = page(names, size, token)
        assert size <= 0 or len(chosen) <= size
        seen += chosen
        if token is None:
            break
    assert seen == sorted(names)


@given(names=names, pattern=st.text(alphabet="abc%_", max_size=4))
def test_like_patterns_match_as_sql_like(names: list[str], pattern: str) -> None:
    glob = "".join("*" if c == "%" else "?" if c == "_" else "[" + c + "]" for c in pattern)
    for n in names:
        assert bool(like_pattern(pattern).fullmatch(n)) == fnmatch.fnmatchcase(n, glob), (n, pattern)
