"""Build ``store-example/`` by playing the order-platform story (``scripts/example_story/``).

The story is data: calls at fixed times by people and Codex sessions. They are played through
the services the MCP tools and the CLI use (``scripts/player.py``), into a fresh store made by
``codexmem init --shared`` and given the story's config, with a fixed clock and seeded ids: the
same story always gives the same bytes, in whatever file format this codexmem writes. The store
is built in a temporary folder and replaces ``--out`` only when the whole story has played; a
mistake in the story is one line naming the step and the field, and changes nothing.

    .venv/bin/python -m scripts.build_example_store [--out PATH] [--story FOLDER]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from codexmem.errors import CodexmemError, validation_fields
from codexmem.models.config import StoreConfig
from codexmem.store.atomic import atomic_write
from codexmem.store.init import init_store
from codexmem.store.layout import Layout
from codexmem.store.yamlio import YamlError, dump_yaml, load_yaml
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
    _check_replaceable(out, story)
    with tempfile.TemporaryDirectory(prefix="codexmem-example-") as tmp:
        work = Path(tmp) / "store"
        _create(work, story)
        Player(story, work).play()
        _replace(out, work)


def _replace(out: Path, built: Path) -> None:
    """Copy the committed part of ``built`` beside ``out``, then swap it in (one rename after the delete)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        shutil.copytree(built, staging / "store", symlinks=True, ignore=_local_state(built))
        if out.exists():
            shutil.rmtree(out)
        os.replace(staging / "store", out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _check_replaceable(out: Path, story: Story) -> None:
    """Replace only nothing, an empty folder, or an earlier build of this story (a store of the story's
    system): never a project's own memory or anything else someone keeps there."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise OutError(f"--out: {out} is not a folder")
    if not out.is_dir() or not any(out.iterdir()):
        return
    system = story.config.get("system", {}).get("id")
    try:
        config = load_yaml(Layout(out).config.read_bytes(), source="codexmem.yaml")
        same = system is not None and isinstance(config, dict) and config.get("system", {}).get("id") == system
    except (OSError, YamlError, AttributeError):
        same = False
    if not same:
        raise OutError(f"--out: {out} is neither empty nor an earlier build of this story; refusing to replace it")


def _create(root: Path, story: Story) -> None:
    """``codexmem init --shared``, then the config and README the team wrote by hand."""
    written = init_store(root, cwd=root, shared=True).config
    config = {"format": written["format"], **story.config}
    config |= {k: v for k, v in written.items() if k not in config}  # whatever else init declares
    try:
        StoreConfig.model_validate(config)
    except ValidationError as exc:
        first = validation_fields(exc, root="(config)")[0]
        raise StoryError(STORY_FILE, f"config.{first['field']}", first["message"]) from None
    atomic_write(Layout(root).config, dump_yaml(config).encode("utf-8"))
    atomic_write(root / "README.md", story.readme.encode("utf-8"))


def _local_state(root: Path) -> Callable[[str, list[str]], set[str]]:
    """What the store keeps for this machine only (the root entries its own .gitignore names): not copied."""
    lines = (root / ".gitignore").read_text("utf-8").splitlines()
    local = {line.strip("/") for line in lines if line.startswith("/")}

    def ignore(folder: str, names: list[str]) -> set[str]:
        return local & set(names) if Path(folder) == root else set()

    return ignore


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
