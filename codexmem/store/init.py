"""``codexmem init``: create a store, in a repository or shared, and never overwrite a file.

A store is created only in a new or empty folder (or one holding just the git files init itself
adds lines to); the ``.gitignore`` and ``.gitattributes`` it needs are appended to, never
replaced, and every file created or changed is reported so ``init`` can say so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codexmem.errors import CodexmemError, invalid_input, one_line_problem
from codexmem.gitrepo import discover_repository, find_git_root, name_from_remote, normalize_path, normalize_remote
from codexmem.models.config import MAX_NAME, STORE_FORMAT
from codexmem.store.atomic import atomic_write, replace_own_file
from codexmem.store.gitread import run_git
from codexmem.store.gitsetup import ATTRIBUTES_COMMENT, STORE_ATTRIBUTES, register_driver
from codexmem.store.ids import project_identity_key, scope_id, system_identity
from codexmem.store.layout import CONFIG_FILE
from codexmem.store.placement import misplaced
from codexmem.store.yamlio import dump_yaml

GITIGNORE = ".gitignore"
GITATTRIBUTES = ".gitattributes"


@dataclass(frozen=True)
class GitLines:
    """Lines a git file must hold; ``comment`` goes above them when some are added."""

    lines: tuple[str, ...]
    comment: str | None = None

    def text(self) -> str:
        """The whole file as ``init`` writes it when there is none."""
        return "".join(f"{line}\n" for line in (*([self.comment] if self.comment else []), *self.lines))


STORE_GIT_FILES: dict[str, GitLines] = {
    GITIGNORE: GitLines(("/.cache/", "/.lock", "/.journal/"), "# codexmem: local state, never committed"),
    GITATTRIBUTES: GitLines(STORE_ATTRIBUTES, ATTRIBUTES_COMMENT),
}
"""What every store's own git files hold: the one list, for ``init`` and the store builders."""
STORE_GITIGNORE = STORE_GIT_FILES[GITIGNORE].text()
STORE_GITATTRIBUTES = STORE_GIT_FILES[GITATTRIBUTES].text()
SITE_IGNORE = GitLines(("/_site/",))
"""Added to the work tree's root .gitignore for a store at its root: the rendered site is never
committed (a store elsewhere gets the rule of its own ``_site``: :func:`_ignore_site`)."""
UNIGNORE_COMMENT = "# codexmem: the store is committed, whatever else is ignored"
"""Above the lines that un-ignore the store, when a rule ignored its files (see :func:`unignore`)."""

MAY_HOLD = frozenset({".git", *STORE_GIT_FILES})
"""What a folder may already hold for ``init`` to make it a store: a repository just created,
and the git files whose lines init adds."""
SHOWN_ENTRIES = 5


@dataclass(frozen=True)
class FileChange:
    """One file ``init`` created, or the lines it added to a file that was there."""

    path: Path
    created: bool
    added: tuple[str, ...] = ()
    why: str = ""
    """Said beside the change when the lines are not the usual ones."""


@dataclass
class InitResult:
    config: dict[str, Any]
    changes: list[FileChange] = field(default_factory=list)


def init_store(
    path: Path,
    *,
    cwd: Path,
    system_name: str | None = None,
    project_name: str | None = None,
    shared: bool = False,
) -> InitResult:
    """Create a store at ``path``: the config written and every file created or changed.

    A store inside a git work tree declares that repository's project unless ``shared``.
    """
    path = Path(os.path.abspath(path))
    for flag, value in (("--project", project_name), ("--system", system_name)):
        _check_name(flag, value)
    if (path / CONFIG_FILE).exists():
        raise CodexmemError("ERR_INVALID_STATE", f"a store already exists at {path}; init never overwrites one")
    inside = misplaced(path, None, holds_files=False)
    if inside is not None:  # git's own state: nothing there is ever committed (said before any other advice)
        raise CodexmemError(
            "ERR_INVALID_INPUT",
            f"{path}: {inside}, where git keeps its own state and nothing is committed: give a folder of the "
            "work tree, such as .codexmem at the repository's root (the default)",
        )
    outer = next((p for p in path.parents if (p / CONFIG_FILE).is_file()), None)
    if outer is not None:  # its files would be strays of that store, failing its check
        raise CodexmemError(
            "ERR_INVALID_INPUT",
            f"{path} is inside the store at {outer}: give a folder outside it, such as {outer.parent / 'memory'}",
        )
    if path.is_symlink():  # git commits the link, never the files it leads to
        raise CodexmemError(
            "ERR_INVALID_TARGET",
            f"{path} is a symbolic link (to {os.readlink(path)}): git would commit the link, not the memory "
            "written through it; remove the link, or give --store a real folder",
        )
    _refuse_foreign_folder(path)

    repo = discover_repository(path)
    in_repo = repo.has_git and not shared
    config: dict[str, Any] = {"format": STORE_FORMAT}
    if in_repo:
        remote = normalize_remote(repo.remote)
        root = normalize_path(repo.root)
        name = project_name or (name_from_remote(remote) if remote else repo.root.name) or "project"
        sys_name = system_name or name
        sys_id = system_identity(sys_name)
        project: dict[str, Any] = {
            "id": scope_id("proj", name, project_identity_key(remote, root)),
            "name": name,
            "system": sys_id,
        }
        if repo.remote:
            project["remotes"] = [_without_credentials(repo.remote)]
        config["system"] = {"id": sys_id, "name": sys_name}
        config["projects"] = [project]
    elif system_name:
        config["system"] = {"id": system_identity(system_name), "name": system_name}
    config["privacy"] = {"secrets": "refuse"}
    config["sessions"] = {"idle_recovery_minutes": 120}

    # Whatever init would refuse half-way is refused before any file is written.
    for name, wanted in STORE_GIT_FILES.items():
        refuse_link(path / name, wanted)
    ignored = None
    if repo.has_git:
        refuse_link(repo.root / GITIGNORE, SITE_IGNORE)
        if (repo.root / GITIGNORE).exists() and not (repo.root / GITIGNORE).is_file():
            raise CodexmemError(
                "ERR_INVALID_INPUT",
                f"{repo.root / GITIGNORE} is not a file: init adds {SITE_IGNORE.lines[0]} to it (so git leaves the "
                "built site out); make it a file, then run init again",
            )
        ignored = refuse_unignorable(repo.root, path)
    result = InitResult(config)
    made = _new_folders(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        for name, wanted in STORE_GIT_FILES.items():
            result.changes.extend(ensure_lines(path / name, wanted))
        # The config last: its presence is what makes the folder a store.
        atomic_write(path / CONFIG_FILE, dump_yaml(config).encode("utf-8"))
        result.changes.append(FileChange(path / CONFIG_FILE, created=True))
        if repo.has_git:
            register_driver(path)
            # The person's own files last: one init cannot write leaves no store behind.
            result.changes.extend(_ignore_site(Path(repo.root), path))
            result.changes.extend(unignore_lines(repo.root, path, ignored))
    except (OSError, CodexmemError) as exc:
        _take_back(path, made, result.changes)
        if isinstance(exc, CodexmemError):
            raise
        raise CodexmemError("ERR_WRITE_FAILED", f"cannot write {exc.filename or path}: {exc.strerror or exc}") from None
    return result


def _new_folders(path: Path) -> list[Path]:
    """The folders ``path.mkdir(parents=True)`` would create, outermost first."""
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing[::-1]


def _take_back(path: Path, made: list[Path], changes: list[FileChange]) -> None:
    """Undo a failed init inside the store's folder: what it created there goes (the person's own
    files come last and are written whole or not at all), so running init again starts clean."""
    for change in changes:
        if change.created and change.path.parent == path:
            with contextlib.suppress(OSError):
                change.path.unlink()
    for folder in reversed(made):
        with contextlib.suppress(OSError):
            folder.rmdir()  # only if empty: nothing of anyone else's is removed


def _ignore_site(root: Path, store: Path) -> list[FileChange]:
    """Ignore the folder `codexmem site` builds by default (``_site`` beside the store), as a rule of
    the repository's .gitignore; not when the repository already commits files there (its own pages)."""
    folder = os.path.relpath(store.parent, root).replace(os.sep, "/")
    site = "_site" if folder == "." else f"{folder}/_site"
    if run_git(root, ["ls-files", "-z", "--", site]):
        return [FileChange(root / GITIGNORE, created=False, why=f"{site}/ holds committed files: not ignored")]
    # A rule of the person's own (`_site`, `*_site*`, a global excludes file) already does it.
    if run_git(root, ["check-ignore", "-q", "--no-index", f"{site}/index.html"], literal_paths=False) is not None:
        return []
    return ensure_lines(root / GITIGNORE, GitLines((f"/{site}/",)))


def _check_name(flag: str, value: str | None) -> None:
    """A project or system name as the store config accepts it (one line, 1 to 200 characters):
    refused here, before any file is written, rather than written into a config no command reads."""
    if value is None:
        return
    if not value.strip():
        raise invalid_input(flag, "must not be blank (leave it out for the default)")
    if len(value) > MAX_NAME:
        raise invalid_input(flag, f"must be at most {MAX_NAME} characters, got {len(value)}")
    if (problem := one_line_problem(value)) is not None:
        raise invalid_input(flag, problem)


COMMITTED_PROBES = (
    CONFIG_FILE,
    "notes/note_00000000000000000000000000.md",
    "handoffs/handoff_00000000000000000000000000.md",
    "sessions/sess_00000000000000000000000000.yaml",
    "channels/bugs/items/item_00000000000000000000000000.yaml",
    "events/writer/2026-01.main.jsonl",
)
"""Files of every kind a store commits, as new files would be named (a rule such as ``*.jsonl``
or ``.*`` may ignore some kinds only)."""


def ignored_by(root: Path, store: Path) -> str | None:
    """The rule by which git would ignore a new file of the store (None: it would ignore none).

    ``--no-index``: a file already committed is not ignored, but the next note beside it would be.
    """
    probes = b"".join(
        os.path.relpath(store / rel, root).encode("utf-8", "surrogateescape") + b"\0" for rel in COMMITTED_PROBES
    )
    # Paths on stdin (-z) are never read as options or patterns; check-ignore exits 1 when none is ignored.
    found = run_git(root, ["check-ignore", "--verbose", "--no-index", "-z", "--stdin"], probes, literal_paths=False)
    fields = [f.decode("utf-8", "replace") for f in (found or b"").split(b"\0")]
    for at in range(0, len(fields) - 3, 4):  # source, line, pattern, path: the rule that decided
        source, line, pattern = fields[at : at + 3]
        if not pattern.startswith("!"):  # a "!" rule decided the path is seen
            return f"`{pattern}` ({source}, line {line})"
    return None


@functools.lru_cache(maxsize=16)
def ignored_in_clone(store: Path) -> str | None:
    """:func:`ignored_by` for the store's own work tree, asked once per process (a server's first
    bootstrap): a teammate's clone whose rules ignore a store committed without the lines."""
    root = find_git_root(store)
    return ignored_by(root, store) if root is not None else None


def unignore(root: Path, store: Path) -> list[FileChange]:
    """Make git see the store's files when a rule ignores them: lines in the work tree's .gitignore.

    A pattern such as ``.*`` (in the repository's .gitignore, or in a person's global excludes)
    ignores ``.codexmem/``: no note would ever be committed, and nothing said so. The lines go in
    the committed .gitignore, which outranks every person's excludes, so each clone sees the store.
    """
    return unignore_lines(root, store, refuse_unignorable(root, store))


def unignore_lines(root: Path, store: Path, rule: str | None) -> list[FileChange]:
    """The lines :func:`unignore` adds, for a ``rule`` already found (None: nothing to add)."""
    if rule is None:
        return []
    rel = Path(os.path.relpath(store, root)).as_posix()
    changes = ensure_lines(root / GITIGNORE, GitLines((f"!/{rel}/", f"!/{rel}/**"), UNIGNORE_COMMENT))
    return [dataclasses.replace(c, why=f"git ignored the store's files by the rule {rule}") for c in changes]


def refuse_unignorable(root: Path, store: Path) -> str | None:
    """The rule by which git ignores the store's files (None: it does not); refused (nothing
    written) when lines in the root's .gitignore could not make git see them: a store below another
    folder, whose own .gitignore (or an ignored folder above) git reads after the root's, or a store
    that is the work tree itself."""
    rule = ignored_by(root, store)
    if rule is None:
        return None
    rel = Path(os.path.relpath(store, root)).as_posix()
    if "/" in rel or rel in (".", ".."):
        raise CodexmemError(
            "ERR_INVALID_STATE",
            f"git ignores files of the store {store} by the rule {rule}, so they would never be committed: "
            "change that rule (`git check-ignore -v` shows it), or put the store at the repository's root",
        )
    return rule


def refuse_link(path: Path, wanted: GitLines) -> None:
    """A git file that is a symbolic link is never written through: the person adds the lines by
    hand (it is read, so a link whose file holds them already is no obstacle)."""
    if path.is_symlink() and _missing(path, wanted):
        raise CodexmemError(
            "ERR_INVALID_TARGET",
            f"{path} is a symbolic link; codexmem does not follow it: add these lines to it by hand: "
            + ", ".join(wanted.lines),
        )


def _lines(raw: bytes) -> set[str]:
    return {line.strip() for line in raw.decode("utf-8", "replace").splitlines()}


def _missing(path: Path, wanted: GitLines) -> bool:
    """Does the file (read through a link) lack a line of ``wanted``? (An unreadable one does.)"""
    try:
        present = _lines(path.read_bytes())
    except OSError:
        return True
    return any(line not in present for line in wanted.lines)


def ensure_lines(path: Path, wanted: GitLines) -> list[FileChange]:
    """Append the lines of ``wanted`` that ``path`` lacks, once; what was there stays byte for byte.

    Returns the change made (none when every line was there). A symbolic link is never followed.
    """
    refuse_link(path, wanted)
    try:
        current = path.read_bytes()
    except FileNotFoundError:
        current = None
    before = current or b""
    present = _lines(before)
    missing = tuple(line for line in wanted.lines if line not in present)
    if not missing:
        return []
    newline = "\r\n" if b"\r\n" in before else "\n"
    block = [wanted.comment] if wanted.comment and wanted.comment not in present else []
    block += missing
    separator = newline if before and not before.endswith(b"\n") else ""
    replace_own_file(path, before + (separator + newline.join(block) + newline).encode("utf-8"))
    return [FileChange(path, created=current is None, added=missing)]


def _refuse_foreign_folder(path: Path) -> None:
    """A folder that holds anything but what ``init`` adds to is someone's: never write into it."""
    if not os.path.lexists(path):
        above = next(p for p in path.parents if os.path.lexists(p))
        if not above.is_dir():
            raise CodexmemError(
                "ERR_INVALID_INPUT", f"{above} is a file, so {path} cannot be made: pass --store with a new folder"
            )
        return
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except NotADirectoryError:
        raise CodexmemError(
            "ERR_INVALID_INPUT", f"{path} exists and is not a folder: pass --store with a new or empty folder"
        ) from None
    except OSError as exc:
        raise CodexmemError("ERR_INVALID_INPUT", f"cannot read the folder {path}: {exc.strerror or exc}") from None
    foreign = [e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in entries if e.name not in MAY_HOLD]
    if not foreign:
        return
    shown = ", ".join(foreign[:SHOWN_ENTRIES])
    if len(foreign) > SHOWN_ENTRIES:
        shown += f" and {len(foreign) - SHOWN_ENTRIES} more"
    raise CodexmemError(
        "ERR_INVALID_INPUT",
        f"{path} holds files and is not a codexmem store ({shown}); init never writes into such a folder: "
        f"pass --store with a new or empty folder, such as {path / '.codexmem'}",
    )


def _without_credentials(url: str) -> str:
    """Never store a password that someone put in a remote url."""
    if "://" in url and "@" in url.split("://", 1)[1].split("/", 1)[0]:
        scheme, rest = url.split("://", 1)
        host_part, _, tail = rest.partition("/")
        return f"{scheme}://{host_part.rsplit('@', 1)[1]}/{tail}"
    return url
