"""Safe Markdown for notes and handoffs: what an agent wrote is shown, never run.

Raw HTML is off (``<script>`` becomes text) and links are allowed only to http(s), mailto and
relative targets: ``javascript:``, ``vbscript:``, ``file:`` and every ``data:`` URL (markdown-it
lets ``data:image`` through by default) are left as plain text.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from markdown_it import MarkdownIt

_SCHEME_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})


def is_safe_url(url: str) -> bool:
    """True for http(s)/mailto URLs and for relative references without a scheme."""
    # markdown-it hands over the percent-encoded form; browsers ignore tabs, newlines and
    # control characters inside a scheme. Judge the decoded, squeezed text.
    cleaned = re.sub(r"[\x00-\x20\x7f]", "", unquote(url))
    match = _SCHEME_RE.match(cleaned)
    return match is None or match.group(1).lower() in SAFE_SCHEMES


class _SafeMarkdownIt(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        return is_safe_url(url)


def _make() -> MarkdownIt:
    md = _SafeMarkdownIt("commonmark", {"html": False})
    md.enable(["table", "strikethrough"])
    return md


_MD = _make()


def render_markdown(text: str) -> str:
    """HTML for one Markdown text; safe to mark as such in a template."""
    html: str = _MD.render(text)
    return html
