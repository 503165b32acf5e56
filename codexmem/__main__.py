"""``python -m codexmem`` runs the CLI."""

from codexmem.cli import entry

raise SystemExit(entry())
