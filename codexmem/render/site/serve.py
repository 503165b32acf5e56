"""Serve a built site on 127.0.0.1 for a look before publishing (not a production server)."""

from __future__ import annotations

import functools
import posixpath
import sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"


class _Handler(SimpleHTTPRequestHandler):
    """Serves the folder under ``prefix`` (``/repo/`` mimics a GitHub Pages project site)."""

    prefix = "/"
    quiet = False
    extensions_map = {  # noqa: RUF012 - the base class declares it as a plain attribute
        **SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".xml": "application/xml",
    }

    def translate_path(self, path: str) -> str:
        clean = path.split("?", 1)[0].split("#", 1)[0]
        if not clean.startswith(self.prefix):
            return str(Path(self.directory) / ".missing" / "outside-prefix")
        return super().translate_path("/" + clean[len(self.prefix) :])

    def log_message(self, format: str, *args: Any) -> None:
        if not self.quiet:
            super().log_message(format, *args)


def make_server(directory: Path, *, port: int = 0, prefix: str = "/", quiet: bool = False) -> ThreadingHTTPServer:
    """A threading server bound to 127.0.0.1 (port 0: any free port), not yet running."""
    prefix = "/" + posixpath.normpath("/" + prefix).strip("/") + "/"
    prefix = "/" if prefix == "//" else prefix
    handler = type("SiteHandler", (_Handler,), {"prefix": prefix, "quiet": quiet})
    return ThreadingHTTPServer((HOST, port), functools.partial(handler, directory=str(directory)))


def url_of(server: ThreadingHTTPServer, prefix: str = "/") -> str:
    return f"http://{HOST}:{server.server_address[1]}{prefix}"


def serve(server: ThreadingHTTPServer, directory: Path) -> None:
    """Serve until Ctrl-C (the server from :func:`make_server`, already bound); prints the URL first."""
    print(f"serving {directory} at {url_of(server)} (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        raise  # the command ends as any command stopped by Ctrl-C does (exit code 130)
    finally:
        server.server_close()
