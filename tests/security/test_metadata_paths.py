"""Item 1 of issue 36: names and paths inside a table's metadata cannot reach outside the table.

A crafted commit message (or a manifest written directly into the table directory by someone who
may write the table) names ``../../..`` paths or an ``external_path``; the committer refuses it, and
if such metadata is on disk anyway, reads fail with ``CorruptFileError`` and expiration, orphan
removal and aborts never delete anything outside the table.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.exceptions import CorruptFileError
from stratalake.operation.commit import CommitMessage, InvalidCommitError, conflicts
from stratalake.spec.snapshot import Snapshot
from stratalake.store import manifests

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _catalog(tmp_path: Path) -> stratalake.Catalog:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def _table(cat: stratalake.Catalog, name: str = "t", **options: str) -> stratalake.Table:
    return cat.create_table(
        f"db.{name}", schema=SCHEMA, primary_key=["id"], options={"bucket": "1", **options}
    )


# Expiration after every commit keeps one snapshot: it deletes what the previous one referenced.
EXPIRE_EAGERLY = {
    "snapshot.num-retained.min": "1",
    "snapshot.num-retained.max": "1",
    "snapshot.time-retained": "1 ms",
}


def _rows(ids: list[int], tag: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]})


def _prepared(t: stratalake.Table, rows: pa.Table) -> list[CommitMessage]:
    w = t.new_write()
    w.write(rows)
    return w.prepare_commit()


def _victims(tmp_path: Path) -> list[Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    out = []
    for name in ("victim-1.parquet", "victim-2.parquet"):
        p = outside / name
        p.write_bytes(b"not the table's")
        out.append(p)
    return out


def _crafted(t: stratalake.Table, tmp_path: Path) -> list[CommitMessage]:
    """A real write whose file metas name two files outside the warehouse: one by ``..`` segments
    (from ``wh/db.db/t/bucket-0``), one as an external path."""
    (m,) = _prepared(t, _rows([1, 2], "a"))
    f = m.new_files[0]
    dotdot = replace(f, file_name="../../../../outside/victim-1.parquet")
    external = replace(f, file_name="data-x.parquet", external_path=str(tmp_path / "outside" / "victim-2.parquet"))
    return [replace(m, new_files=(dotdot, external))]


def test_commit_refuses_file_names_outside_the_table(tmp_path: Path) -> None:
    victims = _victims(tmp_path)
    t = _table(_catalog(tmp_path), **EXPIRE_EAGERLY)
    t.write(_rows([0], "x"))
    with pytest.raises(InvalidCommitError, match=r"db\.t.*not a single file name"):
        t.new_commit().commit(_crafted(t, tmp_path))
    # The refused commit's abort must not delete what its messages name either.
    assert all(v.exists() for v in victims)
    assert t.latest_snapshot().id == 1  # type: ignore[union-attr]


def test_external_path_in_a_message_is_refused(tmp_path: Path) -> None:
    """A second table must not read another table's rows through an external path."""
    cat = _catalog(tmp_path)
    t1, t2 = _table(cat, "t1"), _table(cat, "t2")
    t1.write(_rows([7], "secret"))
    (e1,) = t1.live_entries(t1.latest_snapshot())  # type: ignore[arg-type]
    other = f"{t1.location}/bucket-0/{e1.file.file_name}"
    (m,) = _prepared(t2, _rows([1], "b"))
    f = replace(m.new_files[0], file_name="data-y.parquet", external_path=other)
    with pytest.raises(InvalidCommitError, match="external path"):
        t2.new_commit().commit([replace(m, new_files=(f,))])
    assert t2.read().num_rows == 0
    assert Path(other).exists()


def test_crafted_metadata_on_disk_fails_safely(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Metadata written by another tool (the commit-time check bypassed), then deleted by an
    overwrite: expiration (which also runs after every commit) and orphan removal delete nothing
    outside the table, and reads fail naming the manifest."""
    victims = _victims(tmp_path)
    t = _table(_catalog(tmp_path), **EXPIRE_EAGERLY)
    with monkeypatch.context() as m:
        m.setattr(conflicts, "check_file_names", lambda *_a: None, raising=False)
        t.new_commit().commit(_crafted(t, tmp_path))
        t.write(_rows([1, 2], "c"), overwrite=True)  # DELETEs the crafted entries
        t.write(_rows([3], "d"))
    assert all(v.exists() for v in victims)  # expiration after those commits deleted nothing outside
    manifests._CACHE._data.clear()  # as another process: decoded from the files, not this writer's cache
    with pytest.raises(CorruptFileError, match=r"manifest-.*not a single file name"):
        t.read(snapshot_id=1)
    with pytest.raises(CorruptFileError, match=r"not a single file name"):
        t.expire_snapshots(retain_max=1, retain_min=1, older_than_ms=2**62)
    with pytest.raises(CorruptFileError, match=r"not a single file name"):
        t.remove_orphan_files(older_than_ms=2**62)
    assert all(v.exists() for v in victims)


def test_snapshot_naming_a_manifest_outside_is_corrupt(tmp_path: Path) -> None:
    t = _table(_catalog(tmp_path))
    t.write(_rows([1], "a"))
    snap = t.latest_snapshot()
    assert snap is not None
    crafted = replace(snap, base_manifest_list="../../other.db/t/manifest/manifest-list-x")
    with pytest.raises(CorruptFileError, match=r"base manifest list.*not a single file name"):
        Snapshot.from_json(crafted.to_json(), origin="snapshot-9")
    for name in ("a/b", "..", "s3:x", "a\\b", "x\x00", "%2e%2e", ""):
        with pytest.raises(CorruptFileError):
            t.manifest_io.path(name)
