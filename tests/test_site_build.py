"""The static site: deterministic, safe, incremental, relative links only, and an Atom feed.

Every test builds a real store (``site_fixtures.make_store``) and reads the files written.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import posixpath
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import redirect_stdout
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError
from site_fixtures import (
    BUGS_SCHEMA,
    IMG,
    NOW,
    PAYLOADS,
    SCRIPT,
    SVG,
    Fixture,
    add_channel,
    copy_store,
    edit_item,
    edit_note,
    make_store,
    ts,
)

from codexmem.check import check_store
from codexmem.cli.main import main
from codexmem.cli.site_cmd import default_out, parse_now
from codexmem.errors import CodexmemError
from codexmem.models.records import Note
from codexmem.render.markdown import link_mentions, render_markdown
from codexmem.render.site import build as build_module
from codexmem.render.site import build_site
from codexmem.render.site import search as search_module
from codexmem.render.site.build import OWNED_LIST, SITE_ENTRIES, BuildReport, plural
from codexmem.render.site.data import build_day
from codexmem.render.site.serve import make_server
from codexmem.render.site.tables import PAGE_ROWS
from codexmem.resources import data_dir
from codexmem.store.layout import ITEM, NOTE
from codexmem.store.store import Store

BUILD_NOW = parse_now(NOW)
ATOM = "{http://www.w3.org/2005/Atom}"


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    return make_store(tmp_path_factory.mktemp("site") / "store")


@pytest.fixture(scope="module")
def built(fx: Fixture, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out") / "_site"
    build_site(fx.store, out, now=BUILD_NOW, full=True)
    return out


def build(store: Store, out: Path, **kwargs: object) -> BuildReport:
    return build_site(store, out, now=BUILD_NOW, search=False, **kwargs)  # type: ignore[arg-type]


def site_files(out: Path, *, pagefind: bool = False) -> dict[str, bytes]:
    """Every file of a built site by relative path; Pagefind's bundle only when asked."""
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and (pagefind or not p.relative_to(out).as_posix().startswith("pagefind/"))
    }


def html_pages(out: Path) -> Iterator[tuple[str, str]]:
    for rel, raw in site_files(out).items():
        if rel.endswith(".html"):
            yield rel, raw.decode("utf-8")


def page_of(out: Path, kind_folder: str, rid: str) -> str:
    return (out / kind_folder / rid / "index.html").read_text("utf-8")


class _Tags(HTMLParser):
    """Collects every start tag with its attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


def tags_of(html: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


# ------------------------------------------------------------------ determinism


def test_two_builds_of_the_same_store_are_byte_identical(fx: Fixture, built: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    build_site(fx.store, again, now=BUILD_NOW, full=True)
    first, second = site_files(built, pagefind=True), site_files(again, pagefind=True)

    def stable(files: dict[str, bytes]) -> dict[str, bytes]:
        # Pagefind writes its filter files (and the meta file naming them) in varying order.
        return {
            k: v
            for k, v in files.items()
            if not (k.startswith("pagefind/filter/") or k.endswith(".pf_meta") or k == "pagefind/pagefind-entry.json")
        }

    assert stable(first) == stable(second)
    assert len(first) == len(second)


def test_a_fresh_clone_without_now_builds_the_same_files(fx: Fixture, tmp_path: Path) -> None:
    """The default now is the build's UTC day (not the latest change); index-local sequences never show."""
    clone = copy_store(fx.store.root, tmp_path / "clone")
    day = build_day()
    a = build_site(fx.store, tmp_path / "a", search=False, full=True)
    b = build_site(clone, tmp_path / "b", search=False, full=True)
    if build_day() != day:
        pytest.skip("the UTC day changed during the test")
    assert a.pages == b.pages > 30
    assert site_files(tmp_path / "a") == site_files(tmp_path / "b")
    assert f"As of {day:%Y-%m-%d} (UTC)" in (tmp_path / "a" / "index.html").read_text()
    item = (tmp_path / "a" / f"channels/bugs/{fx.items['Retry storm on timeout']}/index.html").read_text()
    assert f"(formula, as of {day:%Y-%m-%d})" in item


def test_an_empty_store_says_the_build_day(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    (root / "codexmem.yaml").write_text("format: 2\n", "utf-8")
    out = tmp_path / "out"
    build(Store(root), out)
    home = (out / "index.html").read_text()
    assert "1970" not in home and f"As of {BUILD_NOW:%Y-%m-%d} (UTC)" in home
    assert "Nothing has happened yet." in home


# ------------------------------------------------------------------ safety


def test_no_payload_appears_unescaped_in_any_page(built: Path) -> None:
    pages = dict(html_pages(built))
    assert len(pages) > 30
    for rel, html in pages.items():
        for payload in PAYLOADS:
            assert payload not in html, f"{rel} contains the raw payload {payload!r}"
        for tag, attrs in tags_of(html):
            assert tag not in ("svg", "iframe", "object", "embed"), f"{rel}: injected <{tag}>"
            if tag == "img":
                assert attrs["src"].split("?")[0].endswith("assets/favicon.svg"), f"{rel}: img {attrs}"
            if tag == "script":
                assert attrs.get("src", "").split("?")[0].endswith("assets/app.js"), f"{rel}: script {attrs}"
            if tag == "input":
                assert attrs.get("type") in ("search", "checkbox"), f"{rel}: input {attrs}"
            for name, value in attrs.items():
                assert not name.startswith("on"), f"{rel}: event handler attribute {name}={value!r} on <{tag}>"
                if name in ("href", "src", "action"):
                    scheme = value.strip().lower().split(":", 1)[0] if ":" in value else ""
                    assert scheme in ("", "http", "https", "mailto"), f"{rel}: {name}={value!r}"


def test_every_field_with_a_payload_is_shown_escaped(fx: Fixture, built: Path) -> None:
    """The payloads are rendered (as text) in each kind of field, not silently dropped."""
    escaped_script = "&lt;script&gt;window.__pwned=1;alert(1)&lt;/script&gt;"
    escaped_svg = "&#34;&gt;&lt;svg onload=window.__pwned=1&gt;"
    note = page_of(built, "notes", fx.notes[f"Payload note {SVG}"])
    assert escaped_script in note  # Markdown body
    assert "&lt;img src=x onerror=&quot;window.__pwned=1&quot;&gt;" in note
    assert "[click me](javascript:window.__pwned=1)" in note  # not a link
    assert f'<h1 data-pagefind-meta="title">Payload note {escaped_svg}</h1>' in note  # title
    assert f"<code>src/{escaped_svg}.ts</code>" in note  # file path
    handoff = page_of(built, "handoffs", fx.handoffs["Finish order validation"])
    assert f"<li>Check {escaped_script} handling</li>" in handoff  # next steps
    assert "Is &lt;img src=x onerror=&#34;window.__pwned=1&#34;&gt; allowed?" in handoff  # open questions
    channel = (built / "channels/bugs/index.html").read_text()
    assert f"Odd {escaped_script}" in channel  # option label, in a chip and in the filter
    assert f"Owner {escaped_svg}" in channel  # field label
    assert f"Bug tracker {escaped_svg}" in channel  # channel description
    item = (built / f"channels/bugs/{fx.items[f'Payload item {SCRIPT}']}/index.html").read_text()
    assert f"Payload item {escaped_script}" in item  # item value
    chunk = json.loads((built / "channels/bugs/items-0000.json").read_text())
    payload_row = next(r for r in chunk["rows"] if "Payload item" in r[4])
    assert SCRIPT not in payload_row[4] and "Payload item &lt;script&gt;" in payload_row[4]  # row HTML, escaped
    assert "javascript:window.__pwned=1</dd>" in item  # a url value that is no http(s) stays text
    project = (built / "projects/proj_order_web/index.html").read_text()
    assert f"order-api {escaped_svg}" in project  # project name from the config


def test_tags_cannot_carry_a_payload() -> None:
    """Tags are ``[a-z0-9-]`` by the model, so a payload never reaches a tag page or URL."""
    note = {
        "note_id": "note_01JH0000000000000000000000",
        "version": 1,
        "session_id": "sess_01JH0000000000000000000000",
        "scope": {"system_id": "sys_a", "project_id": "proj_a", "workspace_id": "ws_a"},
        "type": "decision",
        "title": "t",
        "importance": 3,
        "created_at": ts(1),
        "updated_at": ts(1),
        "content": "c",
    }
    Note.model_validate({**note, "tags": ["fine-tag"]})
    with pytest.raises(ValidationError) as caught:
        Note.model_validate({**note, "tags": [SCRIPT]})
    assert caught.value.errors()[0]["loc"][0] == "tags"


@pytest.mark.parametrize(
    "markdown",
    [
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](java&#x09;script:alert(1))",
        "[x](vbscript:msgbox(1))",
        "[x](file:///etc/passwd)",
        "[x](data:text/html;base64,PHNjcmlwdD4=)",
        "![x](data:image/svg+xml;base64,PHN2Zz4=)",
        "<javascript:alert(1)>",
        SCRIPT,
        IMG,
    ],
)
def test_markdown_never_makes_a_dangerous_link_or_tag(markdown: str) -> None:
    html = render_markdown(markdown)
    assert "<a " not in html and "<img" not in html and "<script" not in html


def test_markdown_keeps_ordinary_links() -> None:
    html = render_markdown("[a](https://example.com/x) [b](../notes/) <mailto:a@example.com>")
    assert '<a href="https://example.com/x">a</a>' in html
    assert '<a href="../notes/">b</a>' in html
    assert '<a href="mailto:a@example.com">' in html


# ------------------------------------------------------------------ links and sub-paths


def test_every_link_is_relative_and_resolves_to_a_file(built: Path) -> None:
    """Served from /repo/ (a GitHub Pages project site) every internal link still lands."""
    assert assert_links_resolve(built, "/repo/") > 500


def assert_links_resolve(built: Path, prefix: str) -> int:
    """Every href, src and action of every page (and of every list chunk's rows) lands on a file."""
    checked = 0
    pages = list(html_pages(built))
    for rel, raw in site_files(built).items():
        if rel.endswith(".json") and "/" in rel and not rel.startswith("pagefind/"):
            folder = rel.rsplit("/", 1)[0] + "/index.html"
            pages += [(folder, row[4]) for row in json.loads(raw)["rows"]]
    for rel, html in pages:
        page_url = prefix + rel
        for _tag, attrs in tags_of(html):
            for name in ("href", "src", "action"):
                value = attrs.get(name)
                if value is None or value.startswith(("https://", "http://", "mailto:", "#")):
                    continue
                assert not value.startswith("/"), f"{rel}: absolute path {value!r}"
                target = posixpath.normpath(posixpath.join(posixpath.dirname(page_url), value.split("?")[0]))
                top = prefix.rstrip("/")
                assert target == top or target.startswith(prefix), f"{rel}: {value!r} leaves the prefix"
                path = built / target.removeprefix(top).lstrip("/")
                if value.split("?")[0].endswith("/") or path.is_dir():
                    path = path / "index.html"
                assert path.is_file(), f"{rel}: {name}={value!r} points at nothing"
                checked += 1
    return checked


def test_pages_exist_for_every_record_and_permalinks_are_stable(fx: Fixture, built: Path) -> None:
    for nid in fx.notes.values():
        assert (built / "notes" / nid / "index.html").is_file()
    for hid in fx.handoffs.values():
        assert (built / "handoffs" / hid / "index.html").is_file()
    for sid in fx.sessions:
        assert (built / "sessions" / sid / "index.html").is_file()
    for iid in fx.imports:
        assert (built / "imports" / iid / "index.html").is_file()
    for iid in fx.items.values():
        assert (built / "channels/bugs" / iid / "index.html").is_file()
    for rel in (
        "index.html",
        "projects/proj_order_web/index.html",
        "channels/bugs/index.html",
        "tags/api/index.html",
        "projects/proj_order_web/notes/index.html",
        "projects/proj_order_web/sessions/index.html",
        "projects/proj_order_web/handoffs/index.html",
        "activity/index.html",
        "activity/events-2026-03-00.json",
        "channels/bugs/items-0000.json",
        "search/index.html",
        "files/index.html",
        "feed.xml",
        "assets/favicon.svg",
        "assets/highlight.css",
        "pagefind/parts.json",
        "pagefind/notes/pagefind.js",
    ):
        assert (built / rel).is_file(), rel
    assert '<link rel="icon" type="image/svg+xml" href="assets/favicon.svg?v=' in (built / "index.html").read_text()


def test_a_files_page_is_headed_by_the_repository_path_it_is_for(built: Path) -> None:
    """Every file page's heading read "files/src-…-078c700f/index.html" (the page's own path)."""
    pages = sorted((built / "files").glob("*/index.html"))
    assert pages
    for page in pages:
        text = page.read_text()
        title = re.search(r"<title>(.*?) · ", text)
        heading = re.search(r"<h1><code>(.*?)</code></h1>", text)
        assert title is not None and heading is not None, page
        assert heading.group(1) == title.group(1) and not heading.group(1).startswith("files/"), page


def test_search_indexes_no_list_of_facts(built: Path) -> None:
    """A session's and an import's facts were inside what Pagefind indexes: excerpts read "Ended
    2026-03-04 17:35Workspace id ws_order_worker_main Id sess_…", words run together."""
    pages = [
        p
        for folder in ("sessions", "imports", "notes", "handoffs", "channels")
        for p in (built / folder).rglob("index.html")
    ]
    checked = 0
    for page in pages:
        text = page.read_text()
        start = text.find("data-pagefind-body")
        if start < 0:
            continue
        body = text[start : text.index("</article>", start)]
        facts = re.findall(r"<dl class=\"facts[^\"]*\"[^>]*>", body)
        assert all("data-pagefind-ignore" in tag for tag in facts), (page, facts)
        checked += len(facts)
    assert checked > 0


# ------------------------------------------------------------------ what pages show


def test_history_backlinks_and_chips(fx: Fixture, built: Path) -> None:
    item = (built / f"channels/bugs/{fx.items['Submit button stays disabled']}/index.html").read_text()
    assert [f'data-version="{v}"' in item for v in (1, 2, 3)] == [True, True, True]
    assert '<li><span class="field">Points</span>: <span class="old">3</span> → <span class="new">5</span></li>' in item
    assert (
        '<h1 data-pagefind-meta="title"><span class="ticket">BUG-0001</span> Submit button stays disabled</h1>' in item
    )
    assert "<title>BUG-0001 Submit button stays disabled · order-platform memory</title>" in item
    assert fx.items["Enum mismatch on payment"] in item  # the item that blocks on it links back
    old = page_of(built, "notes", fx.notes["Hard-code the payment list"])
    new_id = fx.notes["Use generated enum metadata"]
    assert f'Superseded by <a href="../../notes/{new_id}/">' in old
    assert "<strong>status changed</strong>" in old
    new = page_of(built, "notes", new_id)
    assert f'href="../../handoffs/{fx.handoffs["Finish order validation"]}/"' in new  # handoff lists it
    assert f'href="../../notes/{fx.notes["Hard-code the payment list"]}/"' in new  # it supersedes that one
    imported = page_of(built, "notes", fx.notes["Backend rejects legacy payment aliases"])
    assert f'href="../../imports/{fx.imports[0]}/"' in imported
    channel = (built / "channels/bugs/index.html").read_text()
    assert ".cc-22c55e{--chip:#22c55e;--chip-fg:#000000}" in channel  # Fixed's colour, from the schema
    assert '<span class="chip cc-22c55e">Fixed</span>' in channel
    session = page_of(built, "sessions", fx.sessions[1])
    assert f'href="../../notes/{new_id}/"' in session  # the session lists what it wrote
    assert 'data-label="Who"' not in session  # its own changes: no column repeating its name
    file_page = next(built.glob("files/src-orders-validate-ts-*/index.html")).read_text()
    assert file_page.count('<span class="kind">') == 3  # two notes and a handoff name the file


def test_formulas_are_evaluated_at_the_build_time(fx: Fixture, tmp_path: Path) -> None:
    iid = fx.items["Submit button stays disabled"]  # created 2026-03-13
    build_site(fx.store, tmp_path / "a", now=parse_now("2026-03-20T12:00:00Z"), search=False)
    build_site(fx.store, tmp_path / "b", now=parse_now("2026-04-13T12:00:00Z"), search=False)
    assert '<dd class="v-formula">7</dd>' in (tmp_path / f"a/channels/bugs/{iid}/index.html").read_text()
    assert '<dd class="v-formula">31</dd>' in (tmp_path / f"b/channels/bugs/{iid}/index.html").read_text()


# ------------------------------------------------------------------ incremental


def test_incremental_build_renders_only_the_changed_record_and_its_neighbours(tmp_path: Path) -> None:
    fx = make_store(tmp_path / "store")
    out = tmp_path / "_site"
    first = build(fx.store, out)
    assert first.written == first.pages and first.deleted == 0

    unchanged = build(fx.store, out)
    assert (unchanged.written, unchanged.rendered, unchanged.deleted) == (0, 0, 0)

    title = "Keep validation aligned with the backend enum"
    edit_note(fx, title, {"content": "A new body."}, ts(19, 13))
    after = build(fx.store, out)
    nid = fx.notes[title]
    neighbours = {
        f"notes/{nid}/index.html",
        "index.html",  # recent activity
        "activity/index.html",  # the first page of events, and the chunk that holds the month
        "activity/events-2026-03-00.json",
        "feed.xml",
        "projects/proj_order_web/index.html",  # shows the note's updated date
        "projects/proj_order_web/notes/index.html",
        "projects/proj_order_web/notes/notes-0000.json",
        "tags/api/index.html",
        "tags/api/notes-0000.json",
        "tags/validation/index.html",
        "tags/validation/notes-0000.json",
    }
    assert f"notes/{nid}/index.html" in after.written_paths
    assert set(after.written_paths) <= neighbours, sorted(set(after.written_paths) - neighbours)
    assert after.rendered == after.written <= len(neighbours)
    assert "A new body." in (out / f"notes/{nid}/index.html").read_text()

    fresh = tmp_path / "fresh"
    build(fx.store, fresh, full=True)
    assert site_files(out) == site_files(fresh)


def test_incremental_build_deletes_pages_of_deleted_records(tmp_path: Path) -> None:
    fx = make_store(tmp_path / "store")
    out = tmp_path / "_site"
    build(fx.store, out)
    target = fx.items["Submit button stays disabled"]
    with fx.store.transaction("cli:tester", at=ts(19, 14)) as txn:
        txn.delete(ITEM, target, "bugs")
    report = build(fx.store, out)
    assert report.deleted_paths == [f"channels/bugs/{target}/index.html"]
    assert not (out / "channels/bugs" / target).exists()
    assert "channels/bugs/index.html" in report.written_paths
    # The item that related to it now names a missing record instead of linking to it.
    blocker = (out / f"channels/bugs/{fx.items['Enum mismatch on payment']}/index.html").read_text()
    assert f'<span class="missing" title="not in this store">{target}</span>' in blocker
    fresh = tmp_path / "fresh"
    build(fx.store, fresh, full=True)
    assert site_files(out) == site_files(fresh)


def test_pages_of_deleted_records_go_even_when_the_cache_was_wiped(tmp_path: Path) -> None:
    fx = make_store(tmp_path / "store")
    out = tmp_path / "_site"
    build(fx.store, out)
    (out / "stray.html").write_text("not ours")
    shutil.rmtree(fx.store.root / ".cache")
    nid = fx.notes["Use generated enum metadata"]
    store = Store(fx.store.root)
    with store.transaction("cli:tester", at=ts(19, 14)) as txn:
        txn.delete(NOTE, nid)
    report = build(store, out)
    assert report.rendered == report.pages + 4  # no manifest: every page rendered (and the 4 assets)
    assert report.deleted_paths == [f"notes/{nid}/index.html"]
    assert (out / "stray.html").read_text() == "not ours"  # only files the builds wrote are deleted
    assert (out / ".nojekyll").is_file()


def test_a_folder_of_someone_elses_files_is_refused_and_kept_as_it_was(tmp_path: Path) -> None:
    fx = make_store(tmp_path / "store")
    theirs = tmp_path / "their-site"
    (theirs / "assets").mkdir(parents=True)
    (theirs / "index.html").write_text("<h1>My page</h1>\n")
    (theirs / "assets" / "style.css").write_text("body {}\n")
    before = site_files(theirs)
    with pytest.raises(CodexmemError) as caught:
        build(fx.store, theirs)
    assert caught.value.code == "ERR_INVALID_INPUT"
    assert f"{theirs} holds assets, index.html, which a build writes" in str(caught.value)
    assert site_files(theirs) == before and sorted(p.name for p in theirs.iterdir()) == ["assets", "index.html"]

    # A folder the store's manifest remembers, emptied and filled by a person since: refused too.
    ours = tmp_path / "_site"
    build(fx.store, ours)
    shutil.rmtree(ours)
    ours.mkdir()
    (ours / "index.html").write_text("<h1>Mine now</h1>\n")
    with pytest.raises(CodexmemError):
        build(fx.store, ours)
    assert (ours / "index.html").read_text() == "<h1>Mine now</h1>\n"


def test_a_checkout_folder_and_a_first_build_that_stopped_half_way_are_built_into(tmp_path: Path) -> None:
    fx = make_store(tmp_path / "store")
    checkout = tmp_path / "gh-pages"
    (checkout / ".git").mkdir(parents=True)  # a checkout of a Pages branch: its .git and CNAME
    (checkout / "CNAME").write_text("memory.example.com\n")
    build(fx.store, checkout)
    assert (checkout / "index.html").is_file() and (checkout / ".git").is_dir()
    assert (checkout / "CNAME").read_text() == "memory.example.com\n"
    # Every name a site has at its top is one the check knows (a folder holding it is refused).
    assert {p.name for p in checkout.iterdir()} - {".git", "CNAME", ".nojekyll", OWNED_LIST} <= SITE_ENTRIES
    # The list a build leaves is started before its first file: a build that stopped after
    # writing some pages leaves a folder the next build takes up (and completes).
    stopped = tmp_path / "stopped"
    build(fx.store, stopped)
    (stopped / OWNED_LIST).write_text("")
    (stopped / "index.html").unlink()
    build(fx.store, stopped)
    assert site_files(stopped) == {k: v for k, v in site_files(checkout).items() if k != "CNAME"}


def test_a_changed_template_or_a_missing_file_is_rebuilt(tmp_path: Path) -> None:
    fx = make_store(tmp_path / "store")
    out = tmp_path / "_site"
    build(fx.store, out)
    (out / "tags/api/index.html").unlink()
    report = build(fx.store, out)
    assert report.written_paths == ["tags/api/index.html"]


# ------------------------------------------------------------------ feed


def test_feed_is_atom_with_the_latest_events(fx: Fixture, built: Path) -> None:
    root = ET.fromstring((built / "feed.xml").read_bytes())
    assert root.tag == f"{ATOM}feed"
    assert root.findtext(f"{ATOM}id", "").startswith("tag:codexmem,2026-03-10:sys_order_platform/")
    entries = root.findall(f"{ATOM}entry")
    events = fx.store.fresh_index().events_after(0, limit=1000)
    assert len(entries) == len(events) <= 100
    updated = [e.findtext(f"{ATOM}updated", "") for e in entries]
    assert updated == sorted(updated, reverse=True)
    assert root.findtext(f"{ATOM}updated") == updated[0] == ts(19, 12)
    first = entries[0]
    assert first.findtext(f"{ATOM}title") == "item updated: Submit button stays disabled"
    link = first.find(f"{ATOM}link")
    assert link is not None and link.get("href") == f"channels/bugs/{fx.items['Submit button stays disabled']}/"
    assert len({e.findtext(f"{ATOM}id") for e in entries}) == len(entries)
    assert all(e.find(f"{ATOM}author/{ATOM}name") is not None for e in entries)


def test_feed_with_a_base_url_has_absolute_links_and_keeps_100_events(tmp_path: Path) -> None:
    fx = make_store(tmp_path / "store")
    for n in range(100):
        edit_item(fx, "Retry storm on timeout", {"points": n % 13}, ts(19, 15 + n // 60, n % 60))
    report = build(fx.store, tmp_path / "out", base_url="https://team.example/memory")
    assert report.warnings == []
    root = ET.fromstring((tmp_path / "out/feed.xml").read_bytes())
    entries = root.findall(f"{ATOM}entry")
    assert len(entries) == 100
    assert root.findtext(f"{ATOM}id") == "https://team.example/memory/"
    for entry in entries:
        link = entry.find(f"{ATOM}link")
        assert link is not None and link.get("href", "").startswith("https://team.example/memory/channels/bugs/")
        assert entry.findtext(f"{ATOM}id", "").startswith("https://team.example/memory/")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://team.example/", "must start with https:// or http://"),
        ("javascript:alert(1)", "must start with https:// or http://"),
        ("https://", "has no host"),
        ("https://ci:s3cret@team.example/memory/", "must not carry a user name or password"),
        ("https://team.example/memory/?v=1", "must not carry a query (?) or fragment (#)"),
        ("https://team.example/memory/#top", "must not carry a query (?) or fragment (#)"),
        ("https://team.example/our memory/", "must not hold spaces"),
        ('https://team.example/"><script>/', "must not hold spaces"),
        ("https://team.example/\nx/", "must not hold spaces"),
        ("https://team.example:99999/", "has a port outside 0..65535"),
    ],
)
def test_a_base_url_the_feed_would_publish_or_break_on_is_refused_before_any_file_and_by_check(
    tmp_path: Path, url: str, problem: str
) -> None:
    """Refused by the build, and, committed as ``site.base_url``, by ``codexmem check``: the pull
    request that sets it fails, not the job that publishes the site after it is merged."""
    fx = make_store(tmp_path / "store")
    with pytest.raises(CodexmemError) as err:
        build(fx.store, tmp_path / "out", base_url=url)
    assert err.value.code == "ERR_INVALID_INPUT"
    assert err.value.message.startswith(f"--base-url (or site.base_url) {problem}")
    assert "such as https://org.github.io/repo/" in err.value.message
    assert "s3cret" not in err.value.message
    assert not (tmp_path / "out").exists()
    config = fx.store.root / "codexmem.yaml"
    assert [f for f in check_store(fx.store.root).errors if f.path == "codexmem.yaml"] == []
    body = yaml.safe_load(config.read_text())
    body.setdefault("site", {})["base_url"] = url
    config.write_text(yaml.safe_dump(body))
    found = [f.message for f in check_store(fx.store.root).errors if f.path == "codexmem.yaml"]
    assert len(found) == 1, found
    assert found[0].startswith(f"site.base_url {problem}")
    assert "such as https://org.github.io/repo/" in found[0]
    assert "s3cret" not in found[0]


def test_feed_without_a_base_url_warns(tmp_path: Path) -> None:
    fx = make_store(tmp_path / "store")
    report = build(fx.store, tmp_path / "out")
    assert report.base_url is None and report.feed_written  # the CLI's note says so
    root = ET.fromstring((tmp_path / "out/feed.xml").read_bytes())
    assert all(e.findtext(f"{ATOM}id", "").startswith("tag:codexmem,") for e in root.findall(f"{ATOM}entry"))


# ------------------------------------------------------------------ command line, serving, resources


def test_cli_builds_beside_the_store_and_reports_what_it_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fx = make_store(tmp_path / "repo" / ".codexmem")
    assert default_out(fx.store.root) == tmp_path / "repo" / "_site"
    code = main(["site", "--store", str(fx.store.root), "--now", "2026-03-20", "--no-search"])
    assert code == 0
    captured = capsys.readouterr()
    files = len(site_files(tmp_path / "repo/_site")) - 6  # less the 4 assets, .nojekyll and the owned list
    assert captured.out.count("\n") == 1  # one summary line
    assert f"wrote {files} of {files} files" in captured.out
    assert "note: no --base-url" in captured.err and "codexmem site --serve" in captured.err
    assert (tmp_path / "repo/_site/index.html").is_file()
    main(["site", "--store", str(fx.store.root), "--now", "2026-03-20", "--no-search"])
    again = capsys.readouterr()
    assert again.out == f"wrote 0 of {files} files to {tmp_path / 'repo/_site'} in" + again.out.split(" in", 1)[1]
    assert f"({files} unchanged, 0 deleted)" in again.out
    assert again.err == ""  # nothing changed: no notes
    with pytest.raises(SystemExit):
        main(["site", "--store", str(fx.store.root), "--bogus"])
    assert main(["site", "--store", str(fx.store.root), "--now", "yesterday"]) == 2


def test_server_serves_the_folder_on_loopback(built: Path) -> None:
    server = make_server(built, port=0, prefix="/repo/", quiet=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/repo/") as resp:
            assert b"order-platform memory" in resp.read()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/repo/feed.xml") as resp:
            assert resp.headers["Content-Type"].startswith("application/xml")
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html")
    finally:
        server.shutdown()
        server.server_close()


def test_data_dir_finds_templates_and_assets() -> None:
    assert (data_dir("templates") / "site" / "base.html").is_file()
    assert (data_dir("site") / "favicon.svg").is_file()
    with pytest.raises(CodexmemError, match="missing"):
        data_dir("no-such-folder")


def test_manifest_maps_every_page_to_its_inputs(fx: Fixture, tmp_path: Path) -> None:
    report = build(fx.store, tmp_path / "out")
    manifest = json.loads((fx.store.root / ".cache/site/manifest.json").read_text())
    assert manifest["out"] == str(tmp_path / "out")
    assert len(manifest["pages"]) == report.pages + 4  # and the four assets
    assert "index.html" in manifest["pages"] and "feed.xml" in manifest["pages"]
    assert manifest["search"] == {}  # built without search
    assert all(set(entry) == {"inputs", "size"} for entry in manifest["pages"].values())


def test_progress_goes_to_a_terminal_only_on_large_builds(fx: Fixture, tmp_path: Path) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    with redirect_stdout(io.StringIO()):
        build_site(fx.store, tmp_path / "a", now=BUILD_NOW, search=False, progress_stream=stream)
    assert stream.getvalue() == ""  # about 60 pages: too small for a bar
    from codexmem.progress import Progress

    bar = Progress(400, stream)
    for _ in range(400):
        bar.step()
    bar.done()
    assert stream.getvalue().endswith("400/400 pages\n")
    assert "\r" in stream.getvalue()


def test_note_model_in_store_is_what_the_site_reads(fx: Fixture) -> None:
    """Guard for the fixture itself: the payload note really is in the store."""
    note = fx.store.fresh_index().get(NOTE, fx.notes[f"Payload note {SVG}"])
    assert note is not None and SCRIPT in note["content"]


# ------------------------------------------------------------------ Markdown that links memory together


def test_markdown_renders_task_lists_footnotes_autolinks_and_highlighted_code() -> None:
    html = render_markdown(
        "- [x] done\n- [ ] open\n\nSee https://example.com/a and www.example.org.[^n]\n\n"
        '```python\nx = "<b>"  # note\n```\n\n```\nplain <i>\n```\n\n[^n]: The footnote.\n'
    )
    assert '<input class="task-list-item-checkbox" checked="checked" disabled="disabled" type="checkbox">' in html
    assert '<a href="https://example.com/a">https://example.com/a</a>' in html
    assert "and www.example.org." in html and "http://www.example.org" not in html  # no scheme: not guessed
    assert '<li id="fn1" class="footnote-item"><p>The footnote.' in html
    assert '<pre class="hl"><code class="language-python"><span class="n">x</span>' in html
    assert '<span class="s2">"&lt;b&gt;"</span>' in html  # Pygments escapes what it colours
    assert "<pre><code>plain &lt;i&gt;\n</code></pre>" in html  # no language: escaped, not guessed


@pytest.mark.parametrize(
    "markdown",
    [
        "[^1]\n\n[^1]: [x](javascript:alert(1))",
        "- [ ] [x](javascript:alert(1))",
        "javascript:alert(1) and www.javascript:alert(1)",
        "```<script>\nx\n```",
        "```python\n</code></pre><script>alert(1)</script>\n```",
    ],
)
def test_markdown_plugins_stay_safe(markdown: str) -> None:
    html = render_markdown(markdown)
    assert "<script" not in html and 'href="javascript' not in html.lower()


def test_ids_and_tickets_are_linked_only_when_the_store_holds_them() -> None:
    nid = "note_01KK1MW500ANH4WC561Y5ZWW41"
    mentions = {nid: "../../notes/x/", "BUG-0012": "../../channels/bugs/y/"}
    html = render_markdown(
        f"See {nid}, [the rule]({nid}), `BUG-0012`, BUG-0012 and BUG-0013, note_01KK1MW500ANH4WC561Y5ZWW42.", mentions
    )
    assert '<a href="../../notes/x/" class="ref">note_01KK1MW500ANH4WC561Y5ZWW41</a>' in html
    assert '<a href="../../notes/x/">the rule</a>' in html
    assert '<a href="../../channels/bugs/y/" class="ref"><code>BUG-0012</code></a>' in html
    assert '<a href="../../channels/bugs/y/" class="ref">BUG-0012</a> and BUG-0013' in html
    assert "note_01KK1MW500ANH4WC561Y5ZWW42." in html  # not in the store: plain text
    plain = link_mentions("<b>BUG-0012</b> xBUG-0012", mentions)
    assert str(plain) == '&lt;b&gt;<a href="../../channels/bugs/y/" class="ref">BUG-0012</a>&lt;/b&gt; xBUG-0012'


def test_pages_link_the_ids_and_tickets_they_name(fx: Fixture, built: Path) -> None:
    note = page_of(built, "notes", fx.notes["Links to other records"])
    new, old = fx.notes["Use generated enum metadata"], fx.notes["Hard-code the payment list"]
    assert f'<a href="../../notes/{new}/" class="ref">{new}</a>' in note
    assert f'<a href="../../notes/{old}/">the old rule</a>' in note  # [x](note_ID) resolves
    bug2 = fx.items["Enum mismatch on payment"]
    assert f'<a href="../../channels/bugs/{bug2}/" class="ref">BUG-0002</a>' in note
    assert 'class="task-list-item"' in note and 'class="footnote-item"' in note and '<pre class="hl">' in note
    item = (built / f"channels/bugs/{bug2}/index.html").read_text()
    bug1 = fx.items["Submit button stays disabled"]
    assert f'Same cause as <a href="../../../channels/bugs/{bug1}/" class="ref">BUG-0001</a>' in item
    assert f'see <a href="../../../notes/{new}/" class="ref">{new}</a>.' in item


def test_a_page_naming_a_deleted_record_is_rendered_again(tmp_path: Path) -> None:
    fx = make_store(tmp_path / "store")
    out = tmp_path / "_site"
    build(fx.store, out)
    target = fx.notes["Use generated enum metadata"]
    with fx.store.transaction("cli:tester", at=ts(19, 14)) as txn:
        txn.delete(NOTE, target)
    report = build(fx.store, out)
    linking = f"notes/{fx.notes['Links to other records']}/index.html"
    assert linking in report.written_paths
    assert f'href="../../notes/{target}/"' not in (out / linking).read_text()


# ------------------------------------------------------------------ lists, chunks and page size


def test_a_long_channel_shows_one_page_and_writes_every_row_to_chunks(tmp_path: Path) -> None:
    fx = make_store(tmp_path / "store")
    ids = add_channel(fx, "big", 250)
    out = tmp_path / "_site"
    build(fx.store, out)
    page = (out / "channels/big/index.html").read_text()
    assert page.count("<tr><td") == PAGE_ROWS
    assert f"Showing 1–{PAGE_ROWS} of 250 items." in page
    rows = json.loads((out / "channels/big/items-0000.json").read_text())["rows"]
    assert len(rows) == 250
    assert {r[4].split('href="../../channels/big/')[1].split("/")[0] for r in rows} == set(ids)
    first = min(rows, key=lambda r: r[0])  # the default order: newest first
    assert ids[-1] in first[4] and ids[-1] in page.split("<tbody>")[1].split("</tr>")[0]
    keys = {tuple(r[2]["status"]) for r in rows}
    assert keys == {("new",), ("in_progress",), ("fixed",)}
    assert all(r[3] == r[3].lower() and "big item number" in r[3] for r in rows)


def test_chunks_are_cut_in_creation_order_so_an_edit_rewrites_one(tmp_path: Path) -> None:
    fx = make_store(tmp_path / "store")
    ids = add_channel(fx, "big", 1200)
    out = tmp_path / "_site"
    build(fx.store, out)
    assert sorted(p.name for p in (out / "channels/big").glob("*.json")) == ["items-0000.json", "items-0001.json"]
    with fx.store.transaction("cli:tester", at=ts(21)) as txn:
        cur = txn.get(ITEM, ids[1100], "big")  # the 1,101st item: in the second chunk
        assert cur is not None
        changed = {**cur, "version": 2, "updated_at": ts(21), "values": {**cur["values"], "points": 13}}
        txn.put(ITEM, changed, event_type="updated", changed=["values.points"])
    report = build(fx.store, out)
    assert "channels/big/items-0001.json" in report.written_paths
    assert "channels/big/items-0000.json" not in report.written_paths


# ------------------------------------------------------------------ search parts


def test_one_change_indexes_only_the_search_part_that_holds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_module, "PART_PAGES", 2)  # a handful of parts from the small store
    fx = make_store(tmp_path / "store")
    out = tmp_path / "_site"
    first = build_site(fx.store, out, now=BUILD_NOW)
    assert first.search is not None and first.search.indexed == first.search.parts > 4
    parts = json.loads((out / "pagefind/parts.json").read_text())["parts"]
    assert {p.split("-")[0] for p in parts} >= {"notes", "handoffs", "sessions", "imports", "items"}
    entries = {p: (out / "pagefind" / p / "pagefind-entry.json").stat().st_ino for p in parts}
    title = "Keep validation aligned with the backend enum"
    edit_note(fx, title, {"content": "Changed body."}, ts(19, 13))
    second = build_site(fx.store, out, now=BUILD_NOW)
    assert second.search is not None and second.search.indexed == 1
    changed = [p for p in parts if (out / "pagefind" / p / "pagefind-entry.json").stat().st_ino != entries[p]]
    assert len(changed) == 1 and changed[0].startswith("notes-")
    third = build_site(fx.store, out, now=BUILD_NOW)
    assert third.search is not None and third.search.indexed == 0
    # Pagefind read the site folder itself: no copy or link of a page was left anywhere in it.
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [".codexmem-site-files", ".nojekyll"]
    assert sorted(p.name for p in (out / "pagefind").iterdir()) == sorted([*parts, "parts.json"])
    owned = {line for line in (out / ".codexmem-site-files").read_text().splitlines() if line.endswith(".html")}
    assert {
        p.relative_to(out).as_posix() for p in out.rglob("*.html") if p.parts[len(out.parts)] != "pagefind"
    } == owned


def test_channels_share_their_search_parts(tmp_path: Path) -> None:
    """More channels add pages to the items' parts, not parts: a part per channel made 200 channels
    205 Pagefind runs and a first search that loaded 205 bundles."""
    import gzip

    fx = make_store(tmp_path / "store")
    extra = {channel: add_channel(fx, channel, 3) for channel in ("ops", "ideas", "support")}
    out = tmp_path / "_site"
    report = build_site(fx.store, out, now=BUILD_NOW)
    listing = json.loads((out / "pagefind/parts.json").read_text())
    assert [p for p in listing["parts"] if p.startswith("items")] == ["items"]
    assert listing["folders"]["items"] == "channels/"
    assert report.search is not None and report.search.parts == len(listing["parts"]) == 5
    # Every item of every channel is in the one part, its URL relative to channels/.
    urls = set()
    for fragment in (out / "pagefind/items/fragment").iterdir():
        raw = gzip.decompress(fragment.read_bytes())
        urls.add(json.loads(raw.removeprefix(b"pagefind_dcd"))["url"])
    expected = {f"/bugs/{iid}/" for iid in fx.items.values()}
    expected |= {f"/{channel}/{iid}/" for channel, ids in extra.items() for iid in ids}
    assert urls == expected
    # A channel more changes the part's pages, so it is indexed again; the parts stay five.
    add_channel(fx, "later", 2)
    again = build_site(fx.store, out, now=BUILD_NOW)
    assert again.search is not None and again.search.indexed == 1 and again.search.parts == 5


def test_chip_rules_grow_with_colours_not_options(tmp_path: Path) -> None:
    """A field of 300 options in the palette's 8 colours: each page of the channel carries 8 chip
    rules, not one per option (a rule per option added 28 KB to every item page at 700)."""
    from codexmem.models.channel import PALETTE

    fx = make_store(tmp_path / "store")
    ids = add_channel(fx, "parts", 12, options=300)
    out = tmp_path / "out"
    build(fx.store, out)
    item = (out / "channels/parts" / ids[11] / "index.html").read_text()
    rules = re.findall(r"\.(cc-[0-9a-f]{6})\{--chip:(#[0-9a-f]{6});", item)
    # The other fields' own colours (status, severity...), and the palette's eight.
    own = {o["color"].lower() for f in BUGS_SCHEMA["fields"] for o in f.get("config", {}).get("options", [])}
    colours = own | set(PALETTE)
    assert sorted(rules) == sorted((f"cc-{c.removeprefix('#')}", c) for c in colours)
    assert len(rules) < 30
    # Item 11 has option c11, the palette's colour 11 % 8: its chip wears that colour's class.
    assert f'<span class="chip cc-{PALETTE[11 % 8].removeprefix("#")}">Component 11</span>' in item
    channel = (out / "channels/parts/index.html").read_text()
    assert len(re.findall(r"\.cc-[0-9a-f]{6}\{", channel)) == len(colours)


def test_an_item_page_carries_only_the_options_it_shows(tmp_path: Path) -> None:
    """A page's context is hashed every build: a field's 300 options in every item page's facts and
    history made a no-change build grow with them (twice as long at 700 options, 2,000 items)."""
    from codexmem.render.site.channel_pages import item_page
    from codexmem.render.site.data import load

    fx = make_store(tmp_path / "store")
    ids = add_channel(fx, "parts", 3, options=300)
    with fx.store.transaction("cli:tester", at=ts(21)) as txn:
        cur = txn.get(ITEM, ids[2], "parts")
        assert cur is not None
        changed = {**cur, "version": 2, "updated_at": ts(21), "values": {**cur["values"], "component": "c7"}}
        txn.put(ITEM, changed, event_type="updated", changed=["values.component"])
    data = load(fx.store, fx.store.fresh_index(full=True), now=None, cached=False)
    context = item_page(data, "parts", data.items["parts"][ids[2]])
    fact = next(f for f in context["facts"] if f["key"] == "component")
    assert fact["value"] == "c7" and list(fact["options"]) == ["c7"] and "option_list" not in fact
    change = next(c for r in context["history"]["rows"] for c in r["changes"] if c["key"] == "component")
    assert (change["old"], change["new"]) == ("c2", "c7") and sorted(change["f"]["options"]) == ["c2", "c7"]
    assert fact["options"]["c7"]["label"] == "Component 7"  # the chip still has its label and class


def test_no_search_leaves_no_broken_link_and_says_so(fx: Fixture, tmp_path: Path) -> None:
    out = tmp_path / "out"
    build_site(fx.store, out, now=BUILD_NOW)  # with search, then without: the old index goes
    build(fx.store, out)
    assert not (out / "pagefind").exists()
    search_page = (out / "search/index.html").read_text()
    assert "built without its search index" in search_page and "pagefind" not in search_page
    assert "data-search=" not in (out / "index.html").read_text()
    assert_links_resolve(out, "/repo/")


def test_serve_on_a_busy_port_says_so_in_one_line(tmp_path: Path) -> None:
    """Run as a person runs it: the installed command, a port another process holds."""
    import socket
    import subprocess
    import sys

    fx = make_store(tmp_path / "store")
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        codexmem = Path(sys.executable).parent / "codexmem"
        args = [str(codexmem), "site", "--store", str(fx.store.root), "--no-search", "--serve", "--port", str(port)]
        done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    finally:
        holder.close()
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"codexmem: error: port {port} is in use: pass another with --port N, or --port 0 for a free one"
    ]
    assert not (tmp_path / "_site").exists()  # refused before building anything
    assert main(["site", "--store", str(fx.store.root), "--serve", "--port", "70000"]) == 2


def test_serve_stopped_by_ctrl_c_ends_as_the_readme_says(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import urllib.request

    fx = make_store(tmp_path / "store")
    codexmem = Path(sys.executable).parent / "codexmem"
    args = [str(codexmem), "site", "--store", str(fx.store.root), "--no-search", "--serve", "--port", "0"]
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        serving = next((line for line in proc.stdout if line.startswith("serving ")), "")  # built, then serving
        assert serving, proc.stderr.read() if proc.stderr else ""
        url = serving.split(" at ")[1].split()[0]
        with urllib.request.urlopen(url, timeout=30) as answer:  # answering: inside its serving loop
            assert answer.status == 200
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == "stopped" and "Traceback" not in err


def test_the_summary_counts_grammatically() -> None:
    report = BuildReport(out=Path("/x"), pages=1, written=1)
    assert report.summary().startswith("wrote 1 of 1 file to /x in 0.00 s (0 unchanged, 0 deleted)")
    report.search, report.search_seconds = search_module.SearchReport(parts=1, indexed=1, pages_indexed=1), 0.5
    assert report.summary().endswith("; search: indexed 1 of 1 part (1 page), done 0.50 s after the pages")
    assert plural(1_204, "page") == "1,204 pages"


def test_a_new_event_rewrites_only_its_month_of_the_activity_chunks(tmp_path: Path) -> None:
    fx = make_store(tmp_path / "store")
    out = tmp_path / "_site"
    edit_item(fx, "Retry storm on timeout", {"points": 3}, "2026-04-02T09:00:00.000Z")
    build(fx.store, out)
    assert (out / "activity/events-2026-03-00.json").is_file() and (out / "activity/events-2026-04-00.json").is_file()
    edit_item(fx, "Retry storm on timeout", {"points": 8}, "2026-04-03T09:00:00.000Z")
    report = build(fx.store, out)
    assert "activity/events-2026-04-00.json" in report.written_paths
    assert "activity/events-2026-03-00.json" not in report.written_paths


def test_rendering_in_worker_processes_makes_the_same_site(fx: Fixture, tmp_path: Path) -> None:
    """Large builds render in forked workers: the same bytes, counts and search parts as in process."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork here: builds render in process")
    serial = build_site(fx.store, tmp_path / "serial", now=BUILD_NOW, full=True, parallel=0)
    forked = build_site(fx.store, tmp_path / "forked", now=BUILD_NOW, full=True, parallel=2)
    assert forked.workers == 2 and serial.workers == 0
    assert site_files(tmp_path / "forked", pagefind=True) == site_files(tmp_path / "serial", pagefind=True)
    counts = ("pages", "rendered", "written", "markdown", "written_paths")
    assert [getattr(forked, name) for name in counts] == [getattr(serial, name) for name in counts]
    assert forked.search is not None and serial.search is not None
    assert (forked.search.parts, forked.search.indexed) == (serial.search.parts, serial.search.indexed)
    again = build_site(fx.store, tmp_path / "forked", now=BUILD_NOW, parallel=2)
    assert (again.rendered, again.written, again.search.indexed if again.search else None) == (0, 0, 0)


_INTERRUPTED_BUILD = """
import os, signal, sys
from pathlib import Path
from codexmem.render.site import build_site
from codexmem.store.store import Store

class Terminal:
    # stderr as a terminal's (the bar is drawn); once the bar moves, workers are rendering, and
    # the build is stopped: Ctrl-C, which a terminal sends to every process of its group, or SIGTERM.
    def __init__(self):
        self.pressed = False
    def isatty(self):
        return True
    def write(self, text):
        sys.stderr.write(text)
        if text.startswith("\\rrendering [") and not self.pressed:
            self.pressed = True
            if sys.argv[3] == "ctrl-c":
                os.killpg(0, signal.SIGINT)
            else:  # as `timeout` or a cancelled job does: SIGTERM to the build process alone
                os.kill(os.getpid(), signal.SIGTERM)
    def flush(self):
        sys.stderr.flush()

try:
    build_site(Store(Path(sys.argv[1])), Path(sys.argv[2]), parallel=2, progress_stream=Terminal())
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.parametrize(("stop", "code"), [("ctrl-c", 130), ("sigterm", 143)])
def test_a_build_stopped_midway_ends_its_workers_quietly_and_the_next_build_finishes(
    tmp_path: Path, stop: str, code: int
) -> None:
    """Ctrl-C (to every process of the group) or SIGTERM (to the build process) in the middle of a
    build with workers: no process prints a traceback, none is left running, and the next build
    completes the site."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork here: builds render in process")
    fx = make_store(tmp_path / "store")
    add_channel(fx, "big", 400)  # pages enough for the bar, and spans left when Ctrl-C comes
    out = tmp_path / "_site"
    child = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTED_BUILD, str(fx.store.root), str(out), stop],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group: the signal reaches the build's processes only
        # Ctrl-C as a terminal's shell leaves it, even when this runs where it is ignored (CI's `&`).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    _, err = child.communicate(timeout=120)
    assert child.returncode == code, err
    assert "rendering [" in err  # the bar moved, so the workers were rendering when it stopped
    assert "Traceback" not in err and "ForkPoolWorker" not in err and "Error" not in err
    assert not _session_processes(child.pid)
    assert main(["--store", str(fx.store.root), "site", "--out", str(out), "--now", NOW]) == 0
    fresh = tmp_path / "fresh"
    assert main(["--store", str(fx.store.root), "site", "--out", str(fresh), "--now", NOW]) == 0
    assert site_files(out) == site_files(fresh)


def _session_processes(session: int) -> list[int]:
    """Processes still running in the session ``session`` started (Linux's /proc: the 6th field)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[3]) == session:
            found.append(int(stat.parent.name))
    return found


def test_builds_into_one_folder_take_turns(fx: Fixture, tmp_path: Path) -> None:
    """A build into a folder another build is writing to says so and waits, then finishes; two
    started at once both finish with the site a lone build makes. (Run together, they deleted
    each other's fresh search bundles, and Pagefind then waited forever.)"""
    fcntl = pytest.importorskip("fcntl")
    out = tmp_path / "_site"
    command = [sys.executable, "-m", "codexmem", "--store", str(fx.store.root), "site", "--out", str(out), "--now", NOW]
    out.mkdir()
    held = os.open(out, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)  # as a build writing there holds it
    try:
        waiting = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert waiting.stderr is not None
        line = waiting.stderr.readline()
        assert line == f"codexmem site: another build is writing to {out}; waiting for it to end\n"
        assert not (out / OWNED_LIST).exists() and waiting.poll() is None  # nothing written while it waits
    finally:
        os.close(held)
    assert waiting.wait(timeout=120) == 0
    both = [subprocess.Popen([*command, "--full"], stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    for child in both:
        child.communicate(timeout=240)
    assert [child.returncode for child in both] == [0, 0]
    alone = tmp_path / "alone"
    assert main(["--store", str(fx.store.root), "site", "--out", str(alone), "--now", NOW]) == 0
    assert site_files(out, pagefind=True) == site_files(alone, pagefind=True)


def test_workers_render_only_builds_that_render_most_pages(
    fx: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first build (or one after a code change) forks workers; a rebuild of a few pages does not."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork here: builds render in process")
    monkeypatch.setattr(build_module, "_workers", lambda jobs: 2)
    out = tmp_path / "out"
    assert build(fx.store, out).workers == 2  # no manifest: every page is rendered
    assert build(fx.store, out).workers == 0  # the same generator: only changed pages render
    monkeypatch.setattr(build_module, "_code_hash", lambda: "other code")
    again = build(fx.store, out)
    assert again.workers == 2 and again.rendered == again.pages  # every page (the assets are unchanged)


def test_event_details_are_cached_per_shard_and_a_changed_shard_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The values events set come from ``.cache/site/event-details`` for shards whose stat is
    unchanged; a shard a change appended to is read again, a damaged cache file is ignored, and
    the incremental site equals a cold build of the same store."""
    from codexmem.render.site import history as history_module

    fx = make_store(tmp_path / "store")
    out = tmp_path / "_site"
    build(fx.store, out)
    cache = fx.store.layout.cache / "site" / history_module.DETAILS_CACHE
    cached = sorted(cache.rglob("*.marshal"))
    assert cached, "every shard's details are cached"

    read: list[Path] = []
    original = history_module._read_shard

    def counting(path: Path, old: Any = None) -> Any:
        read.append(path)
        return original(path, old)

    monkeypatch.setattr(history_module, "_read_shard", counting)
    build(fx.store, out)
    assert read == [], "no shard changed: none is read"

    title = "Keep validation aligned with the backend enum"
    edit_note(fx, title, {"content": "A body the cache has not seen."}, ts(19, 14))
    cached[0].write_bytes(b"\x00not marshal")  # damaged: read again, never trusted
    build(fx.store, out)
    assert 1 <= len(read) <= 2, read
    # A shard that grew is read from where the cache stopped only if it still starts with the
    # bytes read then: one rewritten in place (same size or longer) is read whole.
    shard = next(p for p in sorted(fx.store.layout.events.rglob("*.jsonl")))
    details = history_module.read_details(fx.store.layout, cache)
    raw = shard.read_bytes()
    first = json.loads(raw.splitlines()[0])
    eid = first["event_id"]
    other = eid[:-1] + ("Z" if eid[-1] != "Z" else "Y")  # another id, whatever its last character
    swapped = raw.replace(eid.encode(), other.encode(), 1)
    shard.write_bytes(swapped + b"\n")
    again = history_module.read_details(fx.store.layout, cache)
    uncached = history_module.read_details(fx.store.layout)
    assert (again.values, again.parents, again.author) == (uncached.values, uncached.parents, uncached.author)
    assert details.values.keys() != again.values.keys() or details.author.keys() != again.author.keys()
    shard.write_bytes(raw)

    nid = fx.notes[title]
    assert "A body the cache has not seen" in (out / f"notes/{nid}/index.html").read_text()
    fresh = tmp_path / "fresh"
    build(fx.store, fresh, full=True)
    assert site_files(out) == site_files(fresh)


def test_a_build_leaves_the_garbage_collector_as_it_found_it(
    fx: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build pauses the collector while it loads and sets the store's data aside (gc.freeze)
    while it renders; a process that builds (a server, tests) gets its collector back."""
    import gc

    frozen, threshold = gc.get_freeze_count(), gc.get_threshold()
    build(fx.store, tmp_path / "a")
    assert gc.isenabled() and gc.get_freeze_count() == frozen and gc.get_threshold() == threshold

    def failing(*_args: Any) -> Any:
        raise RuntimeError("a page failed")

    monkeypatch.setattr(build_module, "plan", failing)
    with pytest.raises(RuntimeError):
        build(fx.store, tmp_path / "b")
    assert gc.isenabled() and gc.get_freeze_count() == frozen and gc.get_threshold() == threshold


def test_templates_read_dict_keys_as_jinja_does(tmp_path: Path) -> None:
    """Keys are read as items first (for speed), but a dict's own methods are never shadowed by a key."""
    from codexmem.render.site.templating import MarkdownCache, make_env

    (tmp_path / "t.html").write_text(
        "{{ d.title }}|{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}"
        "|{{ d.get('get') }}|{{ d.missing is defined }}",
        encoding="utf-8",
    )
    env = make_env(tmp_path, MarkdownCache())
    out = env.get_template("t.html").render(d={"title": "<T>", "items": "shadow?", "get": 7})
    assert out == "&lt;T&gt;|title=&lt;T&gt;;items=shadow?;get=7;|7|False"


def test_an_index_rebuilt_by_the_build_is_rebuilt_with_the_collector_on(
    fx: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build pauses the cyclic collector while it loads the store; a rebuild of the index (a new
    schema, a deleted cache) must not run inside that pause, or its garbage piles up (1 GB at 5,000 notes)."""
    import gc

    from codexmem.store.index.ingest import Ingestion

    store = copy_store(fx.store.layout.root, tmp_path / "store")  # no index: the build rebuilds it
    seen: list[bool] = []
    upsert = Ingestion._upsert

    def recording(self: Ingestion, *args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return upsert(self, *args, **kwargs)

    monkeypatch.setattr(Ingestion, "_upsert", recording)
    build(store, tmp_path / "out", parallel=0)
    assert seen and all(seen), f"{seen.count(False)} of {len(seen)} records indexed with the collector paused"
