"""Record channel answers, sized to the answer budget the way memory answers are.

The service (:mod:`codexmem.records.service`) decides what an operation does; this module shapes
what the MCP tools return, with :func:`codexmem.envelope.fit` as for every list answer: lists
stop early and say so, and the long text values of a single item are cut and named rather than
letting an answer break (a committed edit must never be reported as a failure because its answer
was too long). The CLI calls the service directly: people are not bound by Codex's output cap.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from codexmem.envelope import MAX_ANSWER_BYTES, fail, fit, ok, size_of
from codexmem.errors import CodexmemError, Warnings, invalid_input
from codexmem.records import service
from codexmem.records.fields import outdated_message
from codexmem.store.identity import slug
from codexmem.store.layout import KINDS
from codexmem.store.store import Store
from codexmem.timeutil import compact_ts

SCHEMA_BUDGET = MAX_ANSWER_BYTES // 2
"""The bytes a page's schema may take: the rest of the answer is the previews'."""
AUTHOR_CHARS = 24
"""An event's author as a short name: the slug of the git identity, cut to this length."""


def channels(store: Store, warnings: Warnings, *, after_id: str | None = None) -> dict[str, Any]:
    """``list_record_channels``: the channels by id (after ``after_id``), as many as fit; a cut
    list says where to go on (``next_after_id``): about 140 fit, and past them none could be
    reached before."""
    rows = [
        {"id": c.id, "name": c.name, "item_count": c.item_count}
        for c in service.list_channels(store)
        if after_id is None or c.id > after_id
    ]

    def render(kept: list[dict[str, Any]]) -> dict[str, Any]:
        data: dict[str, Any] = {"channels": kept}
        if len(kept) < len(rows):
            data["truncated"] = True
            data["next_after_id"] = kept[-1]["id"] if kept else after_id
        return data

    return fit(rows, render, warnings)[0]


def items_page(
    store: Store, channel_id: str, *, before_id: str | None, limit: int, now: datetime, warnings: Warnings
) -> dict[str, Any]:
    """``list_record_items``: the schema and a page of previews; ``next_before_id`` continues it."""
    from codexmem.memory.retrieval import warn_unreadable

    page = service.list_items(store, channel_id, before_id=before_id, limit=limit, now=now)
    warn_unreadable(store.index, warnings, under=f"channels/{channel_id}/")  # an item with conflict markers, say
    schema = fitted_schema(page.schema.to_public(), warnings)

    def render(kept: list[dict[str, Any]]) -> dict[str, Any]:
        cut = len(kept) < len(page.items)
        more = page.has_more or cut
        data: dict[str, Any] = {
            "schema": schema,
            "items": kept,
            "has_more": more,
            "next_before_id": (kept[-1]["id"] if kept else before_id) if more else None,
        }
        if cut:
            data["truncated"] = True
        return data

    data, kept = fit(page.items, render, warnings)
    if kept:
        return data  # fit keeps only what fits
    if page.items:
        # A preview larger than the room the schema leaves (many long text fields): the first one,
        # its longest texts cut further, so every page moves on. An empty page with has_more sent
        # an agent back for the same empty page.
        data = render([fit_item(lambda it: ok(render([it]), warnings), page.items[0])])
    if size_of(ok(data, warnings)) > MAX_ANSWER_BYTES:
        # Only a schema of some 165 filled fields or more gets here: said as what it is, where the
        # server's own over-budget error told the agent to lower a limit that is not the cause.
        raise CodexmemError(
            "ERR_READ_FAILED",
            f"channel {channel_id}'s schema has {len(schema['fields'])} fields, {size_of(schema):,} bytes even"
            f" cut down: more than an answer of {MAX_ANSWER_BYTES:,} bytes holds beside an item. Read items"
            f" one at a time with read_record_item (a person lists their ids with `codexmem items list {channel_id}`)",
        )
    return data


def fitted_schema(schema: dict[str, Any], warnings: Warnings) -> dict[str, Any]:
    """The schema a page carries, in at most ``SCHEMA_BUDGET`` bytes so the previews have room.

    A schema over it loses what an agent can do without first: its options' colours (they are
    for people; an agent sends values) and the flags that are false (``is_required``,
    ``is_unique``). Then the longest option lists are halved until it fits: such a field keeps
    its first options and says how many it has (``options_total``), and a warning says which
    were cut. A field of 150 options made the schema fill the page (0 previews, the same empty
    page again for every call); 700 made an answer of 43 KB that Codex would cut in the middle.
    """
    if size_of(schema) <= SCHEMA_BUDGET:
        return schema
    fields = [{**f, "config": {**f["config"]}} if "config" in f else dict(f) for f in schema["fields"]]
    for f in fields:
        for flag in ("is_required", "is_unique"):
            if f.get(flag) is False:
                del f[flag]
        options = f.get("config", {}).get("options")
        if options:
            f["config"]["options"] = [{k: v for k, v in o.items() if k != "color"} for o in options]
    fitted = {**schema, "fields": fields}
    totals: dict[str, int] = {}
    while size_of(fitted) > SCHEMA_BUDGET:
        longest = max(fields, key=lambda f: len(f.get("config", {}).get("options") or []))
        options = longest.get("config", {}).get("options") or []
        if not options:
            break  # not options that make it large: the page's own fit says what fits
        totals.setdefault(longest["key"], len(options))
        longest["config"]["options"] = options[: len(options) // 2]
        longest["config"]["options_total"] = totals[longest["key"]]
    if totals:
        cut = ", ".join(f"{key} {len(_options_of(fields, key))} of {total}" for key, total in totals.items())
        warnings.add(
            "WARN_SCHEMA_CUT",
            f"the schema lists only the first options of fields with many ({cut}); an edit is checked"
            " against all of them, and a rejection names the options nearest the value sent",
        )
    if size_of(fitted) > SCHEMA_BUDGET:
        # Many fields (120 short text fields left no room for an item): an edit sends keys, so the
        # labels go.
        for f in fields:
            f.pop("label", None)
        warnings.add(
            "WARN_SCHEMA_CUT",
            f"the schema lists its {len(fields)} fields without their labels, to leave room for items;"
            " an edit sends field keys",
        )
    return fitted


def _options_of(fields: list[dict[str, Any]], key: str) -> list[Any]:
    return next(f["config"]["options"] for f in fields if f["key"] == key)


def item(store: Store, channel_id: str, item_id: str, *, now: datetime, warnings: Warnings) -> dict[str, Any]:
    """``read_record_item``: the whole item (its longest texts cut only if it cannot fit otherwise)."""
    return _fitted_item({"item": service.read_item(store, channel_id, item_id, now=now)}, warnings)


def field_part(
    store: Store, channel_id: str, item_id: str, key: str, offset: int, *, now: datetime, warnings: Warnings
) -> dict[str, Any]:
    """``read_record_item`` with ``field``: one value whole, a long text from ``offset`` on, as much
    as fits, with ``next_offset`` for the rest (``truncated_values`` names what a whole item cut)."""
    found = service.read_item(store, channel_id, item_id, now=now)
    if key not in found["values"]:
        keys = ", ".join(found["values"]) or "none"
        raise invalid_input("field", f"item {item_id} holds no value of {key[:64]!r}; its fields with values: {keys}")
    value = found["values"][key]
    head = {"id": found["id"], "version": found["version"], "field": key}
    if not isinstance(value, str):
        return {**head, "value": value}
    if not 0 <= offset <= len(value):
        raise invalid_input("offset", f"must be 0..{len(value)} (the text's length in characters), got {offset}")

    def part(end: int) -> dict[str, Any]:
        more = {"next_offset": end} if end < len(value) else {}
        return {**head, "text": value[offset:end], "offset": offset, "length": len(value), **more}

    low, high = offset, len(value)  # the most characters that fit (a character is 1 to 4 bytes)
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if size_of(ok(part(middle), warnings)) <= MAX_ANSWER_BYTES else (low, middle - 1)
    return part(low)


def edit(
    store: Store,
    channel_id: str,
    item_id: str,
    values: dict[str, Any],
    *,
    expected_version: int,
    idempotency_key: str,
    actor: str,
    now: datetime,
    warnings: Warnings,
    session_id: str | None = None,
) -> dict[str, Any]:
    """``edit_record_item``: the edited item; a rejection's current item and field list fit too."""
    try:
        result = service.edit_item(
            store,
            channel_id,
            item_id,
            values,
            expected_version=expected_version,
            idempotency_key=idempotency_key,
            actor=actor,
            now=now,
            session_id=session_id,
        )
    except CodexmemError as exc:
        if exc.code == "ERR_VERSION_CONFLICT" and "item" in exc.extra:
            base = fail(exc, warnings)
            exc.extra["item"] = fit_item(lambda it: {**base, "error": {**base["error"], "item": it}}, exc.extra["item"])
        elif exc.code == "ERR_VALIDATION_FAILED":
            _fit_error_fields(exc, warnings)
        raise
    if result.redacted:
        warnings.add("WARN_SECRET_REDACTED", f"credentials were redacted in {', '.join(result.redacted)}")
    if result.outdated:
        warnings.add("WARN_VALUES_OUTDATED", outdated_message(result.outdated))
    if result.unchanged:
        warnings.add("WARN_NO_CHANGE", "the values sent are the stored ones: nothing was written, the version stays")
    data = dict(result.answer)
    if result.replayed:
        data["replayed"] = True
    return _fitted_item(data, warnings)


def poll(store: Store, *, since: int, channel_id: str | None, limit: int, warnings: Warnings) -> dict[str, Any]:
    """``poll_resource_events``: changes after ``since``, oldest first, as many as fit."""
    result = service.poll_events(store, since=since, channel_id=channel_id, limit=limit)
    events = [polled_event(e, channel_named=channel_id is not None) for e in result.events]

    def render(kept: list[dict[str, Any]]) -> dict[str, Any]:
        cut = len(kept) < len(result.events)
        data: dict[str, Any] = {
            "events": kept,
            "next_since": result.events[len(kept) - 1]["seq"] if kept else result.idle_since,
            "has_more": result.has_more or cut,
        }
        if cut:
            data["truncated"] = True
        return data

    return fit(events, render, warnings)[0]


def polled_event(event: dict[str, Any], *, channel_named: bool) -> dict[str, Any]:
    """One event as a poll shows it: what the caller needs to act, ~140 bytes instead of ~290.

    Left out: the event id and the per-event sequence (the answer's ``next_since`` is the one
    cursor to keep), the channel when the request named it, ``kind`` when the id's prefix says it
    (``item_``, ``note_``, ...: only a channel's own events carry it), and ``changed`` of a
    creation (every field is new) or deletion (none is left). The time is to the second in basic
    UTC form and the author a short name; ``actor`` says how the change came (``cli``, ``mcp``, a
    session id).
    """
    out: dict[str, Any] = {"at": compact_ts(event["at"])}
    if event.get("author"):
        out["author"] = slug(event["author"], AUTHOR_CHARS) or event["author"][:AUTHOR_CHARS]
    out["actor"] = event["actor"]
    kind = KINDS.get(event["kind"])
    if kind is None or kind.prefix is None or not event["id"].startswith(f"{kind.prefix}_"):
        out["kind"] = event["kind"]
    out["id"] = event["id"]
    if event.get("record_channel_id") and not channel_named:
        out["record_channel_id"] = event["record_channel_id"]
    out.update({"type": event["type"], "version": event["version"]})
    if event["type"] not in ("created", "deleted"):
        out["changed"] = event["changed"]
    return out


def fit_item(envelope_of: Callable[[dict[str, Any]], dict[str, Any]], item: dict[str, Any]) -> dict[str, Any]:
    """``item`` cut until ``envelope_of(item)`` fits the answer budget.

    A bug tracker's item fits easily; a channel with several 10,000-character texts does not. The
    longest texts are cut first, each to as much as fits (found by halving: a character is 1 to 4
    bytes), ending in "…" and named in ``truncated_values``. A channel of very many fields may not
    fit even then: values are then left out from the last field back, and ``values_left_out``
    counts them, so a committed edit is still answered as one.
    """
    if size_of(envelope_of(item)) <= MAX_ANSWER_BYTES:
        return item
    values = dict(item["values"])
    cut: list[str] = []

    def shaped() -> dict[str, Any]:
        shrunk = {**item, "values": values, "truncated_values": cut}
        left_out = len(item["values"]) - len(values)
        return {**shrunk, "values_left_out": left_out} if left_out else shrunk

    def fits() -> bool:
        return size_of(envelope_of(shaped())) <= MAX_ANSWER_BYTES

    texts = sorted((k for k, v in values.items() if isinstance(v, str) and v), key=lambda k: -len(values[k]))
    for key in texts:
        whole = values[key]
        cut.append(key)
        values[key] = "…"
        if not fits():
            continue  # nothing of it fits beside the rest: on to the next text, no search
        low, high = 0, len(whole) - 1  # the most characters kept that fit, if any
        while low < high:
            middle = (low + high + 1) // 2
            values[key] = whole[:middle] + "…"
            low, high = (middle, high) if fits() else (low, middle - 1)
        values[key] = whole[:low] + "…"
        if fits():
            return shaped()
    for key in reversed(list(item["values"])):
        del values[key]
        if key in cut:
            cut.remove(key)
        if fits():
            return shaped()
    return shaped()


def _fitted_item(data: dict[str, Any], warnings: Warnings) -> dict[str, Any]:
    data["item"] = fit_item(lambda it: ok({**data, "item": it}, warnings), data["item"])
    return data


def _fit_error_fields(error: CodexmemError, warnings: Warnings) -> None:
    """Keep the rejection entries that fit the budget (in request order) and count the rest."""
    fields = list(error.fields or [])
    base = fail(error, warnings)

    def render(kept: list[dict[str, Any]]) -> dict[str, Any]:
        body = {**base["error"], "fields": kept}
        if len(kept) < len(fields):
            body["more_fields"] = len(fields) - len(kept)
        return body

    _, kept = fit(fields, render, envelope=lambda body: {**base, "error": body})
    if kept < len(fields):
        error.fields = fields[:kept]
        error.extra["more_fields"] = len(fields) - kept
