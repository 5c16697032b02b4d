"""%%lake / %lake / %lake_lsm through IPython's InteractiveShell on the shared SparkSession, and
the example notebook executed headless (its kernel starts its own SparkSession)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def shell(spark: Any) -> Any:
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "stratalake.magics")
    return sh


def test_lake_cell_and_line_magics(shell: Any, db: str, spark: Any) -> None:
    from stratalake.magics import LakeResult

    result = shell.run_cell(
        "%%lake --limit 2 --out top\n"
        f"CREATE TABLE {db}.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED);\n"
        f"INSERT INTO {db}.t VALUES (1, 'a;1'), (2, 'b'), (3, 'c');  -- semicolons in strings are fine\n"
        f"SELECT * FROM {db}.t ORDER BY id\n"
    )
    result.raise_error()
    out = result.result
    assert isinstance(out, LakeResult)
    assert out.rows == [(1, "a;1"), (2, "b")] and out.truncated
    assert "<td>a;1</td>" in out._repr_html_()
    assert shell.user_ns["top"].count() == 3  # --out keeps the whole DataFrame
    line = shell.run_line_magic("lake", f"SELECT count(*) AS n FROM {db}.t")
    assert line.rows == [(3,)] and "| n |" in repr(line)
    assert repr(shell.run_line_magic("lake", f"INSERT INTO {db}.t VALUES (4, 'd')")) == "OK"


def test_lake_lsm_draws_the_table(shell: Any, db: str) -> None:
    pytest.importorskip("matplotlib")
    shell.run_cell_magic("lake", "", f"CREATE TABLE {db}.t (id BIGINT, PRIMARY KEY (id) NOT ENFORCED)")
    for i in range(2):
        shell.run_line_magic("lake", f"INSERT INTO {db}.t VALUES ({i})")
    fig = shell.run_line_magic("lake_lsm", f"{db}.t")
    assert "snapshot 2" in fig.axes[0].get_title()


def test_example_notebook_runs_headless(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("STRATALAKE_WAREHOUSE", str(tmp_path / "wh"))
    monkeypatch.setenv("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON", "python3"))
    nb = nbformat.read(ROOT / "examples" / "lake_magics.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("<table>" in h and "25.0" in h for h in html)
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the %lake_lsm picture
