"""IPython / Jupyter magics: SQL on stratalake tables, and a picture of a table's LSM.

::

    %load_ext stratalake.magics

    %%lake --limit 10
    CREATE TABLE lake.db.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED);
    INSERT INTO lake.db.t VALUES (1, 'a');
    SELECT * FROM lake.db.t

    %lake SELECT count(*) FROM lake.db.t
    %lake_lsm db.t

``%%lake`` runs each statement of the cell and shows the last one's result (an HTML table in a
notebook, text in a terminal); ``--out df`` keeps that result as a Spark DataFrame in ``df``;
``--warehouse PATH`` chooses the warehouse when the magic starts the SparkSession. An active
session is reused when it is configured for stratalake. ``%lake_lsm`` needs matplotlib (the
``stratalake[notebook]`` extra).
"""

from __future__ import annotations

import html
import os
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stratalake.catalog import Catalog
from stratalake.exceptions import StrataLakeError
from stratalake.notebook import in_notebook
from stratalake.spark import session
from stratalake.spark.session import CATALOG_CLASS, EXTENSIONS

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from stratalake.table import Table

DEFAULT_LIMIT = 20
WAREHOUSE_ENV = "STRATALAKE_WAREHOUSE"


class SessionNotConfiguredError(StrataLakeError):
    """The active SparkSession lacks stratalake's (static) settings."""


# ---- SQL text ----------------------------------------------------------------------------------


def split_statements(sql: str) -> list[str]:
    """The statements of ``sql``, split at semicolons outside quotes and comments."""
    out: list[str] = []
    buf: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in ("'", '"', "`"):
            j = i + 1
            while j < n and sql[j] != c:
                j += 2 if sql[j] == "\\" and c != "`" else 1
            buf.append(sql[i : j + 1])
            i = j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j  # comments are dropped, the newline kept
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j < 0 else j + 2
            buf.append(" ")
        elif c == ";":
            out.append("".join(buf))
            buf = []
            i += 1
        else:
            buf.append(c)
            i += 1
    out.append("".join(buf))
    return [s.strip() for s in out if s.strip()]


# ---- the session -------------------------------------------------------------------------------


def stratalake_catalogs(conf: Any) -> dict[str, str]:
    """``{catalog name: warehouse}`` of the stratalake catalogs in a Spark conf (``spark.conf``)."""
    out = {}
    for key, value in conf.getAll.items() if hasattr(conf, "getAll") else []:
        if key.startswith("spark.sql.catalog.") and key.count(".") == 3 and value == CATALOG_CLASS:
            name = key.rsplit(".", 1)[1]
            out[name] = conf.get(f"{key}.warehouse", "")
    return out


def check_session(spark: Any) -> dict[str, str]:
    """The stratalake catalogs of ``spark``; raises when the session cannot serve stratalake."""
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    catalogs = stratalake_catalogs(spark.conf)
    if EXTENSIONS not in extensions or not catalogs:
        raise SessionNotConfiguredError(
            "the active SparkSession is not configured for stratalake (spark.sql.extensions must "
            f"include {EXTENSIONS} and a catalog such as spark.sql.catalog.lake must be set). "
            "Session extensions are static: stop this session (spark.stop()) and run %lake again, "
            "or build it with stratalake.spark.configure(SparkSession.builder, warehouse)"
        )
    return catalogs


def get_session(warehouse: str | None = None) -> Any:
    """The active SparkSession if it is configured for stratalake, else a new one."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        catalogs = check_session(active)
        if warehouse is not None:
            wanted = _normalise(warehouse)
            if wanted not in {_normalise(w) for w in catalogs.values()}:
                raise SessionNotConfiguredError(
                    f"the active SparkSession serves warehouse(s) {sorted(catalogs.values())}, not "
                    f"{warehouse}; a running session's catalogs cannot change their warehouse: stop "
                    "it (spark.stop()) first, or omit --warehouse"
                )
        return active
    # In a notebook, session() turns Spark's console bar off: Progress shows one instead.
    return session(warehouse or os.environ.get(WAREHOUSE_ENV) or "./warehouse")


def _normalise(path: str) -> str:
    return path if "://" in path else os.path.realpath(os.path.expanduser(path))


# ---- results -----------------------------------------------------------------------------------


@dataclass
class LakeResult:
    """A statement's rows, shown as an HTML table in notebooks and as text in terminals."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False
    note: str = ""

    @classmethod
    def of(cls, df: Any, limit: int) -> LakeResult:
        columns = list(df.columns)
        if not columns:  # DDL, INSERT...: nothing to show
            return cls([], [], note="OK")
        table = df.limit(limit + 1).toArrow()
        rows = [tuple(r.values()) for r in table.to_pylist()]
        return cls(columns, rows[:limit], truncated=len(rows) > limit)

    def _footer(self) -> str:
        if not self.columns:
            return self.note
        n = len(self.rows)
        return f"showing the first {n} rows" if self.truncated else f"{n} row{'s' if n != 1 else ''}"

    def _repr_html_(self) -> str:
        if not self.columns:
            return f"<p>{html.escape(self.note)}</p>"
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_show(v))}</td>" for v in row) + "</tr>" for row in self.rows
        )
        return (
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            f"<p><small>{html.escape(self._footer())}</small></p>"
        )

    def __repr__(self) -> str:
        if not self.columns:
            return self.note
        cells = [[_show(v) for v in row] for row in self.rows]
        widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(self.columns)]
        line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

        def fmt(values: Sequence[str]) -> str:
            return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)) + " |"

        out = [line, fmt(self.columns), line, *(fmt(r) for r in cells), line, self._footer()]
        return "\n".join(out)


def _show(value: Any) -> str:
    return "NULL" if value is None else str(value)


def run_sql(spark: Any, sql: str, limit: int = DEFAULT_LIMIT) -> tuple[Any, LakeResult]:
    """Run every statement of ``sql``; the last one's DataFrame and its rendering."""
    statements = split_statements(sql)
    if not statements:
        raise ValueError("no SQL statement given")
    df = None
    for statement in statements:
        df = spark.sql(statement)
    return df, LakeResult.of(df, limit)


# ---- progress ----------------------------------------------------------------------------------


@dataclass
class StageProgress:
    """The running stages of a statement: ``[(stage id, tasks, completed, running)]``."""

    stages: list[tuple[int, int, int, int]]
    elapsed: float = 0.0

    def _parts(self) -> tuple[int, int, int, str]:
        total = sum(s[1] for s in self.stages)
        done = sum(s[2] for s in self.stages)
        running = sum(s[3] for s in self.stages)
        ids = ", ".join(str(s[0]) for s in self.stages)
        return total, done, running, f"stage{'s' if len(self.stages) != 1 else ''} {ids}"

    def __repr__(self) -> str:
        if not self.stages:
            return ""
        total, done, running, label = self._parts()
        width = 30
        filled = width * done // total if total else 0
        bar = (
            "#" * filled
            + ">" * (filled < width and running > 0)
            + "." * (width - filled - (filled < width and running > 0))
        )
        return f"[{bar}] {done}/{total} tasks ({running} running), {label}, {self.elapsed:.0f} s"

    def _repr_html_(self) -> str:
        if not self.stages:
            return ""
        total, done, running, label = self._parts()
        return (
            f'<progress value="{done}" max="{max(total, 1)}" style="width:24em"></progress> '
            f"<small>{done}/{total} tasks ({running} running), {html.escape(label)}, "
            f"{self.elapsed:.0f} s</small>"
        )


class Progress:
    """While a cell's statements run: one display that updates with the tasks of the running
    stages, shown once a statement has run ``delay`` seconds and removed when the cell ends.

    Only in notebooks (``enabled`` defaults to :func:`in_notebook`). A classic session is polled
    through its status tracker, and its own console bar is stopped, since the kernel would print
    it as text; a Spark Connect session reports progress to a handler registered meanwhile.
    """

    def __init__(
        self,
        spark: Any,
        enabled: bool | None = None,
        delay: float = 1.0,
        interval: float = 0.5,
        display: Any = None,
    ) -> None:
        self.spark = spark
        self.enabled = in_notebook() if enabled is None else enabled
        self.delay = delay
        self.interval = interval
        self._display = display
        self._handle: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.updates = 0

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        self._registered = False
        if not self.enabled:
            return self
        sc = _spark_context(self.spark)
        if sc is not None:
            _stop_console_progress(sc)
            self._thread = threading.Thread(target=self._run, name="stratalake-progress", daemon=True)
            self._thread.start()
        elif hasattr(self.spark, "registerProgressHandler"):  # Spark Connect
            self.spark.registerProgressHandler(self._on_connect_progress)
            self._registered = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._registered:
            self.spark.removeProgressHandler(self._on_connect_progress)
        if self._handle is not None:
            self._handle.update(StageProgress([]))  # done: the bar goes away

    def _on_connect_progress(self, stages: Any, inflight_tasks: int, operation_id: Any, done: bool) -> None:
        elapsed = time.monotonic() - self._started
        if elapsed < self.delay or self._stop.is_set():
            return
        running = [s for s in (stages or []) if not s.done] or list(stages or [])
        rows = [(s.stage_id, s.num_tasks, s.num_completed_tasks, 0) for s in running]
        if rows:
            rows[0] = (*rows[0][:3], inflight_tasks)
        if rows or self._handle is not None:
            self._show(StageProgress(sorted(rows), elapsed))

    def _show(self, progress: StageProgress) -> None:
        if self._handle is None:
            if self._display is not None:
                self._handle = self._display(progress)
            else:
                from IPython import display as ipython_display

                show: Any = ipython_display.display
                self._handle = show(progress, display_id=True)
        else:
            self._handle.update(progress)
        self.updates += 1

    def _run(self) -> None:
        sc = _spark_context(self.spark)
        started = time.monotonic()
        tracker = sc.statusTracker()
        while not self._stop.wait(self.interval):
            elapsed = time.monotonic() - started
            if elapsed < self.delay:
                continue
            try:
                stages = []
                for sid in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(sid)
                    if info is not None:
                        stages.append((sid, info.numTasks, info.numCompletedTasks, info.numActiveTasks))
            except Exception:  # the context stopped under us: nothing more to show
                return
            if stages or self._handle is not None:
                self._show(StageProgress(sorted(stages), elapsed))


def _spark_context(spark: Any) -> Any:
    try:  # a Spark Connect session has no SparkContext (it raises)
        return spark.sparkContext
    except Exception:
        return None


def _stop_console_progress(sc: Any) -> None:
    try:
        bar = sc._jsc.sc().progressBar()
        if bar.isDefined():
            bar.get().stop()
    except Exception:  # not a JVM we can reach; the console bar stays
        pass


# ---- the LSM picture ---------------------------------------------------------------------------


@dataclass
class BucketLayout:
    """One bucket's live files by level; sorted runs = level-0 files + non-empty higher levels."""

    partition: str
    bucket: int
    files: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # level -> [(bytes, rows)]

    @property
    def label(self) -> str:
        return f"{self.partition}/b{self.bucket}" if self.partition else f"bucket {self.bucket}"

    @property
    def sorted_runs(self) -> int:
        return len(self.files.get(0, [])) + sum(1 for level, fs in self.files.items() if level > 0 and fs)


@dataclass
class LsmLayout:
    table: str
    snapshot_id: int | None
    num_levels: int
    compaction_trigger: int
    buckets: list[BucketLayout]
    snapshots: list[tuple[int, str, int]]  # (id, commit kind, delta records), newest last


def lsm_layout(table: Table, last_snapshots: int = 12) -> LsmLayout:
    """What ``%lake_lsm`` draws, from the table's latest snapshot (no Spark needed)."""
    snap = table.latest_snapshot()
    opts = table.core_options
    buckets: dict[tuple[bytes, int], BucketLayout] = {}
    codec = table.partition_codec
    for e in table.live_entries(snap) if snap is not None else []:
        key = (e.partition, e.bucket)
        if key not in buckets:
            buckets[key] = BucketLayout(codec.path(codec.from_bytes(e.partition)), e.bucket)
        buckets[key].files.setdefault(e.file.level, []).append((e.file.file_size, e.file.row_count))
    history = []
    if snap is not None:
        sm = table.snapshot_manager
        earliest = sm.earliest_snapshot_id() or snap.id
        for sid in range(max(earliest, snap.id - last_snapshots + 1), snap.id + 1):
            s = sm.snapshot(sid)
            history.append((s.id, s.commit_kind.name, s.delta_record_count or 0))
    return LsmLayout(
        table.identifier,
        None if snap is None else snap.id,
        opts.num_levels,
        int(opts.get("num-sorted-run.compaction-trigger") or 5),
        [buckets[k] for k in sorted(buckets)],
        history,
    )


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def draw_lsm(layout: LsmLayout) -> Any:
    """A matplotlib Figure: files per level per bucket (box width ~ size), sorted runs, history."""
    try:
        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle
    except ImportError:
        raise ImportError("%lake_lsm draws with matplotlib: pip install 'stratalake[notebook]'") from None

    nb = max(len(layout.buckets), 1)
    fig, (ax, hist) = plt.subplots(
        2, 1, figsize=(10, 1.2 + 0.55 * nb + 2.2), gridspec_kw={"height_ratios": [0.55 * nb + 1, 2.2]}
    )
    levels = layout.num_levels
    largest = max((sum(s for s, _ in fs) for b in layout.buckets for fs in b.files.values()), default=1) or 1
    for row, b in enumerate(layout.buckets):
        y = nb - 1 - row
        for level in range(levels):
            files = b.files.get(level, [])
            total = sum(s for s, _ in files)
            x = float(level)
            for size, _rows in sorted(files, reverse=True):
                # Width within the level's cell is proportional to size, relative to the largest cell.
                w = 0.9 * size / largest
                color = "tab:orange" if level == 0 else "tab:blue"
                ax.add_patch(
                    Rectangle((x + 0.05, y + 0.3), max(w, 0.004), 0.6, color=color, ec="white", lw=0.5)
                )
                x += max(w, 0.004)
            if files:
                ax.text(
                    level + 0.5,
                    y + 0.02,
                    f"{len(files)} · {_size(total)}",
                    ha="center",
                    va="bottom",
                    fontsize=7,
                )
        runs = b.sorted_runs
        warn = runs >= layout.compaction_trigger
        ax.text(
            levels + 0.1,
            y + 0.5,
            f"{runs} run{'s' if runs != 1 else ''}",
            va="center",
            fontsize=8,
            color="tab:red" if warn else "black",
            fontweight="bold" if warn else "normal",
        )
    ax.set_xlim(0, levels + 0.9)
    ax.set_ylim(0, nb)
    ax.set_xticks([level + 0.5 for level in range(levels)], [f"L{level}" for level in range(levels)])
    ax.set_yticks([nb - 1 - i + 0.5 for i in range(len(layout.buckets))], [b.label for b in layout.buckets])
    ax.set_title(
        f"{layout.table} @ snapshot {layout.snapshot_id}: files per level (width ~ size); "
        f"compaction trigger = {layout.compaction_trigger} sorted runs",
        fontsize=9,
    )
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)
    colors = {"APPEND": "tab:green", "COMPACT": "tab:purple", "OVERWRITE": "tab:red"}
    ids = [s[0] for s in layout.snapshots]
    hist.bar(
        [str(i) for i in ids],
        [s[2] for s in layout.snapshots],
        color=[colors.get(s[1], "gray") for s in layout.snapshots],
    )
    hist.set_title(
        "last snapshots: records added (net; green APPEND, purple COMPACT, red OVERWRITE)", fontsize=9
    )
    hist.set_xlabel("snapshot id", fontsize=8)
    fig.tight_layout()
    plt.close(fig)  # shown once by the notebook's display of the return value, not twice
    return fig


# ---- the magics --------------------------------------------------------------------------------


_OPTION = re.compile(r"""\s*--(\w+)(?:\s+|=)("[^"]*"|'[^']*'|\S+)""")
_OPTIONS = ("limit", "out", "warehouse")


def _parse(line: str) -> tuple[dict[str, str], str]:
    """Leading ``--limit N --out VAR --warehouse PATH`` options, and the rest of the line as is."""
    from IPython.core.error import UsageError

    opts: dict[str, str] = {}
    pos = 0
    while (m := _OPTION.match(line, pos)) is not None:
        name, value = m.group(1), m.group(2)
        if name not in _OPTIONS:
            raise UsageError(f"%lake: unknown option --{name}; use --limit N, --out VAR, --warehouse PATH")
        opts[name] = value[1:-1] if value[:1] in "\"'" and len(value) > 1 else value
        pos = m.end()
    rest = line[pos:].strip()
    if rest.startswith("--"):
        raise UsageError(f"%lake: option {rest.split()[0]} needs a value")
    return opts, rest


def _load_magics() -> type:
    from IPython.core.error import UsageError
    from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class

    @magics_class
    class LakeMagics(Magics):
        """``%%lake`` / ``%lake`` SQL and ``%lake_lsm`` LSM pictures."""

        @line_cell_magic
        def lake(self, line: str, cell: str | None = None) -> LakeResult | None:
            opts, rest = _parse(line)
            sql = cell if cell is not None else rest
            if cell is not None and rest:
                raise UsageError(f"%%lake: unexpected text after the options: {rest!r}")
            try:
                limit = int(opts.get("limit", DEFAULT_LIMIT))
            except ValueError:
                raise UsageError(f"%lake: --limit takes a number, not {opts['limit']!r}") from None
            try:
                spark = get_session(opts.get("warehouse"))
            except SessionNotConfiguredError as e:
                raise UsageError(str(e)) from None
            if not split_statements(sql):
                raise UsageError("%lake: no SQL statement given")
            with Progress(spark):
                df, result = run_sql(spark, sql, limit)
            if "out" in opts and self.shell is not None:
                self.shell.user_ns[opts["out"]] = df
            return result

        @line_magic
        def lake_lsm(self, line: str) -> Any:
            opts, rest = _parse(line)
            if not rest:
                raise UsageError("%lake_lsm: name a table, e.g. %lake_lsm db.t")
            table = _table_for(rest.split()[0], opts.get("warehouse"))
            return draw_lsm(lsm_layout(table))

    return LakeMagics


def _table_for(name: str, warehouse: str | None) -> Table:
    """The table ``[catalog.]db.t`` of ``--warehouse``, else of the active session's catalog."""
    parts = name.replace("`", "").split(".")
    catalog = parts[0] if len(parts) == 3 else None
    ident = ".".join(parts[-2:])
    if warehouse is None:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        catalogs = check_session(active) if active is not None else {}
        if catalog is not None and catalog in catalogs:
            warehouse = catalogs[catalog]
        elif catalogs:
            warehouse = next(iter(catalogs.values()))
        else:
            warehouse = os.environ.get(WAREHOUSE_ENV) or "./warehouse"
    table: Table = Catalog(warehouse).get_table(ident)
    return table


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """``%load_ext stratalake.magics``."""
    ipython.register_magics(_load_magics())


def unload_ipython_extension(ipython: InteractiveShell) -> None:  # nothing to release
    return None


__all__: Sequence[str] = [
    "LakeResult",
    "Progress",
    "StageProgress",
    "check_session",
    "draw_lsm",
    "get_session",
    "load_ipython_extension",
    "lsm_layout",
    "run_sql",
    "split_statements",
]
