"""Every command and subcommand, with hostile arguments: one-line errors, consistent exit codes, never a traceback.

The commands are found by walking the argparse parser, so a command added later is run here
without anyone listing it. Each gets a baseline argument list (its positionals and required
options filled in from their metavars), then one hostile change at a time: a store path that is
missing, a file, a repository root, an empty folder, a broken config or a wrong
``CODEXMEM_STORE``; negative, zero, huge and non-numeric values for every number option; missing,
folder, under-a-file, binary and dangling-symlink paths for every file option; odd strings for
every positional; broken JSON for ``--json``. A real store with the example bug tracker, real
files, a real git repository; ``serve`` runs as a real process (it reads stdin).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from records_fixtures import BUGS_SCHEMA, add_bugs
from store_fixtures import GIT_ENV, make_repo

from codexmem.cli.main import EXIT_USAGE, build_parser, main
from codexmem.store.init import init_store
from codexmem.store.yamlio import dump_yaml

HOSTILE_NUMBERS = ["-1", "0", "99999999999999999999999", "9" * 5000, "many", "1.5"]
HOSTILE_STRINGS = ["", "../../etc/passwd", "x" * 5000, "Bugs!", "a\nb", "-", "item_01JH0000000000000000000000"]
HOSTILE_JSON = ["{", "[]", '{"title": 1e999}', "[" * 5000 + "]" * 5000, '{"title": "' + "y" * 200_000 + '"}', "null"]
FILE_WORDS = ("FILE", "PATH", "DIR")
ERROR = "codexmem: error: "


@dataclass
class World:
    """The files every row points at: a repository with a store, and the hostile neighbours of a store."""

    root: Path
    repo: Path
    store: Path
    items: list[str]
    schema: Path
    counter: itertools.count[int] = field(default_factory=itertools.count)

    def fresh(self, name: str) -> Path:
        return self.root / f"{name}-{next(self.counter)}"


@pytest.fixture
def world(tmp_path: Path) -> World:
    """Made anew for each command: its rows may create stores and remove items."""
    root = tmp_path
    repo = make_repo(root / "repo")
    store = repo / ".codexmem"
    init_store(store, cwd=repo)
    items = add_bugs(store, 3)
    schema = root / "schema.yaml"
    schema.write_text(dump_yaml({k: v for k, v in BUGS_SCHEMA.items() if k != "record_channel_id"}), "utf-8")
    (root / "a-file").write_text("not a folder\n")
    (root / "empty").mkdir()
    (root / "binary.yaml").write_bytes(bytes(range(256)) * 8)
    (root / "big.yaml").write_bytes(b"a: " + b"b" * 2_000_000 + b"\n")
    (root / "dangling").symlink_to(root / "nowhere-at-all")
    broken = root / "broken-store"
    broken.mkdir()
    (broken / "codexmem.yaml").write_text("format: [1\n")
    return World(root, repo, store, items, schema)


# ------------------------------------------------------------------ discovery


def leaves(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every runnable command: ``(("items", "list"), its parser)``, found by walking the subparsers."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield words, parser
        return
    for name, sub in subs[0].choices.items():
        yield from leaves(sub, (*words, name))


LEAVES = list(leaves(build_parser()))
COMMANDS = [" ".join(words) for words, _ in LEAVES]


def _positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not a.option_strings and a.nargs != 0]


def _is_file_option(action: argparse.Action) -> bool:
    return any(word in str(action.metavar or "") for word in FILE_WORDS) and "--store" not in action.option_strings


def _is_number_option(action: argparse.Action) -> bool:
    return (
        action.option_strings != []
        and action.type is not None
        and getattr(action.type, "__name__", "")
        in (
            "int",
            "positive_int",
        )
    )


def _value(action: argparse.Action, world: World, words: tuple[str, ...]) -> str:
    """A plausible value for a positional or a required option, from its metavar."""
    name = str(action.metavar or action.dest).upper()
    if name == "CHANNEL":
        return "bugs"
    if name == "ITEM":
        return world.items[0]
    if name == "ID":
        return f"fresh{next(world.counter)}"
    if "--json" in action.option_strings:
        return '{"title": "from the hostile test"}'
    if "--schema" in action.option_strings:
        return str(world.schema)
    return "x"


EXTRA_BASELINE = {("site",): ["--no-search"]}  # a real build, without the search index
CREATES_STORE = {("init",)}
"""Commands for which a missing or empty store folder is where they make one, not an error."""


def baseline(words: tuple[str, ...], parser: argparse.ArgumentParser, world: World) -> list[str]:
    """The command with its positionals, then its required options, filled in; then ``--store``."""
    argv = [*words, *(_value(a, world, words) for a in _positionals(parser))]
    for action in parser._actions:
        if action.option_strings and action.required:
            argv += [action.option_strings[-1], _value(action, world, words)]
    if words == ("site",):
        argv += ["--out", str(world.fresh("site"))]
    if words == ("agents",):
        argv += ["--out", str(world.fresh("AGENTS.md"))]
    store = world.fresh("new-store") if words in CREATES_STORE else world.store
    return [*argv, *EXTRA_BASELINE.get(words, []), "--store", str(store)]


def replace_option(argv: list[str], option: str, value: str) -> list[str]:
    if option in argv:
        i = argv.index(option)
        return [*argv[: i + 1], value, *argv[i + 2 :]]
    return [*argv, option, value]


def store_rows(world: World) -> list[tuple[str, str | None, dict[str, str]]]:
    """``(name, --store value or None for none, environment)``."""
    return [
        ("store missing", str(world.root / "no-such-store"), {}),
        ("store is a file", str(world.root / "a-file"), {}),
        ("store is the repository root", str(world.repo), {}),
        ("store is an empty folder", str(world.root / "empty"), {}),
        ("store config broken", str(world.root / "broken-store"), {}),
        ("store under a file", str(world.root / "a-file" / "store"), {}),
        ("CODEXMEM_STORE wrong", None, {"CODEXMEM_STORE": str(world.root / "no-such-store")}),
    ]


def rows(
    words: tuple[str, ...], parser: argparse.ArgumentParser, world: World
) -> Iterator[tuple[str, list[str], dict[str, str]]]:
    base = baseline(words, parser, world)
    yield "baseline", base, {}
    without_store = base[: base.index("--store")] + base[base.index("--store") + 2 :]
    for name, store, env in store_rows(world):
        yield name, (without_store if store is None else [*without_store, "--store", store]), env
    for action in parser._actions:
        flag = action.option_strings[-1] if action.option_strings else None
        if flag and _is_number_option(action):
            for value in HOSTILE_NUMBERS:
                yield f"{flag} {value[:12]}", replace_option(base, flag, value), {}
        if flag and _is_file_option(action):
            for label, path in file_rows(world):
                yield f"{flag} {label}", replace_option(base, flag, path), {}
        if flag == "--json":
            for value in HOSTILE_JSON:
                yield f"--json {value[:12]}", replace_option(base, flag, value), {}
    for i, action in enumerate(_positionals(parser)):
        for value in HOSTILE_STRINGS:
            argv = list(base)
            argv[len(words) + i] = value
            yield f"{action.metavar} {value[:12]!r}", argv, {}


def file_rows(world: World) -> list[tuple[str, str]]:
    return [
        ("missing", str(world.root / "no-such-file.yaml")),
        ("a folder", str(world.root / "empty")),
        ("under a file", str(world.root / "a-file" / "x.yaml")),
        ("binary", str(world.root / "binary.yaml")),
        ("too big", str(world.root / "big.yaml")),
        ("dangling symlink", str(world.root / "dangling")),
    ]


# ------------------------------------------------------------------ running


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def invoke(argv: list[str], env: dict[str, str], cwd: Path, serve: bool) -> Ran:
    if serve:  # it serves stdin until end of file: a real process with an empty stdin
        full = {k: v for k, v in GIT_ENV.items() if k != "CODEXMEM_STORE"} | env
        done = subprocess.run(
            [sys.executable, "-m", "codexmem", *argv],
            cwd=cwd,
            env=full,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return Ran(done.returncode, done.stdout, done.stderr)
    out, err = io.StringIO(), io.StringIO()
    saved = {k: os.environ.get(k) for k in ("CODEXMEM_STORE", *env)}
    here = Path.cwd()
    os.environ.pop("CODEXMEM_STORE", None)
    os.environ.update(env)
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse: usage errors, --help
                code = int(exc.code or 0)
    finally:
        os.chdir(here)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return Ran(code, out.getvalue(), err.getvalue())


def error_body(err: str) -> list[str]:
    """stderr without argparse's usage block (which may wrap over several lines)."""
    lines = err.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(ERROR)), len(lines))
    before = lines[:start]
    assert all(line.startswith("usage: ") or line.startswith(" ") for line in before[:1] + before[1:]), err
    return lines[start:]


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_answers_hostile_arguments_in_one_line(command: str, world: World) -> None:
    words, parser = next((w, p) for w, p in LEAVES if " ".join(w) == command)
    serve = words == ("serve",)
    tried: list[str] = []
    for name, argv, env in rows(words, parser, world):
        ran = invoke(argv, env, world.root, serve)
        where = f"{command} [{name}]: exit {ran.code}\n{ran.err[-2000:]}"
        tried.append(name)
        assert "Traceback" not in ran.err and "Traceback" not in ran.out, where
        assert "internal error" not in ran.err, where
        assert ran.code in (0, 1, EXIT_USAGE), where
        if ran.code == EXIT_USAGE:
            body = error_body(ran.err)
            assert body and body[0].startswith(ERROR), where
            assert all(line.startswith("  ") for line in body[1:]), where  # only its problems, indented
            assert len(body[0]) <= 1200, where
        makes = words in CREATES_STORE and name in ("store missing", "store is an empty folder", "CODEXMEM_STORE wrong")
        if words == ("check",) and name == "store config broken":  # a store whose config is a finding of check
            assert ran.code == 1 and "codexmem.yaml: error: " in ran.out, where
        elif name.startswith(("store ", "CODEXMEM_STORE")) and not serve and not makes:
            # a store that is not one: exit 2 and one line that names the path and what to do
            assert ran.code == EXIT_USAGE, where
            body = error_body(ran.err)
            assert len(body) == 1, where
            broken = ("codexmem.yaml", "already exists")  # repair the config (init: it is a store already)
            fixes = broken if name == "store config broken" else ("--store", "CODEXMEM_STORE", "init")
            assert any(fix in body[0] for fix in fixes), where
    assert len(tried) > len(store_rows(world)), tried


def test_discovery_finds_every_command() -> None:
    """The walk reaches the subcommands of command groups, not just the groups."""
    assert {"init", "check", "serve", "channels add", "channels list", "items add", "items list"} <= set(COMMANDS)
    assert "items" not in COMMANDS and "channels" not in COMMANDS
