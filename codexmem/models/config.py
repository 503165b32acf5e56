"""The store config, ``codexmem.yaml``: the system, its projects and their relations, policies."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from codexmem.models.base import ProjectId, StrictModel, SystemId


class Relation(StrictModel):
    project: str
    relation_type: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    store: str | None = None


class ProjectDecl(StrictModel):
    id: ProjectId
    name: str = Field(min_length=1, max_length=200)
    system: str | None = None
    remotes: list[str] = Field(default_factory=list)
    roots: list[str] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    preferred_tags: list[str] = Field(default_factory=list)


class SystemDecl(StrictModel):
    id: SystemId
    name: str = Field(min_length=1, max_length=200)


class PrivacyConfig(StrictModel):
    secrets: Literal["refuse", "redact"] = "refuse"


class SessionConfig(StrictModel):
    idle_recovery_minutes: int = Field(default=120, ge=1, le=60 * 24 * 30)


class SiteConfig(StrictModel):
    base_url: str | None = None
    title: str | None = None


STORE_FORMAT = 1


class StoreConfig(StrictModel):
    format: int
    system: SystemDecl | None = None
    projects: list[ProjectDecl] = Field(default_factory=list)
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)
    sessions: SessionConfig = Field(default_factory=SessionConfig)
    site: SiteConfig = Field(default_factory=SiteConfig)

    def project(self, project_id: str) -> ProjectDecl | None:
        return next((p for p in self.projects if p.id == project_id), None)
