"""``codexmem items``: add, edit, remove and list the items of a record channel.

The same service functions the MCP tools use, so a person's change is validated, versioned and
logged exactly like an agent's (actor ``cli:<user>``) and shows up in ``poll_resource_events``.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from codexmem.cli.common import positive_int

TABLE_FIELDS = 4
CELL_CHARS = 40
JSON_SOURCES = "; - reads it from stdin, @FILE from a file (a long description quotes badly in a shell)"


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("items", parents=[common], help="record items: add, edit, rm, list")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    add = actions.add_parser("add", parents=[common], help="add an item; prints only its id")
    add.add_argument("channel", metavar="CHANNEL")
    add.add_argument("--json", required=True, metavar="JSON", help="the values as a JSON object" + JSON_SOURCES)
    add.set_defaults(func=run_add)

    edit = actions.add_parser("edit", parents=[common], help="change fields of an item")
    edit.add_argument("channel", metavar="CHANNEL")
    edit.add_argument("item_id", metavar="ITEM")
    edit.add_argument(
        "--json", required=True, metavar="JSON", help="the fields to change as a JSON object" + JSON_SOURCES
    )
    edit.add_argument(
        "--expected-version",
        type=positive_int,
        metavar="N",
        help="refuse the edit unless the item is at version N",
    )
    edit.set_defaults(func=run_edit)

    rm = actions.add_parser("rm", parents=[common], help="remove an item (its history stays in the events)")
    rm.add_argument("channel", metavar="CHANNEL")
    rm.add_argument("item_id", metavar="ITEM")
    rm.set_defaults(func=run_rm)

    ls = actions.add_parser("list", parents=[common], help="a table of the items, newest first")
    ls.add_argument("channel", metavar="CHANNEL")
    ls.add_argument("--limit", type=positive_int, metavar="N", help="show at most N items (1 or more)")
    ls.set_defaults(func=run_list)


def _json_text(value: str) -> str:
    """``--json``'s text: the argument itself, or what ``-`` (stdin) or ``@FILE`` names, as UTF-8."""
    import sys

    from codexmem.errors import CodexmemError
    from codexmem.store.yamlio import MAX_YAML_BYTES

    if value != "-" and not value.startswith("@"):
        return value  # a JSON object starts with {: neither form can be one
    source = "stdin" if value == "-" else value[1:]
    if not source:
        raise CodexmemError("ERR_INVALID_INPUT", "--json @: name the file after @ (--json @values.json)")
    try:
        if value == "-":
            if sys.stdin is None:  # started with stdin closed
                raise CodexmemError("ERR_INVALID_INPUT", "--json -: stdin is closed; pipe the JSON in, or give @FILE")
            raw = sys.stdin.buffer.read(MAX_YAML_BYTES + 1)
        else:
            with open(source, "rb") as fh:
                raw = fh.read(MAX_YAML_BYTES + 1)
    except OSError as exc:
        raise CodexmemError("ERR_INVALID_INPUT", f"--json: cannot read {source}: {exc.strerror or exc}") from None
    if not raw.strip():
        raise CodexmemError("ERR_INVALID_INPUT", f"--json: {source} is empty; it must hold a JSON object")
    if len(raw) > MAX_YAML_BYTES:
        raise CodexmemError("ERR_INVALID_INPUT", f"--json: {source} holds more than {MAX_YAML_BYTES:,} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CodexmemError("ERR_INVALID_INPUT", f"--json: {source} is not UTF-8 (byte {exc.start})") from None


def _values(value: str) -> dict[str, Any]:
    import json

    from codexmem.errors import CodexmemError

    text = _json_text(value).removeprefix("\ufeff")  # a byte order mark some editors write first
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CodexmemError("ERR_INVALID_INPUT", f"--json is not valid JSON: {exc}") from None
    except RecursionError:
        raise CodexmemError("ERR_INVALID_INPUT", "--json is nested too deeply: write plain field values") from None
    if not isinstance(data, dict):
        raise CodexmemError("ERR_INVALID_INPUT", "--json must be a JSON object of field keys to values")
    return data


def run_add(args: argparse.Namespace) -> int:
    from codexmem.cli.common import open_store
    from codexmem.records import service
    from codexmem.store.store import cli_actor
    from codexmem.timeutil import utcnow

    item = service.create_item(open_store(args), args.channel, _values(args.json), actor=cli_actor(), now=utcnow())
    print(item["id"])
    return 0


def run_edit(args: argparse.Namespace) -> int:
    from codexmem.cli.common import open_store
    from codexmem.records import service
    from codexmem.records.fields import outdated_message
    from codexmem.store.store import cli_actor
    from codexmem.timeutil import utcnow

    result = service.edit_item(
        open_store(args),
        args.channel,
        args.item_id,
        _values(args.json),
        expected_version=args.expected_version,
        idempotency_key=None,
        actor=cli_actor(),
        now=utcnow(),
    )
    version = result.answer["item"]["version"]
    if result.outdated:
        print(f"codexmem: warning: {outdated_message(result.outdated)}", file=sys.stderr)
    if result.unchanged:
        print(f"nothing changed: those are the stored values; {args.item_id} stays at version {version}")
    else:
        print(f"{args.item_id} is now at version {version}")
    return 0


def run_rm(args: argparse.Namespace) -> int:
    from codexmem.cli.common import open_store
    from codexmem.records import service
    from codexmem.store.store import cli_actor
    from codexmem.timeutil import utcnow

    service.delete_item(open_store(args), args.channel, args.item_id, actor=cli_actor(), now=utcnow())
    print(f"removed {args.item_id}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from codexmem.cli.common import count, open_store, warn_unreadable
    from codexmem.records import service
    from codexmem.timeutil import utcnow

    store = open_store(args)
    now = utcnow()
    schema = service.get_schema(store, args.channel)
    keys = [f.key for f in schema.fields[:TABLE_FIELDS]]
    rows: list[list[str]] = [["id", "version", *keys]]
    before: str | None = None
    while args.limit is None or len(rows) - 1 < args.limit:
        page = service.list_items(store, args.channel, before_id=before, limit=service.MAX_PAGE, now=now)
        for item in page.items:
            rows.append([item["id"], str(item["version"]), *(_cell(item["values"].get(k)) for k in keys)])
        if not page.has_more:
            break
        before = page.items[-1]["id"]
    shown = len(rows) - 1
    if args.limit is not None and shown > args.limit:
        rows, shown = rows[: args.limit + 1], args.limit
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    total = next((c.item_count for c in service.list_channels(store) if c.id == args.channel), shown)
    print(f"({count(shown, 'item')})" if shown >= total else f"({shown} of {total} items; raise --limit for more)")
    warn_unreadable(store)
    return 0


_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Characters that turn the text after them right to left, or isolate it: printed, one in a cell
reordered the rest of the table's line (and could hide what a value says)."""


def _cell(value: Any) -> str:
    """One table cell: on one line, at most CELL_CHARS characters, with no character that would
    reorder the line it is printed on (shown as its code, ``<U+202E>``)."""
    import json

    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = _BIDI.sub(lambda m: f"<U+{ord(m.group()):04X}>", " ".join(text.split()))
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"
