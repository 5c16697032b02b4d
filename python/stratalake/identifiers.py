"""Database and table names, and the paths built from them: one place decides what is allowed.

A name becomes one directory inside the warehouse (``<warehouse>/<db>.db/<table>``), so a name
that a user controls must never reach a path outside it, whichever face it came through (the Python
API, Spark SQL through the JVM catalog, ``CALL`` procedures, data source options).

Two levels of rules:

* **Every name** (reading, dropping, checking existence, and creating): not empty, not ``.`` or
  ``..``, no ``/`` or ``\\``, no NUL, at most :data:`MAX_NAME_BYTES` bytes of UTF-8 in its
  directory name (a database's directory adds ``.db``, so database names get 252 bytes). These are
  what keep a path inside its parent; a table made by another tool that passes them can be read,
  whatever else its name holds.
* **New names** (create database/table, rename target) also: no leading or trailing whitespace; no
  control, format, private-use or unassigned characters (Unicode categories C*, Zl, Zp); no ``.``
  (it separates database and table in ``"db.table"``); no ``$`` (it names system tables:
  ``t$files`` reads table ``t``'s files); no ``:``, ``?``, ``#`` (URI syntax: Hadoop paths and
  ``file:`` URIs would misread them); no ``%XX`` escapes (layers that URL-decode would see other
  characters); no Unicode look-alikes of ``/``, ``\\``, ``.``, ``$`` (any character whose NFKC form
  is one of those, or whose Unicode name says SOLIDUS or SLASH, e.g. U+2215, U+FF0F). The database
  name ``sys`` is reserved, as in Paimon (``CALL lake.sys.<procedure>``).

Names are case-sensitive, as Paimon's filesystem catalog (``Orders`` and ``orders`` are two tables
on a case-sensitive filesystem; on a case-insensitive one the second create finds the first).

Independently of the name rules, :func:`resolve` builds every catalog path from the warehouse and
name segments, and refuses any result that, after normalisation (``\\`` as ``/``, ``.``/``..``
resolved, ``%XX`` decoded, NFKC), is not strictly inside the warehouse; for URIs
(``s3://bucket/wh``) the scheme and bucket are kept apart and only the key path is normalised.
"""

from __future__ import annotations

import difflib
import logging
import os
import posixpath
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from stratalake import option_support, paimon_options
from stratalake.exceptions import InvalidIdentifierError, InvalidOptionError
from stratalake.options import KNOWN_OPTIONS

_LOG = logging.getLogger(__name__)

MAX_NAME_BYTES = 255  # of a directory name, in UTF-8: the common filesystem limit
DB_SUFFIX = ".db"
SYSTEM_TABLE_SEPARATOR = "$"
SYSTEM_DATABASE = "sys"  # Paimon's system database; CALL lake.sys.<procedure> in Spark

DATABASE = "database"
TABLE = "table"

_SEPARATORS = ("/", "\\")
_URI_CHARACTERS = (":", "?", "#")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_BAD_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def _show(name: str) -> str:
    """The name quoted for a message (control characters escaped, long names shortened)."""
    text = repr(name)
    return text if len(text) <= 90 else f"{text[:60]}...{text[-20:]} ({len(name)} characters)"


def _max_bytes(kind: str) -> int:
    return MAX_NAME_BYTES - (len(DB_SUFFIX) if kind == DATABASE else 0)


def _fail(kind: str, name: object, rule: str, creating: bool) -> InvalidIdentifierError:
    what = f"{kind} name {_show(name) if isinstance(name, str) else repr(name)}"
    if creating:
        return InvalidIdentifierError(f"{what} cannot be created: {rule}")
    return InvalidIdentifierError(f"invalid {what}: {rule}")


def check_name(name: object, kind: str = TABLE) -> str:
    """``name`` if it is safe as one directory inside its parent (reads, drops, existence checks).

    Raises :class:`InvalidIdentifierError` naming the identifier and the rule it breaks.
    """
    if not isinstance(name, str):
        raise _fail(kind, name, "a name must be a string", creating=False)
    if not name:
        raise _fail(kind, name, "a name must not be empty", creating=False)
    if name in (".", ".."):
        raise _fail(kind, name, "'.' and '..' are not names (they would leave the directory)", creating=False)
    for sep in _SEPARATORS:
        if sep in name:
            raise _fail(
                kind,
                name,
                f"{sep!r} is a path separator; a name is one directory inside the warehouse",
                creating=False,
            )
    if "\x00" in name:
        raise _fail(kind, name, "a name must not contain the NUL character", creating=False)
    limit = _max_bytes(kind)
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise _fail(
            kind,
            name,
            f"a {kind} name is at most {limit} bytes of UTF-8, this one has {size}",
            creating=False,
        )
    return name


def check_new_name(name: object, kind: str = TABLE) -> str:
    """``name`` if a database or table may be created (or renamed) under it; see the module doc."""
    name = check_name(name, kind)
    assert isinstance(name, str)

    def fail(rule: str) -> InvalidIdentifierError:
        return _fail(kind, name, rule, creating=True)

    if name != name.strip():
        raise fail("a name must not start or end with whitespace")
    for ch in name:
        if unicodedata.category(ch) in _BAD_CATEGORIES:
            raise fail(f"control, format and unassigned characters such as U+{ord(ch):04X} are not allowed")
    if "." in name:
        raise fail("'.' separates database and table in 'database.table'")
    if SYSTEM_TABLE_SEPARATOR in name:
        raise fail(
            "'$' is reserved for system tables ('t$files' reads the files of table 't'); "
            "choose a name without '$'"
        )
    for ch in _URI_CHARACTERS:
        if ch in name:
            raise fail(f"{ch!r} has a meaning in paths and URIs (Hadoop/Paimon paths, file: URIs)")
    if _PERCENT_ESCAPE.search(name):
        raise fail(
            "URL escapes such as '%2F' are not allowed (layers that decode them would see other characters)"
        )
    folded = unicodedata.normalize("NFKC", name)
    for ch in name:
        uname = unicodedata.name(ch, "")
        if ("SOLIDUS" in uname or "SLASH" in uname) and ch not in _SEPARATORS:
            raise fail(f"U+{ord(ch):04X} ({uname}) looks like a path separator")
    for ch in (*_SEPARATORS, ".", SYSTEM_TABLE_SEPARATOR, *_URI_CHARACTERS):
        if ch in folded:
            raise fail(f"it holds a character that Unicode normalisation (NFKC) turns into {ch!r}")
    if _PERCENT_ESCAPE.search(folded):
        raise fail("it holds characters that Unicode normalisation (NFKC) turns into a URL escape")
    if kind == DATABASE and name == SYSTEM_DATABASE:
        raise fail(f"'{SYSTEM_DATABASE}' is the system database (CALL lake.sys.<procedure>), as in Paimon")
    return name


# ---- branches -------------------------------------------------------------------------------------

MAIN_BRANCH = "main"
#: ``t$branch_b`` names branch ``b`` of table ``t`` (Paimon's ``Identifier.SYSTEM_BRANCH_PREFIX``).
SYSTEM_BRANCH_PREFIX = "branch_"


def split_object_name(name: str) -> tuple[str, str | None, str | None]:
    """``(table, branch, system table)`` of an object name, as Paimon's ``Identifier``:
    ``t``, ``t$snapshots``, ``t$branch_b``, ``t$branch_b$snapshots``. Branch ``main`` is None.

    Raises :class:`InvalidIdentifierError` for more than two ``$`` or a system table after ``$``
    that is not a branch (``t$files$x``)."""
    parts = name.split(SYSTEM_TABLE_SEPARATOR)
    if len(parts) == 1:
        return name, None, None
    if len(parts) == 2:
        if parts[1].startswith(SYSTEM_BRANCH_PREFIX):
            return parts[0], _branch_or_none(parts[1][len(SYSTEM_BRANCH_PREFIX) :]), None
        return parts[0], None, parts[1]
    if len(parts) == 3 and parts[1].startswith(SYSTEM_BRANCH_PREFIX):
        return parts[0], _branch_or_none(parts[1][len(SYSTEM_BRANCH_PREFIX) :]), parts[2]
    raise InvalidIdentifierError(
        f"{_show(name)} is not a table name: a system table can only contain one '$' separator "
        "('t$snapshots'), or two after a branch ('t$branch_b$snapshots')"
    )


def _branch_or_none(branch: str) -> str | None:
    # Paimon's BranchManager.normalizeBranch: a blank branch is main.
    return None if not branch.strip() or branch == MAIN_BRANCH else branch


def check_branch_name(name: object, table: str, creating: bool = False) -> str:
    """``name`` if it can name a branch of ``table`` (one directory ``branch/branch-<name>``).

    Every use: a string, not blank, no ``/``, ``\\`` or NUL. Creating (create, rename target) also
    Paimon's ``BranchManager.validateBranch``: not ``main``, not only digits (those name snapshots
    in time travel); and, so that ``t$branch_<name>`` and ``db.t$branch_<name>`` parse back, no ``$``
    or ``.``. Raises :class:`InvalidIdentifierError` naming the table, the branch and the rule.
    """

    def fail(rule: str) -> InvalidIdentifierError:
        return InvalidIdentifierError(f"table {table}: {name!r} is not a valid branch name: {rule}")

    if not isinstance(name, str) or not name.strip():
        raise fail("a branch name must be a non-blank string")
    if any(c in name for c in "/\\\x00") or name in (".", ".."):
        raise fail("it must not contain '/', '\\' or NUL, nor be '.' or '..' (it names one directory)")
    if creating:
        if name == MAIN_BRANCH:
            raise fail(f"'{MAIN_BRANCH}' is the default branch and cannot be used; choose another name")
        if name.isdecimal():  # Java's Character.isDigit: decimal digits of any script
            raise fail("a branch name cannot be only digits (those name snapshots); add a letter")
        for ch, why in (
            (SYSTEM_TABLE_SEPARATOR, "t$branch_<name>$<system table>"),
            (".", "'db.t$branch_<name>'"),
        ):
            if ch in name:
                raise fail(f"{ch!r} would make {why} ambiguous; choose a name without it")
    return name


def split_table_identifier(identifier: object) -> tuple[str, str]:
    """``"db.table"`` as ``(db, table)``; a bare name means database ``default``. Names are
    checked with :func:`check_name` (reading rules)."""
    if not isinstance(identifier, str):
        raise InvalidIdentifierError(f"table identifier {identifier!r} must be a string 'database.table'")
    parts = identifier.split(".")
    if len(parts) == 1:
        db, name = "default", parts[0]
    elif len(parts) == 2:
        db, name = parts
    else:
        raise InvalidIdentifierError(
            f"{_show(identifier)} is not a table identifier; use 'database.table' (names cannot contain "
            "'.', '/' or '\\', and cannot be '.' or '..')"
        )
    return check_name(db, DATABASE), check_name(name, TABLE)


def join_table_identifier(database: object, table: object) -> str:
    """``"database.table"`` from separate names (e.g. Spark's namespace and name), both checked
    with :func:`check_name`; a ``.`` in either could not be told apart from the separator."""
    for kind, name in ((DATABASE, database), (TABLE, table)):
        check_name(name, kind)
        if "." in str(name):
            raise _fail(kind, name, "'.' separates database and table, so names cannot contain it", False)
    return f"{database}.{table}"


# ---- paths -------------------------------------------------------------------------------------


def _split_uri(warehouse: str) -> tuple[str, str]:
    """``(scheme://authority, path)`` of a URI, ``("", path)`` of a plain path."""
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):(//[^/]*)?(.*)$", warehouse)
    if m and len(m.group(1)) > 1:  # a one-letter scheme is a Windows drive letter
        return f"{m.group(1)}:{m.group(2) or ''}", m.group(3)
    return "", warehouse


def _normalise(path: str) -> str:
    """``path`` with ``\\`` as ``/`` and ``.``/``..`` resolved lexically (absolute paths stay absolute)."""
    return posixpath.normpath(path.replace("\\", "/"))


def _variants(path: str) -> list[str]:
    """``path`` as itself, URL-decoded until stable, and NFKC-folded: what any layer could see."""
    decoded = path
    for _ in range(5):
        again = unquote(decoded)
        if again == decoded:
            break
        decoded = again
    return [path, decoded, unicodedata.normalize("NFKC", decoded)]


def resolve(warehouse: str, segments: Sequence[str], what: str = "path") -> str:
    """``warehouse/seg1/seg2...``, refused unless it lies strictly inside ``warehouse``.

    Every catalog path built from a user's name goes through here. Each segment must be one name
    (:func:`check_name` is the caller's first line); this is the second: the joined path is
    normalised (also URL-decoded and NFKC-folded, in case some layer decodes) and must still start
    with the warehouse. Raises :class:`InvalidIdentifierError`.
    """
    stored = warehouse.rstrip("/")
    prefix, base = _split_uri(stored)
    if not prefix:  # a local path: "" is the root ("/" once stripped), relative ones are from the cwd
        base = os.path.abspath(base) if base else "/"
    # The authority stays part of the path checked: "s3://bucket" + ".." must not reach another
    # bucket (pyarrow's S3 paths start with the bucket).
    authority = prefix.split("//", 1)[1] if "//" in prefix else ""
    root = _normalise("/" + "/".join(p for p in (authority, base.lstrip("/")) if p))
    inside = root if root.endswith("/") else root + "/"
    joined = "/".join(segments)
    for variant in _variants(joined):
        candidate = _normalise(f"{root}/{variant}")
        rest = candidate[len(inside) :] if candidate.startswith(inside) else ""
        if not rest or len(rest.split("/")) < len(segments):
            raise InvalidIdentifierError(
                f"{what}: {_show(joined)} would resolve outside the warehouse {warehouse!r} (after "
                "normalising separators, '..', URL escapes and Unicode); names must stay inside it"
            )
    return f"{warehouse.rstrip('/')}/{joined}" if warehouse.rstrip("/") else f"/{joined}"


def database_dir(warehouse: str, database: str) -> str:
    """The directory of ``database`` (a checked name) inside ``warehouse``."""
    return resolve(warehouse, [check_name(database, DATABASE) + DB_SUFFIX], f"database {_show(database)}")


def table_dir(warehouse: str, database: str, table: str) -> str:
    """The directory of ``database.table`` (checked names) inside ``warehouse``."""
    return resolve(
        warehouse,
        [check_name(database, DATABASE) + DB_SUFFIX, check_name(table, TABLE)],
        f"table {_show(database)}.{_show(table)}",
    )


# ---- options that would name paths ----------------------------------------------------------------

# Paimon options that move files elsewhere (a table path, external data paths, the branch). stratalake
# never reads them, but Paimon's own writers on the same table would: a table's files stay where the
# catalog puts them, so they cannot be set.
PATH_OPTIONS = frozenset(
    {
        "path",
        "location",
        "branch",
        "data-file.external-paths",
        "data-file.external-paths.strategy",
        "data-file.external-paths.specific-fs",
        "data-file.path-directory",
    }
)
# Of PATH_OPTIONS, those naming a branch: refused with what to do instead.
_BRANCH_OPTIONS = {
    "branch": "selects the branch Paimon reads and writes; stratalake opens a branch by name instead "
    "(the table 't$branch_<name>', or Table.branch(name))",
}
#: The option naming the branch whose partitions a batch read takes where the table lacks them.
FALLBACK_BRANCH = "scan.fallback-branch"
# Any other key that reads like a path setting (".path", "-dir", ".location"...).
_PATH_LIKE_KEY = re.compile(r"(^|[.-])(path|paths|dir|dirs|directory|location|external-paths?)$")
# Credentials (s3.secret-key, fs.s3a.secret.key, fs.s3a.access.key, tokens, passwords): a table's
# options are stored in its schema files and shown by t$options and SHOW TBLPROPERTIES, readable
# by anyone who may read the table, so they belong to the catalog or the session instead.
_CREDENTIAL_KEY = re.compile(r"secret|password|passwd|token|credential|access[-._]?key|private[-._]?key")
# Options whose value becomes part of a file name (in Paimon's writers): confined to one name.
FILE_NAME_OPTIONS = frozenset({"data-file.prefix", "changelog-file.prefix", "index-file.prefix"})


def is_credential_key(key: str) -> bool:
    """Whether option ``key`` names a credential (secret key, access key, token, password)."""
    return _CREDENTIAL_KEY.search(key.strip().lower()) is not None


#: What a credential's value is shown as.
REDACTED = "*********(redacted)"


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with the value of every credential key (:func:`is_credential_key`) replaced by
    :data:`REDACTED`: for whatever shows or logs options."""
    return {k: REDACTED if is_credential_key(str(k)) else v for k, v in options.items()}


def check_options(options: Mapping[str, str], table: str) -> None:
    """Refuse options that would decide where a table's files go (:class:`InvalidOptionError`).

    Checked where options are set (create, ALTER ... SET), not when a table is loaded.
    """
    option_support.check_settable(options, table)
    for key, value in options.items():
        k = str(key).strip().lower()
        if is_credential_key(k):
            raise InvalidOptionError(
                f"table {table}: option {key!r} is a credential and cannot be a table option (table "
                "options are stored in the table's schema files and shown by t$options, readable by "
                "anyone who may read the table); give it to the catalog instead (Catalog(warehouse, "
                "options={...}) or spark.sql.catalog.<name>.<key> in the Spark session)"
            )
        if k == FALLBACK_BRANCH and str(value).strip():
            try:
                check_branch_name(str(value), table)
            except InvalidIdentifierError as e:
                raise InvalidOptionError(f"option {key!r}: {e}") from None
        if k in _BRANCH_OPTIONS:
            raise InvalidOptionError(
                f"table {table}: option {key!r} {_BRANCH_OPTIONS[k]}, so it cannot be set"
            )
        if k in PATH_OPTIONS or _PATH_LIKE_KEY.search(k):
            raise InvalidOptionError(
                f"table {table}: option {key!r} would choose where the table's files go; a table's "
                "files always live in its directory inside the warehouse, so it cannot be set"
            )
        if k in FILE_NAME_OPTIONS:
            text = str(value)
            bad = (
                any(sep in unicodedata.normalize("NFKC", unquote(text)) for sep in _SEPARATORS)
                or ".." in text
                or any(unicodedata.category(ch) in _BAD_CATEGORIES for ch in text)
                or _PERCENT_ESCAPE.search(text)
            )
            if bad:
                raise InvalidOptionError(
                    f"table {table}: option {key!r}={_show(text)} becomes part of a file name; it must "
                    "not contain path separators, '..', URL escapes or control characters"
                )


def unknown_keys(options: Mapping[str, str]) -> dict[str, str | None]:
    """The keys of ``options`` that neither Paimon nor stratalake knows, each with the closest
    known key (None when nothing is close)."""
    known = sorted({*KNOWN_OPTIONS, *paimon_options.CORE_OPTIONS, *paimon_options.CONNECTOR_OPTIONS})
    out: dict[str, str | None] = {}
    for key in options:
        if key in known or key.startswith(paimon_options.PREFIXES):
            continue
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        out[key] = close[0] if close else None
    return out


def unknown_option_warnings(options: Mapping[str, str], table: str) -> list[str]:
    """A warning for each option key that neither Paimon (:mod:`stratalake.paimon_options`) nor
    stratalake (:data:`stratalake.options.KNOWN_OPTIONS`) knows, naming the closest known key.

    Paimon keeps unknown keys (a newer version's options stay readable), so they are stored, not
    refused; but a misspelt key ('bucket-keys', 'changelog-prodcuer') silently does nothing, so
    the user hears of it where the option is set."""
    out = []
    for key, close in unknown_keys(options).items():
        hint = f"did you mean '{close}'? " if close else ""
        out.append(
            f"table {table}: option '{key}' is neither a Paimon nor a stratalake option; it is kept "
            f"but has no effect ({hint}unset it with ALTER TABLE ... UNSET TBLPROPERTIES if it is a typo)"
        )
    return out


def warn_unknown_options(options: Mapping[str, str], table: str) -> None:
    """Log :func:`unknown_option_warnings` (create and ALTER ... SET, not table loads)."""
    for message in unknown_option_warnings(options, table):
        _LOG.warning("%s", message)
    notice = option_support.engine_tuning_notice(options, table)
    if notice:
        _LOG.warning("%s", notice)
