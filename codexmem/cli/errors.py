"""Errors in the CLI's words: one ``codexmem: error:`` line, then each problem once.

The services' messages are shared with the MCP tools and name what an agent calls
(``list_record_channels``, ``error.fields``). For those codes the CLI words the message itself,
from the error's structured parts (its code, fields and extra keys) and the command's arguments,
naming CLI commands and flags; every other message is already neutral and is printed as it is.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from codexmem.cli.common import count
from codexmem.errors import CodexmemError

PREFIX = "codexmem: error: "
INDENT = "  "
MAX_PROBLEMS = 50
MAX_OPTIONS = 30


def error_lines(exc: CodexmemError, args: argparse.Namespace) -> list[str]:
    """What stderr shows for ``exc``: the headline, then one indented line per problem."""
    wording = WORDINGS.get(exc.code)
    headline = wording(exc, args) if wording else exc.message
    problems = [_problem(f) for f in (exc.fields or [])[:MAX_PROBLEMS]]
    if len(problems) == 1 and _says(headline, problems[0]):
        problems = []  # the headline already says it: never print a problem twice
    return [PREFIX + headline, *(INDENT + p for p in problems)]


def _says(headline: str, problem: str) -> bool:
    """Whether the headline already holds the problem, with or without the colon after its field."""
    return problem in headline or problem.replace(": ", " ", 1) in headline


def _problem(field: dict[str, Any]) -> str:
    """One problem with where it is, and what would have been accepted when the error says so."""
    where = str(field.get("field") or field.get("key") or "")
    message = str(field.get("message", ""))
    text = message if not where or message.startswith(("values." + where, where)) else f"{where}: {message}"
    allowed = _allowed(field)
    return f"{text}; {allowed}" if allowed else text


def _allowed(field: dict[str, Any]) -> str:
    """A refused option's allowed values, each with its label (ranges and formats are in the message)."""
    options = field.get("options")
    if not isinstance(options, list) or not options:
        return ""
    shown = [
        o["value"] if o.get("label") in (None, o["value"]) else f"{o['value']} ({o['label']})"
        for o in options[:MAX_OPTIONS]
    ]
    more = f" and {len(options) - MAX_OPTIONS} more" if len(options) > MAX_OPTIONS else ""
    total = field.get("options_total")
    if isinstance(total, int) and total > len(options):  # a field of many: the nearest were sent
        return f"allowed values nearest it ({len(options)} of {total}): " + ", ".join(shown) + more
    return "allowed values: " + ", ".join(shown) + more


# ------------------------------------------------------------------ codes the CLI words itself


def _channel_not_found(exc: CodexmemError, args: argparse.Namespace) -> str:
    channel = getattr(args, "channel", None) or getattr(args, "channel_id", None)
    known = _channel_ids(args)
    what = f"no channel {channel[:80]!r}" if channel else "no such channel"
    if known is None:
        return f"{what}; `codexmem channels list` names the channels"
    if not known:
        return f"{what}: the store has no channels yet; add one with `codexmem channels add ID --schema FILE.yaml`"
    more = f" and {len(known) - MAX_OPTIONS} more" if len(known) > MAX_OPTIONS else ""
    return f"{what}; the channels are {', '.join(known[:MAX_OPTIONS])}{more} (`codexmem channels list`)"


def _record_not_found(exc: CodexmemError, args: argparse.Namespace) -> str:
    item, channel = getattr(args, "item_id", None), getattr(args, "channel", None)
    if item is None or channel is None:
        return exc.message
    return f"no item {item[:80]} in channel {channel}; `codexmem items list {channel}` shows its items"


def _validation_failed(exc: CodexmemError, args: argparse.Namespace) -> str:
    fields = exc.fields or []
    return f"refused, nothing was written: {count(len(fields), 'value')} not accepted"


def _version_conflict(exc: CodexmemError, args: argparse.Namespace) -> str:
    item, channel = getattr(args, "item_id", None), getattr(args, "channel", None)
    current, expected = exc.extra.get("current_version"), getattr(args, "expected_version", None)
    if item is None or channel is None or current is None:
        return exc.message
    return (
        f"item {item} is at version {current}, not {expected}: someone changed it since; "
        f"see it with `codexmem items list {channel}`, then edit again with --expected-version {current}"
    )


def _secret_detected(exc: CodexmemError, args: argparse.Namespace) -> str:
    n = len(exc.fields or [])
    holds = "holds" if n == 1 else "hold"
    return f"refused, nothing was written: {count(n, 'value')} {holds} what looks like a credential"


def _channel_ids(args: argparse.Namespace) -> list[str] | None:
    """The store's channels, to show with a refused channel id (None when they cannot be read)."""
    from codexmem.cli.common import open_store
    from codexmem.records import service

    try:
        return [c.id for c in service.list_channels(open_store(args))]
    except (CodexmemError, OSError):
        return None


Wording = Callable[[CodexmemError, argparse.Namespace], str]
WORDINGS: dict[str, Wording] = {
    "ERR_CHANNEL_NOT_FOUND": _channel_not_found,
    "ERR_RECORD_NOT_FOUND": _record_not_found,
    "ERR_VALIDATION_FAILED": _validation_failed,
    "ERR_VERSION_CONFLICT": _version_conflict,
    "ERR_SECRET_DETECTED": _secret_detected,
}
"""Codes whose service message names MCP tools or error fields: the CLI says these in its own words."""
