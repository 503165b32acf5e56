"""Formula fields: a small expression language, parsed by hand and evaluated without ``eval``.

Expressions come from schema files that people and agents edit, so they are untrusted text. A
hand-written tokenizer and recursive-descent parser turn them into a frozen AST; nothing here
ever reaches ``eval``/``exec``/``compile``, and the only names an expression can touch are the
field values handed to :meth:`Formula.evaluate` and five built-in functions.

Grammar (lowest precedence first)::

    expr       := additive (("=" | "==" | "!=" | "<" | "<=" | ">" | ">=") additive)?
    additive   := term (("+" | "-") term)*
    term       := unary (("*" | "/") unary)*
    unary      := "-" unary | primary
    primary    := NUMBER | STRING | "true" | "false" | IDENT | IDENT "(" args? ")" | "(" expr ")"

Comparisons do not chain (``a < b < c`` is a syntax error) because the result would compare a
boolean with a number. Function names and ``true``/``false`` are case-insensitive.

Values at run time are plain JSON values: numbers, strings, booleans. Dates are strings, either
``YYYY-MM-DD`` or an ISO/RFC 3339 timestamp (``created_at``); timestamps without an offset are
taken as UTC. A missing or ``None`` operand, a value of the wrong kind, division by zero or an
overflow makes the whole result ``None``: a formula shown on a page must never break the read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any, Final, Literal, TypeAlias

MAX_EXPRESSION_LENGTH: Final = 1_000
MAX_DEPTH: Final = 50
MAX_ROUND_DIGITS: Final = 15
"""ROUND's digit argument must lie within +-this; larger values only burn CPU (``10 ** n``)."""

ValueType = Literal["number", "text", "boolean", "date"]
VALUE_TYPES: Final[tuple[ValueType, ...]] = ("number", "text", "boolean", "date")

FIELD_VALUE_TYPES: Final[Mapping[str, ValueType]] = {
    "number": "number",
    "currency": "number",
    "percentage": "number",
    "rating": "number",
    "text": "text",
    "email": "text",
    "phone": "text",
    "url": "text",
    "select": "text",
    "file": "text",
    "date": "date",
    "boolean": "boolean",
}
"""Channel field type -> formula value type. Types not listed cannot appear in a formula."""

BUILTIN_REFERENCES: Final[Mapping[str, ValueType]] = {"created_at": "date", "updated_at": "date"}
"""Item metadata a formula may read besides the channel's fields."""

FUNCTION_ARITY: Final[Mapping[str, tuple[int, ...]]] = {
    "if": (3,),
    "round": (1, 2),
    "days_between": (2,),
    "days_since": (1,),
    "today": (0,),
}

_MAX_EXACT_INT: Final = 2**53
_DAY: Final = timedelta(days=1)


class FormulaError(ValueError):
    """A formula that cannot be parsed or type-checked.

    A ``ValueError`` so pydantic validators turn it into a ``ValidationError`` unchanged.
    ``position`` is the 0-based character offset into the expression, when one applies.
    """

    def __init__(self, message: str, position: int | None = None) -> None:
        full = message if position is None else f"{message} at position {position}"
        super().__init__(full)
        self.message = full
        self.position = position


# --------------------------------------------------------------------------------------- AST


@dataclass(frozen=True, slots=True)
class Const:
    """A number, string or boolean literal."""

    value: int | float | str | bool
    pos: int


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference to a field key, ``created_at`` or ``updated_at``."""

    name: str
    pos: int


@dataclass(frozen=True, slots=True)
class Neg:
    """Unary minus."""

    operand: Node
    pos: int


@dataclass(frozen=True, slots=True)
class Arith:
    """A left-associative chain ``first op x op y ...`` of one precedence level.

    Kept flat (not nested binary nodes) so a long ``a + b + c + ...`` cannot make evaluation
    recurse deeper than the expression's parenthesis nesting.
    """

    first: Node
    rest: tuple[tuple[str, Node, int], ...]


@dataclass(frozen=True, slots=True)
class Compare:
    """One comparison; the result is a boolean."""

    op: str
    left: Node
    right: Node
    pos: int


@dataclass(frozen=True, slots=True)
class Call:
    """A call of a built-in function; ``name`` is lower-cased."""

    name: str
    args: tuple[Node, ...]
    pos: int


Node: TypeAlias = Const | Ref | Neg | Arith | Compare | Call


# --------------------------------------------------------------------------------- tokenizer


@dataclass(frozen=True, slots=True)
class _Token:
    kind: Literal["number", "string", "ident", "op", "end"]
    text: str
    value: int | float | str
    pos: int

    def describe(self) -> str:
        return "end of expression" if self.kind == "end" else repr(self.text)


_NUMBER_RE: Final = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_IDENT_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TWO_CHAR_OPS: Final = ("==", "!=", "<=", ">=")
_ONE_CHAR_OPS: Final = "=<>+-*/(),"
_COMPARE_OPS: Final = frozenset({"=", "==", "!=", "<", "<=", ">", ">="})
_ESCAPES: Final = {"n": "\n", "t": "\t"}


def _number_value(text: str, pos: int) -> int | float:
    if text.isdigit() and len(text) <= 15:
        return int(text)
    value = float(text)
    if not math.isfinite(value):
        raise FormulaError(f"number {text[:20]!r} is too large", pos)
    return value


def _read_string(src: str, start: int) -> tuple[str, int]:
    quote = src[start]
    out: list[str] = []
    i = start + 1
    while i < len(src):
        c = src[i]
        if c == quote:
            return "".join(out), i + 1
        if c == "\\" and i + 1 < len(src):
            nxt = src[i + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    raise FormulaError("unterminated string", start)


def _tokenize(src: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    n = len(src)
    while i < n:
        c = src[i]
        if c in " \t\r\n":
            i += 1
            continue
        m = _NUMBER_RE.match(src, i)
        if m:
            text = m.group()
            end = m.end()
            if end < n and (src[end].isalnum() or src[end] in "_."):
                raise FormulaError(f"unexpected character {src[end]!r} after number", end)
            tokens.append(_Token("number", text, _number_value(text, i), i))
            i = end
            continue
        m = _IDENT_RE.match(src, i)
        if m:
            tokens.append(_Token("ident", m.group(), m.group(), i))
            i = m.end()
            continue
        if c in "\"'":
            value, end = _read_string(src, i)
            tokens.append(_Token("string", src[i:end], value, i))
            i = end
            continue
        two = src[i : i + 2]
        if two in _TWO_CHAR_OPS:
            tokens.append(_Token("op", two, two, i))
            i += 2
            continue
        if c in _ONE_CHAR_OPS:
            tokens.append(_Token("op", c, c, i))
            i += 1
            continue
        raise FormulaError(f"unexpected character {c!r}", i)
    tokens.append(_Token("end", "", "", n))
    return tokens


# ------------------------------------------------------------------------------------ parser


class _Parser:
    """Recursive descent over the token list; ``depth`` bounds the recursion."""

    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.i = 0
        self.depth = 0

    def peek(self) -> _Token:
        return self.tokens[self.i]

    def advance(self) -> _Token:
        tok = self.tokens[self.i]
        if tok.kind != "end":
            self.i += 1
        return tok

    def at_op(self, *ops: str) -> bool:
        tok = self.peek()
        return tok.kind == "op" and tok.text in ops

    def enter(self, tok: _Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FormulaError(f"expression is nested deeper than {MAX_DEPTH} levels", tok.pos)

    def parse(self) -> Node:
        node = self.comparison()
        tok = self.peek()
        if tok.kind != "end":
            raise FormulaError(f"unexpected {tok.describe()}", tok.pos)
        return node

    def comparison(self) -> Node:
        left = self.additive()
        if self.at_op(*_COMPARE_OPS):
            op = self.advance()
            right = self.additive()
            if self.at_op(*_COMPARE_OPS):
                tok = self.peek()
                raise FormulaError("comparisons cannot be chained; use parentheses", tok.pos)
            return Compare(op.text, left, right, op.pos)
        return left

    def additive(self) -> Node:
        first = self.term()
        rest: list[tuple[str, Node, int]] = []
        while self.at_op("+", "-"):
            op = self.advance()
            rest.append((op.text, self.term(), op.pos))
        return Arith(first, tuple(rest)) if rest else first

    def term(self) -> Node:
        first = self.unary()
        rest: list[tuple[str, Node, int]] = []
        while self.at_op("*", "/"):
            op = self.advance()
            rest.append((op.text, self.unary(), op.pos))
        return Arith(first, tuple(rest)) if rest else first

    def unary(self) -> Node:
        if self.at_op("-"):
            tok = self.advance()
            self.enter(tok)
            operand = self.unary()
            self.depth -= 1
            return Neg(operand, tok.pos)
        return self.primary()

    def primary(self) -> Node:
        tok = self.advance()
        if tok.kind == "number":
            assert not isinstance(tok.value, str)
            return Const(tok.value, tok.pos)
        if tok.kind == "string":
            return Const(tok.value, tok.pos)
        if tok.kind == "ident":
            lowered = tok.text.lower()
            if self.at_op("("):
                return self.call(tok)
            if lowered in ("true", "false"):
                return Const(lowered == "true", tok.pos)
            return Ref(tok.text, tok.pos)
        if tok.kind == "op" and tok.text == "(":
            self.enter(tok)
            node = self.comparison()
            self.expect_close(tok)
            self.depth -= 1
            return node
        raise FormulaError(f"expected a value, got {tok.describe()}", tok.pos)

    def call(self, name_tok: _Token) -> Node:
        name = name_tok.text.lower()
        arity = FUNCTION_ARITY.get(name)
        if arity is None:
            known = ", ".join(["IF", "ROUND", "days_between", "days_since", "today"])
            raise FormulaError(f"unknown function {name_tok.text!r} (known: {known})", name_tok.pos)
        open_tok = self.advance()
        self.enter(open_tok)
        args: list[Node] = []
        if not self.at_op(")"):
            args.append(self.comparison())
            while self.at_op(","):
                self.advance()
                args.append(self.comparison())
        self.expect_close(open_tok)
        self.depth -= 1
        if len(args) not in arity:
            want = " or ".join(str(a) for a in arity)
            raise FormulaError(
                f"{name_tok.text} takes {want} argument{'s' if arity != (1,) else ''}, got {len(args)}",
                name_tok.pos,
            )
        return Call(name, tuple(args), name_tok.pos)

    def expect_close(self, open_tok: _Token) -> None:
        tok = self.peek()
        if not self.at_op(")"):
            raise FormulaError(f"expected ')' to close '(' at position {open_tok.pos}, got {tok.describe()}", tok.pos)
        self.advance()


def parse(expression: str) -> Formula:
    """Parse ``expression`` into a :class:`Formula`, or raise :class:`FormulaError`.

    Length and nesting are capped so hostile input cannot exhaust the stack or the CPU.
    """
    if not isinstance(expression, str):
        raise FormulaError("a formula must be a string")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise FormulaError(f"formula is {len(expression)} characters long; the limit is {MAX_EXPRESSION_LENGTH}")
    root = _Parser(_tokenize(expression)).parse()
    return Formula(expression, root)


# ------------------------------------------------------------------------------ type checking


def _describe(node: Node) -> str:
    if isinstance(node, Ref):
        return f" ({node.name})"
    return ""


def _const_int(node: Node) -> int | float | None:
    """The value of a literal number (possibly negated), for static argument checks."""
    if isinstance(node, Const) and not isinstance(node.value, bool | str):
        return node.value
    if isinstance(node, Neg):
        inner = _const_int(node.operand)
        return None if inner is None else -inner
    return None


def _dateish(t: ValueType) -> bool:
    return t in ("date", "text")


def _check_date_literal(node: Node) -> None:
    """A text literal used as a date must be one: ``due < 'Friday'`` is a typo, not a formula.

    Text *fields* used as dates are allowed and simply give None when they hold no date.
    """
    if isinstance(node, Const) and isinstance(node.value, str) and _to_datetime(node.value) is None:
        raise FormulaError(f"{node.value[:40]!r} is not a date as YYYY-MM-DD or an ISO timestamp", node.pos)


def _type_of(node: Node, field_types: Mapping[str, str]) -> ValueType:
    if isinstance(node, Const):
        if isinstance(node.value, bool):
            return "boolean"
        return "text" if isinstance(node.value, str) else "number"
    if isinstance(node, Ref):
        if node.name in BUILTIN_REFERENCES:
            return BUILTIN_REFERENCES[node.name]
        field_type = field_types.get(node.name)
        if field_type is None:
            raise FormulaError(f"unknown field {node.name!r}", node.pos)
        value_type = FIELD_VALUE_TYPES.get(field_type)
        if value_type is None:
            raise FormulaError(f"field {node.name!r} is a {field_type} field and cannot be used in a formula", node.pos)
        return value_type
    if isinstance(node, Neg):
        t = _type_of(node.operand, field_types)
        if t != "number":
            raise FormulaError(f"'-' needs a number, got {t}{_describe(node.operand)}", node.pos)
        return "number"
    if isinstance(node, Arith):
        acc = _type_of(node.first, field_types)
        left_node = node.first
        for op, operand, pos in node.rest:
            t = _type_of(operand, field_types)
            if op == "+" and acc == t == "text":
                acc = "text"
            elif acc == t == "number":
                acc = "number"
            else:
                want = "two numbers or two texts" if op == "+" else "two numbers"
                raise FormulaError(
                    f"'{op}' needs {want}, got {acc}{_describe(left_node)} and {t}{_describe(operand)}", pos
                )
            left_node = operand
        return acc
    if isinstance(node, Compare):
        lt = _type_of(node.left, field_types)
        rt = _type_of(node.right, field_types)
        same = lt == rt or (_dateish(lt) and _dateish(rt))
        if not same:
            raise FormulaError(
                f"'{node.op}' cannot compare {lt}{_describe(node.left)} with {rt}{_describe(node.right)}",
                node.pos,
            )
        if node.op not in ("=", "==", "!=") and lt == "boolean":
            raise FormulaError(f"'{node.op}' cannot order true/false values", node.pos)
        if "date" in (lt, rt):
            _check_date_literal(node.left)
            _check_date_literal(node.right)
        return "boolean"
    return _call_type(node, field_types)


def _call_type(node: Call, field_types: Mapping[str, str]) -> ValueType:
    types = [_type_of(arg, field_types) for arg in node.args]
    if node.name == "if":
        if types[0] != "boolean":
            raise FormulaError(
                f"IF needs a true/false condition (such as a comparison) as its first argument, "
                f"got {types[0]}{_describe(node.args[0])}",
                node.pos,
            )
        if types[1] != types[2]:
            raise FormulaError(f"IF branches must have the same type, got {types[1]} and {types[2]}", node.pos)
        return types[1]
    if node.name == "round":
        for arg, t in zip(node.args, types, strict=True):
            if t != "number":
                raise FormulaError(f"ROUND needs numbers, got {t}{_describe(arg)}", node.pos)
        if len(node.args) == 2:
            digits = _const_int(node.args[1])
            if digits is not None and (float(digits) != int(digits) or abs(int(digits)) > MAX_ROUND_DIGITS):
                raise FormulaError(
                    f"ROUND digits must be a whole number from -{MAX_ROUND_DIGITS} to {MAX_ROUND_DIGITS}",
                    node.pos,
                )
        return "number"
    if node.name in ("days_between", "days_since"):
        for arg, t in zip(node.args, types, strict=True):
            if not _dateish(t):
                raise FormulaError(f"{node.name} needs dates, got {t}{_describe(arg)}", node.pos)
            _check_date_literal(arg)
        return "number"
    return "date"  # today()


# --------------------------------------------------------------------------------- evaluation

_ISO_DATETIME_RE: Final = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?(?:Z|[+-][0-9]{2}(?::?[0-9]{2})?)?)?"
)


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _num(v: int | float) -> int | float | None:
    """Keep numbers JSON-safe: no inf/NaN, no integers beyond float precision."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if abs(v) > _MAX_EXACT_INT:
        try:
            f = float(v)
        except OverflowError:
            return None
        return f if math.isfinite(f) else None
    return v


def _is_iso(v: object) -> bool:
    return isinstance(v, str) and _ISO_DATETIME_RE.fullmatch(v) is not None


def _to_datetime(v: object) -> datetime | None:
    """A date or timestamp value as an aware datetime; plain dates are midnight UTC."""
    if isinstance(v, datetime):
        return v if v.tzinfo is not None else v.replace(tzinfo=UTC)
    if isinstance(v, date):
        return datetime(v.year, v.month, v.day, tzinfo=UTC)
    if not _is_iso(v):
        return None
    assert isinstance(v, str)
    try:
        parsed = datetime.fromisoformat(v)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _whole_days(delta: timedelta) -> int:
    """Elapsed whole days, truncated toward zero (23 hours is 0 days, -23 hours too)."""
    days = abs(delta) // _DAY
    return days if delta >= timedelta(0) else -days


def _days_between(a: object, b: object) -> int | None:
    da = _to_datetime(a)
    db = _to_datetime(b)
    if da is None or db is None:
        return None
    try:
        return _whole_days(db - da)
    except OverflowError:
        return None


def _arith(op: str, a: object, b: object) -> Any:
    if op == "+" and isinstance(a, str) and isinstance(b, str):
        return a + b
    if not (_is_number(a) and _is_number(b)):
        return None
    assert isinstance(a, int | float) and isinstance(b, int | float)
    try:
        if op == "+":
            result = a + b
        elif op == "-":
            result = a - b
        elif op == "*":
            result = a * b
        else:
            if b == 0:
                return None
            result = a / b
    except ArithmeticError:
        return None
    return _num(result)


def _temporal(v: object) -> bool:
    return isinstance(v, str | date)


def _plain_texts(a: object, b: object) -> bool:
    """Two strings compared as text, unless both look like ISO dates (those compare as instants)."""
    return isinstance(a, str) and isinstance(b, str) and not (_is_iso(a) and _is_iso(b))


def _compare(op: str, a: object, b: object) -> bool | None:
    left: Any
    right: Any
    if isinstance(a, bool) and isinstance(b, bool):
        if op not in ("=", "==", "!="):
            return None
        left, right = a, b
    elif (_is_number(a) and _is_number(b)) or _plain_texts(a, b):
        if op not in ("=", "==", "!=") and isinstance(a, str) and (_is_iso(a) or _is_iso(b)):
            return None  # a date ordered against text that is not a date means nothing
        left, right = a, b
    elif _temporal(a) and _temporal(b):
        left, right = _to_datetime(a), _to_datetime(b)
        if left is None or right is None:
            return None
    else:
        return None
    try:
        if op in ("=", "=="):
            return bool(left == right)
        if op == "!=":
            return bool(left != right)
        if op == "<":
            return bool(left < right)
        if op == "<=":
            return bool(left <= right)
        if op == ">":
            return bool(left > right)
        return bool(left >= right)
    except (OverflowError, TypeError):
        return None


def _round(x: object, n: object) -> int | float | None:
    """Half away from zero, like a spreadsheet (Python's round() rounds half to even)."""
    if not (_is_number(x) and _is_number(n)):
        return None
    assert isinstance(x, int | float) and isinstance(n, int | float)
    if isinstance(n, float) and not n.is_integer():
        return None
    digits = int(n)
    if abs(digits) > MAX_ROUND_DIGITS:
        return None
    exact = Decimal(x) if isinstance(x, int) else Decimal(repr(x))
    try:
        q = exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP, context=Context(prec=60))
    except InvalidOperation:
        return _num(x)  # more significant digits than rounding could change
    return _num(int(q) if digits <= 0 else float(q))


class _Evaluator:
    def __init__(self, values: Mapping[str, Any], now: datetime) -> None:
        self.values = values
        self.now = now

    def eval(self, node: Node) -> Any:
        if isinstance(node, Const):
            return node.value
        if isinstance(node, Ref):
            v = self.values.get(node.name)
            if isinstance(v, float) and not math.isfinite(v):
                return None
            return v
        if isinstance(node, Neg):
            v = self.eval(node.operand)
            return _num(-v) if _is_number(v) else None
        if isinstance(node, Arith):
            acc = self.eval(node.first)
            for op, operand, _pos in node.rest:
                if acc is None:
                    return None
                acc = _arith(op, acc, self.eval(operand))
            return acc
        if isinstance(node, Compare):
            a = self.eval(node.left)
            b = self.eval(node.right)
            if a is None or b is None:
                return None
            return _compare(node.op, a, b)
        return self.call(node)

    def call(self, node: Call) -> Any:
        if node.name == "if":
            cond = self.eval(node.args[0])
            if cond is True:
                return self.eval(node.args[1])
            if cond is False:
                return self.eval(node.args[2])
            return None
        if node.name == "round":
            digits = self.eval(node.args[1]) if len(node.args) == 2 else 0
            return _round(self.eval(node.args[0]), digits)
        if node.name == "days_between":
            return _days_between(self.eval(node.args[0]), self.eval(node.args[1]))
        if node.name == "days_since":
            return _days_between(self.eval(node.args[0]), self.now)
        return self.now.date().isoformat()  # today()


# ------------------------------------------------------------------------------------ Formula


@dataclass(frozen=True, slots=True)
class Formula:
    """A parsed expression. Immutable, so one parse can be shared by every read of a channel."""

    expression: str
    root: Node

    def references(self) -> set[str]:
        """Every identifier the expression reads (field keys, ``created_at``, ``updated_at``)."""
        found: set[str] = set()
        stack: list[Node] = [self.root]
        while stack:
            node = stack.pop()
            if isinstance(node, Ref):
                found.add(node.name)
            elif isinstance(node, Neg):
                stack.append(node.operand)
            elif isinstance(node, Arith):
                stack.append(node.first)
                stack.extend(operand for _op, operand, _pos in node.rest)
            elif isinstance(node, Compare):
                stack.extend((node.left, node.right))
            elif isinstance(node, Call):
                stack.extend(node.args)
        return found

    def check_types(self, field_types: Mapping[str, str]) -> ValueType:
        """The static result type, or :class:`FormulaError` for a type error.

        ``field_types`` maps each referenceable key to its channel field type (``points`` ->
        ``"number"``, ``title`` -> ``"text"``). For a formula field pass its ``result_type``.
        ``created_at``/``updated_at`` are always dates and need not be listed.
        """
        return _type_of(self.root, field_types)

    def evaluate(self, values: Mapping[str, Any], *, now: datetime) -> Any:
        """The value at read time, or ``None`` when an operand is missing or unusable.

        ``now`` must be timezone-aware (it is converted to UTC); ``today()`` is its UTC date.
        Never raises for any ``values``.
        """
        if now.tzinfo is None or now.utcoffset() is None:
            raise ValueError("now must be a timezone-aware datetime")
        return _Evaluator(values, now.astimezone(UTC)).eval(self.root)
