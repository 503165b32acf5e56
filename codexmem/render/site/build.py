"""Build the site: render what changed, write what differs, delete what is gone, index once.

Incremental by a manifest in ``<store>/.cache/site/manifest.json`` mapping each output file to
the hash of everything it was rendered from (its page context, which holds the versions and
fields of the records it shows, plus the hash of the templates, assets and this generator). A
page whose inputs hash is unchanged and whose file is still there is not rendered at all; a
rendered page is written only when its bytes differ. Files the previous build wrote and this one
does not (pages of deleted records) are deleted; the list of files a build owns is also left in
the folder (``.codexmem-site-files``), so that works without the cache too, and nothing else in
the folder is ever touched. Pagefind then indexes the whole folder: its index is global, so that
step is never incremental.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from codexmem.errors import CodexmemError
from codexmem.render.site.data import load
from codexmem.render.site.feed import FEED_PATH, feed_context, render_feed
from codexmem.render.site.pages import plan
from codexmem.render.site.templating import MarkdownCache, make_env
from codexmem.resources import data_dir
from codexmem.store.store import Store

MANIFEST_FORMAT = 1
PAGEFIND_DIR = "pagefind"
OWNED_LIST = ".codexmem-site-files"
NOJEKYLL = ".nojekyll"
ASSETS_DIR = "assets"
PROGRESS_MIN_PAGES = 200
LARGE_BUILD_PAGES = 2_000


@dataclass
class Output:
    """One file of the site: its inputs hash, and how to make its bytes if they are needed."""

    path: str
    inputs: str
    render: Callable[[], bytes]


@dataclass
class BuildReport:
    out: Path
    pages: int = 0
    rendered: int = 0
    written: int = 0
    deleted: int = 0
    assets_written: int = 0
    markdown: int = 0
    seconds: float = 0.0
    search_seconds: float | None = None
    warnings: list[str] = field(default_factory=list)
    written_paths: list[str] = field(default_factory=list)
    deleted_paths: list[str] = field(default_factory=list)

    def summary(self) -> str:
        unchanged = self.pages - self.written
        text = (
            f"wrote {self.written:,} of {self.pages:,} pages ({unchanged:,} unchanged, {self.deleted:,} deleted)"
            f" to {self.out} in {self.seconds:.2f} s"
        )
        if self.search_seconds is not None:
            text += f"; Pagefind indexed the whole folder in {self.search_seconds:.2f} s"
        return text


def _hash(*parts: bytes | str) -> str:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(part.encode("utf-8") if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def normalize_base_url(url: str | None) -> str | None:
    if not url:
        return None
    if not url.startswith(("https://", "http://")):
        raise CodexmemError("ERR_INVALID_INPUT", f"--base-url must start with https:// or http://, got {url[:80]!r}")
    return url if url.endswith("/") else url + "/"


def build_site(
    store: Store,
    out: Path,
    *,
    base_url: str | None = None,
    now: datetime | None = None,
    search: bool = True,
    full: bool = False,
    progress_stream: TextIO | None = None,
) -> BuildReport:
    """Render the store into ``out``; ``full`` ignores the manifest (every page is rendered)."""
    started = time.perf_counter()
    out = Path(os.path.abspath(out))
    report = BuildReport(out=out)
    base = normalize_base_url(base_url or store.config.site.base_url)
    if base is None:
        report.warnings.append(
            "no --base-url (or site.base_url in codexmem.yaml): feed.xml uses tag: ids and relative links"
        )
    templates = data_dir("templates") / "site"
    assets = _assets(data_dir("site"))
    data = load(store, now=now)
    markdown = MarkdownCache()
    env = make_env(templates, markdown)
    site = {
        "title": data.title,
        "assets": {name: f"{ASSETS_DIR}/{name}?v={digest[:10]}" for name, (digest, _) in assets.items()},
    }
    code = _code_hash()
    generator = _hash(code, _tree_hash(templates, "*"), _canonical(site))

    outputs: list[Output] = []
    for page in plan(data):
        depth = page.path.count("/")
        context = {**page.context, "root": "../" * depth, "site": site, "path": page.path}
        template = page.template

        def render(template: str = template, context: dict[str, Any] = context) -> bytes:
            return env.get_template(template).render(context).encode("utf-8")

        outputs.append(Output(page.path, _hash(generator, template, _canonical(context)), render))
    feed = feed_context(data, base)
    outputs.append(Output(FEED_PATH, _hash(code, _canonical(feed)), lambda: render_feed(feed)))
    for name, (digest, raw) in assets.items():
        outputs.append(Output(f"{ASSETS_DIR}/{name}", digest, functools.partial(bytes, raw)))
    report.pages = sum(1 for o in outputs if not o.path.startswith(ASSETS_DIR + "/"))

    manifest_path = store.layout.cache / "site" / "manifest.json"
    previous = {} if full else _read_manifest(manifest_path, out)
    owned = set(previous) or _read_owned(out)
    entries = _write_outputs(outputs, out, previous, report, progress_stream)
    report.deleted_paths = _delete_stale(out, owned, set(entries))
    report.deleted = len(report.deleted_paths)
    _save_owned(out, entries)
    _save_manifest(manifest_path, out, entries)
    report.markdown = markdown.rendered
    report.seconds = time.perf_counter() - started
    if search and (report.written or report.deleted or report.assets_written or not (out / PAGEFIND_DIR).is_dir()):
        search_started = time.perf_counter()
        run_pagefind(out)
        report.search_seconds = time.perf_counter() - search_started
    return report


def _assets(folder: Path) -> dict[str, tuple[str, bytes]]:
    """name -> (content hash, bytes) of the shipped CSS, JavaScript and icons."""
    found: dict[str, tuple[str, bytes]] = {}
    for path in sorted(folder.iterdir()):
        if path.is_file() and not path.name.startswith("."):
            raw = path.read_bytes()
            found[path.name] = (_hash(raw), raw)
    return found


def _tree_hash(folder: Path, pattern: str) -> str:
    parts: list[bytes | str] = []
    for path in sorted(folder.rglob(pattern)):
        if path.is_file() and "__pycache__" not in path.parts:
            parts += [path.relative_to(folder).as_posix(), path.read_bytes()]
    return _hash(*parts)


def _code_hash() -> str:
    """The renderer's own source: a changed filter or context changes every page's inputs."""
    render = Path(__file__).resolve().parent.parent
    return _hash(_tree_hash(render / "site", "*.py"), (render / "markdown.py").read_bytes())


# ------------------------------------------------------------------ writing


def _write_outputs(
    outputs: list[Output],
    out: Path,
    previous: dict[str, dict[str, Any]],
    report: BuildReport,
    stream: TextIO | None,
) -> dict[str, dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = {}
    todo: list[tuple[Output, Path]] = []
    for output in outputs:
        target = out / output.path
        old = previous.get(output.path)
        if old is not None and old.get("inputs") == output.inputs and _size(target) == old.get("size"):
            entries[output.path] = old
        else:
            todo.append((output, target))
    bar = Progress(len(todo), stream)
    made: set[Path] = set()
    for output, target in todo:
        raw = output.render()
        report.rendered += 1
        size = _size(target)
        changed = size is None or size != len(raw) or target.read_bytes() != raw
        if size is None:
            _write_new(target, raw, made)
        elif changed:
            _write(target, raw)
        if changed and output.path.startswith(ASSETS_DIR + "/"):
            report.assets_written += 1
        elif changed:
            report.written += 1
            report.written_paths.append(output.path)
        entries[output.path] = {"inputs": output.inputs, "size": len(raw)}
        bar.step()
    bar.done()
    return dict(sorted(entries.items()))


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except (FileNotFoundError, NotADirectoryError):
        return None


def _write_new(target: Path, raw: bytes, made: set[Path]) -> None:
    """A file that did not exist: no reader can hold an old copy, so no rename is needed."""
    if target.parent not in made:
        target.parent.mkdir(parents=True, exist_ok=True)
        made.add(target.parent)
    with open(target, "wb") as fh:
        fh.write(raw)


def _write(target: Path, raw: bytes) -> None:
    """Readers of a served folder never see half a page: temporary file, then rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(raw)
    os.replace(tmp, target)


def _delete_stale(out: Path, previous: set[str], current: set[str]) -> list[str]:
    """Delete files the last build wrote that this one does not (pages of deleted records)."""
    deleted: list[str] = []
    for rel in sorted(previous - current):
        target = out / rel
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
            deleted.append(rel)
        parent = target.parent
        while parent != out and parent.is_relative_to(out):
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent
    return deleted


# ------------------------------------------------------------------ manifest and owned files


def _read_owned(out: Path) -> set[str]:
    """The files the last build wrote here, from the list it left in the folder.

    Used when the manifest is gone (a wiped cache, another clone), so that pages of records
    deleted meanwhile are still removed; only files on that list are ever deleted.
    """
    try:
        lines = (out / OWNED_LIST).read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return set()
    return {line for line in lines if line and not line.startswith(("/", ".")) and ".." not in line.split("/")}


def _save_owned(out: Path, entries: dict[str, dict[str, Any]]) -> None:
    _write(out / OWNED_LIST, "".join(f"{rel}\n" for rel in entries).encode("utf-8"))
    # GitHub Pages would otherwise run the folder through Jekyll first.
    if not (out / NOJEKYLL).exists():
        _write(out / NOJEKYLL, b"")


def _read_manifest(path: Path, out: Path) -> dict[str, dict[str, Any]]:
    """The previous build's entries, if it wrote to the same folder; else nothing."""
    try:
        body = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(body, dict) or body.get("format") != MANIFEST_FORMAT or body.get("out") != str(out):
        return {}
    pages = body.get("pages")
    return pages if isinstance(pages, dict) else {}


def _save_manifest(path: Path, out: Path, entries: dict[str, dict[str, Any]]) -> None:
    body = {"format": MANIFEST_FORMAT, "out": str(out), "pages": entries}
    # A read-only store keeps no manifest: every build there is a full one, nothing is lost.
    with contextlib.suppress(OSError):
        _write(path, (json.dumps(body, indent=0, sort_keys=True) + "\n").encode("utf-8"))


# ------------------------------------------------------------------ search


def run_pagefind(out: Path) -> None:
    """Index the whole folder once, into a fresh bundle swapped in place of the old one."""
    fresh = out / f".{PAGEFIND_DIR}-new"
    shutil.rmtree(fresh, ignore_errors=True)
    result = subprocess.run(
        [sys.executable, "-m", "pagefind", "--site", str(out), "--output-path", str(fresh), "--silent"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        shutil.rmtree(fresh, ignore_errors=True)
        detail = (result.stderr or result.stdout).strip()[-500:]
        raise CodexmemError("ERR_WRITE_FAILED", f"pagefind failed to index {out}: {detail}")
    old = out / f".{PAGEFIND_DIR}-old"
    shutil.rmtree(old, ignore_errors=True)
    current = out / PAGEFIND_DIR
    if current.exists():
        os.replace(current, old)
    os.replace(fresh, current)
    shutil.rmtree(old, ignore_errors=True)


# ------------------------------------------------------------------ progress


class Progress:
    """A self-drawn bar on stderr: redrawn on a terminal, a line per quarter on large piped builds."""

    WIDTH = 30

    def __init__(self, total: int, stream: TextIO | None) -> None:
        self.total = total
        self.count = 0
        self.stream = stream
        tty = bool(stream is not None and stream.isatty())
        self.mode = "bar" if tty and total >= PROGRESS_MIN_PAGES else "lines" if total >= LARGE_BUILD_PAGES else ""
        if stream is None:
            self.mode = ""
        self._next_line = total // 4

    def step(self) -> None:
        self.count += 1
        if self.mode == "bar" and (self.count % 50 == 0 or self.count == self.total):
            filled = self.WIDTH * self.count // max(self.total, 1)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            self._emit(f"\rrendering [{bar}] {self.count:,}/{self.total:,} pages")
        elif self.mode == "lines" and self.count >= self._next_line and self.count < self.total:
            self._emit(f"rendered {self.count:,}/{self.total:,} pages\n")
            self._next_line += self.total // 4

    def done(self) -> None:
        if self.mode == "bar":
            self._emit("\n")

    def _emit(self, text: str) -> None:
        assert self.stream is not None
        self.stream.write(text)
        self.stream.flush()
