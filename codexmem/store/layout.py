"""Where each record lives and how its file reads and writes.

Every path is built here, from ids that passed :mod:`codexmem.store.ids` checks, and is then
checked again to sit inside the store: no caller builds a path by hand.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from codexmem.errors import CodexmemError
from codexmem.models.channel import ChannelSchema
from codexmem.models.records import Handoff, ImportAudit, Item, Note, Session
from codexmem.store.ids import CHANNEL_ID_RE, is_record_id

CONFIG_FILE = "codexmem.yaml"
CACHE_DIR = ".cache"
SPARE_FILE = "spare"
"""In the cache: the file a replaced record left, written over by the next write (see store/atomic.py)."""
LOCK_FILE = ".lock"
EVENTS_DIR = "events"
CHANNELS_DIR = "channels"
SCHEMA_FILE = "schema.yaml"
ITEMS_DIR = "items"


@dataclass(frozen=True)
class Kind:
    """One record type: its id prefix, model, folder and file form."""

    name: str
    prefix: str | None
    id_field: str
    folder: str
    suffix: str
    body_field: str | None = None

    @property
    def model(self) -> type[BaseModel]:
        return MODELS[self.name]


SESSION = Kind("session", "sess", "session_id", "sessions", ".yaml")
NOTE = Kind("note", "note", "note_id", "notes", ".md", body_field="content")
HANDOFF = Kind("handoff", "handoff", "handoff_id", "handoffs", ".md", body_field="summary")
IMPORT = Kind("import", "import", "import_id", "imports", ".yaml")
ITEM = Kind("item", "item", "item_id", ITEMS_DIR, ".yaml")
CHANNEL = Kind("channel", None, "record_channel_id", CHANNELS_DIR, ".yaml")

KINDS: dict[str, Kind] = {k.name: k for k in (SESSION, NOTE, HANDOFF, IMPORT, ITEM, CHANNEL)}
MEMORY_KINDS = (SESSION, NOTE, HANDOFF, IMPORT)


MODELS: dict[str, type[BaseModel]] = {
    "session": Session,
    "note": Note,
    "handoff": Handoff,
    "import": ImportAudit,
    "item": Item,
    "channel": ChannelSchema,
}


class Layout:
    """Paths inside one store root."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / CONFIG_FILE
        self.cache = root / CACHE_DIR
        self.spare = self.cache / SPARE_FILE
        self.lock = root / LOCK_FILE
        self.events = root / EVENTS_DIR

    def folder(self, kind: Kind, channel: str | None = None) -> Path:
        if kind is ITEM:
            return self.channel_dir(_need_channel(channel)) / ITEMS_DIR
        if kind is CHANNEL:
            return self.root / CHANNELS_DIR
        return self.root / kind.folder

    def channel_dir(self, channel: str) -> Path:
        if not CHANNEL_ID_RE.match(channel):
            raise CodexmemError(
                "ERR_INVALID_INPUT",
                f"invalid channel id {channel[:80]!r}: a channel id is lower-case letters, digits, - and _, "
                "starting with a letter (such as bugs); `codexmem channels list` lists them",
            )
        return self.root / CHANNELS_DIR / channel

    def path(self, kind: Kind, record_id: str, channel: str | None = None) -> Path:
        """The file of one record; ``record_id`` must already be a valid id of ``kind``."""
        if kind is CHANNEL:
            path = self.channel_dir(record_id) / SCHEMA_FILE
        else:
            if kind.prefix is None or not is_record_id(record_id, kind.prefix):
                raise CodexmemError("ERR_INVALID_INPUT", f"invalid {kind.name} id {record_id[:80]!r}")
            name = f"{record_id}{kind.suffix}"
            # Belt and braces: the id regex already forbids separators, but never trust one check.
            # (A string check: the folders below are checked for symlinks next, so no resolve() is needed.)
            if os.sep in name or (os.altsep and os.altsep in name) or name.startswith("."):
                raise CodexmemError("ERR_INVALID_INPUT", "record path escapes the store")
            path = self.folder(kind, channel) / name
        # A folder on the way replaced by a symlink (a pull request can carry one) would lead out.
        refuse_symlinks(self.root, path.parent)
        return path

    def relpath(self, kind: Kind, record_id: str, channel: str | None = None) -> str:
        """:meth:`path` from the store's folder, with ``/``: how findings and the index name a record's file."""
        return self.path(kind, record_id, channel).relative_to(self.root).as_posix()

    def identify(self, path: Path) -> tuple[Kind, str, str | None] | None:
        """Map a file inside the store back to (kind, id, channel), or None if it is no record."""
        try:
            rel = path.relative_to(self.root).as_posix()
        except ValueError:
            return None
        return identify_relpath(rel)


_REL_RE = re.compile(
    r"^(?:(?P<folder>sessions|notes|handoffs|imports)/(?P<id>[a-z]+_[0-9A-Z]{26})\.(?P<ext>yaml|md)"
    r"|channels/(?P<ch>[a-z][a-z0-9_-]{0,63})/(?:(?P<schema>schema\.yaml)|items/(?P<item>item_[0-9A-Z]{26})\.yaml))$"
)
_FOLDER_KIND = {"sessions": SESSION, "notes": NOTE, "handoffs": HANDOFF, "imports": IMPORT}


def identify_relpath(rel: str) -> tuple[Kind, str, str | None] | None:
    m = _REL_RE.match(rel)
    if not m:
        return None
    if m.group("folder"):
        kind = _FOLDER_KIND[m.group("folder")]
        rid = m.group("id")
        if not is_record_id(rid, kind.prefix) or f".{m.group('ext')}" != kind.suffix:
            return None
        return kind, rid, None
    channel = m.group("ch")
    if m.group("schema"):
        return CHANNEL, channel, None
    return ITEM, m.group("item"), channel


def symlink_below(root: Path, path: Path) -> str | None:
    """The first part of ``path`` below ``root`` that is a symbolic link (relative to root), else None.

    Parts that do not exist yet are fine: codexmem creates them as real folders.
    """
    base, target = str(root), str(path)
    if target == base:
        return None
    if not target.startswith(base.rstrip("/") + "/"):
        return path.as_posix()
    current = base.rstrip("/")
    for part in target[len(current) + 1 :].split("/"):  # strings: this runs on every write
        if not part:
            continue
        current = f"{current}/{part}"
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            return None
        if stat.S_ISLNK(mode):
            return current[len(base.rstrip("/")) + 1 :]
    return None


def refuse_symlinks(root: Path, path: Path) -> None:
    """ERR_STORAGE_UNAVAILABLE when a part of ``path`` below ``root`` is a symbolic link."""
    link = symlink_below(root, path)
    if link is not None:
        raise CodexmemError(
            "ERR_STORAGE_UNAVAILABLE",
            f"{link} in the store is a symbolic link; codexmem never follows one out of the store: "
            "replace it with a real folder (codexmem check lists it)",
        )


def _need_channel(channel: str | None) -> str:
    if not channel:
        raise CodexmemError("ERR_INVALID_INPUT", "an item needs its record_channel_id")
    return channel
