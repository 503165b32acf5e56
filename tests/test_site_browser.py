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
from pathlib import Path
from typing import Any

import pytest
from site_fixtures import NOW, SCRIPT, SVG, Fixture, add_channel, make_store, ts

from bench.site_shape import CHROMIUM_ARGS as ARGS
from codexmem.cli.site_cmd import parse_now
from codexmem.render.site import build_site
from codexmem.render.site.history_pages import INLINE_EVENTS
from codexmem.render.site.serve import make_server
from codexmem.render.site.tables import PAGE_ROWS
from codexmem.store.layout import ITEM

CHROMIUM = "/usr/bin/chromium"
PREFIX = "/repo/"
BIG = 2 * PAGE_ROWS + 20
"""Items in the second channel: three pages, the last one short."""
AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Fixture, str]]:
    fx = make_store(tmp_path_factory.mktemp("browser") / "store")
    fx.items.update({f"big-{n}": iid for n, iid in enumerate(add_channel(fx, "big", BIG))})
    # One item reassigned often enough that its older events move to a history page of their own.
    for n in range(INLINE_EVENTS + 5):
        with fx.store.transaction("cli:test", at=ts(20, 10, n)) as txn:
            current = txn.get(ITEM, fx.items["big-0"], "big")
            assert current is not None
            values = {**current["values"], "owner": ("aiko", "mika")[n % 2]}
            updated = {**current, "version": current["version"] + 1, "values": values, "updated_at": ts(20, 10, n)}
            txn.put(ITEM, updated, event_type="updated", changed=["values.owner"])
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


def _results(page: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = page.eval_on_selector_all(
        "[data-search-results] .result",
        """rows => rows.map(r => ({
            title: r.querySelector('a').textContent,
            href: r.querySelector('a').getAttribute('href'),
            labels: Array.from(r.querySelectorAll('.label')).map(l => l.textContent),
            excerpt: (r.querySelector('.excerpt') || {}).textContent || ''
        }))""",
    )
    return items


def test_search_results_say_what_they_found(site: tuple[Fixture, str], tab: Watched) -> None:
    fx, base = site
    page = tab.page
    page.goto(base)
    page.fill("form.find input[name=q]", "enum")
    page.press("form.find input[name=q]", "Enter")
    page.wait_for_url(re.compile(r".*/repo/search/\?q=enum$"))
    status = page.locator("[data-search-status]")
    status.filter(has_text=re.compile(r"^\d[\d,]* results? for")).wait_for(timeout=15_000)
    assert page.locator("form.find input[name=q]").input_value() == "enum"  # the header keeps the query
    results = _results(page)
    assert len(results) >= 3
    assert all(r["href"].startswith(PREFIX) for r in results), results  # links stay under the sub-path
    by_title = {r["title"]: r for r in results}
    assert by_title["Use generated enum metadata"]["labels"] == ["Note · decision", "order-web", "active"]
    handoff = by_title["Finish order validation"]
    assert handoff["labels"] == ["Handoff · final", "order-web", "open"]
    bug = by_title["BUG-0002 Enum mismatch on payment"]  # the ticket is in the item's title
    assert bug["labels"] == ["Item", "Bugs", "New"]
    # Each search part's URLs are relative to its folder: the browser gives every part its base.
    assert bug["href"] == f"{PREFIX}channels/bugs/{fx.items['Enum mismatch on payment']}/"
    assert handoff["href"] == f"{PREFIX}handoffs/{fx.handoffs['Finish order validation']}/"
    assert all("#" not in r["excerpt"] for r in results)  # no tag noise
    assert all(" · " not in r["excerpt"] for r in results)  # nor the labels: they are metadata, not text
    page.locator("[data-search-results] a", has_text="Use generated enum metadata").click()
    page.wait_for_url(f"{base}notes/{fx.notes['Use generated enum metadata']}/")
    assert tab.errors == []


def test_every_result_of_a_search_can_be_reached(site: tuple[Fixture, str], tab: Watched) -> None:
    """120 items match "number": the page said "the first 50 shown" and offered no way to the rest."""
    _, base = site
    page = tab.page
    page.goto(f"{base}search/?q=number")
    status = page.locator("[data-search-status]")
    status.filter(has_text=f"{BIG} results for “number”, the first 50 shown.").wait_for(timeout=15_000)
    more = page.locator("[data-search-more]")
    for shown in (100, BIG):
        more.click()
        page.locator("[data-search-results] .result").nth(shown - 1).wait_for(timeout=15_000)
    status.filter(has_text=f"{BIG} results for “number”.").wait_for(timeout=5_000)
    assert more.count() == 0, "no button once every result is shown"
    titles = page.locator("[data-search-results] .result > a").all_inner_texts()
    assert len(titles) == BIG == len(set(titles))
    assert tab.errors == []


def test_header_search_shows_results_as_you_type_and_keys_move_through_them(
    site: tuple[Fixture, str], tab: Watched
) -> None:
    _, base = site
    page = tab.page
    page.goto(f"{base}channels/")
    box = page.locator("form.find input[name=q]")
    box.click()
    box.type("backend", delay=20)
    dropdown = page.locator("[data-find-results]")
    dropdown.locator(".result").first.wait_for(timeout=15_000)
    assert box.get_attribute("aria-expanded") == "true"
    titles = dropdown.locator(".result a").all_inner_texts()
    assert "Backend rejects legacy payment aliases" in titles
    page.keyboard.press("ArrowDown")
    focused = page.evaluate("document.activeElement.textContent")
    assert focused == titles[0]
    page.keyboard.press("Escape")
    assert dropdown.is_hidden()
    box.press("Enter")
    page.wait_for_url(re.compile(r".*/repo/search/\?q=backend$"))
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


def _column(page: Any, index: int, table: str = "items") -> list[str]:
    """The shown rows' texts in one column, in their current order."""
    texts: list[str] = page.eval_on_selector_all(
        f"#{table} tbody tr", f"rows => rows.map(r => r.cells[{index}].innerText.trim())"
    )
    return texts


def _settled(page: Any) -> None:
    page.wait_for_function("!document.querySelector('[aria-busy=true]')")


def test_channel_table_sorts_and_filters(site: tuple[Fixture, str], tab: Watched) -> None:
    _, base = site
    page = tab.page
    page.goto(f"{base}channels/bugs/")
    headers = page.locator("#items thead th").all_inner_texts()
    points = [h.rstrip(" ↕↑↓") for h in headers].index("Points")
    page.locator("#items thead th button", has_text="Points").click()
    _settled(page)
    assert _column(page, points) == ["1", "2", "5", "5", "8"]
    assert "sort=points" in page.url
    page.locator("#items thead th button", has_text="Points").click()
    _settled(page)
    assert _column(page, points) == ["8", "5", "5", "2", "1"]
    assert "sort=-points" in page.url
    page.locator("#items thead th button", has_text="Title").click()
    _settled(page)
    titles = _column(page, 0)
    assert titles == sorted(titles, key=str.lower)

    page.select_option("select[name=status]", "fixed")
    _settled(page)
    assert sorted(_column(page, 0)) == ["Retry storm on timeout", "Submit button stays disabled"]
    assert page.locator("[data-count]").inner_text() == "2 items (filtered from 5)."
    page.select_option("select[name=owner]", "ren")
    _settled(page)
    assert _column(page, 0) == ["Submit button stays disabled"]
    page.select_option("select[name=status]", "")
    page.select_option("select[name=owner]", "")
    page.select_option("select[name=labels]", "api")  # multi-select: any row carrying it
    _settled(page)
    assert len(_column(page, 0)) == 3
    page.fill("[data-tools] input[name=q]", "alias")
    page.wait_for_function("document.querySelectorAll('#items tbody tr').length === 1")
    assert _column(page, 0) == ["Old alias still accepted"]
    page.click("[data-reset]")
    _settled(page)
    assert len(_column(page, 0)) == 5
    assert "status=" not in page.url and "q=" not in page.url
    assert tab.errors == []


def test_the_url_keeps_filters_sort_and_page_through_back_and_reload(site: tuple[Fixture, str], tab: Watched) -> None:
    fx, base = site
    page = tab.page
    page.goto(f"{base}channels/bugs/")
    page.select_option("select[name=status]", "fixed")
    page.locator("#items thead th button", has_text="Points").click()
    _settled(page)
    assert page.url.endswith("?status=fixed&sort=points")
    shown = _column(page, 0)
    assert sorted(shown) == ["Retry storm on timeout", "Submit button stays disabled"]
    page.locator("#items tbody a", has_text="Retry storm on timeout").click()
    page.wait_for_url(f"{base}channels/bugs/{fx.items['Retry storm on timeout']}/")
    page.go_back()
    page.wait_for_url(re.compile(r".*\?status=fixed&sort=points$"))
    _settled(page)
    assert page.locator("select[name=status]").input_value() == "fixed"
    assert _column(page, 0) == shown  # the rows match the filter, in the sorted order
    assert page.locator("th[aria-sort=ascending]").inner_text().startswith("Points")
    page.reload()
    _settled(page)
    assert _column(page, 0) == shown and page.locator("select[name=status]").input_value() == "fixed"
    # A shared link opens straight into the same view.
    other = Watched(tab.page.context.browser)
    other.page.goto(f"{base}channels/bugs/?status=fixed&sort=points")
    other.page.wait_for_function("!document.querySelector('[aria-busy=true]')")
    assert _column(other.page, 0) == shown
    assert other.page.locator("select[name=status]").input_value() == "fixed"
    assert other.errors == []
    other.close()
    assert tab.errors == []


def test_a_long_channel_pages_and_sorts_across_every_page(site: tuple[Fixture, str], tab: Watched) -> None:
    _, base = site
    page = tab.page
    page.goto(f"{base}channels/big/")
    assert page.locator("#items tbody tr").count() == PAGE_ROWS
    assert page.locator("[data-count]").inner_text() == f"Showing 1–{PAGE_ROWS} of {BIG} items."
    pager = page.locator("[data-pager]")
    pager.get_by_role("link", name="Next →").click()
    assert page.url.endswith("?page=2")
    _settled(page)
    assert page.locator("[data-count]").inner_text() == f"Showing {PAGE_ROWS + 1}–{2 * PAGE_ROWS} of {BIG} items."
    assert _column(page, 0)[0] == f"Big item number {BIG - PAGE_ROWS}"  # newest first
    pager.get_by_role("link", name="3").click()
    _settled(page)
    assert page.locator("#items tbody tr").count() == BIG - 2 * PAGE_ROWS
    page.go_back()
    page.wait_for_url(re.compile(r".*\?page=2$"))
    _settled(page)
    assert _column(page, 0)[0] == f"Big item number {BIG - PAGE_ROWS}"
    page.goto(f"{base}channels/big/?sort=-points&status=fixed")
    _settled(page)
    points = [h.rstrip(" ↕↑↓") for h in page.locator("#items thead th").all_inner_texts()].index("Points")
    first = [int(v) for v in _column(page, points)]
    fixed = [(n * 7) % 14 for n in range(BIG) if n % 3 == 2]  # add_channel's points of the fixed items
    assert first == sorted(fixed, reverse=True)[:PAGE_ROWS]  # the highest of all rows, not of the first page
    count = len(fixed)
    assert page.locator("[data-count]").inner_text() == f"{count} items (filtered from {BIG})."
    assert tab.errors == []


def test_a_link_to_a_filter_value_or_page_that_is_not_there_shows_what_it_says(
    site: tuple[Fixture, str], tab: Watched
) -> None:
    """`?status=bogus` showed the Status filter on "All" but no row ("No items match"); `page=3` of a
    filter with one page showed that page and kept `page=3` in the address."""
    _, base = site
    page = tab.page
    page.goto(f"{base}channels/big/?status=bogus")
    _settled(page)
    assert page.locator("select[name=status]").input_value() == ""
    assert page.locator("[data-count]").inner_text() == f"Showing 1–{PAGE_ROWS} of {BIG} items."
    page.goto(f"{base}channels/big/?status=fixed&page=3")
    _settled(page)
    fixed = len([n for n in range(BIG) if n % 3 == 2])
    assert page.locator("[data-count]").inner_text() == f"{fixed} items (filtered from {BIG})."
    assert page.url.endswith("?status=fixed"), page.url
    assert tab.errors == []


def test_a_phone_sorts_a_list_with_its_own_control(site: tuple[Fixture, str], browser: Any) -> None:
    """The cards hide the header, and with it every sort button: a phone could not sort at all."""
    _, base = site
    watched = Watched(browser, viewport={"width": 390, "height": 844})
    page = watched.page
    page.goto(f"{base}channels/big/")
    assert page.locator("#items thead").is_hidden()
    control = page.locator("[data-phone-sort]")
    assert control.is_visible()
    control.select_option(label="Points ↓")
    _settled(page)
    assert page.url.endswith("?sort=-points"), page.url
    points = page.eval_on_selector_all(
        "#items tbody tr", "rows => rows.map(r => r.querySelector('[data-label=Points]').innerText.replace(/\\D/g, ''))"
    )
    assert [int(p) for p in points] == sorted(((n * 7) % 14 for n in range(BIG)), reverse=True)[:PAGE_ROWS]
    page.goto(f"{base}channels/big/?sort=title")
    _settled(page)
    assert control.input_value().endswith("+") and "Title" in control.locator("option:checked").inner_text()
    desktop = Watched(browser, viewport={"width": 1280, "height": 800})
    desktop.page.goto(f"{base}channels/big/")
    assert desktop.page.locator("[data-phone-sort]").is_hidden(), "the header sorts on a desktop"
    assert watched.errors == [] and desktop.errors == []
    watched.close()
    desktop.close()


def test_chip_background_is_the_option_colour(site: tuple[Fixture, str], tab: Watched) -> None:
    _, base = site
    page = tab.page
    page.goto(f"{base}channels/bugs/")
    chip = page.locator(".chip", has_text=re.compile(r"^Fixed$")).first
    assert chip.evaluate("c => getComputedStyle(c).backgroundColor") == "rgb(34, 197, 94)"  # #22c55e
    odd = page.locator(".chip", has_text="Odd").first
    assert odd.evaluate("c => getComputedStyle(c).backgroundColor") == "rgb(239, 68, 68)"  # #ef4444


def test_history_shows_each_change_old_to_new(site: tuple[Fixture, str], tab: Watched) -> None:
    fx, base = site
    page = tab.page
    page.goto(f"{base}channels/bugs/{fx.items['Submit button stays disabled']}/")
    entries = page.locator("section.history ol.timeline > li")
    assert [entries.nth(i).get_attribute("data-version") for i in range(entries.count())] == ["1", "2", "3"]
    assert "Status: In progress → Fixed" in entries.nth(1).inner_text()
    assert entries.nth(1).locator(".changes .chip").count() == 2  # option labels as the table shows them
    last = entries.nth(2).inner_text()
    assert "cli:tester" in last and "Points: 3 → 5" in last and ": Aiko → Ren" in last
    assert not tab.errors


def test_activity_filters_by_project_and_kind(site: tuple[Fixture, str], tab: Watched) -> None:
    _, base = site
    page = tab.page
    page.goto(f"{base}activity/")
    total = int(page.locator("[data-count]").inner_text().split(" of ")[1].split()[0].replace(",", ""))
    page.select_option("select[name=kind]", "item")
    _settled(page)
    kinds = _column(page, 1, "events")
    assert kinds and all(k.lower().startswith("item") for k in kinds)
    count = page.locator("[data-count]").inner_text()
    assert count.endswith(f"(filtered from {total:,}).") and page.url.endswith("?kind=item")
    page.select_option("select[name=kind]", "")
    page.select_option("select[name=project]", "proj_order_api")
    _settled(page)
    assert set(_column(page, 3, "events")) == {f"order-api {SVG}"}
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


def test_linked_ids_and_tickets_lead_to_their_records(site: tuple[Fixture, str], tab: Watched) -> None:
    fx, base = site
    page = tab.page
    page.goto(f"{base}notes/{fx.notes['Links to other records']}/")
    prose = page.locator(".prose")
    prose.get_by_role("link", name="BUG-0002", exact=True).click()
    page.wait_for_url(f"{base}channels/bugs/{fx.items['Enum mismatch on payment']}/")
    assert page.title().startswith("BUG-0002 Enum mismatch on payment ·")
    page.locator("dd a.ref", has_text="BUG-0001").click()  # a ticket inside an item's text value
    page.wait_for_url(f"{base}channels/bugs/{fx.items['Submit button stays disabled']}/")
    page.go_back()
    page.go_back()
    page.locator(".prose").get_by_role("link", name="the old rule").click()  # [x](note_ID)
    page.wait_for_url(f"{base}notes/{fx.notes['Hard-code the payment list']}/")
    assert tab.errors == []


def test_keyboard_alone_reaches_content_sorts_and_opens_a_menu(site: tuple[Fixture, str], tab: Watched) -> None:
    fx, base = site
    page = tab.page
    page.goto(f"{base}channels/bugs/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    assert page.locator(".skip").is_visible()  # shown when focused
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    # Tab on to the first sortable header and sort with the keyboard.
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.closest('th') !== null"):
            break
    assert page.evaluate("document.activeElement.textContent").startswith("Title")
    page.keyboard.press("Enter")
    _settled(page)
    assert page.locator("th[aria-sort=ascending]").count() == 1 and "sort=title" in page.url
    # The projects menu opens with Enter and closes with Escape, focus back on it.
    page.focus(".menu summary")
    page.keyboard.press("Enter")
    assert page.locator(".menu").get_attribute("open") is not None
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "order-api " + SVG
    page.keyboard.press("Escape")
    assert page.locator(".menu").get_attribute("open") is None
    assert page.evaluate("document.activeElement.tagName") == "SUMMARY"
    # Breadcrumbs and aria-current say where a record page is.
    page.goto(f"{base}notes/{fx.notes['Use generated enum metadata']}/")
    crumbs = page.locator("nav.crumbs li").all_inner_texts()
    assert crumbs == ["Home", "order-web", "Notes", "Use generated enum metadata"]
    assert page.locator("nav.crumbs [aria-current=page]").inner_text() == "Use generated enum metadata"
    assert page.locator(".menu a[aria-current]").text_content() == "order-web"
    assert tab.errors == []


AXE_PAGES = (
    "",
    "channels/bugs/",
    "activity/",
    "projects/proj_order_web/",
    "search/?q=enum",
    "tags/api/",
    "tags/",
    "files/",
    "projects/",
)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_pages_pass_axe_core_wcag_aa(site: tuple[Fixture, str], browser: Any, scheme: str) -> None:
    fx, base = site
    urls = [
        *AXE_PAGES,
        f"notes/{fx.notes['Links to other records']}/",
        f"channels/bugs/{fx.items['Enum mismatch on payment']}/",
        f"handoffs/{fx.handoffs['Finish order validation']}/",
        f"sessions/{fx.sessions[0]}/",
        f"channels/big/{fx.items['big-0']}/history/1/",
    ]
    watched = Watched(browser, color_scheme=scheme)
    page = watched.page
    script = AXE.read_text("utf-8")
    problems = []
    for url in urls:
        response = page.goto(base + url)
        assert response is not None and response.ok, url
        page.wait_for_load_state("load")
        if url.startswith("search"):
            page.locator("[data-search-results] .result").first.wait_for(timeout=15_000)
        page.add_script_tag(content=script)
        found = page.evaluate(
            "() => axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}})"
            ".then(r => r.violations.map(v => v.id + ': '"
            " + v.nodes.slice(0, 3).map(n => n.target.join(' ') + ' ' + n.failureSummary).join(' | ')))"
        )
        problems += [f"{url or 'home'}: {v}" for v in found]
    watched.close()
    assert problems == [], "\n".join(problems)


def test_stars_and_chips_have_the_contrast_they_need(site: tuple[Fixture, str], browser: Any) -> None:
    _, base = site
    for scheme in ("light", "dark"):
        watched = Watched(browser, color_scheme=scheme)
        page = watched.page
        page.goto(f"{base}projects/proj_order_web/notes/")
        ratios = page.evaluate(
            """() => {
            const lum = c => { const [r, g, b] = c.match(/\\d+/g).slice(0, 3).map(x => x / 255)
                .map(x => x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4);
                return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
            const ratio = (a, b) => {
                const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
                return (x + 0.05) / (y + 0.05);
            };
            const bg = getComputedStyle(document.body).backgroundColor;
            const on = getComputedStyle(document.querySelector('.stars')).color;
            const off = getComputedStyle(document.querySelector('.stars .off')).color;
            return [ratio(on, bg), ratio(off, bg)];
        }"""
        )
        assert min(ratios) >= 3, (scheme, ratios)
        watched.close()


def test_phone_sees_projects_first_and_item_facts_before_long_text(site: tuple[Fixture, str], browser: Any) -> None:
    fx, base = site
    watched = Watched(browser, viewport={"width": 390, "height": 844})
    page = watched.page
    page.goto(base)
    projects_top = page.locator("aside h2", has_text="Projects").bounding_box()
    activity_top = page.locator("h2", has_text="Recent activity").bounding_box()
    assert projects_top is not None and activity_top is not None and projects_top["y"] < activity_top["y"]
    page.goto(f"{base}channels/bugs/{fx.items['Enum mismatch on payment']}/")
    status = page.locator("dt", has_text="Status").bounding_box()
    notes = page.locator("section.long h2", has_text="Notes")
    assert status is not None and status["y"] < 500  # on the first screen
    if notes.count():
        box = notes.bounding_box()
        assert box is not None and status["y"] < box["y"]
    page.goto(f"{base}channels/big/")
    card = page.locator("#items tbody tr").first.bounding_box()
    assert card is not None and card["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    assert watched.errors == []
    watched.close()


def test_code_blocks_are_highlighted_large_enough_and_copyable(site: tuple[Fixture, str], browser: Any) -> None:
    fx, base = site
    watched = Watched(browser, permissions=["clipboard-read", "clipboard-write"])
    page = watched.page
    page.goto(f"{base}notes/{fx.notes['Links to other records']}/")
    pre = page.locator(".prose pre.hl")
    size = pre.locator("code").evaluate("c => parseFloat(getComputedStyle(c).fontSize)")
    assert size >= 13
    keyword = pre.locator(".k").first.evaluate("k => getComputedStyle(k).color")
    plain = pre.locator(".n").first.evaluate("k => getComputedStyle(k).color")
    assert keyword != plain  # coloured by the stylesheet, no script involved
    pre.locator("button.copy").click()
    assert page.evaluate("navigator.clipboard.readText()").startswith("def retry(n: int) -> str:")
    assert watched.errors == []
    watched.close()


def test_the_scroll_cue_shows_in_dark_and_a_phones_copy_button_covers_no_code(
    site: tuple[Fixture, str], browser: Any
) -> None:
    """The cue of hidden columns was a black shadow, invisible on the dark page; on a phone the copy
    button sat over the first line of code, and a tags card showed a bare count."""
    fx, base = site
    cues = {}
    for scheme in ("light", "dark"):
        watched = Watched(browser, color_scheme=scheme, viewport={"width": 900, "height": 700})
        page = watched.page
        page.goto(f"{base}channels/bugs/")
        wrap = page.locator(".table-wrap.more-right").first
        wrap.wait_for(timeout=10_000)
        cues[scheme] = wrap.evaluate("w => getComputedStyle(w).boxShadow")
        watched.close()
    assert "rgba(0, 0, 0" in cues["light"] and "rgba(255, 255, 255" in cues["dark"], cues
    watched = Watched(browser, viewport={"width": 390, "height": 844})
    page = watched.page
    page.goto(f"{base}notes/{fx.notes['Links to other records']}/")
    pre = page.locator(".prose pre.hl")
    button = pre.locator("button.copy").bounding_box()
    first_line = pre.locator("code").evaluate(
        "c => { const r = document.createRange(); r.setStart(c, 0); r.setEnd(c, 1);"
        " const b = r.getClientRects()[0]; return {y: b.y, height: b.height}; }"
    )
    assert button is not None and button["y"] + button["height"] <= first_line["y"] + 1, (button, first_line)
    # A card of the tags list said "#api" then a bare "28": its count now carries its label.
    page.goto(f"{base}tags/")
    count = page.locator("td.c-count").first
    count.wait_for(timeout=10_000)
    assert count.evaluate("td => getComputedStyle(td, '::before').content") == '"Notes: "'
    assert watched.errors == []
    watched.close()


def test_opened_from_disk_links_open_pages_and_a_notice_says_to_serve(site: tuple[Fixture, str], tab: Watched) -> None:
    fx, _ = site
    out = fx.store.root.parent / "_site"
    page = tab.page
    page.goto((out / "index.html").as_uri())
    assert page.locator("[data-file-notice]").is_visible()
    href = page.locator("a", has_text="Activity").first.get_attribute("href")
    assert href == "activity/index.html"
    page.locator("a", has_text="Activity").first.click()
    page.wait_for_url((out / "activity/index.html").as_uri())
    assert page.locator("h1").inner_text() == "Activity"
