"""Field-value validation of record items, and the channel schema model that drives it."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from codexmem.errors import CodexmemError
from codexmem.models.channel import ChannelSchema
from codexmem.records.fields import preview_values, unique_keys, validate_values

STATUS_OPTIONS = [
    {"value": "new", "label": "New", "color": "#64748b"},
    {"value": "triaged", "label": "Triaged", "color": "#0ea5e9"},
    {"value": "in_progress", "label": "In progress", "color": "#f59e0b"},
    {"value": "fixed", "label": "Fixed", "color": "#22c55e"},
    {"value": "wont_fix", "label": "Won't fix", "color": "#94a3b8"},
]
OWNER_OPTIONS = [
    {"value": "aiko", "label": "Aiko", "color": "#a855f7"},
    {"value": "mika", "label": "Mika", "color": "#ec4899"},
    {"value": "ren", "label": "Ren", "color": "#14b8a6"},
]
SEVERITY_OPTIONS = [
    {"value": "s1", "label": "S1 Critical", "color": "#ef4444"},
    {"value": "s2", "label": "S2 Major", "color": "#f97316"},
    {"value": "s3", "label": "S3 Minor", "color": "#eab308"},
]
AREA_OPTIONS = [
    {"value": "ui", "label": "UI", "color": "#3b82f6"},
    {"value": "api", "label": "API", "color": "#8b5cf6"},
    {"value": "storage", "label": "Storage", "color": "#10b981"},
]

BUGS: dict[str, Any] = {
    "record_channel_id": "bugs",
    "name": "Bugs",
    "description": "The bug tracker from the record-channel write-up.",
    "fields": [
        {"key": "ticket", "label": "Ticket", "type": "text", "is_required": True, "is_unique": True},
        {
            "key": "title",
            "label": "Title",
            "type": "text",
            "is_required": True,
            "config": {"max_length": 200},
        },
        {"key": "description", "label": "Description", "type": "text"},
        {"key": "status", "label": "Status", "type": "select", "config": {"options": STATUS_OPTIONS}},
        {"key": "owner", "label": "Owner", "type": "select", "config": {"options": OWNER_OPTIONS}},
        {"key": "severity", "label": "Severity", "type": "select", "config": {"options": SEVERITY_OPTIONS}},
        {"key": "points", "label": "Points", "type": "number", "config": {"min": 0, "max": 13}},
        {"key": "area", "label": "Area", "type": "select", "config": {"options": AREA_OPTIONS}},
        {"key": "due", "label": "Due", "type": "date"},
        {"key": "reporter", "label": "Reporter", "type": "email"},
        {
            "key": "age_days",
            "label": "Age (days)",
            "type": "formula",
            "config": {"expression": "days_since(created_at)", "result_type": "number"},
        },
    ],
}

TAG_OPTIONS = [
    {"value": "bug", "label": "Bug", "color": "#ef4444"},
    {"value": "ux", "label": "UX", "color": "#3b82f6"},
]

ALL_TYPES: dict[str, Any] = {
    "record_channel_id": "everything",
    "name": "Every field type",
    "fields": [
        {"key": "text", "label": "Text", "type": "text", "config": {"max_length": 10}},
        {"key": "long_text", "label": "Long text", "type": "text"},
        {"key": "number", "label": "Number", "type": "number", "config": {"min": -5, "max": 5}},
        {"key": "low", "label": "Low bound", "type": "number", "config": {"min": 1}},
        {"key": "high", "label": "High bound", "type": "number", "config": {"max": 1.5}},
        {"key": "free", "label": "Unbounded", "type": "number"},
        {"key": "price", "label": "Price", "type": "currency", "config": {"min": 0}},
        {"key": "done_pct", "label": "Done", "type": "percentage"},
        {"key": "stars", "label": "Stars", "type": "rating", "config": {"max_stars": 5}},
        {"key": "flag", "label": "Flag", "type": "boolean"},
        {"key": "due", "label": "Due", "type": "date"},
        {"key": "email", "label": "Email", "type": "email"},
        {"key": "phone", "label": "Phone", "type": "phone"},
        {"key": "site", "label": "Site", "type": "url"},
        {"key": "status", "label": "Status", "type": "select", "config": {"options": STATUS_OPTIONS}},
        {"key": "tags", "label": "Tags", "type": "multi_select", "config": {"options": TAG_OPTIONS}},
        {"key": "blocks", "label": "Blocks", "type": "relation", "config": {"channel": "bugs"}},
        {"key": "attachment", "label": "Attachment", "type": "file"},
        {"key": "meta", "label": "Meta", "type": "json"},
        {
            "key": "score",
            "label": "Score",
            "type": "formula",
            "config": {"expression": "number * 2", "result_type": "number"},
        },
    ],
}

EXISTING_IDS = {"01HBUG1", "01HBUG2"}


def relation_exists(channel: str, item_id: str) -> bool:
    return channel == "bugs" and item_id in EXISTING_IDS


def bugs() -> ChannelSchema:
    return ChannelSchema.model_validate(BUGS)


def everything() -> ChannelSchema:
    return ChannelSchema.model_validate(ALL_TYPES)


def reject(schema: ChannelSchema, values: dict[str, Any], **kwargs: Any) -> list[dict[str, Any]]:
    options: dict[str, Any] = {"existing": {}, "partial": True, "relation_exists": relation_exists}
    options.update(kwargs)
    with pytest.raises(CodexmemError) as info:
        validate_values(schema, values, **options)
    assert info.value.code == "ERR_VALIDATION_FAILED"
    assert info.value.fields is not None
    return info.value.fields


def accept(schema: ChannelSchema, values: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"existing": {}, "partial": True, "relation_exists": relation_exists}
    options.update(kwargs)
    return validate_values(schema, values, **options)


# ------------------------------------------------------------------------------ every type

ACCEPTED: list[tuple[str, Any]] = [
    ("text", ""),
    ("text", "ten chars!"),
    ("text", "ünïcödé ✓"),
    ("long_text", "x" * 10_000),
    ("number", 0),
    ("number", -5),
    ("number", 5),
    ("number", 4.99),
    ("number", -0.0),
    ("low", 1),
    ("low", 10**12),
    ("high", 1.5),
    ("high", -(10**12)),
    ("free", 1e300),
    ("price", 19.99),
    ("done_pct", 0),
    ("done_pct", 100),
    ("done_pct", 33.3),
    ("stars", 0),
    ("stars", 5),
    ("flag", True),
    ("flag", False),
    ("due", "2026-02-28"),
    ("due", "2024-02-29"),
    ("email", "aiko@example.com"),
    ("email", "first.last+tag@mail.example.co.uk"),
    ("phone", "+1 (555) 123-4567"),
    ("phone", "030.1234.5678"),
    ("phone", "1234567"),
    ("site", "https://example.com"),
    ("site", "http://localhost:8080/path?q=1#frag"),
    ("site", "HTTPS://Example.com/"),
    ("status", "in_progress"),
    ("tags", []),
    ("tags", ["bug"]),
    ("tags", ["bug", "ux"]),
    ("blocks", []),
    ("blocks", ["01HBUG1", "01HBUG2"]),
    ("attachment", "docs/design.md"),
    ("attachment", "a"),
    ("attachment", "./notes/x..y.txt"),
    ("meta", None),  # None clears; covered separately, kept here to show it is not a json value
    ("meta", {"a": [1, 2.5, "x", True, None]}),
    ("meta", [1, "two"]),
    ("meta", "just a string"),
    ("meta", 0),
    ("meta", False),
]


@pytest.mark.parametrize(("key", "value"), ACCEPTED)
def test_accepted_values(key: str, value: Any) -> None:
    merged = accept(everything(), {key: value})
    if value is None:
        assert key not in merged
    else:
        assert merged == {key: value}


STATUS_EXTRA: dict[str, Any] = {
    "allowed": ["new", "triaged", "in_progress", "fixed", "wont_fix"],
    "options": [{"value": o["value"], "label": o["label"]} for o in STATUS_OPTIONS],
}
TAG_EXTRA: dict[str, Any] = {
    "allowed": ["bug", "ux"],
    "options": [{"value": "bug", "label": "Bug"}, {"value": "ux", "label": "UX"}],
}
NUMBER_EXTRA = {"min": -5, "max": 5}
PCT_EXTRA = {"min": 0, "max": 100}
STARS_EXTRA = {"min": 0, "max": 5}
DATE_EXTRA = {"format": "YYYY-MM-DD"}
PHONE_RULE = "must be a phone number: an optional +, then 7 to 15 digits with spaces, dashes, dots or parentheses"
URL_RULE = "must be an http or https URL with a host"
PATH_RULE = "must be a repository-relative path with forward slashes"
NO_GIVEN = object()

# (key, value, message, extra keys besides key/message/given, given or NO_GIVEN if not echoed)
REJECTED: list[tuple[str, Any, str, dict[str, Any], Any]] = [
    ("text", 5, "values.text must be text, got 5", {"max_length": 10}, 5),
    # An escape sequence was stored and `items list` printed it raw to the terminal.
    (
        "long_text",
        "red \x1b[31m",
        "values.long_text must not hold control characters (U+001B at character 5); tabs and line breaks are fine",
        {},
        NO_GIVEN,
    ),
    (
        "text",
        "eleven char",
        "values.text must be at most 10 characters, got 11",
        {"max_length": 10},
        "eleven char",
    ),
    (
        "long_text",
        "x" * 10_001,
        "values.long_text must be at most 10000 characters, got 10001",
        {"max_length": 10_000},
        NO_GIVEN,
    ),
    ("number", "5", 'values.number must be a number, got "5"', NUMBER_EXTRA, "5"),
    ("number", True, "values.number must be a number, got true", NUMBER_EXTRA, True),
    ("number", 6, "values.number must be between -5 and 5, got 6", NUMBER_EXTRA, 6),
    ("number", -5.5, "values.number must be between -5 and 5, got -5.5", NUMBER_EXTRA, -5.5),
    ("number", math.nan, "values.number must be a finite number, got NaN", NUMBER_EXTRA, NO_GIVEN),
    ("number", math.inf, "values.number must be a finite number, got Infinity", NUMBER_EXTRA, NO_GIVEN),
    ("number", [1], "values.number must be a number, got [1]", NUMBER_EXTRA, [1]),
    ("low", 0, "values.low must be at least 1, got 0", {"min": 1}, 0),
    ("high", 1.6, "values.high must be at most 1.5, got 1.6", {"max": 1.5}, 1.6),
    ("free", 10**400, f"values.free must be a finite number, got {str(10**400)[:80]}…", {}, NO_GIVEN),
    ("price", -0.01, "values.price must be at least 0, got -0.01", {"min": 0}, -0.01),
    ("done_pct", 101, "values.done_pct must be between 0 and 100, got 101", PCT_EXTRA, 101),
    ("done_pct", -1, "values.done_pct must be between 0 and 100, got -1", PCT_EXTRA, -1),
    ("done_pct", "50%", 'values.done_pct must be a number, got "50%"', PCT_EXTRA, "50%"),
    ("stars", 6, "values.stars must be a whole number from 0 to 5, got 6", STARS_EXTRA, 6),
    ("stars", -1, "values.stars must be a whole number from 0 to 5, got -1", STARS_EXTRA, -1),
    ("stars", 3.0, "values.stars must be a whole number from 0 to 5, got 3.0", STARS_EXTRA, 3.0),
    ("stars", 2.5, "values.stars must be a whole number from 0 to 5, got 2.5", STARS_EXTRA, 2.5),
    ("stars", True, "values.stars must be a whole number from 0 to 5, got true", STARS_EXTRA, True),
    ("flag", 1, "values.flag must be true or false, got 1", {}, 1),
    ("flag", 0, "values.flag must be true or false, got 0", {}, 0),
    ("flag", "true", 'values.flag must be true or false, got "true"', {}, "true"),
    ("due", "Friday", 'values.due must be a date as YYYY-MM-DD, got "Friday"', DATE_EXTRA, "Friday"),
    (
        "due",
        "2026-02-30",
        'values.due must be a date as YYYY-MM-DD, got "2026-02-30" (no such calendar day)',
        DATE_EXTRA,
        "2026-02-30",
    ),
    ("due", "2026-3-1", 'values.due must be a date as YYYY-MM-DD, got "2026-3-1"', DATE_EXTRA, "2026-3-1"),
    (
        "due",
        "2026-03-13T10:52:00Z",
        'values.due must be a date as YYYY-MM-DD, got "2026-03-13T10:52:00Z"',
        DATE_EXTRA,
        "2026-03-13T10:52:00Z",
    ),
    (
        "due",
        "٢٠٢٦-٠٣-٠١",
        'values.due must be a date as YYYY-MM-DD, got "٢٠٢٦-٠٣-٠١"',
        DATE_EXTRA,
        "٢٠٢٦-٠٣-٠١",
    ),
    ("due", 20260301, "values.due must be a date as YYYY-MM-DD, got 20260301", DATE_EXTRA, 20260301),
    *[
        ("email", bad, f"values.email must be an email address like name@example.com, got {shown}", {}, bad)
        for bad, shown in [
            ("aiko", '"aiko"'),
            ("aiko@example", '"aiko@example"'),
            ("a@b@example.com", '"a@b@example.com"'),
            ("aiko @example.com", '"aiko @example.com"'),
            ("@example.com", '"@example.com"'),
            ("aiko@example..com", '"aiko@example..com"'),
            ("aiko@.com", '"aiko@.com"'),
            ("<aiko@example.com>", '"<aiko@example.com>"'),
            (42, "42"),
        ]
    ],
    (
        "email",
        "a" * 250 + "@x.io",
        "values.email must be at most 254 characters, got 255",
        {"max_length": 254},
        NO_GIVEN,
    ),
    *[
        ("phone", bad, f"values.phone {PHONE_RULE}, got {shown}", {}, bad)
        for bad, shown in [
            ("123456", '"123456"'),
            ("1234567890123456", '"1234567890123456"'),
            ("call me", '"call me"'),
            ("+1 555 CALL-NOW", '"+1 555 CALL-NOW"'),
            ("555+1234567", '"555+1234567"'),
            (5551234567, "5551234567"),
        ]
    ],
    *[
        ("site", bad, f"values.site {URL_RULE}, got {shown} ({why})", {}, bad)
        for bad, shown, why in [
            ("javascript:alert(1)", '"javascript:alert(1)"', "javascript: links are not allowed"),
            ("file:///etc/passwd", '"file:///etc/passwd"', "file: links are not allowed"),
            ("data:text/html,hi", '"data:text/html,hi"', "data: links are not allowed"),
            ("ftp://example.com/x", '"ftp://example.com/x"', "ftp: links are not allowed"),
            ("example.com", '"example.com"', "it has no http:// or https://"),
            ("https://", '"https://"', "it has no host"),
            ("http:///path", '"http:///path"', "it has no host"),
            ("https://exa mple.com", '"https://exa mple.com"', "it contains spaces or control characters"),
            ("http://[::1", '"http://[::1"', "it cannot be parsed"),
            ("http://example.com:port", '"http://example.com:port"', "it cannot be parsed"),
        ]
    ],
    ("site", 7, "values.site must be an http or https URL with a host, got 7", {}, 7),
    (
        "site",
        "https://example.com/" + "a" * 2030,
        "values.site must be at most 2048 characters, got 2050",
        {"max_length": 2048},
        NO_GIVEN,
    ),
    (
        "status",
        "In progress",
        'values.status must be one of the option values, got "In progress" (that is the label of "in_progress")',
        STATUS_EXTRA,
        "In progress",
    ),
    (
        "status",
        "won't FIX",
        'values.status must be one of the option values, got "won\'t FIX" (that is the label of "wont_fix")',
        STATUS_EXTRA,
        "won't FIX",
    ),
    (
        "status",
        "FIXED",
        'values.status must be one of the option values, got "FIXED" (that is the label of "fixed")',
        STATUS_EXTRA,
        "FIXED",
    ),
    (
        "status",
        "In_Progress",
        'values.status must be one of the option values, got "In_Progress" '
        '(option values are case-sensitive: "in_progress")',
        STATUS_EXTRA,
        "In_Progress",
    ),
    ("status", "done", 'values.status must be one of the option values, got "done"', STATUS_EXTRA, "done"),
    ("status", ["new"], 'values.status must be one of the option values, got ["new"]', STATUS_EXTRA, ["new"]),
    ("status", 3, "values.status must be one of the option values, got 3", STATUS_EXTRA, 3),
    ("tags", "bug", 'values.tags must be a list of option values, got "bug"', TAG_EXTRA, "bug"),
    (
        "tags",
        ["Bug", "nope", "ux"],
        'values.tags must contain only option values, got "Bug" (that is the label of "bug"), "nope"',
        TAG_EXTRA,
        ["Bug", "nope", "ux"],
    ),
    (
        "tags",
        ["bug", "bug"],
        'values.tags must not repeat an option value, got "bug" more than once',
        TAG_EXTRA,
        ["bug", "bug"],
    ),
    (
        "blocks",
        "01HBUG1",
        'values.blocks must be a list of item ids from channel bugs, got "01HBUG1"',
        {},
        "01HBUG1",
    ),
    ("blocks", [1], "values.blocks must be a list of item ids from channel bugs, got [1]", {}, [1]),
    ("blocks", [""], 'values.blocks must be a list of item ids from channel bugs, got [""]', {}, [""]),
    (
        "blocks",
        ["01HBUG1", "01HGONE", "01HNOPE"],
        'values.blocks refers to items that do not exist in channel bugs: "01HGONE", "01HNOPE"',
        {},
        ["01HBUG1", "01HGONE", "01HNOPE"],
    ),
    (
        "blocks",
        ["01HBUG1", "01HBUG1"],
        'values.blocks must not repeat an item id, got "01HBUG1" more than once',
        {},
        ["01HBUG1", "01HBUG1"],
    ),
    *[
        ("attachment", bad, f"values.attachment {PATH_RULE}, got {shown} ({why})", {}, bad)
        for bad, shown, why in [
            ("/etc/passwd", '"/etc/passwd"', "it starts with /"),
            ("../secrets.txt", '"../secrets.txt"', "it contains a .. segment"),
            ("docs/../../x", '"docs/../../x"', "it contains a .. segment"),
            ("docs\\x.md", '"docs\\\\x.md"', "it contains a backslash; use forward slashes"),
            ("C:/Windows", '"C:/Windows"', "it starts with a drive letter"),
            ("c:file", '"c:file"', "it starts with a drive letter"),
            ("a\x00b", '"a\\u0000b"', "it contains a NUL character"),
            ("a\nb", '"a\\nb"', "it contains control characters"),
            ("docs//x.md", '"docs//x.md"', "it contains an empty segment"),
            ("docs/", '"docs/"', "it contains an empty segment"),
            ("", '""', "it is empty"),
        ]
    ],
    (
        "attachment",
        ["a.md"],
        'values.attachment must be a repository-relative path with forward slashes, got ["a.md"]',
        {},
        ["a.md"],
    ),
    (
        "attachment",
        "a/" * 600,
        "values.attachment must be at most 1024 characters, got 1200",
        {"max_length": 1024},
        NO_GIVEN,
    ),
    (
        "meta",
        {1: "x"},
        "values.meta must be plain JSON (objects with string keys, arrays, strings, numbers, true, false, "
        'null), got {"1": "x"} (object keys must be strings, got int)',
        {},
        NO_GIVEN,
    ),
    (
        "meta",
        {"x": {1, 2}},
        "values.meta must be plain JSON (objects with string keys, arrays, strings, numbers, true, false, "
        "null), got a dict (a set is not JSON)",
        {},
        NO_GIVEN,
    ),
    (
        "meta",
        [math.nan],
        "values.meta must be plain JSON (objects with string keys, arrays, strings, numbers, true, false, "
        "null), got [NaN] (NaN and infinity are not JSON)",
        {},
        NO_GIVEN,
    ),
    (
        "meta",
        ("a", "b"),
        "values.meta must be plain JSON (objects with string keys, arrays, strings, numbers, true, false, "
        'null), got ["a", "b"] (a tuple is not JSON)',
        {},
        NO_GIVEN,
    ),
    (
        "meta",
        {"blob": "x" * 8_200},
        "values.meta must be at most 8192 bytes as compact JSON, got 8211 bytes",
        {"max_length": 8192},
        NO_GIVEN,
    ),
    (
        "meta",
        list(range(9_000)),
        "values.meta must be at most 8192 bytes as compact JSON, got more",
        {"max_length": 8192},
        NO_GIVEN,
    ),
    (
        "meta",
        "é" * 4_100,
        "values.meta must be at most 8192 bytes as compact JSON, got 8202 bytes",
        {"max_length": 8192},
        NO_GIVEN,
    ),
]


@pytest.mark.parametrize(
    ("key", "value", "message", "extra", "given"),
    REJECTED,
    ids=[f"{row[0]}-{i}" for i, row in enumerate(REJECTED)],
)
def test_rejected_values(key: str, value: Any, message: str, extra: dict[str, Any], given: Any) -> None:
    [entry] = reject(everything(), {key: value})
    expected: dict[str, Any] = {"key": key, "message": message, **extra}
    if given is not NO_GIVEN:
        expected["given"] = given
    assert entry == expected


def test_deep_json_is_refused_without_recursion_error() -> None:
    deep: Any = "x"
    for _ in range(5_000):
        deep = [deep]
    [entry] = reject(everything(), {"meta": deep})
    assert entry["key"] == "meta"
    assert entry["message"].endswith("(nested more than 100 levels)")


def test_huge_integer_in_json_is_refused() -> None:
    [entry] = reject(everything(), {"meta": [10**5000]})
    assert entry["message"] == "values.meta must be at most 8192 bytes as compact JSON, got more"


def test_never_coerces_accepted_values() -> None:
    values = {"number": 3, "high": 1.5, "status": "new", "tags": ["ux", "bug"], "meta": {"k": [1]}}
    merged = accept(everything(), values)
    assert merged == values
    assert type(merged["number"]) is int
    assert merged["tags"] == ["ux", "bug"]


# ---------------------------------------------------------------------- the seed's rejection


def test_seed_multi_field_rejection_lists_every_field() -> None:
    fields = reject(
        bugs(),
        {"status": "In progress", "owner": "Aiko", "points": 20, "due": "Friday", "age_days": 3},
        existing={"ticket": "BUG-1", "title": "Crash on save", "status": "new"},
    )
    assert fields == [
        {
            "key": "status",
            "message": 'values.status must be one of the option values, got "In progress" '
            '(that is the label of "in_progress")',
            "given": "In progress",
            "allowed": ["new", "triaged", "in_progress", "fixed", "wont_fix"],
            "options": [
                {"value": "new", "label": "New"},
                {"value": "triaged", "label": "Triaged"},
                {"value": "in_progress", "label": "In progress"},
                {"value": "fixed", "label": "Fixed"},
                {"value": "wont_fix", "label": "Won't fix"},
            ],
        },
        {
            "key": "owner",
            "message": 'values.owner must be one of the option values, got "Aiko" (that is the label of "aiko")',
            "given": "Aiko",
            "allowed": ["aiko", "mika", "ren"],
            "options": [
                {"value": "aiko", "label": "Aiko"},
                {"value": "mika", "label": "Mika"},
                {"value": "ren", "label": "Ren"},
            ],
        },
        {
            "key": "points",
            "message": "values.points must be between 0 and 13, got 20",
            "given": 20,
            "min": 0,
            "max": 13,
        },
        {
            "key": "due",
            "message": 'values.due must be a date as YYYY-MM-DD, got "Friday"',
            "given": "Friday",
            "format": "YYYY-MM-DD",
        },
        {"key": "age_days", "message": "values.age_days is a formula field and is computed, not written"},
    ]


def test_error_message_joins_every_field_message() -> None:
    with pytest.raises(CodexmemError) as info:
        validate_values(
            bugs(),
            {"points": 20, "owner": "Aiko"},
            existing={},
            relation_exists=relation_exists,
            partial=True,
        )
    assert info.value.message == (
        "values.points must be between 0 and 13, got 20; "
        'values.owner must be one of the option values, got "Aiko" (that is the label of "aiko")'
    )
    assert info.value.to_dict()["fields"] == info.value.fields


def test_unknown_and_reserved_keys_name_the_writable_keys() -> None:
    writable = [
        "ticket",
        "title",
        "description",
        "status",
        "owner",
        "severity",
        "points",
        "area",
        "due",
        "reporter",
    ]
    fields = reject(bugs(), {"priority": "high", "version": 3})
    assert fields == [
        {"key": "priority", "message": "values.priority does not exist in channel bugs", "allowed": writable},
        {
            "key": "version",
            "message": "values.version is maintained by the store and cannot be written",
            "allowed": writable,
        },
    ]


def test_formula_field_is_refused_even_as_null() -> None:
    fields = reject(bugs(), {"age_days": None})
    assert fields == [{"key": "age_days", "message": "values.age_days is a formula field and is computed, not written"}]


# ----------------------------------------------------------------- create, update, clearing


def test_create_requires_required_fields() -> None:
    fields = reject(bugs(), {"status": "new"}, existing=None, partial=False)
    assert fields == [
        {"key": "ticket", "message": "values.ticket is required"},
        {"key": "title", "message": "values.title is required"},
    ]


def test_create_returns_exactly_the_given_values() -> None:
    merged = accept(bugs(), {"ticket": "BUG-1", "title": "Crash", "points": 3}, existing=None, partial=False)
    assert merged == {"ticket": "BUG-1", "title": "Crash", "points": 3}


def test_create_with_everything_wrong_reports_bad_values_and_missing_fields() -> None:
    fields = reject(bugs(), {"title": "", "points": -1}, existing=None, partial=False)
    assert [f["key"] for f in fields] == ["title", "points", "ticket"]
    assert fields[0]["message"] == "values.title is required and cannot be empty"


def test_partial_update_keeps_unspecified_values() -> None:
    existing = {"ticket": "BUG-1", "title": "Crash", "status": "new", "points": 3, "due": "2026-03-20"}
    merged = accept(bugs(), {"status": "in_progress", "points": 5}, existing=existing)
    assert merged == {**existing, "status": "in_progress", "points": 5}
    assert existing["status"] == "new"  # the caller's dict is not modified


def test_null_clears_an_optional_field() -> None:
    existing = {"ticket": "BUG-1", "title": "Crash", "status": "new", "due": "2026-03-20"}
    merged = accept(bugs(), {"due": None, "description": None}, existing=existing)
    assert merged == {"ticket": "BUG-1", "title": "Crash", "status": "new"}


def test_clearing_a_required_field_is_refused() -> None:
    existing = {"ticket": "BUG-1", "title": "Crash"}
    fields = reject(bugs(), {"title": None, "ticket": "   "}, existing=existing)
    assert fields == [
        {"key": "title", "message": "values.title is required and cannot be cleared"},
        {"key": "ticket", "message": "values.ticket is required and cannot be empty"},
    ]


def test_partial_update_does_not_demand_required_fields_missing_from_existing() -> None:
    # A field made required after the item was written must not block unrelated edits.
    merged = accept(bugs(), {"points": 1}, existing={"title": "Old item"})
    assert merged == {"title": "Old item", "points": 1}


def test_full_replace_drops_unspecified_values() -> None:
    merged = accept(
        bugs(),
        {"ticket": "BUG-1", "title": "Crash"},
        existing={"ticket": "BUG-1", "title": "Old", "status": "new"},
        partial=False,
    )
    assert merged == {"ticket": "BUG-1", "title": "Crash"}


def test_stored_formula_values_are_dropped_from_existing() -> None:
    merged = accept(bugs(), {"points": 2}, existing={"ticket": "T", "title": "X", "age_days": 4})
    assert merged == {"ticket": "T", "title": "X", "points": 2}


def test_required_select_and_relation_refuse_empty() -> None:
    schema = ChannelSchema.model_validate(
        {
            "record_channel_id": "req",
            "name": "Required lists",
            "fields": [
                {
                    "key": "tags",
                    "label": "Tags",
                    "type": "multi_select",
                    "is_required": True,
                    "config": {"options": TAG_OPTIONS},
                },
                {
                    "key": "blocks",
                    "label": "Blocks",
                    "type": "relation",
                    "is_required": True,
                    "config": {"channel": "bugs"},
                },
            ],
        }
    )
    fields = reject(schema, {"tags": [], "blocks": []})
    assert fields == [
        {"key": "tags", "message": "values.tags is required and cannot be empty", **TAG_EXTRA},
        {"key": "blocks", "message": "values.blocks is required and cannot be empty"},
    ]


def test_relation_lookup_uses_the_configured_channel() -> None:
    calls: list[tuple[str, str]] = []

    def exists(channel: str, item_id: str) -> bool:
        calls.append((channel, item_id))
        return True

    accept(everything(), {"blocks": ["a", "b"]}, relation_exists=exists)
    assert calls == [("bugs", "a"), ("bugs", "b")]


def test_values_must_be_an_object() -> None:
    with pytest.raises(CodexmemError) as info:
        validate_values(
            bugs(),
            ["status"],  # type: ignore[arg-type]
            existing=None,
            relation_exists=relation_exists,
            partial=False,
        )
    assert info.value.code == "ERR_VALIDATION_FAILED"
    assert info.value.message == 'values must be an object of field keys to values, got ["status"]'


# ------------------------------------------------------------------------- preview, unique


def test_preview_cuts_text_like_values_and_long_json() -> None:
    schema = everything()
    values = {
        "long_text": "x" * 500,
        "text": "short",
        "site": "https://example.com/" + "p" * 200,
        "attachment": "d/" * 100,
        "meta": {"k": "v" * 200},
        "status": "new",
        "number": 3,
        "tags": ["bug"],
    }
    preview = preview_values(schema, values)
    assert preview["long_text"] == "x" * 120 + "…"
    assert preview["text"] == "short"
    assert preview["site"] == ("https://example.com/" + "p" * 200)[:120] + "…"
    assert preview["attachment"] == ("d/" * 100)[:120] + "…"
    assert preview["meta"] == "…"
    assert {k: preview[k] for k in ("status", "number", "tags")} == {
        "status": "new",
        "number": 3,
        "tags": ["bug"],
    }
    assert preview_values(schema, {"meta": {"small": 1}, "long_text": "y" * 120}) == {
        "meta": {"small": 1},
        "long_text": "y" * 120,
    }


def test_unique_keys() -> None:
    assert unique_keys(bugs()) == ["ticket"]
    assert unique_keys(everything()) == []


# --------------------------------------------------------------------------- schema model


def test_to_public_is_compact() -> None:
    public = bugs().to_public()
    assert public["record_channel_id"] == "bugs"
    assert public["version"] == 1
    by_key = {f["key"]: f for f in public["fields"]}
    assert by_key["description"] == {
        "key": "description",
        "label": "Description",
        "type": "text",
        "is_required": False,
        "is_unique": False,
    }
    assert by_key["points"]["config"] == {"min": 0, "max": 13}
    assert by_key["status"]["config"]["options"][2] == {
        "value": "in_progress",
        "label": "In progress",
        "color": "#f59e0b",
    }
    assert by_key["age_days"]["config"] == {"expression": "days_since(created_at)", "result_type": "number"}

    def no_nulls(v: Any) -> bool:
        if isinstance(v, dict):
            return all(x is not None and no_nulls(x) for x in v.values())
        if isinstance(v, list):
            return all(no_nulls(x) for x in v)
        return True

    assert no_nulls(public)


def test_compute_formulas_at_read_time() -> None:
    now = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
    values = {"ticket": "T", "created_at": "2026-03-13T10:52:00.123Z"}
    assert bugs().compute_formulas(values, now=now) == {"age_days": 6}
    assert bugs().compute_formulas({}, now=now) == {"age_days": None}


def _schema_with(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"record_channel_id": "c", "name": "C", "fields": list(fields)}


SCHEMA_ERRORS: list[tuple[list[dict[str, Any]], str]] = [
    (
        [{"key": "a", "label": "A", "type": "text"}, {"key": "a", "label": "A2", "type": "number"}],
        "fields[1].key: field key 'a' is used more than once (also fields[0])",
    ),
    (
        [{"key": "Status", "label": "S", "type": "text"}],
        "field key 'Status' must start with a lowercase letter",
    ),
    ([{"key": "id", "label": "I", "type": "text"}], "field key 'id' is reserved"),
    ([{"key": "created_at", "label": "C", "type": "date"}], "field key 'created_at' is reserved"),
    ([{"key": "x", "label": "X", "type": "checkbox"}], "literal_error"),
    (
        [{"key": "s", "label": "S", "type": "select"}],
        "fields[0].config.options: select field 's' needs at least one option",
    ),
    (
        [{"key": "s", "label": "S", "type": "multi_select", "config": {"options": []}}],
        "fields[0].config.options: multi_select field 's' needs at least one option",
    ),
    (
        [
            {
                "key": "s",
                "label": "S",
                "type": "select",
                "config": {
                    "options": [
                        {"value": "a", "label": "A", "color": "#000000"},
                        {"value": "a", "label": "A again", "color": "#ffffff"},
                    ]
                },
            }
        ],
        "fields[0].config.options: option values must be unique, repeated: ['a']",
    ),
    (
        [
            {
                "key": "s",
                "label": "S",
                "type": "select",
                "config": {"options": [{"value": "a", "label": "A", "color": "gren"}]},
            }
        ],
        "color must be a CSS colour name (green, slateblue) or hex like #22c55e, got 'gren'",
    ),
    (
        [{"key": "r", "label": "R", "type": "rating"}],
        "fields[0].config.max_stars: rating field 'r' needs max_stars (1..10)",
    ),
    (
        [{"key": "r", "label": "R", "type": "rating", "config": {"max_stars": 11}}],
        "less than or equal to 10",
    ),
    ([{"key": "r", "label": "R", "type": "relation"}], "fields[0].config.channel: relation field 'r' needs channel"),
    (
        [{"key": "f", "label": "F", "type": "formula"}],
        "fields[0].config.expression: formula field 'f' needs an expression",
    ),
    (
        [{"key": "f", "label": "F", "type": "formula", "config": {"expression": "1"}}],
        "fields[0].config.result_type: formula field 'f' needs result_type",
    ),
    (
        [
            {
                "key": "f",
                "label": "F",
                "type": "formula",
                "is_required": True,
                "config": {"expression": "1", "result_type": "number"},
            }
        ],
        "fields[0]: formula field 'f' is computed and cannot be required or unique",
    ),
    (
        [{"key": "n", "label": "N", "type": "number", "config": {"min": 5, "max": 1}}],
        "fields[0].config: min (5) is greater than max (1)",
    ),
    (
        [{"key": "t", "label": "T", "type": "text", "config": {"max_stars": 3}}],
        "fields[0].config.max_stars: max_stars does not apply to a text field",
    ),
    ([{"key": "t", "label": "T", "type": "text", "config": {"colour": "red"}}], "extra_forbidden"),
    ([{"key": "t", "label": "T", "type": "text", "is_required": "yes"}], "bool_type"),
]


@pytest.mark.parametrize(("fields", "expected"), SCHEMA_ERRORS)
def test_schema_errors(fields: list[dict[str, Any]], expected: str) -> None:
    with pytest.raises(ValidationError) as info:
        ChannelSchema.model_validate(_schema_with(*fields))
    text = str(info.value) + " " + " ".join(e["type"] for e in info.value.errors())
    assert expected in text


def test_channel_id_is_checked() -> None:
    with pytest.raises(ValidationError, match="record_channel_id 'Bugs!' must start"):
        ChannelSchema.model_validate({**BUGS, "record_channel_id": "Bugs!"})
    assert ChannelSchema.model_validate({**BUGS, "record_channel_id": "team-bugs_2"}).record_channel_id == (
        "team-bugs_2"
    )


def test_unpaired_surrogates_are_refused() -> None:
    fields = reject(everything(), {"text": "a\ud800", "meta": {"k": ["\udfff"]}, "site": "https://x.io/\ud800"})
    assert fields == [
        {"key": key, "message": f"values.{key} must be valid Unicode text (it contains an unpaired surrogate)"}
        for key in ("text", "meta", "site")
    ]


# ----------------------------------------------------------------------------- properties

any_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(max_size=12),
        st.sampled_from(["new", "In progress", "bug", "2026-02-30", "https://x.io", "a/b", "01HBUG1"]),
    ),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=4), children)),
    max_leaves=10,
)
ALL_KEYS = [f["key"] for f in ALL_TYPES["fields"]]


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.one_of(st.sampled_from(ALL_KEYS), st.text(max_size=5)), any_json, max_size=8),
    st.booleans(),
)
def test_validation_only_ever_raises_validation_failed(values: dict[str, Any], partial: bool) -> None:
    schema = everything()
    try:
        merged = validate_values(schema, values, existing=None, relation_exists=relation_exists, partial=partial)
    except CodexmemError as exc:
        assert exc.code == "ERR_VALIDATION_FAILED"
        assert exc.fields
        keys = [entry["key"] for entry in exc.fields]
        assert len(keys) == len(set(keys))  # one entry per failing field
        for entry in exc.fields:
            assert entry["message"].startswith(f"values.{entry['key']} ")
            assert set(entry) <= {"key", "message", "given", "allowed", "options", "min", "max", "max_length", "format"}
        return
    assert merged == {k: v for k, v in values.items() if v is not None}
    # A second pass over what was accepted accepts it unchanged: nothing was coerced.
    assert validate_values(schema, merged, existing=None, relation_exists=relation_exists, partial=True) == merged
