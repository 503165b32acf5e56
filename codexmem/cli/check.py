"""``codexmem check``: validate every file of a store (run it in CI)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "check",
        parents=[common],
        help="validate a whole store; exit 1 on an error",
        description="Validate every file of the store and print `path: level: problem`. Exit 1 when an error "
        "was found, 2 when there is no store to check.",
    )
    p.add_argument("--quiet", action="store_true", help="print errors only")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codexmem.check import check_store
    from codexmem.cli.common import count, existing_store

    root = existing_store(args)
    result = check_store(root)
    for finding in result.findings:
        if args.quiet and finding.level != "error":
            continue
        print(str(finding))
    counts = ", ".join(count(n, k) for k, n in sorted(result.counts.items()))
    status = "FAILED" if result.errors else "ok"
    problems = f"{count(len(result.errors), 'error')}, {count(len(result.warnings), 'warning')}"
    print(f"check {status}: {root}: {counts or 'empty'}; {problems}")
    return 1 if result.errors else 0
