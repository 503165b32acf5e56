"""``codexmem serve``: the MCP server over stdio (the only command that imports the SDK)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("serve", parents=[common], help="run the MCP server over stdio (for Codex)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from codexmem.cli.common import store_path
    from codexmem.errors import CodexmemError
    from codexmem.mcp.server import serve_stdio
    from codexmem.store.locate import STORE_DIRNAME

    try:
        path = store_path(args)
    except CodexmemError:
        # Always start: until a store exists every tool answers ERR_STORAGE_UNAVAILABLE.
        path = Path.cwd() / STORE_DIRNAME
    serve_stdio(path)
    return 0
