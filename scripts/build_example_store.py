"""Build ``store-example/`` by playing the order-platform story (``scripts/example_story/``).

The story is data: calls at fixed times by people and Codex sessions. They are played through
the services the MCP tools and the CLI use (``scripts/player.py``), into a fresh store made by
``codexmem init --shared`` and given the story's config, with a fixed clock and seeded ids: the
same story always gives the same bytes, in whatever file format this codexmem writes. The store
is built in a temporary folder and replaces ``--out`` only when the whole story has played.

    .venv/bin/python -m scripts.build_example_store [--out PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
from pathlib import Path

from pydantic import ValidationError

from codexmem.errors import CodexmemError, validation_fields
from codexmem.models.config import StoreConfig
from codexmem.store.atomic import atomic_write
from codexmem.store.init import init_store
from codexmem.store.layout import Layout
from codexmem.store.store import JOURNAL_DIR
from codexmem.store.yamlio import dump_yaml
from scripts.player import Player
from scripts.story import STORY_DIR, STORY_FILE, Story, StoryError, load_story

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "store-example"


class OutError(ValueError):
    """``--out`` names a folder this script must not replace."""


def build(out: Path, story: Story | None = None) -> None:
    """Play ``story`` (the example story by default) into a new store that replaces ``out``."""
    story = story or load_story()
    out = Path(out).absolute()
    _check_replaceable(out)
    with tempfile.TemporaryDirectory(prefix="codexmem-example-") as tmp:
        work = Path(tmp) / "store"
        _create(work, story)
        Player(story, work).play()
        _drop_local_state(work)
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(work, out, symlinks=True)


def _check_replaceable(out: Path) -> None:
    """Replace only nothing, an empty folder, or a codexmem store: never anything else someone keeps."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise OutError(f"--out: {out} is not a folder")
    if out.is_dir() and any(out.iterdir()) and not Layout(out).config.is_file():
        raise OutError(f"--out: {out} is neither empty nor a codexmem store; refusing to replace it")


def _create(root: Path, story: Story) -> None:
    """``codexmem init --shared``, then the config and README the team wrote by hand."""
    written = init_store(root, cwd=root, shared=True)
    config = {"format": written["format"], **story.config}
    try:
        StoreConfig.model_validate(config)
    except ValidationError as exc:
        first = validation_fields(exc, root="(config)")[0]
        raise StoryError(STORY_FILE, f"config.{first['field']}", first["message"]) from None
    atomic_write(Layout(root).config, dump_yaml(config).encode("utf-8"))
    atomic_write(root / "README.md", story.readme.encode("utf-8"))


def _drop_local_state(root: Path) -> None:
    """What the store keeps for this machine only (git-ignored): not part of the example."""
    layout = Layout(root)
    shutil.rmtree(layout.cache, ignore_errors=True)
    layout.lock.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        (root / JOURNAL_DIR).rmdir()  # only ever left empty by a finished write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to build (default: store-example/)")
    parser.add_argument(
        "--story", type=Path, default=STORY_DIR, help="the story folder (default: scripts/example_story/)"
    )
    args = parser.parse_args(argv)
    try:
        build(args.out, load_story(args.story))
    except (StoryError, OutError, CodexmemError) as exc:
        print(f"build_example_store: {exc}", file=sys.stderr)
        return 1
    print(f"built {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
