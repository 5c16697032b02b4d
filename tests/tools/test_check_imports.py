"""tools/check_imports.py fails on the layouts it exists to refuse (so `make lint` can fail)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_imports", REPO / "tools" / "check_imports.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_imports"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"stratalake/__init__.py": "", "pyspark_stratalake/__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_project_layout_passes() -> None:
    assert _checker().check(REPO / "python") == []


def test_a_circle_between_packages_fails(tmp_path: Path) -> None:
    # store and read are placed in layers, but import each other (one of them inside a function).
    root = _tree(tmp_path, {
        "stratalake/store/__init__.py": "",
        "stratalake/store/a.py": "from stratalake.read.b import g\n",
        "stratalake/read/__init__.py": "",
        "stratalake/read/b.py": "def g():\n    from stratalake.store import a  # hidden\n    return a\n",
    })
    errors = _checker().check(root)
    assert any("circle" in e and "stratalake.read" in e and "stratalake.store" in e for e in errors), errors
    assert _checker().main([str(root)]) == 1


def test_a_lower_layer_importing_a_higher_one_fails(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "stratalake/store/__init__.py": "",
        "stratalake/store/a.py": "from stratalake.table.t import Table\n",
        "stratalake/table/__init__.py": "",
        "stratalake/table/t.py": "class Table: ...\n",
    })
    errors = _checker().check(root)
    assert any("higher layer" in e and e.startswith("stratalake.store.a:1") for e in errors), errors


def test_an_unplaced_package_and_an_uncommented_local_import_fail(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "stratalake/newthing/__init__.py": "def f():\n    from stratalake import types\n    return types\n",
        "stratalake/types.py": "",
    })
    checker = _checker()
    assert any("not placed in any layer" in e for e in checker.check(root))
    assert not any("function-local" in e for e in checker.check(root))
    assert any("function-local" in e for e in checker.check(root, strict_local=True))


def test_a_clean_tree_passes(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "stratalake/types.py": "",
        "stratalake/store/__init__.py": "from stratalake import types\n",
        "stratalake/read/__init__.py": "from stratalake.store import types as t\n",
    })
    assert _checker().check(root) == []
