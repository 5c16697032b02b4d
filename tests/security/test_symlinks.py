"""Item 2 of issue 36: symbolic links inside a table lead neither orphan removal nor writers out.

On main, ``remove_orphan_files`` listed ``bucket-7 -> /elsewhere`` as a directory (pyarrow follows
links) and deleted an old file there; writers wrote through such a link.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.exceptions import UnsupportedError
from stratalake.store.files import delete_in_table, inside_table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
LONG_AGO = 1_000_000_000  # epoch seconds (2001): older than any orphan threshold


def _table(tmp_path: Path) -> stratalake.Table:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})


def _old_file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"someone else's")
    os.utime(path, (LONG_AGO, LONG_AGO))
    return path


def test_orphan_removal_does_not_follow_or_delete_through_links(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.write(pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}))
    elsewhere = _old_file(tmp_path / "elsewhere" / "data-old.parquet")
    target_of_file_link = _old_file(tmp_path / "elsewhere2" / "precious")
    os.symlink(elsewhere.parent, Path(t.location) / "bucket-7")
    os.symlink(target_of_file_link, Path(t.location) / "bucket-0" / "data-link.parquet")
    genuine = _old_file(Path(t.location) / "bucket-0" / "data-orphan.parquet")

    removed = t.remove_orphan_files(older_than_ms=2**62)

    assert removed == [str(genuine)]
    assert not genuine.exists()
    assert elsewhere.exists() and target_of_file_link.exists()
    assert t.read().num_rows == 1


def test_delete_in_table_refuses_paths_leaving_the_table(tmp_path: Path) -> None:
    t = _table(tmp_path)
    outside = _old_file(tmp_path / "elsewhere" / "x")
    os.symlink(outside.parent, Path(t.location) / "bucket-3")
    loc = t.location
    for path in (f"{loc}/bucket-3/x", f"{loc}/../../../elsewhere/x", f"{loc}x/y", str(outside), f"{loc}//x"):
        assert not inside_table(t.file_io, loc, path)
        assert not delete_in_table(t, path)
    assert outside.exists()


def test_writers_do_not_write_through_a_linked_bucket_directory(tmp_path: Path) -> None:
    t = _table(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, Path(t.location) / "bucket-0")
    with pytest.raises(UnsupportedError, match=r"bucket-0 is a symbolic link"):
        t.write(pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}))
    assert list(elsewhere.iterdir()) == []
    assert t.latest_snapshot() is None


def test_readers_do_not_read_through_links(tmp_path: Path) -> None:
    """A link planted in place of a bucket directory or a data file would let a reader with wider
    rights (a compaction, an operator's job) read another table's files into this one."""
    t = _table(tmp_path)
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    bucket = Path(t.location) / "bucket-0"
    (data_file,) = bucket.glob("data-*")
    # The file itself replaced by a link to a copy of it elsewhere: the read is refused.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    copy = elsewhere / data_file.name
    copy.write_bytes(data_file.read_bytes())
    data_file.unlink()
    os.symlink(copy, data_file)
    with pytest.raises(UnsupportedError, match=r"data-.*is a symbolic link; stratalake does not read"):
        t.read()
    # The bucket directory replaced by a link to a directory holding the file: refused as well.
    data_file.unlink()
    bucket.rmdir()
    os.symlink(elsewhere, bucket)
    with pytest.raises(UnsupportedError, match=r"bucket-0 is a symbolic link; stratalake does not read"):
        t.read()
    # Back to real files, the table reads again.
    bucket.unlink()
    bucket.mkdir()
    (bucket / data_file.name).write_bytes(copy.read_bytes())
    assert sorted(t.read().column("id").to_pylist()) == [1, 2]


def test_readers_do_not_read_through_a_linked_partition_directory(tmp_path: Path) -> None:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    t = cat.create_table("db.p", schema=schema, primary_key=["id", "p"], partition_keys=["p"], options={"bucket": "1"})
    t.write(pa.table({"id": pa.array([1], pa.int64()), "p": ["x"]}, schema=schema))
    partition = Path(t.location) / "p=x"
    moved = tmp_path / "elsewhere"
    partition.rename(moved)
    os.symlink(moved, partition)
    with pytest.raises(UnsupportedError, match=r"p=x is a symbolic link; stratalake does not read"):
        t.read()


def test_file_copies_do_not_read_through_links(tmp_path: Path) -> None:
    """A copy (a changelog that is its data file's rows) reads its source like any reader."""
    from stratalake.io.fileio import LocalFileIO

    io = LocalFileIO()
    outside = tmp_path / "outside.parquet"
    outside.write_bytes(b"another table's rows")
    os.symlink(outside, tmp_path / "data-1.parquet")
    with pytest.raises(UnsupportedError, match=r"data-1.parquet is a symbolic link; stratalake does not read"):
        io.copy_file(str(tmp_path / "data-1.parquet"), str(tmp_path / "bucket-0" / "changelog-1.parquet"))
    assert not (tmp_path / "bucket-0" / "changelog-1.parquet").exists()
    (tmp_path / "data-2.parquet").write_bytes(b"rows")
    io.copy_file(str(tmp_path / "data-2.parquet"), str(tmp_path / "bucket-0" / "changelog-2.parquet"))
    assert (tmp_path / "bucket-0" / "changelog-2.parquet").read_bytes() == b"rows"
