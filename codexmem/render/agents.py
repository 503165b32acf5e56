"""AGENTS.md for Codex: rendering from the store, and installing it safely.

The text is stable instruction text: identity, relations, channels and workflow rules, never
session state or handoff contents, so it does not change from one session to the next and the
prompt prefix stays cacheable. Values that are unknown stay visible as ``<placeholder>``s.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codexmem.errors import CodexmemError, Warnings, invalid_input, one_line_problem
from codexmem.store.atomic import replace_own_file

if TYPE_CHECKING:
    from codexmem.store.store import Store

BEGIN_MARKER = "<!-- codexmem:begin -->"
END_MARKER = "<!-- codexmem:end -->"
PLACEHOLDER_RE = re.compile(r"<[a-z][a-z0-9-]*>")
MAX_AGENTS_BYTES = 32 * 1024
"""What Codex reads of the AGENTS.md files from the repository root down (``project_doc_max_bytes``)."""
OVERRIDE_NAME = "AGENTS.override.md"
"""Codex reads this file instead of AGENTS.md in the same folder."""
TARGETS = ("global", "project", "both")
MODES = ("safe", "append", "overwrite")


@dataclass
class RelatedProject:
    name: str
    relation_type: str
    id: str | None = None


@dataclass
class ChannelRef:
    id: str
    name: str
    description: str = ""


@dataclass
class AgentsContext:
    """Everything the project template shows; fields left empty render as placeholders."""

    project_name: str = "<project-name>"
    system_name: str = "<system-name>"
    project_id: str | None = None
    system_id: str | None = None
    related: list[RelatedProject] = field(default_factory=list)
    preferred_tags: list[str] = field(default_factory=list)
    channels: list[ChannelRef] = field(default_factory=list)
    allow_related: bool = False


def _environment() -> Any:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    from codexmem.resources import data_dir

    # Markdown output, not HTML: nothing to escape, but undefined names must fail loudly.
    return Environment(  # noqa: S701 - renders Markdown for Codex, never HTML
        loader=FileSystemLoader(str(data_dir("templates") / "agents")),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
        lstrip_blocks=False,
    )


def render_project(ctx: AgentsContext) -> str:
    text: str = _environment().get_template("project.md.j2").render(**ctx.__dict__)
    return _tidy(text)


def render_global() -> str:
    text: str = _environment().get_template("global.md.j2").render()
    return _tidy(text)


def _tidy(text: str) -> str:
    """Collapse blank-line runs so conditional sections never leave gaps; end with one newline."""
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"


def unresolved_placeholders(text: str) -> list[str]:
    return sorted(set(PLACEHOLDER_RE.findall(text)))


def project_context(store: Store, project_id: str | None = None) -> AgentsContext:
    """Build the context of one declared project of ``store`` (the only one when not named)."""
    from codexmem.store.layout import CHANNEL

    config = store.config
    if project_id is None:
        if len(config.projects) != 1:
            declared = ", ".join(p.id for p in config.projects) or "none"
            raise CodexmemError(
                "ERR_INVALID_INPUT",
                f"name the project with --project (declared projects: {declared}), or write the global "
                "~/.codex/AGENTS.md with --global",
            )
        decl = config.projects[0]
    else:
        found = config.project(project_id)
        if found is None:
            declared = ", ".join(p.id for p in config.projects) or "none"
            raise CodexmemError(
                "ERR_INVALID_INPUT",
                f"project {project_id} is not declared in codexmem.yaml (declared projects: {declared})",
            )
        decl = found
    names = {p.id: p.name for p in config.projects}
    related = [
        RelatedProject(name=names.get(r.project, r.project), relation_type=r.relation_type, id=r.project)
        for r in decl.relations
    ]
    channels = [
        ChannelRef(id=c["record_channel_id"], name=c.get("name", ""), description=c.get("description", ""))
        for c in store.fresh_index().select(CHANNEL, order=[("id", False)])
    ]
    return AgentsContext(
        project_name=decl.name,
        system_name=config.system.name if config.system else "<system-name>",
        project_id=decl.id,
        system_id=config.system.id if config.system else None,
        related=related,
        preferred_tags=list(decl.preferred_tags),
        channels=channels,
        allow_related=bool(related),
    )


def apply_overrides(
    ctx: AgentsContext,
    *,
    project_name: str | None = None,
    system_name: str | None = None,
    related_repositories: list[str] | None = None,
    preferred_tags: list[str] | None = None,
    allow_related_project_memory: bool | None = None,
) -> AgentsContext:
    """Arguments of ``memory_install_agents`` override the store config for one render."""
    for name, value in (("project_name", project_name), ("system_name", system_name)):
        _one_line(name, value or "")
    for name, values in (("related_repositories", related_repositories), ("preferred_tags", preferred_tags)):
        for i, value in enumerate(values or []):
            _one_line(f"{name}[{i}]", value)
    if project_name and project_name.strip():
        ctx.project_name = project_name.strip()
    if system_name and system_name.strip():
        ctx.system_name = system_name.strip()
    if related_repositories is not None:
        known = {r.name: r for r in ctx.related}
        ctx.related = [
            known.get(name, RelatedProject(name=name, relation_type="related_to"))
            for name in _unique(related_repositories)
        ]
    if preferred_tags is not None:
        ctx.preferred_tags = _unique(preferred_tags)
    if allow_related_project_memory is not None:
        ctx.allow_related = allow_related_project_memory
    return ctx


def _one_line(field: str, value: str) -> None:
    """Refuse a name that would write more than itself into AGENTS.md: a line break starts a
    heading or an instruction of its own, and an HTML comment could end codexmem's marked block."""
    if (problem := one_line_problem(value)) is not None:
        raise invalid_input(field, problem)
    if "<!--" in value or "-->" in value:
        raise invalid_input(
            field, "must not hold an HTML comment (<!-- or -->): codexmem's block in AGENTS.md is marked by them"
        )


def _unique(values: list[str]) -> list[str]:
    out: list[str] = []
    for value in values:
        value = value.strip()
        if value and value not in out:
            out.append(value)
    return out


# ------------------------------------------------------------------ installation


def install_agents(
    open_store: Callable[[], Store],
    warnings: Warnings,
    *,
    target: str,
    mode: str,
    cwd: str,
    project_name: str | None = None,
    system_name: str | None = None,
    related_repositories: list[str] | None = None,
    preferred_tags: list[str] | None = None,
    allow_related_project_memory: bool | None = None,
) -> dict[str, list[dict[str, str]]]:
    """``memory_install_agents``: plan every file (checking every path) before the first is written."""
    for name, value, allowed in (("target", target, TARGETS), ("mode", mode, MODES)):
        if value not in allowed:
            message = f"must be {', '.join(allowed[:-1])} or {allowed[-1]}"
            raise CodexmemError("ERR_INVALID_TARGET", f"{name} {message}", fields=[{"field": name, "message": message}])
    plans = []
    store_root = None
    if target in ("global", "both"):
        plans.append(Plan("global", global_agents_path(), render_global()))
    if target in ("project", "both"):
        if not cwd.strip():
            raise invalid_input("cwd", "is required for a project AGENTS.md: a directory inside the repository")
        path = project_agents_path(cwd)
        store = open_store()
        store_root = store.root
        context = apply_overrides(
            context_for_cwd(store, cwd),
            project_name=project_name,
            system_name=system_name,
            related_repositories=related_repositories,
            preferred_tags=preferred_tags,
            allow_related_project_memory=allow_related_project_memory,
        )
        plans.append(Plan("project", path, render_project(context)))
    return install(plans, mode, warnings, store_root)


def context_for_cwd(store: Store, cwd: str) -> AgentsContext:
    """The project ``cwd`` resolves to: as the store config declares it, else derived with placeholders."""
    from codexmem.gitrepo import find_git_root
    from codexmem.memory.scope import resolve_scope

    scope = resolve_scope(store, Warnings(), cwd=cwd)  # resolution notes do not concern AGENTS.md
    if store.config.project(scope.project_id) is not None:
        return project_context(store, scope.project_id)
    own = find_git_root(str(store.root))
    if own is not None and find_git_root(scope.workspace_root) != own:
        # A repository's own store speaks for its project only: a block for another repository would
        # mix that project with this store's system, and that repository's `agents --check` fails it.
        raise CodexmemError(
            "ERR_INVALID_TARGET",
            f"cwd {cwd[:200]} is in another repository than this store's ({own}): install that repository's "
            "block with its own store (`codexmem agents --out AGENTS.md` there), or use a shared store",
            fields=[{"field": "cwd", "message": "in another repository than this store's"}],
        )
    declared_system = store.config.system is not None
    return AgentsContext(
        project_name=scope.project_name,
        system_name=scope.system_name if declared_system else "<system-name>",
        project_id=scope.project_id,
        system_id=scope.system_id if declared_system else None,
    )


@dataclass(frozen=True)
class Plan:
    target: str
    path: Path
    content: str


def install(
    plans: list[Plan], mode: str, warnings: Warnings, store_root: Path | None = None
) -> dict[str, list[dict[str, str]]]:
    """Write each planned file by ``mode``; report exactly what was written and what was skipped.

    Every path is checked (a link is followed only as :func:`followed` allows) before the first write.
    """
    if mode not in MODES:
        raise CodexmemError("ERR_INVALID_TARGET", "mode must be safe, append, or overwrite")
    written: list[dict[str, str]] = []
    skipped: list[dict[str, str]] = []
    unresolved: set[str] = set()
    files = [followed(plan.path, store_root) for plan in plans]
    texts = []
    for file in files:  # every file read and judged before the first is written
        try:
            texts.append(_read_existing(file))
        except OSError as exc:
            raise CodexmemError("ERR_AGENTS_WRITE_DENIED", f"cannot read {file}: {exc.strerror}") from None
        if mode == "append":  # overwrite replaces the whole file, as asked; safe leaves it alone
            refuse_stray_markers(file, texts[-1])
    for plan, file, existing in zip(plans, files, texts, strict=True):
        linked = {} if file == plan.path else {"file": str(file)}
        if existing is not None and mode == "safe":
            skipped.append(
                {
                    "path": str(plan.path),
                    **linked,
                    "target": plan.target,
                    "mode": mode,
                    "reason": "existing AGENTS.md was preserved in safe mode",
                }
            )
            warnings.add(
                "WARN_EXISTING_AGENTS_SKIPPED", f"{plan.target} AGENTS.md already existed and was skipped in safe mode"
            )
            continue
        # Always inside the markers: a later append, or `codexmem agents`, finds the block and
        # replaces it (written bare, an append after it added a second copy).
        new = with_block(existing or "" if mode == "append" else "", plan.content)
        if existing == new:
            skipped.append(
                {"path": str(plan.path), **linked, "target": plan.target, "mode": mode, "reason": "already up to date"}
            )
            continue
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            replace_own_file(file, new.encode("utf-8"))
        except OSError as exc:
            raise CodexmemError("ERR_AGENTS_WRITE_DENIED", f"cannot write {file}: {exc.strerror}") from None
        written.append({"path": str(plan.path), **linked, "target": plan.target, "mode": mode})
        unresolved.update(unresolved_placeholders(plan.content))
    for plan in plans:
        missed = missed_by_codex(plan.path) if plan.target == "project" else None
        if missed:
            warnings.add("WARN_AGENTS_NOT_READ", missed)
    if unresolved:
        warnings.add(
            "WARN_PLACEHOLDERS_UNRESOLVED",
            "AGENTS.md was written with placeholders to fill in by hand: " + ", ".join(sorted(unresolved)),
        )
    return {"written_files": written, "skipped_files": skipped}


def with_block(existing: str, content: str) -> str:
    """``existing`` with codexmem's block replaced (or appended once); all else kept byte for byte.

    The block takes the file's line ending: a person's CRLF file stays CRLF throughout.
    """
    eol = line_end(existing)
    block = marked(content, eol)
    span = _block_span(existing)
    if span is not None:
        return existing[: span[0]] + block + existing[span[1] :]
    if not existing:
        return block + eol
    separator = "" if existing.endswith(eol * 2) else (eol if existing.endswith("\n") else eol * 2)
    return existing + separator + block + eol


def line_end(text: str) -> str:
    """``\\r\\n`` when ``text``'s first line ends so (a file written on Windows), else ``\\n``."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def marked(content: str, eol: str = "\n") -> str:
    """``content`` between codexmem's markers: the block codexmem owns in a shared file."""
    return f"{BEGIN_MARKER}\n{content.rstrip()}\n{END_MARKER}".replace("\n", eol)


def marked_block(text: str) -> str | None:
    """The marked block of ``text`` (markers included), or None when it has none."""
    span = _block_span(text)
    return text[span[0] : span[1]] if span else None


def _marker_line(marker: str) -> str:
    """A marker counts alone on its line only: a sentence or a code span naming it is the person's text."""
    return "^(?:\ufeff)?" + rf"[ \t]*({re.escape(marker)})[ \t]*\r?$"  # a byte order mark may open the file


_BEGIN_LINE, _END_LINE = (re.compile(_marker_line(m), re.M) for m in (BEGIN_MARKER, END_MARKER))
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.M)


def _fenced(text: str) -> list[tuple[int, int]]:
    """Where the fenced code blocks of ``text`` are (Markdown's ``` and ~~~ fences): a marker shown
    in one is the person's example, not codexmem's block."""
    spans: list[tuple[int, int]] = []
    opened: re.Match[str] | None = None
    for fence in _FENCE.finditer(text):
        if opened is None:
            opened = fence
        elif fence.group(1)[0] == opened.group(1)[0] and len(fence.group(1)) >= len(opened.group(1)):
            spans.append((opened.start(), fence.end()))
            opened = None
    if opened is not None:  # never closed: it runs to the end, as Markdown reads it
        spans.append((opened.start(), len(text)))
    return spans


def _markers(text: str) -> tuple[list[re.Match[str]], list[re.Match[str]]]:
    """The begin and end marker lines of ``text`` outside its fenced code blocks."""
    fenced = _fenced(text) if "```" in text or "~~~" in text else []

    def outside(found: Iterable[re.Match[str]]) -> list[re.Match[str]]:
        return [m for m in found if not any(start <= m.start() < end for start, end in fenced)]

    return outside(_BEGIN_LINE.finditer(text)), outside(_END_LINE.finditer(text))


def _block_span(text: str) -> tuple[int, int] | None:
    """Where codexmem's block is: one begin marker line, then one end marker line; None for anything else."""
    return _one_block(*_markers(text))


def _one_block(begins: list[re.Match[str]], ends: list[re.Match[str]]) -> tuple[int, int] | None:
    if len(begins) != 1 or len(ends) != 1 or ends[0].start() < begins[0].start():
        return None
    return begins[0].start(1), ends[0].end(1)


def refuse_stray_markers(path: Path, text: str | None) -> None:
    """Refuse a file whose markers do not make one block (a begin whose end was deleted by hand):
    the block it would replace would run from a stray marker over the person's own text."""
    begins, ends = _markers(text or "")
    if (not begins and not ends) or _one_block(begins, ends) is not None:
        return
    raise CodexmemError(
        "ERR_AGENTS_WRITE_DENIED",
        f"{path} holds {len(begins)} {BEGIN_MARKER} and {len(ends)} {END_MARKER} lines, not one of each in that "
        "order, so where codexmem's block ends is unclear and writing could replace your own text: delete the stray "
        "marker by hand, then run again",
    )


# ------------------------------------------------------------------ the CLI's file

CLI_MODES = ("append", "overwrite")
"""``codexmem agents --out``: without a mode, only a missing file or codexmem's own block is written."""


def write_marked(path: Path, content: str, mode: str | None, store_root: Path | None = None) -> str:
    """Write ``content`` as codexmem's marked block in ``path``; return what was done, for the person.

    A missing file gets the block; a file with the block gets it replaced, every other byte kept;
    a file without it is left alone unless ``mode`` says append (the block at its end) or
    overwrite (the file replaced by the block). A link is written through as :func:`followed` allows.
    """
    link = path
    path = followed(link, store_root)
    try:
        existing = _read_existing(path)
    except OSError as exc:
        raise CodexmemError("ERR_AGENTS_WRITE_DENIED", f"cannot read {path}: {exc.strerror or exc}") from None
    if mode != "overwrite":
        refuse_stray_markers(path, existing)
    if existing is None or mode == "overwrite":
        new = with_block("", content)
        done = f"wrote {path}" if existing is None else f"replaced {path} by the codexmem block"
    elif _block_span(existing) is not None:
        new, done = with_block(existing, content), f"updated the codexmem block of {path}; the rest is unchanged"
    elif mode == "append":
        new, done = with_block(existing, content), f"appended the codexmem block to {path}"
    else:
        raise CodexmemError(
            "ERR_AGENTS_WRITE_DENIED",
            f"{path} exists and has no codexmem block, so it was left alone: `--mode append` adds the block "
            "at its end, `--mode overwrite` replaces the whole file",
        )
    through = "" if path == link else f" ({link} links to it)"
    if new == existing:
        return f"{path} is up to date{through}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_own_file(path, new.encode("utf-8"))
    except OSError as exc:
        raise CodexmemError("ERR_AGENTS_WRITE_DENIED", f"cannot write {path}: {exc.strerror or exc}") from None
    return done + through


def check_marked(path: Path, content: str, store_root: Path | None = None) -> tuple[str, str | None] | None:
    """None when ``path`` holds ``content`` (in its marked block, when it has one); else what differs
    and the ``--mode`` that would fix it (None: the default)."""
    path = followed(path, store_root)
    try:
        existing = _read_existing(path)
    except OSError as exc:
        raise CodexmemError("ERR_AGENTS_WRITE_DENIED", f"cannot read {path}: {exc.strerror or exc}") from None
    if existing is None:
        return "does not exist", None
    block = marked_block(existing)
    if block is not None:
        same = block == marked(content, line_end(existing))
        return None if same else ("the codexmem block differs from the rendering", None)
    return None if existing == content else ("has no codexmem block", "append")


def codex_read_limit() -> tuple[int, str]:
    """How many bytes of AGENTS.md Codex reads, and where that is said: ``project_doc_max_bytes``
    of Codex's config (``$CODEX_HOME/config.toml``, by default ``~/.codex/config.toml``), else its
    default, 32 KiB. A config that does not parse is Codex's to report: the default is assumed."""
    home = os.environ.get("CODEX_HOME") or os.path.join(os.environ.get("HOME") or str(Path.home()), ".codex")
    config = Path(home) / "config.toml"
    try:
        with open(config, "rb") as fh:
            value = tomllib.load(fh).get("project_doc_max_bytes")
    except (OSError, tomllib.TOMLDecodeError):
        value = None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value, f"set in {config}"
    return MAX_AGENTS_BYTES, "Codex's default"


def missed_by_codex(path: Path) -> str | None:
    """Why Codex would not read the whole codexmem block of the AGENTS.md at ``path`` (None: it would).

    Codex reads one file per folder from the repository root down to its working folder, an
    ``AGENTS.override.md`` instead of the AGENTS.md beside it, and cuts what comes after the
    first ``MAX_AGENTS_BYTES`` of them all: a block appended to a long file may never be read.
    """
    from codexmem.gitrepo import find_git_root

    path = Path(os.path.abspath(path))
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    text = raw.decode("utf-8", "surrogateescape")
    span = _block_span(text)
    if span is None:  # no block: nothing of codexmem's to miss
        return None
    override = path.with_name(OVERRIDE_NAME)
    if path.name != OVERRIDE_NAME and override.is_file():
        return (
            f"Codex reads {override} instead of {path.name} in that folder, so it does not read this block: "
            f"add the block there too (`codexmem agents --out {override} --mode append`) or remove that file"
        )
    before = 0  # what Codex reads first: the files of the folders above, from the repository root down
    root = find_git_root(str(path.parent))
    folder = path.parent
    while root is not None and folder != root and folder.is_relative_to(root):
        folder = folder.parent
        read = next((f for f in (folder / OVERRIDE_NAME, folder / "AGENTS.md") if f.is_file()), None)
        before += read.stat().st_size if read is not None else 0
    reach = before + len(text[: span[1]].encode("utf-8", "surrogateescape"))
    limit, where = codex_read_limit()
    if reach <= limit:
        return None
    above = f" ({before:,} of them in the AGENTS.md files of the folders above)" if before else ""
    return (
        f"the codexmem block ends {reach:,} bytes into the AGENTS.md files Codex reads{above}, past the "
        f"{limit:,} it reads (project_doc_max_bytes, {where}), so Codex gets it cut or not at all: "
        "move the block nearer the top of the file, shorten the file, or raise project_doc_max_bytes"
    )


def followed(path: Path, store_root: Path | None) -> Path:
    """The file to read and write for ``path``: itself, or the file a symbolic link there names when
    that is a file of the same repository (``AGENTS.md -> CLAUDE.md``: one text for two agents), or
    of the home folder for ``~/.codex/AGENTS.md`` (a dotfiles checkout). A link anywhere else, to
    nothing, into the store or into a ``.git`` folder is refused, so the text lands in no other file.
    """
    if not path.is_symlink():
        return path
    from codexmem.gitrepo import find_git_root
    from codexmem.store.placement import misplaced

    real = Path(os.path.realpath(path))
    holder = find_git_root(str(path.parent))
    home = os.environ.get("HOME")
    if holder is None and home and os.path.abspath(path) == os.path.join(home, ".codex", "AGENTS.md"):
        holder = Path(home)
    if holder is None or not real.is_relative_to(os.path.realpath(holder)):
        problem: str | None = f"that is outside {holder or 'any repository'}"
    elif not real.exists():
        problem = "that does not exist"
    elif not real.is_file():
        problem = "that is not a file"
    else:
        problem = misplaced(real, store_root, holds_files=False)
    if problem is None:
        return real
    raise CodexmemError(
        "ERR_AGENTS_WRITE_DENIED",
        f"{path} is a symbolic link to {real}, and {problem}; codexmem follows a link only to a file of the "
        "same repository (of the home folder, for ~/.codex/AGENTS.md): point the link at one, or replace it by a file",
    )


MAX_EDITED_CHARS = 8 * 1024 * 1024
"""The longest file codexmem writes its block into: it is read whole and written back whole
(a read cut at 256 KiB once wrote back the cut file, losing the rest); a longer one is refused."""


def _read_existing(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            text = fh.read(MAX_EDITED_CHARS + 1)
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise CodexmemError("ERR_AGENTS_WRITE_DENIED", f"{path} is not UTF-8 text; left untouched") from None
    if len(text) > MAX_EDITED_CHARS:
        raise CodexmemError(
            "ERR_AGENTS_WRITE_DENIED",
            f"{path} is longer than the {MAX_EDITED_CHARS:,} characters codexmem edits; left untouched "
            "(Codex reads its first 32 KiB only: shorten it)",
        )
    return text


def global_agents_path() -> Path:
    home = os.environ.get("HOME") or str(Path.home())
    if not home:
        raise CodexmemError("ERR_AGENTS_WRITE_DENIED", "the home directory is unknown")
    return Path(home) / ".codex" / "AGENTS.md"


def project_agents_path(cwd: str) -> Path:
    """AGENTS.md at the git root of ``cwd``; a model-supplied path outside a work tree is refused."""
    from codexmem.gitrepo import find_git_root
    from codexmem.memory.scope import checked_cwd

    root = find_git_root(checked_cwd(cwd))
    if root is None:
        raise CodexmemError(
            "ERR_INVALID_TARGET",
            "cwd is not inside a git work tree; the project AGENTS.md goes at a repository's root",
            fields=[{"field": "cwd", "message": "not inside a git work tree"}],
        )
    return root / "AGENTS.md"
