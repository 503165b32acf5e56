"""Field-value validation for record items: strict, complete, and explained.

Three rules shape everything here:

* Never coerce. A label is not mapped to its value, a number is not clamped, ``"5"`` is not parsed
  into 5. "major" and "20 points" are questions for a person, not for a matcher.
* Report every failing field, not the first: one rejection should let an agent fix the whole edit.
* Say what would have been accepted: the option values *and* their labels, the range, the format.
  A field name alone does not let an agent correct anything.

``is_unique`` needs the other items of the channel, so it is checked by the caller (the store),
inside the same transaction as the write; :func:`unique_keys` lists the fields concerned.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from datetime import date
from difflib import SequenceMatcher
from typing import Any, Final
from urllib.parse import urlsplit

from codexmem.errors import CodexmemError, control_problem
from codexmem.models.channel import RESERVED_KEYS, ChannelSchema, FieldDef

DEFAULT_TEXT_MAX_LENGTH: Final = 10_000
EMAIL_MAX_LENGTH: Final = 254
URL_MAX_LENGTH: Final = 2_048
FILE_MAX_LENGTH: Final = 1_024
PHONE_MAX_LENGTH: Final = 40
PHONE_MIN_DIGITS: Final = 7
PHONE_MAX_DIGITS: Final = 15
JSON_MAX_BYTES: Final = 8_192
JSON_MAX_DEPTH: Final = 100
JSON_MAX_INT_BITS: Final = 13_000
"""About 3,900 digits: beyond Python's int-to-str limit lies an error, not a number anyone meant."""
PERCENTAGE_BOUNDS: Final = (0.0, 100.0)
DATE_FORMAT: Final = "YYYY-MM-DD"
PREVIEW_CHARS: Final = 120
ELLIPSIS: Final = "…"

UNCUT_VALUES_MAX_BYTES: Final = 6_000
"""Values that an answer cannot shorten (json, relations, options, numbers) share this many bytes
per item, so every item that is stored can also be answered whole under the 9,000-byte budget;
long text is cut in previews and, if ever needed, in a full answer."""

GIVEN_MAX_CHARS: Final = 200
"""A rejected value is echoed back as ``given`` only if its compact JSON is this short."""

OPTIONS_SHOWN: Final = 25
"""A rejection lists at most this many options of a field (the ones nearest the value sent)."""

TEXT_LIKE_TYPES: Final = frozenset({"text", "email", "url", "file"})

RelationExists = Callable[[str, str], bool]
"""``relation_exists(channel_id, item_id)``: does that item exist in that channel?"""

_DATE_RE: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_PHONE_RE: Final = re.compile(r"\+?[0-9 ().\-]+")
_DRIVE_RE: Final = re.compile(r"[A-Za-z]:")
_EMAIL_FORBIDDEN: Final = frozenset('<>()[]\\,;:"')


# ------------------------------------------------------------------------------- rendering


def _show(value: Any) -> str:
    """A value as it appeared in the request (JSON), cut short for a message."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = f"a {type(value).__name__}"
    return text if len(text) <= 80 else text[:80] + ELLIPSIS


def _num_text(x: float) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    return str(x)


def _compact_num(x: float) -> int | float:
    return int(x) if isinstance(x, float) and x.is_integer() and abs(x) < 1e16 else x


def _is_plain_json(value: Any) -> bool:
    """JSON-serializable without silent changes: str keys only, lists not tuples, finite floats."""
    return _json_problem(value) is None


def _json_problem(value: Any) -> str | None:
    """Why ``value`` is not plain JSON, or None. Iterative, and stops early on huge values."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > JSON_MAX_BYTES:
            return "too large"
        if depth > JSON_MAX_DEPTH:
            return f"nested more than {JSON_MAX_DEPTH} levels"
        if item is None or isinstance(item, bool | str):
            continue
        if isinstance(item, int):
            if item.bit_length() > JSON_MAX_INT_BITS:
                return "too large"
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return "NaN and infinity are not JSON"
            continue
        if isinstance(item, list):
            stack.extend((x, depth + 1) for x in item)
            continue
        if isinstance(item, dict):
            for k, v in item.items():
                if not isinstance(k, str):
                    return f"object keys must be strings, got {type(k).__name__}"
                stack.append((v, depth + 1))
            continue
        return f"a {type(item).__name__} is not JSON"
    return None


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# ------------------------------------------------------------------------------ the checks


class _Failures:
    """Collects one entry per failing field, in the order the fields were given."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def add(self, key: str, message: str, **extra: Any) -> None:
        entry: dict[str, Any] = {"key": key, "message": message}
        entry.update({k: v for k, v in extra.items() if v is not None})
        self.entries.append(entry)

    def value(self, f: FieldDef, value: Any, message: str, **extra: Any) -> None:
        """A rejected value: echo it back as ``given`` when it is small plain JSON (and holds no credential)."""
        from codexmem.credentials import find_secrets, redact

        given: Any = None
        if _is_plain_json(value) and len(_compact_json(value)) <= GIVEN_MAX_CHARS:
            given = value
        if find_secrets(message) or (given is not None and find_secrets(_compact_json(given))):
            given, message = None, redact(message)[0]  # a refusal never repeats a credential
        entry_extra: dict[str, Any] = {"given": given}
        entry_extra.update(extra)
        self.add(f.key, message, **entry_extra)


def _options_extra(f: FieldDef, given: Any = None) -> dict[str, Any]:
    """The options a rejection lists: all of them, or past ``OPTIONS_SHOWN`` the ones nearest
    ``given`` (in the schema's order) and how many there are.

    Every option in a rejection made a field of 700 options a 33 KB entry, over the answer
    budget: the rejection then dropped the entry and said nothing of what was allowed.
    """
    options = list(f.config.options or [])
    extra: dict[str, Any] = {}
    if len(options) > OPTIONS_SHOWN:
        extra["options_total"] = len(options)
        options = _nearest(options, given)
    return {
        "allowed": [o.value for o in options],
        "options": [{"value": o.value, "label": o.label} for o in options],
        **extra,
    }


def _nearest(options: list[Any], given: Any) -> list[Any]:
    """The ``OPTIONS_SHOWN`` options whose value or label is most like ``given`` (each string
    sent, for a list), kept in the schema's order; the first ones when nothing was sent."""
    sent = [g for g in (given if isinstance(given, list) else [given]) if isinstance(g, str)]
    if not sent:
        return options[:OPTIONS_SHOWN]

    def likeness(option: Any) -> float:
        names = (option.value.casefold(), option.label.casefold())
        return max(SequenceMatcher(None, g.casefold(), n).ratio() for g in sent for n in names)

    ranked = sorted(range(len(options)), key=lambda i: (-likeness(options[i]), i))[:OPTIONS_SHOWN]
    return [options[i] for i in sorted(ranked)]


def _option_hint(f: FieldDef, given: Any) -> str:
    """Point a label (or a mis-cased value) at the value it stands for."""
    if not isinstance(given, str):
        return ""
    folded = given.casefold()
    for o in f.config.options or []:
        if o.label.casefold() == folded:
            return f" (that is the label of {json.dumps(o.value, ensure_ascii=False)})"
    for o in f.config.options or []:
        if o.value.casefold() == folded:
            return f" (option values are case-sensitive: {json.dumps(o.value, ensure_ascii=False)})"
    return ""


def _numeric_bounds(f: FieldDef) -> tuple[float | None, float | None]:
    lo, hi = f.config.min, f.config.max
    if f.type == "percentage":
        lo = PERCENTAGE_BOUNDS[0] if lo is None else lo
        hi = PERCENTAGE_BOUNDS[1] if hi is None else hi
    return lo, hi


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_finite(value: int | float) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _check_text(f: FieldDef, v: Any, out: _Failures) -> None:
    limit = f.config.max_length or DEFAULT_TEXT_MAX_LENGTH
    if not isinstance(v, str):
        out.value(f, v, f"values.{f.key} must be text, got {_show(v)}", max_length=limit)
    elif len(v) > limit:
        out.value(f, v, f"values.{f.key} must be at most {limit} characters, got {len(v)}", max_length=limit)


def _check_number(f: FieldDef, v: Any, out: _Failures) -> None:
    lo, hi = _numeric_bounds(f)
    bounds = {
        "min": None if lo is None else _compact_num(lo),
        "max": None if hi is None else _compact_num(hi),
    }
    if not _is_number(v):
        out.value(f, v, f"values.{f.key} must be a number, got {_show(v)}", **bounds)
        return
    if not _is_finite(v):
        out.value(f, v, f"values.{f.key} must be a finite number, got {_show(v)}", **bounds)
        return
    if (lo is None or v >= lo) and (hi is None or v <= hi):
        return
    if lo is not None and hi is not None:
        rule = f"between {_num_text(lo)} and {_num_text(hi)}"
    elif lo is not None:
        rule = f"at least {_num_text(lo)}"
    else:
        assert hi is not None
        rule = f"at most {_num_text(hi)}"
    out.value(f, v, f"values.{f.key} must be {rule}, got {_show(v)}", **bounds)


def _check_rating(f: FieldDef, v: Any, out: _Failures) -> None:
    stars = f.config.max_stars or 0
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= stars:
        return
    out.value(f, v, f"values.{f.key} must be a whole number from 0 to {stars}, got {_show(v)}", min=0, max=stars)


def _check_boolean(f: FieldDef, v: Any, out: _Failures) -> None:
    if not isinstance(v, bool):
        out.value(f, v, f"values.{f.key} must be true or false, got {_show(v)}")


def _check_date(f: FieldDef, v: Any, out: _Failures) -> None:
    message = f"values.{f.key} must be a date as {DATE_FORMAT}, got {_show(v)}"
    if not isinstance(v, str) or not _DATE_RE.fullmatch(v):
        out.value(f, v, message, format=DATE_FORMAT)
        return
    try:
        date.fromisoformat(v)
    except ValueError:
        out.value(f, v, message + " (no such calendar day)", format=DATE_FORMAT)


def _email_ok(v: str) -> bool:
    if v.count("@") != 1:
        return False
    if any(c.isspace() or ord(c) < 32 or c == "\x7f" or c in _EMAIL_FORBIDDEN for c in v):
        return False
    local, domain = v.split("@")
    labels = domain.split(".")
    return 0 < len(local) <= 64 and len(labels) >= 2 and all(labels)


def _check_email(f: FieldDef, v: Any, out: _Failures) -> None:
    if isinstance(v, str) and len(v) > EMAIL_MAX_LENGTH:
        out.value(
            f,
            v,
            f"values.{f.key} must be at most {EMAIL_MAX_LENGTH} characters, got {len(v)}",
            max_length=EMAIL_MAX_LENGTH,
        )
    elif not isinstance(v, str) or not _email_ok(v):
        out.value(f, v, f"values.{f.key} must be an email address like name@example.com, got {_show(v)}")


def _check_phone(f: FieldDef, v: Any, out: _Failures) -> None:
    if isinstance(v, str) and len(v) <= PHONE_MAX_LENGTH and _PHONE_RE.fullmatch(v):
        digits = sum(c.isdigit() for c in v)
        if PHONE_MIN_DIGITS <= digits <= PHONE_MAX_DIGITS:
            return
    out.value(
        f,
        v,
        f"values.{f.key} must be a phone number: an optional +, then {PHONE_MIN_DIGITS} to "
        f"{PHONE_MAX_DIGITS} digits with spaces, dashes, dots or parentheses, got {_show(v)}",
    )


def _url_problem(v: str) -> str:
    """Why ``v`` is not an acceptable link, or "" if it is."""
    if any(c.isspace() or ord(c) < 32 or c == "\x7f" for c in v):
        return "it contains spaces or control characters"
    try:
        parts = urlsplit(v)
        host = parts.hostname
        _ = parts.port  # raises ValueError for a port that is not a number
    except ValueError:
        return "it cannot be parsed"
    if parts.scheme not in ("http", "https"):
        return f"{parts.scheme}: links are not allowed" if parts.scheme else "it has no http:// or https://"
    if not host:
        return "it has no host"
    return ""


def _check_url(f: FieldDef, v: Any, out: _Failures) -> None:
    base = f"values.{f.key} must be an http or https URL with a host"
    if not isinstance(v, str):
        out.value(f, v, f"{base}, got {_show(v)}")
    elif len(v) > URL_MAX_LENGTH:
        out.value(
            f,
            v,
            f"values.{f.key} must be at most {URL_MAX_LENGTH} characters, got {len(v)}",
            max_length=URL_MAX_LENGTH,
        )
    elif problem := _url_problem(v):
        out.value(f, v, f"{base}, got {_show(v)} ({problem})")


def _path_problem(v: str) -> str:
    """Why ``v`` is not a safe repository-relative path, or "" if it is."""
    if not v:
        return "it is empty"
    if "\x00" in v:
        return "it contains a NUL character"
    if any(ord(c) < 32 or c == "\x7f" for c in v):
        return "it contains control characters"
    if "\\" in v:
        return "it contains a backslash; use forward slashes"
    if v.startswith("/"):
        return "it starts with /"
    if _DRIVE_RE.match(v):
        return "it starts with a drive letter"
    segments = v.split("/")
    if ".." in segments:
        return "it contains a .. segment"
    if "" in segments:
        return "it contains an empty segment"
    return ""


def _check_file(f: FieldDef, v: Any, out: _Failures) -> None:
    base = f"values.{f.key} must be a repository-relative path with forward slashes"
    if not isinstance(v, str):
        out.value(f, v, f"{base}, got {_show(v)}")
    elif len(v) > FILE_MAX_LENGTH:
        out.value(
            f,
            v,
            f"values.{f.key} must be at most {FILE_MAX_LENGTH} characters, got {len(v)}",
            max_length=FILE_MAX_LENGTH,
        )
    elif problem := _path_problem(v):
        out.value(f, v, f"{base}, got {_show(v)} ({problem})")


def _check_json(f: FieldDef, v: Any, out: _Failures) -> None:
    problem = _json_problem(v)
    too_large = f"values.{f.key} must be at most {JSON_MAX_BYTES} bytes as compact JSON"
    if problem == "too large":
        out.value(f, v, f"{too_large}, got more", max_length=JSON_MAX_BYTES)
    elif problem:
        out.value(
            f,
            v,
            f"values.{f.key} must be plain JSON (objects with string keys, arrays, strings, numbers, "
            f"true, false, null), got {_show(v)} ({problem})",
        )
    else:
        size = len(_compact_json(v).encode("utf-8"))
        if size > JSON_MAX_BYTES:
            out.value(f, v, f"{too_large}, got {size} bytes", max_length=JSON_MAX_BYTES)


def _check_select(f: FieldDef, v: Any, out: _Failures) -> None:
    if isinstance(v, str) and v in f.option_values():
        return
    out.value(
        f,
        v,
        f"values.{f.key} must be one of the option values, got {_show(v)}{_option_hint(f, v)}",
        **_options_extra(f, v),
    )


def _repeated(items: list[Any]) -> list[Any]:
    seen: list[Any] = []
    dupes: list[Any] = []
    for x in items:
        if x in seen and x not in dupes:
            dupes.append(x)
        seen.append(x)
    return dupes


def _check_multi_select(f: FieldDef, v: Any, out: _Failures) -> None:
    extra = _options_extra(f, v)
    if not isinstance(v, list):
        out.value(f, v, f"values.{f.key} must be a list of option values, got {_show(v)}", **extra)
        return
    if f.is_required and not v:
        out.add(f.key, f"values.{f.key} is required and cannot be empty", **extra)
        return
    allowed = f.option_values()
    bad = [x for x in v if not (isinstance(x, str) and x in allowed)]
    if bad:
        shown = ", ".join(_show(x) + _option_hint(f, x) for x in bad)
        out.value(f, v, f"values.{f.key} must contain only option values, got {shown}", **extra)
        return
    dupes = _repeated(v)
    if dupes:
        shown = ", ".join(_show(x) for x in dupes)
        out.value(f, v, f"values.{f.key} must not repeat an option value, got {shown} more than once", **extra)


def _check_relation(f: FieldDef, v: Any, out: _Failures, relation_exists: RelationExists) -> None:
    channel = f.config.channel or ""
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        out.value(f, v, f"values.{f.key} must be a list of item ids from channel {channel}, got {_show(v)}")
        return
    if f.is_required and not v:
        out.add(f.key, f"values.{f.key} is required and cannot be empty")
        return
    dupes = _repeated(v)
    if dupes:
        shown = ", ".join(_show(x) for x in dupes)
        out.value(f, v, f"values.{f.key} must not repeat an item id, got {shown} more than once")
        return
    missing = [x for x in v if not relation_exists(channel, x)]
    if missing:
        shown = ", ".join(_show(x) for x in missing)
        out.value(f, v, f"values.{f.key} refers to items that do not exist in channel {channel}: {shown}")


_SIMPLE_CHECKS: Final[Mapping[str, Callable[[FieldDef, Any, _Failures], None]]] = {
    "text": _check_text,
    "number": _check_number,
    "currency": _check_number,
    "percentage": _check_number,
    "rating": _check_rating,
    "boolean": _check_boolean,
    "date": _check_date,
    "email": _check_email,
    "phone": _check_phone,
    "url": _check_url,
    "file": _check_file,
    "json": _check_json,
    "select": _check_select,
    "multi_select": _check_multi_select,
}


def _strings_in(value: Any) -> Iterator[str]:
    """Every string a value holds, a json value's keys included (walked with a list, not recursion:
    a json value may nest deeply; at most 100,000 parts)."""
    stack: list[Any] = [value]
    seen = 0
    while stack and seen < 100_000:
        item = stack.pop()
        seen += 1
        if isinstance(item, str):
            yield item
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())


def _control_in(value: Any) -> str | None:
    """Why a value is refused for a control character in any string it holds, a json value's keys
    included (the first), or None: reported with the field's other failures (the tools leave
    ``values`` to this check; the other types' own rules refuse what they cannot hold)."""
    return next((p for text in _strings_in(value) if (p := control_problem(text)) is not None), None)


def _has_surrogate(value: Any) -> bool:
    """True if any string inside ``value`` cannot be written as UTF-8 (a lone ``\\ud800``)."""
    for text in _strings_in(value):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return True
    return False


def _check_value(f: FieldDef, v: Any, out: _Failures, relation_exists: RelationExists) -> None:
    if _has_surrogate(v):
        # JSON's "\ud800" escape decodes to a string no file or git object can hold.
        out.add(f.key, f"values.{f.key} must be valid Unicode text (it contains an unpaired surrogate)")
        return
    if f.type == "relation":
        _check_relation(f, v, out, relation_exists)
        return
    if f.is_required and f.type in TEXT_LIKE_TYPES | {"phone"} and isinstance(v, str) and not v.strip():
        out.add(f.key, f"values.{f.key} is required and cannot be empty")
        return
    _SIMPLE_CHECKS[f.type](f, v, out)


# ---------------------------------------------------------------------------------- public


def validate_values(
    schema: ChannelSchema,
    values: dict[str, Any],
    *,
    existing: dict[str, Any] | None,
    relation_exists: RelationExists,
    partial: bool,
) -> dict[str, Any]:
    """Check ``values`` against ``schema`` and return the values to store.

    ``partial=True`` is an edit: keys not given keep their ``existing`` values, and ``None``
    clears a field that is not required. ``partial=False`` is a create (``existing`` is None)
    or a full replacement: the result is exactly ``values`` and every required field must be
    there. Formula fields are never stored, so they are dropped from ``existing``. Kept values are
    not checked again (:func:`outdated_values` says which the schema no longer accepts); ``None``
    for a kept key the schema no longer knows drops it.

    Raises ``CodexmemError("ERR_VALIDATION_FAILED")`` whose ``fields`` has one entry for every
    failing field. Nothing is written on failure: the caller must reject the whole edit.
    ``is_unique`` is not checked here (it needs the other items; see :func:`unique_keys`).
    """
    if not isinstance(values, Mapping):
        message = f"values must be an object of field keys to values, got {_show(values)}"
        raise CodexmemError(
            "ERR_VALIDATION_FAILED",
            message,
            fields=[{"key": "values", "message": message, "allowed": schema.writable_keys()}],
        )
    by_key = {f.key: f for f in schema.fields}
    out = _Failures()
    merged: dict[str, Any] = {}
    if partial and existing:
        merged = {k: v for k, v in existing.items() if not (k in by_key and by_key[k].type == "formula")}

    for raw_key, value in values.items():
        key = str(raw_key)
        f = by_key.get(key)
        if f is None and value is None and key in merged and key not in RESERVED_KEYS:
            merged.pop(key)  # a field the schema dropped since: clearing it is how an edit removes it
        elif f is None:
            reason = (
                "is maintained by the store and cannot be written"
                if key in RESERVED_KEYS
                else f"does not exist in channel {schema.record_channel_id}"
            )
            out.add(key, f"values.{key} {reason}", allowed=schema.writable_keys())
        elif f.type == "formula":
            out.add(key, f"values.{key} is a formula field and is computed, not written")
        elif value is None:
            if f.is_required:
                out.add(key, f"values.{key} is required and cannot be cleared")
            else:
                merged.pop(key, None)
        elif f.type in ("text", "json") and (problem := _control_in(value)) is not None:  # others: own rules
            out.add(key, f"values.{key} {problem}")
        else:
            before = len(out.entries)
            _check_value(f, value, out, relation_exists)
            if len(out.entries) == before:
                merged[key] = value

    if not partial:
        for f in schema.fields:
            if f.is_required and f.type != "formula" and f.key not in values:
                out.add(f.key, f"values.{f.key} is required")

    if not out.entries:
        _check_uncut_total(merged, out)
    if out.entries:
        summary = "; ".join(e["message"] for e in out.entries)
        raise CodexmemError("ERR_VALIDATION_FAILED", summary, fields=out.entries)
    return merged


def _check_uncut_total(values: Mapping[str, Any], out: _Failures) -> None:
    """Refuse an item whose non-text values together exceed :data:`UNCUT_VALUES_MAX_BYTES`."""
    sizes = {k: len(_compact_json(v).encode("utf-8")) for k, v in values.items() if not isinstance(v, str)}
    total = sum(sizes.values())
    if total <= UNCUT_VALUES_MAX_BYTES:
        return
    for key in sorted(sizes, key=lambda k: -sizes[k])[:3]:
        out.add(
            key,
            f"values.{key} takes {sizes[key]} bytes; an item's json, relation and other non-text values may take "
            f"{UNCUT_VALUES_MAX_BYTES} bytes together (these take {total}): store less here, or link to it",
            max=UNCUT_VALUES_MAX_BYTES,
        )


def stored_item_problems(
    schema: ChannelSchema, values: dict[str, Any], relation_exists: RelationExists
) -> list[dict[str, Any]]:
    """Why an item's stored values break ``schema`` ([] when they fit): one entry per failing
    field. ``codexmem check`` and ``channels update`` judge items by this one rule."""
    try:
        validate_values(schema, values, existing=None, relation_exists=relation_exists, partial=False)
    except CodexmemError as exc:
        return list(exc.fields or [{"message": exc.message}])
    return []


def outdated_values(schema: ChannelSchema, existing: Mapping[str, Any], given: Mapping[str, Any]) -> list[str]:
    """What an edit keeps (the values it does not send) that ``schema`` no longer accepts: one
    message per field, naming it and the fix.

    The schema changed since those values were written (an option removed, a field renamed or
    dropped, made required or shorter). The edit is not refused for them: an agent that must send
    an owner to change a status would guess or clear one. It says so instead, and ``codexmem check``
    fails on the item until someone fixes it. Relations are left out: deleting an item that one
    names is refused (``service.delete_item``).
    """
    by_key = {f.key: f for f in schema.fields}
    found: list[str] = []
    for key, held in existing.items():
        f = by_key.get(key)
        if key in given or (f is not None and f.type in ("formula", "relation")):
            continue
        if f is None:
            found.append(f'values.{key} is no field of channel {schema.record_channel_id} now (send "{key}": null)')
            continue
        failures = _Failures()
        _check_value(f, held, failures, lambda _channel, _item: True)
        if failures.entries:
            found.append(
                f"values.{key} holds {_show(held)}, refused now (send a new value{'' if f.is_required else ' or null'})"
            )
    for f in schema.fields:
        if f.is_required and f.type != "formula" and f.key not in given and existing.get(f.key) is None:
            found.append(f"values.{f.key} is required and empty (send it)")
    return found


OUTDATED_SHOWN: Final = 5


def outdated_message(found: list[str]) -> str:
    """The one warning an edit's answer (MCP or CLI) gives for :func:`outdated_values`."""
    more = len(found) - OUTDATED_SHOWN
    listed = "; ".join(found[:OUTDATED_SHOWN]) + (f"; and {more} more" if more > 0 else "")
    return (
        "the item keeps values its schema no longer accepts (it changed since they were written), so "
        f"`codexmem check` fails on it until they are fixed: {listed}"
    )


def preview_values(schema: ChannelSchema, values: Mapping[str, Any]) -> dict[str, Any]:
    """A page-sized copy of an item's values for listings.

    Text-like values (text, email, url, file) are cut to 120 characters plus "…"; a json value
    whose compact JSON is longer than 120 characters becomes "…". A listing only has to let the
    agent choose what to open with ``read_record_item``; full descriptions would flood the page.
    """
    by_key = {f.key: f for f in schema.fields}
    out: dict[str, Any] = {}
    for key, value in values.items():
        f = by_key.get(key)
        if f is not None and f.type in TEXT_LIKE_TYPES and isinstance(value, str):
            out[key] = value if len(value) <= PREVIEW_CHARS else value[:PREVIEW_CHARS] + ELLIPSIS
        elif f is not None and f.type == "json":
            try:
                short = len(_compact_json(value)) <= PREVIEW_CHARS
            except (TypeError, ValueError, RecursionError):
                short = False
            out[key] = value if short else ELLIPSIS
        else:
            out[key] = value
    return out


def unique_keys(schema: ChannelSchema) -> list[str]:
    """Keys of ``is_unique`` fields, which the caller must check against the channel's other items."""
    return [f.key for f in schema.fields if f.is_unique]
