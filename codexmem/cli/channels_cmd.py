"""``codexmem channels``: add a record channel from a schema file, list the channels."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("channels", help="record channels: add one from a schema file, list them")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    add = actions.add_parser(
        "add",
        parents=[common],
        help="create a channel from a schema YAML file",
        description="Create channel ID from FILE.yaml (name, description, fields). The schema is checked "
        "whole, formulas included, before anything is written.",
    )
    add.add_argument("channel_id", metavar="ID", help="the channel id, e.g. bugs")
    add.add_argument("--schema", required=True, metavar="FILE.yaml", help="the schema file")
    add.set_defaults(func=run_add)
    ls = actions.add_parser("list", parents=[common], help="list the channels with their item counts")
    ls.set_defaults(func=run_list)


def run_add(args: argparse.Namespace) -> int:
    from pathlib import Path

    from codexmem.cli.common import open_store
    from codexmem.errors import CodexmemError
    from codexmem.records import service
    from codexmem.store.store import cli_actor
    from codexmem.store.yamlio import YamlError, load_yaml
    from codexmem.timeutil import utcnow

    try:
        data = load_yaml(Path(args.schema).read_bytes(), source=args.schema)
    except (OSError, YamlError) as exc:
        raise CodexmemError("ERR_INVALID_INPUT", f"cannot read the schema: {exc}") from None
    if not isinstance(data, dict):
        raise CodexmemError("ERR_INVALID_INPUT", f"{args.schema}: a schema must be a YAML mapping")
    schema = service.add_channel(open_store(args), args.channel_id, data, actor=cli_actor(), now=utcnow())
    print(f"added channel {schema.record_channel_id} ({len(schema.fields)} fields)")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from codexmem.cli.common import open_store
    from codexmem.records import service

    for c in service.list_channels(open_store(args)):
        print(f"{c.id}\t{c.item_count} items\t{c.name}")
    return 0
