"""The Jinja environment of the site: autoescaping, filters, and Markdown rendered once.

Autoescape is on for every template, so titles, labels, paths and values are escaped unless a
filter below marks its own output safe: ``markdown`` (its renderer has raw HTML off) and
``linked`` (escapes the text itself, then links the ids and tickets it names).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jinja2 import BytecodeCache, Environment, FileSystemLoader, StrictUndefined
from jinja2.bccache import Bucket
from markupsafe import Markup

from codexmem.render.markdown import is_safe_url, link_mentions, render_markdown

MARKDOWN_CACHE = 256


class MarkdownCache:
    """Markdown is the cost of a build: a text shown on several pages is rendered once.

    Bounded (the newest ``MARKDOWN_CACHE`` texts), so a build of many notes keeps little.
    """

    def __init__(self) -> None:
        self._html: OrderedDict[tuple[str, tuple[tuple[str, str], ...]], Markup] = OrderedDict()
        self.rendered = 0

    def __call__(self, text: str, mentions: Mapping[str, str] | None = None) -> Markup:
        key = (text, tuple(sorted((mentions or {}).items())))
        html = self._html.get(key)
        if html is None:
            html = Markup(render_markdown(text, mentions))  # noqa: S704 - raw HTML is off
            self.rendered += 1
            self._html[key] = html
            if len(self._html) > MARKDOWN_CACHE:
                self._html.popitem(last=False)
        return html


class _SharedBytecode(BytecodeCache):
    """Compiled templates kept in memory and shared by the environments of one build."""

    def __init__(self) -> None:
        self.code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        code = self.code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: Bucket) -> None:
        self.code[bucket.key] = bucket.bytecode_to_string()


class Environments:
    """One Jinja environment per page depth, whose globals are that depth's ``root`` and the ``site``.

    Macros read ``root`` (links are relative to the page) and ``site`` as globals, so templates
    import them without context and Jinja builds each macro module once per depth, not once per
    page (importing with context cost about 0.3 ms a page).
    """

    def __init__(self, templates: Path, markdown: MarkdownCache, site: dict[str, Any]) -> None:
        self.templates = templates
        self.markdown = markdown
        self.site = site
        self._by_root: dict[str, Environment] = {}
        self._bytecode = _SharedBytecode()  # each template compiled once, not once per depth

    def __call__(self, root: str) -> Environment:
        env = self._by_root.get(root)
        if env is None:
            env = self._by_root[root] = make_env(self.templates, self.markdown, self._bytecode)
            env.globals.update(root=root, site=self.site)
        return env


_DICT_ATTRIBUTES = frozenset(dir(dict))


class _Environment(Environment):
    """Jinja's environment, reading ``x.key`` of a plain dict as the item first.

    Jinja looks an attribute up first (``getattr(x, "key")``), then the item. Page contexts are
    dicts, so nearly every ``{{ note.title }}`` raised and caught an AttributeError first: a
    tenth of a cold build's rendering. The result is the same: a name a dict has as an attribute
    (``items``, ``get``...) still goes Jinja's way, so it is never shadowed by a key.
    """

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


def make_env(templates: Path, markdown: MarkdownCache, bytecode: BytecodeCache | None = None) -> Environment:
    env = _Environment(
        bytecode_cache=bytecode,
        loader=FileSystemLoader(str(templates)),
        # Templates do not change during a build: no file check each time a page asks for one
        # (a stat per template per page, 2% of a cold build).
        auto_reload=False,
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        markdown=markdown,
        linked=lambda text, mentions=None: link_mentions(str(text), mentions or {}),
        dt=format_dt,
        day=lambda ts: str(ts)[:10],
        num=format_num,
        link_url=link_url,
        compact_json=lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True),
        words=lambda s: str(s).replace("_", " "),
        plural=plural,
    )
    return env


def format_dt(ts: str | None) -> str:
    """``2026-03-13T10:52:00.123Z`` -> ``2026-03-13 10:52`` (UTC, said once in the footer)."""
    if not ts:
        return ""
    return f"{ts[:10]} {ts[11:16]}".strip()


def format_num(value: Any) -> str:
    """Whole numbers without a decimal point, others with at most two decimals."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    return f"{int(value):,}"


def plural(count: int, noun: str) -> str:
    """``1 note``, ``2 notes``, ``1,204 items``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def link_url(value: Any) -> str | None:
    """A URL value worth an href: http(s) or mailto only; anything else is shown as text."""
    if not isinstance(value, str) or not value.strip():
        return None
    lowered = value.strip().lower()
    if not lowered.startswith(("http://", "https://", "mailto:")):
        return None
    return value.strip() if is_safe_url(value) else None
