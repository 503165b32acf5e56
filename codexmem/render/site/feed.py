"""The Atom feed of the activity log (``feed.xml``): the latest events, newest first.

Built with ElementTree so every title and actor is escaped by construction. Atom wants
permanent ids: with a base URL they are the entries' absolute URLs, without one ``tag:`` URIs
(RFC 4151), and links stay relative to the feed (valid, but readers may resolve them poorly,
hence the build's warning).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from codexmem.render.site.data import Rec, SiteData, iso

ATOM_NS = "http://www.w3.org/2005/Atom"
FEED_EVENTS = 100
FEED_PATH = "feed.xml"


def feed_context(data: SiteData, base_url: str | None) -> dict[str, Any]:
    """What the feed shows, as plain data (hashed by the builder like a page context)."""
    first_day = data.events[-1]["at"][:10] if data.events else iso(data.now)[:10]
    site_key = data.systems[0]["id"] if data.systems else "store"
    entries = []
    for event in data.events[:FEED_EVENTS]:
        ref = data.ref(event["id"])
        what = ref["title"] if not ref.get("missing") else event["id"]
        changed = f"; changed {', '.join(event['changed'])}" if event["changed"] else ""
        entries.append(
            {
                "event_id": event["event_id"],
                "at": event["at"],
                "actor": event["actor"],
                "kind": event["kind"],
                "title": f"{event['kind']} {event['type'].replace('_', ' ')}: {what}",
                "summary": f"{what} (version {event['version']}) {event['type'].replace('_', ' ')}"
                f" by {event['actor']}{changed}",
                "url": ref["url"],
            }
        )
    return {
        "title": data.title,
        "base_url": base_url,
        "tag": f"tag:codexmem,{first_day}:{site_key}/",
        "updated": data.events[0]["at"] if data.events else iso(data.now),
        "entries": entries,
    }


def render_feed(ctx: dict[str, Any]) -> bytes:
    """The feed document for :func:`feed_context`'s data."""
    ET.register_namespace("", ATOM_NS)
    base: str | None = ctx["base_url"]
    feed = ET.Element(f"{{{ATOM_NS}}}feed")
    _text(feed, "id", base or ctx["tag"] + "feed")
    _text(feed, "title", ctx["title"])
    _text(feed, "subtitle", "Activity in the codexmem store")
    _text(feed, "updated", ctx["updated"])
    if base:
        _link(feed, base + FEED_PATH, "self")
    _link(feed, (base or "") + "activity/", "alternate")
    author = ET.SubElement(feed, f"{{{ATOM_NS}}}author")
    _text(author, "name", "codexmem")
    _text(feed, "generator", "codexmem")
    for entry_data in ctx["entries"]:
        _entry(feed, entry_data, base, ctx["tag"])
    ET.indent(feed)
    document: bytes = ET.tostring(feed, encoding="utf-8", xml_declaration=True)
    return document + b"\n"


def _entry(feed: ET.Element, e: Rec, base: str | None, tag: str) -> None:
    entry = ET.SubElement(feed, f"{{{ATOM_NS}}}entry")
    url = e["url"]
    if base:
        _text(entry, "id", f"{base}{url or 'activity/'}#{e['event_id']}")
    else:
        _text(entry, "id", f"{tag}{e['event_id']}")
    _text(entry, "title", e["title"])
    _text(entry, "updated", e["at"])
    author = ET.SubElement(entry, f"{{{ATOM_NS}}}author")
    _text(author, "name", e["actor"])
    if url:
        _link(entry, (base or "") + url, "alternate")
    ET.SubElement(entry, f"{{{ATOM_NS}}}category", {"term": e["kind"]})
    summary = _text(entry, "summary", e["summary"])
    summary.set("type", "text")


def _text(parent: ET.Element, name: str, value: str) -> ET.Element:
    element = ET.SubElement(parent, f"{{{ATOM_NS}}}{name}")
    element.text = value
    return element


def _link(parent: ET.Element, href: str, rel: str) -> None:
    attrs = {"rel": rel, "href": href}
    if rel == "alternate":
        attrs["type"] = "text/html"
    ET.SubElement(parent, f"{{{ATOM_NS}}}link", attrs)
