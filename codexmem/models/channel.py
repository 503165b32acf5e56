"""The schema of a record channel: which fields an item has and what each may hold.

The schema rides along with every page an agent lists (see ``to_public``), because the MCP tool
schema for ``values`` is just ``{"type": "object"}``: this is the only place an agent can learn
that ``status`` wants ``in_progress`` rather than ``"In progress"``. Everything that can be
checked without data is checked when the schema is loaded, formulas included, so a broken
schema fails on ``model_validate`` and never at read time.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Final, Literal, get_args

import webcolors
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from codexmem.errors import control_problem, field_path, one_line_problem
from codexmem.models.base import Version
from codexmem.models.formula import BUILTIN_REFERENCES, Formula, FormulaError, parse

FieldType = Literal[
    "text",
    "number",
    "date",
    "boolean",
    "email",
    "phone",
    "url",
    "select",
    "multi_select",
    "currency",
    "percentage",
    "rating",
    "relation",
    "file",
    "json",
    "formula",
]
FIELD_TYPES: Final[tuple[str, ...]] = get_args(FieldType)

RESERVED_KEYS: Final = frozenset({"id", "version", "created_at", "updated_at"})
"""Item metadata the store maintains; a field may not shadow it."""

KEY_RE: Final = re.compile(r"[a-z][a-z0-9_]{0,63}")
CHANNEL_ID_RE: Final = re.compile(r"[a-z][a-z0-9_-]{0,63}")
COLOR_RE: Final = re.compile(r"#[0-9a-fA-F]{6}")
SHORT_COLOR_RE: Final = re.compile(r"#[0-9a-fA-F]{3}")
PALETTE: Final = ("#3b82f6", "#22c55e", "#f59e0b", "#ef4444", "#8b5cf6", "#06b6d4", "#ec4899", "#64748b")
"""Colours given to options that name none, in order (blue, green, amber, red, violet, cyan, pink, slate)."""

NUMERIC_TYPES: Final = frozenset({"number", "currency", "percentage"})

CONFIG_APPLIES_TO: Final[Mapping[str, frozenset[str]]] = {
    "max_length": frozenset({"text"}),
    "min": NUMERIC_TYPES,
    "max": NUMERIC_TYPES,
    "max_stars": frozenset({"rating"}),
    "options": frozenset({"select", "multi_select"}),
    "channel": frozenset({"relation"}),
    "expression": frozenset({"formula"}),
    "result_type": frozenset({"formula"}),
}
"""Which field types each config key means something for; a stray key is a schema mistake."""


NEW_SCHEMA = {"new": True}
"""The validation context of a schema being added or changed (``records.values.validate_schema``):
its texts are held to the rules below. A stored schema is read as it is, so one an earlier
version accepted (a label folded by YAML's ``>`` ends in a line break) stays usable and fixable."""


def _is_new(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("new"))


def _one_line(text: str, info: ValidationInfo) -> str:
    """A name, label or option value is one line a table or a terminal shows as it is: an escape
    sequence recoloured `channels list`, a line break split its rows, and an option holding one
    could never be sent back (a tool refuses control characters in every argument)."""
    problem = one_line_problem(text) if _is_new(info) else None
    if problem is not None:
        raise ValueError(problem)
    return text


def _no_control(text: str, info: ValidationInfo) -> str:
    problem = control_problem(text) if _is_new(info) else None
    if problem is not None:
        raise ValueError(problem)
    return text


OneLine = Annotated[str, AfterValidator(_one_line)]
Text = Annotated[str, AfterValidator(_no_control)]


class FieldOption(BaseModel):
    """One choice of a select field: ``value`` is stored, ``label`` is what people see.

    A schema may write an option as a plain string (value and label alike) and leave out the
    label or the colour (:meth:`FieldConfig._forgiving_options` fills them in); the colour may be a
    CSS colour name or hex, and is stored as ``#rrggbb``.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    value: OneLine = Field(min_length=1, max_length=200)
    label: OneLine = Field(min_length=1, max_length=200)
    color: str

    @field_validator("color")
    @classmethod
    def _check_color(cls, v: str) -> str:
        if COLOR_RE.fullmatch(v):
            return v
        if SHORT_COLOR_RE.fullmatch(v):
            return str(webcolors.normalize_hex(v))
        try:
            return str(webcolors.name_to_hex(v))
        except ValueError:
            raise ValueError(
                f"color must be a CSS colour name (green, slateblue) or hex like #22c55e, got {v[:40]!r}; "
                "or leave it out for a default colour"
            ) from None


class FieldConfig(BaseModel):
    """Type-specific settings; only the keys that apply to the field's type may be set."""

    model_config = ConfigDict(extra="forbid", strict=True)

    max_length: int | None = Field(default=None, ge=1)
    min: float | None = Field(default=None, allow_inf_nan=False)
    max: float | None = Field(default=None, allow_inf_nan=False)
    max_stars: int | None = Field(default=None, ge=1, le=10)
    options: list[FieldOption] | None = None
    channel: str | None = None
    expression: str | None = None
    result_type: Literal["number", "text", "boolean", "date"] | None = None

    @field_validator("options", mode="before")
    @classmethod
    def _forgiving_options(cls, v: Any) -> Any:
        """``[open, done]`` means ``[{value: open, label: open}, ...]``; a missing label is the value,
        a missing colour the next of :data:`PALETTE`. Anything else is left for the model to refuse."""
        if not isinstance(v, list):
            return v
        out: list[Any] = []
        for i, option in enumerate(v):
            if isinstance(option, str):
                option = {"value": option}
            if isinstance(option, dict):
                option = dict(option)
                if option.get("label") is None and isinstance(option.get("value"), str):
                    option["label"] = option["value"]
                if option.get("color") is None:
                    option["color"] = PALETTE[i % len(PALETTE)]
            out.append(option)
        return out


class FieldDef(BaseModel):
    """One field of a channel."""

    model_config = ConfigDict(extra="forbid", strict=True)

    key: str
    label: OneLine = Field(min_length=1, max_length=200)
    type: FieldType
    is_required: bool = False
    is_unique: bool = False
    config: FieldConfig = FieldConfig()

    @field_validator("key")
    @classmethod
    def _check_key(cls, v: str) -> str:
        if not KEY_RE.fullmatch(v):
            raise ValueError(
                f"field key {v!r} must start with a lowercase letter and use only a-z, 0-9 and _ "
                "(at most 64 characters)"
            )
        if v in RESERVED_KEYS:
            raise ValueError(f"field key {v!r} is reserved for item metadata")
        return v

    def option_values(self) -> list[str]:
        """The stored values of a select field's options, in schema order."""
        return [o.value for o in self.config.options or []]


Problem = tuple[tuple[int | str, ...], str]
"""Where in the schema (``("fields", 3, "config", "options")``) and what is wrong there."""


class SchemaProblems(ValueError):
    """Every rule between a schema's fields that it breaks, each with its own path.

    pydantic keeps the exception (``ctx["error"]``), so a caller can list the problems one by one;
    its text names them all, path first, for everyone else.
    """

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(f"{field_path(loc)}: {message}" for loc, message in problems))
        self.problems = problems


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeio" else f"a {word}"  # an email field, a url field


def _structural_problems(i: int, f: FieldDef) -> list[Problem]:
    """Per-field rules pydantic's field constraints cannot express."""
    at: tuple[int | str, ...] = ("fields", i)
    cfg_at = (*at, "config")
    problems: list[Problem] = []
    cfg = f.config
    name = f"{f.type} field {f.key!r}"
    for key, applies_to in CONFIG_APPLIES_TO.items():
        if getattr(cfg, key) is not None and f.type not in applies_to:
            problems.append(((*cfg_at, key), f"{key} does not apply to {_a(f.type)} field ({f.key!r})"))
    if f.type in ("select", "multi_select"):
        if not cfg.options:
            problems.append(((*cfg_at, "options"), f"{name} needs at least one option, such as options: [open, done]"))
        else:
            counted = Counter(o.value for o in cfg.options)  # not list.count per option: 20,000 options took 3.8 s
            dupes = sorted(v for v, n in counted.items() if n > 1)
            if dupes:
                problems.append(((*cfg_at, "options"), f"option values must be unique, repeated: {dupes}"))
    if f.type == "rating" and cfg.max_stars is None:
        problems.append(((*cfg_at, "max_stars"), f"{name} needs max_stars (1..10)"))
    if f.type == "relation" and not cfg.channel:
        problems.append(((*cfg_at, "channel"), f"{name} needs channel: the channel whose items it points to"))
    if f.type == "formula":
        if not cfg.expression:
            problems.append(((*cfg_at, "expression"), f"{name} needs an expression"))
        if cfg.result_type is None:
            problems.append(((*cfg_at, "result_type"), f"{name} needs result_type: number, text, boolean or date"))
        if f.is_required or f.is_unique:
            problems.append((at, f"{name} is computed and cannot be required or unique"))
    if cfg.min is not None and cfg.max is not None and cfg.min > cfg.max:
        problems.append((cfg_at, f"min ({cfg.min:g}) is greater than max ({cfg.max:g})"))
    return problems


def _find_cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Each cycle once, as a path that starts and ends at the same key (``a -> b -> a``)."""
    cycles: list[list[str]] = []
    seen_members: set[frozenset[str]] = set()
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    path: list[str] = []

    def visit(key: str) -> None:
        state[key] = 1
        path.append(key)
        for nxt in sorted(graph.get(key, ())):
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt]
                members = frozenset(cycle)
                if members not in seen_members:
                    seen_members.add(members)
                    cycles.append(cycle)
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[key] = 2

    for key in sorted(graph):
        if key not in state:
            visit(key)
    return cycles


def _topological(graph: Mapping[str, set[str]]) -> list[str]:
    """Formula keys ordered so each comes after the formulas it reads (graph is acyclic)."""
    order: list[str] = []
    done: set[str] = set()

    def visit(key: str) -> None:
        if key in done:
            return
        done.add(key)
        for dep in sorted(graph.get(key, ())):
            visit(dep)
        order.append(key)

    for key in sorted(graph):
        visit(key)
    return order


class ChannelSchema(BaseModel):
    """A channel's fields and the rules between them, validated as a whole on load."""

    model_config = ConfigDict(extra="forbid", strict=True)

    record_channel_id: str
    name: OneLine = Field(min_length=1, max_length=200)
    description: Text = ""
    fields: list[FieldDef]
    version: Version = 1

    _formulas: dict[str, Formula] = PrivateAttr(default_factory=dict)
    _formula_order: list[str] = PrivateAttr(default_factory=list)

    @field_validator("record_channel_id")
    @classmethod
    def _check_channel_id(cls, v: str) -> str:
        if not CHANNEL_ID_RE.fullmatch(v):
            raise ValueError(
                f"record_channel_id {v!r} must start with a lowercase letter and use only a-z, 0-9, "
                "_ and - (at most 64 characters)"
            )
        return v

    @model_validator(mode="after")
    def _check_whole(self) -> ChannelSchema:
        problems: list[Problem] = []
        by_key: dict[str, FieldDef] = {}
        where: dict[str, tuple[int | str, ...]] = {}
        for i, f in enumerate(self.fields):
            if f.key in by_key:
                first = field_path(where[f.key])
                problems.append((("fields", i, "key"), f"field key {f.key!r} is used more than once (also {first})"))
                continue
            by_key[f.key] = f
            where[f.key] = ("fields", i)
            problems.extend(_structural_problems(i, f))

        def expression(key: str) -> tuple[int | str, ...]:
            return (*where[key], "config", "expression")

        formulas: dict[str, Formula] = {}
        for key, f in by_key.items():
            if f.type == "formula" and f.config.expression:
                try:
                    formulas[key] = parse(f.config.expression)
                except FormulaError as exc:
                    problems.append((expression(key), exc.message))

        known = sorted([*by_key, *BUILTIN_REFERENCES])
        graph: dict[str, set[str]] = {}
        broken: set[str] = set()
        for key, formula in formulas.items():
            refs = formula.references()
            unknown = sorted(r for r in refs if r not in by_key and r not in BUILTIN_REFERENCES)
            for name in unknown:
                problems.append((expression(key), f"unknown field {name!r} (known: {', '.join(known)})"))
            if unknown:
                broken.add(key)
            graph[key] = {r for r in refs if r in by_key and by_key[r].type == "formula"}
        for cycle in _find_cycles(graph):
            problems.append((expression(cycle[0]), "formulas refer to each other in a cycle: " + " -> ".join(cycle)))
            broken.update(cycle)

        field_types = {
            key: (f.config.result_type or "formula") if f.type == "formula" else f.type for key, f in by_key.items()
        }
        for key, formula in formulas.items():
            if key in broken:
                continue
            try:
                computed = formula.check_types(field_types)
            except FormulaError as exc:
                problems.append((expression(key), exc.message))
                continue
            declared = by_key[key].config.result_type
            if declared is not None and computed != declared:
                problems.append(
                    (
                        (*where[key], "config", "result_type"),
                        f"result_type is {declared} but the expression computes {computed}",
                    )
                )

        if problems:
            raise SchemaProblems(problems)
        self._formulas = formulas
        self._formula_order = _topological(graph)
        return self

    # ----------------------------------------------------------------------------- lookups

    def field(self, key: str) -> FieldDef | None:
        """The field with ``key``, or None."""
        for f in self.fields:
            if f.key == key:
                return f
        return None

    def writable_keys(self) -> list[str]:
        """Keys an edit may set: every field except formulas, in schema order."""
        return [f.key for f in self.fields if f.type != "formula"]

    def formula(self, key: str) -> Formula | None:
        """The parsed formula of a formula field (parsed once, at load)."""
        return self._formulas.get(key)

    def compute_formulas(self, values: Mapping[str, Any], *, now: datetime) -> dict[str, Any]:
        """Every formula field's value for one item, evaluated at read time against ``now``.

        ``values`` are the stored values plus ``created_at``/``updated_at``; formulas that read
        other formulas are evaluated after them. Never raises for bad stored data: a formula
        that cannot be computed is ``None``.
        """
        env: dict[str, Any] = dict(values)
        out: dict[str, Any] = {}
        for key in self._formula_order:
            env[key] = out[key] = self._formulas[key].evaluate(env, now=now)
        return out

    # ------------------------------------------------------------------------------ public

    def to_public(self) -> dict[str, Any]:
        """The compact JSON form an agent reads with every page: no nulls, only set config keys."""
        fields_out: list[dict[str, Any]] = []
        for f in self.fields:
            entry: dict[str, Any] = {
                "key": f.key,
                "label": f.label,
                "type": f.type,
                "is_required": f.is_required,
                "is_unique": f.is_unique,
            }
            config: dict[str, Any] = {}
            for name, value in f.config.model_dump(exclude_none=True).items():
                config[name] = _compact_number(value) if name in ("min", "max") else value
            if config:
                entry["config"] = config
            fields_out.append(entry)
        out: dict[str, Any] = {"record_channel_id": self.record_channel_id, "name": self.name}
        if self.description:
            out["description"] = self.description
        out["version"] = self.version
        out["fields"] = fields_out
        return out


def _compact_number(v: Any) -> Any:
    """``13.0`` -> ``13``: the schema said 13, and an agent should read 13."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v
