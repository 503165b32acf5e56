"""``codexmem``: entry point and subcommand registry.

Each command module defines ``register(subparsers, common)``, adding its parser with ``parents=[common]``
(which carries ``--store``) and ``set_defaults(func=...)``. Command modules keep heavy imports (the
MCP SDK above all) inside their functions, so ``codexmem check`` never pays for them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from codexmem import __version__
from codexmem.errors import CodexmemError

COMMAND_MODULES = (
    "init",
    "check",
    "reindex",
    "serve",
    "summary",
    "agents_cmd",
    "site_cmd",
    "channels_cmd",
    "items_cmd",
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or only ``command``'s part of it when that names a command."""
    parser = argparse.ArgumentParser(
        prog="codexmem",
        description="Git-native memory and record channels for coding agents, served over MCP.",
    )
    parser.add_argument("--version", action="version", version=f"codexmem {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--store",
        metavar="PATH",
        help="the store folder (default: $CODEXMEM_STORE, else .codexmem/ at the git root)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    named = [name for name in COMMAND_MODULES if name.removesuffix("_cmd") == command]
    for name in named or COMMAND_MODULES:
        try:
            module = importlib.import_module(f"codexmem.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"codexmem.cli.{name}":
                continue  # a command not built yet
            raise
        module.register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words[0] if words else None)  # `codexmem serve` answers sooner without the others
    args = parser.parse_args(words)
    try:
        result = args.func(args)
    except CodexmemError as exc:
        print(f"codexmem {args.command}: {exc.message}", file=sys.stderr)
        for field in exc.fields or []:
            name = field.get("field") or field.get("key")
            print(f"  {name}: {field.get('message')}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return int(result or 0)
