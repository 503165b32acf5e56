"""The store commands as people and CI run them: init, check, reindex, and how a store is found."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from store_fixtures import GIT_ENV, PYTHON, make_repo, new_store, note_model, start_session, write_note

from codexmem.check import check_store
from codexmem.cli.main import main
from codexmem.store.index.ingest import Ingestion
from codexmem.store.layout import NOTE
from codexmem.store.recordfile import serialize
from codexmem.store.store import Store
from codexmem.store.yamlio import load_yaml


@pytest.fixture(autouse=True)
def _no_store_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEXMEM_STORE", raising=False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------ init


def test_init_in_a_work_tree_creates_the_store_at_the_git_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "order-web", remote="https://user:hunter2@github.com/example/order-web.git")
    (repo / ".gitignore").write_text("node_modules")  # no final newline
    (repo / "src" / "order").mkdir(parents=True)
    monkeypatch.chdir(repo / "src" / "order")
    code, out, err = run(capsys, "init")
    assert (code, err) == (0, "")
    store = repo / ".codexmem"
    config = load_yaml((store / "codexmem.yaml").read_text())
    assert out.splitlines() == [
        f"created {store / '.gitignore'}",
        f"created {store / '.gitattributes'}",
        f"created {store / 'codexmem.yaml'}",
        f"added /_site/ to {repo / '.gitignore'}",
        f"created {store} for project {config['projects'][0]['id']} (order-web); --shared makes a store of no project",
    ]
    assert config["format"] == 2
    [project] = config["projects"]
    assert project["name"] == "order-web"
    assert project["id"].startswith("proj_order_web_")
    assert project["remotes"] == ["https://github.com/example/order-web.git"]  # the password is dropped
    assert config["system"]["id"] == project["system"]
    assert config["privacy"] == {"secrets": "refuse"}
    assert "/.cache/" in (store / ".gitignore").read_text().splitlines()
    assert "/.lock" in (store / ".gitignore").read_text().splitlines()
    attributes = (store / ".gitattributes").read_text().splitlines()
    assert "notes/*.md merge=codexmem" in attributes and "events/** linguist-generated=true" in attributes
    assert (repo / ".gitignore").read_text() == "node_modules\n/_site/\n"
    assert check_store(store).findings == []

    # A second init is refused and changes nothing; so is one pointed at the same store.
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    code, out, err = run(capsys, "init")
    assert code != 0 and out == ""
    assert "already exists" in err and "never overwrites" in err
    code, _, err = run(capsys, "init", "--store", str(store))
    assert code != 0 and "already exists" in err
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before
    # Another store in the same work tree adds the rule of its own site's folder (docs/_site), once.
    code, _, _ = run(capsys, "init", "--store", str(repo / "docs" / "memory"))
    assert code == 0
    assert (repo / ".gitignore").read_text() == "node_modules\n/_site/\n/docs/_site/\n"


def test_init_in_two_repositories_adds_the_site_line_to_each_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("one", "two"):
        repo = make_repo(tmp_path / name)
        (repo / ".gitignore").write_text("/_site/\n*.pyc\n" if name == "two" else "")
        monkeypatch.chdir(repo)
        assert run(capsys, "init")[0] == 0
        assert (repo / ".gitignore").read_text().splitlines().count("/_site/") == 1
    assert (tmp_path / "two" / ".gitignore").read_text() == "/_site/\n*.pyc\n"


def test_the_site_rule_follows_the_store_and_never_hides_a_repositorys_own_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """init always added /_site/: a store at docs/mem builds into docs/_site, which git then offered to
    commit, and a repository that commits its own _site/ had its next page there silently ignored."""
    repo = make_repo(tmp_path / "sub")
    (repo / "docs").mkdir()
    monkeypatch.chdir(repo)
    assert run(capsys, "init", "--store", "docs/mem")[0] == 0
    assert (repo / ".gitignore").read_text() == "/docs/_site/\n"
    assert run(capsys, "site", "--no-search", "--store", "docs/mem")[0] == 0
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
    assert "_site" not in status and (repo / "docs" / "_site" / "index.html").is_file()

    pages = make_repo(tmp_path / "pages")
    (pages / "_site").mkdir()
    (pages / "_site" / "index.html").write_text("<p>our own site</p>\n")
    subprocess.run(["git", "add", "-A"], cwd=pages, check=True, env=GIT_ENV)
    subprocess.run(["git", "commit", "-q", "-m", "pages"], cwd=pages, check=True, env=GIT_ENV)
    monkeypatch.chdir(pages)
    code, out, _ = run(capsys, "init")
    assert code == 0 and "did not create .gitignore (_site/ holds committed files: not ignored)" in out, out
    assert not (pages / ".gitignore").exists()


def test_init_outside_a_repository_needs_a_path_and_makes_a_shared_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "init")
    assert code == 2 and out == ""
    assert err.startswith(f"codexmem: error: no store given and {tmp_path} is not inside a git work tree")
    assert "pass --store PATH or set CODEXMEM_STORE" in err
    # The environment variable names it too, as --help says (init made .codexmem/ at the git root,
    # and outside a repository refused, whatever it held).
    monkeypatch.setenv("CODEXMEM_STORE", str(tmp_path / "from-env"))
    code, out, err = run(capsys, "init")
    assert (code, err) == (0, "") and (tmp_path / "from-env" / "codexmem.yaml").is_file(), err
    monkeypatch.delenv("CODEXMEM_STORE")
    shared = tmp_path / "team-memory"
    code, out, err = run(capsys, "init", "--store", str(shared), "--system", "order-platform")
    assert (code, err) == (0, "")
    assert "shared store" in out
    config = load_yaml((shared / "codexmem.yaml").read_text())
    assert "projects" not in config
    assert config["system"]["name"] == "order-platform"
    assert not (tmp_path / ".gitignore").exists()
    assert check_store(shared).findings == []


# ------------------------------------------------------------------ check


def test_check_passes_a_good_store_and_fails_a_broken_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    good_note = write_note(store, session, title="fine")
    code, out, err = run(capsys, "check", "--store", str(store.root))
    assert (code, err) == (0, "")
    assert out == f"check ok: {store.root}: 2 events, 1 note, 1 session; 0 errors, 0 warnings\n"

    root = store.root
    (root / "notes" / "scratch.txt").write_text("stray\n")
    (root / "stray.yaml").write_text("a: 1\n")
    broken = note_model(session)
    (root / "notes" / f"{broken.note_id}.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    bom = note_model(session, title="saved by an editor that adds a byte order mark")
    (root / "notes" / f"{bom.note_id}.md").write_bytes(b"\xef\xbb\xbf" + serialize(NOTE, bom.model_dump(mode="json")))
    orphan = note_model("sess_01JH0000000000000000000000", title="orphan")
    (root / "notes" / f"{orphan.note_id}.md").write_bytes(serialize(NOTE, orphan.model_dump(mode="json")))
    token = "ghp_" + "A1b2C3d4E5f6" * 3
    leaked = store.read_file(NOTE, good_note)
    assert leaked is not None
    leaked["content"] = f"the deploy token is {token}"
    (root / "notes" / f"{good_note}.md").write_bytes(serialize(NOTE, leaked))

    code, out, err = run(capsys, "check", "--store", str(root))
    assert code == 1 and err == ""
    lines = out.splitlines()
    assert lines[-1].startswith(f"check FAILED: {root}: ")
    errors = [line for line in lines if ": error: " in line]
    by_path = {line.split(": error: ")[0]: line.split(": error: ")[1] for line in errors}
    assert "stray" in by_path["stray.yaml"]
    assert "stray" in by_path["notes/scratch.txt"]
    assert "line" in by_path[f"notes/{broken.note_id}.md"]
    assert "starts with a byte order mark (U+FEFF)" in by_path[f"notes/{bom.note_id}.md"]
    assert "sess_01JH0000000000000000000000 does not exist" in by_path[f"notes/{orphan.note_id}.md"]
    assert "credential" in by_path[f"notes/{good_note}.md"]
    assert token not in out
    code, quiet_out, _ = run(capsys, "check", "--quiet", "--store", str(root))
    assert code == 1
    assert all(": error: " in line for line in quiet_out.splitlines()[:-1])


def test_a_newer_format_is_refused_with_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = new_store(tmp_path / "store")
    config = store.root / "codexmem.yaml"
    config.write_text(config.read_text().replace("format: 2", "format: 3"))
    code, out, _ = run(capsys, "check", "--store", str(store.root))
    assert code == 1
    assert "codexmem.yaml: error: this store has format 3, newer than this codexmem understands (2)" in out
    code, out, err = run(capsys, "reindex", "--store", str(store.root))
    assert code == 2 and out == ""
    assert err.startswith("codexmem: error: this store has format 3") and "upgrade codexmem" in err


# ------------------------------------------------------------------ reindex


def noted_without_index(store: Store) -> Path:
    """Five notes saved in a session, then the index deleted (a fresh clone, an upgrade): its path."""
    session = start_session(store)
    for i in range(5):
        write_note(store, session, title=f"note {i}")
    store.index.close()
    index_file = store.root / ".cache" / "index.sqlite"
    drop_index(index_file)
    return index_file


def drop_index(index_file: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(index_file) + suffix).unlink(missing_ok=True)


def test_reindex_rebuilds_the_index_from_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = new_store(tmp_path / "store")
    index_file = noted_without_index(store)
    (store.root / "notes" / "note_broken.md").write_text("not a record\n")
    code, out, err = run(capsys, "reindex", "--store", str(store.root))
    assert (code, err) == (0, "")
    assert "reindexed 6 records and 6 events" in out
    assert out.count("notes/note_broken.md: skipped: ") == 1, out  # once, though it is read twice (racy)
    assert index_file.exists()


def test_reindex_and_setup_read_each_record_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing index (a fresh clone, an upgrade) was built twice by ``reindex``: silently when it
    was opened, then again, drawn. Each file is now read once, and ``setup`` builds a fresh clone's
    index so that Codex's first call does not."""
    repo = make_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    assert run(capsys, "init")[0] == 0
    index_file = noted_without_index(Store(repo / ".codexmem"))
    loads: list[str] = []
    real_load = Ingestion._load_file

    def counted(self: Ingestion, conn: Any, rel: str, *args: Any) -> Any:
        loads.append(rel)
        return real_load(self, conn, rel, *args)

    monkeypatch.setattr(Ingestion, "_load_file", counted)
    for command, said in (("reindex", "reindexed 6 records"), ("setup", "index built: 6 record files read")):
        drop_index(index_file)
        loads.clear()
        code, out, err = run(capsys, command)
        assert (code, err) == (0, "") and said in out, out + err
        assert len(loads) == len(set(loads)) == 6, sorted(loads)
    loads.clear()
    code, out, _err = run(capsys, "setup")
    assert code == 0 and "index up to date" in out and loads == []


def test_setup_puts_back_the_stores_gitignore_and_both_say_an_index_they_could_not_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A deleted .codexmem/.gitignore was never put back (git then offered .cache/ to commit), and
    reindex and setup reported an index built and saved where .cache could not be written."""
    repo = make_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    assert run(capsys, "init")[0] == 0
    ignore = repo / ".codexmem" / ".gitignore"
    kept = ignore.read_text()
    ignore.unlink()
    code, out, _ = run(capsys, "setup")
    assert code == 0 and f"added 3 lines to {ignore}" in out and ignore.read_text() == kept
    shutil.rmtree(repo / ".codexmem" / ".cache")
    (repo / ".codexmem" / ".cache").write_text("a file where the cache folder goes")
    for command, said in (("reindex", "in memory only: "), ("setup", "index built in memory only: ")):
        code, out, _ = run(capsys, command)
        assert code == 0 and f"{said}{repo / '.codexmem' / '.cache'} cannot be written" in out, out


def test_init_refuses_a_store_inside_the_git_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing under ``.git`` is ever committed: a store there would be memory no teammate sees."""
    repo = make_repo(tmp_path / "repo")
    monkeypatch.chdir(repo / ".git")
    before = sorted(p.name for p in (repo / ".git").iterdir())
    # The .git folder itself too: it was "not a codexmem store ... such as .git/.codexmem", a path refused in turn.
    for store in ("mem", str(repo / ".git" / "worktrees" / "x" / "mem"), str(repo / ".git")):
        code, out, err = run(capsys, "init", "--store", store)
        assert code == 2 and out == "", out
        assert "it is inside a .git folder, where git keeps its own state and nothing is committed" in err, err
        assert ".git/.codexmem" not in err
    assert sorted(p.name for p in (repo / ".git").iterdir()) == before


def test_init_refuses_what_would_leave_a_half_made_or_unusable_store_before_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A root .gitignore that is a folder failed after the store's files were written (and a second
    init then refused: "a store already exists"); a name of 500 characters, or blank, was written
    into a config every later command refused."""
    repo = make_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    (repo / ".gitignore").mkdir()
    code, out, err = run(capsys, "init")
    assert code == 2 and out == "" and "/.gitignore is not a file: init adds /_site/ to it" in err, err
    assert not (repo / ".codexmem").exists() and git_config(repo, "merge.codexmem.driver") == ""
    (repo / ".gitignore").rmdir()
    for argv, says in (
        (("--project", "a" * 500), "--project: must be at most 200 characters, got 500"),
        (("--system", "s" * 201), "--system: must be at most 200 characters, got 201"),
        (("--project", "  "), "--project: must not be blank"),
        (("--system", "two\nlines"), "--system: must be one line of text"),
    ):
        code, out, err = run(capsys, "init", *argv)
        assert code == 2 and says in err, err
        assert not (repo / ".codexmem").exists()
    code, out, err = run(capsys, "init", "--project", "p" * 200)
    assert code == 0 and run(capsys, "check")[0] == 0, err


def git_config(repo: Path, key: str) -> str:
    done = subprocess.run(["git", "config", key], cwd=repo, capture_output=True, text=True, check=False)
    return done.stdout.strip()


# ------------------------------------------------------------------ which store


def test_store_option_beats_environment_beats_git_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    assert run(capsys, "init")[0] == 0
    from_env = new_store(tmp_path / "env-store").root
    explicit = new_store(tmp_path / "explicit-store").root
    (repo / "deep" / "er").mkdir(parents=True)
    monkeypatch.chdir(repo / "deep" / "er")

    def checked() -> str:
        code, out, _ = run(capsys, "check")
        assert code == 0
        return out.splitlines()[-1]

    assert checked().startswith(f"check ok: {repo / '.codexmem'}: ")
    monkeypatch.setenv("CODEXMEM_STORE", str(from_env))
    assert checked().startswith(f"check ok: {from_env}: ")
    code, out, _ = run(capsys, "check", "--store", str(explicit))
    assert code == 0 and out.splitlines()[-1].startswith(f"check ok: {explicit}: ")


def test_no_store_anywhere_is_an_error_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for command in ("check", "reindex"):
        code, out, err = run(capsys, command)
        assert code == 2 and out == ""
        assert err.startswith(f"codexmem: error: no store given and {tmp_path} is not inside a git work tree")
        assert "--store" in err and "CODEXMEM_STORE" in err
    code, out, err = run(capsys, "reindex", "--store", str(tmp_path / "nothing-here"))
    assert code == 2 and out == "" and "the folder does not exist" in err and "--store" in err


# ------------------------------------------------------------------ as a program


def _program(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, *args], cwd=cwd, env=env or GIT_ENV, capture_output=True, text=True, timeout=120)


def test_python_dash_m_codexmem_help(tmp_path: Path) -> None:
    done = _program("-m", "codexmem", "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: codexmem")
    for command in ("init", "check", "reindex", "serve"):
        assert command in done.stdout
    bad = _program("-m", "codexmem", "no-such-command", cwd=tmp_path)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr and bad.stdout == ""


def test_only_serve_imports_the_mcp_sdk(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store").root
    env = {k: v for k, v in GIT_ENV.items() if k != "CODEXMEM_STORE"}
    script = (
        f"P = {str(store)!r}\n"
        "import sys, contextlib, io\n"
        "from codexmem.cli.main import main\n"
        "for argv in ([], ['--help'], ['check', '--store', P], ['reindex', '--store', P],"
        " ['init', '--store', P + '-new']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        main(argv)\n"
        "    print(argv[:1], 'mcp' in sys.modules)\n"
    )
    done = _program("-c", script, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 5 and all(line.endswith("False") for line in lines), lines
