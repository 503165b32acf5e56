"""A long history on pages of its own (codexmem/render/site/history_pages.py), from a real store
in a real repository: every version is shown once, oldest to newest across the pages, no page
grows with the history, and one more edit rewrites the record's page and the last history page."""

from __future__ import annotations

import random
import re
from pathlib import Path

from merge_fixtures import Repo, new_repo

from codexmem.render.site import build_site
from codexmem.render.site.build import BuildReport
from codexmem.render.site.history_pages import INLINE_EVENTS
from codexmem.store.layout import NOTE
from codexmem.timeutil import format_ts

MAX_PAGE = 400 * 1024
WORDS = ("retry", "settlement", "ledger", "worker", "jitter", "timeout", "idempotency", "key", "payment", "backoff")


def edit_note(repo: Repo, note_id: str, rng: random.Random) -> None:
    """A paragraph added to the note's text (kept under the 6,000 characters a note may hold)."""
    at = format_ts(repo.now())
    with repo.store().transaction("cli:test", at=at) as txn:
        current = txn.get(NOTE, note_id)
        assert current is not None
        text = current["content"] + "\n\n" + " ".join(rng.choice(WORDS) for _ in range(40)) + "."
        if len(text) > 4_500:
            text = text.split("\n\n", 1)[1]
        txn.put(
            NOTE,
            {**current, "version": current["version"] + 1, "content": text},
            event_type="updated",
            changed=["content"],
        )


def build(repo: Repo, out: Path) -> BuildReport:
    return build_site(repo.store(), out, search=False)


def versions(page: Path) -> list[int]:
    return [int(v) for v in re.findall(r'<li data-version="(\d+)">', page.read_text())]


def links(page: Path, pattern: str) -> list[Path]:
    """The files the page's links matching ``pattern`` lead to (relative links, as the site writes them)."""
    return [(page.parent / href / "index.html").resolve() for href in re.findall(pattern, page.read_text())]


def history_pages(record_page: Path) -> list[Path]:
    return links(record_page, r'<a href="([^"]+/history/\d+/)">v\d+ to v\d+</a>')


def noted_repo(tmp_path: Path, edits: int) -> tuple[Repo, str]:
    repo = new_repo(tmp_path / "shop")
    scope, session = repo.session()
    note = repo.note(scope, session, "Retry <b>policy</b> & backoff", content="Retry settlement three times.")
    rng = random.Random(edits)
    for _ in range(edits):
        edit_note(repo, note, rng)
    repo.commit("a note edited many times")
    return repo, note


def test_a_long_history_moves_to_pages_of_its_own_with_every_version_once(tmp_path: Path) -> None:
    repo, note = noted_repo(tmp_path, 150)
    out = tmp_path / "site"
    build(repo, out)
    page = out / "notes" / note / "index.html"
    older = history_pages(page)
    assert len(older) >= 3
    assert all(p.is_file() for p in older)
    # Oldest to newest across the history pages, then the record's page: each version once.
    shown = [v for p in older for v in versions(p)] + versions(page)
    assert shown == list(range(1, 152))
    # Every earlier text is there to read, on the page that holds its version.
    snapshots = [v for p in [*older, page] for v in re.findall(r"Show v(\d+) as it was", p.read_text())]
    assert snapshots == [str(v) for v in range(1, 151)]
    for p in [page, *older]:
        assert p.stat().st_size < MAX_PAGE, p
    assert page.stat().st_size < 120 * 1024
    assert "The 1" in page.read_text() and "oldest events are on pages of their own" in page.read_text()
    # Older and newer links chain the pages; the newest history page leads back to the record.
    for n, p in enumerate(older):
        prev = links(p, r'<a href="([^"]+)/" rel="prev">')
        nxt = links(p, r'<a href="([^"]+)/" rel="next">')
        assert prev == ([older[n - 1]] if n else [])
        assert nxt == [older[n + 1] if n + 1 < len(older) else page.resolve()]
        text = p.read_text()
        assert "Retry &lt;b&gt;policy&lt;/b&gt; &amp; backoff" in text and "<b>policy" not in text
        assert 'aria-current="page">History of Retry' in text  # the breadcrumb ends at this page


def test_one_more_edit_rewrites_the_record_page_and_the_newest_history_page_only(tmp_path: Path) -> None:
    repo, note = noted_repo(tmp_path, 150)
    out = tmp_path / "site"
    build(repo, out)
    before = history_pages(out / "notes" / note / "index.html")
    rng = random.Random(7)
    for _ in range(3):
        edit_note(repo, note, rng)
        report = build(repo, out)
        after = history_pages(out / "notes" / note / "index.html")
        written = {p for p in report.written_paths if p.startswith(f"notes/{note}/")}
        assert f"notes/{note}/index.html" in written
        # The pages filled before stay as they were: only the newest one (or a new one) is written.
        unchanged = {f"notes/{note}/history/{n}/index.html" for n in range(1, len(before))}
        assert not written & unchanged
        assert written <= {
            f"notes/{note}/index.html",
            *(f"notes/{note}/history/{n}/index.html" for n in range(len(before), len(after) + 1)),
        }
        assert after[: len(before) - 1] == before[:-1]
        before = after


def test_an_item_changed_often_keeps_its_newest_events_and_option_chips_on_every_page(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "shop")
    item = repo.item(title="Checkout times out")
    statuses = ["triaged", "fixed", "wont_fix", "new"]
    for n in range(INLINE_EVENTS + 10):
        repo.edit(item, status=statuses[n % len(statuses)])
    repo.commit("an item triaged many times")
    out = tmp_path / "site"
    build(repo, out)
    page = out / "channels" / "bugs" / item / "index.html"
    older = history_pages(page)
    assert len(older) == 1
    assert versions(page) == list(range(12, INLINE_EVENTS + 12))
    assert versions(older[0]) == list(range(1, 12))
    text = older[0].read_text()
    assert "Status : New → Triaged" in " ".join(re.sub(r"<[^>]+>", " ", text).split())
    assert 'class="chip' in text and "<style>" in text  # the option colours, as on the item's page
    assert "61 events" in page.read_text()
