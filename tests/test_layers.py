"""The layers as docs/architecture.md draws them, read from every module's imports.

Every ``import`` and ``from ... import`` in codexmem/ counts, those inside functions (lazy imports)
and under ``TYPE_CHECKING`` included: a lazy import hides a dependency from a reader, not from the
design. A new module lands in its folder's layer; a module at the package root (errors, envelope,
gitrepo, credentials, timeutil, resources, models/) is a leaf every layer may use, except
codexmem/check.py, which composes the services' checks and sits with them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "codexmem"

FORBIDDEN: dict[str, set[str]] = {
    "store": {"memory", "records", "render", "mcp", "cli", "check"},
    "models": {"memory", "records", "render", "mcp", "cli", "check"},
    "memory": {"mcp", "cli", "render", "check"},
    "records": {"mcp", "cli", "render", "check"},
    "check": {"mcp", "cli", "render"},
    "render": {"mcp", "cli"},
    "mcp": {"cli"},
}
"""Layer -> the layers it must never import (``check`` is codexmem/check.py)."""
LEAVES = {"errors", "envelope", "gitrepo", "credentials", "timeutil", "resources"}
"""Modules at the package root below every layer: they import nothing of codexmem but other leaves."""


def layer_of(module: str) -> str | None:
    """``codexmem.store.index.base`` -> ``store``; ``codexmem.check`` -> ``check``."""
    parts = module.split(".")
    if parts[0] != "codexmem" or len(parts) < 2:
        return None
    return parts[1]


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def imports_of(path: Path) -> set[str]:
    """Every codexmem module ``path`` imports, wherever the import statement stands."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    return imports_in(path.read_text("utf-8"), package)


def imports_in(source: str, package: str) -> set[str]:
    """Every codexmem module ``source`` (a module of ``package``) imports: absolute, relative, lazy."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {name for name in found if name == "codexmem" or name.startswith("codexmem.")}


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_a_module_imports_nothing_above_its_layer(path: Path) -> None:
    module = module_name(path)
    layer = layer_of(module)
    if layer in LEAVES:
        allowed = LEAVES | {layer}
        above = {m for m in imports_of(path) if layer_of(m) not in allowed and m != "codexmem"}
        assert not above, f"{module} is a leaf but imports {sorted(above)}"
        return
    forbidden = FORBIDDEN.get(layer or "", set())
    wrong = sorted(m for m in imports_of(path) if layer_of(m) in forbidden)
    assert not wrong, f"{module} ({layer}/) must not import {sorted({layer_of(m) for m in wrong})}: {wrong}"


def test_every_folder_of_the_package_has_a_rule() -> None:
    """A new folder must be placed in the drawing (and here) before it can hold code."""
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders <= set(FORBIDDEN) | {"cli"}


def test_the_reader_finds_lazy_relative_and_type_checking_imports() -> None:
    """The rule reader itself, on a module of codexmem.store: nothing hides from it."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from codexmem.render import agents\n"
        "def f():\n    import codexmem.mcp.server\n"
        "from ..memory import notes\n"
        "from . import layout\n"
    )
    found = imports_in(source, "codexmem.store")
    assert {"codexmem.render", "codexmem.mcp.server", "codexmem.memory", "codexmem.store"} <= found
    assert {layer_of(m) for m in found} & FORBIDDEN["store"] == {"render", "mcp", "memory"}
