"""A teammate on Windows: Git for Windows checks text files out with CRLF line ends by default
(``core.autocrlf=true``), and its tools may send text with CRLF.

Such a checkout of a store read its Markdown bodies with a CR at the end of every line: ``check``
warned that every note and handoff differed from its events (and ``resolve`` would have recorded
78 false changes in the example store), and the site's pages held the CRs. The store must read
the same whichever line ends the checkout has, and a body sent with CRLF is stored as git would
commit it, LF, so a file and its events never differ by CRs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from merge_fixtures import errors, new_repo

from codexmem.errors import Warnings
from codexmem.memory.retrieval import search
from codexmem.render.site import build_site
from codexmem.store.layout import HANDOFF, NOTE
from codexmem.store.store import Store

EXAMPLE = Path(__file__).resolve().parent.parent / "store-example"


def _site(store_root: Path, out: Path) -> dict[str, bytes]:
    build_site(Store(store_root), out, search=False)
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_a_crlf_checkout_reads_as_the_files_codexmem_wrote(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "shop")
    shutil.rmtree(repo.store_root)
    shutil.copytree(EXAMPLE, repo.store_root, ignore=shutil.ignore_patterns(".cache"))
    repo.commit("the example store")
    lf = _site(repo.store_root, tmp_path / "lf")
    notes_lf = sorted(Store(repo.store_root).fresh_index().select(NOTE), key=lambda n: n["note_id"])
    warned_lf = [str(w) for w in repo.check().warnings]  # file paths of another project: the same either way

    # Check the work tree out again as Git for Windows does by default.
    repo.git("config", "core.autocrlf", "true")
    repo.git("rm", "-q", "-r", "--cached", ".")
    repo.git("reset", "-q", "--hard")
    shutil.rmtree(repo.store_root / ".cache", ignore_errors=True)
    some_note = next((repo.store_root / "notes").glob("*.md"))
    assert b"\r\n" in some_note.read_bytes()  # the checkout really has CRLF line ends

    result = repo.check()
    assert errors(result) == [] and [str(w) for w in result.warnings] == warned_lf
    assert not any("no event records the change" in w for w in warned_lf)
    store = Store(repo.store_root)
    assert sorted(store.fresh_index().select(NOTE), key=lambda n: n["note_id"]) == notes_lf
    assert all("\r" not in h["summary"] for h in store.fresh_index().select(HANDOFF))
    assert _site(repo.store_root, tmp_path / "crlf") == lf  # the same pages, byte for byte


def test_a_body_sent_with_crlf_is_stored_with_lf(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "shop")
    scope, session = repo.session("from a Windows editor")
    note_id = repo.note(scope, session, "Line ends", "First line.\r\nSecond line.\r\n\r\n- a list item\r\n")
    path = next((repo.store_root / "notes").rglob(f"{note_id}.md"))
    assert b"\r" not in path.read_bytes()
    [note] = Store(repo.store_root).fresh_index().select(NOTE)
    assert note["content"] == "First line.\nSecond line.\n\n- a list item"
    result = repo.check()
    assert errors(result) == [] and [str(w) for w in result.warnings] == []


def test_a_note_saved_in_a_crlf_checkout_is_anchored_to_the_file_git_holds(tmp_path: Path) -> None:
    """The anchor's blob was the hash of the checkout's CRLF bytes, which git never holds: the note
    was marked stale at the next commit of anything, the file unchanged."""
    repo = new_repo(tmp_path / "shop")
    (repo.path / "src").mkdir()
    (repo.path / "src" / "pay.ts").write_text("export const a = 1;\nexport const b = 2;\n")
    (repo.path / "src" / "lf.ts").write_text("export const c = 3;\n")
    repo.commit("code")
    repo.git("config", "core.autocrlf", "true")
    repo.git("rm", "-q", "-r", "--cached", ".")
    repo.git("reset", "-q", "--hard")
    assert (repo.path / "src" / "pay.ts").read_bytes() == b"export const a = 1;\r\nexport const b = 2;\r\n"
    scope, session = repo.session("payments")
    note_id = repo.note(scope, session, "Payment constants", "a, b and c", file_paths=["src/pay.ts", "src/lf.ts"])
    [note] = Store(repo.store_root).fresh_index().select(NOTE)
    held = {line.split("\t")[1]: line.split()[2] for line in repo.git("ls-tree", "HEAD", "src/").splitlines()}
    assert note["anchor"]["files"] == {"src/pay.ts": held["src/pay.ts"], "src/lf.ts": held["src/lf.ts"]}

    def marked() -> list[str]:
        found = search(Store(repo.store_root), repo.now(), Warnings(), scope=scope, query="payment")
        [result] = [r for r in found["results"] if r["id"] == note_id]
        return list(result.get("changed_paths", []))

    (repo.path / "README.md").write_text("unrelated\n")
    repo.commit("something else")
    assert marked() == []  # the file is as the note saw it
    (repo.path / "src" / "pay.ts").write_text("export const a = 10;\r\nexport const b = 2;\r\n")
    repo.commit("a changes")
    assert marked() == ["src/pay.ts"]
