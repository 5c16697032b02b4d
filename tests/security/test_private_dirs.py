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

import pytest

from stratalake.exceptions import UnsafeDirectoryError

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
