"""Repository discovery and remote normalization by pure filesystem reads.

Scope resolution runs on every bootstrap, so this module never spawns ``git``: it walks up from the
working directory looking for ``.git`` and reads the few plain files it needs (``.git`` gitfiles,
``commondir``, ``config``, ``HEAD``; on a detached HEAD a rebase's ``head-name`` and the end of
HEAD's reflog). Every read is tolerant: an unreadable or odd file simply yields "unknown" (empty
remote, empty branch) instead of an exception, because a weak scope is better than a failed
bootstrap.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "RepoInfo",
    "discover_repository",
    "find_git_root",
    "head_commit",
    "name_from_remote",
    "normalize_path",
    "normalize_remote",
    "read_branch",
    "work_branch",
]

# Small metadata files (.git gitfile, HEAD, commondir) are tiny; a cap keeps a hostile or corrupt
# file from costing time. Config files can legitimately be larger.
_SMALL_FILE_LIMIT = 64 * 1024
_CONFIG_LIMIT = 4 * 1024 * 1024
# Only the end of HEAD's reflog is read, for where a detached HEAD was checked out.
_REFLOG_TAIL = 256 * 1024


@dataclass(frozen=True)
class RepoInfo:
    """What scope resolution needs to know about the repository around a directory."""

    has_git: bool
    root: Path
    """Git work-tree root, or the absolute, normalized directory itself when no git was found."""
    git_dir: Path | None
    """The git dir of this work tree (for a linked worktree: ``.git/worktrees/<name>``)."""
    common_dir: Path | None
    """The shared git dir holding config and refs; equal to ``git_dir`` for a normal repository."""
    remote: str
    """Raw url of remote ``origin``, else the first remote url in config, else ``""``."""
    branch: str
    """Current branch name; ``""`` when HEAD is detached or unknown."""
    other_remotes: tuple[str, ...] = ()
    """Raw urls of the other remotes, in config order: the ``upstream`` beside a fork's ``origin``."""


# --------------------------------------------------------------------------------------------------
# Paths


def _abs_clean(p: str | Path) -> str:
    """Absolute, lexically cleaned path (no symlink resolution, so moved checkouts stay predictable)."""
    cleaned = os.path.normpath(os.path.abspath(os.fspath(p)))
    # POSIX keeps a leading "//" (implementation-defined); one slash is what everyone else means.
    if os.sep == "/" and cleaned.startswith("//"):
        cleaned = "/" + cleaned.lstrip("/")
    return cleaned


def normalize_path(p: str | Path) -> str:
    """Absolute, lexically cleaned path with forward slashes and no trailing slash.

    This is the workspace key, so it must be stable for the same directory however it was spelled.
    Symlinks are not resolved. On Windows the path is also case-folded (``os.path.normcase``) because
    the filesystem is case-insensitive; on POSIX case is preserved.
    """
    cleaned = os.path.normcase(_abs_clean(p))
    if os.sep != "/":
        cleaned = cleaned.replace(os.sep, "/")
    if os.altsep and os.altsep != "/":
        cleaned = cleaned.replace(os.altsep, "/")
    stripped = cleaned.rstrip("/")
    # Keep the root itself ("/" or "c:/") rather than turning it into "" or a drive-relative "c:".
    if not stripped or (len(stripped) == 2 and stripped[1] == ":"):
        return stripped + "/"
    return stripped


# --------------------------------------------------------------------------------------------------
# Tolerant file reads


def _read_text(path: Path, limit: int) -> str | None:
    """Read a regular file as text, or ``None`` when it is missing, unreadable or not a regular file.

    Non-regular files (FIFOs, devices) are refused because opening them could block or never end.
    """
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return None
        with open(path, "rb") as fh:
            data = fh.read(limit)
    except (OSError, ValueError):
        return None
    return data.decode("utf-8", errors="replace")


def _first_line(path: Path) -> str | None:
    text = _read_text(path, _SMALL_FILE_LIMIT)
    if text is None:
        return None
    lines = text.splitlines()
    return lines[0].strip() if lines else ""


def _join_clean(base: Path, target: str) -> Path:
    """Resolve ``target`` against ``base`` lexically (git writes these paths; we only clean them)."""
    return Path(os.path.normpath(os.path.join(base, target)))


# --------------------------------------------------------------------------------------------------
# Discovery


@dataclass(frozen=True)
class _Found:
    root: Path
    git_dir: Path | None


def _gitfile_target(gitfile: Path, holder: Path) -> Path | None:
    """Target of a ``gitdir: <path>`` file (worktrees, submodules), relative to the holding dir."""
    line = _first_line(gitfile)
    if line is None or not line.lower().startswith("gitdir:"):
        return None
    target = line[len("gitdir:") :].strip()
    if not target:
        return None
    return _join_clean(holder, target)


def _locate(start: str) -> _Found | None:
    """Walk up from ``start`` to the nearest directory holding ``.git``.

    A non-existent start is fine: its parents are checked like any other directory.
    """
    current = Path(start)
    for directory in (current, *current.parents):
        marker = directory / ".git"
        try:
            st = os.stat(marker)
        except (OSError, ValueError):
            continue
        if stat.S_ISDIR(st.st_mode):
            return _Found(directory, marker)
        if stat.S_ISREG(st.st_mode):
            # A .git file marks a work tree even when it is not a valid gitfile (as in the original);
            # then the git dir is unknown rather than guessed, so nothing is read from the work tree.
            return _Found(directory, _gitfile_target(marker, directory))
        # FIFOs, sockets and devices named .git are not repositories: keep walking.
    return None


def find_git_root(cwd: str | Path) -> Path | None:
    """Work-tree root of the repository containing ``cwd``, or ``None`` outside any repository."""
    found = _locate(_abs_clean(cwd))
    return found.root if found else None


def _common_dir(git_dir: Path) -> Path:
    """Shared git dir: linked worktrees name it in ``commondir`` (relative to their own git dir)."""
    line = _first_line(git_dir / "commondir")
    if not line:
        return git_dir
    return _join_clean(git_dir, line)


def read_branch(git_dir: Path) -> str:
    """Branch from ``HEAD``; a detached, missing or unusual HEAD means "unknown" (``""``)."""
    line = _first_line(git_dir / "HEAD")
    if not line or not line.startswith("ref:"):
        return ""
    ref = line[len("ref:") :].strip()
    prefix = "refs/heads/"
    if not ref.startswith(prefix):
        return ""
    branch = ref[len(prefix) :]
    # With the reftable backend HEAD is a stub pointing at "refs/heads/.invalid".
    if branch == ".invalid":
        return ""
    return branch


_SHA_RE = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


def head_commit(git_dir: Path, common_dir: Path | None = None) -> str | None:
    """The commit HEAD points at, read from files (a loose ref, else ``packed-refs``); None when
    there is none yet (a repository with no commit) or it cannot be read."""
    line = _first_line(git_dir / "HEAD")
    if not line:
        return None
    if _SHA_RE.match(line):
        return line  # detached
    if not line.startswith("ref:"):
        return None
    ref = line[len("ref:") :].strip()
    if ".." in ref.split("/") or not ref.startswith("refs/"):
        return None
    common = common_dir or _common_dir(git_dir)
    for base in (git_dir, common):
        loose = _first_line(base / ref)
        if loose and _SHA_RE.match(loose):
            return loose
    packed = _read_text(common / "packed-refs", _CONFIG_LIMIT) or ""
    for entry in packed.splitlines():
        sha, _, name = entry.partition(" ")
        if name == ref and _SHA_RE.match(sha):
            return sha
    return None


def rebased_branch(git_dir: Path) -> str:
    """The branch a rebase in progress replays (HEAD is detached meanwhile), or ``""``.

    Git writes it to ``rebase-merge/head-name`` (``rebase-apply/`` for ``--apply``) in the work
    tree's own git dir; a rebase of a detached HEAD writes ``detached HEAD`` there: no branch.
    """
    prefix = "refs/heads/"
    for state in ("rebase-merge", "rebase-apply"):
        line = _first_line(git_dir / state / "head-name")
        if line and line.startswith(prefix) and line[len(prefix) :] not in ("", ".invalid"):
            return line[len(prefix) :]
    return ""


def work_branch(git_dir: Path) -> str:
    """A name for the work checked out, for the files it writes: the branch; during a rebase the
    branch being rebased; on another detached HEAD (``git checkout <commit>``, a bisect, a CI
    checkout) ``detached-<commit>-<checkout>``, where ``<checkout>`` tells apart two checkouts of
    one commit. That name holds from the checkout that detached HEAD (read from HEAD's reflog) to
    the next, through commits made on top; without a reflog it is HEAD's commit alone. ``detached``
    when not even the commit can be read."""
    branch = read_branch(git_dir) or rebased_branch(git_dir)
    if branch:
        return branch
    checkout = _detaching_checkout(git_dir)
    if checkout is not None:
        commit, line = checkout
        return f"detached-{commit[:12]}-{hashlib.sha256(line.encode()).hexdigest()[:6]}"
    head = head_commit(git_dir)
    return f"detached-{head[:12]}" if head else "detached"


def _detaching_checkout(git_dir: Path) -> tuple[str, str] | None:
    """The latest entry of HEAD's reflog that moved HEAD by a checkout (or made it: a clone, a
    ``git worktree add``), as (the commit it checked out, the whole line); None when the reflog is
    missing, or its end names none."""
    path = git_dir / "logs" / "HEAD"
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return None
        with open(path, "rb") as fh:
            fh.seek(max(0, st.st_size - _REFLOG_TAIL))
            data = fh.read(_REFLOG_TAIL)
    except (OSError, ValueError):
        return None
    lines = data.decode("utf-8", errors="replace").splitlines()
    if st.st_size > _REFLOG_TAIL:
        lines = lines[1:]  # the first one read is likely cut
    for line in reversed(lines):
        head, _, message = line.partition("\t")
        old, _, rest = head.partition(" ")
        new = rest.split(" ", 1)[0]
        if not (_SHA_RE.match(old) and _SHA_RE.match(new)):
            continue
        if message.startswith("checkout:") or not old.strip("0"):
            return new, line
    return None


def discover_repository(cwd: str | Path) -> RepoInfo:
    """Describe the repository around ``cwd`` (which need not exist) without running ``git``.

    Linked worktrees read the remote from the shared config found through ``commondir``, so every
    worktree of a repository resolves to the same remote as its main checkout.
    """
    start = _abs_clean(cwd)
    found = _locate(start)
    if found is None:
        return RepoInfo(False, Path(start), None, None, "", "")
    if found.git_dir is None:
        return RepoInfo(True, found.root, None, None, "", "")
    common = _common_dir(found.git_dir)
    urls = _read_remotes(common / "config")
    return RepoInfo(
        has_git=True,
        root=found.root,
        git_dir=found.git_dir,
        common_dir=common,
        remote=urls[0] if urls else "",
        # During a rebase HEAD is detached: the branch being rebased is the one worked on.
        branch=read_branch(found.git_dir) or rebased_branch(found.git_dir),
        other_remotes=tuple(urls[1:]),
    )


def is_shallow(repo: RepoInfo) -> bool:
    """Whether ``repo`` is a shallow clone (``git clone --depth``, a CI checkout's default): its
    history stops short, so what git cannot find there may still be in the full history."""
    return repo.common_dir is not None and (repo.common_dir / "shallow").is_file()


SHALLOW_FIX = "fetch the history (`git fetch --unshallow`, or `fetch-depth: 0` on actions/checkout)"


# --------------------------------------------------------------------------------------------------
# Config parsing (only what we need: remote urls)

# Written so that no two quantifiers compete for the same characters: a hostile header must not
# trigger quadratic backtracking (the name cannot hold spaces, the quoted part must start with '"').
_SECTION_RE = re.compile(r'^\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*$', re.DOTALL)
_KEY_RE = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=(.*))?$", re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


def _section_end(line: str) -> int:
    """Index of the ``]`` closing a section header, honouring quotes; -1 when unterminated."""
    in_quotes = False
    i = 1
    while i < len(line):
        c = line[i]
        if c == "\\" and in_quotes:
            i += 2
            continue
        if c == '"':
            in_quotes = not in_quotes
        elif c == "]" and not in_quotes:
            return i
        i += 1
    return -1


def _remote_name(header: str) -> str | None:
    """Remote name for a ``remote "<name>"`` (or legacy ``remote.<name>``) header, else ``None``."""
    m = _SECTION_RE.match(header)
    if not m:
        return None
    section, sub = m.group(1), m.group(2)
    if sub is not None:
        if section.lower() != "remote":
            return None
        return re.sub(r"\\(.)", r"\1", sub, flags=re.DOTALL)
    lowered = section.lower()
    if lowered.startswith("remote.") and len(lowered) > len("remote."):
        return lowered[len("remote.") :]
    return None


def _parse_value(raw: str) -> str:
    """Decode a git config value: quotes, backslash escapes, inline comments, whitespace runs."""
    out: list[str] = []
    in_quotes = False
    pending_space = 0
    i = 0
    while i < len(raw):
        c = raw[i]
        i += 1
        if c == "\\":
            if i >= len(raw):
                break
            c = _ESCAPES.get(raw[i], raw[i])
            i += 1
        elif c == '"':
            in_quotes = not in_quotes
            continue
        elif not in_quotes and c in "#;":
            break
        elif not in_quotes and c.isspace():
            if out:
                pending_space += 1
            continue
        out.append(" " * pending_space + c)
        pending_space = 0
    return "".join(out)


def _config_remote_urls(text: str) -> list[tuple[str, str]]:
    """``(remote name, url)`` pairs in file order; malformed lines are skipped, never fatal."""
    urls: list[tuple[str, str]] = []
    lines = text.splitlines()
    remote: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if line.startswith("["):
            end = _section_end(line)
            if end < 0:
                remote = None
                continue
            remote = _remote_name(line[1:end])
            line = line[end + 1 :].strip()  # git allows "key = value" after the header
        if not line or line[0] in "#;" or remote is None:
            continue
        # A trailing unescaped backslash continues the value on the next line (joined once at the
        # end, so a long chain of continuations stays linear).
        parts = [line]
        while (len(parts[-1]) - len(parts[-1].rstrip("\\"))) % 2 == 1 and i < len(lines):
            parts[-1] = parts[-1][:-1]
            parts.append(lines[i])
            i += 1
        line = "".join(parts)
        m = _KEY_RE.match(line)
        if not m or m.group(2) is None or m.group(1).lower() != "url":
            continue
        url = _parse_value(m.group(2).strip())
        if url:
            urls.append((remote, url))
    return urls


def _remotes_from_config_text(text: str) -> list[str]:
    """Every remote url: ``origin``'s first, then the others in config order."""
    urls = _config_remote_urls(text)
    return [url for name, url in urls if name == "origin"] + [url for name, url in urls if name != "origin"]


def _read_remotes(config: Path) -> list[str]:
    text = _read_text(config, _CONFIG_LIMIT)
    return [] if text is None else _remotes_from_config_text(text)


# --------------------------------------------------------------------------------------------------
# Remote normalization

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_DEFAULT_PORTS = {"https": "443", "http": "80", "git": "9418", "ftp": "21", "ftps": "990"}
_SSH_SCHEMES = frozenset({"ssh", "git+ssh", "ssh+git"})
_BRACKET_HOST_RE = re.compile(r"(\[[0-9A-Za-z.%_-]*:[0-9A-Za-z:.%_-]*\])(?::(.*))?$", re.DOTALL)
_HOSTNAME_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")
_NUMERIC_PORT_RE = re.compile(r"^([0-9]+)(?:/(.*))?$", re.DOTALL)


def _clean_repo_path(path: str) -> str:
    """Lexically clean a repository path and drop trailing slashes and every trailing ``.git``."""
    path = path.replace("\\", "/")
    path = posixpath.normpath("/" + path).lstrip("/") if path.strip("/") else ""
    # Move an end index instead of slicing each round, so "x.git.git.git..." stays linear.
    end = len(path)
    while True:
        before = end
        while end and (path[end - 1] == "/" or path[end - 1].isspace()):
            end -= 1
        if end >= 4 and path[end - 4 : end].lower() == ".git":
            end -= 4
        if end == before:
            return path[:end]


def _key(host: str, port: str, path: str) -> str:
    """Join the normalized parts into the ``host[:port]/path`` identity key."""
    host = host.strip().lower()
    if host in (".", ".."):
        host = ""  # not a host; kept, it would vanish when the key is normalized again
    authority = f"{host}:{port}" if port else host
    cleaned = _clean_repo_path(path.lower())
    if not authority:
        return cleaned
    return f"{authority}/{cleaned}" if cleaned else authority


def _split_host_port(hostport: str) -> tuple[str, str | None]:
    """Split ``host[:port]``; the port is ``None`` when present but not numeric (a broken authority)."""
    if hostport.startswith("["):
        m = _BRACKET_HOST_RE.match(hostport)
        if not m:
            return hostport, None
        host, port = m.group(1), m.group(2) or ""
    else:
        host, sep, port = hostport.rpartition(":")
        if not sep:
            return hostport, ""
    if port == "" or (port.isascii() and port.isdigit()):
        return host, port
    return host, None


def _url_key(scheme: str, rest: str) -> str:
    """Key for ``scheme://[userinfo@]host[:port]/path[?query][#fragment]``; userinfo and query dropped."""
    rest = rest.replace("\\", "/")  # as browsers do for special schemes; keys never hold "\\"
    slash = rest.find("/")
    authority, path = (rest, "") if slash < 0 else (rest[:slash], rest[slash + 1 :])
    _, _, hostport = authority.rpartition("@")
    host, port = _split_host_port(hostport)
    if port is None and "@" in path:
        # An unescaped "/" in a password split the authority early (``u:p/w@host/repo``): the real
        # host follows the first "@" of the path. Recover it rather than leak part of the secret.
        after = path.split("@", 1)[1]
        hostport, _, path = after.partition("/")
        host, port = _split_host_port(hostport)
    port = port or ""
    path = re.split(r"[?#]", path, maxsplit=1)[0]
    host = re.split(r"[?#]", host, maxsplit=1)[0]
    if port:
        # Compared as text: int() would reject absurdly long digit strings.
        port = port.lstrip("0") or "0"
        if scheme in _SSH_SCHEMES or _DEFAULT_PORTS.get(scheme) == port:
            port = ""
    return _key(host, port, path)


def _scp_parts(s: str) -> tuple[str, str, str] | None:
    """Split an scp-like ``[user@]host:path`` into ``(host, port, path)``, else ``None``.

    Like git, the ``:`` must come before any ``/``. Without ``user@`` the host must contain a dot (or be
    a bracketed IPv6 literal), so ``C:\\repo`` stays a local path. Without ``user@`` a purely numeric
    first segment is read as a port: that is the form our own keys take (``host:8443/path``), which
    keeps normalization idempotent.
    """
    head = s.split("/", 1)[0]
    # The path may contain "@" too (``git@host:re@po``), so try each "@" from the last one back and
    # split at the first that is followed by ``host:``; everything before it (user, even a password)
    # is dropped. One backward pass tracks the nearest ":" so hostile input stays linear.
    next_colon = -1
    saw_at = False
    for at in range(len(head) - 1, -1, -1):
        c = head[at]
        if c == ":":
            next_colon = at
        elif c == "@":
            saw_at = True
            if head.startswith("[", at + 1):
                m = _BRACKET_HOST_RE.match(head, at + 1)
                if m and m.group(2) is not None:
                    return m.group(1), "", s[m.end(1) + 1 :]
            elif next_colon > at + 1:
                return s[at + 1 : next_colon], "", s[next_colon + 1 :]
    if saw_at:
        return None
    if s.startswith("["):
        m = _BRACKET_HOST_RE.match(head)
        if not m or m.group(2) is None:
            return None
        host, tail = m.group(1), s[len(m.group(1)) + 1 :]
    else:
        colon = head.find(":")
        if colon <= 0 or "." not in head[:colon] or not _HOSTNAME_RE.fullmatch(head, 0, colon):
            return None
        host, tail = s[:colon], s[colon + 1 :]
    numeric = _NUMERIC_PORT_RE.match(tail)
    if numeric:
        return host, numeric.group(1), numeric.group(2) or ""
    return host, "", tail


def _local_key(path: str) -> str:
    """Key for a local path or ``file://`` path: cleaned, lowercased, forward slashes, no leading slash."""
    return _clean_repo_path(path.strip().lower())


def _normalize_once(url: str) -> str:
    s = url.strip()
    if not s:
        return ""
    m = _SCHEME_RE.match(s)
    if m:
        scheme = m.group(1).lower()
        rest = s[m.end() :]
        if scheme == "file":
            if rest.lower().startswith("localhost/"):
                rest = rest[len("localhost") :]
            return _local_key(rest)
        return _url_key(scheme, rest)
    scp = _scp_parts(s)
    if scp is not None:
        host, port, path = scp
        return _key(host, port, path)
    return _local_key(s)


def normalize_remote(url: str) -> str:
    """Canonical ``host[:port]/path`` key for a remote url, identical across its spellings.

    ``git@host:org/repo.git``, ``ssh://user@host:2222/org/repo`` and ``https://host/Org/Repo/`` all
    give ``host/org/repo``: credentials, query strings, ssh ports and default ports are dropped, host
    and path are lowercased, and trailing slashes and any number of ``.git`` suffixes are removed.
    A non-default https/http port is kept, since it names a different server. ``file://`` urls and
    local paths become the cleaned, lowercased path without its leading slash.
    """
    key = _normalize_once(url)
    # Keys are fixpoints, so a stored key can be normalized again safely. Real remotes get there in
    # one pass; the loop only settles garbage such as a local path that reads like ``host:path``.
    for _ in range(8):
        again = _normalize_once(key)
        if again == key:
            break
        key = again
    return key


def name_from_remote(normalized: str) -> str:
    """Default project name: the last path segment of a normalized remote key."""
    return normalized.rstrip("/").rsplit("/", 1)[-1]
