"""The record channel tools: list channels, list a page of items, read one, edit one, poll changes.

Names, arguments and limits follow the tools Codex already knows from osFoundry. ``values`` can
only be ``{"type": "object"}`` in a tool schema, because keys and options differ per channel, so
the channel's full schema rides along with every page of ``list_record_items``. Answers are
shaped and fitted to the answer budget by :mod:`codexmem.records.answers`; services are imported
inside handlers so ``tools/list`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from codexmem.errors import Warnings
from codexmem.mcp.registry import ToolInput, ToolSpec
from codexmem.models.base import SessionId

if TYPE_CHECKING:
    from codexmem.mcp.state import ServerState

ACTOR = "mcp"
"""How an item was changed through these tools without a session (events also say who: the author)."""

ChannelId = Annotated[
    str, Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$", description="Channel id from list_record_channels, e.g. bugs")
]
ItemId = Annotated[str, Field(pattern=r"^item_[0-9A-HJKMNP-TV-Z]{26}$", description="Item id, item_<ULID>")]


class ListChannelsInput(ToolInput):
    after_id: ChannelId | None = Field(
        default=None, description="next_after_id of the previous call; omit for the first channels"
    )


class ListItemsInput(ToolInput):
    record_channel_id: ChannelId
    before_id: ItemId | None = Field(
        default=None, description="next_before_id of the previous page; omit for the newest items"
    )
    limit: int = Field(default=20, ge=1, le=50, description="Items per page, 1-50 (default 20)")


class ReadItemInput(ToolInput):
    record_channel_id: ChannelId
    item_id: ItemId
    field: Annotated[str, Field(max_length=64, description="one field's value only: a text in parts, from offset")] = ""
    offset: Annotated[int, Field(ge=0, le=10_000_000, description="with field: the character to start at")] = 0


class EditItemInput(ToolInput):
    record_channel_id: ChannelId
    item_id: ItemId
    values: dict[str, Any] = Field(
        description="Field key -> new value, only the fields to change; null clears an optional field "
        "(or drops one the schema no longer has)"
    )
    expected_version: int = Field(ge=1, description="The item's version from your last read")
    idempotency_key: str = Field(
        min_length=1, max_length=200, description="A new unique string per intended edit; resend it on a retry"
    )
    session_id: SessionId | None = Field(
        default=None, description="Your session (from memory_bootstrap_session), so the change says who made it"
    )


class PollInput(ToolInput):
    since: int = Field(default=0, ge=0, description="next_since from the previous poll; 0 for everything")
    record_channel_id: ChannelId | None = Field(default=None, description="Only this channel")
    limit: int = Field(default=100, ge=1, le=500, description="Events per call, 1-500 (default 100)")


# ----------------------------------------------------------------------------------- handlers


def _list_channels(state: ServerState, args: ListChannelsInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.records import answers

    return answers.channels(state.store(), warnings, after_id=args.after_id)


def _list_items(state: ServerState, args: ListItemsInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.records import answers

    return answers.items_page(
        state.store(),
        args.record_channel_id,
        before_id=args.before_id,
        limit=args.limit,
        now=state.now(),
        warnings=warnings,
    )


def _read_item(state: ServerState, args: ReadItemInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.records import answers

    if args.field:
        return answers.field_part(
            state.store(), args.record_channel_id, args.item_id, args.field, args.offset, now=state.now(),
            warnings=warnings,
        )  # fmt: skip
    return answers.item(state.store(), args.record_channel_id, args.item_id, now=state.now(), warnings=warnings)


def _edit_item(state: ServerState, args: EditItemInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.records import answers

    return answers.edit(
        state.store(fresh=False),  # the edit works inside one transaction, which refreshes the index
        args.record_channel_id,
        args.item_id,
        args.values,
        expected_version=args.expected_version,
        idempotency_key=args.idempotency_key,
        actor=ACTOR,
        now=state.now(),
        warnings=warnings,
        session_id=args.session_id,
    )


def _poll(state: ServerState, args: PollInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.records import answers

    return answers.poll(
        state.store(), since=args.since, channel_id=args.record_channel_id, limit=args.limit, warnings=warnings
    )


TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="list_record_channels",
        description=(
            "List the record channels (id, name, item count), by id; a long list goes on with "
            "after_id=next_after_id. Open one with list_record_items."
        ),
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
        description="Read one item by id from a record channel: every value, formulas computed, and its version. "
        "A text cut to fit (truncated_values) reads whole with field, in parts from offset (next_offset).",
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
        checks_own_text=("values",),
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
