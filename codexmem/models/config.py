"""The store config, ``codexmem.yaml``: the system, its projects and their relations, policies."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from codexmem.models.base import ProjectId, StrictModel, SystemId


class Relation(StrictModel):
    project: str
    relation_type: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    store: str | None = None
    """Another store holding the project, as a path relative to this store's folder."""


class ProjectDecl(StrictModel):
    id: ProjectId
    name: str = Field(min_length=1, max_length=200)
    system: str | None = None
    remotes: list[str] = Field(default_factory=list)
    roots: list[str] = Field(default_factory=list)
    """Work trees of the project, as paths relative to the store's folder (``..`` for its own repository)."""
    relations: list[Relation] = Field(default_factory=list)
    preferred_tags: list[str] = Field(default_factory=list)


class SystemDecl(StrictModel):
    id: SystemId
    name: str = Field(min_length=1, max_length=200)


class PrivacyConfig(StrictModel):
    secrets: Literal["refuse", "redact"] = "refuse"


class SessionConfig(StrictModel):
    idle_recovery_minutes: int = Field(default=120, ge=1, le=60 * 24 * 30)


class EventsConfig(StrictModel):
    author_email: bool = False
    """Record the author's git ``user.email`` in each event. Off by default: events are committed
    and published on the site, so an address is shared only when the store asks for it."""


class SiteConfig(StrictModel):
    base_url: str | None = None
    title: str | None = None


STORE_FORMAT = 2
"""Format 2: merge-safe record files, events with values and authors (``codexmem migrate`` brings format 1 up)."""


class StoreConfig(StrictModel):
    format: int
    system: SystemDecl | None = None
    projects: list[ProjectDecl] = Field(default_factory=list)
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)
    sessions: SessionConfig = Field(default_factory=SessionConfig)
    events: EventsConfig = Field(default_factory=EventsConfig)
    site: SiteConfig = Field(default_factory=SiteConfig)

    def project(self, project_id: str) -> ProjectDecl | None:
        return next((p for p in self.projects if p.id == project_id), None)
