"""Timestamps as the store writes them: RFC 3339, UTC, milliseconds, ``Z``.

One format everywhere means string order is time order, which the index and the
ordering rule "by time then id" rely on.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\Z")


def utcnow() -> datetime:
    return datetime.now(UTC)


def format_ts(moment: datetime) -> str:
    """Format an aware datetime as ``2026-03-13T10:52:00.123Z``."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def now_ts() -> str:
    return format_ts(utcnow())


def is_ts(value: str) -> bool:
    return bool(_TS_RE.match(value))


def compact_ts(value: str) -> str:
    """A store timestamp in ISO 8601's basic UTC form to the second: ``20260313T105200Z``.

    For answers that list many times (polled events): 8 bytes shorter each, still sortable as text.
    Anything not in the store's form is returned as it is.
    """
    if not is_ts(value):
        return value
    return f"{value[0:4]}{value[5:7]}{value[8:10]}T{value[11:13]}{value[14:16]}{value[17:19]}Z"


def parse_ts(value: str) -> datetime:
    """Parse a store timestamp (or any RFC 3339 / ISO 8601 string with offset) to aware UTC."""
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
