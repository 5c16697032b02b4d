"""Items 4, 5 and 9 of issue 36: local caches and scratch files live in per-user private
directories, never in a shared, predictable ``/tmp`` path that another local user can create
first (to read table data from it, or plant files that are reused by name).

Each test points the temporary directory at its own ``tmp_path`` and plays the other user by
creating the shared path first.
"""

from __future__ import annotations

import os
import stat
import tempfile
import zipfile
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import stratalake
from stratalake.exceptions import CorruptFileError, UnsafeDirectoryError
from stratalake.io import FileIO
from stratalake.lsm.lookup import LocalCopies
from stratalake.operation.compact import bucket_files
from stratalake.table.table import Table

PLANTED = b"import os; os.system('touch /tmp/pwned')\n"


@pytest.fixture
def tmp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary directory (``tempfile.gettempdir()``) for this test: ``tmp_path/tmp``."""
    root = tmp_path / "tmp"
    root.mkdir(mode=0o777)
    root.chmod(0o1777)  # like /tmp: everyone may create entries
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def _assert_private(path: Path) -> None:
    st = os.lstat(path)
    assert stat.S_ISDIR(st.st_mode), path
    assert st.st_uid == os.getuid()
    assert stat.S_IMODE(st.st_mode) == 0o700, f"{path}: mode {stat.S_IMODE(st.st_mode):o}"


# -- item 4: the zips shipped to every executor -------------------------------------------------
def test_executor_zips_go_to_a_private_directory(tmp_dir: Path) -> None:
    from stratalake.spark.session import executor_py_files

    zips = executor_py_files()
    for z in zips:
        _assert_private(Path(z).parent)
        assert f"-{os.getuid()}" in Path(z).parent.name


@pytest.mark.parametrize("planted", ["open", "link", "owner"])
def test_a_planted_executor_cache_directory_is_refused(
    tmp_dir: Path, monkeypatch: pytest.MonkeyPatch, planted: str
) -> None:
    """Another user creates the cache directory first (open to everyone, a link to their own
    directory, or just theirs): stratalake must neither reuse zips found there nor write there."""
    from stratalake.spark.session import executor_py_files

    if planted == "owner":  # play a victim whose user id differs from the directory's owner
        victim = os.getuid() + 1
        monkeypatch.setattr(os, "getuid", lambda: victim)
    shared = tmp_dir / f"stratalake-pyfiles-{os.getuid()}"
    theirs = tmp_dir / "theirs"
    theirs.mkdir(mode=0o700)
    if planted == "link":
        shared.symlink_to(theirs)
    else:
        shared.mkdir(mode=0o700)
        if planted == "open":
            shared.chmod(0o777)
    message = {
        "open": rf"{shared} has mode 0777: other users may read or replace",
        "link": rf"{shared} is a symbolic link or a file, not a directory",
        "owner": rf"{shared} belongs to user id \d+, not to you",
    }[planted]
    with pytest.raises(UnsafeDirectoryError, match=message):
        executor_py_files()
    assert list(theirs.iterdir()) == []


def test_a_tampered_executor_zip_is_rebuilt_not_reused(tmp_dir: Path) -> None:
    from stratalake.spark.session import executor_py_files

    first = executor_py_files()
    target = next(z for z in first if Path(z).name.startswith("stratalake-"))
    with zipfile.ZipFile(target) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    members["stratalake/__init__.py"] = PLANTED  # runs on every executor that imports stratalake
    with zipfile.ZipFile(target, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    assert executor_py_files() == first
    with zipfile.ZipFile(target) as z:
        assert PLANTED not in [z.read(i) for i in z.infolist()]
        ours = Path(str(resources.files("stratalake"))) / "__init__.py"
        assert z.read("stratalake/__init__.py") == ours.read_bytes()


# -- item 5: local copies of remote data files, read by lookups and compactions -------------------
def _remote_lookup_table(tmp_path: Path) -> tuple[Any, Any]:
    """A lookup table written twice (one file per commit, the second larger), and the same table
    seen through a FileIO that is not the local one: it stands in for S3, so reads go through
    local copies."""
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=pa.schema([("k", pa.int64()), ("v", pa.string())]),
        primary_key=["k"],
        options={"bucket": "1", "changelog-producer": "lookup", "num-sorted-run.compaction-trigger": "10"},
    )
    t.write(pa.table({"k": [1, 2], "v": ["real", "real"]}))
    t.write(pa.table({"k": [1, 2, 3], "v": ["forged", "forged", "forged-and-longer"]}))
    return t, Table(FileIO(pafs.LocalFileSystem()), t.location, t.identifier)


def test_lookup_copies_go_to_a_private_directory(tmp_dir: Path, tmp_path: Path) -> None:
    t, remote = _remote_lookup_table(tmp_path)
    files = bucket_files(remote, (), 0)
    first = min(t.live_entries(t.latest_snapshot()), key=lambda e: e.file.max_sequence_number).file
    files.read(first)
    (copies,) = [p for p in tmp_dir.iterdir() if p.name.startswith("stratalake-lookup")]
    _assert_private(copies)
    assert copies.name == f"stratalake-lookup-{os.getuid()}"
    assert any(p.name.endswith(first.file_name) for p in copies.iterdir())


def test_a_planted_lookup_directory_is_refused(tmp_dir: Path, tmp_path: Path) -> None:
    t, remote = _remote_lookup_table(tmp_path)
    shared = tmp_dir / f"stratalake-lookup-{os.getuid()}"
    shared.mkdir()
    shared.chmod(0o777)
    entry = next(iter(t.live_entries(t.latest_snapshot())))
    with pytest.raises(UnsafeDirectoryError, match=rf"{shared} has mode 0777"):
        bucket_files(remote, (), 0).read(entry.file)
    assert list(shared.iterdir()) == []  # no table data was written where others can read it


def test_a_swapped_lookup_copy_is_not_read(tmp_dir: Path, tmp_path: Path) -> None:
    """A copy replaced by another file's bytes (what another user could do in a shared cache) is
    not merged: its size differs from the file's metadata, so it is downloaded again."""
    t, remote = _remote_lookup_table(tmp_path)
    real, forged = sorted(t.live_entries(t.latest_snapshot()), key=lambda e: e.file.max_sequence_number)
    files = bucket_files(remote, (), 0)
    expected = files.read(real.file)
    files.read(forged.file)
    copies = LocalCopies.default(2**40, 3_600_000).directory
    (copy,) = [p for p in Path(copies).iterdir() if p.name.endswith(real.file.file_name)]
    (other,) = [p for p in Path(copies).iterdir() if p.name.endswith(forged.file.file_name)]
    assert copy.stat().st_size != other.stat().st_size
    copy.write_bytes(other.read_bytes())
    assert bucket_files(remote, (), 0).read(real.file).equals(expected)


def test_a_remote_file_whose_size_differs_from_its_metadata_is_corrupt(tmp_dir: Path, tmp_path: Path) -> None:
    t, remote = _remote_lookup_table(tmp_path)
    entry = next(iter(t.live_entries(t.latest_snapshot())))
    files = bucket_files(remote, (), 0)
    with open(files.path(entry.file), "ab") as f:
        f.write(b"appended after the commit")
    with pytest.raises(CorruptFileError, match=rf"data file .*{entry.file.file_name} has \d+ bytes, but its metadata says"):
        files.read(entry.file)


# -- item 9: the log4j config of `stratalake sql` ----------------------------------------------------
def _log4j_of(cmd: list[str]) -> Path:
    (option,) = [c for c in cmd if c.startswith("-Dlog4j2.configurationFile=file:")]
    return Path(option.split("file:", 1)[1])


def test_stratalake_sql_writes_its_log4j_config_privately(tmp_dir: Path, tmp_path: Path) -> None:
    """Another user made the old shared directory first, with a link where the config is
    written: stratalake must not write through it, and its config must be in a private directory."""
    from stratalake.cli import spark_sql_command

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    for shared in (tmp_dir / "stratalake-spark-sql", tmp_dir / f"stratalake-spark-sql-{os.getuid()}"):
        shared.mkdir(mode=0o700)
        (shared / "log4j2.properties").symlink_to(victim)
    private = tmp_dir / f"stratalake-spark-sql-{os.getuid()}"
    cmd, _ = spark_sql_command(str(tmp_path / "wh"), execute="SELECT 1")
    assert victim.read_text() == "precious"
    log4j = _log4j_of(cmd)
    assert log4j.parent == private
    _assert_private(log4j.parent)
    assert not log4j.is_symlink() and "rootLogger.level = error" in log4j.read_text()
    assert stat.S_IMODE(log4j.stat().st_mode) == 0o600
    assert f"spark.sql.warehouse.dir={private}/spark-warehouse" in cmd


def test_stratalake_sql_refuses_a_shared_scratch_directory(tmp_dir: Path, tmp_path: Path) -> None:
    from stratalake.cli import spark_sql_command

    shared = tmp_dir / f"stratalake-spark-sql-{os.getuid()}"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(UnsafeDirectoryError, match=rf"{shared} has mode 0777"):
        spark_sql_command(str(tmp_path / "wh"), execute="SELECT 1")
    assert list(shared.iterdir()) == []
