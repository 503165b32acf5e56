"""Record ids and scope ids.

Record ids are ``<prefix>_<ULID>``: time-sortable, collision-free across clones and safe as
file names. Every id that arrives from outside goes through :func:`check_record_id` before it
is used to build a path, so nothing like ``../`` can ever reach the filesystem.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import weakref
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from ulid import ULID

from codexmem.errors import CodexmemError
from codexmem.timeutil import parse_ts, utcnow

RECORD_PREFIXES = ("sess", "note", "handoff", "import", "item", "evt")
_ULID_RE = "[0-7][0-9A-HJKMNP-TV-Z]{25}"  # 128 bits: the first character is at most 7
_RECORD_ID_RE = re.compile(rf"^(?P<prefix>{'|'.join(RECORD_PREFIXES)})_(?P<ulid>{_ULID_RE})\Z")
SCOPE_PREFIXES = ("sys", "proj", "ws")
_SCOPE_ID_RE = re.compile(r"^(sys|proj|ws)_[a-z0-9][a-z0-9_]{0,95}\Z")
CHANNEL_ID_RE = re.compile(r"^[a-z][a-z0-9_-]{0,63}\Z")
_SLUG_RE = re.compile(r"[^a-z0-9]+")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


_MAKERS: weakref.WeakSet[IdMaker] = weakref.WeakSet()


class IdMaker:
    """Makes ``<prefix>_<ULID>`` ids whose time part is the moment of the write they belong to.

    Ids made by one maker are strictly increasing, even within one millisecond, so they keep
    creation order. A store holds one maker; the example store's builder passes one with a seeded
    source of random bytes, so the same story always gives the same ids.
    """

    def __init__(self, randbytes: Callable[[int], bytes] = os.urandom) -> None:
        self._randbytes = randbytes
        self._lock = threading.Lock()
        self._last = 0
        _MAKERS.add(self)

    def _forget(self) -> None:
        """In a forked child: start afresh. Two children that went on from their parent's last id
        would both bump it by one (when the clock is behind it) and make the same id."""
        self._lock = threading.Lock()
        self._last = 0

    def new(self, prefix: str, at: datetime | str | None = None) -> str:
        """A fresh id; its ULID time is ``at`` (a store timestamp or a datetime), else now."""
        if prefix not in RECORD_PREFIXES:
            raise ValueError(f"unknown record prefix {prefix!r}")
        moment = parse_ts(at) if isinstance(at, str) else (at or utcnow())
        millis = (moment - _EPOCH) // timedelta(milliseconds=1)
        with self._lock:
            value = (millis << 80) | int.from_bytes(self._randbytes(10), "big")
            # Same millisecond (or a clock that went back): bump, so ids made here keep creation order.
            if value <= self._last:
                value = self._last + 1
            self._last = value
        return f"{prefix}_{ULID.from_int(value)}"


def _forget_all() -> None:
    for maker in list(_MAKERS):
        maker._forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_all)


DEFAULT_IDS = IdMaker()
"""The maker of stores opened without one of their own, and of test fixtures."""


def new_id(prefix: str, at: datetime | str | None = None) -> str:
    """A fresh id from :data:`DEFAULT_IDS` (records built outside a store: fixtures, benchmarks)."""
    return DEFAULT_IDS.new(prefix, at)


def is_record_id(value: object, prefix: str | None = None) -> bool:
    if not isinstance(value, str):
        return False
    m = _RECORD_ID_RE.match(value)
    return m is not None and (prefix is None or m.group("prefix") == prefix)


def check_record_id(value: object, prefix: str, field: str = "id") -> str:
    """Return ``value`` if it is a well-formed id of this prefix, else raise ERR_INVALID_INPUT."""
    if is_record_id(value, prefix):
        return str(value)
    shown = value if isinstance(value, str) and len(value) <= 80 else type(value).__name__
    message = f"must be an id of the form {prefix}_<ULID> (26 Crockford base32 characters), got {shown!r}"
    raise CodexmemError("ERR_INVALID_INPUT", f"{field} {message}", fields=[{"field": field, "message": message}])


def is_scope_id(value: object, prefix: str | None = None) -> bool:
    if not isinstance(value, str) or not _SCOPE_ID_RE.match(value):
        return False
    return prefix is None or value.startswith(prefix + "_")


def check_channel_id(value: object, field: str = "record_channel_id") -> str:
    if isinstance(value, str) and CHANNEL_ID_RE.match(value):
        return value
    message = "must be a channel id: a lower-case letter, then up to 63 of a-z 0-9 _ -"
    raise CodexmemError("ERR_INVALID_INPUT", f"{field} {message}", fields=[{"field": field, "message": message}])


def slugify(text: str, sep: str = "_") -> str:
    """Lower-case ASCII slug; runs of anything else become ``sep``."""
    slug = _SLUG_RE.sub(sep, text.lower()).strip(sep)
    return slug[:40].strip(sep) or "x"


def scope_id(prefix: str, name: str, identity_key: str) -> str:
    """Readable and collision-free: ``proj_order_web_3fa2c1d0`` = slug + hash of the identity key.

    Two repositories both called ``app`` get two ids because their identity keys differ.
    """
    if prefix not in SCOPE_PREFIXES:
        raise ValueError(f"unknown scope prefix {prefix!r}")
    digest = hashlib.sha256(identity_key.encode("utf-8")).hexdigest()[:8]
    return f"{prefix}_{slugify(name)}_{digest}"


def ulid_time_ms(record_id: str) -> int:
    """Milliseconds since the epoch encoded in a record id."""
    return int(ULID.from_str(record_id.split("_", 1)[1]).milliseconds)


def ulid_time(record_id: str) -> datetime | None:
    """The moment a record id encodes (to the millisecond); None past what a datetime holds (year 9999)."""
    try:
        return _EPOCH + timedelta(milliseconds=ulid_time_ms(record_id))
    except OverflowError:
        return None


def system_identity(name: str) -> str:
    """The id of a system named ``name``: the same in every store that names it alike."""
    return scope_id("sys", name, "system:" + slugify(name, "-"))


def project_identity_key(remote_normalized: str, root: str) -> str:
    """What identifies a project: its normalized remote url, else its work-tree root."""
    return f"remote:{remote_normalized}" if remote_normalized else f"root:{root}"
