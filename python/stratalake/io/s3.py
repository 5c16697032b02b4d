"""S3 and S3-compatible object stores: pyarrow for data, a conditional PUT for commits.

Plain PUTs overwrite, so two writers racing for ``snapshot-<id>`` could both "win" and one commit
would vanish. :meth:`S3FileIO.try_create_atomic` sends ``PUT`` with ``If-None-Match: *`` (AWS S3
since 2024, MinIO, moto, ...) through ``boto3`` (the optional dependency ``stratalake[s3]``):
the store creates the object only if no object has that key, and answers 412 otherwise. pyarrow
(19) cannot send that header, which is why this one call goes through boto3.

An answer can be lost after the store acted (a timeout on the response): botocore then retries
and the retry gets 412 for the object its own first attempt created. So a 412 is checked by
reading the object back (the snapshot's bytes are unique to its commit), and a request whose
fate is unknown (a 5xx, a connection error) raises
:class:`~stratalake.io.fileio.WriteOutcomeUnknownError` for the committer to resolve.

A store that silently ignores the header would let both writers win. So before the first commit
through a bucket, :class:`S3FileIO` probes it: it creates a probe object conditionally twice and
requires the second attempt to be refused; a store that accepts it is rejected with
:class:`~stratalake.exceptions.UnsupportedError` instead of risking a lost commit.
"""

from __future__ import annotations

import importlib
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from stratalake.exceptions import InvalidOptionError, UnsupportedError
from stratalake.io.fileio import (
    AtomicCreateUnsupportedError,
    FileIO,
    WriteOutcomeUnknownError,
    register_scheme,
)

__all__ = ["S3FileIO", "s3_client_kwargs", "s3_filesystem_kwargs"]

# Stores (endpoint, bucket) already probed for conditional-create support, process-wide.
_PROBED: set[tuple[str, str]] = set()
_PROBE_LOCK = threading.Lock()
# A 409 ConditionalRequestConflict means another conditional write to the key is in flight; AWS
# asks clients to retry. The retry then either wins or gets 412.
_CONFLICT_RETRIES = 8


# option key -> S3FileSystem keyword. Paimon's own `s3.*` names and Hadoop's `fs.s3a.*` names.
_S3_KEYS: dict[str, str] = {
    "s3.access-key": "access_key",
    "s3.access.key": "access_key",
    "fs.s3a.access.key": "access_key",
    "s3.secret-key": "secret_key",
    "s3.secret.key": "secret_key",
    "fs.s3a.secret.key": "secret_key",
    "s3.session-token": "session_token",
    "s3.session.token": "session_token",
    "fs.s3a.session.token": "session_token",
    "s3.region": "region",
    "fs.s3a.endpoint.region": "region",
    "fs.s3a.region": "region",
    "s3.endpoint": "endpoint_override",
    "fs.s3a.endpoint": "endpoint_override",
    "s3.path.style.access": "path_style",
    "s3.path-style-access": "path_style",
    "fs.s3a.path.style.access": "path_style",
    "s3.anonymous": "anonymous",
    "s3.role-arn": "role_arn",
    "fs.s3a.assumed.role.arn": "role_arn",
}


def _bool_option(key: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise InvalidOptionError(f"option {key!r} must be true or false, got {value!r}")


def s3_filesystem_kwargs(options: Mapping[str, str]) -> dict[str, Any]:
    """Keyword arguments for :class:`pyarrow.fs.S3FileSystem` from catalog/table options.

    >>> s3_filesystem_kwargs({"s3.endpoint": "http://localhost:9000", "s3.access-key": "k"})
    {'endpoint_override': 'localhost:9000', 'scheme': 'http', 'access_key': 'k'}
    """
    kwargs: dict[str, Any] = {}
    for key, value in options.items():
        target = _S3_KEYS.get(key)
        if target is None:
            continue
        if target == "endpoint_override":
            parts = urlsplit(value if "://" in value else f"//{value}")
            kwargs["endpoint_override"] = parts.netloc + parts.path.rstrip("/")
            if parts.scheme:
                kwargs["scheme"] = parts.scheme
        elif target == "path_style":
            # pyarrow addresses buckets path-style unless virtual addressing is forced.
            kwargs["force_virtual_addressing"] = not _bool_option(key, value)
        elif target == "anonymous":
            kwargs["anonymous"] = _bool_option(key, value)
        else:
            kwargs[target] = value
    return kwargs


def s3_client_kwargs(options: Mapping[str, str]) -> dict[str, Any]:
    """Keyword arguments for ``boto3.client("s3", ...)`` equivalent to the pyarrow filesystem's.

    >>> s3_client_kwargs({"s3.endpoint": "http://127.0.0.1:9000", "s3.access-key": "k"})
    {'endpoint_url': 'http://127.0.0.1:9000', 'aws_access_key_id': 'k'}
    """
    fs = s3_filesystem_kwargs(options)
    out: dict[str, Any] = {}
    if "endpoint_override" in fs:
        out["endpoint_url"] = f"{fs.get('scheme', 'https')}://{fs['endpoint_override']}"
    names = {
        "access_key": "aws_access_key_id",
        "secret_key": "aws_secret_access_key",
        "session_token": "aws_session_token",
        "region": "region_name",
    }
    for key, target in names.items():
        if key in fs:
            out[target] = fs[key]
    return out


class S3FileIO(FileIO):
    """An S3 bucket (``s3://``, ``s3a://``, ``s3n://``) configured by ``s3.*`` / ``fs.s3a.*`` options.

    Data and metadata files go through :class:`pyarrow.fs.S3FileSystem`; only
    :meth:`try_create_atomic` (snapshot and schema commits) uses boto3.
    """

    def __init__(self, options: Mapping[str, str] | None = None, scheme: str = "s3") -> None:
        self._options = dict(options or {})
        super().__init__(pafs.S3FileSystem(**s3_filesystem_kwargs(self._options)), f"{scheme}://")
        self._client: Any = None
        self._lock = threading.Lock()

    # A boto3 client cannot be pickled (e.g. into Spark tasks); it is rebuilt on demand.
    def __getstate__(self) -> dict[str, Any]:
        return {"options": self._options, "prefix": self._uri_prefix}

    def __setstate__(self, state: dict[str, Any]) -> None:
        S3FileIO.__init__(self, state["options"], state["prefix"].removesuffix("://"))

    def try_create_atomic(
        self, path: str, data: bytes, precondition: Callable[[], bool] | None = None
    ) -> bool:
        """Create ``path`` only if no object has its key (``If-None-Match: *``); False if one has."""
        bucket, key = self._bucket_key(path)
        self._ensure_conditional_create(bucket, key.rsplit("/", 1)[0] if "/" in key else "")
        if precondition is not None and not precondition():
            return False
        return self._put_if_absent(bucket, key, data, path)

    # -- internals ----------------------------------------------------------------------------
    def _bucket_key(self, path: str) -> tuple[str, str]:
        bucket, _, key = self.to_fs_path(path).partition("/")
        if not bucket or not key:
            raise UnsupportedError(f"{path!r} does not name an object in a bucket")
        return bucket, key

    def _boto(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    boto3 = importlib.import_module("boto3")
                    config = importlib.import_module("botocore.config")
                except ImportError as e:
                    raise UnsupportedError(
                        "committing to S3 needs boto3 for conditional writes (If-None-Match); "
                        "install it with: pip install 'stratalake[s3]'"
                    ) from e
                if any(k in self._options for k in ("s3.role-arn", "fs.s3a.assumed.role.arn")):
                    raise UnsupportedError(
                        "commits on S3 do not support 's3.role-arn' yet; pass credentials "
                        "('s3.access-key'/'s3.secret-key'/'s3.session-token') or use the default chain"
                    )
                fs = s3_filesystem_kwargs(self._options)
                style = "virtual" if fs.get("force_virtual_addressing") else "path"
                cfg_kwargs: dict[str, Any] = {
                    "s3": {"addressing_style": style},
                    "retries": {"max_attempts": 3},
                }
                if fs.get("anonymous"):
                    cfg_kwargs["signature_version"] = importlib.import_module("botocore").UNSIGNED
                self._client = boto3.client(
                    "s3", config=config.Config(**cfg_kwargs), **s3_client_kwargs(self._options)
                )
            return self._client

    def _put_if_absent(self, bucket: str, key: str, data: bytes, path: str) -> bool:
        client = self._boto()
        errors = importlib.import_module("botocore.exceptions")
        for attempt in range(_CONFLICT_RETRIES):
            try:
                client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
                return True
            except errors.ClientError as e:
                code = str(e.response.get("Error", {}).get("Code", ""))
                status = int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
                if status == 412 or code == "PreconditionFailed":
                    # Maybe our own earlier attempt (botocore retried after a lost answer).
                    return self._holds(path, data)
                if status == 409 or code == "ConditionalRequestConflict":
                    time.sleep(min(0.05 * 2**attempt, 1.0))
                    continue
                if status == 501 or code == "NotImplemented":
                    raise AtomicCreateUnsupportedError(
                        f"the object store of {path} does not support conditional writes "
                        "(If-None-Match); commits cannot be made safe there"
                    ) from e
                if status >= 500 or not status:
                    raise WriteOutcomeUnknownError(
                        f"conditional PUT of {path} failed: {code or status}: {e}; it may have been applied"
                    ) from e
                raise OSError(f"conditional PUT of {path} failed: {code or status}: {e}") from e
            except errors.BotoCoreError as e:
                # Timeouts and broken connections: the store may have applied the PUT.
                raise WriteOutcomeUnknownError(
                    f"conditional PUT of {path} failed: {e}; it may have been applied"
                ) from e
        raise OSError(f"conditional PUT of {path} kept conflicting with concurrent writes; retry the commit")

    def _holds(self, path: str, data: bytes) -> bool:
        """Whether ``path`` holds exactly ``data`` (False if it is missing or differs); a failed
        read leaves the outcome unknown."""
        try:
            return self.read_bytes(path) == data
        except FileNotFoundError:
            return False
        except OSError as e:
            raise WriteOutcomeUnknownError(
                f"conditional PUT of {path} was refused (412) and the object could not be read back "
                f"to tell whether an earlier attempt of this commit created it: {e}"
            ) from e

    def _ensure_conditional_create(self, bucket: str, directory: str) -> None:
        """Refuse stores that ignore ``If-None-Match`` (they would let two commits both win)."""
        store = (str(s3_client_kwargs(self._options).get("endpoint_url", "aws")), bucket)
        with _PROBE_LOCK:
            if store in _PROBED:
                return
        # Named like a temp file (``.<name>.tmp``) so that orphan removal reclaims a leftover.
        probe = f"{directory}/.stratalake-conditional-put-probe-{uuid.uuid4().hex}.tmp".lstrip("/")
        where = f"{self._uri_prefix}{bucket}/{probe}"
        try:
            if not self._put_if_absent(bucket, probe, b"1", where):
                raise OSError(f"probe object {where} existed before it was created")
            second = self._put_if_absent(bucket, probe, b"2", where)
        finally:
            self.delete_quietly(f"{self._uri_prefix}{bucket}/{probe}")
        if second:
            raise AtomicCreateUnsupportedError(
                f"the object store of bucket {bucket!r} ignores conditional writes (If-None-Match: *): "
                "two writers could both commit the same snapshot, so commits are refused there unless a "
                "catalog commit lock guards them ('lock.enabled' = 'true' on a metastore catalog)"
            )
        with _PROBE_LOCK:
            _PROBED.add(store)


# Built directly, not by pyarrow's from_uri, which would take no credentials and probes the
# bucket's region.
register_scheme(("s3", "s3a", "s3n"), S3FileIO)
