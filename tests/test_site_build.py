"""The static site: deterministic, safe, incremental, relative links only, and an Atom feed.

Every test builds a real store (``site_fixtures.make_store``) and reads the files written.
"""

from __future__ import annotations

import io
import json
import posixpath
import shutil
import threading
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import redirect_stdout
from html.parser import HTMLParser
from pathlib import Path

import pytest
from pydantic import ValidationError
from site_fixtures import (
    IMG,
    NOW,
    PAYLOADS,
    SCRIPT,
    SVG,
    Fixture,
    copy_store,
    edit_item,
    edit_note,
    make_store,
    ts,
)

from codexmem.cli.main import main
from codexmem.cli.site_cmd import default_out, parse_now
from codexmem.errors import CodexmemError
from codexmem.models.records import Note
from codexmem.render.markdown import render_markdown
from codexmem.render.site import build_site
from codexmem.render.site.build import BuildReport
from codexmem.render.site.serve import make_server
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
    """No wall clock: the default now is the latest change, and index-local sequences never show."""
    clone = copy_store(fx.store.root, tmp_path / "clone")
    a = build_site(fx.store, tmp_path / "a", search=False, full=True)
    b = build_site(clone, tmp_path / "b", search=False, full=True)
    assert a.pages == b.pages > 30
    assert site_files(tmp_path / "a") == site_files(tmp_path / "b")
    assert "As of 2026-03-19 12:00 UTC" in (tmp_path / "a" / "index.html").read_text()


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
                src = attrs.get("src", "").split("?")[0]
                assert src.endswith(("assets/app.js", "pagefind/pagefind-ui.js")), f"{rel}: script {attrs}"
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
    checked = 0
    for rel, html in html_pages(built):
        page_url = "/repo/" + rel
        for _tag, attrs in tags_of(html):
            for name in ("href", "src", "action"):
                value = attrs.get(name)
                if value is None or value.startswith(("https://", "http://", "mailto:", "#")):
                    continue
                assert not value.startswith("/"), f"{rel}: absolute path {value!r}"
                target = posixpath.normpath(posixpath.join(posixpath.dirname(page_url), value.split("?")[0]))
                assert target == "/repo" or target.startswith("/repo/"), f"{rel}: {value!r} leaves the prefix"
                path = built / target.removeprefix("/repo").lstrip("/")
                if value.split("?")[0].endswith("/") or path.is_dir():
                    path = path / "index.html"
                assert path.is_file(), f"{rel}: {name}={value!r} points at nothing"
                checked += 1
    assert checked > 500


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
        "activity/index.html",
        "activity/2026-03/index.html",
        "search/index.html",
        "files/index.html",
        "feed.xml",
        "assets/favicon.svg",
        "pagefind/pagefind-ui.js",
    ):
        assert (built / rel).is_file(), rel
    assert '<link rel="icon" type="image/svg+xml" href="assets/favicon.svg?v=' in (built / "index.html").read_text()


# ------------------------------------------------------------------ what pages show


def test_history_backlinks_and_chips(fx: Fixture, built: Path) -> None:
    item = (built / f"channels/bugs/{fx.items['Submit button stays disabled']}/index.html").read_text()
    assert [f'data-version="{v}"' in item for v in (1, 2, 3)] == [True, True, True]
    assert "<code>values.owner</code><code>values.points</code>" in item
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
    assert 'style="--chip:#22c55e;--chip-fg:#000000"' in channel  # Fixed, from the schema
    session = page_of(built, "sessions", fx.sessions[1])
    assert f'href="../../notes/{new_id}/"' in session  # the session lists what it wrote
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
        "activity/index.html",
        "activity/2026-03/index.html",
        "feed.xml",
        "projects/proj_order_web/index.html",  # shows the note's updated date
        "tags/api/index.html",
        "tags/validation/index.html",
    }
    assert f"notes/{nid}/index.html" in after.written_paths
    assert set(after.written_paths) <= neighbours, sorted(set(after.written_paths) - neighbours)
    assert after.rendered == after.written < 10
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
    assert report.rendered == report.pages + 3  # no manifest: every page rendered (and assets)
    assert report.deleted_paths == [f"notes/{nid}/index.html"]
    assert (out / "stray.html").read_text() == "not ours"  # only files the builds wrote are deleted
    assert (out / ".nojekyll").is_file()


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


def test_feed_without_a_base_url_warns(tmp_path: Path) -> None:
    fx = make_store(tmp_path / "store")
    report = build(fx.store, tmp_path / "out")
    assert any("base-url" in w for w in report.warnings)
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
    assert "wrote 34 of 34 pages" in captured.out
    assert "warning: no --base-url" in captured.err
    assert (tmp_path / "repo/_site/index.html").is_file()
    main(["site", "--store", str(fx.store.root), "--now", "2026-03-20", "--no-search"])
    assert "wrote 0 of 34 pages (34 unchanged, 0 deleted)" in capsys.readouterr().out
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
    assert len(manifest["pages"]) == report.pages + 3  # and the three assets
    assert "index.html" in manifest["pages"] and "feed.xml" in manifest["pages"]
    assert all(set(entry) == {"inputs", "size"} for entry in manifest["pages"].values())


def test_progress_goes_to_a_terminal_only_on_large_builds(fx: Fixture, tmp_path: Path) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    with redirect_stdout(io.StringIO()):
        build_site(fx.store, tmp_path / "a", now=BUILD_NOW, search=False, progress_stream=stream)
    assert stream.getvalue() == ""  # 40 pages: too small for a bar
    from codexmem.render.site.build import Progress

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
