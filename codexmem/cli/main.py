"""``codexmem``: entry point and subcommand registry.

Each command module defines ``register(subparsers, common)``, adding its parser with ``parents=[common]``
(which carries ``--store``) and ``set_defaults(func=...)``. Command modules keep heavy imports (the
MCP SDK above all) inside their functions, so ``codexmem check`` never pays for them.

Exit codes, the same for every command: 0 done; 1 findings (``check``, a ``--check`` flag);
2 a usage error, a missing store or bad input; 70 a bug in codexmem (reported in one line too,
never as a traceback; ``CODEXMEM_DEBUG=1`` shows it); 130 Ctrl-C; 141, quietly, when the program
reading the output closed it first (``| head``).
"""

from __future__ import annotations

import argparse
import codecs
import importlib
import io
import os
import re
import sys
from collections.abc import Sequence
from typing import NoReturn, TextIO

from codexmem import __version__
from codexmem.cli import EXIT_INTERRUPTED
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
    "migrate_cmd",
    "setup_cmd",
    "resolve_cmd",
    "merge_cmd",
    "stale_cmd",
    "retract_cmd",
    "diff_cmd",
)
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_BUG = 70
EXIT_PIPE_CLOSED = 141
"""128 + SIGPIPE, as a program the signal ended (git's exit when its reader went away)."""
DEBUG_VAR = "CODEXMEM_DEBUG"
LONG_QUOTED = re.compile(r"'([^'\n]{40})[^'\n]{20,}'")


class Parser(argparse.ArgumentParser):
    """argparse with codexmem's error line; every subcommand's parser is one of these too."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        message = LONG_QUOTED.sub(lambda m: f"'{m.group(1)}…'", message)  # a pasted 5,000 digits stay one line
        self.exit(EXIT_USAGE, f"codexmem: error: {message} (see `{self.prog} --help`)\n")


def store_option(parser: argparse.ArgumentParser) -> None:
    """``--store``; left unset unless given, so it may come before or after a command's action."""
    from codexmem.cli.common import path_text

    parser.add_argument(
        "--store",
        type=path_text,
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="the store folder (default: $CODEXMEM_STORE, else .codexmem/ at the git root)",
    )


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or only ``command``'s part of it when that names a command."""
    parser = Parser(
        prog="codexmem",
        description="Git-native memory and record channels for coding agents, served over MCP.",
        epilog="Exit codes: 0 done, 1 findings (check, --check), 2 usage error, missing store or bad input.",
    )
    parser.add_argument("--version", action="version", version=f"codexmem {__version__}")
    store_option(parser)
    common = argparse.ArgumentParser(add_help=False)
    store_option(common)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    named = [name for name in COMMAND_MODULES if name.removesuffix("_cmd") == command]
    for name in named or COMMAND_MODULES:
        importlib.import_module(f"codexmem.cli.{name}").register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    _printable_anywhere()
    parser = build_parser(words[0] if words else None)  # `codexmem serve` answers sooner without the others
    args = parser.parse_args(words)
    try:
        result = args.func(args)
    except CodexmemError as exc:
        from codexmem.cli.errors import error_lines

        for line in error_lines(exc, args):
            print(line, file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError as exc:
        if not _reader_gone(sys.stdout):
            print(f"codexmem: error: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
        # `codexmem items list bugs | head`: the reader has what it wanted. Quiet, as git is; the
        # unwritten rest goes nowhere, so the interpreter's last flush at exit cannot fail too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE_CLOSED
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"codexmem: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug: still one line for a person, the traceback on request
        if os.environ.get(DEBUG_VAR):
            raise
        print(
            f"codexmem: error: internal error ({type(exc).__name__}: {str(exc)[:200]}); please report it with "
            f"the command you ran ({DEBUG_VAR}=1 shows the traceback)",
            file=sys.stderr,
        )
        return EXIT_BUG
    return int(result or 0)


def _printable_anywhere() -> None:
    """Output in an encoding that lacks a character (a latin-1 terminal, a Windows file) shows ``?``
    for it: titles hold ``…``, ``→`` and ``★``, and printing one was an internal error."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and codecs.lookup(stream.encoding).name != "utf-8":
            stream.reconfigure(errors="replace")


def _reader_gone(stream: TextIO) -> bool:
    """Whether ``stream`` is a pipe whose reading end was closed (the broken pipe was ours to write)."""
    import select

    try:
        fd = stream.fileno()
        poller = select.poll()
        poller.register(fd, 0)  # POLLERR is reported whatever is asked for
        return any(event & select.POLLERR for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False
