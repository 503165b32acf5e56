"""``codexmem check``: validate every file of a store (run it in CI)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("check", parents=[common], help="validate a whole store; non-zero exit on an error")
    p.add_argument("--quiet", action="store_true", help="print errors only")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codexmem.check import check_store
    from codexmem.cli.common import store_path

    root = store_path(args)
    result = check_store(root)
    for finding in result.findings:
        if args.quiet and finding.level != "error":
            continue
        print(str(finding))
    counts = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in sorted(result.counts.items()))
    status = "FAILED" if result.errors else "ok"
    print(f"check {status}: {root}: {counts or 'empty'}; {len(result.errors)} errors, {len(result.warnings)} warnings")
    return 1 if result.errors else 0
