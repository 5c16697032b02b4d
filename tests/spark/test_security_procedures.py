"""Issue 36 through Spark SQL: ``CALL lake.sys.*`` procedures keep to the table they are given.

The Python API's tests are in tests/security/; these run the same attacks through the paths that
exist only in Spark (the procedures, run by the catalog's Python worker), on the shared session.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from stratalake.catalog import Catalog
from stratalake.table.commit import conflicts

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _table(warehouse: Any, db: str, name: str) -> tuple[str, Any]:
    ident = f"{db.removeprefix('lake.')}.{name}"
    return ident, Catalog(str(warehouse)).create_table(ident, schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]})


def test_delete_tag_refuses_a_tag_name_that_is_a_path(spark: Any, db: str, warehouse: Any) -> None:
    ident, t = _table(warehouse, db, "tags")
    t.write(_rows([1]))
    # tag/tag-<name>: these names lead to <table>/x and to x next to the table.
    victims = {"/../../x": Path(t.location) / "x", "/../../../x": Path(t.location).parent / "x"}
    for victim in victims.values():
        victim.write_bytes(b"not a tag")
    for name, victim in victims.items():
        with pytest.raises(Exception, match=rf"'{re.escape(name)}' is not a valid tag name"):
            spark.sql(f"CALL lake.sys.delete_tag(table => '{ident}', tag => '{name}')").collect()
        assert victim.read_bytes() == b"not a tag"


def test_expire_and_orphan_removal_leave_files_named_outside_the_table(
    spark: Any, db: str, warehouse: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Metadata written by another tool names files outside the table (by ``..`` and as an
    external path), then an overwrite deletes those entries: expiring that snapshot or removing
    orphans must delete neither file."""
    ident, t = _table(warehouse, db, "crafted")
    outside = tmp_path / "outside"
    outside.mkdir()
    victims = [outside / "victim-1.parquet", outside / "victim-2.parquet"]
    for v in victims:
        v.write_bytes(b"not the table's")
    w = t.new_write()
    w.write(_rows([1, 2]))
    (m,) = w.prepare_commit()
    f = m.new_files[0]
    depth = len(Path(f"{t.location}/bucket-0").relative_to(tmp_path.anchor).parts)
    dotdot = replace(f, file_name="../" * depth + str(victims[0]).lstrip("/"))
    external = replace(f, file_name="data-x.parquet", external_path=str(victims[1]))
    with monkeypatch.context() as patch:  # the other tool: no commit-time check
        patch.setattr(conflicts, "check_file_names", lambda *_a: None, raising=False)
        t.new_commit().commit([replace(m, new_files=(dotdot, external))])
    t.write(_rows([3]), overwrite=True)  # DELETEs the crafted entries
    t.write(_rows([4]))
    future = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() + 60))
    for call in (
        f"CALL lake.sys.expire_snapshots(table => '{ident}', retain_max => 1)",
        f"CALL lake.sys.remove_orphan_files(table => '{ident}', older_than => '{future}')",
    ):
        with pytest.raises(Exception, match="not a single file name"):
            spark.sql(call).collect()
        assert all(v.read_bytes() == b"not the table's" for v in victims), call
