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
from stratalake.operation.commit import conflicts

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


def test_catalog_credentials_do_not_show_in_plans(spark: Any, db: str, warehouse: Any) -> None:
    """Issue 36 item 7 (a guard): a catalog's credential options travel to the JVM with every scan
    and write (native reads of S3 need them), but neither EXPLAIN of a read, a write or
    ``t$options``, nor a query's execution string, shows them."""
    from stratalake.spark.session import CATALOG_CLASS

    secret = "S3CRET-VALUE-9f1c"
    spark.conf.set("spark.sql.catalog.lake_creds", CATALOG_CLASS)
    spark.conf.set("spark.sql.catalog.lake_creds.warehouse", str(warehouse))
    spark.conf.set("spark.sql.catalog.lake_creds.s3.secret-key", secret)
    ident, t = _table(warehouse, db, "creds")
    t.write(_rows([1, 2]))
    name = f"lake_creds.{ident}"
    texts = []
    for sql in (
        f"SELECT * FROM {name} WHERE id > 0",
        f"INSERT INTO {name} VALUES (3, 'v3')",
        f"SELECT * FROM {name.rsplit('.', 1)[0]}.`{name.rsplit('.', 1)[1]}$options`",
    ):
        for mode in ("EXTENDED", "FORMATTED"):
            texts.append("\n".join(r[0] for r in spark.sql(f"EXPLAIN {mode} {sql}").collect()))
    df = spark.sql(f"SELECT * FROM {name}")
    assert sorted(r["id"] for r in df.collect()) == [1, 2]
    texts.append(df._jdf.queryExecution().toString())
    leaked = [text[:300] for text in texts if secret in text]
    assert not leaked, leaked
