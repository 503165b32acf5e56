"""Long lists of links on pages of their own (codexmem/render/site/link_pages.py): a session that
wrote hundreds of notes and a file they all name keep small pages, and every link is listed once."""

from __future__ import annotations

import json
import re
from pathlib import Path

from merge_fixtures import Repo, new_repo

from codexmem.memory.notes import build_note
from codexmem.models.records import ScopeRef
from codexmem.render.site import build_site
from codexmem.render.site.link_pages import GROUP_SHOWN, PAGE_LINKS, link_pages
from codexmem.render.site.tables import CHUNK_ROWS, PAGE_ROWS
from codexmem.store.layout import NOTE
from codexmem.timeutil import format_ts

NOTES = PAGE_LINKS + 100


def save_notes(repo: Repo, scope: ScopeRef, session: str, notes: list[tuple[str, list[str], list[str]]]) -> list[str]:
    """Notes (title, tags, file paths) saved in ``session``, 200 per transaction; their ids."""
    store = repo.store()
    at = format_ts(repo.now())
    ids = []
    for start in range(0, len(notes), 200):
        with store.transaction(session, at=at) as txn:
            for title, tags, paths in notes[start : start + 200]:
                note = build_note(
                    note_id=store.new_id("note", repo.now()),
                    scope=scope,
                    session_id=session,
                    note_type="discovery",
                    title=title,
                    content=f"{title}: the details.",
                    importance=3,
                    tags=tags,
                    file_paths=paths,
                    status="active",
                    source="codex_explicit",
                    at=at,
                )
                ids.append(txn.put(NOTE, note, event_type="created", changed=[])["note_id"])
    return ids


def listed(page: Path) -> list[str]:
    """The record ids a page links to in its "Linked from" section, in order."""
    text = page.read_text()
    section = text[text.index('<section class="backlinks"') :]
    return re.findall(r'<li><span class="kind">[^<]*</span> <a href="[^"]*/(note_[0-9A-Z]+)/">', section)


def test_a_session_of_many_notes_and_the_file_they_name_list_every_note_once_on_small_pages(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "shop")
    scope, session = repo.session("Import the old wiki")
    ids = save_notes(
        repo,
        scope,
        session,
        [(f"Wiki page {n} <imported> & kept", ["wiki"], ["src/app.py"]) for n in range(NOTES)],
    )
    repo.commit("an imported wiki")
    out = tmp_path / "site"
    build_site(repo.store(), out, search=False)

    session_page = out / "sessions" / session / "index.html"
    file_page = next((out / "files").glob("src-app-py-*/index.html"))
    for page in (session_page, file_page):
        text = page.read_text()
        assert listed(page) == sorted(ids)[:GROUP_SHOWN]
        assert f"and {NOTES - GROUP_SHOWN:,} more, on" in text
        first = re.search(r'<p class="more">and [\d,]+ more, on <a href="([^"]+)">', text)
        assert first is not None
        pages = [(page.parent / first.group(1) / "index.html").resolve()]
        while True:  # follow "Next" to the end
            nxt = re.search(r'<a href="([^"]+)" rel="next">', pages[-1].read_text())
            if nxt is None:
                break
            pages.append((pages[-1].parent / nxt.group(1) / "index.html").resolve())
        assert len(pages) == 2
        assert [i for p in pages for i in listed(p)] == sorted(ids)
        for p in pages:
            assert len(listed(p)) <= PAGE_LINKS
            p_text = p.read_text()
            assert re.search(r"Wiki page \d+ &lt;imported&gt; &amp; kept", p_text) and "<imported>" not in p_text
        assert page.stat().st_size < 64 * 1024


def test_a_short_group_after_a_long_one_points_at_the_page_that_holds_its_rest() -> None:
    def refs(prefix: str, count: int) -> list[dict[str, str]]:
        return [{"kind": "Note", "title": f"{prefix}{i}", "url": f"notes/{prefix}{i}/"} for i in range(count)]

    context = {
        "title": "A busy session",
        "backlinks": [{"group": "A", "refs": refs("a", PAGE_LINKS + 20)}, {"group": "B", "refs": refs("b", 80)}],
    }
    pages = link_pages("sessions/s1/index.html", context)
    assert [path for path, _ in pages] == ["sessions/s1/links/1/index.html", "sessions/s1/links/2/index.html"]
    a, b = context["backlinks"]
    assert len(a["refs"]) == len(b["refs"]) == GROUP_SHOWN
    assert a["more"] == {"count": PAGE_LINKS + 20 - GROUP_SHOWN, "url": "sessions/s1/links/1/"}
    # B's first link not shown is its 51st: the (PAGE_LINKS + 20 + 50 + 1)th of all, on page 2.
    assert b["more"] == {"count": 80 - GROUP_SHOWN, "url": "sessions/s1/links/2/"}
    second = pages[1][1]["backlinks"]
    assert [g["group"] for g in second] == ["A", "B"]
    assert [r["title"] for r in second[1]["refs"]][GROUP_SHOWN] == f"b{GROUP_SHOWN}"
    # A record whose groups are all short keeps its page as it was.
    short = {"title": "Quiet", "backlinks": [{"group": "A", "refs": refs("a", GROUP_SHOWN)}]}
    assert link_pages("notes/n1/index.html", short) == []
    assert "more" not in short["backlinks"][0]


def test_the_files_index_is_a_list_that_pages_however_many_paths_are_named(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "shop")
    scope, session = repo.session("Map the monorepo")
    paths = [f"src/pkg_{n:04d}/mod.py" for n in range(CHUNK_ROWS + 150)]
    save_notes(
        repo,
        scope,
        session,
        [(f"Package {n} layout", [f"pkg-{n:04d}"], paths[n : n + 2]) for n in range(0, len(paths), 2)],
    )
    repo.commit("a map")
    out = tmp_path / "site"
    build_site(repo.store(), out, search=False)
    for folder, names in (("files", paths), ("tags", [f"#pkg-{n:04d}" for n in range(0, len(paths), 2)])):
        index = out / folder / "index.html"
        # The first page of rows, by name, in the HTML; every row in the chunks beside it.
        assert (
            re.findall(r"<tr><td class=\"title c-title\"><a href=\"[^\"]+\">(?:<code>)?([^<]+)", index.read_text())
            == names[:PAGE_ROWS]
        )
        chunks = sorted(index.parent.glob(f"{folder}-*.json"))
        assert len(chunks) >= 2 or folder == "tags"
        rows = [row for chunk in chunks for row in json.loads(chunk.read_text())["rows"]]
        assert sorted(row[1][0] for row in rows) == sorted(n.lower() for n in names)
        assert index.stat().st_size < 64 * 1024
