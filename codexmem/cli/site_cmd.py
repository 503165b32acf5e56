"""``codexmem site``: build the static site of the store (and optionally serve it)."""

from __future__ import annotations

import argparse
import errno
import sys
from datetime import datetime
from pathlib import Path
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    from codexmem.cli.common import path_text

    p = sub.add_parser(
        "site",
        parents=[common],
        help="build the static site of the store (Pagefind search included)",
        description="Render the store into a static site (default: _site/ in the folder holding the store: the "
        "repository root for .codexmem/), "
        "re-rendering only pages whose inputs changed, then index the changed parts for search with Pagefind. "
        "Serve the folder over HTTP (--serve, or any static host): search and long lists load data.",
    )
    p.add_argument(
        "--out", type=path_text, metavar="DIR", help="output folder (default: _site/ in the folder holding the store)"
    )
    p.add_argument(
        "--base-url", metavar="URL", help="where the site is published (e.g. https://org.github.io/repo/), for the feed"
    )
    p.add_argument(
        "--now",
        metavar="TIME",
        help="the time formulas are computed at (RFC 3339 or YYYY-MM-DD; default: today, 00:00 UTC)",
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


def _error(message: str) -> int:
    print(f"codexmem: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from codexmem.cli.common import open_store, warn_unreadable
    from codexmem.render.site import build_site
    from codexmem.render.site.serve import make_server, serve

    if not 0 <= args.port <= 65535:
        return _error(f"--port must be 0..65535 (0 picks a free port), got {args.port}")
    if args.port and not args.serve:
        return _error("--port is the port of --serve: add --serve, or leave --port out")
    if args.now is not None and not args.now.strip():
        return _error("--now must be a date or time such as 2026-03-13 (leave it out for today)")
    store = open_store(args)
    out = Path(args.out) if args.out else default_out(store.root)
    now = parse_now(args.now) if args.now else None
    server = None
    if args.serve:
        # Take the port before building, so a busy port is said at once, not after the build.
        try:
            server = make_server(out, port=args.port)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return _error(f"port {args.port} is in use: pass another with --port N, or --port 0 for a free one")
            return _error(f"cannot listen on 127.0.0.1:{args.port} ({exc.strerror}): pass another --port")
    report = build_site(
        store,
        out,
        base_url=args.base_url,
        now=now,
        search=not args.no_search,
        full=args.full,
        progress_stream=sys.stderr,
    )
    print(report.summary())
    for warning in report.warnings:
        print(f"codexmem site: warning: {warning}", file=sys.stderr)
    if report.base_url is None and report.feed_written:
        print("codexmem site: note: no --base-url (or site.base_url), so feed.xml links are relative", file=sys.stderr)
    warn_unreadable(store)
    if server is not None:
        serve(server, report.out)
    elif report.written or report.deleted:
        print(
            "codexmem site: note: serve it over HTTP to browse (search and long lists load data): "
            "codexmem site --serve, or any static host; file:// shows pages only",
            file=sys.stderr,
        )
    return 0
