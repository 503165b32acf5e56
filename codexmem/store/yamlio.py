"""Strict YAML in, deterministic YAML out.

Reading: libyaml's parser (10x faster than pure Python) with our own resolver, so that only
``true``/``false`` are booleans, dates and timestamps stay strings, sexagesimal and octal numbers
stay strings, and anchors/aliases, duplicate keys and every non-standard tag are refused. A
hand-edited ``on``, ``no`` or ``2026-03-13`` therefore never silently changes meaning.

Writing: block style, keys in the order given, no line wrapping, UTF-8, multi-line strings as
literal blocks: the same data always produces the same bytes.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

try:  # libyaml when present; the pure-Python parser otherwise (same results, slower).
    from yaml._yaml import CParser as _Parser
    from yaml.cyaml import CSafeDumper as _BaseDumper
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeDumper as _BaseDumper  # type: ignore[assignment]
    from yaml.composer import Composer
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, Parser, Composer):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            Composer.__init__(self)


from yaml.constructor import SafeConstructor
from yaml.resolver import BaseResolver

MAX_YAML_BYTES = 1_000_000


class YamlError(ValueError):
    """A YAML document that codexmem refuses to read, with a message for a person."""


class _StrictResolver(BaseResolver):
    """Only JSON-like scalars resolve implicitly; everything else is a string."""


_StrictResolver.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"), list("tf"))
_StrictResolver.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^-?(?:0|[1-9][0-9]*)$"), list("-0123456789")
)
_StrictResolver.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$"),
    list("-0123456789"),
)
_StrictResolver.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|)$"), ["~", "n", ""])

_ALLOWED_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
}


class _StrictConstructor(SafeConstructor):
    """Builds scalars only; :func:`_build` walks collections and enforces the rules."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        return int(str(node.value))

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        return float(str(node.value))


_StrictConstructor.add_constructor("tag:yaml.org,2002:int", _StrictConstructor.construct_yaml_int)  # type: ignore[type-var]
_StrictConstructor.add_constructor("tag:yaml.org,2002:float", _StrictConstructor.construct_yaml_float)  # type: ignore[type-var]


class StrictLoader(_Parser, _StrictConstructor, _StrictResolver):
    def __init__(self, stream: str | bytes) -> None:
        _Parser.__init__(self, stream)
        _StrictConstructor.__init__(self)
        _StrictResolver.__init__(self)


def load_yaml(text: str | bytes, *, source: str = "<yaml>") -> Any:
    """Parse one YAML document strictly; raise :class:`YamlError` naming ``source`` on any problem."""
    if isinstance(text, bytes):
        if len(text) > MAX_YAML_BYTES:
            raise YamlError(f"{source}: file is larger than {MAX_YAML_BYTES} bytes")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise YamlError(f"{source}: not valid UTF-8 (byte {exc.start})") from None
    elif len(text) > MAX_YAML_BYTES:
        raise YamlError(f"{source}: document is larger than {MAX_YAML_BYTES} bytes")
    loader = StrictLoader(text)
    try:
        return _load_single(loader)
    except YamlError as exc:
        raise YamlError(f"{source}: {exc}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"{source}: {_describe(exc)}") from None
    except (ValueError, TypeError, RecursionError) as exc:
        raise YamlError(f"{source}: {exc}") from None
    finally:
        loader.dispose()


def _load_single(loader: StrictLoader) -> Any:
    node = loader.get_single_node()
    if node is None:
        return None
    return _build(loader, node)


def _build(loader: StrictLoader, node: yaml.Node) -> Any:
    """Construct without SafeConstructor's object cache, so a second visit of a node is an alias."""
    seen: set[int] = set()

    def walk(n: yaml.Node, depth: int) -> Any:
        if depth > 100:
            raise YamlError(f"line {n.start_mark.line + 1}: nesting deeper than 100 levels")
        if id(n) in seen:
            raise YamlError(f"line {n.start_mark.line + 1}: anchors and aliases are not allowed")
        seen.add(id(n))
        if n.tag not in _ALLOWED_TAGS:
            raise YamlError(f"line {n.start_mark.line + 1}: tag {n.tag!r} is not allowed")
        if isinstance(n, yaml.MappingNode):
            out: dict[str, Any] = {}
            for key_node, value_node in n.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                    raise YamlError(f"line {key_node.start_mark.line + 1}: mapping keys must be strings")
                key = str(key_node.value)
                if key in out:
                    raise YamlError(f"line {key_node.start_mark.line + 1}: duplicate key {key!r}")
                seen.add(id(key_node))
                out[key] = walk(value_node, depth + 1)
            return out
        if isinstance(n, yaml.SequenceNode):
            return [walk(item, depth + 1) for item in n.value]
        return loader.construct_object(n, deep=True)

    return walk(node, 0)


def _describe(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is not None:
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return str(problem)


class _Dumper(_BaseDumper):
    """Deterministic block-style dumper."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: _Dumper, data: str) -> yaml.ScalarNode:
    if "\n" in data and not data.startswith((" ", "\t")) and _literal_safe(data):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    if _NOT_A_STRING.match(data):
        # YAML 1.1's resolver (the dumper's) leaves ``1e5`` plain, but our reader takes it for a
        # float: quote every string that our reader would not read back as a string.
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="'")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


# Exactly the plain scalars _StrictResolver turns into something other than a string.
_NOT_A_STRING = re.compile(r"^(?:true|false|~|null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)$")


def _literal_safe(data: str) -> bool:
    # Literal blocks cannot carry trailing blanks or control characters faithfully.
    lines = data.split("\n")
    return all(line == line.rstrip(" \t") and line.isprintable() for line in lines)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    """Serialize ``data`` deterministically (keys in insertion order)."""
    out: str = yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000_000,
        indent=2,
    )
    return out


def dump_flow(value: Any) -> str:
    """``value`` on one line (flow style, ``{a: 1, b: [x]}``): for bookkeeping a reviewer skips."""
    out: str = yaml.dump(
        value,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=True,
        allow_unicode=True,
        width=1_000_000_000,
    )
    return out.removesuffix("\n...\n").rstrip("\n")


_FRONT_RE = re.compile(r"\A---\r?\n(?P<front>.*?)(?:\r?\n)?^---[ \t]*\r?\n?", re.S | re.M)


def split_front_matter(text: str, *, source: str) -> tuple[Any, str]:
    """Split a Markdown file into (front matter data, body)."""
    m = _FRONT_RE.match(text)
    if not m:
        if text.startswith("\ufeff"):
            raise YamlError(
                f"{source}: starts with a byte order mark (U+FEFF) before its '---': save it as UTF-8 without one"
            )
        raise YamlError(f"{source}: Markdown record must start with '---' YAML front matter and close it with '---'")
    front = load_yaml(m.group("front"), source=source)
    body = text[m.end() :]
    return front, body.removesuffix("\r\n") if body.endswith("\r\n") else body.removesuffix("\n")


def join_front_matter(front: dict[str, Any], body: str) -> str:
    """Inverse of :func:`split_front_matter`: the body gets exactly one trailing newline."""
    return f"---\n{dump_yaml(front)}---\n{body}\n"
