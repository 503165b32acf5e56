"""Related projects: where their memory lives, opened safely and read-only.

A relation names a project of this store, or of another store given as a path relative to the
directory holding this store (a sibling checkout's ``../order-api/.codexmem``). The path comes
from a file anyone can edit in a pull request, so it is trusted only as far as it leads to a
real store: absolute paths, and paths that do not resolve (after symlinks) to a directory with a
``codexmem.yaml``, are skipped with a warning. Other stores are opened read-only, their index
in memory, once per process.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath

from codexmem.errors import CodexmemError, Warnings
from codexmem.store.layout import CONFIG_FILE
from codexmem.store.store import Store

_opened: dict[Path, Store] = {}
_opened_lock = threading.Lock()


@dataclass
class RelatedSource:
    """One store to read, and the related projects it holds: id -> relation type and display name."""

    store: Store
    relation_types: dict[str, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)


def related_sources(store: Store, project_id: str, warnings: Warnings) -> list[RelatedSource]:
    """The stores holding the projects ``project_id`` declares relations to, grouped by store.

    Warns WARN_RELATED_PROJECTS_SKIPPED when nothing is declared and for each relation whose
    store cannot be used.
    """
    declared = store.config.project(project_id)
    if declared is None or not declared.relations:
        warnings.add("WARN_RELATED_PROJECTS_SKIPPED", "the store config declares no related projects for this project")
        return []
    sources: dict[Path, RelatedSource] = {}
    for relation in declared.relations:
        target = store if relation.store is None else open_related_store(store, relation.store, warnings)
        if target is None or (target is store and relation.project == project_id):
            continue
        source = sources.setdefault(target.root, RelatedSource(target))
        source.relation_types.setdefault(relation.project, relation.relation_type)
        decl = target.config.project(relation.project) or store.config.project(relation.project)
        source.names[relation.project] = decl.name if decl is not None else relation.project
    return list(sources.values())


def open_related_store(store: Store, relative: str, warnings: Warnings) -> Store | None:
    """The store at ``relative`` (from the directory holding ``store``), read-only and cached; None if unusable."""
    problem = _problem(relative)
    resolved: Path | None = None
    if problem is None:
        try:
            resolved = (store.root.parent / relative).resolve(strict=True)
        except (OSError, RuntimeError):
            problem = "does not exist"
    if resolved is not None and resolved == store.root.resolve():
        return store
    if resolved is not None and not (resolved.is_dir() and (resolved / CONFIG_FILE).is_file()):
        problem = f"is not a codexmem store (no {CONFIG_FILE})"
    if problem is None and resolved is not None:
        try:
            return _open_cached(resolved)
        except CodexmemError as exc:
            problem = f"cannot be opened ({exc.message[:120]})"
    warnings.add("WARN_RELATED_PROJECTS_SKIPPED", f"related store {relative[:120]!r} was skipped: {problem}")
    return None


def _problem(relative: str) -> str | None:
    if not relative.strip():
        return "is empty"
    if os.path.isabs(relative) or PureWindowsPath(relative).is_absolute() or PureWindowsPath(relative).drive:
        return "must be relative to the directory holding this store"
    if relative.startswith("~"):
        return "must be relative to the directory holding this store, not to a home directory"
    return None


def _open_cached(path: Path) -> Store:
    with _opened_lock:
        opened = _opened.get(path)
        if opened is None:
            opened = _opened[path] = Store(path, read_only=True)
        return opened
