"""stratalake.spark.session's pieces that need no SparkSession: the Spark version gate and the
zips shipped to executors (issue 18)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from stratalake.spark.session import (
    UnsupportedSparkVersionError,
    check_spark_version,
    executor_py_files,
)


def test_supported_spark_versions_pass_and_others_are_refused_clearly() -> None:
    check_spark_version("4.2.1")
    check_spark_version("4.3.0")
    check_spark_version()  # the installed pyspark
    with pytest.raises(
        UnsupportedSparkVersionError, match=r"Spark 4\.1\.4 .*lacks pyspark\.sql\.worker\.utils"
    ):
        check_spark_version("4.1.4")
    with pytest.raises(
        UnsupportedSparkVersionError, match=r"Spark 3\.5\.1 .*not built or tested.*4\.2 and 4\.3"
    ):
        check_spark_version("3.5.1")
    with pytest.raises(UnsupportedSparkVersionError, match=r"Spark 4\.4\.0"):
        check_spark_version("4.4.0")


def test_executor_zips_hold_the_packages_and_are_reused(tmp_path: Path) -> None:
    first = executor_py_files(str(tmp_path))
    assert executor_py_files(str(tmp_path)) == first  # same contents, same file
    names = {Path(p).name.split("-")[0]: set(zipfile.ZipFile(p).namelist()) for p in first}
    assert "stratalake/__init__.py" in names["stratalake"]
    assert "pyspark_stratalake/bridge.py" in names["stratalake"]
    assert not any(n.endswith((".jar", ".pyc")) for n in names["stratalake"])
    assert "fastavro/_read_py.py" in names["fastavro"]
    assert not any(n.endswith(".so") for n in names["fastavro"])  # pure-Python fallbacks only


def test_a_driver_configuring_its_session_imports_none_of_the_format() -> None:
    """A Spark driver imports stratalake only to build its session: the table format, the catalogs'
    clients and IPython stay out of its memory (they cost it ~21 MiB); the public table API is
    still one attribute away."""
    import subprocess
    import sys

    probe = (
        "import sys; from stratalake.spark import session, configure; "
        "heavy = ['stratalake.catalog', 'stratalake.table', 'stratalake.spec.avro', 'fastavro', "
        "'pyarrow.parquet', 'pyarrow.fs', 'stratalake.io.fileio', 'IPython', 'sqlite3', 'http.client']; "
        "print([m for m in heavy if m in sys.modules]); "
        "import stratalake; print(stratalake.Catalog.__module__, stratalake.field.__module__, "
        "stratalake.Table.__name__, 'Catalog' in dir(stratalake), stratalake.types.to_arrow.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "stratalake.catalog.filesystem stratalake.expressions Table True to_arrow"]
    with pytest.raises(AttributeError, match="module 'stratalake' has no attribute 'Catalgo'"):
        import stratalake

        stratalake.Catalgo  # noqa: B018
