"""``codexmem migrate``: bring a format 1 store to the current format, once, in one change to commit.

Every record file is rewritten in its merge-safe form (store/recordfile.py) and recorded as it
stands by a ``migrated`` event that sets every field, dated at the record's last change: from
then on the history is a graph ``codexmem check`` can judge. Format 1 event lines stay as they
are (readable, outside the graph). Paths in ``codexmem.yaml`` become relative to the store, the
store's ``.gitattributes`` gains the merge driver and generated-file lines (existing lines are
kept), and the driver is registered in this clone. The config is written last, so an interrupted
migration is simply run again: records already migrated are not recorded twice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from codexmem.errors import CodexmemError, validation_fields
from codexmem.models.config import STORE_FORMAT, StoreConfig
from codexmem.store import events as ev
from codexmem.store.atomic import TMP_PREFIX, atomic_write, read_bytes_nofollow
from codexmem.store.gitsetup import register_driver
from codexmem.store.history import created_fields, record_fields
from codexmem.store.identity import Writer
from codexmem.store.init import GITATTRIBUTES, STORE_GIT_FILES, ensure_lines
from codexmem.store.layout import CONFIG_FILE, Kind, Layout, identify_relpath
from codexmem.store.recordfile import CREATED_FIELD, parse, validate_record
from codexmem.store.store import AUTO, Store, config_mapping
from codexmem.store.yamlio import MAX_YAML_BYTES, dump_yaml

MIGRATE_ACTOR = "migrate"
DROPPED = ("workspace_root", "updated_at")
"""Format 1 fields format 2 files do not hold (a writer's local path; a line that changed on every write)."""
BATCH = 200


@dataclass
class Migration:
    was_current: bool = False
    """The store was already at the current format: nothing was read beyond its config, and nothing
    written but the config, when it held absolute paths (then listed in ``paths``)."""
    records: int = 0
    events: int = 0
    already: int = 0
    paths: list[str] = field(default_factory=list)
    """Config paths made relative to the store."""
    attributes: list[str] = field(default_factory=list)
    driver: bool = False


def migrate(root: Path, *, writer: Writer | None = None, branch: str | None = AUTO) -> Migration:
    """Migrate the store at ``root``; ERR_INVALID_INPUT (nothing written) when a file cannot be read.

    A store already at the current format is left as it is: no record, event or attributes file
    is written and the driver is not registered (``codexmem setup`` does that). Its records were
    written by the current code and have events with values; giving them ``migrated`` events, or
    rewriting a config a person formatted, would be a change to review for nothing. Only an
    absolute path in its config (typed in by hand; ``check`` names this command as the fix) is
    made relative, and then the config is rewritten. (An interrupted migration still has format 1
    in its config, which is written last.)
    """
    layout = Layout(Path(os.path.abspath(root)))
    raw = config_mapping(layout)
    fmt = raw.get("format")
    if fmt == STORE_FORMAT:
        return _current(layout, raw)
    if fmt != 1:
        raise CodexmemError("ERR_INVALID_INPUT", f"{CONFIG_FILE}: format {fmt!r} cannot be migrated (1 can)")
    report = Migration()
    config_data = _relative_paths(raw, layout.root, report)
    config_data = {"format": STORE_FORMAT, **{k: v for k, v in config_data.items() if k != "format"}}
    config = _validated(config_data)
    records, problems = _legacy_records(layout)
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise CodexmemError("ERR_INVALID_INPUT", f"fix these files, then migrate again (nothing was written): {shown}")
    store = Store(layout.root, writer=writer, branch=branch, config=config)
    migrated = _already_migrated(layout)
    todo = [r for r in records if (r[0].name, r[1]) not in migrated]
    report.already = len(records) - len(todo)
    for start in range(0, len(todo), BATCH):
        with store.transaction(MIGRATE_ACTOR) as txn:
            for kind, rid, channel, data, last_change in todo[start : start + BATCH]:
                event = store.make_event(
                    txn,
                    kind=kind,
                    rid=rid,
                    channel=channel,
                    event_type="migrated",
                    version=int(data["version"]),
                    changed=[],
                    values=created_fields(record_fields(kind, data)),
                    parents=[],
                    at=last_change,
                )
                txn.record(kind, rid, channel, event, data)
                report.records += 1
                report.events += 1
    store.index.close()
    added = ensure_lines(layout.root / GITATTRIBUTES, STORE_GIT_FILES[GITATTRIBUTES])
    report.attributes = list(added[0].added) if added else []
    report.driver = register_driver(layout.root)
    atomic_write(layout.config, dump_yaml(config_data).encode("utf-8"))
    return report


def _current(layout: Layout, raw: dict[str, Any]) -> Migration:
    """A store at the current format: untouched, unless its config holds an absolute path."""
    report = Migration(was_current=True)
    _validated(raw)  # an invalid config is said as such, never called current
    config_data = _relative_paths(raw, layout.root, report)
    if report.paths:
        _validated(config_data)
        atomic_write(layout.config, dump_yaml(config_data).encode("utf-8"))
    return report


def _validated(config_data: dict[str, Any]) -> StoreConfig:
    """The config a migration is about to write, checked first (ERR_INVALID_INPUT, nothing written)."""
    try:
        return StoreConfig.model_validate(config_data)
    except ValidationError as exc:  # said as every command says it (load_config)
        first = validation_fields(exc, root="(config)")[0]
        raise CodexmemError("ERR_INVALID_INPUT", f"{CONFIG_FILE}: {first['field']}: {first['message']}") from None


def _relative_paths(raw: dict[str, Any], root: Path, report: Migration) -> dict[str, Any]:
    """The config with every absolute path of a writer's machine made relative to the store."""

    def relative(path: Any, base: Path) -> Any:
        if isinstance(path, str) and os.path.isabs(path):
            report.paths.append(path)
            return os.path.relpath(path, base).replace(os.sep, "/")
        return path

    data = dict(raw)
    if not isinstance(data.get("projects") or [], list):
        return data  # not a list of projects: the validation that follows names it
    projects = []
    for project in data.get("projects") or []:
        if isinstance(project, dict):
            project = dict(project)
            project["roots"] = [relative(r, root) for r in project.get("roots") or []]
            # A related store is found from the folder that holds this store (memory/related.py).
            project["relations"] = [
                {**rel, "store": relative(rel.get("store"), root.parent)}
                if isinstance(rel, dict) and rel.get("store")
                else rel
                for rel in project.get("relations") or []
            ]
        projects.append(project)
    if projects:
        data["projects"] = projects
    return data


def _legacy_records(layout: Layout) -> tuple[list[tuple[Kind, str, str | None, dict[str, Any], str]], list[str]]:
    """(kind, id, channel, data, time of its last change) of every record file; and the problems."""
    found: list[tuple[Kind, str, str | None, dict[str, Any], str]] = []
    problems: list[str] = []
    for folder in ("sessions", "notes", "handoffs", "imports", "channels"):
        for path in sorted((layout.root / folder).rglob("*")) if (layout.root / folder).is_dir() else []:
            rel = path.relative_to(layout.root).as_posix()
            ident = identify_relpath(rel)
            if ident is None or path.name.startswith(TMP_PREFIX) or not path.is_file() or path.is_symlink():
                continue
            kind, rid, channel = ident
            try:
                data = parse(kind, read_bytes_nofollow(path, MAX_YAML_BYTES), source=rel)
                last = data.get("updated_at")
                for name in DROPPED:
                    data.pop(name, None)
                valid = validate_record(kind, data, rid, channel)
            except (OSError, ValueError) as exc:
                problems.append(str(exc) if str(exc).startswith(rel) else f"{rel}: {exc}")
                continue
            created = valid.get(CREATED_FIELD.get(kind.name, ""), "")
            found.append((kind, rid, channel, valid, str(last or created or "")))
    return found, problems


def _already_migrated(layout: Layout) -> set[tuple[str, str]]:
    """Records a ``migrated`` event already records (an interrupted migration run again)."""
    done: set[tuple[str, str]] = set()
    for _, path in ev.list_shards(layout.events):
        for line in ev.read_lines(path):
            if line.event is not None and line.event["type"] == "migrated":
                done.add((line.event["kind"], line.event["id"]))
    return done


__all__ = ["Migration", "migrate"]
