"""The filesystem catalog: ``<warehouse>/<db>.db/<table>``, as Paimon lays it out."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TypeAlias

import pyarrow as pa

from stratalake import identifiers
from stratalake.catalog import registry
from stratalake.catalog.schema_change import SchemaChange, apply_changes
from stratalake.exceptions import (
    CommitConflictError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidIdentifierError,
    InvalidOptionError,
    SchemaError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from stratalake.identifiers import DATABASE, TABLE, check_new_name
from stratalake.io import FileIO
from stratalake.merge import MergeContext, create_merge_function, validate_merge_options
from stratalake.options import CoreOptions
from stratalake.spec.default_value import check_default
from stratalake.spec.schema import TableSchema
from stratalake.store.support import check_supported
from stratalake.table.table import Table
from stratalake.types import ArrayType, DataField, DataType, MapType, MultisetType, RowType, from_arrow

DB_SUFFIX = ".db"
SchemaLike: TypeAlias = (
    pa.Schema
    | Sequence[
        tuple[str, str | DataType]
        | tuple[str, str | DataType, str | None]
        | tuple[str, str | DataType, str | None, str | None]
    ]
)


def parse_identifier(identifier: str) -> tuple[str, str]:
    """Split ``"db.table"``; a bare name means database ``default``.

    Both names are checked (:mod:`stratalake.identifiers`): :class:`InvalidIdentifierError`
    for a name that could not be one directory inside the warehouse.
    """
    return identifiers.split_table_identifier(identifier)


class Catalog:
    """Databases and tables in a warehouse directory (local path or any pyarrow filesystem URI).

    Example::

        cat = stratalake.Catalog("/tmp/warehouse")
        cat.create_database("db", ignore_if_exists=True)
        t = cat.create_table("db.orders", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]),
                             primary_key=["id"], options={"bucket": "2"})

    The ``metastore`` option chooses where the catalog registers databases and tables
    (``filesystem``, the default, is the warehouse directory itself); ``Catalog(...)`` returns the
    class registered for it (:mod:`stratalake.catalog.registry`), so every catalog has this API.
    """

    def __new__(cls, warehouse: str, options: Mapping[str, str] | None = None) -> Catalog:
        if cls is Catalog:
            cls = registry.catalog_class(options)
        return super().__new__(cls)

    def __init__(self, warehouse: str, options: Mapping[str, str] | None = None) -> None:
        if type(self) is Catalog:
            _refuse_metastore_options(options or {})
        self.options = dict(options or {})
        self.file_io = FileIO.get(warehouse, self.options)
        self.warehouse = warehouse.rstrip("/")

    def open_table(self, identifier: str, path: str, schema: TableSchema | None = None) -> Table:
        """The handle of table ``identifier`` stored at ``path``.

        The one place a catalog builds a :class:`Table`: a metastore catalog overrides it to give
        the table a commit lock (a :class:`FileIO` whose atomic create runs under the lock).
        """
        return Table(self.file_io, path, identifier, schema)

    # -- databases ---------------------------------------------------------------------------------
    def database_path(self, name: str) -> str:
        """``<warehouse>/<name>.db``; refused unless ``name`` stays one directory inside it."""
        return identifiers.database_dir(self.warehouse, name)

    def list_databases(self) -> list[str]:
        return sorted(
            s.name[: -len(DB_SUFFIX)]
            for s in self.file_io.list_status(self.warehouse)
            if s.is_dir and s.name.endswith(DB_SUFFIX)
        )

    def database_exists(self, name: str) -> bool:
        return self.file_io.exists(self.database_path(name))

    def create_database(
        self, name: str, ignore_if_exists: bool = False, properties: Mapping[str, str] | None = None
    ) -> None:
        check_new_name(name, DATABASE)
        if self.database_exists(name):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistsError(f"database '{name}' already exists")
        self.file_io.mkdirs(self.database_path(name))

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        if not self.database_exists(name):
            if ignore_if_not_exists:
                return
            raise DatabaseNotFoundError(f"database '{name}' does not exist")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise DatabaseNotEmptyError(
                f"database '{name}' still holds tables {tables}; drop them first or use cascade"
            )
        self.file_io.delete_dir(self.database_path(name))

    # -- tables -----------------------------------------------------------------------------------
    def table_path(self, identifier: str) -> str:
        """``<warehouse>/<db>.db/<table>``; refused unless it stays inside the warehouse."""
        db, name = parse_identifier(identifier)
        return identifiers.table_dir(self.warehouse, db, name)

    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise DatabaseNotFoundError(f"database '{database}' does not exist")
        out = []
        for s in self.file_io.list_status(self.database_path(database)):
            if s.is_dir and self.file_io.exists(f"{s.path}/schema"):
                out.append(s.name)
        return sorted(out)

    def table_exists(self, identifier: str) -> bool:
        db, name = parse_identifier(identifier)
        try:
            base, branch, system = identifiers.split_object_name(name)
        except InvalidIdentifierError:
            return False  # no table or branch has such a name
        if system is None and base != name:  # t$branch_b: the table and its branch
            if not self.table_exists(f"{db}.{base}"):
                return False
            return branch is None or self.get_table(f"{db}.{base}").branch_manager.exists(branch)
        return self.file_io.exists(f"{self.table_path(identifier)}/schema/schema-0") or bool(
            self.file_io.list_status(f"{self.table_path(identifier)}/schema")
        )

    def open_branch(self, identifier: str) -> Table | None:
        """The handle of ``db.t$branch_b`` (from the table's own handle, so a metastore catalog's
        commit lock comes with it); None when ``identifier`` names no branch."""
        db, name = parse_identifier(identifier)
        base, branch, system = identifiers.split_object_name(name)
        if system is not None or base == name:
            return None
        table = self.get_table(f"{db}.{base}")
        return table if branch is None else table.branch(branch)

    def get_table(self, identifier: str) -> Table:
        """Open a table, or a branch of it (``db.t$branch_b``); :class:`TableNotFoundError` if it
        does not exist (:class:`~stratalake.exceptions.BranchNotFoundError` for a branch)."""
        branch = self.open_branch(identifier)
        if branch is not None:
            return branch
        db, name = parse_identifier(identifier)
        if not self.table_exists(identifier):
            raise TableNotFoundError(f"table {db}.{name} does not exist in warehouse {self.warehouse}")
        return self.open_table(f"{db}.{name}", self.table_path(identifier))

    def create_table(
        self,
        identifier: str,
        schema: SchemaLike,
        primary_key: Sequence[str] | None = None,
        partition_keys: Sequence[str] | None = None,
        options: Mapping[str, str] | None = None,
        comment: str | None = None,
        ignore_if_exists: bool = False,
    ) -> Table:
        """Create a primary-key table and return it.

        ``schema`` is an Arrow schema or a list of ``(name, paimon_type[, comment[, default]])``, where
        ``default`` is a column DEFAULT as SQL literal text (``"0"``, ``"'n/a'"``). The primary key
        may also come from the ``primary-key`` option. Options are validated here, so a table with a
        bad option is never created.
        """
        db, name = parse_identifier(identifier)
        full = f"{db}.{name}"
        check_new_name(name, TABLE)
        if not self.database_exists(db):
            raise DatabaseNotFoundError(f"database '{db}' does not exist; create it before table {full}")
        if self.table_exists(full):
            if ignore_if_exists:
                return self.get_table(full)
            raise TableAlreadyExistsError(f"table {full} already exists")
        table_schema = build_schema(full, schema, primary_key, partition_keys, options, comment)
        path = self.table_path(full)
        if not self.open_table(full, path, table_schema).schema_manager.try_commit(table_schema):
            if ignore_if_exists:
                return self.get_table(full)
            raise TableAlreadyExistsError(f"table {full} already exists (created concurrently)")
        return self.open_table(full, path, table_schema)

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        if not self.table_exists(identifier):
            if ignore_if_not_exists:
                return
            raise TableNotFoundError(f"table {identifier} does not exist")
        self.file_io.delete_dir(self.table_path(identifier))

    def rename_table(self, identifier: str, new_identifier: str) -> None:
        check_new_name(parse_identifier(new_identifier)[1], TABLE)
        if not self.table_exists(identifier):
            raise TableNotFoundError(f"table {identifier} does not exist")
        if self.table_exists(new_identifier):
            raise TableAlreadyExistsError(f"table {new_identifier} already exists")
        if not self.file_io.rename(self.table_path(identifier), self.table_path(new_identifier)):
            raise TableAlreadyExistsError(f"cannot rename {identifier} to {new_identifier}")

    def alter_table(self, identifier: str, changes: Sequence[SchemaChange]) -> Table:
        """Apply schema changes as a new schema version; old files stay readable by field id."""
        set_options = {ch.name: ch.value or "" for ch in changes if ch.action == "set_option" and ch.name}
        identifiers.check_options(set_options, identifier)
        for _ in range(10):
            table = self.get_table(identifier)
            new_schema = apply_changes(table.schema(), changes, table.identifier)
            _validate(table.identifier, new_schema)
            _check_fallback_branch(table, new_schema)
            if table.schema_manager.try_commit(new_schema):
                identifiers.warn_unknown_options(set_options, table.identifier)
                if table.current_branch != identifiers.MAIN_BRANCH:  # a branch's own schema changed
                    return table.refresh()
                return self.open_table(table.identifier, table.location, new_schema)
        raise CommitConflictError(
            f"table {identifier}: schema change kept conflicting with concurrent changes"
        )


    # -- repair -----------------------------------------------------------------------------------
    def repair(self, database_or_table: str | None = None) -> None:
        """Paimon's ``repair`` procedure: bring the catalog's metastore in step with storage.

        None or blank repairs every database of the warehouse; otherwise a comma-separated list of
        ``db`` (a database and its tables) and ``db.table`` names. Only catalogs with a metastore
        (Hive) repair; the others refuse, as Paimon's ``Catalog.repair*`` does.
        """
        if database_or_table is None or not database_or_table.strip():
            self.repair_catalog()
            return
        targets = []
        for part in database_or_table.split(","):
            names = part.strip().split(".")
            if len(names) not in (1, 2):
                raise InvalidIdentifierError(
                    f"repair: cannot get a database and table from '{part.strip()}'; give 'db' or "
                    "'db.table' names separated by commas (blank: the whole catalog)"
                )
            targets.append(names)
        for names in targets:  # every name is checked before anything is repaired
            if len(names) == 1:
                self.repair_database(names[0])
            else:
                self.repair_table(f"{names[0]}.{names[1]}")

    def repair_catalog(self) -> None:
        """Re-register every database of the warehouse and its tables (Hive catalog only)."""
        raise self._no_repair()

    def repair_database(self, name: str) -> None:
        """Re-register database ``name`` and the tables under its directory (Hive catalog only)."""
        raise self._no_repair()

    def repair_table(self, identifier: str) -> None:
        """Re-register table ``identifier`` and its partitions from storage (Hive catalog only)."""
        raise self._no_repair()

    def _no_repair(self) -> UnsupportedError:
        kind = str(self.options.get("metastore", "filesystem")).strip().lower() or "filesystem"
        why = _NO_REPAIR.get(kind, "it has no metastore that stratalake re-registers from storage")
        return UnsupportedError(
            f"repair is not supported by the '{kind}' catalog (metastore = '{kind}'): {why}; repair "
            "re-registers tables in a Hive Metastore (metastore = 'hive')"
        )


#: Why a catalog kind does not repair.
_NO_REPAIR = {
    "filesystem": "its databases and tables are the warehouse's directories, so there is nothing to "
    "bring in step (Paimon's filesystem catalog refuses repair too)",
    "jdbc": "stratalake's JDBC catalog does not re-register tables from storage yet (Paimon's "
    "JdbcCatalog does); register a lost table with Paimon's own repair procedure",
    "rest": "the REST server owns its registry (Paimon's REST catalog refuses repair too)",
}


#: Catalog options only a metastore catalog honours; the filesystem catalog refuses them rather than
#: run without the lock or metastore the user asked for.
_METASTORE_ONLY = ("uri", "lock.enabled")


def _refuse_metastore_options(options: Mapping[str, str]) -> None:
    for key in _METASTORE_ONLY:
        value = str(options.get(key, "")).strip()
        if value and not (key == "lock.enabled" and value.lower() == "false"):
            raise InvalidOptionError(
                f"catalog option '{key}' = '{value}' needs a metastore catalog; the filesystem catalog has "
                f"no metastore and no commit lock. Set 'metastore' to one of {registry.metastores()} "
                "(e.g. 'jdbc' with 'uri' = 'jdbc:sqlite:...'), or remove the option"
            )


def build_schema(
    table: str,
    schema: SchemaLike,
    primary_key: Sequence[str] | None,
    partition_keys: Sequence[str] | None,
    options: Mapping[str, str] | None,
    comment: str | None,
) -> TableSchema:
    """The schema-0 of a new table, validated (keys, options, merge engine)."""
    opts = {str(k): str(v) for k, v in (options or {}).items()}
    pk = list(primary_key or [])
    if not pk and opts.get("primary-key"):
        pk = [p.strip() for p in opts["primary-key"].split(",") if p.strip()]
    opts.pop("primary-key", None)
    parts = list(partition_keys or [])
    if not parts and opts.get("partition"):
        parts = [p.strip() for p in opts["partition"].split(",") if p.strip()]
    opts.pop("partition", None)
    identifiers.check_options(opts, table)
    fallback = opts.get(identifiers.FALLBACK_BRANCH, "")
    if fallback.strip():
        # Paimon validates it as any schema commit: a new table has no branch to fall back to.
        raise InvalidOptionError(
            f"table {table}: cannot set '{identifiers.FALLBACK_BRANCH}' = '{fallback}' because the branch "
            f"'{fallback}' does not exist (a new table has no branches); create the table, then the "
            "branch, then set the option (ALTER TABLE ... SET TBLPROPERTIES)"
        )
    identifiers.warn_unknown_options(opts, table)
    # Without a primary key the table is a Paimon append table: bucket-unaware ('bucket' = '-1')
    # unless it names a fixed bucket count and a 'bucket-key' (docs/format.md section 13).
    opts.setdefault("bucket", "1" if pk else "-1")
    columns: list[tuple[str, DataType, str | None, str | None]] = []
    if isinstance(schema, pa.Schema):
        for f in schema:
            columns.append((f.name, from_arrow(f.type, f.nullable), None, None))
    else:
        for item in schema:
            name, type_ = item[0], item[1]
            desc: str | None = item[2] if len(item) > 2 else None  # type: ignore[misc]
            default: str | None = item[3] if len(item) > 3 else None  # type: ignore[misc]
            dt = type_ if isinstance(type_, DataType) else DataType.parse(str(type_))
            columns.append((name, dt, desc, default))
    names = [c[0] for c in columns]
    for kind, keys in (("primary key", pk), ("partition", parts)):
        missing = [k for k in keys if k not in names]
        if missing:
            raise SchemaError(
                f"table {table}: {kind} column(s) {missing} are not columns of the table {names}"
            )
    fields = tuple(
        DataField(i, name, dt.copy(nullable=False) if name in pk else dt, desc, default)
        for i, (name, dt, desc, default) in enumerate(columns)
    )
    # Nested ROW members get table-wide ids after the top-level columns, as Paimon assigns them.
    counter = [len(fields) - 1]
    fields = tuple(replace(f, type=_assign_nested_ids(f.type, counter)) for f in fields)
    table_schema = TableSchema(
        id=0,
        fields=fields,
        highest_field_id=counter[0],
        partition_keys=tuple(parts),
        primary_keys=tuple(pk),
        options=opts,
        comment=comment,
        time_millis=int(time.time() * 1000),
    )
    _validate(table, table_schema)
    return table_schema


def _assign_nested_ids(dt: DataType, counter: list[int]) -> DataType:
    if isinstance(dt, RowType):
        members = []
        for f in dt.fields:
            counter[0] += 1
            members.append(replace(f, id=counter[0], type=_assign_nested_ids(f.type, counter)))
        return replace(dt, fields=tuple(members))
    if isinstance(dt, (ArrayType, MultisetType)):
        return replace(dt, element=_assign_nested_ids(dt.element, counter))
    if isinstance(dt, MapType):
        return replace(
            dt, key=_assign_nested_ids(dt.key, counter), value=_assign_nested_ids(dt.value, counter)
        )
    return dt


def _check_fallback_branch(table: Table, schema: TableSchema) -> None:
    """Paimon's ``SchemaValidation.validateFallbackBranch``, run at every schema commit: a set
    ``scan.fallback-branch`` must name an existing branch (``main`` always exists)."""
    value = schema.options.get(identifiers.FALLBACK_BRANCH)
    if value is None or not value.strip():
        return
    branches = table.branch_manager
    if not branches.exists(value):
        raise InvalidOptionError(
            f"table {table.identifier}: cannot set '{identifiers.FALLBACK_BRANCH}' = '{value}' because the "
            f"branch '{value}' does not exist (branches: {branches.branches()}); create it first "
            "(CALL sys.create_branch, Table.create_branch)"
        )


def _validate(table: str, schema: TableSchema) -> None:
    options = CoreOptions(schema.options, table)
    options.validate()
    # Options that create a table stratalake could then neither read nor write are refused here
    # (the same list that refuses loaded tables, store/support.py).
    check_supported(table, schema, "create")
    for column in schema.fields:
        check_default(table, column)  # as Paimon's CatalogUtils and SchemaManager validate defaults
    if not schema.primary_keys:
        _validate_append(table, schema, options)
        return
    pk = set(schema.primary_keys)
    missing = [p for p in schema.partition_keys if p not in pk]
    if missing and options.bucket != -1:  # dynamic buckets allow cross-partition upserts
        raise SchemaError(
            f"table {table}: with fixed buckets the primary key {list(schema.primary_keys)} must include "
            f"every partition column; add {missing} to the primary key, or use 'bucket' = '-1' (dynamic "
            "buckets, where a key may move between partitions)"
        )
    if not schema.trimmed_primary_keys:
        raise SchemaError(
            f"table {table}: the primary key {list(schema.primary_keys)} must have a column besides the "
            "partition columns"
        )
    for k in schema.bucket_keys:
        if k not in schema.field_names:
            raise SchemaError(f"table {table}: option 'bucket-key' names unknown column '{k}'")
        if k not in schema.trimmed_primary_keys:
            raise SchemaError(
                f"table {table}: option 'bucket-key' column '{k}' must be part of the primary key "
                "(without partition columns) so every version of a key lands in one bucket"
            )
    for f in (*options.sequence_fields, *([options.rowkind_field] if options.rowkind_field else [])):
        if f not in schema.field_names:
            raise SchemaError(f"table {table}: option names unknown column '{f}'")
    ctx = MergeContext.of(schema, options, table)
    validate_merge_options(ctx)
    create_merge_function(ctx)


def _validate_append(table: str, schema: TableSchema, options: CoreOptions) -> None:
    """An append table (no primary key): a fixed bucket count needs a 'bucket-key' to hash rows by
    (as Paimon requires); merge options have no meaning without a key."""
    if options.bucket > 0:
        if not schema.options.get("bucket-key", "").strip():
            raise SchemaError(
                f"table {table}: an append table (no primary key) with 'bucket' = '{options.bucket}' needs "
                "the option 'bucket-key' (the columns rows are hashed by); or use 'bucket' = '-1'"
            )
        for k in schema.bucket_keys:
            if k not in schema.field_names:
                raise SchemaError(f"table {table}: option 'bucket-key' names unknown column '{k}'")
    elif options.bucket != -1:
        raise SchemaError(
            f"table {table}: an append table (no primary key) needs 'bucket' = '-1' (bucket-unaware) or "
            f"a positive bucket count with 'bucket-key', not '{options.bucket}'"
        )
    for key in ("merge-engine", "sequence.field", "rowkind.field", "changelog-producer"):
        value = schema.options.get(key, "").strip()
        if value and not (key == "changelog-producer" and value == "none"):
            raise SchemaError(f"table {table}: option '{key}' needs a primary key; append tables have none")


registry.register(registry.DEFAULT_METASTORE, Catalog)
