"""The record channel tools: list channels, list a page of items, read one, edit one, poll changes.

Names, arguments and limits follow the tools Codex already knows from osFoundry. ``values`` can
only be ``{"type": "object"}`` in a tool schema, because keys and options differ per channel, so
the channel's full schema rides along with every page of ``list_record_items``. Every answer is
fitted to the envelope budget: lists stop early and say so, long text values of a single item
are cut and named rather than letting the answer break. Services are imported inside handlers
so ``tools/list`` stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from codexmem.envelope import MAX_ANSWER_BYTES, fail, fit, ok, size_of
from codexmem.errors import CodexmemError, Warnings
from codexmem.mcp.registry import ToolInput, ToolSpec

if TYPE_CHECKING:
    from codexmem.mcp.state import ServerState

ACTOR = "mcp"
"""Who changed an item through these tools (events also name ``cli:<user>`` and ``git``)."""

ChannelId = Annotated[
    str, Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$", description="Channel id from list_record_channels, e.g. bugs")
]
ItemId = Annotated[str, Field(pattern=r"^item_[0-9A-HJKMNP-TV-Z]{26}$", description="Item id, item_<ULID>")]


class ListChannelsInput(ToolInput):
    pass


class ListItemsInput(ToolInput):
    record_channel_id: ChannelId
    before_id: ItemId | SkipJsonSchema[None] = Field(
        default=None, description="next_before_id of the previous page; omit for the newest items"
    )
    limit: int = Field(default=20, ge=1, le=50, description="Items per page, 1-50 (default 20)")


class ReadItemInput(ToolInput):
    record_channel_id: ChannelId
    item_id: ItemId


class EditItemInput(ToolInput):
    record_channel_id: ChannelId
    item_id: ItemId
    values: dict[str, Any] = Field(
        description="Field key -> new value, only the fields to change; null clears an optional field"
    )
    expected_version: int = Field(ge=1, description="The item's version from your last read")
    idempotency_key: str = Field(
        min_length=1, max_length=200, description="A new unique string per intended edit; resend it on a retry"
    )


class PollInput(ToolInput):
    since: int = Field(default=0, ge=0, description="next_since from the previous poll; 0 for everything")
    record_channel_id: ChannelId | SkipJsonSchema[None] = Field(default=None, description="Only this channel")
    limit: int = Field(default=100, ge=1, le=500, description="Events per call, 1-500 (default 100)")


# ------------------------------------------------------------------------------------ fitting


def fit_item(envelope_of: Callable[[dict[str, Any]], dict[str, Any]], item: dict[str, Any]) -> dict[str, Any]:
    """``item`` with its longest text values cut until ``envelope_of(item)`` fits the answer budget.

    A bug tracker's item fits easily; a channel with several 10,000-character texts does not, and
    an over-budget answer would replace a committed edit's success with an error. Cut values end
    in "…" and are named in ``truncated_values``.
    """
    over = size_of(envelope_of(item)) - MAX_ANSWER_BYTES
    if over <= 0:
        return item
    values = dict(item["values"])
    cut: list[str] = []
    texts = sorted((k for k, v in values.items() if isinstance(v, str)), key=lambda k: -len(values[k]))
    for key in texts:
        # Each character removed is at least one byte; the margin covers the marker keys.
        keep = max(0, len(values[key]) - over - 100)
        values[key] = values[key][:keep] + "…"
        cut.append(key)
        shrunk = {**item, "values": values, "truncated_values": cut}
        over = size_of(envelope_of(shrunk)) - MAX_ANSWER_BYTES
        if over <= 0:
            return shrunk
    return item  # not text that makes it large: the server reports the budget error


def _fit_answer_item(data: dict[str, Any], warnings: Warnings) -> dict[str, Any]:
    data["item"] = fit_item(lambda it: ok({**data, "item": it}, warnings), data["item"])
    return data


def _fit_error_item(error: CodexmemError, warnings: Warnings) -> None:
    base = fail(error, warnings)
    error.extra["item"] = fit_item(lambda it: {**base, "error": {**base["error"], "item": it}}, error.extra["item"])


def _fit_error_fields(error: CodexmemError, warnings: Warnings) -> None:
    """Keep the rejection entries that fit the budget (in request order) and count the rest."""
    fields = list(error.fields or [])
    base = fail(error, warnings)

    def render(kept: list[dict[str, Any]]) -> dict[str, Any]:
        body = {**base["error"], "fields": kept}
        if len(kept) < len(fields):
            body["more_fields"] = len(fields) - len(kept)
        return {**base, "error": body}

    _, kept = fit(fields, render)
    if kept < len(fields):
        error.fields = fields[:kept]
        error.extra["more_fields"] = len(fields) - kept


# ----------------------------------------------------------------------------------- handlers


def _list_channels(state: ServerState, args: ListChannelsInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.records import service

    rows = [{"id": c.id, "name": c.name, "item_count": c.item_count} for c in service.list_channels(state.store())]

    def render(kept: list[dict[str, Any]]) -> dict[str, Any]:
        data: dict[str, Any] = {"channels": kept}
        if len(kept) < len(rows):
            data["truncated"] = True
        return ok(data, warnings)

    envelope, _ = fit(rows, render)
    data: dict[str, Any] = envelope["data"]
    return data


def _list_items(state: ServerState, args: ListItemsInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.records import service

    page = service.list_items(
        state.store(), args.record_channel_id, before_id=args.before_id, limit=args.limit, now=state.now()
    )
    schema = page.schema.to_public()

    def render(kept: list[dict[str, Any]]) -> dict[str, Any]:
        cut = len(kept) < len(page.items)
        more = page.has_more or cut
        data: dict[str, Any] = {
            "schema": schema,
            "items": kept,
            "has_more": more,
            "next_before_id": (kept[-1]["id"] if kept else args.before_id) if more else None,
        }
        if cut:
            data["truncated"] = True
        return ok(data, warnings)

    envelope, _ = fit(page.items, render)
    data: dict[str, Any] = envelope["data"]
    return data


def _read_item(state: ServerState, args: ReadItemInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.records import service

    item = service.read_item(state.store(), args.record_channel_id, args.item_id, now=state.now())
    return _fit_answer_item({"item": item}, warnings)


def _edit_item(state: ServerState, args: EditItemInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.records import service

    try:
        result = service.edit_item(
            state.store(fresh=False),  # edit_item works inside one transaction, which refreshes the index
            args.record_channel_id,
            args.item_id,
            args.values,
            expected_version=args.expected_version,
            idempotency_key=args.idempotency_key,
            actor=ACTOR,
            now=state.now(),
        )
    except CodexmemError as exc:
        if exc.code == "ERR_VERSION_CONFLICT" and "item" in exc.extra:
            _fit_error_item(exc, warnings)
        elif exc.code == "ERR_VALIDATION_FAILED":
            _fit_error_fields(exc, warnings)
        raise
    if result.redacted:
        warnings.add("WARN_SECRET_REDACTED", f"credentials were redacted in {', '.join(result.redacted)}")
    data = dict(result.answer)
    if result.replayed:
        data["replayed"] = True
    return _fit_answer_item(data, warnings)


def _poll(state: ServerState, args: PollInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.records import service

    result = service.poll_events(state.store(), since=args.since, channel_id=args.record_channel_id, limit=args.limit)

    def render(kept: list[dict[str, Any]]) -> dict[str, Any]:
        cut = len(kept) < len(result.events)
        data: dict[str, Any] = {
            "events": kept,
            "next_since": kept[-1]["seq"] if kept else result.idle_since,
            "has_more": result.has_more or cut,
        }
        if cut:
            data["truncated"] = True
        return ok(data, warnings)

    envelope, _ = fit(result.events, render)
    data: dict[str, Any] = envelope["data"]
    return data


TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="list_record_channels",
        description="List the record channels (id, name, item count). Open one with list_record_items.",
        input_model=ListChannelsInput,
        handler=_list_channels,
        read_only=True,
    ),
    ToolSpec(
        name="list_record_items",
        description=(
            "List a bounded page of item previews from one record channel, newest first, with the channel's "
            "schema on every page: send option values, not labels, and respect min/max. Page on with "
            "before_id=next_before_id. Use read_record_item for complete values."
        ),
        input_model=ListItemsInput,
        handler=_list_items,
        read_only=True,
    ),
    ToolSpec(
        name="read_record_item",
        description="Read one item by id from a record channel: every value, formulas computed, and its version.",
        input_model=ReadItemInput,
        handler=_read_item,
        read_only=True,
    ),
    ToolSpec(
        name="edit_record_item",
        description=(
            "Update fields of one item. Every value is checked against the schema and the whole edit is "
            "rejected if any fails (error.fields says why and what is allowed); nothing is coerced. Send the "
            "version from read_record_item: if someone changed the item since, you get the current item to "
            "re-check. Retry with the same idempotency_key; formula fields cannot be written."
        ),
        input_model=EditItemInput,
        handler=_edit_item,
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    ToolSpec(
        name="poll_resource_events",
        description=(
            "Changes to items and memory records after `since`, oldest first (created, updated, deleted, by "
            "whom). Keep next_since and pass it next time; ERR_CURSOR_EXPIRED means list again and poll from "
            "error.next_since."
        ),
        input_model=PollInput,
        handler=_poll,
        read_only=True,
    ),
]
