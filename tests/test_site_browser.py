"""The built site in a real headless Chromium, served from a sub-path like a GitHub Pages project site.

One browser for the module; the site is built once (with its Pagefind index) and served by the
same server ``codexmem site --serve`` uses, under ``/repo/``.
"""

from __future__ import annotations

import re
import shutil
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import pytest
from site_fixtures import NOW, SCRIPT, SVG, Fixture, make_store

from codexmem.cli.site_cmd import parse_now
from codexmem.render.site import build_site
from codexmem.render.site.serve import make_server

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PREFIX = "/repo/"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Fixture, str]]:
    fx = make_store(tmp_path_factory.mktemp("browser") / "store")
    out = fx.store.root.parent / "_site"
    build_site(fx.store, out, now=parse_now(NOW))
    server = make_server(out, port=0, prefix=PREFIX, quiet=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fx, f"http://127.0.0.1:{server.server_address[1]}{PREFIX}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


class Watched:
    """A page whose console errors, failed requests and dialogs are recorded."""

    def __init__(self, browser: Any, **context: Any) -> None:
        self.context = browser.new_context(**context)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", self._failed)
        self.page.on("response", lambda r: self.errors.append(f"{r.status}: {r.url}") if r.status >= 400 else None)
        self.page.on("dialog", self._dialog)

    def _failed(self, request: Any) -> None:
        # Leaving a page cancels its pending requests (the favicon, say): that is no error.
        if request.failure != "net::ERR_ABORTED":
            self.errors.append(f"failed: {request.url} ({request.failure})")

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def tab(browser: Any) -> Iterator[Watched]:
    watched = Watched(browser)
    yield watched
    watched.close()


def test_home_to_project_to_handoff_to_note(site: tuple[Fixture, str], tab: Watched) -> None:
    fx, base = site
    page = tab.page
    page.goto(base)
    assert page.title() == "Home · order-platform memory"
    page.get_by_role("link", name="order-web", exact=True).first.click()
    page.wait_for_url(f"{base}projects/proj_order_web/")
    page.locator(".handoff-card h3 a", has_text="Finish order validation").click()
    page.wait_for_url(f"{base}handoffs/{fx.handoffs['Finish order validation']}/")
    page.get_by_role("link", name="Use generated enum metadata").first.click()
    page.wait_for_url(f"{base}notes/{fx.notes['Use generated enum metadata']}/")
    assert page.locator("h1").inner_text() == "Use generated enum metadata"
    assert tab.errors == [] and tab.dialogs == []


def test_backlink_leads_from_a_note_to_the_handoff_that_lists_it(site: tuple[Fixture, str], tab: Watched) -> None:
    fx, base = site
    page = tab.page
    page.goto(f"{base}notes/{fx.notes['Use generated enum metadata']}/")
    section = page.locator("section.backlinks")
    section.get_by_role("link", name="Finish order validation").click()
    page.wait_for_url(f"{base}handoffs/{fx.handoffs['Finish order validation']}/")
    assert tab.errors == []


def test_search_finds_records_with_pagefind(site: tuple[Fixture, str], tab: Watched) -> None:
    fx, base = site
    page = tab.page
    page.goto(base)
    page.fill("form.find input[name=q]", "enum")
    page.press("form.find input[name=q]", "Enter")
    page.wait_for_url(re.compile(r".*/repo/search/\?q=enum$"))
    message = page.locator(".pagefind-ui__message")
    message.filter(has_text=re.compile(r"^\d[\d,]* results? for")).wait_for(timeout=15_000)
    assert not message.inner_text().startswith("Searching")
    links = page.locator(".pagefind-ui__result-link")
    assert links.count() >= 3
    hrefs = [links.nth(i).get_attribute("href") or "" for i in range(links.count())]
    assert all(h.startswith(PREFIX) for h in hrefs), hrefs  # results stay under the sub-path
    titles = page.locator(".pagefind-ui__result-title").all_inner_texts()
    assert "Use generated enum metadata" in titles
    links.filter(has_text="Use generated enum metadata").first.click()
    page.wait_for_url(f"{base}notes/{fx.notes['Use generated enum metadata']}/")
    assert tab.errors == []


def test_injected_payloads_run_nothing(site: tuple[Fixture, str], tab: Watched) -> None:
    fx, base = site
    page = tab.page
    urls = [
        f"notes/{fx.notes[f'Payload note {SVG}']}/",
        f"handoffs/{fx.handoffs['Finish order validation']}/",
        f"channels/bugs/{fx.items[f'Payload item {SCRIPT}']}/",
        "channels/bugs/",
        "projects/proj_order_web/",
        "activity/",
        "",
    ]
    for url in urls:
        page.goto(base + url)
        page.wait_for_load_state("load")
        assert page.evaluate("typeof window.__pwned") == "undefined", url
    page.goto(base + urls[0])
    assert "<script>window.__pwned=1;alert(1)</script>" in page.locator(".prose").inner_text()
    assert page.locator(".prose a").count() == 0  # javascript:, data: links were not made links
    page.goto(base + urls[2])
    link_cell = page.locator("dd.v-url")
    assert link_cell.locator("a").count() == 0 and "javascript:" in link_cell.inner_text()
    assert tab.dialogs == [] and tab.errors == []


def _column(page: Any, index: int) -> list[str]:
    """The visible rows' texts in one column, in their current order."""
    texts: list[str] = page.eval_on_selector_all(
        "#items tbody tr:not([hidden])", f"rows => rows.map(r => r.cells[{index}].innerText.trim())"
    )
    return texts


def test_channel_table_sorts_and_filters(site: tuple[Fixture, str], tab: Watched) -> None:
    _, base = site
    page = tab.page
    page.goto(f"{base}channels/bugs/")
    headers = page.locator("#items thead th").all_inner_texts()
    points = headers.index("Points")
    page.locator("#items thead th button", has_text="Points").click()
    assert _column(page, points) == ["1", "2", "5", "5", "8"]
    page.locator("#items thead th button", has_text="Points").click()
    assert _column(page, points) == ["8", "5", "5", "2", "1"]
    page.locator("#items thead th button", has_text="Title").click()
    titles = _column(page, 0)
    assert titles == sorted(titles, key=str.lower)

    page.select_option("select[data-filter=status]", "fixed")
    assert sorted(_column(page, 0)) == ["Retry storm on timeout", "Submit button stays disabled"]
    assert page.locator("[data-row-count]").inner_text() == "2 of 5 rows"
    page.select_option("select[data-filter=owner]", "ren")
    assert _column(page, 0) == ["Submit button stays disabled"]
    page.select_option("select[data-filter=status]", "")
    page.select_option("select[data-filter=owner]", "")
    page.select_option("select[data-filter=labels]", "api")  # multi-select: any row carrying it
    assert len(_column(page, 0)) == 3
    page.click("[data-filter-reset]")
    assert len(_column(page, 0)) == 5
    assert tab.errors == []


def test_chip_background_is_the_option_colour(site: tuple[Fixture, str], tab: Watched) -> None:
    _, base = site
    page = tab.page
    page.goto(f"{base}channels/bugs/")
    chip = page.locator(".chip", has_text=re.compile(r"^Fixed$")).first
    assert chip.evaluate("c => getComputedStyle(c).backgroundColor") == "rgb(34, 197, 94)"  # #22c55e
    odd = page.locator(".chip", has_text="Odd").first
    assert odd.evaluate("c => getComputedStyle(c).backgroundColor") == "rgb(239, 68, 68)"  # #ef4444


def test_history_lists_every_version_of_an_edited_item(site: tuple[Fixture, str], tab: Watched) -> None:
    fx, base = site
    page = tab.page
    page.goto(f"{base}channels/bugs/{fx.items['Submit button stays disabled']}/")
    entries = page.locator("section.history li")
    assert entries.count() == 3
    assert [entries.nth(i).get_attribute("data-version") for i in range(3)] == ["1", "2", "3"]
    assert "values.owner" in entries.nth(2).inner_text() and "cli:tester" in entries.nth(2).inner_text()


def test_activity_filters_by_project_and_kind(site: tuple[Fixture, str], tab: Watched) -> None:
    _, base = site
    page = tab.page
    page.goto(f"{base}activity/")
    total = page.locator("#events tbody tr").count()
    page.select_option("select[data-filter-attr=kind]", "item")
    visible = page.locator("#events tbody tr:not([hidden])")
    assert 0 < visible.count() < total
    assert set(visible.evaluate_all("rows => rows.map(r => r.dataset.kind)")) == {"item"}
    page.select_option("select[data-filter-attr=kind]", "")
    page.select_option("select[data-filter-attr=project]", "proj_order_api")
    assert set(visible.evaluate_all("rows => rows.map(r => r.dataset.project)")) == {"proj_order_api"}
    assert tab.errors == []


def _luminance(rgb: str) -> float:
    r, g, b = (int(x) for x in re.findall(r"\d+", rgb)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_dark_mode_follows_the_system_setting(site: tuple[Fixture, str], browser: Any) -> None:
    _, base = site
    colours = {}
    for scheme in ("light", "dark"):
        watched = Watched(browser, color_scheme=scheme)
        watched.page.goto(base)
        colours[scheme] = watched.page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert watched.errors == []
        watched.close()
    assert colours["light"] != colours["dark"]
    assert _luminance(colours["dark"]) < 0.2 < 0.8 < _luminance(colours["light"])


def test_phone_width_has_no_horizontal_page_scroll(site: tuple[Fixture, str], browser: Any) -> None:
    fx, base = site
    watched = Watched(browser, viewport={"width": 390, "height": 844})
    for url in ("", "projects/proj_order_web/", f"notes/{fx.notes[f'Payload note {SVG}']}/", "activity/"):
        watched.page.goto(base + url)
        overflow = watched.page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{url or 'home'} scrolls sideways by {overflow}px"
    watched.close()


def test_feed_validates_as_atom(site: tuple[Fixture, str], tab: Watched) -> None:
    _, base = site
    response = tab.page.request.get(f"{base}feed.xml")
    assert response.ok
    root = ET.fromstring(response.body())
    assert root.tag == "{http://www.w3.org/2005/Atom}feed"
    assert len(root.findall("{http://www.w3.org/2005/Atom}entry")) > 10
