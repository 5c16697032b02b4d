"""A partition filter written as a Spark SQL condition (the ``where`` of ``CALL sys.compact``).

Paimon resolves ``where`` against the table with Spark and accepts only predicates on partition
columns. Procedures run in the bridge's Python worker, where no SparkSession exists, so this module
parses the small SQL subset such a filter needs into a :class:`~stratalake.expressions.Predicate`
(never ``eval``): ``AND`` / ``OR`` / ``NOT`` and parentheses over comparisons of a partition column
with a literal (``= == <> != < <= > >= <=>``), ``[NOT] IN (...)``, ``[NOT] BETWEEN .. AND ..`` and
``IS [NOT] NULL``. Literals: ``'text'`` (or ``"text"``), numbers, ``TRUE`` / ``FALSE``, ``NULL``,
``DATE '...'``, ``TIMESTAMP '...'``; each is cast to its column's type, as Spark's analyzer would.

Example::

    p = parse_partition_filter("dt >= '2024-01-01' AND hr IN (0, 12)", table)
    p.eval_values({"dt": "2024-01-02", "hr": 12})   # True
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from stratalake.exceptions import InvalidOptionError
from stratalake.expressions import Compare, Predicate
from stratalake.expressions import field as col
from stratalake.types import to_arrow

if TYPE_CHECKING:
    from stratalake.table.table import Table

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<string>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
    |(?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[lLdD]?|\.\d+(?:[eE][+-]?\d+)?)
    |(?P<ident>`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)
    |(?P<op><=>|==|<>|!=|<=|>=|=|<|>|\(|\)|,|-|\+)
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"and", "or", "not", "in", "between", "is", "null", "true", "false", "date", "timestamp"}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!=", "<=>": "<=>"}


class _Literal:
    """A literal value, kept apart from column references."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _unquote(text: str) -> str:
    quote, body = text[0], text[1:-1]
    body = body.replace(quote * 2, quote)
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), body)


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise InvalidOptionError(f"cannot parse the condition {text!r} at {text[pos : pos + 20]!r}")
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str, columns: dict[str, pa.DataType]) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.pos = 0
        self.columns = columns  # lower-cased partition column name -> (name, arrow type)
        self.names = {k.lower(): k for k in columns}

    # -- token helpers -----------------------------------------------------------------------------
    def _peek(self, offset: int = 0) -> tuple[str, str] | None:
        i = self.pos + offset
        return self.tokens[i] if i < len(self.tokens) else None

    def _keyword(self, word: str, offset: int = 0) -> bool:
        tok = self._peek(offset)
        return tok is not None and tok[0] == "ident" and tok[1].lower() == word

    def _take_keyword(self, word: str) -> bool:
        if self._keyword(word):
            self.pos += 1
            return True
        return False

    def _take_op(self, op: str) -> bool:
        tok = self._peek()
        if tok is not None and tok[0] == "op" and tok[1] == op:
            self.pos += 1
            return True
        return False

    def _fail(self, what: str) -> InvalidOptionError:
        tok = self._peek()
        where = f"at {tok[1]!r}" if tok is not None else "at the end"
        return InvalidOptionError(f"cannot parse the condition {self.text!r}: {what} {where}")

    # -- grammar -----------------------------------------------------------------------------------
    def parse(self) -> Predicate:
        p = self._or()
        if self._peek() is not None:
            raise self._fail("unexpected input")
        return p

    def _or(self) -> Predicate:
        p = self._and()
        while self._take_keyword("or"):
            p = p | self._and()
        return p

    def _and(self) -> Predicate:
        p = self._not()
        while self._take_keyword("and"):
            p = p & self._not()
        return p

    def _not(self) -> Predicate:
        if self._take_keyword("not"):
            return ~self._not()
        return self._predicate()

    def _predicate(self) -> Predicate:
        tok = self._peek()
        if tok is not None and tok == ("op", "("):
            # A parenthesized condition (a parenthesized literal is not a condition here).
            self.pos += 1
            p = self._or()
            if not self._take_op(")"):
                raise self._fail("expected ')'")
            return p
        left = self._operand()
        if self._take_keyword("is"):
            negated = self._take_keyword("not")
            if not self._take_keyword("null"):
                raise self._fail("expected NULL")
            name = self._column(left)
            return col(name).is_not_null() if negated else col(name).is_null()
        negated = self._take_keyword("not")
        if self._take_keyword("in"):
            name = self._column(left)
            if not self._take_op("("):
                raise self._fail("expected '('")
            values = [self._value(name, self._literal())]
            while self._take_op(","):
                values.append(self._value(name, self._literal()))
            if not self._take_op(")"):
                raise self._fail("expected ')'")
            p = col(name).isin([v for v in values if v is not None])
            return ~p if negated else p
        if self._take_keyword("between"):
            name = self._column(left)
            low = self._value(name, self._literal())
            if not self._take_keyword("and"):
                raise self._fail("expected AND")
            high = self._value(name, self._literal())
            p = Compare(name, ">=", low) & Compare(name, "<=", high)
            return ~p if negated else p
        if negated:
            raise self._fail("expected IN or BETWEEN")
        tok = self._peek()
        if (
            tok is None
            or tok[0] != "op"
            or tok[1] not in ("=", "==", "<>", "!=", "<", "<=", ">", ">=", "<=>")
        ):
            raise self._fail("expected a comparison")
        self.pos += 1
        op = {"==": "=", "<>": "!="}.get(tok[1], tok[1])
        right = self._operand()
        if isinstance(left, _Literal) and isinstance(right, str):
            left, right, op = right, left, _FLIPPED[op]
        if not isinstance(left, str) or not isinstance(right, _Literal):
            raise InvalidOptionError(
                f"condition {self.text!r}: only comparisons of a partition column with a literal are supported"
            )
        name = self._column(left)
        value = self._value(name, right)
        if op == "<=>":
            return col(name).is_null() if value is None else Compare(name, "=", value)
        if value is None:
            raise InvalidOptionError(
                f"condition {self.text!r}: a comparison with NULL is never true; use IS NULL / IS NOT NULL"
            )
        return Compare(name, op, value)

    def _operand(self) -> str | _Literal:
        tok = self._peek()
        if tok is not None and tok[0] == "ident" and tok[1].lower() not in _KEYWORDS:
            self.pos += 1
            return tok[1][1:-1].replace("``", "`") if tok[1].startswith("`") else tok[1]
        return self._literal()

    def _literal(self) -> _Literal:
        tok = self._peek()
        if tok is None:
            raise self._fail("expected a value")
        kind, text = tok
        if kind == "op" and text in ("-", "+"):
            self.pos += 1
            nxt = self._peek()
            if nxt is None or nxt[0] != "number":
                raise self._fail("expected a number")
            self.pos += 1
            value = _number(nxt[1])
            return _Literal(-value if text == "-" else value)
        self.pos += 1
        if kind == "string":
            return _Literal(_unquote(text))
        if kind == "number":
            return _Literal(_number(text))
        if kind == "ident":
            word = text.lower()
            if word == "null":
                return _Literal(None)
            if word in ("true", "false"):
                return _Literal(word == "true")
            if word in ("date", "timestamp"):
                nxt = self._peek()
                if nxt is None or nxt[0] != "string":
                    raise self._fail(f"expected a quoted {word.upper()} value")
                self.pos += 1
                raw = _unquote(nxt[1]).strip()
                try:
                    if word == "date":
                        return _Literal(dt.date.fromisoformat(raw))
                    return _Literal(dt.datetime.fromisoformat(raw))
                except ValueError:
                    raise InvalidOptionError(f"condition {self.text!r}: {raw!r} is not a {word}") from None
        self.pos -= 1
        raise self._fail("expected a value")

    def _column(self, operand: str | _Literal) -> str:
        if not isinstance(operand, str):
            raise self._fail("expected a column")
        name = self.names.get(operand.lower())
        if name is None:
            raise InvalidOptionError(
                f"only partition predicates are supported: the condition {self.text!r} uses column "
                f"'{operand}', but the partition columns are {list(self.columns)}"
            )
        return name

    def _value(self, name: str, literal: _Literal) -> Any:
        value = literal.value
        if value is None:
            return None
        target = self.columns[name]
        try:
            return pa.array([value]).cast(target)[0].as_py()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError):
            raise InvalidOptionError(
                f"condition {self.text!r}: {value!r} is not a value of partition column '{name}' ({target})"
            ) from None


def _number(text: str) -> int | float | Decimal:
    body = text.rstrip("lLdD")
    if text[-1:] in ("d", "D"):
        return float(body)
    if re.fullmatch(r"\d+", body):
        return int(body)
    if "e" in body.lower():
        return float(body)
    return Decimal(body)


def parse_partition_filter(text: str, table: Table) -> Predicate:
    """``text`` (a SQL condition over ``table``'s partition columns) as a predicate on partition
    values; raises :class:`~stratalake.exceptions.InvalidOptionError` for anything else."""
    schema = table.schema()
    columns = {k: to_arrow(schema.field(k).type) for k in schema.partition_keys}
    if not text or not text.strip():
        raise InvalidOptionError(f"table {table.identifier}: the partition condition is empty")
    if not columns:
        raise InvalidOptionError(
            f"table {table.identifier} is not partitioned; a 'where' condition selects partitions"
        )
    try:
        return _Parser(text.strip(), columns).parse()
    except InvalidOptionError as e:
        raise InvalidOptionError(f"table {table.identifier}: {e}") from None
