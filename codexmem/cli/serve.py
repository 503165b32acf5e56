"""``codexmem serve``: the MCP server over stdio (the only command that imports the SDK, after its handshake)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pathlib loads after the handshake is answered
    from pathlib import Path


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("serve", parents=[common], help="run the MCP server over stdio (for Codex)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codexmem.mcp.launch import serve

    serve(lambda: _store_path(args))
    return 0


def _store_path(args: argparse.Namespace) -> Path:
    from pathlib import Path

    from codexmem.cli.common import store_path
    from codexmem.errors import CodexmemError
    from codexmem.store.locate import STORE_DIRNAME

    try:
        return store_path(args)
    except CodexmemError:
        # Always start: until a store exists every tool answers ERR_STORAGE_UNAVAILABLE.
        return Path.cwd() / STORE_DIRNAME
