"""The formula language: parser, static types, evaluation, and schema-load errors."""

from __future__ import annotations

import functools
import math
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from codexmem.models.channel import ChannelSchema
from codexmem.models.formula import FormulaError, parse

NOW = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)

FIELD_TYPES: dict[str, str] = {
    "points": "number",
    "price": "currency",
    "done": "percentage",
    "stars": "rating",
    "title": "text",
    "status": "select",
    "reporter": "email",
    "phone": "phone",
    "site": "url",
    "doc": "file",
    "due": "date",
    "flag": "boolean",
    "tags": "multi_select",
    "blocks": "relation",
    "meta": "json",
}

VALUES: dict[str, Any] = {
    "points": 8,
    "price": 2.5,
    "stars": 4,
    "title": "Crash",
    "status": "in_progress",
    "due": "2026-03-13",
    "flag": True,
    "created_at": "2026-03-13T10:52:00.123Z",
    "updated_at": "2026-03-19T23:00:00Z",
}


def ev(expression: str, values: dict[str, Any] | None = None, now: datetime = NOW) -> Any:
    return parse(expression).evaluate(VALUES if values is None else values, now=now)


# ---------------------------------------------------------------------------- evaluation

EVALUATIONS: list[tuple[str, Any]] = [
    ("1 + 2 * 3", 7),
    ("(1 + 2) * 3", 9),
    ("10 - 4 - 3", 3),
    ("8 / 4 / 2", 1.0),
    ("7 / 2", 3.5),
    ("2 * 3 + 4 * 5", 26),
    ("-2 * 3", -6),
    ("--2", 2),
    ("2 - -3", 5),
    ("-(1 + 2) * 2", -6),
    ("1.5e2 + .5", 150.5),
    ("1 + 2 = 3", True),
    ("1 + 2 == 4", False),
    ("points != 8", False),
    ("points >= 8", True),
    ("points > 8", False),
    ("points <= 7.5", False),
    ("price < 3", True),
    ("points * 2 + stars", 20),
    ("'abc' < \"abd\"", True),
    ("title = 'Crash'", True),
    ("flag = true", True),
    ("flag != TRUE", False),
    ("title + ' (' + status + ')'", "Crash (in_progress)"),
    ('\'it\\\'s \' + "a \\"test\\""', 'it\'s a "test"'),
    ("IF(points > 5, 'big', 'small')", "big"),
    ("if(points > 10, 'big', 'small')", "small"),
    ("If(flag, 1, 2)", 1),
    ("IF(true, 1, 1 / 0)", 1),
    ("IF(points > 5, IF(stars = 4, 'a', 'b'), 'c')", "a"),
    ("ROUND(2.5, 0)", 3),
    ("ROUND(-2.5, 0)", -3),
    ("ROUND(2.675, 2)", 2.68),
    ("ROUND(3.14159, 2)", 3.14),
    ("ROUND(1250, -2)", 1300),
    ("ROUND(7 / 3)", 2),
    ("round(1e300, 15)", 1e300),
    ("days_between('2026-03-01', '2026-03-13')", 12),
    ("days_between('2026-03-13', '2026-03-01')", -12),
    ("days_between('2024-02-28', '2024-03-01')", 2),
    ("days_between(created_at, updated_at)", 6),
    ("days_between('2026-03-13T10:52:00Z', '2026-03-14T09:00:00Z')", 0),
    ("days_between('2026-03-14T09:00:00Z', '2026-03-13T10:52:00Z')", 0),
    ("days_between('2026-03-13T23:00:00-05:00', '2026-03-14T04:00:00Z')", 0),
    ("days_between('2026-03-13T00:00:00+02:00', '2026-03-14')", 1),
    ("days_between(due, today())", 7),
    ("DAYS_SINCE(due)", 7),
    ("days_since(created_at)", 6),
    ("days_since(created_at) > 5", True),
    ("today()", "2026-03-20"),
    ("due < today()", True),
    ("due = '2026-03-13'", True),
    ("created_at > due", True),
    ("created_at = '2026-03-13T10:52:00.123+00:00'", True),
]


@pytest.mark.parametrize(("expression", "expected"), EVALUATIONS)
def test_evaluate(expression: str, expected: Any) -> None:
    result = ev(expression)
    assert result == expected
    assert type(result) is type(expected)


def test_age_days_from_the_seed() -> None:
    formula = parse("days_since(created_at)")
    values = {"created_at": "2026-03-13T10:52:00.123Z"}
    assert formula.evaluate(values, now=datetime(2026, 3, 13, 10, 52, tzinfo=UTC)) == 0
    assert formula.evaluate(values, now=datetime(2026, 3, 14, 10, 51, tzinfo=UTC)) == 0
    assert formula.evaluate(values, now=datetime(2026, 3, 14, 10, 53, tzinfo=UTC)) == 1
    assert formula.evaluate(values, now=datetime(2026, 4, 13, 11, 0, tzinfo=UTC)) == 31
    tokyo = timezone(timedelta(hours=9))
    assert formula.evaluate(values, now=datetime(2026, 3, 20, 19, 51, tzinfo=tokyo)) == 6
    assert formula.evaluate(values, now=datetime(2026, 3, 20, 19, 53, tzinfo=tokyo)) == 7


def test_today_is_the_utc_date_of_now() -> None:
    late_in_new_york = datetime(2026, 3, 20, 22, 0, tzinfo=timezone(timedelta(hours=-5)))
    assert ev("today()", now=late_in_new_york) == "2026-03-21"


def test_now_must_be_aware() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        parse("today()").evaluate({}, now=datetime(2026, 3, 20))


NONE_RESULTS: list[str] = [
    "missing + 1",
    "points + missing",
    "-missing",
    "missing * 0",
    "title + missing",
    "missing = 1",
    "missing != missing",
    "IF(missing > 1, 1, 2)",
    "IF(flag, missing, 2)",
    "ROUND(missing, 2)",
    "ROUND(2.5, missing)",
    "days_between(missing, due)",
    "days_since(missing)",
    "days_since('not a date')",
    "days_since('2026-02-30')",
    "due < 'Friday'",
    "1 / 0",
    "points / (points - 8)",
    "1 / 0 + 1",
    "1e308 * 10",
    "-1e308 - 1e308",
    "ROUND(2.5, 0.5)",
    "ROUND(2.5, points * 10)",
]


@pytest.mark.parametrize("expression", NONE_RESULTS)
def test_missing_operands_and_division_by_zero_give_none(expression: str) -> None:
    assert ev(expression) is None


def test_wrongly_typed_stored_values_give_none() -> None:
    bad: dict[str, Any] = {
        "points": "8",
        "title": 3,
        "flag": 1,
        "due": 20260313,
        "created_at": ["x"],
        "price": math.nan,
        "stars": True,
    }
    for expression in (
        "points + 1",
        "title + 'x'",
        "IF(flag, 1, 2)",
        "days_since(due)",
        "days_since(created_at)",
        "price * 2",
        "stars + 1",
        "-stars",
        "price",
    ):
        assert ev(expression, bad) is None, expression


def test_boolean_ordering_at_run_time_gives_none() -> None:
    # check_types refuses this statically; evaluation of an unchecked formula still must not raise.
    assert ev("flag < true") is None


def test_large_integer_results_stay_json_safe() -> None:
    result = ev("99999999999999 * 99999999999999 * 99999999999999")
    assert isinstance(result, float)
    assert ev("points * 1e200 * 1e200") is None


# ------------------------------------------------------------------------------- parsing


def test_references() -> None:
    formula = parse("IF(points > 3, days_since(created_at), ROUND(-price * stars, 1)) + due_days")
    assert formula.references() == {"points", "created_at", "price", "stars", "due_days"}
    assert parse("1 + 2").references() == set()
    assert parse("TRUE").references() == set()


SYNTAX_ERRORS: list[tuple[str, str]] = [
    ("", "expected a value, got end of expression at position 0"),
    ("1 +", "expected a value, got end of expression at position 3"),
    ("(1 + 2", "expected ')' to close '(' at position 0, got end of expression at position 6"),
    ("1 2", "unexpected '2' at position 2"),
    ("1 + )", "expected a value, got ')' at position 4"),
    ("'abc", "unterminated string at position 0"),
    ("a < b < c", "comparisons cannot be chained; use parentheses at position 6"),
    ("1 $ 2", "unexpected character '$' at position 2"),
    ("12abc", "unexpected character 'a' after number at position 2"),
    ("1.2.3", "unexpected character '.' after number at position 3"),
    ("1e999", "number '1e999' is too large at position 0"),
    ("foo(1)", "unknown function 'foo' (known: IF, ROUND, days_between, days_since, today) at position 0"),
    ("IF(1, 2)", "IF takes 3 arguments, got 2 at position 0"),
    ("today(1)", "today takes 0 arguments, got 1 at position 0"),
    ("days_since()", "days_since takes 1 argument, got 0 at position 0"),
    ("ROUND(1, 2, 3)", "ROUND takes 1 or 2 arguments, got 3 at position 0"),
    ("IF(a, b c)", "expected ')' to close '(' at position 2, got 'c' at position 8"),
    ("a ! b", "unexpected character '!' at position 2"),
    ("a = = b", "expected a value, got '=' at position 4"),
    ("título", "unexpected character 'í' at position 1"),
    ("x" * 1001, "formula is 1001 characters long; the limit is 1000"),
    ("(" * 51 + "1" + ")" * 51, "expression is nested deeper than 50 levels at position 50"),
    ("-" * 51 + "1", "expression is nested deeper than 50 levels at position 50"),
    ("IF(" * 51, "expression is nested deeper than 50 levels at position 152"),
]


@pytest.mark.parametrize(("expression", "message"), SYNTAX_ERRORS)
def test_syntax_errors(expression: str, message: str) -> None:
    with pytest.raises(FormulaError) as info:
        parse(expression)
    assert str(info.value) == message


def test_syntax_error_position_attribute() -> None:
    with pytest.raises(FormulaError) as info:
        parse("1 + * 2")
    assert info.value.position == 4


def test_fifty_levels_are_allowed() -> None:
    assert parse("(" * 50 + "1" + ")" * 50).evaluate({}, now=NOW) == 1
    assert parse("-" * 50 + "1").evaluate({}, now=NOW) == 1


def test_long_flat_chains_are_fine() -> None:
    expression = " + ".join(["1"] * 250)
    assert len(expression) <= 1000
    assert parse(expression).evaluate({}, now=NOW) == 250


# --------------------------------------------------------------------------------- types

RESULT_TYPES: list[tuple[str, str]] = [
    ("points + price * done - stars", "number"),
    ("title + status + reporter + phone + site + doc", "text"),
    ("due", "date"),
    ("created_at", "date"),
    ("today()", "date"),
    ("IF(points > 1, due, created_at)", "date"),
    ("flag", "boolean"),
    ("due < today()", "boolean"),
    ("due = '2026-01-01'", "boolean"),
    ("flag = false", "boolean"),
    ("days_between(due, '2026-12-31')", "number"),
    ("days_since(updated_at)", "number"),
    ("ROUND(points / 3, 1)", "number"),
    ("ROUND(points, -15)", "number"),
    ("IF(flag, 'yes', 'no')", "text"),
]


@pytest.mark.parametrize(("expression", "result_type"), RESULT_TYPES)
def test_check_types(expression: str, result_type: str) -> None:
    assert parse(expression).check_types(FIELD_TYPES) == result_type


TYPE_ERRORS: list[tuple[str, str]] = [
    ("title * 2", "'*' needs two numbers, got text (title) and number at position 6"),
    (
        "points + title",
        "'+' needs two numbers or two texts, got number (points) and text (title) at position 7",
    ),
    ("1 + 2 + 'x'", "'+' needs two numbers or two texts, got number and text at position 6"),
    ("-title", "'-' needs a number, got text (title) at position 0"),
    ("due + 1", "'+' needs two numbers or two texts, got date (due) and number at position 4"),
    ("points = 'x'", "'=' cannot compare number (points) with text at position 7"),
    ("flag < true", "'<' cannot order true/false values at position 5"),
    (
        "IF(points, 1, 2)",
        "IF needs a true/false condition (such as a comparison) as its first argument, got number (points) "
        "at position 0",
    ),
    ("IF(flag, 1, 'x')", "IF branches must have the same type, got number and text at position 0"),
    ("ROUND(title, 1)", "ROUND needs numbers, got text (title) at position 0"),
    ("ROUND(1, 1.5)", "ROUND digits must be a whole number from -15 to 15 at position 0"),
    ("ROUND(1, -16)", "ROUND digits must be a whole number from -15 to 15 at position 0"),
    ("days_since(points)", "days_since needs dates, got number (points) at position 0"),
    ("days_between(due, flag)", "days_between needs dates, got boolean (flag) at position 0"),
    ("nope + 1", "unknown field 'nope' at position 0"),
    ("tags", "field 'tags' is a multi_select field and cannot be used in a formula at position 0"),
    (
        "IF(flag, blocks, 1)",
        "field 'blocks' is a relation field and cannot be used in a formula at position 9",
    ),
    ("meta = 1", "field 'meta' is a json field and cannot be used in a formula at position 0"),
    ("due < 'Friday'", "'Friday' is not a date as YYYY-MM-DD or an ISO timestamp at position 6"),
    (
        "days_since('2026-02-30')",
        "'2026-02-30' is not a date as YYYY-MM-DD or an ISO timestamp at position 11",
    ),
]


@pytest.mark.parametrize(("expression", "message"), TYPE_ERRORS)
def test_type_errors(expression: str, message: str) -> None:
    with pytest.raises(FormulaError) as info:
        parse(expression).check_types(FIELD_TYPES)
    assert str(info.value) == message


# ------------------------------------------------------------------- errors at schema load


def channel(*formulas: tuple[str, str, str]) -> dict[str, Any]:
    fields: list[dict[str, Any]] = [
        {"key": "points", "label": "Points", "type": "number"},
        {"key": "title", "label": "Title", "type": "text"},
        {
            "key": "tags",
            "label": "Tags",
            "type": "multi_select",
            "config": {"options": [{"value": "a", "label": "A", "color": "#000000"}]},
        },
    ]
    for key, expression, result_type in formulas:
        fields.append(
            {
                "key": key,
                "label": key.title(),
                "type": "formula",
                "config": {"expression": expression, "result_type": result_type},
            }
        )
    return {"record_channel_id": "bugs", "name": "Bugs", "fields": fields}


SCHEMA_FORMULA_ERRORS: list[tuple[list[tuple[str, str, str]], str]] = [
    (
        [("age_days", "days_since(created)", "number")],
        "fields[3].config.expression: unknown field 'created' "
        "(known: age_days, created_at, points, tags, title, updated_at)",
    ),
    (
        [("a", "b + 1", "number"), ("b", "a * 2", "number")],
        "fields[3].config.expression: formulas refer to each other in a cycle: a -> b -> a",
    ),
    (
        [("me", "me + 1", "number")],
        "fields[3].config.expression: formulas refer to each other in a cycle: me -> me",
    ),
    (
        [("double", "title * 2", "number")],
        "fields[3].config.expression: '*' needs two numbers, got text (title) and number at position 6",
    ),
    (
        [("broken", "points +", "number")],
        "fields[3].config.expression: expected a value, got end of expression at position 8",
    ),
    (
        [("label", "title + '!'", "number")],
        "fields[3].config.result_type: result_type is number but the expression computes text",
    ),
    (
        [("count", "tags + 1", "number")],
        "fields[3].config.expression: field 'tags' is a multi_select field and cannot be used in a formula",
    ),
    (
        [("deep", "(" * 60 + "1" + ")" * 60, "number")],
        "fields[3].config.expression: expression is nested deeper than 50 levels",
    ),
]


@pytest.mark.parametrize(("formulas", "message"), SCHEMA_FORMULA_ERRORS)
def test_formula_errors_are_reported_when_the_schema_loads(formulas: list[tuple[str, str, str]], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        ChannelSchema.model_validate(channel(*formulas))
    assert message in str(info.value)


def test_schema_reports_every_formula_problem_at_once() -> None:
    with pytest.raises(ValidationError) as info:
        ChannelSchema.model_validate(channel(("x", "nope", "number"), ("y", "title * 2", "number")))
    text = str(info.value)
    assert "fields[3].config.expression: unknown field 'nope'" in text
    assert "fields[4].config.expression: '*' needs two numbers" in text


def test_formulas_reading_formulas_are_computed_in_dependency_order() -> None:
    schema = ChannelSchema.model_validate(
        channel(
            ("c", "b * 10", "number"),
            ("a", "points + 1", "number"),
            ("b", "a + 1", "number"),
            ("big", "IF(c > 100, 'big', 'small')", "text"),
        )
    )
    assert schema.compute_formulas({"points": 10}, now=NOW) == {"a": 11, "b": 12, "c": 120, "big": "big"}
    assert schema.compute_formulas({}, now=NOW) == {"a": None, "b": None, "c": None, "big": None}
    formula = schema.formula("b")
    assert formula is not None
    assert formula.references() == {"a"}


# ---------------------------------------------------------------------------- hypothesis

TOKENS = [
    "1",
    "2.5",
    "0",
    "'a'",
    '"2026-03-01"',
    "points",
    "title",
    "due",
    "created_at",
    "true",
    "FALSE",
    "+",
    "-",
    "*",
    "/",
    "(",
    ")",
    ",",
    "=",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "IF",
    "ROUND",
    "days_between",
    "days_since",
    "today",
    "nope",
    "'",
    '"',
    "\\",
    ".",
    "1e",
]


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=1_100), st.lists(st.sampled_from(TOKENS), max_size=80).map(" ".join)))
def test_parse_raises_only_formula_error(text: str) -> None:
    try:
        formula = parse(text)
    except FormulaError:
        return
    try:
        formula.check_types(FIELD_TYPES)
    except FormulaError:
        return
    formula.evaluate(VALUES, now=NOW)


HYPO_FIELDS = {
    "n1": "number",
    "n2": "currency",
    "r": "rating",
    "t1": "text",
    "t2": "select",
    "d1": "date",
    "b1": "boolean",
}
REFS = {
    "number": ["n1", "n2", "r"],
    "text": ["t1", "t2"],
    "date": ["d1", "created_at", "updated_at"],
    "boolean": ["b1"],
}


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _leaf(kind: str) -> st.SearchStrategy[str]:
    refs = st.sampled_from(REFS[kind])
    if kind == "number":
        literals = st.one_of(
            st.integers(0, 10**20).map(str),
            st.floats(min_value=0, max_value=1e300).map(repr),
        )
        return st.one_of(refs, literals)
    if kind == "text":
        literal_dates = st.dates().map(lambda d: _quote(d.isoformat()))
        return st.one_of(refs, st.text(max_size=6).map(_quote), literal_dates)
    if kind == "date":
        return st.one_of(refs, st.just("today()"))
    return st.one_of(refs, st.sampled_from(["true", "false", "TRUE"]))


@functools.cache
def expr(kind: str, depth: int) -> st.SearchStrategy[str]:
    """Well-typed expressions of ``kind``, nested up to ``depth`` (cached: built once per pair)."""
    if depth == 0:
        return _leaf(kind)
    sub = depth - 1
    cond = expr("boolean", sub)
    options: list[st.SearchStrategy[str]] = [
        _leaf(kind),
        st.tuples(cond, expr(kind, sub), expr(kind, sub)).map(lambda t: f"IF({t[0]}, {t[1]}, {t[2]})"),
    ]
    # Text used as a date: text fields (which may or may not hold one) and literal ISO dates.
    dateish_text = st.one_of(st.sampled_from(REFS["text"]), st.dates().map(lambda d: _quote(d.isoformat())))
    if kind == "number":
        number = expr("number", sub)
        dateish = st.one_of(expr("date", sub), dateish_text)
        options += [
            st.tuples(number, st.sampled_from("+-*/"), number).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            number.map(lambda a: f"-{a}"),
            st.tuples(number, st.integers(-15, 15)).map(lambda t: f"ROUND({t[0]}, {t[1]})"),
            st.tuples(number, st.sampled_from(REFS["number"])).map(lambda t: f"ROUND({t[0]}, {t[1]})"),
            st.tuples(dateish, dateish).map(lambda t: f"days_between({t[0]}, {t[1]})"),
            dateish.map(lambda a: f"days_since({a})"),
        ]
    elif kind == "text":
        text = expr("text", sub)
        options.append(st.tuples(text, text).map(lambda t: f"({t[0]} + {t[1]})"))
    elif kind == "boolean":
        ops = st.sampled_from(["=", "==", "!=", "<", "<=", ">", ">="])
        for side in ("number", "text", "date"):
            options.append(st.tuples(expr(side, sub), ops, expr(side, sub)).map(lambda t: f"({t[0]} {t[1]} {t[2]})"))
        options.append(st.tuples(expr("date", sub), ops, dateish_text).map(lambda t: f"({t[0]} {t[1]} {t[2]})"))
        eq = st.sampled_from(["=", "!="])
        options.append(
            st.tuples(expr("boolean", sub), eq, expr("boolean", sub)).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
        )
    return st.one_of(*options)


def _timestamp(dt: datetime, z: bool) -> str:
    text = dt.isoformat()
    return text.replace("+00:00", "Z") if z else text


offsets = st.integers(-23 * 60, 23 * 60).map(lambda m: timezone(timedelta(minutes=m)))
timestamps = st.builds(
    _timestamp,
    st.datetimes(
        min_value=datetime(1900, 1, 1),
        max_value=datetime(2200, 1, 1),
        timezones=st.one_of(st.just(UTC), offsets),
    ),
    st.booleans(),
)
numbers = st.one_of(
    st.none(),
    st.integers(-(10**18), 10**18),
    st.floats(allow_nan=False, allow_infinity=False),
)
hypo_values = st.fixed_dictionaries(
    {
        "n1": numbers,
        "n2": numbers,
        "r": st.one_of(st.none(), st.integers(0, 10)),
        "t1": st.one_of(st.none(), st.text(max_size=20)),
        "t2": st.one_of(st.none(), st.sampled_from(["new", "in_progress", "2026-01-01"])),
        "d1": st.one_of(st.none(), st.dates().map(date.isoformat)),
        "b1": st.one_of(st.none(), st.booleans()),
        "created_at": st.one_of(st.none(), timestamps),
        "updated_at": st.one_of(st.none(), timestamps),
    }
)
nows = st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.just(UTC),
)
typed_exprs = st.sampled_from(["number", "text", "boolean", "date"]).flatmap(
    lambda kind: st.tuples(st.just(kind), expr(kind, 3).filter(lambda s: len(s) <= 1000))
)


def _matches(kind: str, result: Any) -> bool:
    if result is None:
        return True
    if kind == "number":
        return isinstance(result, int | float) and not isinstance(result, bool) and math.isfinite(result)
    if kind == "boolean":
        return isinstance(result, bool)
    return isinstance(result, str)


@settings(max_examples=500, deadline=None)
@given(typed_exprs, hypo_values, nows)
def test_well_typed_formulas_never_raise(typed: tuple[str, str], values: dict[str, Any], now: datetime) -> None:
    kind, expression = typed
    formula = parse(expression)
    assert formula.check_types(HYPO_FIELDS) == kind
    result = formula.evaluate(values, now=now)
    assert _matches(kind, result), (expression, result)


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10)),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(st.text(max_size=3), children)),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(typed_exprs, st.dictionaries(st.sampled_from([*HYPO_FIELDS, "created_at", "updated_at"]), json_values))
def test_evaluation_never_raises_on_garbage_values(typed: tuple[str, str], values: dict[str, Any]) -> None:
    _kind, expression = typed
    parse(expression).evaluate(values, now=NOW)
