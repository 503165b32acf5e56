"""Tests for codexmem.gitrepo: discovery against real git repositories, remote normalization."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from codexmem import gitrepo
from codexmem.gitrepo import (
    RepoInfo,
    discover_repository,
    find_git_root,
    name_from_remote,
    normalize_path,
    normalize_remote,
)

# Keep the developer's global/system git config out of the repositories the tests build.
_GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def git(cwd: Path, *args: str) -> str:
    """Run the real git binary (tests only; the module under test never spawns git)."""
    done = subprocess.run(["git", *args], cwd=cwd, env=_GIT_ENV, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def make_repo(path: Path, *, remote: str | None = None, commit: bool = False) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test User")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "commit.gpgsign", "false")
    if remote is not None:
        git(path, "remote", "add", "origin", remote)
    if commit:
        (path / "README.md").write_text("hello\n")
        git(path, "add", "README.md")
        git(path, "commit", "-q", "-m", "init")
    return path


def real(p: Path | str | None) -> str:
    assert p is not None
    return os.path.realpath(p)


def git_path(cwd: Path, flag: str) -> str:
    """Ask git itself where a path is, made absolute, to cross-check discovery."""
    out = git(cwd, "rev-parse", flag)
    return real(cwd / out)


# --------------------------------------------------------------------------------------------------
# normalize_remote / name_from_remote

# The reference table, with its [QUIRK] rows corrected.
REFERENCE_TABLE = [
    ("git@github.com:Example/Codex-Mem.git", "github.com/example/codex-mem", "codex-mem"),
    ("https://github.com/Example/Codex-Mem.git", "github.com/example/codex-mem", "codex-mem"),
    ("https://github.com/example/codex-mem", "github.com/example/codex-mem", "codex-mem"),
    ("https://github.com/example/codex-mem/", "github.com/example/codex-mem", "codex-mem"),
    ("ssh://git@github.com/example/repo.git", "github.com/example/repo", "repo"),
    ("git@github.com:/example/repo.git", "github.com/example/repo", "repo"),
    ("  https://gitlab.example.com/group/sub/Repo.git  ", "gitlab.example.com/group/sub/repo", "repo"),
    ("github.com/Example/Repo", "github.com/example/repo", "repo"),
    # corrected quirks
    ("ssh://git@github.com:22/example/repo.git", "github.com/example/repo", "repo"),
    ("github.com:example/repo", "github.com/example/repo", "repo"),
    ("https://github.com/example/codex-mem.git/", "github.com/example/codex-mem", "codex-mem"),
    ("https://user:pw@GitHub.com/Example/Repo.GIT", "github.com/example/repo", "repo"),
    ("https://github.com/example/repo.git.git", "github.com/example/repo", "repo"),
    # local forms
    ("file:///srv/git/Repo.git", "srv/git/repo", "repo"),
    ("/srv/git/Repo.git", "srv/git/repo", "repo"),
    ("C:\\repos\\Repo.git", "c:/repos/repo", "repo"),
]


@pytest.mark.parametrize(("url", "key", "name"), REFERENCE_TABLE)
def test_reference_table(url: str, key: str, name: str) -> None:
    assert normalize_remote(url) == key
    assert name_from_remote(normalize_remote(url)) == name
    assert normalize_remote(key) == key


@pytest.mark.parametrize(
    ("url", "key"),
    [
        # ports: ssh ports never matter, default https/http ports drop, other ports stay
        ("ssh://git@github.com:2222/example/repo.git", "github.com/example/repo"),
        ("ssh://github.com:22/example/repo", "github.com/example/repo"),
        ("git+ssh://git@github.com:22/example/repo", "github.com/example/repo"),
        ("https://github.com:443/example/repo", "github.com/example/repo"),
        ("http://github.com:80/example/repo", "github.com/example/repo"),
        ("https://git.corp.example:8443/Team/Repo.git", "git.corp.example:8443/team/repo"),
        ("https://git.corp.example:08443/team/repo", "git.corp.example:8443/team/repo"),
        ("http://git.corp.example:8080/team/repo", "git.corp.example:8080/team/repo"),
        ("git://git.kernel.org:9418/pub/linux.git", "git.kernel.org/pub/linux"),
        # trailing slashes and .git suffixes in any case and number
        ("https://github.com/example/repo.git/", "github.com/example/repo"),
        ("https://github.com/example/repo.GIT//", "github.com/example/repo"),
        ("git@github.com:example/repo.Git.git/", "github.com/example/repo"),
        ("/srv/git/repo/.git", "srv/git/repo"),
        # credentials, query strings and fragments never reach the key
        ("https://x-access-token:ghp_SECRET@github.com/org/repo.git", "github.com/org/repo"),
        ("https://oauth2:glpat-SECRET@gitlab.com/org/repo?private_token=SECRET#x", "gitlab.com/org/repo"),
        ("https://user:pa/SECRET@github.com/org/repo", "github.com/org/repo"),
        ("user:SECRET@github.com:org/repo", "github.com/org/repo"),
        ("ssh://user:SECRET@github.com/org/repo", "github.com/org/repo"),
        # scp-like details
        ("git@github.com:org/re@po.git", "github.com/org/re@po"),
        ("GIT@GITHUB.COM:ORG/REPO.GIT", "github.com/org/repo"),
        ("git@[::1]:org/repo", "[::1]/org/repo"),
        ("ssh://git@[::1]:2222/org/repo", "[::1]/org/repo"),
        ("https://[::1]:8443/org/repo", "[::1]:8443/org/repo"),
        ("https://github.com//org/./repo", "github.com/org/repo"),
        # local paths and file urls
        ("file://localhost/srv/Repo.git", "srv/repo"),
        ("FILE:///C:/Repos/Repo.git", "c:/repos/repo"),
        ("\\\\server\\share\\Repo.git", "server/share/repo"),
        ("./relative/Repo.git", "relative/repo"),
        # empty stays empty
        ("", ""),
        ("   \t\n", ""),
    ],
)
def test_normalize_remote_edge_cases(url: str, key: str) -> None:
    assert normalize_remote(url) == key
    assert "secret" not in normalize_remote(url)
    assert normalize_remote(key) == key


def test_non_default_port_is_a_different_server() -> None:
    assert normalize_remote("https://git.corp.example:8443/team/repo") != normalize_remote(
        "https://git.corp.example/team/repo"
    )


def test_two_repositories_named_app_are_distinct() -> None:
    keys = {
        normalize_remote("git@github.com:alpha/app.git"),
        normalize_remote("https://github.com/beta/app"),
        normalize_remote("https://gitlab.com/alpha/app.git"),
    }
    assert keys == {"github.com/alpha/app", "github.com/beta/app", "gitlab.com/alpha/app"}
    assert {name_from_remote(k) for k in keys} == {"app"}


def test_name_from_remote() -> None:
    assert name_from_remote("github.com/example/codex-mem") == "codex-mem"
    assert name_from_remote("srv/git/repo") == "repo"
    assert name_from_remote("github.com") == "github.com"
    assert name_from_remote("") == ""


_label = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)
_hosts = st.lists(_label, min_size=2, max_size=3).map(".".join)
_segment = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789"),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", max_size=8),
)
_paths = st.lists(_segment, min_size=1, max_size=3).map("/".join)
_FORMS = [
    "git@{host}:{path}",
    "{user}@{host}:/{path}",
    "{host}:{path}",
    "ssh://{user}@{host}/{path}",
    "ssh://{user}@{host}:{port}/{path}",
    "ssh://{host}/{path}",
    "https://{host}/{path}",
    "https://{host}:443/{path}",
    "https://{user}:{secret}@{host}/{path}",
    "http://{host}/{path}",
    "{host}/{path}",
]


@settings(max_examples=300)
@given(
    host=_hosts,
    path=_paths,
    form=st.sampled_from(_FORMS),
    user=_label,
    port=st.integers(min_value=1, max_value=65535),
    suffix=st.sampled_from(["", ".git", ".GIT", ".git.git", ".Git/"]),
    slash=st.booleans(),
    case=st.sampled_from([str.lower, str.upper, str.swapcase, str.title]),
    pad=st.sampled_from(["", " ", "\t", "\n "]),
)
def test_forms_of_one_repository_share_a_key(
    host: str,
    path: str,
    form: str,
    user: str,
    port: int,
    suffix: str,
    slash: bool,
    case: object,
    pad: str,
) -> None:
    assert callable(case)
    # "host:123/x" without a user is read as host and port (the shape of our own kept-port keys),
    # so the user-less scp form is only a repository path when its first segment is not a number.
    assume(not (form == "{host}:{path}" and path.split("/", 1)[0].isdigit()))
    expected = f"{host}/{path}"
    url = form.format(host=host, path=path, user=user, port=port, secret="pw!" + user)
    url = case(url + suffix + ("/" if slash else ""))
    key = normalize_remote(pad + url + pad)
    assert key == expected
    assert normalize_remote(key) == key
    assert normalize_remote(url.upper()) == normalize_remote(url.lower()) == key
    assert normalize_remote(url + ".git") == key
    assert normalize_remote(url + "/") == key
    assert "!" not in key
    assert name_from_remote(key) == path.rsplit("/", 1)[-1]


@settings(max_examples=500)
@given(st.text(max_size=40))
def test_normalize_remote_is_idempotent_on_any_text(text: str) -> None:
    key = normalize_remote(text)
    assert normalize_remote(key) == key


@settings(max_examples=500)
@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40))
def test_normalize_remote_ignores_ascii_case(text: str) -> None:
    assert normalize_remote(text.upper()) == normalize_remote(text.lower()) == normalize_remote(text)


# --------------------------------------------------------------------------------------------------
# normalize_path


def test_normalize_path_is_absolute_clean_and_without_trailing_slash(tmp_path: Path) -> None:
    base = tmp_path.as_posix()
    assert normalize_path(tmp_path / "a" / ".." / "b" / "") == f"{base}/b"
    assert normalize_path(f"{base}/b/") == f"{base}/b"
    assert normalize_path(f"{base}//b/./c") == f"{base}/b/c"
    assert normalize_path("/") == "/"
    assert normalize_path("//srv") == "/srv"
    assert normalize_path("rel/dir") == Path.cwd().joinpath("rel/dir").as_posix()


# --------------------------------------------------------------------------------------------------
# discovery against real repositories


def test_repository_root_remote_and_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", remote="git@github.com:Example/Proj.git")
    info = discover_repository(repo)
    assert info == RepoInfo(
        has_git=True,
        root=repo,
        git_dir=repo / ".git",
        common_dir=repo / ".git",
        remote="git@github.com:Example/Proj.git",
        branch="main",
    )
    assert real(info.root) == real(git(repo, "rev-parse", "--show-toplevel"))
    assert real(info.git_dir) == git_path(repo, "--git-dir")
    assert find_git_root(repo) == repo
    assert normalize_remote(info.remote) == "github.com/example/proj"


def test_subdirectory_and_missing_subdirectory_resolve_to_root(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", remote="https://github.com/example/proj.git")
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    top = discover_repository(repo)
    for cwd in (deep, str(deep) + "/", deep / "does" / "not" / "exist", f"{deep}/../pkg/./"):
        info = discover_repository(cwd)
        assert info == top
        assert find_git_root(cwd) == repo
    assert real(git(deep, "rev-parse", "--show-toplevel")) == real(top.root)


def test_relative_cwd_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "proj")
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo)
    assert discover_repository("sub").root == repo
    assert discover_repository(".").root == repo


def test_origin_wins_and_first_remote_is_the_fallback(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", remote=None)
    git(repo, "remote", "add", "upstream", "https://github.com/upstream/proj.git")
    assert discover_repository(repo).remote == "https://github.com/upstream/proj.git"
    git(repo, "remote", "add", "fork", "https://github.com/fork/proj.git")
    assert discover_repository(repo).remote == "https://github.com/upstream/proj.git"
    git(repo, "remote", "add", "origin", "git@github.com:me/proj.git")
    assert discover_repository(repo).remote == "git@github.com:me/proj.git"


def test_repository_without_remote(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    info = discover_repository(repo)
    assert info.has_git
    assert info.remote == ""
    assert info.branch == "main"


def test_branch_change_keeps_root_and_remote(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", remote="https://github.com/example/proj", commit=True)
    before = discover_repository(repo)
    git(repo, "checkout", "-q", "-b", "feature/x")
    after = discover_repository(repo)
    assert after.branch == "feature/x"
    assert (after.root, after.remote, after.git_dir, after.common_dir) == (
        before.root,
        before.remote,
        before.git_dir,
        before.common_dir,
    )


def test_detached_head_has_no_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", remote="https://github.com/example/proj", commit=True)
    git(repo, "checkout", "-q", "--detach")
    info = discover_repository(repo)
    assert info.branch == ""
    assert info.root == repo
    assert info.remote == "https://github.com/example/proj"


def _branch_apart_from_main(repo: Path, branch: str) -> None:
    """``branch`` and ``main`` change one line apart (rebasing the branch stops on it); on ``main``."""
    git(repo, "checkout", "-q", "-b", branch)
    (repo / "README.md").write_text("branch\n")
    git(repo, "commit", "-q", "-am", "branch")
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("main\n")
    git(repo, "commit", "-q", "-am", "main")


@pytest.mark.parametrize("backend", ["--merge", "--apply"])
@pytest.mark.parametrize("in_worktree", [False, True])
def test_a_rebase_is_named_by_the_branch_it_replays(tmp_path: Path, backend: str, in_worktree: bool) -> None:
    """HEAD is detached while a rebase stops on a conflict; the events written then (``codexmem
    resolve``) belong to the branch being rebased, which git keeps in the work tree's own git dir."""
    repo = make_repo(tmp_path / "proj", commit=True)
    _branch_apart_from_main(repo, "feat/Payment_enum")
    work = repo
    if in_worktree:
        work = tmp_path / "wt"
        git(repo, "worktree", "add", "-q", str(work), "feat/Payment_enum")
    else:
        git(repo, "checkout", "-q", "feat/Payment_enum")
    done = subprocess.run(["git", "rebase", backend, "main"], cwd=work, env=_GIT_ENV, capture_output=True, check=False)
    assert done.returncode != 0  # stopped on the conflict
    info = discover_repository(work)
    # HEAD is detached; the branch a session started now is on is the one being rebased (it
    # recorded none, "branch_name": "", before)
    assert info.git_dir is not None and info.branch == "feat/Payment_enum"
    assert gitrepo.work_branch(info.git_dir) == "feat/Payment_enum"
    if in_worktree:  # the main work tree is not rebasing
        assert gitrepo.work_branch(repo / ".git") == "main"
    git(work, "rebase", "--abort")
    assert gitrepo.work_branch(info.git_dir) == "feat/Payment_enum"


def test_a_detached_head_is_named_by_the_checkout_that_detached_it(tmp_path: Path) -> None:
    """Not a branch, so not ``detached`` for all of them (two pull requests would add that one
    file): ``detached-<commit>-<checkout>``, the same through commits on top, another for another
    checkout, even of the same commit; a rebase of a detached HEAD keeps it."""
    repo = make_repo(tmp_path / "proj", commit=True)
    git_dir = repo / ".git"
    assert gitrepo.work_branch(git_dir) == "main"
    start = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "--detach")
    name = gitrepo.work_branch(git_dir)
    assert re.fullmatch(rf"detached-{start[:12]}-[0-9a-f]{{6}}", name), name
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "on top")
    git(repo, "reset", "-q", "--hard", "HEAD")
    assert gitrepo.work_branch(git_dir) == name
    git(repo, "switch", "-q", "-c", "p1")
    assert gitrepo.work_branch(git_dir) == "p1"
    git(repo, "checkout", "-q", start)
    again = gitrepo.work_branch(git_dir)
    assert again != name and again.startswith(f"detached-{start[:12]}-")
    (git_dir / "logs" / "HEAD").unlink()  # no reflog (core.logAllRefUpdates off): the commit alone
    assert gitrepo.work_branch(git_dir) == f"detached-{start[:12]}"
    (git_dir / "HEAD").write_text("garbage\n")
    assert gitrepo.work_branch(git_dir) == "detached"


def test_worktree_shares_the_main_repository_remote(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", remote="git@github.com:example/proj.git", commit=True)
    wt = tmp_path / "proj-wt"
    git(repo, "worktree", "add", "-q", "-b", "wt-branch", str(wt))
    assert (wt / ".git").is_file()
    info = discover_repository(wt / "sub" / "dir")
    assert info.has_git
    assert info.root == wt
    assert info.git_dir is not None
    assert info.git_dir.parent == repo / ".git" / "worktrees"
    assert info.common_dir == repo / ".git"
    assert real(info.git_dir) == git_path(wt, "--git-dir")
    assert real(info.common_dir) == git_path(wt, "--git-common-dir")
    assert info.remote == "git@github.com:example/proj.git"
    assert info.branch == "wt-branch"
    main = discover_repository(repo)
    assert normalize_remote(info.remote) == normalize_remote(main.remote)
    assert main.branch == "main"


def test_submodule_gitfile_uses_its_own_repository(tmp_path: Path) -> None:
    upstream = make_repo(tmp_path / "upstream", commit=True)
    parent = make_repo(tmp_path / "parent", remote="https://github.com/example/parent.git", commit=True)
    git(parent, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "libs/dep")
    sub = parent / "libs" / "dep"
    assert (sub / ".git").read_text().startswith("gitdir: ../../.git/modules/")
    info = discover_repository(sub / "README.md")
    assert info.root == sub
    assert info.git_dir == parent / ".git" / "modules" / "libs" / "dep"
    assert info.common_dir == info.git_dir
    assert real(info.git_dir) == git_path(sub, "--git-dir")
    assert info.remote == str(upstream)
    assert normalize_remote(info.remote) == upstream.as_posix().lstrip("/").lower()
    assert discover_repository(parent / "libs").root == parent


def test_handwritten_relative_gitfile(tmp_path: Path) -> None:
    store = make_repo(tmp_path / "store" / "real", remote="https://example.org/team/real.git")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").write_text("GITDIR: ../store/real/.git\n")
    info = discover_repository(work)
    assert info.root == work
    assert info.git_dir == store / ".git"
    assert info.remote == "https://example.org/team/real.git"


def test_gitfile_without_gitdir_marks_root_but_reads_nothing(tmp_path: Path) -> None:
    work = tmp_path / "odd"
    work.mkdir()
    (work / ".git").write_text("not a gitfile\n")
    # A "config" in the work tree must not be mistaken for git config.
    (work / "config").write_text('[remote "origin"]\n\turl = https://example.org/wrong\n')
    info = discover_repository(work / "x")
    assert info == RepoInfo(True, work, None, None, "", "")


def test_cwd_without_git(tmp_path: Path) -> None:
    if any((p / ".git").exists() for p in tmp_path.parents):
        pytest.skip("the temporary directory lives inside a git checkout")
    plain = tmp_path / "Plain Dir"
    plain.mkdir()
    info = discover_repository(f"{plain}/")
    assert info == RepoInfo(False, plain, None, None, "", "")
    assert find_git_root(plain) is None
    missing = plain / "not" / "there"
    assert discover_repository(missing) == RepoInfo(False, missing, None, None, "", "")
    assert discover_repository(f"{plain}/a/../b").root == plain / "b"


# --------------------------------------------------------------------------------------------------
# config parsing


def write_config(repo: Path, text: str | bytes) -> None:
    config = repo / ".git" / "config"
    if isinstance(text, bytes):
        config.write_bytes(text)
    else:
        config.write_text(text)


@pytest.mark.parametrize(
    ("text", "remote"),
    [
        ('[remote "origin"]\n\turl = https://h.example/o/r.git\n', "https://h.example/o/r.git"),
        ('[Remote "origin"]\n\tURL = https://h.example/o/r\n', "https://h.example/o/r"),
        ('[remote "origin"]\n\tUrl=git@h.example:o/r.git\n', "git@h.example:o/r.git"),
        (
            '# comment\n; another\n[remote "up"]\n\turl = a.example:u/r\n'
            '[remote "origin"]\n# url = nope\n\t; url = nope\n\turl = b.example:o/r ; trailing\n',
            "b.example:o/r",
        ),
        (
            '[remote "origin"]\n\tfetch = x\n[remote "up"]\n\turl = https://h.example/u/r\n',
            "https://h.example/u/r",
        ),
        (
            '[remote "origin"]\n\turl = "https://h.example/o/r # not a comment"\n',
            "https://h.example/o/r # not a comment",
        ),
        ("[remote.origin]\n\turl = https://h.example/legacy/r\n", "https://h.example/legacy/r"),
        ('[remote "origin"] url = https://h.example/inline/r\n', "https://h.example/inline/r"),
        ('[remote "origin"]\n\turl = https://h.example/\\\n  cont/r\n', "https://h.example/  cont/r"),
        (
            '[remote "origin"]\n\turl\n\turl =\n\turl = https://h.example/after-empty\n',
            "https://h.example/after-empty",
        ),
        ("[core]\n\turl = https://h.example/not-a-remote\n", ""),
        ('[remoteish "origin"]\n\turl = https://h.example/no\n', ""),
        ('[remote "origin"\n\turl = https://h.example/unterminated\n', ""),
        ("", ""),
    ],
)
def test_config_parsing(tmp_path: Path, text: str, remote: str) -> None:
    repo = make_repo(tmp_path / "proj")
    write_config(repo, text)
    assert discover_repository(repo).remote == remote


@pytest.mark.parametrize(
    "content",
    [
        b"\x00\x01\x02\xff\xfe garbage \x80",
        b"[[[[\n]]]]\n= = =\n\\\\\\\n",
        b'[remote "origin\n\turl = x\n',
        b'[remote "origin"]\n\turl = "unterminated\n',
        b'[remote "origin"]\n\turl = trailing backslash \\',
        b'[remote "o\\"r\\\\igin"]\n\turl = https://h.example/escaped\n',
    ],
)
def test_malformed_config_does_not_raise(tmp_path: Path, content: bytes) -> None:
    repo = make_repo(tmp_path / "proj")
    write_config(repo, content)
    info = discover_repository(repo)
    assert info.has_git
    assert isinstance(info.remote, str)
    assert info.branch == "main"


def test_config_that_is_a_directory_or_fifo(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", remote="https://h.example/o/r")
    config = repo / ".git" / "config"
    config.unlink()
    config.mkdir()
    assert discover_repository(repo).remote == ""
    config.rmdir()
    if not hasattr(os, "mkfifo"):
        return
    os.mkfifo(config)  # opening a FIFO would block: it must be skipped
    assert discover_repository(repo).remote == ""


def test_missing_or_odd_head(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    head = repo / ".git" / "HEAD"
    head.write_text("ref: refs/heads/.invalid\n")  # reftable stub
    assert discover_repository(repo).branch == ""
    head.write_text("ref: refs/remotes/origin/main\n")
    assert discover_repository(repo).branch == ""
    head.write_text("ref:   refs/heads/topic/deep  \n")
    assert discover_repository(repo).branch == "topic/deep"
    head.unlink()
    info = discover_repository(repo)
    assert info.has_git
    assert info.branch == ""


@settings(max_examples=300)
@given(st.text(max_size=200))
def test_config_parser_never_raises(text: str) -> None:
    assert all(isinstance(url, str) for url in gitrepo._remotes_from_config_text(text))


def test_discovery_never_spawns_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "proj", remote="https://h.example/o/r", commit=True)

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("gitrepo must not spawn processes")

    monkeypatch.setattr(subprocess, "Popen", forbidden)
    monkeypatch.setattr(os, "system", forbidden)
    info = discover_repository(repo / "x")
    assert info.remote == "https://h.example/o/r"


def test_hostile_inputs_stay_linear() -> None:
    """Quadratic parsing here would stall every bootstrap; each case takes milliseconds when linear."""
    n = 100_000
    started = time.perf_counter()
    assert gitrepo._remotes_from_config_text("[remote" + " " * n + "x]\nurl = y\n") == []
    assert gitrepo._remotes_from_config_text('[remote "o"]\nurl' + " " * n + "x\n") == []
    continued = '[remote "o"]\nurl = a\\\n' + "b\\\n" * n + "c\n"
    assert gitrepo._remotes_from_config_text(continued) == ["a" + "b" * n + "c"]
    assert normalize_remote("https://h.example/r" + ".git" * n) == "h.example/r"
    assert normalize_remote("git@" * n) == normalize_remote("GIT@" * n)
    assert normalize_remote("a" + "." * n + "!:x").startswith("a")
    assert normalize_remote(":@" * n) == normalize_remote(normalize_remote(":@" * n))
    assert time.perf_counter() - started < 5


def test_dot_git_that_is_not_a_file_or_directory_is_skipped(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    outer = make_repo(tmp_path / "outer")
    inner = outer / "inner"
    inner.mkdir()
    os.mkfifo(inner / ".git")
    assert discover_repository(inner).root == outer
