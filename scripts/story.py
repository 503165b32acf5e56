"""The example story's grammar: read ``scripts/example_story/``, check it whole, put its steps in play order.

A story is ``story.yaml`` (the seed, the people and their clones, the workspaces, the store config,
the README, the chapter files) and chapters: YAML files whose ``steps`` are calls at fixed times.
A step names one action, the same call a tool or the CLI makes, with that call's arguments::

    - at: 2026-03-02 09:40          # UTC, the ``now`` the service is called with
      save_note: enum_owned         # the action, and its value (here: the key later steps use)
      type: decision
      ...

``by`` says who acts: a person (at the CLI, on their clone) or a session key (the Codex session,
through the MCP tools). A step's ``then`` lists later steps about what it made: the calls of a
session, the edits of an item. They inherit ``by`` and that subject, and may come weeks later;
every step is played in time order (story order breaks ties).

Everything that does not depend on the store's state is checked here, before anything is
written: unknown or missing fields, wrong types, times, references to keys not made earlier.
A problem is one line naming the step and the field (:class:`StoryError`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

from codexmem.models.records import HandoffKind, HandoffStatus, ImportSource, NoteStatus, NoteType
from codexmem.store.yamlio import YamlError, load_yaml

STORY_DIR = Path(__file__).resolve().parent / "example_story"
STORY_FILE = "story.yaml"
_FILE_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*\.yaml\Z")
_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z")
_CLONE_RE = re.compile(r"^[a-z0-9]{4,16}\Z")  # a clone id: their events go to events/<name>-<clone>/
_TIME_FORMAT = "%Y-%m-%d %H:%M"


class StoryError(ValueError):
    """A mistake in the story, as one line: where (file, step path, action), the field, what is wrong."""

    def __init__(self, where: str, field: str, message: str) -> None:
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")


@dataclass(frozen=True)
class Workspace:
    system_id: str
    project_id: str
    workspace_id: str


@dataclass(frozen=True)
class Step:
    """One call: ``action`` with its ``value`` and ``fields``, at ``at``, by a person or a session key."""

    where: str
    at: datetime
    by: str
    action: str
    value: str
    fields: dict[str, Any]
    expect: frozenset[str]
    item: str | None  # an item step's item: the one it files, names, or whose ``then`` holds it
    order: int


@dataclass(frozen=True)
class Story:
    folder: Path
    seed: int
    readme: str
    config: dict[str, Any]
    people: dict[str, str]  # name -> the id of their clone
    workspaces: dict[str, Workspace]
    steps: list[Step]  # in play order

    def read_file(self, name: str) -> bytes:
        """A file of the story folder by plain name (checked when the story was read)."""
        return (self.folder / name).read_bytes()


# ------------------------------------------------------------------ what each action takes

TEXT = "a text"
INTEGER = "an integer"
TEXTS = "a list of texts"
MAPPING = "a mapping"
KEY = "a key"
KEYS = "a list of keys"


@dataclass(frozen=True)
class Action:
    """The value an action takes, who may call it, and its fields (name -> kind of value)."""

    value: str  # what the action's own value is (said when it is not a text)
    by: str  # "person", "session" or "either"
    required: dict[str, str] = field(default_factory=dict)
    optional: dict[str, str] = field(default_factory=dict)
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)  # field (or "value") -> allowed values
    refs: dict[str, str] = field(default_factory=dict)  # field -> kind of key it names


_NOTE_FIELDS = {"type": TEXT, "title": TEXT, "content": TEXT, "importance": INTEGER}
_NOTE_OPTIONAL = {"tags": TEXTS, "file_paths": TEXTS, "status": TEXT, "privacy_intent": TEXT}
_ARTIFACT = {"external_id": TEXT, "payload_hash": TEXT, "privacy_intent": TEXT}
_NOTE_CHOICES = {"type": get_args(NoteType), "status": get_args(NoteStatus)}

ACTIONS: dict[str, Action] = {
    "start_session": Action(
        "a new session key",
        "person",
        {"workspace": TEXT},
        {"task": TEXT, "branch_name": TEXT, "recovery_handoff": TEXT},
    ),
    "save_note": Action("a new note key", "session", _NOTE_FIELDS, _NOTE_OPTIONAL, _NOTE_CHOICES),
    "save_handoff": Action(
        "a new handoff key",
        "session",
        {"kind": TEXT, "task": TEXT, "summary": TEXT, "next_steps": TEXTS},
        {
            "status": TEXT,
            "completed": TEXTS,
            "open_questions": TEXTS,
            "risks": TEXTS,
            "files_touched": TEXTS,
            "related_notes": KEYS,
            "privacy_intent": TEXT,
        },
        {"kind": get_args(HandoffKind), "status": get_args(HandoffStatus)},
        {"related_notes": "note"},
    ),
    "save_import": Action(
        "a new import key", "session", {"source": TEXT}, _ARTIFACT, {"source": get_args(ImportSource)}
    ),
    "save_imported_note": Action(
        "a new note key",
        "session",
        {"source": TEXT, **_NOTE_FIELDS},
        {**_ARTIFACT, **_NOTE_OPTIONAL},
        {"source": get_args(ImportSource), **_NOTE_CHOICES},
    ),
    "set_status": Action(
        "the new status",
        "session",
        {},
        {"note": KEY, "handoff": KEY, "superseded_by": KEY},
        {"value": ("resolved", "superseded", "completed", "abandoned")},
        {"note": "note", "handoff": "handoff", "superseded_by": "note"},
    ),
    "end_session": Action("the session's new status", "session", choices={"value": ("ended", "paused")}),
    "add_channel": Action("a new channel id", "person", {"schema": TEXT}),
    "create_item": Action("a channel id", "person", {"values": MAPPING}, {"key": TEXT}),
    "edit_item": Action("a channel id", "either", {"values": MAPPING}, {"item": KEY}, refs={"item": "item"}),
    "delete_item": Action("a channel id", "person", {}, {"item": KEY}, refs={"item": "item"}),
}
_COMMON = {"at", "by", "then", "expect"}
_FIELDS = {name for a in ACTIONS.values() for name in (*a.required, *a.optional)}
_MAKES = {"start_session": "session", "save_note": "note", "save_imported_note": "note"}
_MAKES |= {"save_handoff": "handoff", "save_import": "import", "add_channel": "channel", "create_item": "item"}


# ------------------------------------------------------------------ reading


def load_story(folder: Path = STORY_DIR) -> Story:
    """The story in ``folder``, checked and in play order; :class:`StoryError` at the first problem."""
    head = _load(folder, STORY_FILE)
    where = STORY_FILE
    _only(head, where, {"seed", "readme", "config", "people", "workspaces", "chapters"})
    seed = _typed(head["seed"], INTEGER, where, "seed")
    readme = _typed(head["readme"], TEXT, where, "readme")
    config = _typed(head["config"], MAPPING, where, "config")
    if "format" in config:
        raise StoryError(where, "config.format", "leave it out: the store's format is codexmem's, not the story's")
    people = _people(_typed(head["people"], MAPPING, where, "people"))
    workspaces = _workspaces(_typed(head["workspaces"], MAPPING, where, "workspaces"))
    raw: list[tuple[str, dict[str, Any]]] = []
    for i, name in enumerate(_typed(head["chapters"], TEXTS, where, "chapters")):
        _plain_file(folder, name, where, f"chapters[{i}]")
        chapter = _load(folder, name)
        _only(chapter, name, {"steps"})
        for j, step in enumerate(_typed(chapter["steps"], "a list", name, "steps")):
            raw.append((f"{name} steps[{j}]", step))
    steps: list[Step] = []
    for where_step, step in raw:
        _flatten(step, where_step, None, None, None, steps)
    steps.sort(key=lambda s: (s.at, s.order))
    story = Story(folder, seed, readme, config, people, workspaces, steps)
    _check_references(story)
    return story


def _load(folder: Path, name: str) -> dict[str, Any]:
    try:
        data = load_yaml((folder / name).read_bytes(), source=name)
    except FileNotFoundError:
        raise StoryError(name, "", f"no such file in {folder}") from None
    except YamlError as exc:
        raise StoryError(name, "", str(exc).removeprefix(f"{name}: ")) from None
    except OSError as exc:
        raise StoryError(name, "", f"cannot read it: {exc.strerror}") from None
    document: dict[str, Any] = _typed(data, MAPPING, name, "(document)")
    return document


def _people(data: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, writer in data.items():
        _key(name, STORY_FILE, "people")
        if not isinstance(writer, str) or not _CLONE_RE.match(writer):
            raise StoryError(STORY_FILE, f"people.{name}", "must be the id of their clone: 4-16 of a-z 0-9")
        out[name] = writer
    return out


def _workspaces(data: dict[str, Any]) -> dict[str, Workspace]:
    out: dict[str, Workspace] = {}
    names = ("system_id", "project_id", "workspace_id")
    for name, ws in data.items():
        where = f"workspaces.{name}"
        _only(_typed(ws, MAPPING, STORY_FILE, where), STORY_FILE, set(names), prefix=where + ".")
        out[_key(name, STORY_FILE, "workspaces")] = Workspace(
            *(_typed(ws[n], TEXT, STORY_FILE, f"{where}.{n}") for n in names)
        )
    return out


def _flatten(
    data: Any, path: str, by: str | None, item: str | None, parent_at: datetime | None, out: list[Step]
) -> None:
    """Add the step at ``path`` and its ``then`` steps to ``out`` (``by`` and the item inherited)."""
    data = _typed(data, MAPPING, path, "(step)")
    names = [k for k in data if k in ACTIONS]
    if len(names) > 1:
        raise StoryError(path, "(step)", f"names {len(names)} actions ({', '.join(names)}): a step is exactly one call")
    if not names:
        unknown = [k for k in data if k not in _COMMON and k not in _FIELDS]
        hint = f"{unknown[0]!r} is not an action; " if unknown else ""
        raise StoryError(path, "(step)", f"{hint}name one action of: {', '.join(ACTIONS)}")
    action = names[0]
    spec = ACTIONS[action]
    where = f"{path} ({action})"
    if "at" not in data:
        raise StoryError(where, "at", "missing: every step happens at a fixed time (YYYY-MM-DD HH:MM, UTC)")
    at = _time(data["at"], where)
    if parent_at is not None and at < parent_at:
        raise StoryError(where, "at", "comes before the step it follows")
    by = _typed(data["by"], TEXT, where, "by") if "by" in data else by
    if by is None:
        raise StoryError(where, "by", "missing: name the person or the session key that acts")
    value = data[action]
    if not isinstance(value, str):
        raise StoryError(where, action, f"must be {spec.value}, got {type(value).__name__}")
    if "value" in spec.choices and value not in spec.choices["value"]:
        raise StoryError(where, action, f"must be one of {', '.join(spec.choices['value'])}, got {value!r}")
    fields = {k: v for k, v in data.items() if k not in _COMMON and k != action}
    allowed = {**spec.required, **spec.optional}
    for name, given in fields.items():
        if name not in allowed:
            raise StoryError(where, name, f"not a field of {action}; it takes {', '.join(sorted(allowed)) or 'none'}")
        _typed(given, allowed[name], where, name)
        if name in spec.choices and given not in spec.choices[name]:
            raise StoryError(where, name, f"must be one of {', '.join(spec.choices[name])}, got {given!r}")
    for name, kind in spec.required.items():
        if name not in fields:
            raise StoryError(where, name, f"missing: {action} needs {kind} here")
    if action == "create_item":
        item = _key(fields["key"], where, "key") if "key" in fields else f"<{path}>"
    elif action in ("edit_item", "delete_item"):
        item = fields.get("item", item)
        if item is None:
            raise StoryError(where, "item", "name the item, or list this step in the then of its create_item")
    else:
        item = None
    expect = frozenset(_typed(data.get("expect", []), TEXTS, where, "expect"))
    out.append(Step(where, at, by, action, value, fields, expect, item, len(out)))
    then = _typed(data.get("then", []), "a list", where, "then")
    if then and action not in ("start_session", "create_item"):
        raise StoryError(where, "then", "only a session (start_session) or an item (create_item) has later steps")
    for i, child in enumerate(then):
        _flatten(child, f"{path}.then[{i}]", value if action == "start_session" else by, item, at, out)


# ------------------------------------------------------------------ references


def _check_references(story: Story) -> None:
    """In play order: each key is made once, and named only after it is made, as the right kind."""
    kinds: dict[str, str] = {}
    channel_of: dict[str, str] = {}
    for step in story.steps:
        spec = ACTIONS[step.action]
        who = "person" if step.by in story.people else kinds.get(step.by)
        if who not in ("person", "session"):
            raise StoryError(step.where, "by", f"{step.by!r} is neither a person nor a session started earlier")
        if spec.by != "either" and who != spec.by:
            raise StoryError(step.where, "by", f"{step.action} is called by a {spec.by}, and {step.by} is a {who}")
        for name, kind in spec.refs.items():
            given = step.fields.get(name)
            for ref in given if isinstance(given, list) else [] if given is None else [given]:
                if kinds.get(ref) != kind:
                    raise StoryError(step.where, name, f"{ref!r} is not a {kind} made earlier in the story")
        if step.action == "set_status" and ("note" in step.fields) == ("handoff" in step.fields):
            raise StoryError(step.where, "note", "name the record to move: exactly one of note or handoff")
        if step.action == "start_session" and step.fields["workspace"] not in story.workspaces:
            known = ", ".join(story.workspaces)
            raise StoryError(step.where, "workspace", f"must be one of {known}, got {step.fields['workspace']!r}")
        if step.action == "add_channel":
            _plain_file(story.folder, step.fields["schema"], step.where, "schema")
        if step.action in ("create_item", "edit_item", "delete_item"):
            if kinds.get(step.value) != "channel":
                raise StoryError(step.where, step.action, f"{step.value!r} is not a channel added earlier")
            if step.action != "create_item" and channel_of.get(str(step.item)) != step.value:
                raise StoryError(step.where, "item", f"{step.item!r} is not an item of {step.value} filed earlier")
        for name, key, made in _made_keys(step):
            if key in kinds or key in story.people:
                raise StoryError(step.where, name, f"the key {key!r} is already used")
            kinds[key] = made
            if made == "item":
                channel_of[key] = step.value


def _made_keys(step: Step) -> list[tuple[str, str, str]]:
    """(field, key, kind) of what the step makes: its own key, and a session's recovery handoff."""
    made = _MAKES.get(step.action)
    if made is None:
        return []
    if made == "item":
        return [("key", str(step.item), made)]
    keys = [(step.action, _key(step.value, step.where, step.action), made)]
    if "recovery_handoff" in step.fields:
        keys.append(
            ("recovery_handoff", _key(step.fields["recovery_handoff"], step.where, "recovery_handoff"), "handoff")
        )
    return keys


# ------------------------------------------------------------------ small checks


def _typed(value: Any, kind: str, where: str, name: str) -> Any:
    ok = {
        TEXT: isinstance(value, str),
        INTEGER: isinstance(value, int) and not isinstance(value, bool),
        TEXTS: isinstance(value, list) and all(isinstance(v, str) for v in value),
        KEYS: isinstance(value, list) and all(isinstance(v, str) for v in value),
        KEY: isinstance(value, str),
        MAPPING: isinstance(value, dict),
        "a list": isinstance(value, list),
    }[kind]
    if not ok:
        raise StoryError(where, name, f"must be {kind}, got {type(value).__name__}")
    return value


def _only(data: dict[str, Any], where: str, names: set[str], *, prefix: str = "") -> None:
    """``data`` has exactly the fields ``names``."""
    for key in data:
        if key not in names:
            raise StoryError(where, prefix + key, f"unknown field; expected {', '.join(sorted(names))}")
    missing = sorted(names - set(data))
    if missing:
        raise StoryError(where, prefix + missing[0], "missing")


def _key(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str) or not _KEY_RE.match(value):
        raise StoryError(
            where, name, f"a key is 1-64 of A-Z a-z 0-9 _ - (starting with a letter or digit), got {value!r}"
        )
    return value


def _plain_file(folder: Path, name: str, where: str, field_name: str) -> None:
    if not _FILE_RE.match(name):
        raise StoryError(where, field_name, f"must be a file name of this folder like bugs.yaml, got {name!r}")
    if not (folder / name).is_file():
        raise StoryError(where, field_name, f"there is no file {name} in {folder}")


def _time(value: Any, where: str) -> datetime:
    try:
        return datetime.strptime(str(value), _TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise StoryError(where, "at", f"must be a UTC time as YYYY-MM-DD HH:MM, got {value!r}") from None
