"""Safe Markdown for notes and handoffs: what an agent wrote is shown, never run.

Raw HTML is off (``<script>`` becomes text) and links are allowed only to http(s), mailto and
relative targets: ``javascript:``, ``vbscript:``, ``file:`` and every ``data:`` URL (markdown-it
lets ``data:image`` through by default) are left as plain text. Task lists, footnotes and bare
URLs come from mdit-py-plugins and linkify-it-py; fenced code with a known language is
highlighted by Pygments at build time, so a page needs no script to show it.

Record ids and tickets are linked through ``mentions`` (token -> URL relative to the page),
computed by the site from what the store holds: a text that names a record links to it, a
``[label](note_...)`` link resolves, and a name the store does not hold stays plain text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markupsafe import Markup, escape
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.tasklists import tasklists_plugin
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

_SCHEME_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})

RECORD_PREFIXES = ("note", "handoff", "sess", "import", "item")
RECORD_ID_RE = re.compile(rf"\b(?:{'|'.join(RECORD_PREFIXES)})_[0-9A-HJKMNP-TV-Z]{{26}}\b")
"""A record id anywhere in a text (the ULID alphabet: no I, L, O, U)."""
TOKEN_RE = re.compile(r"(?<![\w-])[A-Za-z0-9](?:[\w.-]*[A-Za-z0-9])?(?![\w-])")
"""A word that may be a ticket (``BUG-0012``): looked up, never guessed."""
_LEAD_RE = re.compile(r"[A-Za-z][A-Za-z_.-]*")
MAX_PREFIXES = 50

HIGHLIGHT_CLASS = "hl"
LIGHT_STYLE = "xcode"
DARK_STYLE = "github-dark"
"""The Pygments styles whose token colours keep 4.5:1 on the site's code background."""


def is_safe_url(url: str) -> bool:
    """True for http(s)/mailto URLs and for relative references without a scheme."""
    # markdown-it hands over the percent-encoded form; browsers ignore tabs, newlines and
    # control characters inside a scheme. Judge the decoded, squeezed text.
    cleaned = re.sub(r"[\x00-\x20\x7f]", "", unquote(url))
    match = _SCHEME_RE.match(cleaned)
    return match is None or match.group(1).lower() in SAFE_SCHEMES


def mention_pattern(tickets: Iterable[str]) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """A pattern that finds every record id and every word that may be one of ``tickets``, and probes.

    Tickets usually share a few letter prefixes (``BUG-``), which make a fast search; when they
    do not, any word with a digit is a candidate. Matches are candidates only: the caller strips
    trailing dots and keeps what the store holds. The probes are substrings one of which every
    match contains: a text without any of them needs no search.
    """
    prefixes: set[str] = set()
    for ticket in tickets:
        lead = _LEAD_RE.match(ticket)
        if lead is None:
            prefixes = set()
            generic = True
            break
        prefixes.add(lead.group(0))
    else:
        generic = len(prefixes) > MAX_PREFIXES
    if generic:
        digits = tuple("0123456789")
        return re.compile(rf"{RECORD_ID_RE.pattern}|(?<![\w.-])(?=[\w.-]*?\d)[\w.-]+"), digits
    ordered = sorted(prefixes, key=lambda p: (-len(p), p))
    words = [rf"(?<![\w-]){re.escape(p)}[\w.-]*" for p in ordered]
    probes = tuple(f"{prefix}_" for prefix in RECORD_PREFIXES) + tuple(ordered)
    return re.compile("|".join([RECORD_ID_RE.pattern, *words])), probes


# ------------------------------------------------------------------ code


@lru_cache(maxsize=64)
def _lexer(lang: str) -> Any:
    try:
        return get_lexer_by_name(lang, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


_FORMATTER = HtmlFormatter(nowrap=True)


def _highlight(code: str, lang: str, _attrs: str) -> str:
    """Pygments' spans for a known language; "" lets markdown-it escape the code as is."""
    lexer = _lexer(lang.lower()) if lang else None
    if lexer is None:
        return ""
    body: str = pygments_highlight(code, lexer, _FORMATTER)
    return f'<pre class="{HIGHLIGHT_CLASS}"><code class="language-{escape(lang)}">{body}</code></pre>\n'


def highlight_css() -> str:
    """The token colours for light and dark pages (an asset of the site, built from Pygments)."""
    light: str = HtmlFormatter(style=LIGHT_STYLE).get_style_defs(f".{HIGHLIGHT_CLASS}")  # type: ignore[no-untyped-call]
    dark: str = HtmlFormatter(style=DARK_STYLE).get_style_defs(f".{HIGHLIGHT_CLASS}")  # type: ignore[no-untyped-call]
    # Only token rules: the site's own stylesheet sets the block's background and frame.
    light = "\n".join(line for line in light.splitlines() if line.startswith(f".{HIGHLIGHT_CLASS} ."))
    dark = "\n".join(line for line in dark.splitlines() if line.startswith(f".{HIGHLIGHT_CLASS} ."))
    return (
        f"/* Pygments {LIGHT_STYLE} (light) and {DARK_STYLE} (dark), generated at build time */\n"
        f"@media (prefers-color-scheme: light) {{\n{_drop_backgrounds(light)}\n}}\n"
        f"@media (prefers-color-scheme: dark) {{\n{_drop_backgrounds(dark)}\n}}\n"
    )


def _drop_backgrounds(css: str) -> str:
    return re.sub(r"background-color: #[0-9a-fA-F]+;? ?", "", css)


# ------------------------------------------------------------------ ids and tickets


def _link_mentions(state: StateCore) -> None:
    """Core rule: ids and tickets in text become links; ``[x](note_...)`` resolves."""
    mentions: Mapping[str, str] = state.env.get("mentions") or {}
    if not mentions:
        return
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        out: list[Token] = []
        depth = 0
        for tok in block.children:
            if tok.type == "link_open":
                href = str(tok.attrs.get("href", ""))
                if href in mentions:
                    tok.attrs["href"] = mentions[href]
                depth += 1
            elif tok.type == "link_close":
                depth -= 1
            if depth == 0 and tok.type == "text":
                out.extend(_split(tok, mentions))
            elif depth == 0 and tok.type == "code_inline" and tok.content in mentions:
                out.extend(_wrapped(tok, mentions[tok.content]))
            else:
                out.append(tok)
        block.children = out


def _wrapped(inner: Token, href: str) -> list[Token]:
    opening = Token("link_open", "a", 1)
    opening.attrs = {"href": href, "class": "ref"}
    return [opening, inner, Token("link_close", "a", -1)]


def _split(tok: Token, mentions: Mapping[str, str]) -> list[Token]:
    text = tok.content
    spans = [
        (m.start(), m.end())
        for pattern in (RECORD_ID_RE, TOKEN_RE)
        for m in pattern.finditer(text)
        if m.group(0) in mentions
    ]
    if not spans:
        return [tok]
    out: list[Token] = []
    pos = 0
    for start, end in sorted(set(spans)):
        if start < pos:
            continue
        if start > pos:
            out.append(_text(text[pos:start]))
        out.extend(_wrapped(_text(text[start:end]), mentions[text[start:end]]))
        pos = end
    if pos < len(text):
        out.append(_text(text[pos:]))
    return out


def _text(content: str) -> Token:
    tok = Token("text", "", 0)
    tok.content = content
    return tok


def link_mentions(text: str, mentions: Mapping[str, str]) -> Markup:
    """Plain text (an item's description, a handoff step) escaped, with its ids and tickets linked."""
    tok = _text(text)
    parts: Sequence[Token] = _split(tok, mentions) if mentions else [tok]
    html: list[str] = []
    for part in parts:
        if part.type == "link_open":
            html.append(f'<a href="{escape(part.attrs["href"])}" class="ref">')
        elif part.type == "link_close":
            html.append("</a>")
        else:
            html.append(str(escape(part.content)))
    return Markup("".join(html))  # noqa: S704 - every piece escaped above


# ------------------------------------------------------------------ the renderer


class _SafeMarkdownIt(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        return is_safe_url(url)


def _make() -> MarkdownIt:
    md = _SafeMarkdownIt("commonmark", {"html": False, "linkify": True, "highlight": _highlight})
    md.enable(["table", "strikethrough", "linkify"])
    md.use(tasklists_plugin, label=True)  # the label names the checkbox for screen readers
    md.use(footnote_plugin)
    # Bare URLs with a scheme are linked by the inline rule; the core rule (which also guesses
    # links without one, such as www.example.com) took half of a note's rendering time.
    md.core.ruler.disable("linkify")
    md.core.ruler.after("linkify", "codexmem_mentions", _link_mentions)
    return md


_MD = _make()


def render_markdown(text: str, mentions: Mapping[str, str] | None = None) -> str:
    """HTML for one Markdown text; safe to mark as such in a template."""
    html: str = _MD.render(text, {"mentions": mentions or {}})
    return html
