"""History with values on the site (issue 19, item 1), from a real store in a real repository:
each change old -> new with option labels, a word diff for a note's text with its earlier version
to read, who made each change, and two branches' parallel versions each against its own parent."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

from merge_fixtures import Repo, new_repo

from codexmem.render.site import build_site
from codexmem.render.site.history import word_diff
from codexmem.store.resolve import resolve


def history_html(page: Path) -> str:
    text = page.read_text()
    start = text.index('<section class="history"')
    return text[start : text.index("</section>", start)]


def readable(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def rows(page: Path) -> list[str]:
    """Each history row as a person reads it."""
    section = history_html(page)
    return [
        readable(li)
        for li in re.findall(r'<li data-version="\d+">(.*?)</li>\s*(?=<li data-version|</ol>)', section, re.S)
    ]


def build(repo: Repo, tmp_path: Path) -> Path:
    out = tmp_path / "site"
    build_site(repo.store(), out, search=False)
    return out


def test_item_changes_show_old_and_new_values_and_parallel_versions(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "shop")
    item = repo.item(title="Checkout times out")
    repo.commit("a bug")
    repo.branch("triage")
    repo.person("Bob Jones")
    repo.edit(item, status="triaged", severity="s2")
    repo.commit("triage")
    repo.checkout("main")
    repo.branch("estimate")
    repo.person("Carol White")
    repo.edit(item, points=5)
    repo.commit("estimate")
    repo.checkout("main")
    assert repo.merge("triage") == []
    assert repo.merge("estimate") == []
    repo.person("Alice Smith")
    repo.edit(item, status="fixed")

    page = build(repo, tmp_path) / "channels" / "bugs" / item / "index.html"
    got = rows(page)
    assert got[0].startswith("v1 created")
    triage = next(r for r in got if "Bob Jones" in r)
    estimate = next(r for r in got if "Carol White" in r)
    # Both are version 2, made at once on two branches; each compares with version 1, its parent.
    assert triage.startswith("v2 parallel") and estimate.startswith("v2 parallel")
    assert "Severity : — → S2" in triage and "Status : New → Triaged" in triage
    assert "Points : — → 5" in estimate and "Status" not in estimate
    # The change after the merge follows both: its old value is the merged one.
    assert got[-1].startswith("v3 updated") and "Status : Triaged → Fixed" in got[-1]
    assert "(Alice Smith)" in got[-1]
    assert 'class="chip' in history_html(page)  # option values are shown as the table shows them


def test_a_note_text_change_is_a_word_diff_with_the_earlier_version_to_read(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "shop")
    scope, session = repo.session()
    filler = " ".join(f"word{i}" for i in range(60))
    note = repo.note(scope, session, "Retry policy", content=f"Retry settlement three times. {filler} Then page.")
    repo.commit("a note")
    path = repo.store_root / "notes" / f"{note}.md"
    path.write_text(path.read_text().replace("three times", "five times"))  # a person's edit
    assert [r.what for r in resolve(repo.store())] == ["recorded"]

    page = build(repo, tmp_path) / "notes" / note / "index.html"
    section = history_html(page)
    assert "<del>three</del><ins>five</ins>" in section
    assert "…" in readable(section)  # sixty unchanged words are not all repeated
    assert "word30" not in readable(section.split("<details")[0])
    earlier = re.search(r'<details class="version"><summary>Show v1 as it was</summary>(.*?)</details>', section, re.S)
    assert earlier is not None and "Retry settlement three times." in html.unescape(earlier.group(1))
    assert "word30" in earlier.group(1)  # the whole earlier text, not the diff


def test_word_diff_keeps_the_changed_words_and_the_ends_of_long_unchanged_runs() -> None:
    old = "alpha " + " ".join(f"w{i}" for i in range(40)) + " omega"
    new = "ALPHA " + " ".join(f"w{i}" for i in range(40)) + " omega!"
    parts = word_diff(old, new)
    assert [p["op"] for p in parts] == ["del", "ins", "eq", "del", "ins"]
    assert parts[0]["text"] == "alpha" and parts[1]["text"] == "ALPHA"
    middle = parts[2]["text"]
    assert "…" in middle and middle.startswith(" w0 w1") and middle.rstrip().endswith("w38 w39")
    assert (parts[3]["text"], parts[4]["text"]) == ("omega", "omega!")
    assert word_diff("same text", "same text") == [{"op": "eq", "text": "same text"}]


def site_files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_after_a_branch_switch_the_site_shows_only_the_events_the_files_hold(tmp_path: Path) -> None:
    """The index remembers events of a shard that went away (a checkout of another branch), for
    pollers; the site is built from the files checked out: the same as a build with no cache."""
    repo = new_repo(tmp_path / "shop")
    bug = repo.item(title="Totals off")
    repo.commit("a bug")
    repo.branch("feat")
    repo.edit(bug, status="triaged")
    repo.commit("triaged on feat")
    out = tmp_path / "site"
    build_site(repo.store(), out, search=False)
    assert "Status : New → Triaged" in " ".join(rows(out / "channels" / "bugs" / bug / "index.html"))
    repo.checkout("main")
    build_site(repo.store(), out, search=False)  # the index has seen feat's shard, now gone
    shutil.rmtree(repo.store_root / ".cache")
    fresh = tmp_path / "fresh"
    build_site(repo.store(), fresh, search=False)
    assert site_files(out) == site_files(fresh)
    assert "Triaged" not in " ".join(rows(out / "channels" / "bugs" / bug / "index.html"))


def test_history_says_times_and_names_fields_as_the_rest_of_the_page_does(tmp_path: Path) -> None:
    """A session's history read "ended at: — → 2026-02-16T10:20:00.000Z": lower case, ISO form."""
    from codexmem.errors import Warnings
    from codexmem.memory.lifecycle import end_session

    repo = new_repo(tmp_path / "shop")
    _, session = repo.session()
    end_session(repo.store(), repo.now(), Warnings(), session_id=session, status="ended")
    out = tmp_path / "site"
    build_site(repo.store(), out, search=False)
    page = (out / "sessions" / session / "index.html").read_text()
    changes = page.split('<section class="history"', 1)[1]
    assert re.search(
        r'<span class="field">Ended at</span>: <span class="old">[^<]*</span> → '
        r'<span class="new">\d{4}-\d{2}-\d{2} \d{2}:\d{2}</span>',
        changes,
    ), changes[:2000]
    assert '<span class="field">Status</span>' in changes and '<span class="field">status' not in changes
    assert not re.search(r'<span class="(?:old|new)">\d{4}-\d{2}-\d{2}T', changes)


def test_activity_says_who_stood_behind_each_change(tmp_path: Path) -> None:
    """Activity's "Who" said "cli" for an item's change, dropping the person its history names, and a
    session's title cut short carried no way to read it whole."""
    repo = new_repo(tmp_path / "shop")
    bug = repo.item(title="Who changed it?")
    repo.edit(bug, owner="aiko")
    out = tmp_path / "site"
    build_site(repo.store(), out, search=False)
    activity = (out / "activity" / "index.html").read_text()
    rows = [r for r in activity.split("<tr>") if "Who changed it?" in r]
    assert rows and all(
        '<span class="actor actor-other" title="cli">cli</span> <span class="author">(Alice Smith)</span>' in r
        for r in rows
    ), rows[:1]


def test_an_id_in_a_history_value_links_to_its_record(tmp_path: Path) -> None:
    """A note's history read "superseded by: — → note_01KK…", an id to copy by hand, though the
    banner above linked the same note."""
    repo = new_repo(tmp_path / "shop")
    scope, session = repo.session()
    old = repo.note(scope, session, "Retry twice")
    new = repo.note(scope, session, "Retry with backoff")
    repo.status("note", old, "superseded", superseded_by=new)
    out = tmp_path / "site"
    build_site(repo.store(), out, search=False)
    history = (out / "notes" / old / "index.html").read_text().split('<section class="history"', 1)[1]
    assert re.search(
        rf'<span class="field">Superseded by</span>: <span class="old">[^<]*</span> → <span class="new">'
        rf'<a href="\.\./\.\./notes/{new}/">Retry with backoff</a></span>',
        history,
    ), history[:1500]
