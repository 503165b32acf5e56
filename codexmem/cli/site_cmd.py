"""``codexmem site``: build the static site of the store (and optionally serve it)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "site",
        parents=[common],
        help="build the static site of the store (Pagefind search included)",
        description="Render the store into a static site (default: _site/ beside the repository root), "
        "re-rendering only pages whose inputs changed, then index it for search with Pagefind.",
    )
    p.add_argument("--out", metavar="DIR", help="output folder (default: _site/ next to the store's folder)")
    p.add_argument("--base-url", metavar="URL", help="where the site is published, for absolute feed links")
    p.add_argument(
        "--now",
        metavar="TIME",
        help="the build's time, for formulas (RFC 3339 or YYYY-MM-DD; default: the latest change in the store)",
    )
    p.add_argument("--full", action="store_true", help="ignore the manifest: render every page again")
    p.add_argument("--no-search", action="store_true", help="skip the Pagefind index")
    p.add_argument("--serve", action="store_true", help="then serve the site on 127.0.0.1 until Ctrl-C")
    p.add_argument("--port", type=int, default=0, metavar="N", help="port for --serve (default 0: a free one)")
    p.set_defaults(func=run)


def default_out(store_root: Path) -> Path:
    """``_site`` beside the store: the git root for ``<root>/.codexmem``, else the store's parent."""
    return store_root.parent / "_site"


def parse_now(text: str) -> datetime:
    from codexmem.errors import CodexmemError
    from codexmem.timeutil import parse_ts

    try:
        return parse_ts(text + "T00:00:00Z" if len(text) == 10 else text)
    except ValueError:
        raise CodexmemError(
            "ERR_INVALID_INPUT", f"--now must be RFC 3339 (2026-03-13T10:52:00Z) or YYYY-MM-DD, got {text[:40]!r}"
        ) from None


def run(args: argparse.Namespace) -> int:
    from codexmem.cli.common import open_store
    from codexmem.render.site import build_site
    from codexmem.render.site.serve import serve

    store = open_store(args)
    out = Path(args.out) if args.out else default_out(store.root)
    now = parse_now(args.now) if args.now else None
    if not args.no_search:
        print("after rendering, Pagefind indexes the whole folder (its index is not incremental)", file=sys.stderr)
    report = build_site(
        store,
        out,
        base_url=args.base_url,
        now=now,
        search=not args.no_search,
        full=args.full,
        progress_stream=sys.stderr,
    )
    for warning in report.warnings:
        print(f"codexmem site: warning: {warning}", file=sys.stderr)
    print(report.summary())
    if args.serve:
        serve(report.out, port=args.port)
    return 0
