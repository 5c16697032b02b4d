"""The REST catalog client (``metastore = rest``): databases and tables registered by a Paimon
REST catalog server (``stratalake serve``, or any server of Paimon's REST protocol).

Options (as Paimon's ``RESTCatalog``): ``uri`` (the server, e.g. ``http://127.0.0.1:8080``),
``warehouse`` (the warehouse name sent to ``GET /v1/config``; by default the catalog's
``warehouse`` argument), ``token.provider`` (``bear``) and ``token``; ``header.<name>`` options
are sent as HTTP headers. The server's config answer gives the path ``prefix``. Options of
Paimon's REST client that stratalake does not honour (DLF signing ``dlf.*``, vended data tokens
``data-token.enabled``, FUSE paths ``fuse.*``) are refused by name.

Data and metadata files are read and written at the table location the server returns. Commits
follow Paimon's REST clients (Java ``RESTCatalog.supportsVersionManagement()`` is true, and
pypaimon's ``RESTCatalog`` commits through ``CatalogSnapshotCommit``): a writer writes its data
files and manifests itself, then hands the snapshot to the server's ``commit`` endpoint, which
publishes ``snapshot-<id>`` (a refused commit is retried on the new latest snapshot, as any
lost race). Every other file (schema, tags) is written directly, as Paimon's clients do.
"""

from __future__ import annotations

import copy
import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from stratalake import identifiers
from stratalake.catalog import registry
from stratalake.catalog import rest_protocol as proto
from stratalake.catalog.filesystem import Catalog, SchemaLike, build_schema, parse_identifier
from stratalake.catalog.schema_change import SchemaChange
from stratalake.exceptions import (
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidOptionError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from stratalake.identifiers import DATABASE, TABLE, check_new_name
from stratalake.io import FileIO, WriteOutcomeUnknownError
from stratalake.spec.schema import TableSchema
from stratalake.table.table import Table

URI = "uri"
WAREHOUSE = "warehouse"
TOKEN_PROVIDER = "token.provider"
TOKEN = "token"
HEADER_PREFIX = "header."
TIMEOUT_SECONDS = 60.0

# Paimon REST client options stratalake does not honour: refused rather than silently ignored.
_REFUSED_PREFIXES = {
    "dlf.": "DLF request signing (token.provider 'dlf')",
    "fuse.": "FUSE-mounted table paths",
}
_REFUSED_TRUE = {"data-token.enabled": "vended data tokens (the server's temporary storage credentials)"}
_PAGE = 1000


class RestCatalog(Catalog):
    """A catalog whose databases and tables a Paimon REST catalog server registers.

    Example::

        cat = stratalake.Catalog("wh", {"metastore": "rest", "uri": "http://127.0.0.1:8080",
                                        "token.provider": "bear", "token": "secret"})
    """

    def __init__(self, warehouse: str, options: Mapping[str, str] | None = None) -> None:
        self.options = {str(k): str(v) for k, v in (options or {}).items()}
        _check_options(self.options)
        uri = self.options.get(URI, "").strip()
        if not uri.startswith(("http://", "https://")):
            raise InvalidOptionError(
                f"catalog option '{URI}' = {uri!r}: the REST catalog needs the server's http:// or https:// URI"
            )
        self.uri = uri.rstrip("/")
        self.warehouse = self.options.get(WAREHOUSE) or warehouse.rstrip("/")
        self._headers = {
            k[len(HEADER_PREFIX) :]: v for k, v in self.options.items() if k.startswith(HEADER_PREFIX)
        }
        token = self.options.get(TOKEN)
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        config = self._call(
            "GET", f"/{proto.V1}/config?" + urlencode({WAREHOUSE: self.warehouse}), what="config"
        )
        merged = {**dict(config.get("defaults") or {}), **self.options, **dict(config.get("overrides") or {})}
        prefix = str(merged.get("prefix") or "")
        self._base = f"/{proto.V1}/{proto.encode(prefix)}" if prefix else f"/{proto.V1}"
        self._file_ios: dict[str, FileIO] = {}
        self._table_ids: dict[str, str | None] = {}  # table location -> the server's table id

    # -- HTTP -----------------------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: Any = None, what: str = "request") -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json", **self._headers}
        req = urllib.request.Request(self.uri + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_SECONDS) as resp:
                text = resp.read()
        except urllib.error.HTTPError as e:
            raise proto.exception_of(_rest_error(e), what) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            raise _Unreachable(0, f"REST catalog at {self.uri}: {what}: {e}") from e
        return json.loads(text) if text.strip() else None

    def _paged(self, path: str, key: str, what: str) -> list[str]:
        out: list[str] = []
        token: str | None = None
        while True:
            query = {proto.MAX_RESULTS: str(_PAGE), **({proto.PAGE_TOKEN: token} if token else {})}
            resp = self._call("GET", f"{path}?{urlencode(query)}", what=what)
            out.extend(str(n) for n in resp.get(key) or [])
            token = resp.get("nextPageToken")
            if not token or not resp.get(key):
                return out

    def _db_path(self, name: str) -> str:
        identifiers.check_name(name, DATABASE)
        return f"{self._base}/{proto.DATABASES}/{proto.encode(name)}"

    def _table_path(self, identifier: str) -> str:
        db, name = parse_identifier(identifier)
        return f"{self._db_path(db)}/{proto.TABLES}/{proto.encode(name)}"

    # -- databases --------------------------------------------------------------------------------------

    def database_path(self, name: str) -> str:
        """The database's location, as the server reports it."""
        return str(self._get_database(name).get("location") or "")

    def _get_database(self, name: str) -> dict[str, Any]:
        resp = self._call("GET", self._db_path(name), what=f"get database '{name}'")
        return dict(resp or {})

    def list_databases(self) -> list[str]:
        return sorted(self._paged(f"{self._base}/{proto.DATABASES}", "databases", "list databases"))

    def database_exists(self, name: str) -> bool:
        try:
            self._get_database(name)
        except DatabaseNotFoundError:
            return False
        return True

    def database_properties(self, name: str) -> dict[str, str]:
        """The database's properties, as the server stores them."""
        return {str(k): str(v) for k, v in (self._get_database(name).get("options") or {}).items()}

    def create_database(
        self, name: str, ignore_if_exists: bool = False, properties: Mapping[str, str] | None = None
    ) -> None:
        check_new_name(name, DATABASE)
        body = {"name": name, "options": dict(properties or {})}
        try:
            self._call("POST", f"{self._base}/{proto.DATABASES}", body, what=f"create database '{name}'")
        except DatabaseAlreadyExistsError:
            if not ignore_if_exists:
                raise

    def alter_database(self, name: str, updates: Mapping[str, str], removals: Sequence[str] = ()) -> None:
        """Set ``updates`` and remove ``removals`` among the database's properties."""
        body = {"removals": list(removals), "updates": dict(updates)}
        self._call("POST", self._db_path(name), body, what=f"alter database '{name}'")

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        # As Paimon's REST clients: emptiness is checked here, the server's drop cascades.
        try:
            tables = self.list_tables(name)
        except DatabaseNotFoundError:
            if ignore_if_not_exists:
                return
            raise
        if tables and not cascade:
            raise DatabaseNotEmptyError(
                f"database '{name}' still holds tables {tables}; drop them first or use cascade"
            )
        try:
            self._call("DELETE", self._db_path(name), what=f"drop database '{name}'")
        except DatabaseNotFoundError:
            if not ignore_if_not_exists:
                raise

    # -- tables -----------------------------------------------------------------------------------------

    def table_path(self, identifier: str) -> str:
        """The table's location, as the server reports it."""
        return str(self._get_table(identifier)["path"])

    def _get_table(self, identifier: str) -> dict[str, Any]:
        try:
            return dict(self._call("GET", self._table_path(identifier), what=f"get table {identifier}"))
        except DatabaseNotFoundError as e:  # a table of a missing database is a missing table
            raise TableNotFoundError(str(e)) from None

    def list_tables(self, database: str) -> list[str]:
        path = f"{self._db_path(database)}/{proto.TABLES}"
        return sorted(self._paged(path, "tables", f"list tables of database '{database}'"))

    def table_exists(self, identifier: str) -> bool:
        try:
            self._get_table(identifier)
        except TableNotFoundError:
            return False
        return True

    def get_table(self, identifier: str) -> Table:
        """Open a table at the location the server returns; :class:`TableNotFoundError` if absent."""
        db, name = parse_identifier(identifier)
        if identifiers.split_object_name(name)[1] is not None:
            raise UnsupportedError(f"table {db}.{name}: {_NO_BRANCHES}")
        resp = self._get_table(f"{db}.{name}")
        self._table_ids[str(resp["path"])] = resp.get("id")
        return self.open_table(f"{db}.{name}", str(resp["path"]))

    def open_table(self, identifier: str, path: str, schema: TableSchema | None = None) -> Table:
        """The table at ``path``, whose snapshots are published through the server's commit endpoint."""
        inner = self._file_ios.get(path)
        if inner is None:
            inner = self._file_ios[path] = FileIO.get(path, self.options)
        table_id = self._table_ids.get(path)
        file_io = _catalog_commit_io(inner, path, lambda data: self._commit(identifier, table_id, data))
        table = Table(file_io, path, identifier, schema)
        table.branches_refused = _NO_BRANCHES
        return table

    def _commit(self, identifier: str, table_id: str | None, snapshot_json: bytes) -> bool:
        # As Paimon's clients, the commit names the table id it loaded, so a server refuses a
        # commit meant for a table that was dropped (and maybe made again) since.
        body: dict[str, Any] = {"snapshot": json.loads(snapshot_json), "statistics": []}
        if table_id is not None:
            body["tableId"] = table_id
        try:
            resp = self._call(
                "POST", f"{self._table_path(identifier)}/commit", body, what=f"commit to {identifier}"
            )
        except _Unreachable as e:
            # The request may have reached the server: the committer reads the snapshot back.
            raise WriteOutcomeUnknownError(f"REST catalog: commit to {identifier}: {e}") from e
        return bool((resp or {}).get("success"))

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
        """Create a table through the server (validated here first, so a bad one is never sent)."""
        db, name = parse_identifier(identifier)
        full = f"{db}.{name}"
        check_new_name(name, TABLE)
        table_schema = build_schema(full, schema, primary_key, partition_keys, options, comment)
        body = {"identifier": {"database": db, "object": name}, "schema": proto.schema_to_json(table_schema)}
        try:
            self._call("POST", f"{self._db_path(db)}/{proto.TABLES}", body, what=f"create table {full}")
        except TableAlreadyExistsError:
            if not ignore_if_exists:
                raise
        return self.get_table(full)

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        try:
            self._call("DELETE", self._table_path(identifier), what=f"drop table {identifier}")
        except (TableNotFoundError, DatabaseNotFoundError):
            if not ignore_if_not_exists:
                raise

    def rename_table(self, identifier: str, new_identifier: str) -> None:
        src_db, src = parse_identifier(identifier)
        dst_db, dst = parse_identifier(new_identifier)
        check_new_name(dst, TABLE)
        body = {
            "source": {"database": src_db, "object": src},
            "destination": {"database": dst_db, "object": dst},
        }
        self._call("POST", f"{self._base}/{proto.TABLES}/rename", body, what=f"rename table {identifier}")

    def alter_table(self, identifier: str, changes: Sequence[SchemaChange]) -> Table:
        """Apply schema changes through the server (Paimon's ``AlterTableRequest``)."""
        body = {"changes": [proto.change_to_json(c) for c in changes]}
        self._call("POST", self._table_path(identifier), body, what=f"alter table {identifier}")
        return self.get_table(identifier)


class _Unreachable(proto.RestError):
    """The server did not answer (refused connection, timeout, dropped connection)."""


_SNAPSHOT_FILE = re.compile(r"/snapshot/snapshot-\d+$")


# A branch's commits would reach the server as the table's (its commit endpoint names the table).
_NO_BRANCHES = (
    "branches of a table in a REST catalog are managed by the server, which stratalake's REST "
    "client does not support yet; use a filesystem, JDBC or Hive catalog on the same warehouse"
)


def _catalog_commit_io(inner: FileIO, location: str, commit: Callable[[bytes], bool]) -> FileIO:
    """``inner``, except that creating ``<location>/snapshot/snapshot-<id>`` is the catalog's
    commit (the one call the commit protocol publishes a snapshot with, ``SnapshotManager.try_commit``)."""
    io = copy.copy(inner)
    prefix = location.rstrip("/")
    create = inner.try_create_atomic

    def try_create_atomic(path: str, data: bytes, precondition: Callable[[], bool] | None = None) -> bool:
        if not (path.startswith(prefix) and _SNAPSHOT_FILE.search(path[len(prefix) :])):
            return create(path, data, precondition)
        if precondition is not None and not precondition():
            return False
        return commit(data)

    # A per-table FileIO differs from the shared one in this method only; a subclass per FileIO
    # kind (local, S3, pyarrow) would say the same thing three times.
    io.try_create_atomic = try_create_atomic  # type: ignore[method-assign]
    return io


def _rest_error(e: urllib.error.HTTPError) -> proto.RestError:
    try:
        raw = json.loads(e.read() or b"{}")
    except ValueError:
        raw = {}
    if not isinstance(raw, dict):
        raw = {}
    message = str(raw.get("message") or e.reason)
    if e.code == 401:
        message = f"the server refused the credentials (HTTP 401): {message}; check the options '{TOKEN_PROVIDER}' and '{TOKEN}'"
    return proto.RestError(e.code, message, raw.get("resourceType"), raw.get("resourceName"))


def _check_options(options: Mapping[str, str]) -> None:
    provider = options.get(TOKEN_PROVIDER)
    if provider is not None and provider.strip().lower() != "bear":
        raise InvalidOptionError(
            f"catalog option '{TOKEN_PROVIDER}' = {provider!r} is not supported by stratalake's REST catalog; "
            "use 'bear' (a bearer token in option 'token')"
        )
    if options.get(TOKEN) is not None and provider is None:
        raise InvalidOptionError(f"catalog option '{TOKEN}' needs '{TOKEN_PROVIDER}' = 'bear'")
    for key, value in options.items():
        for prefix, what in _REFUSED_PREFIXES.items():
            if key.startswith(prefix):
                raise InvalidOptionError(
                    f"catalog option '{key}': {what} is not supported by stratalake's REST catalog"
                )
        if key in _REFUSED_TRUE and value.strip().lower() == "true":
            raise InvalidOptionError(
                f"catalog option '{key}': {_REFUSED_TRUE[key]} are not supported by stratalake's REST catalog"
            )


registry.register("rest", RestCatalog)
