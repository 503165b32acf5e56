"""A person's first hour with the CLI (issue 18): their files are never overwritten, errors speak the
CLI's words, exit codes agree, counts are grammatical.

Real repositories (git in temporary folders), real stores, the CLI's ``main`` or the program itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from records_fixtures import BUGS_SCHEMA, bugs_store, parts_schema, run_cli
from store_fixtures import GIT_ENV, make_repo

from codexmem.cli.main import main
from codexmem.render.agents import BEGIN_MARKER, END_MARKER
from codexmem.store.gitsetup import ATTRIBUTES_COMMENT, STORE_ATTRIBUTES
from codexmem.store.init import STORE_GIT_FILES, GitLines, ensure_lines
from codexmem.store.yamlio import dump_yaml, load_yaml

MCP_WORDS = ("list_record_", "read_record_item", "edit_record_item", "error.fields", "error.item", "memory_")
NOUNS = "item|note|session|handoff|import|channel|error|warning|record|event|field|file|value|problem|byte|page"
ONE_PLURAL = re.compile(rf"(?<![\d.,])\b1 (?:{NOUNS})s\b")


@pytest.fixture(autouse=True)
def _no_store_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEXMEM_STORE", raising=False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but git's own, by relative path."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts[:1]
    }


def own_files(repo: Path) -> dict[str, bytes]:
    """``tree`` without the store's index cache, which any reading command may refresh."""
    return {rel: raw for rel, raw in tree(repo).items() if "/.cache/" not in rel}


def repo_with_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """A repository ``web`` with its store, made by ``init``."""
    repo = make_repo(tmp_path / "web")
    assert run(capsys, "init", "--store", str(repo / ".codexmem"))[0] == 0
    return repo, repo / ".codexmem"


def git_files(repo: Path) -> list[str]:
    """Every path inside ``.git`` (a file written there would show)."""
    return sorted(p.relative_to(repo / ".git").as_posix() for p in (repo / ".git").rglob("*"))


def git_status(repo: Path) -> str:
    done = subprocess.run(["git", "status", "--porcelain"], cwd=repo, env=GIT_ENV, capture_output=True, text=True)
    return done.stdout


# ------------------------------------------------------------------ init never overwrites


def test_init_refuses_a_folder_of_someone_elses_files_and_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "app")
    (repo / ".gitignore").write_text("node_modules/\n.env\nsecrets.txt\n")
    (repo / ".gitattributes").write_text("*.png binary\n")
    (repo / "secrets.txt").write_text("hunter2\n")
    (repo / "package.json").write_text("{}\n")
    before, status = tree(repo), git_status(repo)
    monkeypatch.chdir(repo)
    code, out, err = run(capsys, "init", "--store", ".")
    assert (code, out) == (2, "")
    [line] = err.splitlines()
    assert line.startswith(f"codexmem: error: {repo} holds files and is not a codexmem store (")
    assert "package.json" in line and "secrets.txt" in line and "--store" in line
    assert tree(repo) == before and git_status(repo) == status
    assert "secrets.txt" not in git_status(repo)  # still ignored


def test_init_appends_to_a_persons_git_files_once_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "app")
    mem = repo / "memory"
    mem.mkdir()
    (mem / ".gitattributes").write_bytes(b"*.bin binary\r\n*.psd lfs")  # CRLF, no final newline
    (mem / ".gitignore").write_bytes(b"/.cache/\n# ours\n")  # one of the lines already there
    (repo / ".gitignore").write_bytes(b"dist/")
    monkeypatch.chdir(repo)
    before = tree(repo)
    code, out, err = run(capsys, "init", "--store", "memory")
    assert (code, err) == (0, "")
    after = tree(repo)
    assert after[".gitignore"] == b"dist/\n/_site/\n"
    assert after["memory/.gitattributes"] == "\r\n".join(
        ["*.bin binary", "*.psd lfs", ATTRIBUTES_COMMENT, *STORE_ATTRIBUTES, ""]
    ).encode("utf-8")
    assert (
        after["memory/.gitignore"]
        == b"/.cache/\n# ours\n# codexmem: local state, never committed\n/.lock\n/.journal/\n"
    )
    # Every file created or changed is printed, and nothing else changed.
    changed = sorted(k for k in after if before.get(k) != after[k])
    assert changed == [".gitignore", "memory/.gitattributes", "memory/.gitignore", "memory/codexmem.yaml"]
    lines = out.splitlines()
    assert lines[:-1] == [
        "added /.lock, /.journal/ to memory/.gitignore",
        f"added {', '.join(STORE_ATTRIBUTES)} to memory/.gitattributes",
        "created memory/codexmem.yaml",
        "added /_site/ to .gitignore",
    ]
    assert lines[-1].startswith(f"created {mem} for project proj_app_")


def test_a_persons_files_keep_their_permissions_and_a_read_only_one_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every write was a rename of a new 644 file: a group-only file became world-readable and a
    read-only one was replaced; init then failed half-way, leaving a store a rerun refused."""
    repo = make_repo(tmp_path / "app")
    ignore = repo / ".gitignore"
    ignore.write_text("dist/\n")
    ignore.chmod(0o444)
    monkeypatch.chdir(repo)
    before = tree(repo)
    code, out, err = run(capsys, "init")
    assert (code, out) == (2, "")
    assert err == f"codexmem: error: cannot write {ignore}: it is read-only (`chmod u+w` lets codexmem update it)\n"
    assert tree(repo) == before and not (repo / ".codexmem").exists()

    ignore.chmod(0o600)
    assert run(capsys, "init")[0] == 0, "run again once the file is writable: nothing of the first try is in the way"
    assert ignore.read_text() == "dist/\n/_site/\n" and ignore.stat().st_mode & 0o777 == 0o600

    agents = repo / "AGENTS.md"
    agents.write_text("# Team rules\n")
    agents.chmod(0o640)
    assert run(capsys, "agents", "--out", "AGENTS.md", "--mode", "append")[0] == 0
    assert BEGIN_MARKER in agents.read_text() and agents.stat().st_mode & 0o777 == 0o640
    agents.chmod(0o444)
    held = agents.read_bytes()
    code, _out, err = run(capsys, "agents", "--out", "AGENTS.md", "--mode", "overwrite")
    assert code == 2 and "AGENTS.md: it is read-only" in err and agents.read_bytes() == held


def test_init_leaves_the_site_rule_out_when_a_persons_rule_already_ignores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "app")
    (repo / ".gitignore").write_text("_site\n")
    monkeypatch.chdir(repo)
    code, out, err = run(capsys, "init")
    assert (code, err) == (0, "") and "to .gitignore" not in out, out
    assert (repo / ".gitignore").read_text() == "_site\n"


def test_init_refuses_a_store_inside_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, store = repo_with_store(tmp_path, capsys)
    before = tree(repo)
    for inner in (store / "sub", store / "notes" / "x"):
        code, out, err = run(capsys, "init", "--store", str(inner))
        assert (code, out) == (2, "") and f"is inside the store at {store}: give a folder outside it" in err, err
    assert tree(repo) == before


def test_init_refuses_a_linked_store_folder_and_reads_a_linked_gitignore(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    repo = make_repo(tmp_path / "app")
    (repo / ".codexmem").symlink_to(elsewhere)
    monkeypatch.chdir(repo)
    code, _out, err = run(capsys, "init")
    assert code == 2 and "is a symbolic link (to " in err and "git would commit the link" in err, err
    assert list(elsewhere.iterdir()) == [] and not (repo / ".gitignore").exists()

    (repo / ".codexmem").unlink()
    shared = tmp_path / "shared-ignore"
    shared.write_text("node_modules/\n")
    (repo / ".gitignore").symlink_to(shared)
    code, _out, err = run(capsys, "init")
    assert code == 2 and "add these lines to it by hand: /_site/" in err and not (repo / ".codexmem").exists()
    shared.write_text("node_modules/\n/_site/\n")  # done by hand, as told: init goes on
    code, _out, err = run(capsys, "init")
    assert (code, err) == (0, "") and (repo / ".gitignore").is_symlink()


def test_ensure_lines_adds_each_missing_line_once(tmp_path: Path) -> None:
    path = tmp_path / ".gitattributes"
    wanted = GitLines(("a merge=union", "b -diff"), "# why")
    first = ensure_lines(path, wanted)
    assert [(c.created, c.added) for c in first] == [(True, ("a merge=union", "b -diff"))]
    assert path.read_text() == wanted.text() == "# why\na merge=union\nb -diff\n"
    assert ensure_lines(path, wanted) == []
    # A line added to the constant later reaches a file that has the others, without the comment again.
    more = GitLines((*wanted.lines, "c merge=union"), "# why")
    assert [c.added for c in ensure_lines(path, more)] == [("c merge=union",)]
    assert path.read_text() == "# why\na merge=union\nb -diff\nc merge=union\n"
    assert STORE_GIT_FILES[".gitattributes"].lines == STORE_ATTRIBUTES


def test_a_store_in_a_work_tree_declares_its_project_unless_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "memory-repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], env=GIT_ENV, check=True)
    monkeypatch.chdir(repo)
    code, out, _ = run(capsys, "init", "--store", ".")  # the root of a new repository: only .git there
    assert code == 0 and "for project proj_memory_repo_" in out
    [project] = load_yaml((repo / "codexmem.yaml").read_text())["projects"]
    nested = make_repo(tmp_path / "web")
    assert run(capsys, "init", "--store", str(nested / "mem"))[0] == 0
    assert load_yaml((nested / "mem" / "codexmem.yaml").read_text())["projects"][0]["name"] == "web"
    other = tmp_path / "team"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], env=GIT_ENV, check=True)
    code, out, _ = run(capsys, "init", "--store", str(other), "--shared")
    assert code == 0 and "shared store" in out
    assert "projects" not in load_yaml((other / "codexmem.yaml").read_text())
    assert project["name"] == "memory-repo"


# ------------------------------------------------------------------ site --out must be a folder


def test_site_out_naming_a_file_is_refused_and_the_file_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "web")
    assert run(capsys, "init", "--store", str(repo / ".codexmem"))[0] == 0
    notes = repo / "notes.txt"
    notes.write_text("my notes\n")
    for out in (notes, notes / "site"):
        code, printed, err = run(capsys, "site", "--store", str(repo / ".codexmem"), "--out", str(out), "--no-search")
        assert code == 2 and printed == ""
        assert (
            err
            == f"codexmem: error: --out {out}: {notes} is a file, not a folder; give a folder (it is made if missing)\n"
        )
    assert notes.read_text() == "my notes\n"


def test_site_out_naming_a_folder_of_a_persons_pages_replaces_none_of_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "web")
    assert run(capsys, "init", "--store", str(repo / ".codexmem"))[0] == 0
    docs = repo / "docs"
    docs.mkdir()
    (docs / "index.html").write_text("<h1>Our docs</h1>\n")
    code, printed, err = run(capsys, "site", "--store", str(repo / ".codexmem"), "--out", str(docs), "--no-search")
    assert code == 2 and printed == ""
    assert err.startswith(f"codexmem: error: {docs} holds index.html, which a build writes, and no codexmem site")
    assert err.count("\n") == 1 and "--out" in err
    assert sorted(p.name for p in docs.iterdir()) == ["index.html"]
    assert (docs / "index.html").read_text() == "<h1>Our docs</h1>\n"

    # Pages of its own beside the site's would be shadowed by its index.html and .nojekyll.
    (docs / "index.html").unlink()
    (docs / "index.md").write_text("# Our docs\n")
    (docs / "guide.md").write_text("# Guide\n")
    code, printed, err = run(capsys, "site", "--store", str(repo / ".codexmem"), "--out", str(docs), "--no-search")
    assert code == 2 and printed == ""
    assert f"{docs} holds files of its own (guide.md, index.md), and no codexmem site build wrote them" in err
    assert f"such as {repo / '_site'}" in err
    assert sorted(p.name for p in docs.iterdir()) == ["guide.md", "index.md"]


def test_site_out_among_the_stores_or_gits_files_is_refused_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, store = repo_with_store(tmp_path, capsys)
    (tmp_path / "to-store").symlink_to(store)
    before, status = tree(repo), git_status(repo)
    inside_git = git_files(repo)
    reasons = {
        repo: f"it holds the store ({store}), and the site would land among its other files",
        tmp_path: f"it holds the store ({store}), and the site would land among its other files",
        store: f"it is inside the store ({store})",
        store / "notes": f"it is inside the store ({store})",
        tmp_path / "to-store" / "site": f"it is inside the store ({store})",  # through a link, too
        repo / ".git": "it is inside a .git folder",
        repo / ".git" / "site": "it is inside a .git folder",
    }
    for out, reason in reasons.items():
        code, printed, err = run(capsys, "site", "--store", str(store), "--out", str(out), "--no-search")
        assert (code, printed) == (2, ""), out
        assert err == (
            f"codexmem: error: --out {out}: {reason}; give a folder of the site's own, "
            f"such as {repo / '_site'} (the default)\n"
        )
    assert tree(repo) == before and git_status(repo) == status
    assert git_files(repo) == inside_git
    assert run(capsys, "check", "--store", str(store))[0] == 0
    unwritable = Path("/proc/codexmem-site")  # a folder no one can make: said as --out's problem
    code, printed, err = run(capsys, "site", "--store", str(store), "--out", str(unwritable), "--no-search")
    assert (code, printed) == (2, "")
    assert err == f"codexmem: error: --out {unwritable}: cannot write there (No such file or directory)\n"
    assert run(capsys, "site", "--store", str(store), "--no-search")[0] == 0  # the default is beside the store
    assert (repo / "_site" / "index.html").is_file()


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one error line of a refused command line (argparse exits 2 before any work)."""
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0].startswith("usage: codexmem") and lines[-1].startswith("codexmem: error: ")
    return lines[-1]


def test_an_empty_path_option_is_refused_not_read_as_its_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "web")
    monkeypatch.chdir(repo)
    for argv in (("--store", " ", "init"), ("init", "--store", "")):
        assert usage_error(capsys, *argv).startswith("codexmem: error: argument --store: is empty: give a path")
    assert not (repo / ".codexmem").exists()  # not made in the repository's place instead
    assert run(capsys, "init")[0] == 0
    before = tree(repo)
    for argv in (
        ("site", "--out", ""),
        ("agents", "--out", " "),
        ("channels", "add", "--schema", "", "bugs"),
        ("summary", "--store", ""),
    ):
        option = next(a for a in argv if a.startswith("--"))
        assert usage_error(capsys, *argv).startswith(f"codexmem: error: argument {option}: is empty: give a path")
    assert tree(repo) == before


# ------------------------------------------------------------------ agents --out never replaces a person's text


def test_agents_out_writes_only_its_marked_block(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path / "web")
    assert run(capsys, "init", "--store", str(repo / ".codexmem"))[0] == 0
    store = ["--store", str(repo / ".codexmem")]
    target = repo / "AGENTS.md"

    code, out, _ = run(capsys, "agents", *store, "--out", str(target))  # missing: written, as a block
    assert code == 0 and out == f"wrote {target}\n"
    text = target.read_text()
    assert text.startswith(BEGIN_MARKER + "\n") and text.endswith(END_MARKER + "\n")
    assert run(capsys, "agents", *store, "--out", str(target), "--check")[0] == 0

    ours = b"# Team rules\r\n\r\nAlways run make lint.\r\n\r\n"
    tail = b"\r\n## Later notes\r\nkeep me  \r\n"
    stale = text.replace("web", "old-name")
    target.write_bytes(ours + stale.encode() + tail)
    assert run(capsys, "agents", *store, "--out", str(target), "--check")[0] == 1
    code, out, _ = run(capsys, "agents", *store, "--out", str(target))  # with markers: only the block
    assert code == 0 and "updated the codexmem block" in out
    # Every byte around the block kept; the block takes the file's CRLF line ending.
    block = text.removesuffix("\n").replace("\n", "\r\n")
    assert target.read_bytes() == ours + block.encode() + b"\n" + tail
    code, out, err = run(capsys, "agents", *store, "--out", str(target), "--check")
    assert (code, err) == (0, "")  # hand-written text around the block passes

    hand = tmp_path / "HAND.md"
    hand.write_bytes(b"# Ours only\n")
    code, out, err = run(capsys, "agents", *store, "--out", str(hand))  # no markers: left alone
    assert (code, out) == (2, "")
    [line] = err.splitlines()
    assert line.startswith("codexmem: error: ") and "--mode append" in line and "--mode overwrite" in line
    assert hand.read_bytes() == b"# Ours only\n"
    code, out, err = run(capsys, "agents", *store, "--out", str(hand), "--check")
    assert code == 1 and "--mode append" in err
    assert run(capsys, "agents", *store, "--out", str(hand), "--mode", "append")[0] == 0
    assert hand.read_text().startswith("# Ours only\n\n" + BEGIN_MARKER)
    assert run(capsys, "agents", *store, "--out", str(hand), "--check")[0] == 0
    assert run(capsys, "agents", *store, "--out", str(hand), "--mode", "overwrite")[0] == 0
    assert hand.read_text() == text

    windows = tmp_path / "WINDOWS.md"  # a person's CRLF file: appended to, it stays CRLF throughout
    windows.write_bytes(b"# Rules\r\n\r\nRun the tests.\r\n")
    assert run(capsys, "agents", *store, "--out", str(windows), "--mode", "append")[0] == 0
    raw = windows.read_bytes()
    assert raw.startswith(b"# Rules\r\n\r\nRun the tests.\r\n\r\n" + BEGIN_MARKER.encode() + b"\r\n")
    assert raw.count(b"\n") == raw.count(b"\r\n") > 10 and raw.endswith(END_MARKER.encode() + b"\r\n")
    assert run(capsys, "agents", *store, "--out", str(windows), "--check")[0] == 0
    code, out, _ = run(capsys, "agents", *store, "--out", str(windows))
    assert (code, out, windows.read_bytes()) == (0, f"{windows} is up to date\n", raw)


def test_agents_out_inside_the_store_or_git_or_naming_a_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, store = repo_with_store(tmp_path, capsys)
    before = own_files(repo)
    inside_git = git_files(repo)
    fix = "give the AGENTS.md of a work tree"
    in_git = repo / ".git" / "AGENTS.md"
    reasons = {
        store / "AGENTS.md": f"--out {store / 'AGENTS.md'}: it is inside the store ({store}); {fix}",
        store: f"--out {store}: it is inside the store ({store}); {fix}",
        in_git: f"--out {in_git}: it is inside a .git folder; {fix}",
        repo: f"--out {repo} is a folder: give the file, such as {repo / 'AGENTS.md'}",
    }
    for out, message in reasons.items():
        for extra in ((), ("--check",)):
            code, printed, err = run(capsys, "agents", "--store", str(store), "--out", str(out), *extra)
            assert (code, printed, err) == (2, "", f"codexmem: error: {message}\n"), (out, extra)
    code, printed, err = run(capsys, "agents", "--global", "--out", str(repo / ".git" / "AGENTS.md"))
    assert (code, printed) == (2, "") and "it is inside a .git folder" in err
    assert own_files(repo) == before
    assert git_files(repo) == inside_git


# ------------------------------------------------------------------ errors in the CLI's words


def test_a_refused_option_of_a_field_of_many_names_the_nearest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A field of 300 options: the refusal lists the 25 nearest the value sent, and says so."""
    root, _ = bugs_store(tmp_path / "s", 0)
    (tmp_path / "parts.yaml").write_text(dump_yaml(parts_schema(300)), "utf-8")
    store = ["--store", str(root)]
    assert run(capsys, "channels", "add", "--schema", str(tmp_path / "parts.yaml"), "parts", *store)[0] == 0
    code, item, _ = run(capsys, "items", "add", "parts", "--json", '{"title": "Bolt", "component": "comp_5"}', *store)
    assert code == 0
    code, out, err = run(
        capsys, "items", "edit", "parts", item.strip(), "--json", '{"component": "Component 217"}', *store
    )
    assert code == 2 and out == ""
    line = err.splitlines()[1]
    assert line.startswith('  values.component must be one of the option values, got "Component 217"')
    assert '(that is the label of "comp_217"); allowed values nearest it (25 of 300): ' in line
    assert line.count(" (Component ") == 25 and "comp_217 (Component 217)" in line


def test_errors_name_cli_commands_and_the_allowed_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, ids = bugs_store(tmp_path / "s", 2)
    store = ["--store", str(root)]
    seen: list[str] = []

    def error(*argv: str) -> str:
        code, out, err = run(capsys, *argv, *store)
        assert code == 2 and out == "", err
        seen.append(err)
        assert err.startswith("codexmem: error: ") and err.count("codexmem: error: ") == 1
        return err

    err = error("items", "list", "nope")
    assert err == "codexmem: error: no channel 'nope'; the channels are bugs (`codexmem channels list`)\n"
    err = error("items", "rm", "bugs", "item_01JH0000000000000000000000")
    assert "`codexmem items list bugs` shows its items" in err
    err = error("items", "edit", "bugs", ids[0], "--json", '{"severity": "Major"}')
    lines = err.splitlines()
    assert lines[0] == "codexmem: error: refused, nothing was written: 1 value not accepted"
    [severity] = [o for o in BUGS_SCHEMA["fields"] if o["key"] == "severity"]
    shown = ", ".join(f"{o['value']} ({o['label']})" for o in severity["config"]["options"])
    assert lines[1].endswith(f"; allowed values: {shown}") and len(lines) == 2
    err = error("items", "edit", "bugs", ids[0], "--json", '{"points": 3}', "--expected-version", "7")
    assert "--expected-version 1" in err and "codexmem items list bugs" in err
    err = error(
        "items", "add", "bugs", "--json", '{"ticket": "T-9", "title": "db password=hunter2hunter2", "status": "new"}'
    )
    assert err.splitlines()[1] == "  values.title: looks like a credential (password); remove it or store a reference"
    assert "hunter2hunter2" not in err
    err = error("items", "edit", "bugs", "nope", "--json", "{}")
    assert err.count("item_<ULID>") == 1, err  # the problem is said once, not again under its field
    for text in seen:
        assert not any(word in text for word in MCP_WORDS), text


def test_store_goes_before_or_after_the_action(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, _ = bugs_store(tmp_path / "s", 1)
    for argv in (
        ["channels", "--store", str(root), "list"],
        ["channels", "list", "--store", str(root)],
        ["--store", str(root), "channels", "list"],
    ):
        assert run(capsys, *argv) == (0, "bugs\t1 item\tBugs\n", "")
    code, out, _ = run(capsys, "items", "--store", str(root), "list", "bugs")
    assert code == 0 and out.splitlines()[-1] == "(1 item)"
    # Given twice, the one nearer the action wins.
    code, _, err = run(capsys, "items", "--store", str(tmp_path / "nowhere"), "list", "bugs", "--store", str(root))
    assert (code, err) == (0, "")


def test_limits_are_checked_and_a_short_list_says_how_many_there_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = bugs_store(tmp_path / "s", 3)
    for bad in ("-1", "0", "many"):
        with pytest.raises(SystemExit) as exit_info:
            main(["items", "list", "bugs", "--limit", bad, "--store", str(root)])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err.splitlines()
        assert err[0].startswith("usage: codexmem items list") and len(err) == 2
        assert err[1].startswith("codexmem: error: argument --limit: must be") and bad in err[1]
    code, out, _ = run(capsys, "items", "list", "bugs", "--limit", "1", "--store", str(root))
    assert code == 0 and out.splitlines()[-1] == "(1 of 3 items; raise --limit for more)"
    code, out, _ = run(capsys, "items", "list", "bugs", "--limit", "9" * 40, "--store", str(root))
    assert code == 0 and out.splitlines()[-1] == "(3 items)" and len(out.splitlines()) == 5


# ------------------------------------------------------------------ which store, and exit codes


def test_a_path_that_is_not_a_store_is_explained_with_where_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "web")
    assert run(capsys, "init", "--store", str(repo / ".codexmem"))[0] == 0
    code, out, err = run(capsys, "check", "--store", str(repo))
    assert (code, out) == (2, "")
    assert err == (
        f"codexmem: error: {repo} (given by --store) is not a store but holds one at {repo / '.codexmem'}: "
        f"pass --store {repo / '.codexmem'}\n"
    )
    bare = make_repo(tmp_path / "api")
    code, _, err = run(capsys, "summary", "--store", str(bare))
    assert code == 2 and "is a git repository, not a store" in err and "`codexmem init` inside it" in err
    monkeypatch.setenv("CODEXMEM_STORE", str(tmp_path / "typo"))
    code, _, err = run(capsys, "check")
    assert code == 2
    assert err.startswith(f"codexmem: error: no store at {tmp_path / 'typo'} (from $CODEXMEM_STORE)")
    assert "set CODEXMEM_STORE to" in err and "unset it" in err
    monkeypatch.delenv("CODEXMEM_STORE")
    monkeypatch.chdir(bare)
    code, _, err = run(capsys, "check")
    assert code == 2 and "this repository has no store yet" in err and "run `codexmem init`" in err


def test_exit_codes_agree_across_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, ids = bugs_store(tmp_path / "s", 2)
    missing = str(tmp_path / "none")
    for command in (["check"], ["summary"], ["reindex"], ["channels", "list"], ["items", "list", "bugs"], ["agents"]):
        assert run(capsys, *command, "--store", missing)[0] == 2, command
    # The merge driver typed by hand: git's own "Could not stat" and exit 1 (a conflict's code) before.
    code, _, err = run(capsys, "merge-file", missing, missing, missing, "x.yaml")
    assert code == 2 and err.startswith(
        f"codexmem: error: BASE: must be a file (git passes %O, %A and %B), got {missing!r}"
    )
    (root / "channels" / "bugs" / "items" / f"{ids[0]}.yaml").write_text("values: [unclosed\n")
    assert run(capsys, "check", "--store", str(root))[0] == 1  # a finding
    code, out, _ = run(capsys, "summary", "--store", str(root))  # a report: 0, and it says what is wrong
    assert code == 0 and "unreadable files: 1 (run `codexmem check`)" in out
    # Reports built without a file say so too (they left it out without a word before).
    for command in (["items", "list", "bugs"], ["channels", "list"], ["stale"], ["site", "--no-search"]):
        code, out, err = run(capsys, *command, "--store", str(root))
        assert code == 0 and "codexmem: warning: 1 unreadable file of the store left out (channels/bugs/items/" in err
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    section = readme.split("### Exit codes", 1)[1].split("\n## ", 1)[0]
    for code_text in ("| 0 |", "| 1 |", "| 2 |", "| 70 |"):
        assert code_text in section


# ------------------------------------------------------------------ counts


def test_counts_are_grammatical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, _ = bugs_store(tmp_path / "s", 1)
    one_field = tmp_path / "one.yaml"
    one_field.write_text(dump_yaml({"name": "One", "fields": [{"key": "x", "label": "X", "type": "text"}]}))
    outputs = [
        run(capsys, "channels", "add", "one", "--schema", str(one_field), "--store", str(root))[1],
        run(capsys, "channels", "list", "--store", str(root))[1],
        run(capsys, "items", "list", "bugs", "--store", str(root))[1],
        run(capsys, "summary", "--store", str(root))[1],
        run(capsys, "check", "--store", str(root))[1],
        run(capsys, "reindex", "--store", str(root))[1],
    ]
    text = "\n".join(outputs)
    assert "added channel one (1 field)" in text and "(1 item)" in text and "bugs\t1 item\tBugs" in text
    assert ONE_PLURAL.findall(text) == [], text
    assert ONE_PLURAL.findall("(1 items) 1 fields 2 items") == ["1 items", "1 fields"]  # the check itself works


def test_cli_secret_refusal_writes_nothing(tmp_path: Path) -> None:
    root, _ = bugs_store(tmp_path / "s", 0)
    done = run_cli(
        "items",
        "add",
        "bugs",
        "--json",
        '{"ticket": "T-1", "title": "db password=hunter2hunter2", "status": "new"}',
        "--store",
        str(root),
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert not list((root / "channels" / "bugs" / "items").glob("*.yaml"))


def _read_until(fd: int, marker: bytes, seen: bytearray, seconds: float = 20.0) -> bool:
    """Read a terminal's output into ``seen`` until ``marker`` shows (False: it did not in time)."""
    import select

    deadline = time.monotonic() + seconds
    while marker not in seen and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the terminal closed: the process ended
                break
    return marker in seen


def test_serve_typed_in_a_terminal_says_what_it_is_answers_and_ends_on_ctrl_c(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A person who runs ``codexmem serve`` by hand learns what it is, and Ctrl-C ends it (the SDK's
    stdin thread kept it running until a line was typed)."""
    pty = pytest.importorskip("pty")
    _, store = repo_with_store(tmp_path, capsys)
    pid, fd = pty.fork()
    if pid == 0:  # the child: the program itself, on the terminal
        try:
            os.execv(sys.executable, [sys.executable, "-m", "codexmem", "--store", str(store), "serve"])
        finally:
            os._exit(127)  # never run the test's own code in the child
    seen = bytearray()
    try:
        assert _read_until(fd, b"Ctrl-C ends it.", seen), bytes(seen)
        assert b"codexmem serve: the MCP server" in seen and b"Registering the server with Codex" in seen
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "a person", "version": "1"},
        }
        request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        os.write(fd, json.dumps(request).encode() + b"\n")
        assert _read_until(fd, b'"serverInfo"', seen), bytes(seen)  # it still serves what is typed
        os.write(fd, b"\x03")
        deadline = time.monotonic() + 20
        while (ended := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ended[0] == pid, "Ctrl-C did not end codexmem serve"
        assert os.WIFSIGNALED(ended[1]) and os.WTERMSIG(ended[1]) == signal.SIGINT
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)


def test_output_read_by_head_ends_quietly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``codexmem summary | head -0``: the reader is gone before the first line, so the program ends
    quietly with 141 (it said "codexmem: error: Broken pipe" and exited 2, as for bad input)."""
    _, store = repo_with_store(tmp_path, capsys)
    read, write = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-m", "codexmem", "--store", str(store), "summary"],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(write)
    os.close(read)  # before the program has written anything: its first write finds no reader
    _, err = child.communicate(timeout=60)
    assert (child.returncode, err) == (141, "")
    code, out, err = run(capsys, "--store", str(store), "summary")  # a reader that stays: all of it
    assert code == 0 and out and not err


def test_output_in_an_encoding_without_a_character_shows_a_question_mark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ASCII terminal (the C locale, Python's UTF-8 coercion off): a title's ``★`` and ``→`` print
    as ``?``; it was an internal error (UnicodeEncodeError)."""
    root, _ = bugs_store(tmp_path / "s", 0)
    title = json.dumps({"ticket": "BUG-0001", "title": "Retry ★ storm → timeout", "status": "new"})
    assert run(capsys, "--store", str(root), "items", "add", "bugs", "--json", title)[0] == 0
    ascii_only = {**os.environ, "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}
    shown = run_cli("--store", str(root), "items", "list", "bugs", env=ascii_only)
    assert (shown.returncode, shown.stderr) == (0, "")
    assert "Retry ? storm ? timeout" in shown.stdout


def test_item_values_come_from_stdin_or_a_file_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--json -`` reads stdin and ``--json @FILE`` a file (a long description quotes badly in a shell);
    a wrong source is one line naming ``--json`` (both were "not valid JSON: Expecting value")."""
    root, _ = bugs_store(tmp_path / "s", 0)
    store = ["--store", str(root)]
    text = 'Line one.\nIt\'s "quoted" and → long.'
    values_in = {"ticket": "BUG-0001", "title": "From stdin", "status": "new", "description": text}
    piped = run_cli("items", "add", "bugs", "--json", "-", *store, input=json.dumps(values_in))
    assert (piped.returncode, piped.stderr) == (0, "")
    from_stdin = piped.stdout.strip()
    values = tmp_path / "edit.json"
    values.write_text(json.dumps({"status": "triaged"}), "utf-8")
    assert run(capsys, "items", "edit", "bugs", from_stdin, "--json", f"@{values}", *store)[0] == 0
    code, out, _ = run(capsys, "items", "list", "bugs", *store)
    assert code == 0 and "From stdin" in out and "triaged" in out
    [item_file] = root.rglob(f"{from_stdin}*")
    assert load_yaml(item_file.read_bytes())["values"]["description"] == text  # every character as sent

    for stdin, said in [(subprocess.DEVNULL, "--json: stdin is empty"), (None, "--json -: stdin is closed")]:
        closed = {"preexec_fn": lambda: os.close(0)} if stdin is None else {"stdin": stdin}
        refused = run_cli("items", "add", "bugs", "--json", "-", *store, **closed)
        assert (refused.returncode, refused.stdout) == (2, "") and refused.stderr.startswith(f"codexmem: error: {said}")
    (tmp_path / "latin.json").write_bytes(b'{"title": "caf\xe9"}')
    for source, said in [
        ("@", "--json @: name the file after @"),
        (f"@{tmp_path / 'missing.json'}", f"--json: cannot read {tmp_path / 'missing.json'}: No such file"),
        (f"@{tmp_path}", f"--json: cannot read {tmp_path}: Is a directory"),
        (f"@{tmp_path / 'latin.json'}", f"--json: {tmp_path / 'latin.json'} is not UTF-8 (byte 14)"),
    ]:
        code, out, err = run(capsys, "items", "add", "bugs", "--json", source, *store)
        assert (code, out) == (2, "") and err.startswith(f"codexmem: error: {said}"), err


def test_a_broken_event_line_names_the_fix_and_the_fix_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A line broken by hand in the middle of an events file was "malformed event: not a JSON line",
    with no word of what to do (`resolve` has nothing to record for it)."""
    root, _ = bugs_store(tmp_path / "s", 1)
    [shard] = sorted((root / "events").rglob("*.jsonl"))
    lines = shard.read_text().splitlines(keepends=True)
    shard.write_text("".join([*lines[:1], '{"broken\n', *lines[1:]]))
    code, out, _ = run(capsys, "check", "--store", str(root))
    assert code == 1 and ":2: error: malformed event: not a JSON line" in out, out
    assert "a hand edit broke it; put the line back as git has it" in out and "or delete it" in out
    shard.write_text("".join(lines))
    assert run(capsys, "check", "--store", str(root))[0] == 0


def test_options_that_would_be_ignored_are_refused_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each was accepted and silently did nothing (or something else): --port without --serve,
    --now "" (today), --stat with --format json (text), --project with --shared (no project)."""
    root, _ = bugs_store(tmp_path / "s", 1)
    store = ("--store", str(root))
    for argv, says in (
        (("site", "--port", "8080", "--no-search"), "--port is the port of --serve"),
        (("site", "--now", "", "--no-search"), "--now must be a date or time"),
        (("diff", "--stat", "--format", "json"), "--stat: prints text"),
    ):
        code, out, err = run(capsys, *argv, *store)
        assert (code, out) == (2, "") and says in err, (argv, err)
    code, _, err = run(capsys, "init", "--shared", "--project", "web", "--store", str(tmp_path / "new"))
    assert code == 2 and "--project: names the store's own project, and --shared declares none" in err
    assert not (tmp_path / "new").exists()
    # A byte order mark first (some editors write one) is not part of the JSON.
    code, out, err = run(
        capsys, "items", "add", "bugs", "--json", '\ufeff{"ticket": "BUG-7", "title": "t", "status": "new"}', *store
    )
    assert code == 0 and out.startswith("item_"), err


def test_files_git_ignores_in_the_store_never_fail_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Finder .DS_Store or an editor's backup is never committed: it failed the pre-commit hook."""
    repo, store = repo_with_store(tmp_path, capsys)
    excludes = tmp_path / "global-excludes"
    excludes.write_text(".DS_Store\n*~\n")
    subprocess.run(["git", "config", "core.excludesFile", str(excludes)], cwd=repo, env=GIT_ENV, check=True)
    (store / ".DS_Store").write_bytes(b"\0\1")
    (store / "notes").mkdir(exist_ok=True)
    (store / "notes" / "note_x.md~").write_text("backup\n")
    (store / "notes" / "scratch.txt").write_text("not ignored\n")
    code, out, _err = run(capsys, "check", "--store", str(store))
    assert code == 1 and ".DS_Store" not in out and "note_x.md~" not in out, out
    assert "notes/scratch.txt: error: stray file: " in out
    (store / "notes" / "scratch.txt").unlink()
    code, out, _err = run(capsys, "check", "--store", str(store))
    assert code == 0 and "0 errors" in out, out


def test_refusals_say_the_rule_and_the_fix_in_the_files_own_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A channel id without its rule, a stray file without its fix, and pydantic's "or instance of
    ProjectDecl" (a class of the code) in a message about codexmem.yaml."""
    root, _ = bugs_store(tmp_path / "s", 1)
    code, _, err = run(capsys, "items", "list", "Bugs", "--store", str(root))
    assert code == 2 and "a channel id is lower-case letters, digits, - and _, starting with a letter" in err
    (root / "notes").mkdir(exist_ok=True)
    (root / "notes" / "README.txt").write_text("not a record\n")
    code, out, _ = run(capsys, "check", "--store", str(root))
    assert code == 1 and "notes/README.txt: error: stray file: " in out and "move it out of the store" in out
    (root / "notes" / "README.txt").unlink()
    config = root / "codexmem.yaml"
    config.write_text(config.read_text() + "projects: [5]\n")
    code, out, err = run(capsys, "check", "--store", str(root))
    assert "projects[0]: Input should be a valid dictionary" in out + err and "instance of" not in out + err


def test_ctrl_c_while_the_cli_is_still_loading_ends_quietly(tmp_path: Path) -> None:
    """Pressed in the first 50 ms, Ctrl-C printed a KeyboardInterrupt traceback."""
    interrupt = (
        "import sys\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'codexmem.cli.main':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "from codexmem.cli import entry\n"
        "raise SystemExit(entry())\n"
    )
    done = subprocess.run([sys.executable, "-c", interrupt], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (130, "")
