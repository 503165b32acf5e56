"""``codexmem migrate``: bring a store of an earlier format to the current one."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "migrate",
        parents=[common],
        help="convert a store of an earlier format (commit the result)",
        description="Rewrite every record in the current, merge-safe format and record it as it stands, make "
        "config paths relative to the store, and add the merge driver; nothing else changes. Commit the result.",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codexmem.cli.common import existing_store
    from codexmem.models.config import STORE_FORMAT
    from codexmem.store.migrate import migrate

    root = existing_store(args)
    report = migrate(root)
    if report.was_current and not report.paths:
        print(f"migrate: {root} is already in the current format (format {STORE_FORMAT}): nothing was changed")
        return 0
    if report.was_current:
        print(f"migrate: {root} is in the current format (format {STORE_FORMAT}); only its config changed")
    else:
        print(f"migrate: {report.records} records rewritten and recorded ({report.already} already were)")
    for path in report.paths:
        print(f"  codexmem.yaml: {path} is now relative to the store")
    if report.attributes:
        print(f"  .gitattributes: added {len(report.attributes)} lines")
    if report.driver:
        print("  merge driver registered in this clone (run `codexmem setup` in each other clone)")
    print("review and commit the result")
    return 0
