"""Build the site: render what changed, write what differs, delete what is gone, index what moved.

Incremental by a manifest in ``<store>/.cache/site/manifest.json`` mapping each output file to
the hash of everything it was rendered from (its page context, which holds the versions and
fields of the records it shows, plus the hash of the templates, assets and this generator). A
page whose inputs hash is unchanged and whose file is still there is not rendered at all; a
rendered page is written only when its bytes differ. Files the previous build wrote and this one
does not (pages of deleted records) are deleted; the list of files a build owns is also left in
the folder (``.codexmem-site-files``), so that works without the cache too, and nothing else in
the folder is ever touched. Builds into one folder take turns (a lock on the folder). Search is
split into parts (``search.py``): only the parts whose pages changed are indexed again.

Pages are made one job at a time (``pages.plan``) and dropped once written, so a build holds the
store's data and one page's context, not every page at once.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import json
import marshal
import multiprocessing
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from codexmem.errors import CodexmemError
from codexmem.gitrepo import SHALLOW_FIX
from codexmem.models.config import BASE_URL_EXAMPLE, base_url_problem
from codexmem.progress import Progress
from codexmem.render.markdown import highlight_css
from codexmem.render.site.data import SiteData, load
from codexmem.render.site.feed import FEED_PATH, feed_context, render_feed
from codexmem.render.site.files import remove_leftovers, replace_file, write_new
from codexmem.render.site.pages import Chunk, Page, plan
from codexmem.render.site.search import PAGEFIND_DIR, Indexer, SearchReport
from codexmem.render.site.tables import render_chunk
from codexmem.render.site.templating import Environments, MarkdownCache
from codexmem.resources import data_dir
from codexmem.store.placement import misplaced
from codexmem.store.store import Store

MANIFEST_FORMAT = 2
OWNED_LIST = ".codexmem-site-files"
SITE_ENTRIES = frozenset(
    {
        "index.html",
        "feed.xml",
        "assets",
        "activity",
        "channels",
        "files",
        "handoffs",
        "imports",
        "notes",
        "pagefind",
        "projects",
        "search",
        "sessions",
        "tags",
    }
)
"""The names a site has at its top (a test checks them against a build): a folder holding any of
them that no build wrote is refused."""
NOJEKYLL = ".nojekyll"
ASSETS_DIR = "assets"
PROGRESS_MIN_PAGES = 200
LARGE_BUILD_PAGES = 2_000
PARALLEL_MIN_JOBS = 2_000
"""Below this many pages forking workers costs more than it saves."""
MAX_WORKERS = 4
MENU_PROJECTS = 15
"""Projects in every page's menu; with more, the menu ends with a link to the list of all."""
GC_YOUNG_THRESHOLD = 50_000
"""Allocations between collections of the youngest generation while pages render (Python's default: 700)."""
WORKER_SPAN = 16
"""Jobs a worker takes at a time: few enough that results stream back in order."""


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
    search: SearchReport | None = None
    feed_written: bool = False
    base_url: str | None = None
    warnings: list[str] = field(default_factory=list)
    workers: int = 0
    """Processes that rendered besides this one (0: it rendered alone)."""
    workers_peak_kb: int = 0
    written_paths: list[str] = field(default_factory=list)
    deleted_paths: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line: what was written, and what search indexed."""
        text = (
            f"wrote {self.written:,} of {plural(self.pages, 'file')} to {self.out} in {self.seconds:.2f} s"
            f" ({self.pages - self.written:,} unchanged, {self.deleted:,} deleted)"
        )
        if self.search is not None and self.search_seconds is not None:
            text += (
                f"; search: indexed {self.search.indexed:,} of {plural(self.search.parts, 'part')}"
                f" ({plural(self.search.pages_indexed, 'page')}), done {self.search_seconds:.2f} s after the pages"
            )
        return text


def plural(count: int, noun: str) -> str:
    """``1 page``, ``2 pages``, ``1,204 pages``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _hash(*parts: bytes | str) -> str:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(part.encode("utf-8") if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()


def _canonical(value: Any) -> bytes:
    """A context's bytes for its hash: contexts are plain data built in a fixed order.

    marshal's version 2 writes no back-references, so equal data gives equal bytes; it is
    several times faster than sorted JSON, and hashing contexts is most of a no-change build.
    """
    return marshal.dumps(value, 2)


def normalize_base_url(url: str | None) -> str | None:
    """The address the site is published at, ending in ``/`` (the feed's links start with it).

    From ``--base-url`` or the store's ``site.base_url``, checked by :func:`base_url_problem`.
    """
    if not url:
        return None
    problem, shown = base_url_problem(url)
    if problem is not None:
        raise CodexmemError(
            "ERR_INVALID_INPUT",
            f"--base-url (or site.base_url) {problem}: give the site's address, such as "
            f"{BASE_URL_EXAMPLE}; got {shown[:80]!r}",
        )
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
    parallel: int | None = None,
) -> BuildReport:
    """Render the store into ``out``; ``full`` ignores the manifest (every page is rendered).

    ``now`` is the time formulas are computed at: by default the start of today (UTC).
    ``parallel`` is how many processes render (0 or 1: this one); by default one per CPU
    (at most ``MAX_WORKERS``) for a plan of at least ``PARALLEL_MIN_JOBS`` pages that renders
    most of them (no manifest, ``full``, or other templates or code), else this one.
    """
    out = Path(os.path.abspath(out))
    # Before any work, so a folder that cannot be the site's (or an address it cannot have) is
    # said at once. A new folder is built in full: a manifest of an older build there is stale.
    base = normalize_base_url(base_url or store.config.site.base_url)
    problem = misplaced(out, store.root, holds_files=True)
    if problem is not None:
        raise CodexmemError(
            "ERR_INVALID_INPUT",
            f"--out {out}: {problem}; give a folder of the site's own, "
            f"such as {store.root.parent / '_site'} (the default)",
        )
    _make_folder(out)
    with _one_build_at_a_time(out, progress_stream):
        started = time.perf_counter()  # the build's own time, not the wait for another
        fresh = _claim(out)
        report = BuildReport(out=out)
        report.base_url = base
        templates = data_dir("templates") / "site"
        assets = _assets(data_dir("site"))
        # The store's data is a few million objects made at once and kept to the end: the cyclic
        # collector would walk them again and again (a quarter of a rebuild's CPU). It is paused
        # while they are made, and they are then set aside (gc.freeze) until the build returns;
        # the collector's thresholds are restored then too. The index is brought up to date first,
        # with the collector on: a rebuild (a new index schema, a deleted cache) makes garbage that
        # only the collector frees (at 5,000 notes the build peaked at 1 GB instead of 190 MB).
        index = store.fresh_index(full=True)
        with _collector_paused():
            data = load(store, index, now=now, cached=not full)
        if data.unknown_in_shallow:
            report.warnings.append(
                f"this clone is shallow (cloned with --depth), so {plural(data.unknown_in_shallow, 'change')} "
                f"from before `codexmem migrate` show no values, which the full history may hold: {SHALLOW_FIX}, "
                "then build again"
            )
        gc.freeze()
        # Pages make many short-lived objects, freed by reference counting: collect young ones less
        # often (the old collections then come about a tenth as often: 5% of a rebuild's CPU).
        threshold = gc.get_threshold()
        gc.set_threshold(max(threshold[0], GC_YOUNG_THRESHOLD), threshold[1], threshold[2])
        try:
            return _build(
                store,
                out,
                data,
                report,
                started,
                base,
                templates,
                assets,
                search,
                full or fresh,
                fresh,
                progress_stream,
                parallel,
            )
        except OSError as exc:  # a full disk, or a folder made read-only meanwhile: said as --out's
            if exc.filename and Path(os.path.abspath(exc.filename)).is_relative_to(out):
                raise _unwritable(out, exc) from None
            raise
        finally:
            gc.set_threshold(*threshold)
            gc.unfreeze()


def _build(
    store: Store,
    out: Path,
    data: SiteData,
    report: BuildReport,
    started: float,
    base: str | None,
    templates: Path,
    assets: dict[str, tuple[str, bytes]],
    search: bool,
    full: bool,
    fresh: bool,
    progress_stream: TextIO | None,
    parallel: int | None,
) -> BuildReport:
    markdown = MarkdownCache()
    site = {
        "title": data.title,
        "assets": {name: f"{ASSETS_DIR}/{name}?v={digest[:10]}" for name, (digest, _) in assets.items()},
        # Every page's menu: the first projects, and a link to the list of all of them (a system
        # of 300 projects added 18 KB to every page when the menu held them all).
        "projects": [
            {"id": pid, "name": data.projects[pid]["name"], "url": data.projects[pid]["url"]}
            for s in data.systems
            for pid in s["projects"]
        ][:MENU_PROJECTS],
        "project_count": sum(len(s["projects"]) for s in data.systems),
        "search": search,
    }
    envs = Environments(templates, markdown, site)
    code = _code_hash()
    generator = _hash(code, _tree_hash(templates, "*"), _canonical(site))

    manifest_path = store.layout.cache / "site" / "manifest.json"
    manifest = {} if full else _read_manifest(manifest_path, out)
    previous: dict[str, dict[str, Any]] = manifest.get("pages", {})
    owned = set(previous) or _read_owned(out)
    indexer = Indexer(str(out), {} if full else manifest.get("search", {})) if search else None
    writer = _Writer(out, previous, report, indexer, fresh)
    jobs = plan(data, generator)
    bar = Progress(len(jobs), progress_stream, bar_from=PROGRESS_MIN_PAGES, lines_from=LARGE_BUILD_PAGES)
    rows = _RowRenderers(envs)
    # Workers pay off when most pages are rendered (a first build, --full, or new templates or
    # code, which change every page's inputs). When few pages changed, the build is mostly
    # hashing contexts, and forking (each worker then copies the data it touches) costs more.
    renders_most = not previous or manifest.get("generator") != generator
    automatic = _workers(len(jobs)) if renders_most else 0
    workers = automatic if parallel is None else (parallel if parallel > 1 else 0)
    try:
        if workers:
            _render_in_workers(
                workers, _Shared(jobs, envs, site, generator, rows, out, previous, fresh), writer, bar, report
            )
        else:
            for job in jobs:
                for made in job():
                    writer.take(_output(made, envs, site, generator, rows))
                bar.step()
        bar.done()
        feed = feed_context(data, base)
        writer.take(Output(FEED_PATH, _hash(code, _canonical(feed)), lambda: render_feed(feed)))
        report.feed_written = FEED_PATH in writer.written
        for name, (digest, raw) in assets.items():
            writer.take(Output(f"{ASSETS_DIR}/{name}", digest, functools.partial(bytes, raw)))
        entries = dict(sorted(writer.entries.items()))
        report.pages = sum(1 for path in entries if not path.startswith(ASSETS_DIR + "/"))
        report.deleted_paths = _delete_stale(out, owned, set(entries))
        report.deleted = len(report.deleted_paths)
        _save_owned(out, entries)
    except BaseException:  # Pagefind, indexing parts meanwhile, is stopped and its half-made bundles go
        if indexer is not None:
            indexer.abandon()
        raise
    report.markdown += markdown.rendered
    report.seconds = time.perf_counter() - started
    parts: dict[str, str] = {}
    if indexer is not None:
        # Parts of the kinds rendered first were indexed while the rest rendered: what is
        # reported is the time search added after the last page.
        search_started = time.perf_counter()
        parts, report.search = indexer.finish()
        report.search_seconds = time.perf_counter() - search_started
    elif (out / PAGEFIND_DIR).is_dir():
        _remove_tree(out / PAGEFIND_DIR)  # an index of pages that may be gone: none is better
    _save_manifest(manifest_path, out, entries, parts, generator)
    return report


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside (reference counting still frees what is dropped)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _render_in_workers(count: int, shared: _Shared, writer: _Writer, bar: Progress, report: BuildReport) -> None:
    """Jobs in ``count`` forked workers, taken back in plan order (the pages each worker makes are
    the ones the serial loop makes, byte for byte: each depends only on its own context)."""
    global _SHARED
    _SHARED = shared
    try:
        fork = multiprocessing.get_context("fork")
        try:
            with fork.Pool(count, initializer=_worker_signals) as pool, _terminate_as_exit():
                spans = _spans(len(shared.jobs), WORKER_SPAN)
                for span, (done, markdown, peak) in zip(spans, pool.imap(_run_jobs, spans), strict=True):
                    for one in done:
                        writer.record(one)
                    report.markdown += markdown
                    report.workers_peak_kb = max(report.workers_peak_kb, peak)
                    for _ in range(*span):
                        bar.step()
        except BaseException:
            remove_leftovers(writer.out)  # the workers are ended by now: what they were writing stays
            raise
    finally:
        _SHARED = None
    report.workers = count


def _output(made: Page | Chunk, envs: Environments, site: dict[str, Any], generator: str, rows: Any) -> Output:
    """The file a job made: its inputs hash, and the render call (run only when needed)."""
    if isinstance(made, Page):
        root = "../" * made.path.count("/")
        context = {**made.context, "root": root, "site": site, "path": made.path}
        template = made.template

        def render_page() -> bytes:
            return envs(root).get_template(template).render(context).encode("utf-8")

        return Output(made.path, _hash(generator, template, _canonical(context)), render_page)
    chunk = made
    # The version digests the rows' data with the generator; the extra is the row macro's.
    inputs = _hash(generator, chunk.table.macro, chunk.root, chunk.version, _canonical(chunk.table.extra))

    def render_rows() -> bytes:
        row = rows.macro(chunk.root, chunk.table.macro)
        return render_chunk(chunk.rows, lambda ctx: row(ctx, chunk.table.extra))

    return Output(chunk.path, inputs, render_rows)


class _RowRenderers:
    """The row macros of ``_rows.html`` at the depth of the page that loads the chunk."""

    def __init__(self, envs: Environments) -> None:
        self.envs = envs

    def macro(self, root: str, name: str) -> Any:
        return getattr(self.envs(root).get_template("_rows.html").module, name)


def _assets(folder: Path) -> dict[str, tuple[str, bytes]]:
    """name -> (content hash, bytes) of the shipped CSS, JavaScript and icons, and the code colours."""
    found: dict[str, tuple[str, bytes]] = {}
    for path in sorted(folder.iterdir()):
        if path.is_file() and not path.name.startswith("."):
            raw = path.read_bytes()
            found[path.name] = (_hash(raw), raw)
    css = highlight_css().encode("utf-8")
    found["highlight.css"] = (_hash(css), css)
    return dict(sorted(found.items()))


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


@dataclass(frozen=True)
class Done:
    """What became of one output (made in the build process or in a worker): small, picklable."""

    path: str
    inputs: str
    entry: dict[str, Any]
    rendered: bool
    changed: bool


def produce(output: Output, out: Path, previous: dict[str, dict[str, Any]], made: set[Path], fresh: bool) -> Done:
    """Skip an output whose inputs are unchanged; else render it and write it if its bytes differ.

    ``fresh``: the folder was new (or held none of a site's names) when the build began, so no
    file it writes exists yet and none is looked up first (11,000 failed lookups at 5,000 notes).
    """
    target = out / output.path
    old = previous.get(output.path)
    if old is not None and old.get("inputs") == output.inputs and _size(target) == old.get("size"):
        return Done(output.path, output.inputs, old, False, False)
    raw = output.render()
    size = None if fresh else _size(target)
    changed = size is None or size != len(raw) or target.read_bytes() != raw
    if size is None:
        _write_new(target, raw, made)
    elif changed:
        replace_file(target, raw)
    return Done(output.path, output.inputs, {"inputs": output.inputs, "size": len(raw)}, True, changed)


class _Writer:
    """Writes each output as it comes: skipped when its inputs are unchanged, written when its bytes differ."""

    def __init__(
        self,
        out: Path,
        previous: dict[str, dict[str, Any]],
        report: BuildReport,
        indexer: Indexer | None,
        fresh: bool,
    ) -> None:
        self.out = out
        self.fresh = fresh
        self.indexer = indexer
        self.previous = previous
        self.report = report
        self.entries: dict[str, dict[str, Any]] = {}
        self.written: set[str] = set()
        self.made: set[Path] = set()

    def take(self, output: Output) -> None:
        self.record(produce(output, self.out, self.previous, self.made, self.fresh))

    def record(self, done: Done) -> None:
        """Count one output, in plan order (search parts follow the order of the pages)."""
        if done.rendered:
            self.report.rendered += 1
        if done.changed and done.path.startswith(ASSETS_DIR + "/"):
            self.report.assets_written += 1
        elif done.changed:
            self.report.written += 1
            self.report.written_paths.append(done.path)
            self.written.add(done.path)
        self.entries[done.path] = done.entry
        if self.indexer is not None:
            self.indexer.page(done.path, done.inputs)


# ------------------------------------------------------------------ rendering in worker processes


@dataclass
class _Shared:
    """What forked workers inherit (never pickled): the plan and how to render it."""

    jobs: list[Callable[[], list[Page | Chunk]]]
    envs: Environments
    site: dict[str, Any]
    generator: str
    rows: Any
    out: Path
    previous: dict[str, dict[str, Any]]
    fresh: bool
    made: set[Path] = field(default_factory=set)


_SHARED: _Shared | None = None


def _worker_signals() -> None:
    """Ctrl-C reaches every process of the terminal's group: only the build process takes it (the
    pool's exit then ends the workers), so a person sees no traceback from each worker. SIGTERM,
    which the pool's exit sends, ends a worker at once (a worker forked again after a crash would
    otherwise inherit the build process's handler below)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """SIGTERM to the build process alone (``timeout``, a cancelled CI job) ends it as Ctrl-C does:
    through the pool's exit, which ends the workers; killed outright, it left each worker to print
    a broken pipe's traceback."""
    if threading.current_thread() is not threading.main_thread():  # only it may set handlers
        yield
        return

    def leave(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, leave)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_jobs(span: tuple[int, int]) -> tuple[list[Done], int, int]:
    """Jobs ``start..end`` in a worker: their outputs, Markdown texts rendered, the worker's peak (KB)."""
    shared = _SHARED
    assert shared is not None
    before = shared.envs.markdown.rendered
    done = [
        produce(
            _output(made, shared.envs, shared.site, shared.generator, shared.rows),
            shared.out,
            shared.previous,
            shared.made,
            shared.fresh,
        )
        for index in range(*span)
        for made in shared.jobs[index]()
    ]
    import resource  # POSIX only, as fork is

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return done, shared.envs.markdown.rendered - before, peak


def _workers(jobs: int) -> int:
    """Processes to render in: one per CPU for a large plan where fork exists, else none (in process)."""
    if jobs < PARALLEL_MIN_JOBS or "fork" not in multiprocessing.get_all_start_methods():
        return 0
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return min(cpus, MAX_WORKERS) if cpus > 1 else 0


def _spans(total: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(start + size, total)) for start in range(0, total, size)]


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
    write_new(target, raw)


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


def _make_folder(out: Path) -> None:
    """Make the output folder (and its parents); the nearest that exists must be a folder."""
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                raise CodexmemError(
                    "ERR_INVALID_INPUT",
                    f"--out {out}: {folder} is a file, not a folder; give a folder (it is made if missing)",
                )
            break
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(out, exc) from None


def _unwritable(out: Path, exc: OSError) -> CodexmemError:
    """The folder (or the list a build starts in it) cannot be written: said as ``--out``'s fault."""
    return CodexmemError("ERR_INVALID_INPUT", f"--out {out}: cannot write there ({exc.strerror or exc})")


@contextlib.contextmanager
def _one_build_at_a_time(out: Path, stream: TextIO | None) -> Iterator[None]:
    """Builds into one folder take turns: two at once deleted each other's fresh search bundles,
    and Pagefind then waited forever. The lock is on the folder itself (``flock``): no file is
    added to the site, and a build that dies releases it. The second build says it waits, then
    finds little left to do."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: builds there are not kept apart
        yield
        return
    fd = os.open(out, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if stream is not None:
                print(f"codexmem site: another build is writing to {out}; waiting for it to end", file=stream)
                stream.flush()
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # a file system without locks (some network mounts): built as before, unguarded
            pass
        yield
    finally:
        os.close(fd)  # releases the lock


def _claim(out: Path) -> bool:
    """Refuse a folder of someone else's pages; mark a new folder as a site's before writing to it
    (True: it held none of a site's names).

    A build replaces the files it writes (``index.html``, ``assets/style.css``), so a folder of a
    person's own pages given as ``--out`` would lose them; and pages beside its own (a ``docs/``
    of Markdown that GitHub Pages renders) would be shadowed by its ``index.html`` and its
    ``.nojekyll``. So a folder a build has not written (no ``OWNED_LIST``) may hold only what a
    Pages branch's checkout has besides the site: dot files (its ``.git``) and a ``CNAME``. The
    list is started, empty, before the first file is written, so a first build that stops
    half-way leaves a folder the next build takes up again.
    """
    listing = out / OWNED_LIST
    if listing.is_file():
        return False
    held = sorted(entry.name for entry in os.scandir(out) if not entry.name.startswith(".") and entry.name != "CNAME")
    if held:
        clashes = [name for name in held if name in SITE_ENTRIES]
        shown = ", ".join(held[:5]) + (f" and {len(held) - 5} more" if len(held) > 5 else "")
        what = f"{', '.join(clashes)}, which a build writes, and" if clashes else f"files of its own ({shown}), and"
        other = out.parent / ("_site" if out.name != "_site" else "_site-memory")
        raise CodexmemError(
            "ERR_INVALID_INPUT",
            f"{out} holds {what} no codexmem site build wrote them (none left its {OWNED_LIST}): give a new "
            f"or empty folder with --out, such as {other}, or delete this one if a build made it "
            "(codexmem never writes among files it did not write)",
        )
    try:
        replace_file(listing, b"")
    except OSError as exc:
        raise _unwritable(out, exc) from None
    return True


def _save_owned(out: Path, entries: dict[str, dict[str, Any]]) -> None:
    replace_file(out / OWNED_LIST, "".join(f"{rel}\n" for rel in entries).encode("utf-8"))
    # GitHub Pages would otherwise run the folder through Jekyll first.
    if not (out / NOJEKYLL).exists():
        replace_file(out / NOJEKYLL, b"")


def _read_manifest(path: Path, out: Path) -> dict[str, Any]:
    """The previous build's entries, search parts and generator hash, if it wrote to the same folder."""
    try:
        body = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(body, dict) or body.get("format") != MANIFEST_FORMAT or body.get("out") != str(out):
        return {}
    pages, search, generator = body.get("pages"), body.get("search"), body.get("generator")
    return {
        "pages": pages if isinstance(pages, dict) else {},
        "search": search if isinstance(search, dict) else {},
        "generator": generator if isinstance(generator, str) else None,
    }


def _save_manifest(
    path: Path, out: Path, entries: dict[str, dict[str, Any]], search: dict[str, str], generator: str
) -> None:
    body = {"format": MANIFEST_FORMAT, "out": str(out), "generator": generator, "pages": entries, "search": search}
    # A read-only store keeps no manifest: every build there is a full one, nothing is lost.
    with contextlib.suppress(OSError):
        # No indent: only then does json use its C encoder (indented, it took 0.3 s at 5,000 notes).
        replace_file(path, (json.dumps(body, separators=(",", ":"), sort_keys=True) + "\n").encode("utf-8"))


def _remove_tree(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
