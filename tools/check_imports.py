"""Import-graph check for the stratalake layout (run by ``make lint``).

Builds the graph of every ``import`` in ``python/stratalake`` and ``python/pyspark_stratalake``
(module level, inside functions and under ``TYPE_CHECKING`` alike) and fails when:

- a package imports a package of a higher layer (see :data:`LAYERS`);
- packages import each other in a circle (even within one layer);
- a package is not placed in any layer (new folders must be given a place);
- with ``--strict-local`` (``make lint`` passes it): a function-local import of a stratalake
  module has no comment saying why it is local (it should only ever defer an import cost, e.g.
  pyspark, or keep an import failure inside a worker's error handling; never hide a cycle).

A "package" is a folder; a module directly under ``stratalake/`` is a package of its own. A
package's ``__init__.py`` counts as part of that package. Standard library only.

Usage: ``python tools/check_imports.py [ROOT]`` (ROOT holds the top-level packages; default
``python/``). ``--graph`` prints the package graph instead of checking it.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

TOP_PACKAGES = ("stratalake", "pyspark_stratalake")

# Layers from the bottom up: a package may import packages of its own layer or lower ones, never a
# higher one, and no two packages may import each other (directly or round a circle). An entry
# ending in ".*" is a package whose subfolders are parts of it: together they count as one.
LAYERS: list[tuple[str, list[str]]] = [
    # Leaf vocabulary: errors, the type system, options, identifiers, predicates.
    ("foundation", ["stratalake.exceptions", "stratalake.types", "stratalake.options",
                    "stratalake.paimon_options", "stratalake.option_support", "stratalake.identifiers", "stratalake.expressions",
                    "stratalake.notebook"]),
    # File access (local, S3) and Paimon's byte-level formats: Avro manifests, binary rows,
    # snapshot and schema JSON, the bucket hash, file names.
    ("io-spec", ["stratalake.io", "stratalake.spec"]),
    # Merge engines, and the LSM tree of one bucket: data files and their codecs, levels,
    # deletion vectors, lookups, the compaction rewriter and strategy.
    ("lsm", ["stratalake.merge.*", "stratalake.lsm", "stratalake.lsm.compaction"]),
    # Changelog producers (input, lookup, full-compaction), run by compactions and reads.
    ("changelog", ["stratalake.changelog"]),
    # The table on storage: the TableStore handle, snapshot/schema/tag/changelog managers,
    # manifests, paths, partitions, index manifests, the append file codec.
    ("store", ["stratalake.store"]),
    # Scan planning and reads: merge-on-read, append reads, change records, statistics pruning.
    ("read", ["stratalake.read"]),
    # Bucket assignment beyond the fixed hash: dynamic buckets, cross-partition upserts.
    ("bucket", ["stratalake.bucket"]),
    # Lifecycle over committed snapshots: expire, orphan files, rollback, tags (commits run
    # expiration, so this sits below the writers).
    ("maintenance", ["stratalake.maintenance"]),
    # Writes: the commit protocol, then the primary-key writer and its bucket compaction.
    ("operation", ["stratalake.operation.commit", "stratalake.operation"]),
    # Append tables: writer, row-level DML, small-file compaction (on the common committer).
    ("append", ["stratalake.append"]),
    # The Table handle (above its operations, as Paimon's FileStoreTable), the compaction job
    # of both table kinds, system tables.
    ("table", ["stratalake.table"]),
    # Catalogs: where databases and tables live.
    ("catalog", ["stratalake.catalog"]),
    # The public face: ``import stratalake``.
    ("api", ["stratalake"]),
    # Servers that expose a catalog to other engines (Paimon's REST catalog protocol).
    ("server", ["stratalake.server"]),
    # Spark integration (the only packages that import pyspark): stratalake.spark, and the
    # package Spark discovers (pyspark_stratalake), a thin entry into it.
    ("spark", ["stratalake.spark", "pyspark_stratalake"]),
    # Notebook magics and the command line, on top of Spark.
    ("tools", ["stratalake.magics", "stratalake.cli"]),
]


@dataclass(frozen=True)
class Import:
    """One import statement's target, seen from a module."""

    source: str  # importing module
    target: str  # imported module (the longest name that is a module of ours)
    line: int
    local: bool  # inside a function
    commented: bool  # a comment on its line or the line above


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(module: str, packages: set[str]) -> str:
    """The package a module counts in: its folder, or the ``pkg.*`` entry of LAYERS that holds
    that folder; a module directly under ``stratalake/`` (``stratalake.types``) is its own."""
    folder = module if module in packages else module.rsplit(".", 1)[0]
    if folder == "stratalake" and module != "stratalake":
        return module
    for _, members in LAYERS:
        for m in members:
            if m.endswith(".*") and (folder == m[:-2] or folder.startswith(m[:-1])):
                return m[:-2]
    return folder


def collect(root: Path) -> tuple[set[str], set[str], list[Import]]:
    """Modules, packages and every internal import under ``root``."""
    files = [p for top in TOP_PACKAGES for p in sorted((root / top).rglob("*.py"))]
    modules = {module_name(root, p) for p in files}
    packages = {module_name(root, p) for p in files if p.name == "__init__.py"}
    imports: list[Import] = []
    for path in files:
        src = path.read_text()
        lines = src.splitlines()
        tree = ast.parse(src, filename=str(path))
        me = module_name(root, path)
        is_pkg = path.name == "__init__.py"
        for node, local in _walk(tree.body, local=False):
            for target in _targets(node, me, is_pkg, modules):
                line = node.lineno
                commented = "#" in lines[line - 1] or (
                    line >= 2 and lines[line - 2].strip().startswith("#"))
                imports.append(Import(me, target, line, local, commented))
    return modules, packages, imports


def _walk(body: Iterable[ast.stmt], local: bool) -> Iterable[tuple[ast.stmt, bool]]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, local
        inner = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for field in ("body", "orelse", "finalbody", "handlers"):
            children = getattr(node, field, None)
            if isinstance(children, list):
                stmts = [c for c in children if isinstance(c, ast.stmt | ast.ExceptHandler)]
                for child in stmts:
                    sub = child.body if isinstance(child, ast.ExceptHandler) else [child]
                    yield from _walk(sub, local or inner)
        if isinstance(node, ast.Match):
            for case in node.cases:
                yield from _walk(case.body, local)


def _targets(node: ast.stmt, me: str, is_pkg: bool, modules: set[str]) -> list[str]:
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = me.split(".") if is_pkg else me.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        # ``from pkg import mod`` imports the module ``pkg.mod``; ``from mod import name`` the module.
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    out = []
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != me:
            out.append(name)
    return out


def layer_index(package: str) -> int | None:
    for i, (_, members) in enumerate(LAYERS):
        for m in members:
            if package == m or (m.endswith(".*") and (package == m[:-2] or package.startswith(m[:-1]))):
                return i
    return None


def package_edges(packages: set[str], imports: Sequence[Import]) -> dict[tuple[str, str], Import]:
    """One witness import per (importing package, imported package) pair."""
    edges: dict[tuple[str, str], Import] = {}
    for imp in imports:
        a, b = package_of(imp.source, packages), package_of(imp.target, packages)
        if a != b:
            edges.setdefault((a, b), imp)
    return edges


def find_cycles(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    graph: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for n in sorted(graph):
        if n not in index:
            visit(n)
    return out


def check(root: Path, strict_local: bool = False) -> list[str]:
    """Every violation of the layout under ``root`` (empty when it holds)."""
    modules, packages, imports = collect(root)
    units = {package_of(m, packages) for m in modules}
    errors: list[str] = []
    for unit in sorted(units):
        if layer_index(unit) is None:
            errors.append(f"{unit}: not placed in any layer (add it to LAYERS in tools/check_imports.py)")
    edges = package_edges(packages, imports)
    for (a, b), imp in sorted(edges.items()):
        la, lb = layer_index(a), layer_index(b)
        if la is not None and lb is not None and lb > la:
            errors.append(f"{imp.source}:{imp.line}: {a} ({LAYERS[la][0]}) imports {b} "
                          f"({LAYERS[lb][0]}), a higher layer")
    for comp in find_cycles(units, edges):
        members = set(comp)
        witnesses = [f"{i.source}:{i.line} -> {i.target}" for (a, b), i in sorted(edges.items())
                     if a in members and b in members]
        errors.append(f"packages import each other in a circle: {', '.join(comp)} ("
                      + "; ".join(witnesses) + ")")
    for imp in imports if strict_local else ():
        if imp.local and not imp.commented:
            errors.append(f"{imp.source}:{imp.line}: function-local import of {imp.target} without "
                          "a comment saying which import cost it defers")
    return errors


def layers_block() -> str:
    """The layer list, top layer first, one line each: its name, then its packages."""
    width = max(len(name) for name, _ in LAYERS)
    lines = [f"{name.ljust(width)}  {' '.join(members)}" for name, members in reversed(LAYERS)]
    return "\n".join(["```", *lines, "```"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parent.parent / "python"))
    parser.add_argument("--graph", action="store_true", help="print the package graph and exit")
    parser.add_argument("--layers", action="store_true",
                        help="print the layers, top first, as ARCHITECTURE.md shows them, and exit")
    parser.add_argument("--strict-local", action="store_true",
                        help="also fail on function-local stratalake imports without a comment")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if args.layers:
        print(layers_block())
        return 0
    if args.graph:
        _, packages, imports = collect(root)
        for (a, b), imp in sorted(package_edges(packages, imports).items()):
            print(f"{a} -> {b}    ({imp.source}:{imp.line}{' local' if imp.local else ''})")
        return 0
    errors = check(root, args.strict_local)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"check_imports: {len(errors)} problem(s)", file=sys.stderr)
        return 1
    print("check_imports: layout ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
