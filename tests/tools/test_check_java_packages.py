"""tools/check_java_packages.py fails on the JVM package layouts it exists to refuse (so `make lint`
can fail), passes the shim as it is, and ARCHITECTURE.md shows the layer list it enforces."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
SRC = "src/main/java/org/stratalake/spark"


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_java_packages", REPO / "tools" / "check_java_packages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_java_packages"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _java(package: str, name: str, body: str = "") -> str:
    full = "org.stratalake.spark" + (f".{package}" if package else "")
    return f"package {full};\n\n{body}\npublic final class {name} {{}}\n"


def test_the_shim_passes() -> None:
    assert _checker().check(REPO / "jvm-shim") == []
    assert _checker().main([str(REPO / "jvm-shim")]) == 0


def test_a_circle_between_packages_fails(tmp_path: Path) -> None:
    # scan and write share a layer, so only the circle is wrong; write names scan in full.
    root = _tree(tmp_path, {
        f"{SRC}/scan/A.java": _java("scan", "A", "import org.stratalake.spark.write.B;\n"),
        f"{SRC}/write/B.java": _java(
            "write", "B", "class C { Object o = new org.stratalake.spark.scan.A(); }\n"),
    })
    errors = _checker().check(root)
    assert any("circle" in e and "spark.scan" in e and "spark.write" in e for e in errors), errors
    assert not any("higher layer" in e for e in errors), errors
    assert _checker().main([str(root)]) == 1


def test_the_old_shim_circle_fails(tmp_path: Path) -> None:
    # The layout before the source package: the catalog's table built scans, scans took it.
    root = _tree(tmp_path, {
        f"{SRC}/catalog/StrataLakeTable.java": _java(
            "catalog", "StrataLakeTable", "import org.stratalake.spark.scan.StrataLakeScanBuilder;\n"),
        f"{SRC}/scan/StrataLakeScanBuilder.java": _java(
            "scan", "StrataLakeScanBuilder", "import org.stratalake.spark.catalog.StrataLakeTable;\n"),
    })
    errors = _checker().check(root)
    assert any(e.startswith(f"{SRC}/scan/StrataLakeScanBuilder.java:3: ") and "higher layer" in e
               for e in errors), errors
    assert any("circle" in e for e in errors), errors


def test_an_upward_use_fails_from_scala_and_static_imports(tmp_path: Path) -> None:
    scala = "package org.stratalake.spark.scan\n\nimport org.stratalake.spark.sql.{X, Y}\n\nclass T\n"
    root = _tree(tmp_path, {
        "src/main/scala/org/stratalake/spark/scan/T.scala": scala,
        f"{SRC}/bridge/J.java": _java("bridge", "J", "import static org.stratalake.spark.fs.L.f;\n"),
        f"{SRC}/fs/L.java": _java("fs", "L"),
        f"{SRC}/sql/X.java": _java("sql", "X"),
    })
    errors = _checker().check(root)
    assert any(e.startswith("src/main/scala/org/stratalake/spark/scan/T.scala:3: ") and "higher layer" in e
               for e in errors), errors
    assert any(e.startswith(f"{SRC}/bridge/J.java:3: ") and "spark.fs (leaf), a higher layer" in e
               for e in errors), errors


def test_wildcard_imports_and_unplaced_packages_fail(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        f"{SRC}/fs/L.java": _java("fs", "L", "import org.stratalake.spark.catalog.*;\n"),
        f"{SRC}/catalog/C.java": _java("catalog", "C"),
        f"{SRC}/newthing/N.java": _java("newthing", "N"),
    })
    errors = _checker().check(root)
    assert any("spark.newthing: not placed in any layer" in e for e in errors), errors
    assert any(e.startswith(f"{SRC}/fs/L.java:3: ") for e in errors), errors


def test_comments_and_strings_are_no_dependency(tmp_path: Path) -> None:
    body = (
        "/** Built by {@link org.stratalake.spark.catalog.C}. */\n"
        "// org.stratalake.spark.catalog.C too\n"
        'class K { String s = "org.stratalake.spark.catalog.C"; char q = \'"\'; }\n'
    )
    root = _tree(tmp_path, {
        f"{SRC}/scan/K.java": _java("scan", "K", body),
        f"{SRC}/catalog/C.java": _java("catalog", "C", "import org.stratalake.spark.scan.K;\n"),
    })
    assert _checker().check(root) == []


def test_chained_scala_package_clauses_are_refused(tmp_path: Path) -> None:
    # `package a.b` then `package c` lets the file name a.b's packages by short name, unseen here.
    scala = "package org.stratalake.spark\npackage scan\n\nimport catalog.C\n\nclass T\n"
    root = _tree(tmp_path, {
        "src/main/scala/org/stratalake/spark/scan/T.scala": scala,
        f"{SRC}/catalog/C.java": _java("catalog", "C"),
    })
    assert _checker().check(root) != []


def test_architecture_doc_shows_the_checked_layers() -> None:
    doc = (REPO / "ARCHITECTURE.md").read_text()
    section = doc.split("## The JVM shim")[1].split("\n## ")[0]
    assert _checker().layers_block() in section, (
        "ARCHITECTURE.md's JVM layer block differs from `python tools/check_java_packages.py --layers`")
    described = set(re.findall(r"^\| `(?:org\.stratalake\.spark)?(\.?[\w.]*)` \| ", section, re.M))
    for _, members in _checker().JAVA_LAYERS:
        for member in members:
            assert (f".{member}" if member else "") in described, f"{member or 'top'} is not described"
