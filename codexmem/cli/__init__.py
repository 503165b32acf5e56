"""The command line: one module per command, each thin over the services."""

from __future__ import annotations

EXIT_INTERRUPTED = 130


def entry() -> int:
    """The ``codexmem`` command. Ctrl-C pressed while the CLI is still being imported ends it as
    any Ctrl-C does (exit 130, no traceback); later ones :func:`codexmem.cli.main.main` handles."""
    try:
        from codexmem.cli.main import main
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return main()
