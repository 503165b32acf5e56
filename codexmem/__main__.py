"""``python -m codexmem`` runs the CLI."""

from codexmem.cli.main import main

raise SystemExit(main())
