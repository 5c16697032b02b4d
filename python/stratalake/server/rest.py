"""A Paimon REST catalog server over any stratalake :class:`~stratalake.Catalog`.

``stratalake serve --warehouse <path>`` runs it; tests start it in-process with
:class:`RestCatalogServer`. It speaks Paimon's REST catalog protocol (the OpenAPI document
``docs/static/rest-catalog-open-api.yaml`` of apache/paimon) as Paimon Java's ``RESTCatalog`` and
pypaimon's ``RESTCatalog`` use it: ``GET /v1/config``; databases (paged list, create, get, alter
properties, drop); tables (paged list, create, get with schema and path, rename, alter, drop);
``commit`` (clients that manage versions through the catalog, as pypaimon does, send the new
snapshot here, and it is published with the same atomic create-if-absent every stratalake writer
uses, so server commits and direct file commits exclude each other); the latest ``snapshot``; and
``partitions``; tags (list, create, get, delete). Anything else (views, functions, branches,
data tokens, rollback) answers 501 naming the request.

Names in URL paths are form-decoded and then checked by :mod:`stratalake.identifiers` (through
the catalog), so no name reaches a path outside the warehouse. Authentication is a bearer token
(Paimon's ``token.provider = bear``) compared in constant time; without ``token`` the server is
open (it listens on 127.0.0.1 unless told otherwise).
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from stratalake import identifiers
from stratalake.catalog import Catalog
from stratalake.catalog import rest_protocol as proto
from stratalake.exceptions import (
    DatabaseNotFoundError,
    InvalidOptionError,
    StrataLakeError,
    TableNotFoundError,
    UnsupportedError,
)
from stratalake.spec.snapshot import SNAPSHOT_KEYS, Snapshot
from stratalake.table import Table

_LOG = logging.getLogger(__name__)
DEFAULT_PREFIX = "stratalake"
_MAX_BODY = 64 * 1024 * 1024  # a commit's snapshot JSON is small; refuse absurd bodies
_DEFAULT_PARTITION = "__DEFAULT_PARTITION__"


class _HttpError(Exception):
    def __init__(
        self, code: int, message: str, resource_type: str | None = None, resource_name: str | None = None
    ):
        super().__init__(message)
        self.code = code
        self.resource_type = resource_type
        self.resource_name = resource_name


class RestCatalogServer:
    """Serves ``catalog`` by Paimon's REST protocol on ``host:port`` (port 0: any free port).

    ``token``: the bearer token clients must send (``token.provider = bear``); ``prefix``: the
    path prefix ``/v1/config`` hands clients; ``warehouse_name``: if set, the only ``warehouse``
    name ``/v1/config`` accepts (the server serves one warehouse, whatever clients call it).
    """

    def __init__(
        self,
        catalog: Catalog,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        prefix: str = DEFAULT_PREFIX,
        warehouse_name: str | None = None,
    ) -> None:
        self.catalog = catalog
        self.token = token
        self.prefix = prefix
        self.warehouse_name = warehouse_name
        handler = type("_BoundHandler", (_Handler,), {"server_state": self})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> RestCatalogServer:
        """Serve on a background thread; returns self."""
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="stratalake-rest", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> RestCatalogServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Handler(BaseHTTPRequestHandler):
    server_state: RestCatalogServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        _LOG.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    # -- plumbing --------------------------------------------------------------------------------

    def _dispatch(self, method: str) -> None:
        try:
            body = self._body()
            self._authenticate()
            status, payload = self._route(method, body)
        except _HttpError as e:
            status, payload = e.code, _error(e.code, str(e), e.resource_type, e.resource_name)
        except StrataLakeError as e:
            code, kind = proto.error_of(e)
            status, payload = code, _error(code, str(e), kind, None)
        except (ValueError, KeyError, TypeError) as e:
            status, payload = 400, _error(400, f"bad request: {type(e).__name__}: {e}", None, None)
        except Exception as e:  # a server answers every request; the cause goes to its log
            _LOG.exception("REST catalog: %s %s failed", method, self.path)
            status, payload = 500, _error(500, f"internal error: {type(e).__name__}: {e}", None, None)
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            self.close_connection = True  # the unread body would be taken for the next request
            raise _HttpError(413, f"request body of {length} bytes is larger than {_MAX_BODY}")
        if length <= 0:
            return None
        return json.loads(self.rfile.read(length))

    def _authenticate(self) -> None:
        header = self.headers.get("Authorization") or ""
        if header.startswith("DLF") or any(k.lower().startswith("x-dlf-") for k in self.headers):
            raise _HttpError(
                401,
                "token.provider 'dlf' (Alibaba DLF signatures) is not supported by this server; use 'bear'",
            )
        expected = self.server_state.token
        if expected is None:
            return
        given = header[len("Bearer ") :] if header.startswith("Bearer ") else ""
        if not given or not hmac.compare_digest(given.encode(), expected.encode()):
            raise _HttpError(
                401, "not authorized: a wrong or missing bearer token (token.provider 'bear', option 'token')"
            )

    def _route(self, method: str, body: Any) -> tuple[int, Any]:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        raw = url.path.strip("/").split("/")
        if raw[:1] != [proto.V1] or len(raw) < 2:
            raise _HttpError(404, f"no such resource: {url.path}")
        if raw[1:] == ["config"] and method == "GET":
            return 200, self._config(query)
        prefix = self.server_state.prefix
        rest = raw[1:]
        if prefix:
            if proto.decode(rest[0]) != prefix:
                raise _HttpError(
                    404, f"no such catalog prefix {proto.decode(rest[0])!r}; GET /v1/config tells it"
                )
            rest = rest[1:]
        segs = [proto.decode(s) for s in rest]
        return self._resource(method, segs, query, body)

    def _resource(self, method: str, segs: list[str], query: Mapping[str, str], body: Any) -> tuple[int, Any]:
        n = len(segs)
        if segs == [proto.TABLES, "rename"] and method == "POST":
            return self._rename(body)
        if not segs or segs[0] != proto.DATABASES:
            raise _HttpError(501, f"{method} /{'/'.join(segs)} is not supported by this server")
        if n == 1:
            if method == "GET":
                return 200, self._list_databases(query)
            if method == "POST":
                return self._create_database(body)
        db = segs[1] if n > 1 else ""
        if n == 2:
            if method == "GET":
                return 200, self._get_database(db)
            if method == "POST":
                return self._alter_database(db, body)
            if method == "DELETE":
                return self._drop_database(db)
        if n >= 3 and segs[2] != proto.TABLES:
            raise _HttpError(
                501, f"{method} of database {segs[2]} ({'/'.join(segs[2:])}) is not supported by this server"
            )
        if n == 3:
            if method == "GET":
                return 200, self._list_tables(db, query)
            if method == "POST":
                return self._create_table(db, body)
        ident = f"{db}.{segs[3]}" if n > 3 else ""
        if n == 4:
            if method == "GET":
                return 200, self._get_table(db, segs[3])
            if method == "POST":
                return self._alter_table(ident, body)
            if method == "DELETE":
                self.server_state.catalog.drop_table(_ident(db, segs[3]))
                return 200, None
        if n == 5:
            handlers: dict[tuple[str, str], Callable[[], tuple[int, Any]]] = {
                ("POST", "commit"): lambda: self._commit(db, segs[3], body),
                ("GET", "snapshot"): lambda: self._snapshot(db, segs[3]),
                ("GET", "partitions"): lambda: self._partitions(db, segs[3], query),
                ("GET", "tags"): lambda: self._list_tags(db, segs[3], query),
                ("POST", "tags"): lambda: self._create_tag(db, segs[3], body),
            }
            handler = handlers.get((method, segs[4]))
            if handler is not None:
                return handler()
        if n == 6 and segs[4] == "tags" and method in ("GET", "DELETE"):
            return (
                self._get_tag(db, segs[3], segs[5])
                if method == "GET"
                else self._delete_tag(db, segs[3], segs[5])
            )
        raise _HttpError(501, f"{method} /{'/'.join(segs)} is not supported by this server")

    # -- config and databases ----------------------------------------------------------------------

    def _config(self, query: Mapping[str, str]) -> dict[str, Any]:
        state = self.server_state
        asked = query.get("warehouse")
        if state.warehouse_name is not None and asked != state.warehouse_name:
            raise _HttpError(
                404,
                f"this server serves warehouse {state.warehouse_name!r}, not {asked!r}",
                "WAREHOUSE",
                asked,
            )
        defaults = {"prefix": state.prefix} if state.prefix else {}
        return {"defaults": defaults, "overrides": {}}

    def _list_databases(self, query: Mapping[str, str]) -> dict[str, Any]:
        names = self.server_state.catalog.list_databases()
        names = _filtered(names, query.get(proto.DATABASE_NAME_PATTERN))
        chosen, token = proto.page(names, _max_results(query), query.get(proto.PAGE_TOKEN) or None)
        return {"databases": chosen, "nextPageToken": token}

    def _create_database(self, body: Any) -> tuple[int, Any]:
        name = _field(body, "name", str)
        options = _field(body, "options", dict, required=False) or {}
        cat = self.server_state.catalog
        if options and not callable(getattr(cat, "database_properties", None)):
            raise UnsupportedError(
                f"database '{name}': the '{type(cat).__name__}' catalog stores no database properties, so "
                f"{sorted(options)} cannot be kept; create the database without them"
            )
        cat.create_database(name, properties={str(k): str(v) for k, v in options.items()})
        return 200, None

    def _get_database(self, name: str) -> dict[str, Any]:
        cat = self.server_state.catalog
        if not cat.database_exists(name):
            raise DatabaseNotFoundError(f"database '{name}' does not exist")
        props = getattr(cat, "database_properties", None)
        options = dict(props(name)) if callable(props) else {}
        return {"id": name, "name": name, "location": cat.database_path(name), "options": options}

    def _alter_database(self, name: str, body: Any) -> tuple[int, Any]:
        cat = self.server_state.catalog
        removals = _field(body, "removals", list, required=False) or []
        updates = _field(body, "updates", dict, required=False) or {}
        if not cat.database_exists(name):
            raise DatabaseNotFoundError(f"database '{name}' does not exist")
        alter = getattr(cat, "alter_database", None)
        if not callable(alter):
            raise UnsupportedError(
                f"database '{name}': the '{type(cat).__name__}' catalog stores no database properties, so "
                "they cannot be altered (as Paimon's filesystem catalog)"
            )
        alter(name, {str(k): str(v) for k, v in updates.items()}, [str(r) for r in removals])
        return 200, {"removed": removals, "updated": sorted(updates), "missing": []}

    def _drop_database(self, name: str) -> tuple[int, Any]:
        # Paimon's clients check emptiness themselves before a non-cascading drop (pypaimon's
        # RESTCatalog.drop_database lists the tables first), so the request itself cascades.
        self.server_state.catalog.drop_database(name, cascade=True)
        return 200, None

    # -- tables ---------------------------------------------------------------------------------------

    def _list_tables(self, db: str, query: Mapping[str, str]) -> dict[str, Any]:
        table_type = query.get("tableType")
        if table_type and table_type.lower() != "table":
            raise _HttpError(400, f"tableType {table_type!r}: this server lists only Paimon tables ('table')")
        names = _filtered(self.server_state.catalog.list_tables(db), query.get(proto.TABLE_NAME_PATTERN))
        chosen, token = proto.page(names, _max_results(query), query.get(proto.PAGE_TOKEN) or None)
        return {"tables": chosen, "nextPageToken": token}

    def _create_table(self, db: str, body: Any) -> tuple[int, Any]:
        ident = _field(body, "identifier", dict)
        if ident.get("database") != db:
            raise _HttpError(
                400, f"the identifier's database {ident.get('database')!r} is not the path's {db!r}"
            )
        if ident.get("branch") not in (None, "", "main"):
            raise _HttpError(
                501, f"branch {ident.get('branch')!r}: branches are not supported by this server"
            )
        name = str(ident.get("object") or "")
        full = _ident(db, name)
        schema = _field(body, "schema", dict)
        options = {str(k): str(v) for k, v in (schema.get("options") or {}).items()}
        options.pop("path", None)  # Paimon clients may echo the location; the server decides it
        columns = proto.columns_from_json(schema, full)
        self.server_state.catalog.create_table(
            full,
            columns,
            primary_key=[str(k) for k in schema.get("primaryKeys") or []],
            partition_keys=[str(k) for k in schema.get("partitionKeys") or []],
            options=options,
            comment=schema.get("comment"),
        )
        return 200, None

    def _table(self, db: str, name: str) -> Table:
        return self.server_state.catalog.get_table(_ident(db, name))

    def _get_table(self, db: str, name: str) -> dict[str, Any]:
        table = self._table(db, name)
        schema = table.schema()
        return {
            "id": proto.table_uuid(table),
            "name": name,
            "path": table.location,
            "isExternal": False,
            "schemaId": schema.id,
            "schema": proto.schema_to_json(schema),
        }

    def _alter_table(self, ident: str, body: Any) -> tuple[int, Any]:
        changes = _field(body, "changes", list)
        parsed = [proto.change_from_json(c, ident) for c in changes]
        if not parsed:
            raise InvalidOptionError(f"table {ident}: an alter request needs at least one change")
        self.server_state.catalog.alter_table(ident, parsed)
        return 200, None

    def _rename(self, body: Any) -> tuple[int, Any]:
        src = _field(body, "source", dict)
        dst = _field(body, "destination", dict)
        self.server_state.catalog.rename_table(
            _ident(str(src.get("database")), str(src.get("object"))),
            _ident(str(dst.get("database")), str(dst.get("object"))),
        )
        return 200, None

    # -- snapshots, commits, partitions ----------------------------------------------------------------

    def _commit(self, db: str, name: str, body: Any) -> tuple[int, Any]:
        table = self._table(db, name)
        given = _field(body, "tableId", str, required=False)
        if given and given != proto.table_uuid(table):
            raise TableNotFoundError(
                f"table {db}.{name}: the commit is for table id {given}, which was dropped"
            )
        raw = _field(body, "snapshot", dict)
        # The server writes the snapshot file itself: a field it does not know would be lost.
        unknown = sorted(k for k, v in raw.items() if v is not None and k not in SNAPSHOT_KEYS)
        if unknown:
            raise _HttpError(
                400, f"table {db}.{name}: the snapshot has fields {unknown} this server cannot store"
            )
        snapshot = Snapshot.from_json(json.dumps(raw), f"commit of {db}.{name}")
        # The snapshot's files were written by the client into this table's directory; publishing
        # it is the one atomic create-if-absent of snapshot-<id> every committer goes through.
        ok = table.snapshot_manager.try_commit(snapshot)
        return 200, {"success": bool(ok)}

    def _snapshot(self, db: str, name: str) -> tuple[int, Any]:
        table = self._table(db, name)
        snap = table.latest_snapshot()
        if snap is None:
            raise _HttpError(404, f"table {db}.{name} has no snapshot yet", proto.SNAPSHOT, name)
        entries = table.live_entries(snap)
        files = [e.file for e in entries]
        # GetTableSnapshotResponse: {"snapshot": TableSnapshot}, a TableSnapshot being the
        # snapshot with the table's totals.
        table_snapshot = {
            "snapshot": json.loads(snap.to_json()),
            "recordCount": sum(f.row_count for f in files),
            "fileSizeInBytes": sum(f.file_size for f in files),
            "fileCount": len(files),
            "lastFileCreationTime": max((f.creation_time or 0 for f in files), default=0),
        }
        return 200, {"snapshot": table_snapshot}

    def _partitions(self, db: str, name: str, query: Mapping[str, str]) -> tuple[int, Any]:
        table = self._table(db, name)
        codec = table.partition_codec
        snap = table.latest_snapshot()
        stats: dict[str, dict[str, Any]] = {}
        if snap is not None and codec.is_partitioned:
            for e in table.live_entries(snap):
                values = codec.from_bytes(e.partition)
                spec = {
                    k: _DEFAULT_PARTITION if v is None else str(v)
                    for k, v in zip(codec.keys, values, strict=True)
                }
                key = "/".join(f"{k}={v}" for k, v in spec.items())
                s = stats.setdefault(
                    key,
                    {
                        "spec": spec,
                        "recordCount": 0,
                        "fileSizeInBytes": 0,
                        "fileCount": 0,
                        "lastFileCreationTime": 0,
                        "done": False,
                    },
                )
                s["recordCount"] += e.file.row_count
                s["fileSizeInBytes"] += e.file.file_size
                s["fileCount"] += 1
                s["lastFileCreationTime"] = max(s["lastFileCreationTime"], e.file.creation_time or 0)
        names = _filtered(list(stats), query.get(proto.PARTITION_NAME_PATTERN))
        chosen, token = proto.page(names, _max_results(query), query.get(proto.PAGE_TOKEN) or None)
        return 200, {"partitions": [stats[k] for k in chosen], "nextPageToken": token}

    # -- tags -----------------------------------------------------------------------------------------

    def _list_tags(self, db: str, name: str, query: Mapping[str, str]) -> tuple[int, Any]:
        prefix = query.get("tagNamePrefix") or ""
        names = [t for t in self._table(db, name).tag_manager.names() if t.startswith(prefix)]
        chosen, token = proto.page(names, _max_results(query), query.get(proto.PAGE_TOKEN) or None)
        return 200, {"tags": chosen, "nextPageToken": token}

    def _create_tag(self, db: str, name: str, body: Any) -> tuple[int, Any]:
        tag = _field(body, "tagName", str)
        snapshot_id = _field(body, "snapshotId", int, required=False)
        retained = _field(body, "timeRetained", str, required=False)
        self._table(db, name).create_tag(tag, snapshot_id, retained)
        return 200, None

    def _get_tag(self, db: str, name: str, tag: str) -> tuple[int, Any]:
        table = self._table(db, name)
        snap = table.tag_manager.tag(tag)
        created, retained = table.tag_manager.tag_times(tag)
        return 200, {
            "tagName": tag,
            "snapshot": json.loads(snap.to_json()),
            "tagCreateTime": None if created is None else int(created.timestamp() * 1000),
            "tagTimeRetained": retained,
        }

    def _delete_tag(self, db: str, name: str, tag: str) -> tuple[int, Any]:
        self._table(db, name).delete_tag(tag)
        return 200, None


def _ident(db: str, name: str) -> str:
    identifiers.check_name(db, identifiers.DATABASE)
    identifiers.check_name(name, identifiers.TABLE)
    return f"{db}.{name}"


def _error(code: int, message: str, resource_type: str | None, resource_name: str | None) -> dict[str, Any]:
    return {"message": message, "code": code, "resourceType": resource_type, "resourceName": resource_name}


def _field(body: Any, key: str, kind: type, required: bool = True) -> Any:
    if not isinstance(body, dict):
        raise _HttpError(400, f"the request needs a JSON object body with '{key}'")
    value = body.get(key)
    if value is None:
        if required:
            raise _HttpError(400, f"the request body has no '{key}'")
        return None
    if not isinstance(value, kind):
        raise _HttpError(400, f"the request's '{key}' must be a JSON {kind.__name__}")
    return value


def _max_results(query: Mapping[str, str]) -> int | None:
    text = query.get(proto.MAX_RESULTS)
    if not text:
        return None
    if not text.isdigit():
        raise _HttpError(400, f"{proto.MAX_RESULTS} must be a positive integer, not {text!r}")
    return int(text)


def _filtered(names: list[str], pattern: str | None) -> list[str]:
    if not pattern:
        return names
    regex = proto.like_pattern(pattern)
    return [n for n in names if regex.fullmatch(n)]


def serve(
    warehouse: str,
    options: Mapping[str, str] | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    prefix: str = DEFAULT_PREFIX,
    ready: Callable[[RestCatalogServer], None] | None = None,
) -> None:
    """Serve ``Catalog(warehouse, options)`` until interrupted (``stratalake serve``)."""
    server = RestCatalogServer(Catalog(warehouse, options), host, port, token, prefix)
    if ready is not None:
        ready(server)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
