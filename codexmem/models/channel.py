"""The schema of a record channel: which fields an item has and what each may hold.

The schema rides along with every page an agent lists (see ``to_public``), because the MCP tool
schema for ``values`` is just ``{"type": "object"}``: this is the only place an agent can learn
that ``status`` wants ``in_progress`` rather than ``"In progress"``. Everything that can be
checked without data is checked when the schema is loaded, formulas included, so a broken
schema fails on ``model_validate`` and never at read time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

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


class FieldOption(BaseModel):
    """One choice of a select field: ``value`` is stored, ``label`` is what people see."""

    model_config = ConfigDict(extra="forbid", strict=True)

    value: str = Field(min_length=1, max_length=200)
    label: str = Field(min_length=1, max_length=200)
    color: str

    @field_validator("color")
    @classmethod
    def _check_color(cls, v: str) -> str:
        if not COLOR_RE.fullmatch(v):
            raise ValueError(f"color must be a CSS hex colour like #22c55e, got {v!r}")
        return v


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


class FieldDef(BaseModel):
    """One field of a channel."""

    model_config = ConfigDict(extra="forbid", strict=True)

    key: str
    label: str = Field(min_length=1, max_length=200)
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


def _structural_problems(f: FieldDef) -> list[str]:
    """Per-field rules pydantic's field constraints cannot express."""
    where = f"fields.{f.key}"
    problems: list[str] = []
    cfg = f.config
    for name, applies_to in CONFIG_APPLIES_TO.items():
        if getattr(cfg, name) is not None and f.type not in applies_to:
            problems.append(f"{where}.config.{name} does not apply to a {f.type} field")
    if f.type in ("select", "multi_select"):
        if not cfg.options:
            problems.append(f"{where}: a {f.type} field needs at least one option")
        else:
            values = [o.value for o in cfg.options]
            dupes = sorted({v for v in values if values.count(v) > 1})
            if dupes:
                problems.append(f"{where}.config.options: option values must be unique, repeated: {dupes}")
    if f.type == "rating" and cfg.max_stars is None:
        problems.append(f"{where}: a rating field needs config.max_stars (1..10)")
    if f.type == "relation" and not cfg.channel:
        problems.append(f"{where}: a relation field needs config.channel")
    if f.type == "formula":
        if not cfg.expression:
            problems.append(f"{where}: a formula field needs config.expression")
        if cfg.result_type is None:
            problems.append(f"{where}: a formula field needs config.result_type")
        if f.is_required or f.is_unique:
            problems.append(f"{where}: a formula field is computed and cannot be required or unique")
    if cfg.min is not None and cfg.max is not None and cfg.min > cfg.max:
        problems.append(f"{where}.config: min ({cfg.min:g}) is greater than max ({cfg.max:g})")
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
    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    fields: list[FieldDef]
    version: int = Field(default=1, ge=1)

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
        problems: list[str] = []
        by_key: dict[str, FieldDef] = {}
        for f in self.fields:
            if f.key in by_key:
                problems.append(f"fields.{f.key}: field key is used more than once")
                continue
            by_key[f.key] = f
            problems.extend(_structural_problems(f))

        formulas: dict[str, Formula] = {}
        for key, f in by_key.items():
            if f.type == "formula" and f.config.expression:
                try:
                    formulas[key] = parse(f.config.expression)
                except FormulaError as exc:
                    problems.append(f"fields.{key}.config.expression: {exc.message}")

        known = sorted([*by_key, *BUILTIN_REFERENCES])
        graph: dict[str, set[str]] = {}
        broken: set[str] = set()
        for key, formula in formulas.items():
            refs = formula.references()
            unknown = sorted(r for r in refs if r not in by_key and r not in BUILTIN_REFERENCES)
            for name in unknown:
                problems.append(f"fields.{key}.config.expression: unknown field {name!r} (known: {', '.join(known)})")
            if unknown:
                broken.add(key)
            graph[key] = {r for r in refs if r in by_key and by_key[r].type == "formula"}
        for cycle in _find_cycles(graph):
            problems.append(
                f"fields.{cycle[0]}.config.expression: formulas refer to each other in a cycle: " + " -> ".join(cycle)
            )
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
                problems.append(f"fields.{key}.config.expression: {exc.message}")
                continue
            declared = by_key[key].config.result_type
            if declared is not None and computed != declared:
                problems.append(f"fields.{key}.config.result_type is {declared} but the expression computes {computed}")

        if problems:
            raise ValueError("; ".join(problems))
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
